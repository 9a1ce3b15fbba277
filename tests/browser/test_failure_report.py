"""The harness itself: a notebook whose cell raises must come back as a kernel report naming the cell and the
exception, and the kernel must be this environment's Python (not one found in the user's Jupyter folders)."""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lumikit.testing.browser import (JupyterLab, NotebookRun, WidgetProbe, failure_message, probe_widget,
                                     run_notebook, save_screenshots)

pytestmark = pytest.mark.browser

SELFTEST_NOTEBOOK = "lumikit_browser_selftest.ipynb"
SELFTEST_ERROR = "lumikit browser self-test: this cell fails on purpose"


def write_selftest_notebook(root: Path) -> str:
    """A three-cell notebook in the server's root: cell 1 prints the kernel's ``sys.prefix`` on stderr, cell 2
    raises, so run-all stops there and cell 3 stays unrun."""
    def code(src: str) -> dict:
        return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": src}
    nb = {"nbformat": 4, "nbformat_minor": 4,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}},
          "cells": [code("import sys\nprint(sys.prefix, file=sys.stderr)"),
                    code(f"raise RuntimeError({SELFTEST_ERROR!r})"),
                    code("print('never runs')")]}
    (root / SELFTEST_NOTEBOOK).write_text(json.dumps(nb, indent=1))
    return SELFTEST_NOTEBOOK


@pytest.fixture(scope="module")
def failed_run(browser, lab_server: JupyterLab, screenshots: Path) -> Iterator[tuple[NotebookRun, WidgetProbe]]:
    """The self-test notebook run once in its own page, and a probe for a widget it does not have."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        run = run_notebook(page, lab_server, write_selftest_notebook(lab_server.root))
        probe = probe_widget(page, ".lumikit-job-builder", "el => ({ok: true, detail: ''})", timeout_s=0.5)
        save_screenshots(page, screenshots, "selftest-failing-cell")
        yield run, probe
    finally:
        context.close()
        lab_server.shutdown_sessions()


def test_a_raising_cell_shows_in_the_kernel_report(failed_run: tuple[NotebookRun, WidgetProbe]) -> None:
    report = failed_run[0].report

    assert report.finished and report.kernel == "idle"
    assert [(e.cell, e.ename, e.evalue) for e in report.errors] == [(2, "RuntimeError", SELFTEST_ERROR)]
    assert "RuntimeError" in report.errors[0].traceback and "\x1b[" not in report.errors[0].traceback
    # Cell 1 printed the kernel's sys.prefix on stderr: the kernel runs from this very environment.
    assert report.stderr == ((1, f"{sys.prefix}\n"),)


def test_the_failure_message_names_widget_exception_and_server_log(failed_run: tuple[NotebookRun, WidgetProbe],
                                                                   lab_server: JupyterLab) -> None:
    run, probe = failed_run

    message = failure_message("the job builder", probe, run, lab_server)

    assert probe == WidgetProbe(".lumikit-job-builder", found=False, ok=False,
                                detail="no element matches .lumikit-job-builder")
    assert message.startswith(f"the job builder did not render in {SELFTEST_NOTEBOOK}: no element matches")
    assert f"cell 2 raised RuntimeError: {SELFTEST_ERROR}" in message
    assert "JupyterLab server log" in message and "Kernel started" in message
