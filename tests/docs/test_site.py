"""The documentation site: built by scripts/docs.sh with warnings as errors, every link
between its pages resolves (anchors too), README's links into it name pages it has, the API
reference holds every public name, and a real browser (headless Chromium, installed by
scripts/chromium.sh) renders the home page and the API reference with navigation and search.
"""

from __future__ import annotations

import functools
import http.server
import importlib
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs_support import README, ROOT

if TYPE_CHECKING:
    from selenium.webdriver.remote.webdriver import WebDriver

pytestmark = pytest.mark.e2e
SITE_URL = "https://mcp-safe-retry.github.io/mcp-safe-retry/"
PUBLIC_MODULES = {
    "mcp_safe_retry": "reference/mcp_safe_retry",
    "mcp_safe_retry.httpx2": "reference/httpx2",
    "mcp_safe_retry.records": "reference/records",
    "mcp_safe_retry.policy": "reference/policy",
    "mcp_safe_retry.hooks": "reference/hooks",
    "mcp_safe_retry.extensions": "reference/extensions",
    "mcp_safe_retry.tenacity": "reference/tenacity",
    "mcp_safe_retry.otel": "reference/otel",
    "mcp_safe_retry.redis": "reference/redis",
    "mcp_safe_retry.kitchen": "reference/kitchen",
    "mcp_safe_retry.gateway": "reference/gateway",
    "mcp_safe_retry.frameworks.strands": "reference/frameworks",
    "mcp_safe_retry.frameworks.mcp_use": "reference/frameworks",
}
# The names the browser must find on the reference page of mcp_safe_retry.
REFERENCE_NAMES = ("RetryPolicy", "RetryTransport", "mcp_client", "History")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


class _Page(HTMLParser):
    """The ids a page defines and the links it makes."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in {"id", "name"} and tag != "meta":
                self.ids.add(value)
            if (name == "href" and tag in {"a", "link"}) or (
                name == "src" and tag in {"img", "script"}
            ):
                self.links.append(value)


@functools.cache
def _parsed(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _target(site: Path, page: Path, link: str) -> tuple[Path, str]:
    """The file a relative link of ``page`` names, and its fragment."""
    parts = urlsplit(link)
    path = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
    if path.is_dir():
        path = path / "index.html"
    return path, unquote(parts.fragment)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        ["bash", str(ROOT / "scripts" / "docs.sh"), "--site-dir", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr  # strict: a warning would have failed it
    return out


def test_every_internal_link_resolves(site: Path) -> None:
    broken = []
    pages = sorted(site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        if page.name == "404.html":  # served for any path: its links are absolute
            continue
        for link in _parsed(page).links:
            if urlsplit(link).scheme or link.startswith(("//", "mailto:", "data:")):
                continue
            target, fragment = _target(site, page, link)
            if not target.is_file():
                broken.append(f"{page.relative_to(site)}: {link} (no file)")
            elif fragment and target.suffix == ".html" and fragment not in _parsed(target).ids:
                broken.append(f"{page.relative_to(site)}: {link} (no anchor)")
    assert broken == []


def test_the_link_checker_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    page = tmp_path / "a" / "index.html"
    page.write_text('<h2 id="here">x</h2><a href="../b/">b</a><a href="#there">t</a>')
    assert _target(tmp_path, page, "../b/") == ((tmp_path / "b").resolve(), "")
    assert _target(tmp_path, page, "#there")[1] not in _parsed(page).ids


def test_readme_links_into_the_site_name_its_pages(site: Path) -> None:
    links = re.findall(r"\]\((https?://[^)\s]+)\)", README.read_text(encoding="utf-8"))
    into_site = [link for link in links if link.startswith(SITE_URL)]
    assert len(into_site) >= 10
    for link in into_site:
        target, fragment = _target(site, site / "index.html", link.removeprefix(SITE_URL))
        assert target.is_file(), link
        assert not fragment or fragment in _parsed(target).ids, link
    relative = re.findall(r"\]\((?!https?://|#)([^)\s]+)\)", README.read_text(encoding="utf-8"))
    assert relative == []  # they would break where README is read away from the repository


def test_the_reference_holds_every_public_name(site: Path) -> None:
    missing = []
    for module, page in PUBLIC_MODULES.items():
        ids = _parsed(site / page / "index.html").ids
        for name in _public_names(module):
            if f"{module}.{name}" not in ids:
                missing.append(f"{module}.{name}")
    assert missing == []


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def _public_names(module: str) -> list[str]:
    """``__all__`` (but ``__version__``), or the module's own functions and classes."""
    loaded = importlib.import_module(module)
    if hasattr(loaded, "__all__"):
        return [n for n in loaded.__all__ if n != "__version__"]
    return [
        name
        for name, value in vars(loaded).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module
    ]


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    handler = functools.partial(_Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or driver is None:
        pytest.fail("chromium and chromedriver not found: run bash scripts/chromium.sh")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    chrome = webdriver.Chrome(options=options, service=Service(executable_path=driver))
    chrome.set_page_load_timeout(60)
    try:
        yield chrome
    finally:
        chrome.quit()


def _screenshot(chrome: WebDriver, name: str, tmp_path: Path) -> None:
    """Keep what the browser showed (in MCP_SAFE_RETRY_SCREENSHOTS, when set)."""
    folder = Path(os.environ.get("MCP_SAFE_RETRY_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    assert chrome.save_screenshot(str(folder / f"{name}.png"))


def test_the_home_page_renders_with_navigation_and_search(
    browser: WebDriver, served: str, tmp_path: Path
) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    chrome = browser
    chrome.get(served)
    assert "mcp-safe-retry" in chrome.title
    nav = chrome.find_element(By.CSS_SELECTOR, "nav.md-nav--primary")
    titles = {
        a.text.strip() for a in nav.find_elements(By.CSS_SELECTOR, "a.md-nav__link") if a.text
    }
    assert {"Getting started", "The duplicate guard", "Changelog"} <= titles
    heading = chrome.find_element(By.CSS_SELECTOR, "article h1")
    assert heading.is_displayed() and heading.text.startswith("mcp-safe-retry")
    search = chrome.find_element(By.CSS_SELECTOR, "input.md-search__input")
    search.click()
    WebDriverWait(chrome, 20).until(ec.element_to_be_clickable(search)).send_keys("duplicate guard")
    WebDriverWait(chrome, 30).until(
        lambda c: c.find_elements(By.CSS_SELECTOR, ".md-search-result__item")
    )
    results = chrome.find_elements(By.CSS_SELECTOR, ".md-search-result__item")
    assert any("duplicate" in r.text.lower() for r in results)
    _screenshot(chrome, "home-search", tmp_path)


def test_the_api_reference_renders(browser: WebDriver, served: str, tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By

    chrome = browser
    chrome.get(f"{served}reference/mcp_safe_retry/")
    nav = chrome.find_element(By.CSS_SELECTOR, "nav.md-nav--primary")
    assert nav.is_displayed() and "API reference" in nav.text
    assert chrome.find_element(By.CSS_SELECTOR, "input.md-search__input")
    for name in REFERENCE_NAMES:
        heading = chrome.find_element(By.ID, f"mcp_safe_retry.{name}")
        chrome.execute_script("arguments[0].scrollIntoView();", heading)
        assert heading.is_displayed() and name in heading.text
    signature = chrome.find_element(
        By.XPATH, "//*[@id='mcp_safe_retry.RetryPolicy']/following::pre[1]"
    )
    assert "max_retries" in signature.text  # the attrs fields, as the constructor's signature
    _screenshot(chrome, "reference", tmp_path)
