"""The I/O shells: httpx and httpx2 transports, sync and async, that carry out what the
core decides. ``httpx_async`` is hand-written; ``generated/`` is made from it by
``scripts/unasync.py``.
"""
