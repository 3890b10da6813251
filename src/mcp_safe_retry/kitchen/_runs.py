"""Runs: the unit of scenario isolation, named by the MCP endpoint's URL query.

`/mcp?scenario=NAME&params=JSON&run=ID` selects a scenario and its params for every
request carrying that query. Requests with the same run id share counters; without
`run`, the scenario and canonical params name the run. A bare `/mcp` is the server's
default run, with the scenario given at start-up.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlencode

import attrs

from mcp_safe_retry.kitchen._params import ScenarioError
from mcp_safe_retry.kitchen._scenario_base import RunCounters, Scenario
from mcp_safe_retry.kitchen._scenarios import parse_scenario

DEFAULT_RUN = ""


@attrs.frozen
class RunSpec:
    """What a URL query asks for: a run id, a scenario name and its params.

    Attributes:
        key: The run id (explicit `run`, else derived from scenario and params).
        scenario: Scenario name, None for the server default.
        params: Scenario params, None for the server default's.
    """

    key: str
    scenario: str | None
    params: Mapping[str, Any] | None


def canonical_params(params: Mapping[str, Any] | None) -> str:
    """Return params as canonical JSON, so equal params name the same run."""
    return json.dumps(params or {}, sort_keys=True, separators=(",", ":"))


def query_for(scenario: str, params: Mapping[str, Any] | None, run: str | None) -> str:
    """Return the URL query selecting `scenario` with `params` in run `run`."""
    fields = {"scenario": scenario}
    if params:
        fields["params"] = canonical_params(params)
    if run is not None:
        fields["run"] = run
    return urlencode(fields)


def parse_query(query: str) -> RunSpec:
    """Return the run a URL query (without `?`) selects.

    Raises:
        ScenarioError: `params` is not a JSON object or a field is repeated.
    """
    fields = parse_qs(query, keep_blank_values=True)
    for name, values in fields.items():
        if len(values) > 1:
            raise ScenarioError(f"query field {name!r} given more than once")
    scenario = fields.get("scenario", [None])[0]
    raw_params = fields.get("params", [None])[0]
    run = fields.get("run", [None])[0]
    params: Mapping[str, Any] | None = None
    if raw_params is not None:
        try:
            params = json.loads(raw_params)
        except ValueError as exc:
            raise ScenarioError(f"params is not valid JSON: {exc}") from None
        if not isinstance(params, dict):
            raise ScenarioError("params must be a JSON object")
    if run is None:
        run = (
            DEFAULT_RUN
            if scenario is None and params is None
            else (f"{scenario or ''}?{canonical_params(params)}")
        )
    return RunSpec(run, scenario, params)


@attrs.define
class Run:
    """One run: its scenario (fixed at first use) and the counters it advances."""

    key: str
    scenario_name: str
    params_json: str
    scenario: Scenario
    counters: RunCounters = attrs.field(factory=RunCounters)


class Runs:
    """The runs seen so far, created on first use and forgotten on reset."""

    def __init__(self, default_scenario: str, default_params: Mapping[str, Any] | None) -> None:
        """Create the registry; the default scenario is validated now, not at first use."""
        parse_scenario(default_scenario, default_params)
        self._default = (default_scenario, default_params)
        self._lock = threading.Lock()
        self._runs: dict[str, Run] = {}

    def resolve(self, spec: RunSpec) -> Run:
        """Return the run `spec` names, creating it on first use.

        Raises:
            ScenarioError: Invalid scenario or params, or the run id is already bound
                to a different scenario.
        """
        name = spec.scenario if spec.scenario is not None else self._default[0]
        params = (
            spec.params
            if spec.params is not None
            else (self._default[1] if spec.scenario is None else None)
        )
        params_json = canonical_params(params)
        with self._lock:
            run = self._runs.get(spec.key)
            if run is None:
                run = Run(spec.key, name, params_json, parse_scenario(name, params))
                self._runs[spec.key] = run
            elif spec.scenario is not None and (run.scenario_name, run.params_json) != (
                name,
                params_json,
            ):
                raise ScenarioError(
                    f"run {spec.key!r} already runs {run.scenario_name} {run.params_json}"
                )
            return run

    def reset(self) -> None:
        """Forget every run and its counters."""
        with self._lock:
            self._runs.clear()
