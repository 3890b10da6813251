"""Run every benchmark and write RESULTS.md, results.json and the cost-ratio plot.

    PYTHONPATH=src python -m benchmarks [--quick] [--out DIR] [--baseline REV] [--no-loopback]

``--quick`` is the CI smoke mode (a few seconds, tiny rounds: the figures are not to be
quoted). ``--baseline REV`` also measures the transport as it was at git revision REV,
interleaved with the others in the same rounds, for before/after figures.
``--no-loopback`` leaves out everything that needs a server process (the official client
too).
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import importlib.util
import io
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from . import (
    async_httpx2,
    classifier,
    floor,
    memory,
    percall,
    retry_timing,
    sse_decoder,
    throughput,
)
from .report import render

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent

FULL = {
    "rounds": 15,
    "target": 0.025,
    "cases": [
        "json-1k",
        "json-4k",
        "json-16k",
        "json-64k",
        "json-256k",
        "json-1m",
        "sse-1k",
        "sse-64k",
        "sse-256k",
        "sse-1m",
    ],
    "loopback_cases": ["json-1k", "json-64k", "sse-1k", "sse-1m"],
    "loopback_rounds": 9,
    "httpx2_cases": list(async_httpx2.CASES),
    "official_sizes": ["1k", "64k", "1m"],
    # Strict alternation, ~0.25 s a batch: CPU time per call is noisy on a shared machine.
    "official_rounds": 25,
    "official_target": 0.25,
    "decoder_shapes": list(sse_decoder.SHAPES),
    "decoder_rounds": 15,
    "classifier_rounds": 5,
    "classifier_seconds": 0.1,
    "throughput_bytes": 32 << 20,
    "throughput_rounds": 5,
    "memory_small": 10 << 20,
    "memory_large": 100 << 20,
    "history_calls": 1_000_000,
    "retry_repeats": 5,
}
QUICK = {
    "rounds": 3,
    "target": 0.004,
    "cases": ["json-1k", "json-64k", "sse-1m"],
    "loopback_cases": ["json-1k", "sse-1m"],
    "loopback_rounds": 2,
    "httpx2_cases": ["json-1k", "sse-1k", "sse-128k in 512 B crlf"],
    "official_sizes": ["1k"],
    "official_rounds": 2,
    "official_target": 0.01,
    "decoder_shapes": ["1 KiB event", "128 KiB event, 512 B chunks"],
    "decoder_rounds": 2,
    "classifier_rounds": 2,
    "classifier_seconds": 0.01,
    "throughput_bytes": 2 << 20,
    "throughput_rounds": 2,
    "memory_small": 1 << 20,
    "memory_large": 10 << 20,
    "history_calls": 20_000,
    "retry_repeats": 2,
}


def _versions() -> dict[str, str]:
    out = {}
    for name in (
        "httpx",
        "httpx2",
        "mcp",
        "httpx-retries",
        "tenacity",
        "attrs",
        "orjson",
        "msgspec",
        "uvicorn",
        "anyio",
    ):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _cpu() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine() -> dict[str, Any]:
    return {
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "platform": platform.platform(),
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "versions": _versions(),
        "commit": _git("rev-parse", "--short", "HEAD"),
        "dirty": bool(_git("status", "--porcelain", "--", "src", "benchmarks")),
    }


def load_baseline(rev: str, tmp: Path) -> None:
    """Import ``src/mcp_safe_retry`` at ``rev`` as the package ``mcp_retry_baseline``."""
    archive = subprocess.run(
        ["git", "archive", "--format=tar", rev, "src/mcp_safe_retry"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(tmp, filter="data")
    (tmp / "src" / "mcp_safe_retry").rename(tmp / "mcp_retry_baseline")
    sys.path.insert(0, str(tmp))
    module = importlib.import_module("mcp_retry_baseline")
    label = f"mcp-safe-retry @{_git('rev-parse', '--short', rev)}"
    percall.BASELINE.update({"label": label, "module": module, "rev": rev})


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def run(settings: dict[str, Any], *, loopback: bool) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "settings": settings, "notes": []}
    if "httpx-retries" not in percall.contenders():
        results["notes"].append("httpx-retries is not installed: no peer column")
    if loopback and importlib.util.find_spec("uvicorn") is None:
        loopback = False
        results["notes"].append("uvicorn is not installed: no loopback round trips")
    started = time.perf_counter()
    rows = []
    for mode in ("sync", "async"):
        for case in settings["cases"]:
            _log(f"per call, mock inner: {mode} {case}")
            rows.append(
                {
                    "case": case,
                    "mode": mode,
                    **_cells(
                        percall.run_case(
                            case, mode=mode, rounds=settings["rounds"], target=settings["target"]
                        )
                    ),
                }
            )
    results["mock"] = rows
    _log("per call, httpx2.AsyncClient in process")
    results["httpx2"] = async_httpx2.run(
        cases=settings["httpx2_cases"], rounds=settings["rounds"], target=settings["target"]
    )
    _log("per call, mock inner: the minimal sketches")
    results["floor"] = floor.run(rounds=settings["rounds"], target=settings["target"])
    results["floor_async"] = floor.run_async(rounds=settings["rounds"], target=settings["target"])
    if loopback and importlib.util.find_spec("mcp") is None:
        results["notes"].append("mcp is not installed: no official-client round trips")
    elif loopback:
        from . import official  # needs mcp 2.x

        _log("per call_tool, the official mcp client over loopback")
        results["official"] = official.run(
            sizes=settings["official_sizes"],
            rounds=settings["official_rounds"],
            target=settings["official_target"],
        )
    if loopback:
        rows = []
        with percall.loopback_server() as url:
            for mode in ("sync", "async"):
                for case in settings["loopback_cases"]:
                    _log(f"per call, loopback: {mode} {case}")
                    rows.append(
                        {
                            "case": case,
                            "mode": mode,
                            **_cells(
                                percall.run_case(
                                    case,
                                    mode=mode,
                                    rounds=settings["loopback_rounds"],
                                    target=settings["target"],
                                    url=url,
                                )
                            ),
                        }
                    )
        results["loopback"] = rows
    _log("classifier")
    results["classifier"] = classifier.run(
        rounds=settings["classifier_rounds"], seconds=settings["classifier_seconds"]
    )
    _log("SSE decoder")
    results["sse_decoder"] = sse_decoder.run(
        rounds=settings["decoder_rounds"], target=0.02, shapes=settings["decoder_shapes"]
    )
    _log("SSE throughput")
    results["throughput"] = throughput.run(
        size=settings["throughput_bytes"], rounds=settings["throughput_rounds"]
    )
    _log("memory")
    results["memory"] = memory.run(
        small=settings["memory_small"],
        large=settings["memory_large"],
        calls=settings["history_calls"],
    )
    _log("retry timing")
    results["retry"] = retry_timing.run(repeats=settings["retry_repeats"])
    results["seconds"] = time.perf_counter() - started
    return results


def _cells(summary: dict[str, Any]) -> dict[str, Any]:
    return {"contenders": summary}


def plot(results: dict[str, Any], path: Path) -> str:
    if importlib.util.find_spec("matplotlib") is None:
        return (
            "plot skipped: matplotlib is not installed (pip install matplotlib, then "
            "python benchmarks/plot.py to draw it from results.json)"
        )
    from .plot import make

    make(results, path)
    return f"plot written: {path}"


APPENDED = "<!-- appended by "
"""Sections other scripts append to RESULTS.md (``benchmarks/fleet.py --write``) start with
this marker; a new run keeps them."""


def appended_sections(report: Path) -> str:
    """The sections of an existing RESULTS.md that other scripts appended, to keep them."""
    if not report.exists():
        return ""
    text = report.read_text()
    at = text.find(APPENDED)
    return "\n" + text[at:] if at >= 0 else ""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--quick", action="store_true", help="CI smoke mode: seconds, not quotable")
    parser.add_argument(
        "--out", type=Path, default=HERE, help="where to write (default benchmarks/)"
    )
    parser.add_argument(
        "--baseline", metavar="REV", help="also measure src/ as at this git revision"
    )
    parser.add_argument("--no-loopback", action="store_true", help="skip the uvicorn round trips")
    args = parser.parse_args(argv)
    settings = dict(QUICK if args.quick else FULL, quick=args.quick)
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        if args.baseline:
            load_baseline(args.baseline, Path(tmp))
            settings["baseline"] = percall.BASELINE["label"]
            settings["baseline_rev"] = args.baseline
        results = run(settings, loopback=not args.no_loopback)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    note = plot(results, args.out / "cost_ratio.png")
    report = args.out / "RESULTS.md"
    report.write_text(render(results) + appended_sections(report))
    _log(note)
    _log(f"done in {results['seconds']:.1f} s: {args.out / 'RESULTS.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
