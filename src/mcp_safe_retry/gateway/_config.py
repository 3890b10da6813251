"""The gateway's retry policy, from a TOML file of ``RetryPolicy``'s settings and flags.

A file holds the settings by their ``RetryPolicy`` names, each as ``RetryPolicy`` takes it::

    max_retries = 2
    retry_statuses = [429, 502, 503, 504]
    hedge_after = 0.05            # or "adaptive"
    duplicate_guard = "hold"
    [tools]
    lookup = "read"
    "search_*" = "read"
    set_status = "idempotent"

``--read`` and ``--idempotent`` add tools (they win over the file's), ``--trust-annotations``
sets ``trust_annotations``.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from ..core.idempotency import Idempotency
from ..core.policy import RetryPolicy

__all__ = ["ConfigError", "policy_from"]


class ConfigError(ValueError):
    """A configuration the gateway cannot start with; the message says why."""


def policy_from(
    config: str | Path | None = None,
    *,
    read: Sequence[str] = (),
    idempotent: Sequence[str] = (),
    trust_annotations: bool = False,
) -> RetryPolicy:
    """The policy a file (``config``) and the flags describe.

    Raises:
        ConfigError: the file cannot be read, is not TOML, names a setting ``RetryPolicy``
            does not have, or gives one a value it refuses.
    """
    settings: dict[str, Any] = {} if config is None else _read(Path(config))
    known = {field.name for field in attrs.fields(RetryPolicy)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ConfigError(
            f"{config}: unknown setting(s) {', '.join(unknown)}; "
            f"RetryPolicy's settings are {', '.join(sorted(known))}"
        )
    tools = dict(settings.pop("tools", None) or {})
    if not isinstance(tools, dict):
        raise ConfigError(f"{config}: tools must be a table of tool (or pattern) = idempotency")
    tools.update(dict.fromkeys(idempotent, Idempotency.IDEMPOTENT))
    tools.update(dict.fromkeys(read, Idempotency.READ))
    if trust_annotations:
        settings["trust_annotations"] = True
    try:
        return RetryPolicy(tools=tools, **settings)
    except (TypeError, ValueError) as exc:
        where = config if config is not None else "the flags"
        raise ConfigError(f"{where}: {exc}") from None


def _read(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not TOML: {exc}") from None
