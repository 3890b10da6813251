"""A fleet's circuits as Redis holds them: where each one lives (a hash of its server key,
under the breaker's name), the outcomes a process sends in one batch, and the three round
trips ``RedisCircuitBreaker`` makes with its Lua scripts (``lua.py``): ask for a probe,
send outcomes, read states. Each round trip answers None when Redis does not (the breaker
then answers from its local state)."""

from __future__ import annotations

import hashlib

import attrs
import redis

from ..core.breaker import BreakerSettings, CircuitState
from . import lua
from .link import KEY_PREFIX, RedisLink

__all__ = ["Outcomes", "SharedCircuits", "SharedState"]

_STATES = (CircuitState.CLOSED, CircuitState.OPEN, CircuitState.HALF_OPEN)


@attrs.define
class Outcomes:
    """Outcomes recorded in this process for one circuit and not yet sent."""

    ok: int = 0  # attempts
    failed: int = 0
    tail: int = 0  # failed attempts after the last success
    retry_after: float = -1.0
    calls: int = 0  # calls that ended (the failure ratio's unit)
    calls_failed: int = 0

    def args(self) -> list[str]:
        """The script's ARGV after the settings (``lua.RECORD``)."""
        retry_after = str(round(self.retry_after * 1000)) if self.retry_after >= 0 else "-1"
        counts = (self.ok, self.failed, self.tail)
        return [*map(str, counts), retry_after, str(self.calls), str(self.calls_failed)]


@attrs.frozen
class SharedState:
    """A circuit's state as Redis answered it, and for how many seconds more it holds."""

    state: CircuitState
    wait: float


class SharedCircuits:
    """The circuits of the breaker ``name`` in Redis, reached through ``link``.

    Args:
        link: the connection (it never raises; None when Redis is down).
        name: the breaker's name: processes with the same name share its circuits.
        settings: when a circuit opens and for how long (sent with every script).
        expiry: seconds an untouched circuit is kept in Redis.
    """

    def __init__(
        self, link: RedisLink, name: str, settings: BreakerSettings, expiry: float
    ) -> None:
        self.link = link
        self.name = name
        self.expiry = expiry
        self._args = lua.settings_args(settings, expiry)

    def key(self, server_key: str) -> str:
        """Where a server's circuit lives: a hash of its key, under this breaker's name."""
        digest = hashlib.blake2b(server_key.encode(), digest_size=10).hexdigest()
        return f"{KEY_PREFIX}:{{{self.name}}}:breaker:{digest}"

    def probe(self, server_key: str) -> tuple[bool, SharedState] | None:
        """Ask for a probe's slot (granted when one is due): whether it was granted, and the
        circuit's state."""
        script = self.link.script(lua.ALLOW)
        reply = self.link.run(
            lambda client: script(keys=[self.key(server_key)], args=self._args, client=client)
        )
        if reply is None:
            return None
        allowed, state, wait_ms = (int(x) for x in reply)
        return bool(allowed), SharedState(_STATES[state], wait_ms / 1000)

    def send(self, pending: dict[str, Outcomes]) -> dict[str, SharedState] | None:
        """Send each circuit's outcomes (one pipeline); the state of each afterwards."""
        script = self.link.script(lua.RECORD)
        keys = list(pending)

        def send(client: redis.Redis) -> list[list[int]]:
            pipe = client.pipeline(transaction=False)
            for key in keys:
                args = [*self._args, *pending[key].args()]
                script(keys=[self.key(key)], args=args, client=pipe)
            return pipe.execute()

        replies = self.link.run(send)
        if replies is None:
            return None
        return {
            key: SharedState(_STATES[int(state)], int(wait_ms) / 1000)
            for key, (state, wait_ms) in zip(keys, replies, strict=True)
        }

    def read(self, keys: list[str]) -> dict[str, SharedState] | None:
        """The state of each of these circuits (one round trip)."""
        script = self.link.script(lua.STATE)
        reply = self.link.run(
            lambda client: script(keys=[self.key(k) for k in keys], client=client)
        )
        if reply is None:
            return None
        return {
            key: SharedState(_STATES[int(reply[2 * i])], int(reply[2 * i + 1]) / 1000)
            for i, key in enumerate(keys)
        }
