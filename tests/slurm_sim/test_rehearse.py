"""lumi-sim as a place the workbook recognises, and the instructors' dress rehearsal on it: inside a lumi-sim job the
site is lumi-sim, module 03's job (1 GCD, 7 cores, 60 GB) runs there, and `lumikit rehearse --site lumi-sim` ends
with every module's job COMPLETED and a report written."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.course_jobs import course_job, course_jobs
from lumikit.jobs import spec
from lumikit.launch import launch

pytestmark = pytest.mark.slurm

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts" / "slurm-sim"
PORT_BASE = 8317  # a private cluster of its own, away from the shared one (6817) and the other private one (7917)


@pytest.fixture(scope="module")
def lumi_sim(slurm_cluster, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A lumi-sim folder whose cluster has the default profile: the shared one when it runs that profile, else a
    private one started with the default knobs (which is how the next `make slurm-up` starts)."""
    if slurm_cluster.profile == "lumi":
        yield slurm_cluster.sim_dir
        return
    request.getfixturevalue("slurm_admin")  # starting a private cluster is root's: skips otherwise
    sim_dir = Path(tempfile.mkdtemp(prefix="lumikit-slurm-sim-rehearse-"))
    sim_dir.chmod(0o755)
    env = {**os.environ, "LUMIKIT_SLURM_SIM_DIR": str(sim_dir), "LUMIKIT_SLURM_PORT_BASE": str(PORT_BASE),
           "LUMIKIT_SLURM_ACCOUNTING": "0", "LUMIKIT_SLURM_INSTALL": "0"}
    env.pop("LUMIKIT_SLURM_PROFILE", None)
    try:
        up = subprocess.run(["bash", str(SCRIPTS / "up.sh")], env=env, capture_output=True, text=True, timeout=120)
        assert up.returncode == 0, up.stdout + up.stderr
        yield sim_dir
    finally:
        subprocess.run(["bash", str(SCRIPTS / "down.sh"), "--purge"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(sim_dir, ignore_errors=True)


@pytest.fixture
def on_lumi_sim(lumi_sim, monkeypatch) -> Path:
    monkeypatch.setenv("LUMIKIT_SLURM_SIM_DIR", str(lumi_sim))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    return lumi_sim


def test_the_default_profile_is_lumi_shaped(lumi_sim):
    mode = json.loads((lumi_sim / "mode.json").read_text())
    assert (mode["profile"], mode["cpus_per_node"], mode["gpus_per_node"]) == ("lumi", 128, 8)


def test_inside_a_lumi_sim_job_the_mode_line_names_lumi_sim(on_lumi_sim, tmp_path):
    code = "from lumikit.launch import mode_line; from lumikit.site import detect_site; print(detect_site()); print(mode_line())"
    run = launch(spec([sys.executable, "-c", code], time="0:05:00"), site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    site, line = run.stdout().strip().splitlines()
    assert site == "lumi-sim"
    assert line.startswith("Mode: lumi-sim - jobs go to Slurm")


def test_module_03s_launch_cell_spec_completes_on_lumi_sim(on_lumi_sim, tmp_path):
    first = course_job("03", "lm-first", site="lumi-sim", scratch=tmp_path)
    assert (first.gpus_per_node, first.cpus_per_task, first.mem_per_gpu) == (1, 7, "60G")
    run = launch(first, site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=300, progress=False) == "COMPLETED", run.tail()
    assert run.metrics().result["steps"] == 12
    assert (tmp_path / "03-lm.pt").is_file()


def test_module_12s_ladder_completes_on_lumi_sim_and_keeps_its_promise(on_lumi_sim, tmp_path):
    from lumikit.rehearse import ladder_rungs

    ladder = course_job("12", "ladder", site="lumi-sim")
    assert (ladder.gpus_per_node, ladder.cpus_per_task) == (1, 7)
    run = launch(ladder, site="lumi-sim", runs_dir=tmp_path)
    assert run.wait(timeout=600, progress=False) == "COMPLETED", run.tail()
    assert ladder_rungs(run.path)[0] == "fp32,bf16,fused"


def test_rehearse_runs_every_module_job_to_completion_and_writes_the_report(on_lumi_sim, tmp_path, capsys):
    rc = main(["rehearse", "--site", "lumi-sim", "--runs-dir", str(tmp_path), "--timeout", "600", "--json"])
    out, err = capsys.readouterr()
    report = json.loads(Path(out.strip()).read_text())
    assert rc == 0, err
    assert report["all_completed"] is True
    assert [(j["module"], j["key"]) for j in report["jobs"]] == [(j.module, j.key) for j in course_jobs()]
    assert all(j["state"] == "COMPLETED" and j["job_id"] for j in report["jobs"])
    folder = Path(report["folder"])
    md = (folder / "report.md").read_text()
    assert f"{len(report['jobs'])} of {len(report['jobs'])} jobs COMPLETED" in md
    assert "| None |" not in md  # a promise not measured shows "-", never Python's None
    by_job = {(j["module"], j["key"]): {c["key"]: c for c in j["checks"]} for j in report["jobs"]}
    # What lumi-sim can keep, it keeps: the ranks ran and the two-node job used both nodes.
    assert by_job[("07", "ddp")]["ranks"]["verdict"] == "holds"
    assert by_job[("08", "ddp-2nodes")]["nodes"]["measured"] == 2
    # What needs LUMI's GPUs is measured and shown as differing, never passed.
    assert by_job[("03", "lm-first")]["gpus_visible"] == {**by_job[("03", "lm-first")]["gpus_visible"],
                                                           "measured": 0, "verdict": "differs"}
    # The report card comes from each job's GPU record: on lumi-sim a stand-in's readings, labelled generated.
    # (Training jobs: module 02's probe of a few seconds can end before the recorder's first sample.)
    with_gpus = {(j.module, j.key) for j in course_jobs(["03", "04", "05", "07"])}
    cards = {(j["module"], j["key"]): j["card"] for j in report["jobs"] if (j["module"], j["key"]) in with_gpus}
    assert all(c.get("kind") == "generated" and c["gcds"] for c in cards.values()), cards
    assert by_job[("08", "ddp-2nodes")]["nodes"]["verdict"] == "holds"
    # Module 07's DDP rule holds as far as lumi-sim can show it: Slurm gives each rank both GCDs (torch sees none
    # here), and each rank's device LOCAL_RANK is a GCD of its own.
    assert by_job[("07", "ddp")]["device_local_rank"]["measured"] == "sees 2 GCDs, uses device LOCAL_RANK"
    assert by_job[("07", "ddp")]["device_local_rank"]["verdict"] == "holds"
    # The 2-node GPU job runs on both nodes, but its transport promise needs RCCL: never passed here.
    gpu2 = by_job[("08", "gpu-2nodes")]
    assert (gpu2["nodes"]["verdict"], gpu2["ranks"]["verdict"]) == ("holds", "holds")
    assert gpu2["rccl_transport"]["verdict"] in ("not measured", "differs")
    assert "no RCCL here" in gpu2["rccl_transport"]["note"]
    # Module 12's ladder wrote every rung it was asked for, each with samples/s and their spread.
    assert by_job[("12", "ladder")]["ladder_rungs"]["verdict"] == "holds"
    # Power is promised only for jobs that own their whole node: none of the course's jobs on shared small-g.
    assert not any("busy_power_w" in checks for checks in by_job.values())
    # Every job's run folder has its own name, after its module and key.
    runs = [Path(j["run"]).name for j in report["jobs"]]
    assert len(set(runs)) == len(runs) and all(f"-{j['module']}-{j['key']}-" in Path(j["run"]).name
                                              for j in report["jobs"])
    bundle = json.loads((folder / "bundle.json").read_text())
    assert len(bundle) == len(report["jobs"]) and all(Path(b["run"], "manifest.json").is_file() for b in bundle)
    assert bundle[0]["command"][:3] == ["lumikit", "reference", "add"]


def test_a_detached_rehearsal_outlives_the_shell_that_started_it_and_is_collected_later(on_lumi_sim, tmp_path):
    """`lumikit rehearse --detach` in a shell that then ends: the driver job goes on, and `--collect` prints the
    report it wrote (module 01 only, to keep it short)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                          os.environ.get("PYTHONPATH", "")])}
    shell = subprocess.run(["bash", "-c", f"{sys.executable} -m lumikit rehearse --site lumi-sim --modules 01 "
                            f"--runs-dir {tmp_path} --timeout 300 --detach; exit"],
                           env=env, capture_output=True, text=True, timeout=120)
    assert shell.returncode == 0, shell.stderr
    folder = Path(shell.stdout.strip().splitlines()[-1])
    assert "--collect" in shell.stderr and folder.parent == tmp_path
    driver = json.loads((folder / "driver.json").read_text())
    assert driver["job_id"]

    def collected() -> subprocess.CompletedProcess[str] | None:
        done = subprocess.run([sys.executable, "-m", "lumikit", "rehearse", "--collect", str(folder), "--json"],
                              env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode != 2 or "still going" in done.stderr, done.stderr  # 2 and not going: it failed
        return done if done.returncode != 2 else None

    first = subprocess.run([sys.executable, "-m", "lumikit", "rehearse", "--collect", str(folder)], env=env,
                           capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 or "still going" in first.stderr, first.stderr
    deadline = time.monotonic() + 300
    while (done := collected()) is None:
        assert time.monotonic() < deadline, "the detached rehearsal did not finish in 300 s"
        time.sleep(2)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads(Path(done.stdout.strip()).read_text())
    assert [(j["module"], j["key"], j["state"]) for j in report["jobs"]] == [("01", "ranks", "COMPLETED")]
    assert report["folder"] == str(folder)
