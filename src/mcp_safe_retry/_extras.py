"""What an optional module says when the extra it needs is not installed."""

from __future__ import annotations

__all__ = ["missing_extra"]


def missing_extra(
    module: str, extra: str, error: ModuleNotFoundError, brings: tuple[str, ...]
) -> ModuleNotFoundError:
    """The error to raise from ``module`` when importing it failed for want of one of the
    libraries its ``extra`` brings (``brings``: their top-level import names); any other
    missing module is ``error`` itself, unchanged."""
    top = (error.name or "").partition(".")[0]
    if top not in brings:
        return error
    return ModuleNotFoundError(
        f"{module} needs the '{extra}' extra ({top} is not installed): "
        f"pip install 'mcp-safe-retry[{extra}]'",
        name=error.name,
    )
