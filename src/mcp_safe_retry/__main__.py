"""`python -m mcp_safe_retry`: the same as the `mcp-safe-retry` command."""

import sys

from .cli.main import main

sys.exit(main())
