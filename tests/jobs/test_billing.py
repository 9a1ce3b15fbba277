"""LUMI's billing rule: the GCD-equivalents of a shape, its GPU-hours, and the warnings for shapes that waste them."""
from __future__ import annotations

import subprocess
import sys

import pytest

from lumikit.jobs import problems, spec
from lumikit.jobs.billing import billing_rule, estimate
from lumikit.site import load_site

LUMI = load_site("lumi")


def job(**options):
    return spec(["python", "x.py"], **options)


def test_the_rule_comes_from_the_site_profile_with_its_source():
    rule = billing_rule(LUMI)
    assert (rule.gpu_hours_per_gcd_hour, rule.cores_per_gcd, rule.memory_per_gcd_gb) == (0.5, 8, 64)
    assert "lumi_env/billing.md" in rule.source


@pytest.mark.parametrize("options, equivalents, reason, gpu_hours", [
    # LUMI's own example: 1 GCD, 16 cores, 256 GB -> billed as 4 GCDs, 2 GPU-hours per hour
    (dict(partition="small-g", gpus_per_node=1, cpus_per_task=16, mem="256G", time="2:00:00"), 4, "memory", 4.0),
    (dict(partition="small-g", gpus_per_node=1, cpus_per_task=16, time="1:00:00"), 2, "cores", 1.0),
    (dict(partition="small-g", gpus_per_node=1, cpus_per_task=7, mem_per_gpu="60G", time="0:30:00"), 1, "GCDs", 0.25),
    (dict(partition="small-g", gpus_per_node=2, ntasks_per_node=2, cpus_per_task=7, mem_per_gpu="60G",
          time="3:00:00"), 2, "GCDs", 3.0),
    (dict(partition="dev-g", nodes=2, gpus_per_node=4, cpus_per_task=32, time="0:30:00"), 4, "GCDs", 2.0),
    (dict(partition="standard-g", nodes=2, gpus_per_node=8, time="1:00:00"), 8, "whole node", 8.0),
    (dict(partition="standard-g", nodes=1, gpus_per_node=1, time="1:00:00"), 8, "whole node", 4.0),
    (dict(partition="small-g", exclusive=True, gpus_per_node=8, time="1:00:00"), 8, "whole node", 4.0),
    # LUMI rounds each slice up: 9 cores start a second 8-core slice, 65G a second 64 GB slice
    (dict(partition="small-g", gpus_per_node=1, cpus_per_task=9, time="1:00:00"), 2, "cores", 1.0),
    (dict(partition="small-g", gpus_per_node=1, mem="65G", time="1:00:00"), 2, "memory", 1.0),
    (dict(partition="small-g", gpus_per_node=1, mem="64G", cpus_per_task=8, time="1:00:00"), 1, "GCDs", 0.5),
    # the user guide's example: 1 GCD with 128 GB for 24 hours is 24 GPU-hours
    (dict(partition="small-g", gpus_per_node=1, mem="128G", time="24:00:00"), 2, "memory", 24.0),
    (dict(partition="dev-g", gpus_per_node=2, ntasks_per_node=2, cpus_per_task=9, time="1:00:00"), 3, "cores", 1.5),
])
def test_gcd_equivalents_and_gpu_hours(options, equivalents, reason, gpu_hours):
    bill = estimate(job(**options), LUMI)
    assert bill.gcd_equivalents == equivalents
    assert bill.reason == reason
    assert bill.gpu_hours == pytest.approx(gpu_hours)


def test_wasteful_shapes_are_accepted_with_a_warning_not_refused():
    many_cores = job(partition="small-g", gpus_per_node=1, cpus_per_task=16, time="1:00:00")
    assert problems(many_cores, LUMI) == []
    assert any("16 cores for 1 GCD are billed as 2 GCDs" in w for w in estimate(many_cores, LUMI).warnings)
    lonely = job(partition="standard-g", gpus_per_node=2, time="1:00:00")
    assert problems(lonely, LUMI) == []
    assert any("whole node (8 GCDs)" in w and "small-g" in w for w in estimate(lonely, LUMI).warnings)
    fair = job(partition="small-g", gpus_per_node=1, cpus_per_task=7, mem_per_gpu="60G", time="1:00:00")
    assert estimate(fair, LUMI).warnings == ()


