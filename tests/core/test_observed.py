"""What a transport learns from the traffic it carries (core/observed.py), no transport."""

from __future__ import annotations

import json

from mcp_safe_retry.core.jsonrpc import parse_request
from mcp_safe_retry.core.observed import Observed
from mcp_safe_retry.core.session import Sessions


def test_a_cancellation_follows_a_request_into_the_renewed_session() -> None:
    sessions = Sessions()
    observed = Observed(sessions)
    observed.resent("s-1", 7, "wire-7")  # re-sent before the session expired
    sessions.renewed("s-1", "s-2")
    cancel = parse_request(
        json.dumps(
            {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        ).encode()
    )
    assert cancel is not None
    remapped = observed.remap_cancellation(cancel, "s-2")  # rewritten to the new session
    assert remapped is not None and json.loads(remapped)["params"]["requestId"] == "wire-7"
    observed.settled("s-2", 7)
    assert observed.remap_cancellation(cancel, "s-2") is None


def test_tools_list_tells_the_read_only_and_the_idempotent_tools() -> None:
    observed = Observed()
    listing = parse_request(b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}')
    assert listing is not None
    from mcp_safe_retry.core.outcomes import Outcome, verdict

    tools = [
        {"name": "lookup", "annotations": {"readOnlyHint": True, "idempotentHint": True}},
        {"name": "upsert", "annotations": {"idempotentHint": True}},
        {"name": "charge", "annotations": {"idempotentHint": False}},
        {"name": "plain"},
    ]
    message = {"jsonrpc": "2.0", "id": 1, "result": {"tools": tools}}
    observed.learn(listing, verdict(Outcome.RPC_SUCCESS), message)
    assert observed.read_only_tools == {"lookup"}
    assert observed.idempotent_tools == {"upsert"}  # read-only wins: lookup is READ
    message["result"] = {"tools": [{"name": "upsert"}]}  # its hint withdrawn
    observed.learn(listing, verdict(Outcome.RPC_SUCCESS), message)
    assert observed.idempotent_tools == set()
    assert observed.read_only_tools == {"lookup"}  # not listed this time: kept
