"""MkDocs hooks: pages and images the site takes from elsewhere in the repository.

The benchmarks' results and their plot live beside the benchmarks (``benchmarks/``), where
the benchmark run writes them; the site serves them under ``performance/`` without a copy
in ``docs/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
FROM_BENCHMARKS = {
    "performance/results.md": ROOT / "benchmarks" / "RESULTS.md",
    "performance/cost_ratio.png": ROOT / "benchmarks" / "cost_ratio.png",
}


def on_files(files: Files, config: Any, **_: Any) -> Files:
    for uri, source in FROM_BENCHMARKS.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files
