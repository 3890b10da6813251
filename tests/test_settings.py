"""Every setting of the wrong type or value is refused when the policy or the transport is
built, with a message that names the setting, the value and what is allowed (issue 29's
table first: each of those was once accepted wrongly or refused obscurely)."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest

import mcp_safe_retry
import mcp_safe_retry.httpx2
from mcp_safe_retry import RetryPolicy
from mcp_safe_retry.policy import AdaptiveDelay

POLICY_CASES = [
    # (kwargs, exception, every piece the message must hold)
    pytest.param({"retry_statuses": "503"}, TypeError, ["retry_statuses", "'503'", "{502, 503}"], id="statuses-string"),
    pytest.param({"retry_statuses": 503}, TypeError, ["retry_statuses", "503", "a set of HTTP statuses"], id="statuses-int"),
    pytest.param({"retry_statuses": {503, "x"}}, TypeError, ["retry_statuses", "'x' is not an integer"], id="statuses-member"),
    pytest.param({"retry_statuses": {700}}, ValueError, ["retry_statuses", "700", "100..599"], id="statuses-range"),
    pytest.param({"jitter": "gaussian"}, ValueError, ["jitter", "'gaussian'", "'none', 'equal', 'full'"], id="jitter"),
    pytest.param({"tools": {"x": True}}, ValueError, ["tools['x']", "True", "'read' or 'unsafe'"], id="tools-value"),
    pytest.param({"tools": ["lookup"]}, TypeError, ["tools", "['lookup']", "a mapping of tool name"], id="tools-list"),
    pytest.param({"tools": {3: "read"}}, TypeError, ["tools", "3", "a string"], id="tools-name"),
    pytest.param({"max_retries": 2.5}, TypeError, ["max_retries", "2.5", "an integer >= 0"], id="max_retries-float"),
    pytest.param({"max_retries": True}, TypeError, ["max_retries", "True", "an integer >= 0"], id="max_retries-bool"),
    pytest.param({"max_retries": -1}, ValueError, ["max_retries", "-1", "an integer >= 0"], id="max_retries-negative"),
    pytest.param({"initial_backoff": "0.2"}, TypeError, ["initial_backoff", "'0.2'", "a finite number >= 0"], id="initial_backoff"),
    pytest.param({"backoff_multiplier": 0.5}, ValueError, ["backoff_multiplier", "0.5", ">= 1.0"], id="backoff_multiplier"),
    pytest.param({"max_backoff": float("inf")}, ValueError, ["max_backoff", "inf", "a finite number >= 0"], id="max_backoff"),
    pytest.param({"max_retry_after": -1}, ValueError, ["max_retry_after", "-1", ">= 0"], id="max_retry_after"),
    pytest.param({"deadline": 0}, ValueError, ["deadline", "0", "None or a finite number > 0"], id="deadline"),
    pytest.param({"trust_annotations": "yes"}, TypeError, ["trust_annotations", "'yes'", "True or False"], id="trust_annotations"),
    pytest.param({"retry_unsent": 1}, TypeError, ["retry_unsent", "1", "True or False"], id="retry_unsent"),
    pytest.param({"hedge_after": "soon"}, ValueError, ["hedge_after", "'soon'", '"adaptive"'], id="hedge_after-string"),
    pytest.param({"hedge_after": -1}, ValueError, ["hedge_after", "-1", "> 0"], id="hedge_after-negative"),
    pytest.param({"max_hedges": 5}, ValueError, ["max_hedges", "5", "from 1 to 3"], id="max_hedges"),
    pytest.param({"duplicate_guard": "maybe"}, ValueError, ["duplicate_guard", "'maybe'", "'hold', 'label', 'off'"], id="duplicate_guard"),
    pytest.param({"duplicate_window": 0}, ValueError, ["duplicate_window", "0", "> 0"], id="duplicate_window"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "error", "pieces"), POLICY_CASES)
def test_a_bad_policy_setting_is_refused_by_name(
    kwargs: dict[str, Any], error: type[Exception], pieces: list[str]
) -> None:
    with pytest.raises(error) as raised:
        RetryPolicy(**kwargs)
    for piece in pieces:
        assert piece in str(raised.value)


def test_a_string_of_statuses_is_not_split_into_characters() -> None:
    assert RetryPolicy(retry_statuses=[503]).retry_statuses == frozenset({503})
    with pytest.raises(TypeError):
        RetryPolicy(retry_statuses="503")


def test_strings_still_name_choices() -> None:
    policy = RetryPolicy(jitter="full", duplicate_guard="label", tools={"lookup": "read"})
    assert (policy.jitter, policy.duplicate_guard, policy.tools["lookup"]) == (
        "full",
        "label",
        "read",
    )


ADAPTIVE_CASES = [
    pytest.param({"min_samples": 2.0}, TypeError, ["min_samples", "2.0", "an integer >= 1"], id="min_samples"),
    pytest.param({"quantile": 1.5}, ValueError, ["quantile", "1.5", "between 0 and 1"], id="quantile"),
]  # fmt: skip


@pytest.mark.parametrize(("kwargs", "error", "pieces"), ADAPTIVE_CASES)
def test_a_bad_adaptive_delay_is_refused_by_name(
    kwargs: dict[str, Any], error: type[Exception], pieces: list[str]
) -> None:
    with pytest.raises(error) as raised:
        AdaptiveDelay(**kwargs)
    for piece in pieces:
        assert piece in str(raised.value)


TRANSPORTS = [
    pytest.param(mcp_safe_retry.RetryTransport, id="httpx-sync"),
    pytest.param(mcp_safe_retry.AsyncRetryTransport, id="httpx-async"),
    pytest.param(mcp_safe_retry.httpx2.RetryTransport, id="httpx2-sync"),
    pytest.param(mcp_safe_retry.httpx2.AsyncRetryTransport, id="httpx2-async"),
]
TRANSPORT_CASES = [
    pytest.param({"policy": {"max_retries": 1}}, ["policy", "a RetryPolicy", "dict", "{'max_retries': 1}"], id="policy-dict"),
    pytest.param({"history": []}, ["history", "a History", "[]"], id="history"),
    pytest.param({"hooks": "log"}, ["hooks", "'log'", "a sequence of hooks"], id="hooks-string"),
    pytest.param({"hooks": [object()]}, ["a hook", "on_attempt, on_call", "object"], id="hooks-member"),
    pytest.param({"budget": 3}, ["budget", "record, allow_retry", "3"], id="budget"),
    pytest.param({"breaker": "b"}, ["breaker", "allow, record", "'b'"], id="breaker"),
    pytest.param({"max_event_bytes": "1"}, ["max_event_bytes", "'1'", "an integer >= 1"], id="max_event_bytes"),
    pytest.param({"contain_failures": "yes"}, ["contain_failures", "'yes'", "True or False"], id="contain_failures"),
    pytest.param({"sleep": 1}, ["sleep", "1", "a function"], id="sleep"),
    pytest.param({"clock": 2}, ["clock", "2", "a function"], id="clock"),
    pytest.param({"wall_clock": 3}, ["wall_clock", "3", "a function"], id="wall_clock"),
    pytest.param({"rand": "r"}, ["rand", "'r'", "a function"], id="rand"),
    pytest.param({"scenario": 5}, ["scenario", "5", "a string"], id="scenario"),
]  # fmt: skip


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize(("kwargs", "pieces"), TRANSPORT_CASES)
def test_a_bad_transport_setting_is_refused_when_built(
    transport: type[Any], kwargs: dict[str, Any], pieces: list[str]
) -> None:
    with pytest.raises(TypeError) as raised:
        transport(**kwargs)
    for piece in pieces:
        assert piece in str(raised.value)


def test_max_event_bytes_out_of_range_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="max_event_bytes must be an integer >= 1"):
        mcp_safe_retry.RetryTransport(max_event_bytes=0)


@pytest.mark.parametrize(
    "factory",
    [mcp_safe_retry.mcp_client, mcp_safe_retry.httpx2.mcp_client],
    ids=["httpx", "httpx2"],
)
def test_mcp_client_refuses_a_policy_dict(factory: Any) -> None:
    with pytest.raises(TypeError, match="policy must be a RetryPolicy"):
        factory(policy={"max_retries": 1})
    assert httpx2  # the httpx2 flavour is importable here (the test extra)
