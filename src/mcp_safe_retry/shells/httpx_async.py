"""The async httpx shell: it sends, sleeps and streams what the call's commands say.

Every decision lives in ``core.call.Call``; this file only carries out the commands it
returns and feeds it what the network answered (the bodies: ``bodies_httpx_async``). It is
the hand-written source of all four shells: ``scripts/unasync.py`` generates the sync shell
and the two httpx2 shells from it (CI checks they are up to date), so they never drift apart.
"""

from __future__ import annotations

import copy
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from types import TracebackType
from typing import Any, Self

import anyio
import attrs
import httpx

from ..core.breaker import Breaker
from ..core.budget import Budget
from ..core.call import begin
from ..core.call_ledger import Ledger
from ..core.commands import HAND_ON, Answer, Stream
from ..core.engine import Engine
from ..core.hedging import hedged
from ..core.policy import RetryPolicy
from ..core.records import History
from ..core.sse import DEFAULT_MAX_EVENT_BYTES
from ..instrumentation.hooks import Hook, publish
from ..instrumentation.logs import LOGGING_HOOK
from ..shared.ledgers import process_ledger, process_name
from .bodies_httpx_async import Executor, answered, close, made
from .closing import aflush_shared
from .errors_httpx import CONTAIN_HTTP_ERRORS, MCP_TIMEOUT, environment_proxies, failure
from .legacy_httpx_async import watched
from .race_httpx_async import race
from .wiring import (
    LISTINGS,
    REQUEST_HEADERS,
    EntryGuard,
    check_inner,
    check_settings,
    header_values,
    hedges,
    is_jsonrpc_post,
    routes,
    split_options,
    wrong_client,
)

__all__ = ["AsyncRetryTransport", "mcp_client"]


