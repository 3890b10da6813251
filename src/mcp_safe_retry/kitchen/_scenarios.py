"""The scenarios by name: ``parse_scenario`` reads one with its params, ``SCENARIO_NAMES``
lists them. Each turns one POST (and its run's counters) into an action; what they share is
in ``_scenario_base``, the scenarios themselves in ``_answer_faults`` (answers in the
server's place), ``_wire_faults`` (a broken wire), ``_session_faults`` (a session ended) and
``_real_server`` (the real server answers, on time or late).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp_safe_retry.kitchen._answer_faults import (
    HttpStatusSequence,
    JsonRpcErrorScenario,
    RateLimit,
    ToolErrorScenario,
)
from mcp_safe_retry.kitchen._params import Params, ScenarioError
from mcp_safe_retry.kitchen._real_server import Baseline, ElicitationApproval, SlowTail
from mcp_safe_retry.kitchen._scenario_base import Scenario
from mcp_safe_retry.kitchen._session_faults import SessionDropped, SessionExpired
from mcp_safe_retry.kitchen._wire_faults import ConnectionAbort, Malformed, SseTruncated

__all__ = ["SCENARIO_NAMES", "parse_scenario"]

_READERS: Mapping[str, Callable[[Params], Scenario]] = {
    cls.name: cls.read
    for cls in (
        Baseline,
        HttpStatusSequence,
        JsonRpcErrorScenario,
        ToolErrorScenario,
        RateLimit,
        SseTruncated,
        ConnectionAbort,
        SessionExpired,
        SessionDropped,
        Malformed,
        ElicitationApproval,
        SlowTail,
    )
}
SCENARIO_NAMES: tuple[str, ...] = tuple(_READERS)


def parse_scenario(name: str, params: Mapping[str, Any] | None = None) -> Scenario:
    """Return the scenario `name` configured by `params`.

    Raises:
        ScenarioError: Unknown scenario, unknown param, or a param of the wrong type.
    """
    reader = _READERS.get(name)
    if reader is None:
        raise ScenarioError(f"unknown scenario {name!r}; known: {list(SCENARIO_NAMES)}")
    p = Params(name, params or {})
    scenario = reader(p)
    p.done()
    return scenario
