"""Benchmarks for mcp-safe-retry: ``python -m benchmarks [--quick]`` from the repo root."""
