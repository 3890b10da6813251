"""Profile the wrapper's hot path: ``python -m benchmarks.profile_hot_path [case] [calls]``.

Uses pyinstrument when it is installed (``--pyinstrument``), cProfile otherwise; prints
the functions that cost most per call of the sync transport over a prebuilt inner body.
"""

from __future__ import annotations

import cProfile
import pstats
import sys

import httpx

from ._payloads import REQUEST
from .percall import POST_HEADERS, URL, _wrap, mock_inner


def main(argv: list[str]) -> int:
    use_pyinstrument = "--pyinstrument" in argv
    args = [a for a in argv if not a.startswith("--")]
    case = args[0] if args else "json-1k"
    calls = int(args[1]) if len(args) > 1 else 20_000
    inner, _ = mock_inner(case)
    client = httpx.Client(transport=_wrap("mcp-safe-retry", inner, False))

    def work() -> None:
        for _ in range(calls):
            client.post(URL, content=REQUEST, headers=POST_HEADERS)

    work()  # warm up
    if use_pyinstrument:
        try:
            import pyinstrument
        except ImportError:
            print("pyinstrument is not installed; falling back to cProfile")
        else:
            profiler = pyinstrument.Profiler(interval=0.0001)
            profiler.start()
            work()
            profiler.stop()
            print(profiler.output_text(unicode=False, color=False, show_all=False))
            return 0
    profile = cProfile.Profile()
    profile.enable()
    work()
    profile.disable()
    stats = pstats.Stats(profile)
    stats.sort_stats("tottime").print_stats(35)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
