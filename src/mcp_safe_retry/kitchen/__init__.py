"""The kitchen: a real MCP server over Streamable HTTP with fault injection in front of it.

The official SDK's server answers every request the fault layer lets through; the
layer, an ASGI app in front of it, answers the rest as the selected scenario decides.
Scenarios are chosen per URL (`/mcp?scenario=NAME&params=JSON&run=ID`) so each client
gets its own counters, with a server default for bare `/mcp`.

Nothing in the mcp-safe-retry core imports this package; it needs the `kitchen` extra
(``pip install 'mcp-safe-retry[kitchen]'``), and without it importing it says so.
"""

from mcp_safe_retry._extras import missing_extra

try:
    import mcp.server  # noqa: F401 - the kitchen's libraries, checked before anything of it
    import mcp_types  # noqa: F401 - mcp 2.x's (mcp 1.x has none)
    import starlette  # noqa: F401
    import uvicorn  # noqa: F401
except ModuleNotFoundError as error:
    raise missing_extra(
        "mcp_safe_retry.kitchen", "kitchen", error, ("mcp", "starlette", "uvicorn", "mcp_types")
    ) from error

from mcp_safe_retry.kitchen._abort import ABORT_EXTENSION, AbortableH11Protocol
from mcp_safe_retry.kitchen._actions import ABORT_MODES, MALFORMED_KINDS
from mcp_safe_retry.kitchen._book import KitchenState, PostRecord
from mcp_safe_retry.kitchen._params import ScenarioError
from mcp_safe_retry.kitchen._scenarios import SCENARIO_NAMES, parse_scenario
from mcp_safe_retry.kitchen._server import (
    KitchenConfig,
    KitchenServer,
    build_kitchen_app,
    run_kitchen,
)
from mcp_safe_retry.kitchen._tools import SERVER_NAME, build_mcp_server

__all__ = [
    "ABORT_EXTENSION",
    "ABORT_MODES",
    "MALFORMED_KINDS",
    "SCENARIO_NAMES",
    "SERVER_NAME",
    "AbortableH11Protocol",
    "KitchenConfig",
    "KitchenServer",
    "KitchenState",
    "PostRecord",
    "ScenarioError",
    "build_kitchen_app",
    "build_mcp_server",
    "parse_scenario",
    "run_kitchen",
]