class AsyncRetryTransport(httpx.AsyncBaseTransport, EntryGuard):
    """Classify every JSON-RPC exchange and re-send only what is safe to re-send.

    Args:
        transport: the transport that really sends (default: a new AsyncHTTPTransport).
        policy: the RetryPolicy (default: RetryPolicy()).
        history: where finished call records go (default: a new History).
        sleep: awaited with the seconds to wait before a retry (default: anyio.sleep).
        clock: monotonic seconds, for elapsed times and the deadline (``time.monotonic``).
        wall_clock: Unix time, for records' start times, HTTP-date Retry-After (``time.time``).
        rand: a number in [0, 1) for the backoff's jitter (default: ``secrets``' source).
        hooks: observers told about every attempt and every finished call.
        scenario: a label copied into every record.
        max_event_bytes: the largest SSE event (or JSON body) that is parsed.
        budget: the retry budget (default: a RetryBudget of this transport's own; pass one
            budget to several transports to share it).
        breaker: a circuit breaker (default: none); one breaker may serve several
            transports. A request it holds back is not sent: the call ends with
            ``Outcome.CIRCUIT_OPEN`` and raises ``CircuitOpenError`` (or is contained).
            Likewise a re-send of an UNSAFE tool call that may have run is held by the
            duplicate guard (``RetryPolicy.duplicate_guard``): ``Outcome.DUPLICATE_HELD``,
            ``DuplicateCallError`` (or contained); one in flight: ``DUPLICATE_IN_FLIGHT``.
        ledger: where UNSAFE tool calls in flight or that may have run are kept (default: the
            process's own; ``CallLedger()`` isolates, ``RedisCallLedger`` shares with a fleet).
        contain_failures: answer a final network error or broken stream with a JSON-RPC
            error (code -32010) for the request's id instead of raising; a final HTTP error
            too in the httpx shells (mcp 1.x ends its session on any non-2xx answer; mcp 2.x
            answers one itself) and to an HTTP+SSE POST (put on its event stream too: core/
            legacy.py), save 3xx, 401, 403 and 404 (``core/contain.py``). Never for
            ``server/discover`` or ``initialize`` (read as the server's verdict), nor for a
            stream the client resumes itself.

    Attributes:
        engine: the per-transport state its calls share (policy, history, budget, hooks).
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        *,
        policy: RetryPolicy | None = None,
        history: History | None = None,
        sleep: Callable[[float], Awaitable[None]] | None = None,
        clock: Callable[[], float] | None = None,
        wall_clock: Callable[[], float] | None = None,
        rand: Callable[[], float] | None = None,
        hooks: Sequence[Hook] = (),
        scenario: str | None = None,
        max_event_bytes: int = DEFAULT_MAX_EVENT_BYTES,
        budget: Budget | None = None,
        breaker: Breaker | None = None,
        contain_failures: bool = False,
        ledger: Ledger | None = None,
    ) -> None:
        check_inner(transport, self)  # the wrong library or mode fails here, by name
        self._executor = Executor(
            transport if transport is not None else httpx.AsyncHTTPTransport(),
            sleep if sleep is not None else anyio.sleep,
        )
        self.engine = Engine(
            policy=policy,
            history=history,
            hooks=hooks,
            logging_hook=LOGGING_HOOK,
            clock=clock if clock is not None else time.monotonic,
            wall_clock=wall_clock if wall_clock is not None else time.time,
            rand=rand if rand is not None else secrets.SystemRandom().random,
            id_prefix=secrets.token_hex(4),
            scenario=scenario,
            max_event_bytes=max_event_bytes,
            budget=budget,
            breaker=breaker,
            contain_failures=contain_failures,
            contain_http_errors=CONTAIN_HTTP_ERRORS,
            ledger=ledger if ledger is not None else process_ledger(),
            owner_prefix=process_name(),
        )
        self._hedges = hedges(self.engine.policy, race)

    def over(self, transport: httpx.AsyncBaseTransport) -> AsyncRetryTransport:
        """A retry transport over another inner ``transport`` that shares this one's engine
        (policy, history, budget, breaker, sessions, hooks) and session lock.

        ``mcp_client`` puts one over each proxy route of its client, so that every route
        retries above its proxy and all of them count as one transport.
        """
        check_inner(transport, self)
        twin = copy.copy(self)
        twin._executor = attrs.evolve(self._executor, inner=transport)
        return twin

    @property
    def sleep(self) -> Callable[[float], Awaitable[None]]:
        """What the backoff is waited with (the ``sleep`` argument)."""
        return self._executor.sleep

    @sleep.setter
    def sleep(self, sleep: Callable[[float], Awaitable[None]]) -> None:
        self._executor.sleep = sleep

    @property
    def history(self) -> History:
        return self.engine.history

    @property
    def policy(self) -> RetryPolicy:
        return self.engine.policy

    @property
    def budget(self) -> Budget:
        return self.engine.budget

    @property
    def breaker(self) -> Breaker | None:
        return self.engine.breaker

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if not isinstance(request, httpx.Request):  # a client of the other library
            raise wrong_client(self, request)
        headers = header_values(request.headers, REQUEST_HEADERS)
        for name, value in self.engine.caller_edits(headers):  # a session renewed, say
            headers[name] = request.headers[name] = value
        call = hedging = None
        if is_jsonrpc_post(request.method, headers.get("content-type")):
            call = begin(
                self.engine, await request.aread(), headers, request.extensions, request.url
            )
            if call is not None and call.gives_up is not None:
                call.gives_up()  # the caller cancels a hedged call: its race ends
            if self._hedges and call is not None:  # hedged reads: shells/race_httpx_async.py
                hedging = hedged(self.engine, call, str(request.url), headers)
        elif request.method == "GET":
            call = self.engine.resumed(headers.get("last-event-id"))
        if call is None:
            if request.method != "DELETE":
                return await watched(self.engine, request, self._executor.inner)
            session = headers.get("mcp-session-id")  # the client ends its session
            self.engine.sessions.ending(session)
            ended = await self._executor.inner.handle_async_request(request)
            self.engine.sessions.end_answered(session, ended.status_code)
            return ended
        try:
            command, response, head, body = await (
                self._executor.run(call, request, call, call.start())
                if hedging is None
                else race(request, hedging, self._executor)
            )
        except BaseException as exc:
            call.abandoned(exc)  # cancelled, or an error of the inner transport's own
            raise
        finally:
            publish(call.owed())
        if command is HAND_ON:  # the server's answer as read: most calls end so
            return answered(call, request, response, body)
        if type(command) is Stream:
            assert response is not None
            assert head is not None
            return self._executor.streaming(call, request, response, head, command.tracker)
        if type(command) is Answer and command.status is None:  # the server's, body replaced
            return answered(call, request, response, body if command.body is None else command.body)
        await close(response)  # an answer read but not handed on (held back)
        if type(command) is Answer:
            return made(call, request, command)
        raise failure(call, request, command)

    async def __aenter__(self) -> Self:
        """Enter the inner transport too (one that must be entered, such as an in-process
        ASGI bridge, starts its work there), as the client enters this one."""
        await self._executor.inner.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None = None,
        exc_value: BaseException | None = None,
        traceback: TracebackType | None = None,
    ) -> None:
        """Flush (``Engine.flush``), then exit the inner transport (which closes it) once."""
        await aflush_shared(self.engine)
        await self._executor.inner.__aexit__(exc_type, exc_value, traceback)

    async def aclose(self) -> None:
        await aflush_shared(self.engine)
        await self._executor.inner.aclose()


def mcp_client(
    *,
    policy: RetryPolicy | None = None,
    headers: dict[str, str] | None = None,
    auth: httpx.Auth | None = None,
    timeout: httpx.Timeout | float | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    contain_failures: bool = True,
    trust_env: bool = True,
    **options: Any,
) -> httpx.AsyncClient:
    """A client for the MCP SDK's Streamable HTTP transport, with retries underneath.

    It starts from the settings of the SDK's own ``create_mcp_http_client``: 30 s timeouts
    and 300 s to read a stream; redirects not followed by the client (the SDK's transport
    follows them itself, within the origin); the environment's proxies (``HTTP_PROXY``,
    ``HTTPS_PROXY``, ``ALL_PROXY``, ``NO_PROXY``) honoured as the HTTP library does, with
    the retry layer above each proxy. It contains final failures as JSON-RPC errors, so one
    lost connection fails one call instead of tearing the session down. It fits where a
    client factory is asked for (``httpx_client_factory=functools.partial(mcp_client, ...)``).

    Args:
        policy: the RetryPolicy.
        headers: headers sent with every request.
        auth: an httpx Auth.
        timeout: replaces the default timeouts.
        transport: the inner transport (default: a new one; with one given, the
            environment's proxies are not read, as an httpx client given one does).
        contain_failures: see AsyncRetryTransport.
        trust_env: read proxies (and the client's other settings) from the environment.
        options: AsyncClient options (follow_redirects, event_hooks, mounts, ...);
            connection options for the default inner transport (verify, limits, http2,
            proxy, ...); and more AsyncRetryTransport options (history, hooks, budget,
            breaker, scenario, ...).

    Raises:
        TypeError: a setting of the other HTTP library (the other flavour's mcp_client
            takes it), or an option nobody takes.
    """
    check_settings(
        httpx.__name__, {"auth": auth, "timeout": timeout, "transport": transport, **options}
    )
    client_options, pool_options, retry_options = split_options(
        options, httpx.AsyncClient, httpx.AsyncHTTPTransport
    )
    mounts: Mapping[str, httpx.AsyncBaseTransport | None] = client_options.pop("mounts", None) or {}
    proxies: dict[str, str | None] = {}
    if transport is None:
        transport = httpx.AsyncHTTPTransport(trust_env=trust_env, **pool_options)
        if trust_env and "proxy" not in pool_options:  # an explicit proxy replaces them
            proxies = environment_proxies()
    elif pool_options:
        raise TypeError(f"give {', '.join(pool_options)} to the inner transport you pass")
    retry = AsyncRetryTransport(
        transport, policy=policy, contain_failures=contain_failures, **retry_options
    )
    retry.engine.listings = LISTINGS  # the process's last good listings (core/listings.py)

    def proxied(proxy: str) -> httpx.AsyncBaseTransport:
        return httpx.AsyncHTTPTransport(trust_env=trust_env, proxy=proxy, **pool_options)

    return httpx.AsyncClient(
        transport=retry,
        mounts=routes(proxies, mounts, retry.over, proxied),
        headers=headers,
        auth=auth,
        timeout=MCP_TIMEOUT if timeout is None else timeout,
        trust_env=trust_env,
        **client_options,
    )
