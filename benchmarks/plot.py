"""Plot every case's cost ratio to its bare client from results.json.

Top: the prebuilt-body httpx cases against body size (JSON, SSE). Bottom: the
httpx2.AsyncClient in-process cases, and the round trips over loopback (the official mcp
client in both protocol eras, and httpx to a minimal ASGI app), as bars.

    python benchmarks/plot.py [benchmarks/results.json] [benchmarks/cost_ratio.png]

Needs matplotlib (not a dependency of mcp-safe-retry): without it, this says so and exits 0.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BARE = {"httpx", "httpx2", "mcp client"}  # the clients each ratio is taken to


def _size(case: str) -> int:
    size = case.split("-")[1]
    return int(size[:-1]) * {"k": 1024, "m": 1 << 20}[size[-1]]


def make(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, NullFormatter

    rows = results["mock"]
    names = [n for n in rows[0]["contenders"] if n != "httpx"]
    styles = {
        "mcp-safe-retry": ("tab:blue", "o"),
        "mcp-safe-retry (stdlib json)": ("tab:orange", "s"),
        "httpx-retries": ("tab:green", "^"),
    }
    fig, grid = plt.subplots(2, 2, figsize=(12, 10), sharey=False)
    axes = grid[0]
    for ax, kind, title in ((axes[0], "json", "JSON answer"), (axes[1], "sse", "SSE answer")):
        for name in names:
            color, marker = styles.get(name, ("tab:gray", "D"))
            for mode, line in (("sync", "-"), ("async", "--")):
                points = sorted(
                    (_size(r["case"]), r["contenders"][name]["ratio"])
                    for r in rows
                    if r["mode"] == mode and r["case"].startswith(kind)
                )
                if not points:
                    continue
                xs, ys = zip(*points, strict=True)
                ax.plot(xs, ys, line, color=color, marker=marker, label=f"{name}, {mode}")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.axhline(1.1, color="red", linewidth=0.8, linestyle=":", label="+10% target")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ticks = sorted({_size(r["case"]) for r in rows if r["case"].startswith(kind)})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t // 1024} KiB" if t < 1 << 20 else f"{t >> 20} MiB" for t in ticks])
        low, high = ax.get_ylim()
        steps = (1, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20, 50, 100)
        if high / low > 8:  # a wide range: keep the ticks apart
            steps = (1, 2, 5, 10, 20, 50, 100)
        yticks = [t for t in steps if low <= t <= high]
        ax.set_yticks(yticks)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"x{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("body size (bytes on the wire)")
        ax.set_ylabel("time per call / bare httpx")
        ax.set_title(f"{title}, prebuilt-body inner transport")
        ax.grid(True, which="both", alpha=0.3)
    handles, labels = axes[0].get_legend_handles_labels()
    axes[0].legend(handles, labels, loc="upper left", fontsize=7, frameon=False)
    _bars(
        grid[1][0],
        [(r["case"], r["contenders"]) for r in results.get("httpx2", [])],
        "httpx2.AsyncClient, prebuilt answer, in process",
    )
    loopback = [
        (f"official {r['era']}, {r['case'].split('-')[1]}", r["contenders"])
        for r in results.get("official", [])
    ] + [(f"httpx {r['mode']}, {r['case']}", r["contenders"]) for r in results.get("loopback", [])]
    _bars(grid[1][1], loopback, "round trips over loopback")
    m = results["machine"]
    fig.suptitle(
        "mcp-safe-retry cost per call relative to the bare client "
        f"(Python {m['python']}, {m['date']})",
        fontsize=11,
    )
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _bars(ax: Any, rows: list[tuple[str, dict[str, Any]]], title: str) -> None:
    """Horizontal bars: each row's ratio to its bare client, for every wrapped contender."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    if not rows:
        ax.set_axis_off()
        return
    names = list(
        dict.fromkeys(n for _, cells in rows for n in cells if n not in BARE and "stdlib" not in n)
    )
    height = 0.8 / len(names)
    colors = ["tab:blue", "tab:gray", "tab:green", "tab:purple"]
    for i, name in enumerate(names):
        ys = [j + i * height for j in range(len(rows))]
        xs = [row[1].get(name, {}).get("ratio", float("nan")) for row in rows]
        ax.barh(ys, [x - 1 for x in xs], height, left=1, color=colors[i % 4], label=name)
    ax.set_yticks([j + 0.4 - height / 2 for j in range(len(rows))])
    ax.set_yticklabels([label for label, _ in rows], fontsize=7)
    ax.invert_yaxis()
    ax.axvline(1.0, color="black", linewidth=0.8)
    ax.set_xscale("log")
    low, high = ax.get_xlim()
    steps = (0.5, 0.75, 1, 1.05, 1.1, 1.25, 1.5, 2, 3, 5, 10, 20)
    if high / low > 4:  # a wide range: keep the ticks apart
        steps = (0.5, 1, 1.5, 2, 5, 10, 20, 50)
    ax.set_xticks([t for t in steps if low <= t <= high])
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"x{v:g}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("time per call / bare client")
    ax.set_title(title, fontsize=10)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="lower right")


def main(argv: list[str]) -> int:
    source = Path(argv[0]) if argv else HERE / "results.json"
    target = Path(argv[1]) if len(argv) > 1 else source.with_name("cost_ratio.png")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: no plot (pip install matplotlib)")
        return 0
    make(json.loads(source.read_text()), target)
    print(f"plot written: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