def test_no_time_gives_the_hourly_rate_and_cpu_partitions_no_gpu_bill():
    bill = estimate(job(partition="small-g", gpus_per_node=4), LUMI)
    assert bill.gpu_hours is None and bill.gpu_hours_per_hour == 2.0
    assert "per hour" in bill.text()
    assert estimate(job(partition="small", cpus_per_task=4), LUMI) is None


def _lumikit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lumikit", *args], capture_output=True, text=True, timeout=120)


def test_sbatch_explain_states_the_cost_and_names_memory():
    proc = _lumikit("sbatch", "--site", "lumi", "-A", "project_465000000", "-p", "small-g", "--gpus-per-node", "1",
                    "-c", "16", "--mem", "256G", "-t", "2:00:00", "--explain", "--", "python", "x.py")
    assert proc.returncode == 0, proc.stderr
    assert "#SBATCH --mem=256G" in proc.stdout
    assert "cost: 4 GPU-hours (4 GCD-equivalents x 0.5 x 2 h, set by memory)" in proc.stdout
    assert "warning: 256 GB of host memory for 1 GCD is billed as 4 GCDs" in proc.stdout
    assert "--cpus-per-task=16" in proc.stdout and "#" in proc.stdout.split("--cpus-per-task=16")[-1]


@pytest.mark.parametrize("extra", [["-c", "9"], ["--mem", "65G"]])
def test_srun_explain_rounds_a_started_slice_up_to_one_gpu_hour_and_states_the_rule(extra):
    proc = _lumikit("srun", "--site", "lumi", "-A", "p", "-t", "1:00:00", "-p", "small-g", "--gpus-per-node", "1",
                    *extra, "--explain", "--", "python", "x.py")
    assert proc.returncode == 0, proc.stderr
    assert "cost: 1 GPU-hours (2 GCD-equivalents x 0.5 x 1 h" in proc.stdout
    assert "0.562" not in proc.stdout and "1.125" not in proc.stdout
    assert "max(ceil(cores / 8), ceil(memory / 64 GB), GCDs) x 0.5" in proc.stdout
    assert "docs/runjobs/lumi_env/billing.md" in proc.stdout
    assert "billed as 2 GCDs" in proc.stdout


def test_standard_g_two_nodes_cost_eight_gpu_hours():
    proc = _lumikit("sbatch", "--site", "lumi", "-A", "project_465000000", "-p", "standard-g", "-N", "2",
                    "--gpus-per-node", "8", "-t", "1:00:00", "--explain", "--", "python", "x.py")
    assert proc.returncode == 0, proc.stderr
    assert "cost: 8 GPU-hours (8 GCD-equivalents x 2 nodes x 0.5 x 1 h" in proc.stdout
    assert "warning" not in proc.stdout


def test_srun_without_explain_warns_on_stderr_and_keeps_stdout_the_command():
    proc = _lumikit("srun", "--site", "lumi", "-p", "small-g", "--gpus-per-node", "1", "-c", "16", "--", "true")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("srun ") and proc.stdout.count("\n") == 1
    assert "warning: 16 cores for 1 GCD" in proc.stderr


def test_manifest_holds_the_estimate(tmp_path):
    from lumikit.launch.runfolder import base_manifest

    m = base_manifest(job(partition="small-g", gpus_per_node=2, time="0:30:00"), LUMI, "dry-run", [], {})
    assert m["billing_estimate"]["gpu_hours"] == pytest.approx(0.5)
    assert m["billing_estimate"]["reason"] == "GCDs"


def test_job_builder_shows_the_cost_live():
    pytest.importorskip("ipywidgets")
    from lumikit.widgets.job_builder import JobBuilder

    w = JobBuilder(site="lumi", partition="small-g", gpus_per_node=2, time="1:00:00")
    assert "1 GPU-hours" in w.cost.value
    w.partition.value = "standard-g"
    assert "4 GPU-hours" in w.cost.value and "whole node" in w.cost.value
