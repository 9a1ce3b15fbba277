"""The workbook in a real browser: open modules 01, 04 and 06 in JupyterLab, run all cells, and check that the
job builder shows a command, the GPU dashboard its plots, and the trace explorer its kernel table."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.testing.browser import JupyterLab, failure_message, probe_widget, run_notebook, save_screenshots

pytestmark = pytest.mark.browser

# Each check is a JS function of the widget's element returning {ok, detail}.
JOB_COMMAND = """el => {
  const cmd = el.querySelector('.lumikit-job-command');
  const text = cmd ? cmd.innerText.trim() : '';
  return {ok: /\\b(srun|sbatch)\\b/.test(text),
          detail: cmd ? 'command area shows ' + JSON.stringify(text.slice(0, 200)) : 'no .lumikit-job-command inside'};
}"""

DASHBOARD_PLOTS = """el => {
  const imgs = [...el.querySelectorAll('.lumikit-gpu-plots img')];
  const drawn = imgs.filter(i => i.complete && i.naturalWidth > 0 && i.naturalHeight > 0);
  const status = el.innerText.split('\\n').find(l => l.includes('generated session')) || '';
  return {ok: drawn.length >= 2 && status.length > 0,
          detail: `${drawn.length} of ${imgs.length} plot images drawn; status line ${JSON.stringify(status)}`};
}"""

KERNEL_TABLE = """el => {
  const rows = [...el.querySelectorAll('.lumikit-kernel-table tbody tr')];
  const cells = rows.length ? rows[0].querySelectorAll('td').length : 0;
  return {ok: rows.length >= 1 && cells >= 5,
          detail: `kernel table has ${rows.length} rows, first row ${cells} cells`};
}"""

# Widget views only (ipywidgets marks its views `jupyter-widgets`), not an HTML fallback with the same class.
CASES = [
    pytest.param("01_node_and_slurm", "the job builder", ".jupyter-widgets.lumikit-job-builder", JOB_COMMAND,
                 id="01-job-builder"),
    pytest.param("04_watching_the_gpu", "the GPU dashboard", ".jupyter-widgets.lumikit-gpu-dashboard",
                 DASHBOARD_PLOTS, id="04-gpu-dashboard"),
    pytest.param("06_reading_traces", "the trace explorer", ".jupyter-widgets.lumikit-trace-explorer", KERNEL_TABLE,
                 id="06-trace-explorer"),
]


@pytest.mark.parametrize(("stem", "widget", "selector", "check"), CASES)
def test_widget_renders_after_run_all(lab_page, lab_server: JupyterLab, screenshots: Path, workbook_notebook,
                                      stem: str, widget: str, selector: str, check: str) -> None:
    run = run_notebook(lab_page, lab_server, workbook_notebook(stem))
    probe = probe_widget(lab_page, selector, check)
    shots = save_screenshots(lab_page, screenshots, stem, selector)
    print(f"{stem}: opened in {run.open_s:.1f} s, ran in {run.run_s:.1f} s; screenshots {[p.name for p in shots]}")

    assert run.report.finished and not run.report.errors, failure_message(widget, probe, run, lab_server)
    assert probe.ok, failure_message(widget, probe, run, lab_server)
    assert [p.name for p in shots] == [f"{stem}-page.png", f"{stem}-widget.png"]
