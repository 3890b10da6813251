"""Scenario names, params and run queries: parsing and the pure decisions, without a server."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_safe_retry.kitchen import SCENARIO_NAMES, ScenarioError, parse_scenario
from mcp_safe_retry.kitchen._actions import Abort, DropSession, Pass, Reply, Respond, Truncate
from mcp_safe_retry.kitchen._facts import RequestFacts
from mcp_safe_retry.kitchen._params import Match
from mcp_safe_retry.kitchen._runs import DEFAULT_RUN, Runs, parse_query, query_for
from mcp_safe_retry.kitchen._scenario_base import RunCounters, Scenario


def call(tool: str = "charge", request_id: int = 1, session: str | None = None) -> RequestFacts:
    return RequestFacts(
        "POST", "tools/call", request_id, is_request=True, tool=tool, session_id=session
    )


def decide_all(scenario: Scenario, posts: list[RequestFacts]) -> list[Any]:
    counters = RunCounters()
    actions = []
    for facts in posts:
        counters.posts += 1
        actions.append(scenario.decide(facts, counters, 0.0))
    return actions


def test_every_scenario_parses_with_defaults_but_malformed() -> None:
    for name in SCENARIO_NAMES:
        if name == "errors.http_status_sequence":
            parse_scenario(name, {"statusCodes": [503, 200]})
        elif name == "malformed":
            parse_scenario(name, {"kind": "wrong_id"})
        else:
            parse_scenario(name)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        pytest.param("nope", {}, "unknown scenario", id="unknown-scenario"),
        pytest.param("baseline", {"delayMS": 5}, "unknown params", id="typo-param"),
        pytest.param("baseline", {"delayMs": "5"}, "an integer", id="wrong-type"),
        pytest.param("baseline", {"delayMs": True}, "an integer", id="bool-is-no-int"),
        pytest.param("rate_limit", {"times": -1}, "within", id="negative-times"),
        pytest.param("errors.http_status_sequence", {}, "statusCodes", id="codes-required"),
        pytest.param(
            "errors.http_status_sequence", {"statusCodes": [99]}, "statusCodes", id="code-range"
        ),
        pytest.param("malformed", {}, "'kind' is required", id="kind-required"),
        pytest.param("malformed", {"kind": "weird"}, "one of", id="kind-unknown"),
        pytest.param("sse_truncated", {"when": "during"}, "one of", id="when-unknown"),
        pytest.param("rate_limit", {"method": 3}, "method", id="method-type"),
    ],
)
def test_invalid_params_are_refused(name: str, params: dict[str, Any], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        parse_scenario(name, params)


def test_match_filters_method_tool_and_notifications() -> None:
    match = Match(methods=frozenset({"tools/call"}), tool="charge", requests_only=True)
    assert match.selects(call("charge"))
    assert not match.selects(call("lookup"))
    assert not match.selects(RequestFacts("POST", "tools/list", 2, is_request=True))
    note = RequestFacts("POST", "notifications/initialized")
    assert not Match(methods=None, requests_only=True).selects(note)
    assert Match(methods=None).selects(note)


@given(
    first=st.integers(min_value=1, max_value=20),
    times=st.one_of(st.none(), st.integers(min_value=0, max_value=20)),
    total=st.integers(min_value=0, max_value=60),
)
def test_match_hits_exactly_times_consecutive_posts(
    first: int, times: int | None, total: int
) -> None:
    match = Match(methods=None, on_invocation=first, times=times)
    hit = [n for n in range(1, total + 1) if match.hits(n)]
    expected_end = total if times is None else min(total, first + times - 1)
    assert hit == list(range(first, expected_end + 1))


def test_http_status_sequence_counts_every_post_and_repeats_the_last() -> None:
    scenario = parse_scenario("errors.http_status_sequence", {"statusCodes": [503, 502, 200]})
    note = RequestFacts("POST", "notifications/initialized")
    actions = decide_all(scenario, [call(), note, call(), call(), call()])
    assert [type(a) for a in actions] == [Reply, Reply, Pass, Pass, Pass]
    assert [a.status for a in actions[:2]] == [503, 502]


def test_http_status_sequence_with_a_filter_counts_only_what_it_selects() -> None:
    params = {"statusCodes": [503, 200], "method": "tools/call", "tool": "lookup"}
    scenario = parse_scenario("errors.http_status_sequence", params)
    init = RequestFacts("POST", "initialize", 0, is_request=True)
    note = RequestFacts("POST", "notifications/initialized")
    posts = [init, note, call("charge"), call("lookup"), call("lookup"), call("lookup")]
    actions = decide_all(scenario, posts)
    assert [type(a) for a in actions] == [Pass, Pass, Pass, Reply, Pass, Pass]
    assert actions[3].status == 503


def test_session_dropped_after_the_nth_call_of_a_session_once_per_run() -> None:
    scenario = parse_scenario("session_dropped", {"afterCalls": 2})
    note = RequestFacts("POST", "notifications/initialized", session_id="s1")
    posts = [
        note,
        call(session="s1"),
        call(session="s1"),  # the second call: answered, then the session ends
        call(session="s2"),
        call(session="s2"),  # `times` is 1: a second session lives on
        call(session=None),  # stateless: never
    ]
    actions = decide_all(scenario, posts)
    assert [type(a) for a in actions] == [Pass, Pass, DropSession, Pass, Pass, Pass]


def test_jsonrpc_error_hits_only_the_nth_matching_call() -> None:
    scenario = parse_scenario("errors.jsonrpc_error", {"onInvocation": 2, "tool": "charge"})
    actions = decide_all(scenario, [call("charge", 1), call("lookup", 2), call("charge", 3)])
    assert isinstance(actions[2], Respond)
    assert actions[2].message["id"] == 3
    assert [type(a) for a in actions[:2]] == [Pass, Pass]


def test_rate_limit_retry_after_formats() -> None:
    seconds = parse_scenario("rate_limit", {"retryAfter": 7})
    date = parse_scenario("rate_limit", {"retryAfter": 10, "retryAfterFormat": "http-date"})
    absent = parse_scenario("rate_limit", {"retryAfter": None})
    now = 1_700_000_000.0

    def headers(scenario: Scenario) -> dict[str, str]:
        reply = scenario.decide(call(), RunCounters(), now)
        assert isinstance(reply, Reply)
        assert (reply.status, reply.body) == (429, b"")
        return dict(reply.headers)

    assert headers(seconds) == {"retry-after": "7"}
    assert headers(date) == {"retry-after": "Tue, 14 Nov 2023 22:13:30 GMT"}
    assert headers(absent) == {}


def test_stream_faults_decide_their_actions() -> None:
    truncate = parse_scenario("sse_truncated", {"events": 2, "when": "before", "mode": "abrupt"})
    abort = parse_scenario("connection_abort", {"when": "after", "mode": "reset", "times": 2})
    assert decide_all(truncate, [call(), call()]) == [Truncate(2, False, True), Pass()]
    assert decide_all(abort, [call(), call(), call()]) == [
        Abort(True, "reset"),
        Abort(True, "reset"),
        Pass(),
    ]


def test_session_expired_expires_one_session_then_lets_a_new_one_live() -> None:
    scenario = parse_scenario("session_expired", {"afterRequests": 1})
    posts = [
        call(session="s1"),  # first POST of s1 passes
        call(session="s1"),  # due: s1 expires
        RequestFacts("POST", "tools/list", 9, is_request=True, session_id="s1"),  # still 404
        call(session="s2"),
        call(session="s2"),  # times=1 already spent: s2 lives
        call(session=None),  # no session, nothing to expire
    ]
    statuses = [getattr(a, "status", None) for a in decide_all(scenario, posts)]
    assert statuses == [None, 404, 404, None, None, None]


def test_run_queries_name_runs() -> None:
    assert parse_query("").key == DEFAULT_RUN
    spec = parse_query(query_for("rate_limit", {"times": 2}, "r1"))
    assert (spec.key, spec.scenario, spec.params) == ("r1", "rate_limit", {"times": 2})
    same = parse_query(query_for("rate_limit", {"times": 2}, None))
    assert same.key == parse_query("scenario=rate_limit&params=%7B%22times%22%3A2%7D").key
    with pytest.raises(ScenarioError, match="JSON object"):
        parse_query("scenario=baseline&params=[1]")
    with pytest.raises(ScenarioError, match="more than once"):
        parse_query("scenario=a&scenario=b")


def test_a_run_keeps_its_scenario() -> None:
    runs = Runs("baseline", None)
    first = runs.resolve(parse_query(query_for("rate_limit", {}, "r")))
    assert runs.resolve(parse_query("run=r")) is first
    with pytest.raises(ScenarioError, match="already runs"):
        runs.resolve(parse_query(query_for("baseline", {}, "r")))
    assert runs.resolve(parse_query("")).scenario_name == "baseline"
