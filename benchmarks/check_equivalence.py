"""Check that the working tree behaves exactly as a git revision does.

``python -m benchmarks.check_equivalence [REV] [--allow=KEY ...]`` (REV: ``HEAD``) exports
REV's ``src/`` to a temporary folder, runs ``benchmarks._scenarios`` against it and against the
working tree's ``src/``, and compares everything observable: statuses, raw headers, bodies
handed on, records and history (times left out), the requests sent, and the classifier,
SSE decoder and stream tracker on a seeded corpus. Used to keep optimisations honest.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _run(src: Path, out: Path, *flags: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{ROOT}"}
    subprocess.run(
        [sys.executable, "-m", "benchmarks._scenarios", str(out), *flags],
        check=True,
        env=env,
        cwd=ROOT,
    )
    with out.open() as f:
        data: dict[str, Any] = json.load(f)
    return data


def _diff(old: Any, new: Any, path: str, found: list[str], *, allowed: set[str], rev: str) -> None:
    if len(found) >= 20:
        return
    if isinstance(old, dict) and isinstance(new, dict):
        for key in sorted(set(old) | set(new)):
            if key not in allowed:
                _diff(old.get(key), new.get(key), f"{path}/{key}", found, allowed=allowed, rev=rev)
    elif isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        for i, (a, b) in enumerate(zip(old, new, strict=True)):
            _diff(a, b, f"{path}[{i}]", found, allowed=allowed, rev=rev)
    elif old != new:
        found.append(f"{path}:\n  {rev}: {str(old)[:300]}\n  worktree: {str(new)[:300]}")


def main(argv: list[str]) -> int:
    allowed = {a.split("=", 1)[1] for a in argv if a.startswith("--allow=")}
    args = [a for a in argv if not a.startswith("--")]
    rev_label = args[0] if args else "HEAD"
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base"
        base.mkdir()
        archive = subprocess.run(
            ["git", "archive", rev_label, "src"], check=True, cwd=ROOT, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
        old = _run(base / "src", Path(tmp) / "old.json")
        new = _run(ROOT / "src", Path(tmp) / "new.json")
        if importlib.util.find_spec("httpx2") is not None:  # the generated httpx2 shells too
            old["httpx2"] = _run(base / "src", Path(tmp) / "old2.json", "--httpx2")["scripted"]
            new["httpx2"] = _run(ROOT / "src", Path(tmp) / "new2.json", "--httpx2")["scripted"]
    found: list[str] = []
    _diff(old, new, "", found, allowed=allowed, rev=rev_label)
    scripted = len(old["scripted"]) + len(old.get("httpx2", {}))
    pure = sum(len(v) for v in old["pure"].values())
    if found:
        print(f"DIFFERENT from {rev_label}:")
        print("\n".join(found))
        return 1
    extra = f" (ignoring {', '.join(sorted(allowed))})" if allowed else ""
    print(f"identical to {rev_label}{extra}: {scripted} scripted exchanges, {pure} pure cases")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
