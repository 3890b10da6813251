"""Compare an SDK's own tests run bare and through mcp-safe-retry; exit 1 on a difference.

Usage: ``python compare.py --label L --by-design by_design.toml BARE.json WRAPPED.json COUNTS``.
BARE and WRAPPED are the files ``sdk_results`` wrote; COUNTS is the directory ``sdk_wrap``
wrote its per-process counts to. It fails when the bare run has failures of its own,
when the wrapped run wrapped no client or sent nothing through the retry transport, and
on every test whose outcome differs between the runs, except the by-design differences
listed for this SDK (major version) in by_design.toml, which must still differ.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import tomllib
from collections import Counter
from pathlib import Path

_BAD = {"failed", "error", "xpassed"}
# A cell of the SDK's interaction matrix over HTTP (mcp 2.x: tests/interaction/conftest.py).
_MATRIX = re.compile(r"\[(streamable-http|sse)[-\]]")


def _count(outcomes: dict[str, str], outcome: str) -> int:
    return sum(value == outcome for value in outcomes.values())


def _load(path: Path) -> tuple[dict[str, str], dict[str, str]]:
    if not path.is_file():
        raise SystemExit(f"no results in {path}: the run did not finish (see its log)")
    document = json.loads(path.read_text(encoding="utf-8"))
    return document["outcomes"], document["messages"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--by-design", type=Path, required=True)
    parser.add_argument("bare", type=Path)
    parser.add_argument("wrapped", type=Path)
    parser.add_argument("counts", type=Path)
    args = parser.parse_args()

    bare, _ = _load(args.bare)
    wrapped, messages = _load(args.wrapped)
    major = args.label.split("-")[1].split(".")[0]  # "mcp-2.3.0" -> "2"
    by_design: dict[str, str] = tomllib.loads(args.by_design.read_text(encoding="utf-8")).get(
        f"mcp{major}", {}
    )
    counts: Counter[str] = Counter()
    for file in args.counts.glob("*.json"):
        counts.update(json.loads(file.read_text(encoding="utf-8")))

    problems: list[str] = []
    bare_failures = sorted(test for test, outcome in bare.items() if outcome in _BAD)
    for test in bare_failures:
        problems.append(f"bare run: {bare[test]}: {test}")
    differences = sorted(
        test for test in bare.keys() | wrapped.keys() if bare.get(test) != wrapped.get(test)
    )
    unexpected = [test for test in differences if test not in by_design]
    for test in sorted(by_design.keys() - set(differences)):  # the list is stale
        state = "no longer differs" if test in bare else "was not run"
        problems.append(f"listed as by design but {state}: {test}")
    if counts["clients"] == 0 or counts["requests"] == 0:
        problems.append("the wrapped run wrapped no client or sent nothing through the transport")

    cells = [test for test in bare if _MATRIX.search(test)]
    print(
        f"{args.label}: {len(bare)} tests bare, {len(wrapped)} wrapped; passed "
        f"{_count(bare, 'passed')} bare, {_count(wrapped, 'passed')} wrapped; bare failures "
        f"{len(bare_failures)}; differences {len(differences)}: "
        f"{len(differences) - len(unexpected)} by design, {len(unexpected)} not"
    )
    if cells:
        differing = sum(test in differences for test in cells)
        print(
            f"  interaction matrix cells over streamable-http and sse: {len(cells)}, {differing} differ"
        )
    print(
        f"  through the transport: {counts['clients']} AsyncClients wrapped, {counts['requests']} "
        f"requests, {counts['factory_calls']} clients built by mcp_client for the SDK's factory"
    )
    for problem in problems:
        print(f"  {problem}")
    by_error: dict[str, list[str]] = {}
    for test in unexpected:
        error = (
            messages.get(test)
            or f"{bare.get(test, 'absent')} bare, {wrapped.get(test, 'absent')} wrapped"
        )
        by_error.setdefault(error, []).append(test)
    for error, tests in sorted(by_error.items(), key=lambda item: -len(item[1])):
        print(f"  differs in {len(tests)} test(s): {error}")
        for test in tests:
            print(f"    {bare.get(test, 'absent')} -> {wrapped.get(test, 'absent')}  {test}")
    return 1 if problems or unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
