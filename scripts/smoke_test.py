"""The smoke test of an installed wheel: run it with the Python of a fresh environment that
holds mcp-safe-retry and no extra (``scripts/release_check.sh`` does), from outside the
repository, so that what it imports is what was installed.

It checks the metadata (version, license and its file, classifiers, project URLs), that
``mcp-safe-retry --version`` prints the version the metadata holds, that the core retries a
503 over a mock inner transport, that every optional module's import error names its extra,
and that a CLI command needing an extra says which.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
from importlib.metadata import distribution
from pathlib import Path

OPTIONAL = {
    "mcp_safe_retry.httpx2": "mcp",
    "mcp_safe_retry.otel": "otel",
    "mcp_safe_retry.redis": "redis",
    "mcp_safe_retry.kitchen": "kitchen",
}
URLS = {"Documentation", "Source", "Changelog", "Issues"}


def _check(condition: bool, what: str) -> None:
    if not condition:
        raise SystemExit(f"smoke test failed: {what}")
    print(f"ok  {what}")


def main() -> int:
    import httpx

    import mcp_safe_retry
    from mcp_safe_retry import Idempotency, RetryPolicy, RetryTransport, get_record

    here = Path(mcp_safe_retry.__file__).resolve()
    _check(not (here.parents[2] / "pyproject.toml").exists(), f"imported the installed {here}")
    meta = distribution("mcp-safe-retry")
    _check(mcp_safe_retry.__version__ == meta.version, f"__version__ {meta.version}")
    _check(meta.metadata["License-Expression"] == "MIT", "license MIT")
    licenses = [f for f in meta.files or () if f.name == "LICENSE"]
    _check(bool(licenses) and "MIT License" in licenses[0].read_text(), "LICENSE in the wheel")
    classifiers = meta.metadata.get_all("Classifier") or []
    _check("Typing :: Typed" in classifiers, f"{len(classifiers)} classifiers")
    urls = {u.split(",", 1)[0] for u in meta.metadata.get_all("Project-URL") or []}
    _check(urls >= URLS, f"project URLs {sorted(urls)}")

    command = shutil.which("mcp-safe-retry", path=str(Path(sys.executable).parent))
    _check(command is not None, "the mcp-safe-retry command is installed")
    printed = subprocess.run(
        [str(command), "--version"], capture_output=True, text=True, check=True
    ).stdout
    _check(printed.strip() == f"mcp-safe-retry {meta.version}", f"--version: {printed.strip()}")
    needs = subprocess.run([str(command), "demo"], capture_output=True, text=True, check=False)
    _check(
        needs.returncode == 2 and "mcp-safe-retry[mcp,kitchen]" in needs.stderr,
        f"demo without its extras: {needs.stderr.strip()}",
    )

    statuses = iter([503, 200])

    def server(request: httpx.Request) -> httpx.Response:
        sent = json.loads(request.content)
        result = {"content": [{"type": "text", "text": "42"}]}
        return httpx.Response(
            next(statuses), json={"jsonrpc": "2.0", "id": sent["id"], "result": result}
        )

    policy = RetryPolicy(tools={"lookup": Idempotency.READ})
    inner = httpx.MockTransport(server)
    with httpx.Client(
        transport=RetryTransport(inner, policy=policy, sleep=lambda _: None)
    ) as client:
        response = client.post(
            "http://127.0.0.1:9/mcp",
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "lookup"}},
        )
    record = get_record(response)
    _check(record is not None and record.http_statuses == (503, 200), "a READ call retried")

    for module, extra in OPTIONAL.items():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as error:
            _check(f"mcp-safe-retry[{extra}]" in str(error), f"{module}: {error}")
        else:
            raise SystemExit(f"smoke test failed: {module} imported without its extra")
    return 0


if __name__ == "__main__":
    sys.exit(main())
