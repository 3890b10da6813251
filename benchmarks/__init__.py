"""Benchmarks for mcp-retry (issue 5): ``python -m benchmarks [--quick]`` from the repo root."""
