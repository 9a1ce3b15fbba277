"""Browser-test fixtures: one private JupyterLab server and one headless Chromium for the session, a fresh page
per test, and the folder where screenshots go (printed at the end of the run)."""
from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from lumikit.testing.browser import CHROMIUM, CHROMIUM_ARGS, JupyterLab, copy_notebooks

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
_ARTIFACTS_USED: list[Path] = []


def artifacts_dir() -> Path:
    """``$LUMIKIT_ARTIFACTS/browser``, else ``<repo>/test-artifacts/browser`` (git-ignored)."""
    base = os.environ.get("LUMIKIT_ARTIFACTS")
    return (Path(base) if base else REPO / "test-artifacts") / "browser"


def _fail_or_skip(why: str) -> None:
    """Skip locally; in CI (CI=true) a missing piece is a failure, never a silent skip."""
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI=true and {why}", pytrace=False)
    pytest.skip(why)


@pytest.fixture(scope="session")
def chromium() -> Path:
    """Debian's Chromium; skips (fails in CI) when it is not installed. Never a downloaded browser."""
    if not CHROMIUM.exists():
        _fail_or_skip(f"{CHROMIUM} not found; install it with `apt-get install chromium` (`.ci/run` does)")
    return CHROMIUM


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLab]:
    """JupyterLab from this environment on 127.0.0.1, serving copies of the workbook's notebooks (outputs
    cleared) from a temporary root; stopped with its kernels at the end of the session."""
    workdir = tmp_path_factory.mktemp("jupyterlab")
    root = workdir / "root"
    copy_notebooks(NOTEBOOKS, root)
    server = JupyterLab.start(root, workdir, jupyter=Path(sys.executable).parent / "jupyter")
    print(f"\nJupyterLab answered after {server.started_s:.1f} s ({server.base_url}, log {server.log_path})")
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def browser(chromium: Path) -> Iterator[object]:
    """Headless Chromium driven by Playwright (sync API)."""
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (`make venv`)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(chromium), headless=True, args=list(CHROMIUM_ARGS))
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def lab_page(browser: object, lab_server: JupyterLab) -> Iterator[object]:
    """A fresh page (own cookies and storage) in a 1400x1000 window; its kernels are stopped afterwards."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})  # type: ignore[attr-defined]
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()
        lab_server.shutdown_sessions()


@pytest.fixture(scope="session")
def screenshots() -> Path:
    """Where screenshots go; the path is printed at the end of the run."""
    folder = artifacts_dir()
    folder.mkdir(parents=True, exist_ok=True)
    _ARTIFACTS_USED.append(folder)
    return folder


@pytest.fixture
def workbook_notebook() -> Callable[[str], str]:
    """``need(stem)`` -> ``<stem>.ipynb`` when the workbook has it; otherwise the test skips (fails in CI)."""
    def need(stem: str) -> str:
        name = f"{stem}.ipynb"
        if not (NOTEBOOKS / name).is_file():
            _fail_or_skip(f"notebooks/{name} not found (generate it with `jupytext --sync notebooks/{stem}.py`)")
        return name
    return need


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say where the screenshots are."""
    for folder in _ARTIFACTS_USED:
        shots = sorted(p.name for p in folder.glob("*.png"))
        terminalreporter.write_sep("-", "browser screenshots")
        terminalreporter.write_line(f"{len(shots)} screenshots in {folder}")
