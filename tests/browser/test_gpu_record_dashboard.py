"""The GPU dashboard on a 2-node run record, in a real browser: a notebook (written here) shows
``GpuDashboard(run=...)`` of a run folder whose record is GENERATED: either written by lumikit.testing.records
(2 nodes x 2 GCDs), or, with the lumi-sim cluster up, left by a real 2-node job launched on it (its nodes stream the
generated rocm-smi stand-in). The page must show all four GCD cells of both nodes, the kind label, and the first
node's plots."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.testing.browser import JupyterLab, failure_message, probe_widget, run_notebook, save_screenshots

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
NAME = "gpu_record_dashboard.ipynb"

CELLS = [
    # the kernel runs this clone's lumikit (whatever the environment has installed)
    f"import sys\nsys.path.insert(0, {str(REPO)!r})",
    "from lumikit.testing.records import write_generated_record\n"
    "from lumikit.widgets.gpu_dashboard import GpuDashboard\n"
    "run = write_generated_record('runs/20251125-120000-two-nodes-abc123', nodes=2, gcds=2, samples=10)",
    "GpuDashboard(run=run)",
]

GRID_CHECK = """el => {
  const cells = [...el.querySelectorAll('.lumikit-gpu-grid td.lumikit-gcd-cell')];
  const seen = cells.filter(c => c.offsetWidth > 0 && c.offsetHeight > 0)
                    .map(c => c.dataset.node + '/' + c.dataset.gcd).sort();
  const imgs = [...el.querySelectorAll('.lumikit-gpu-plots img')].filter(i => i.complete && i.naturalWidth > 0);
  const generated = el.innerText.includes('generated GPU record');
  const want = ['nid005001/0', 'nid005001/1', 'nid005002/0', 'nid005002/1'];
  return {ok: JSON.stringify(seen) === JSON.stringify(want) && imgs.length >= 2 && generated,
          detail: `visible GCD cells ${JSON.stringify(seen)}, ${imgs.length} plot images drawn, ` +
                  `labelled generated: ${generated}`};
}"""


def _notebook(cells: list[str]) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                  "source": c} for c in cells],
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                                   "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


def _show(lab_page, lab_server: JupyterLab, screenshots: Path, cells: list[str], name: str, stem: str) -> None:
    (lab_server.root / name).write_text(_notebook(cells))
    run = run_notebook(lab_page, lab_server, name)
    selector = ".jupyter-widgets.lumikit-gpu-record"
    probe = probe_widget(lab_page, selector, GRID_CHECK, timeout_s=30)
    shots = save_screenshots(lab_page, screenshots, stem, selector)
    print(f"{name}: ran in {run.run_s:.1f} s; {probe.detail}; screenshots {[p.name for p in shots]}")

    assert run.report.finished and not run.report.errors, failure_message("the run-record dashboard", probe, run,
                                                                          lab_server)
    assert probe.ok, failure_message("the run-record dashboard", probe, run, lab_server)
    assert [p.name for p in shots] == [f"{stem}-page.png", f"{stem}-widget.png"]


def test_dashboard_shows_both_nodes_gcds_of_a_run_record(lab_page, lab_server: JupyterLab,
                                                         screenshots: Path) -> None:
    _show(lab_page, lab_server, screenshots, CELLS, NAME, "gpu-record-dashboard")


@pytest.mark.slurm
def test_dashboard_shows_both_nodes_of_a_2_node_lumi_sim_run(lab_page, lab_server: JupyterLab, screenshots: Path,
                                                            slurm_cluster) -> None:
    job = spec(["python3", "-c", "import time; time.sleep(12)"], partition="small-g", nodes=2, gpus_per_node=2,
               ntasks_per_node=2, name="two-nodes")
    run = launch(job, site="lumi-sim", runs_dir=lab_server.root / "runs")
    assert run.wait(timeout=300, progress=False) == "COMPLETED"
    cells = [CELLS[0], "from lumikit.widgets.gpu_dashboard import GpuDashboard",
             f"GpuDashboard(run={str(run.path.relative_to(lab_server.root))!r})"]
    _show(lab_page, lab_server, screenshots, cells, "gpu_record_lumi_sim.ipynb", "gpu-record-lumi-sim")
