"""The ``mcp-safe-retry`` command: demo, probe and report."""

from .main import main

__all__ = ["main"]
