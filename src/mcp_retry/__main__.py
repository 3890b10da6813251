"""`python -m mcp_retry`: the same as the `mcp-retry` command."""

import sys

from .cli import main

sys.exit(main())
