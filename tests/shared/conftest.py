"""Fixtures of the Redis tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from tests.redis_support import RedisServer


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis.Redis.from_url(redis_server.url) as c:
        yield c
