"""Adapters for agent frameworks that take no HTTP client and no client factory.

One optional module per framework, each importing nothing of its framework until called:
``strands`` (strands-agents) and ``mcp_use`` (mcp-use). Every other framework takes
``mcp_client`` itself, in one parameter (README, "With your agent framework").
"""
