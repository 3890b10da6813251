"""The last good answer of each list read (core/listings.py): kept per server, request and
authorization context; a public answer shared across contexts, a private one never."""

from __future__ import annotations

from mcp_safe_retry.core.listings import LIST_METHODS, ListingCache, ListingKey, auth_context


def test_the_list_reads() -> None:
    assert {"tools/list", "prompts/list", "resources/list"} <= LIST_METHODS
    assert {"resources/templates/list", "server/discover"} <= LIST_METHODS
    assert "tools/call" not in LIST_METHODS and "resources/read" not in LIST_METHODS


def test_an_answer_is_kept_per_server_request_and_context() -> None:
    cache = ListingCache()
    alice, bob = auth_context("Bearer alice"), auth_context("Bearer bob")
    assert alice != bob and alice is not None and "alice" not in alice  # a hash, never it
    key = ListingKey("http://a/mcp", "digest-1", alice)
    assert cache.last(key, 10.0) is None
    cache.keep(key, {"tools": [], "cacheScope": "private"}, 10.0)
    assert cache.last(key, 12.5) == ({"tools": [], "cacheScope": "private"}, 2.5)
    assert cache.last(key._replace(auth=bob), 12.5) is None  # private: not bob's
    assert cache.last(key._replace(auth=None), 12.5) is None  # nor the anonymous one's
    assert cache.last(key._replace(server="http://b/mcp"), 12.5) is None
    assert cache.last(key._replace(request="digest-2"), 12.5) is None  # another page
    cache.keep(key._replace(auth=bob), {"tools": [1]}, 11.0)  # no scope: private too
    assert cache.last(key, 12.0) == ({"tools": [], "cacheScope": "private"}, 2.0)


def test_a_public_answer_is_shared_across_contexts() -> None:
    cache = ListingCache()
    key = ListingKey("http://a/mcp", "d", auth_context("Bearer alice"))
    cache.keep(key, {"tools": [], "cacheScope": "public"}, 1.0)
    for auth in (None, auth_context("Bearer bob"), key.auth):
        found = cache.last(key._replace(auth=auth), 3.0)
        assert found is not None and found[1] == 2.0


def test_the_anonymous_contexts_private_answer_is_its_own() -> None:
    cache = ListingCache()
    anonymous = ListingKey("http://a/mcp", "d", None)
    cache.keep(anonymous, {"tools": []}, 1.0)
    assert cache.last(anonymous, 1.0) is not None
    assert cache.last(anonymous._replace(auth=auth_context("Bearer x")), 1.0) is None


def test_the_memory_is_bounded() -> None:
    cache = ListingCache(capacity=3)
    for n in range(5):
        cache.keep(ListingKey("s", f"d{n}", None), {"n": n}, float(n))
    assert len(cache) == 3
    assert cache.last(ListingKey("s", "d0", None), 9.0) is None
    assert cache.last(ListingKey("s", "d4", None), 9.0) == ({"n": 4}, 5.0)
    cache.clear()
    assert len(cache) == 0
