"""mcp-use sends anonymous telemetry (PostHog, Scarf) unless told not to: the tests talk to
loopback only."""

import os

os.environ["MCP_USE_ANONYMIZED_TELEMETRY"] = "false"
