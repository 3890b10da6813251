"""MkDocs hooks: pages and images the site takes from elsewhere in the repository, and the
README's links into the site made links between pages.

The benchmarks' results and their plot live beside the benchmarks (``benchmarks/``), where
the benchmark run writes them; the site serves them under ``performance/`` without a copy
in ``docs/``. README.md links into the published site by absolute URL (it is read on the
package index and on the forge too); where the site includes a part of it, those links
become links within the site (the docs test checks every one of them).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

ROOT = Path(__file__).resolve().parent.parent
FROM_BENCHMARKS = {
    "performance/results.md": ROOT / "benchmarks" / "RESULTS.md",
    "performance/cost_ratio.png": ROOT / "benchmarks" / "cost_ratio.png",
}


def on_files(files: Files, config: Any, **_: Any) -> Files:
    for uri, source in FROM_BENCHMARKS.items():
        files.append(File.generated(config, uri, abs_src_path=str(source)))
    return files


def on_page_content(html: str, page: Page, config: Any, **_: Any) -> str:
    """Links to the published site (README's, included here) as links within this build."""
    site = str(config["site_url"])
    here = posixpath.dirname(page.url) if not page.url.endswith("/") else page.url

    def local(match: re.Match[str]) -> str:
        target = match.group(1)
        path, _, fragment = target.partition("#")
        relative = posixpath.relpath(path or ".", here or ".")
        relative = relative + "/" if path.endswith("/") and relative != "." else relative
        return f'href="{relative if relative != "." else "./"}{"#" + fragment if fragment else ""}"'

    return re.sub(rf'href="{re.escape(site)}([^"]*)"', local, html)
