"""State shared by a fleet of processes (Redis); public names live in ``mcp_safe_retry.redis``.

Nothing in the core imports this package: the core's ``Budget`` and ``Breaker`` protocols are
what these classes implement.
"""
