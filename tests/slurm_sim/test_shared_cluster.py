"""The running lumi-sim cluster (`make slurm-up`), checked with the raw Slurm commands."""
from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from lumikit.site import load_site

pytestmark = pytest.mark.slurm


def seconds(slurm_time: str) -> int:
    """Slurm's [D-]HH:MM:SS (or MM:SS) as seconds."""
    days, _, clock = slurm_time.rpartition("-")
    parts = [int(x) for x in clock.split(":")]
    while len(parts) < 3:
        parts.insert(0, 0)
    return int(days or 0) * 86400 + parts[0] * 3600 + parts[1] * 60 + parts[2]


def test_sinfo_shows_two_idle_nodes_with_eight_gpus(slurm_cluster, sl):
    assert slurm_cluster.nodes == ("nid005001", "nid005002")
    assert sl.wait_idle() == {"nid005001": "idle", "nid005002": "idle"}
    gres = sl("sinfo", "-h", "-N", "-p", "small-g", "-o", "%N %G").stdout.split("\n")
    assert sorted(line for line in gres if line) == ["nid005001 gpu:mi250:8", "nid005002 gpu:mi250:8"]


def test_partitions_mirror_the_site_profile(slurm_cluster, sl):
    site = load_site("lumi-sim")
    out = sl("scontrol", "-o", "show", "partition")
    parts = {}
    for line in out.stdout.splitlines():
        fields = dict(item.partition("=")[::2] for item in line.split())
        parts[fields["PartitionName"]] = fields
    assert list(parts) == list(site.partitions)
    assert [p for p, f in parts.items() if f["Default"] == "YES"] == [site.default_partition] == ["small-g"]
    for name, p in site.partitions.items():
        assert seconds(parts[name]["MaxTime"]) == seconds(p.max_time), name
        assert (parts[name]["OverSubscribe"] == "EXCLUSIVE") == p.exclusive, name
    assert parts["small-g"]["MaxNodes"] == "4"


def test_node_names_resolve_to_localhost(slurm_cluster):
    for node in slurm_cluster.nodes:
        assert socket.gethostbyname(node) == "127.0.0.1"


def test_srun_on_two_nodes_runs_a_task_on_each(slurm_cluster, sl):
    out = sl("srun", "--nodes", "2", "--ntasks-per-node", "1", "bash", "-c",
                'echo $SLURM_PROCID $SLURMD_NODENAME $SLURM_NODELIST '
                '$(getent hosts $(scontrol show hostnames $SLURM_NODELIST | head -1) | cut -d" " -f1)')
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == ["0 nid005001 nid[005001-005002] 127.0.0.1",
                                              "1 nid005002 nid[005001-005002] 127.0.0.1"]


def test_sbatch_runs_and_reports_exit_codes(sl, tmp_path: Path):
    ok_id = sl.sbatch("-o", "ok-%j.out", "--wrap", "echo hello from $SLURM_JOB_ID", cwd=tmp_path)
    bad_id = sl.sbatch("-o", "bad-%j.out", "--wrap", "echo oops; exit 3", cwd=tmp_path)
    assert sl.wait_job_done(ok_id) == "COMPLETED"
    assert sl.wait_job_done(bad_id) == "FAILED"
    assert sl.job_field(bad_id, "ExitCode") == "3:0"
    assert (tmp_path / f"ok-{ok_id}.out").read_text() == f"hello from {ok_id}\n"


def test_gpus_are_handed_out_as_gres(slurm_cluster, sl):
    out = sl("srun", "-n2", "--gpus-per-task=1", "bash", "-c",
                "echo $SLURM_PROCID $ROCR_VISIBLE_DEVICES")
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == ["0 0", "1 1"]
    too_many = sl("srun", "-n1", "--gpus-per-node=9", "true")
    assert too_many.returncode == 1
    assert "Requested node configuration is not available" in too_many.stderr


def test_partition_time_limit_is_enforced_at_submission(slurm_cluster, sl):
    out = sl("sbatch", "-p", "debug", "-t", "1:00:00", "--wrap", "true")
    assert out.returncode == 1
    assert "Requested time limit is invalid" in out.stderr


def test_real_profile_enforces_cpu_binding(real_profile_cluster):
    # the shared cluster when it runs the 'real' profile, else a private one (the LUMI-shaped profile only accepts masks)
    out = subprocess.run(["srun", "-N1", "-n2", "--cpu-bind=mask_cpu:0x1,0x2", "bash", "-c",
                          "echo $SLURM_PROCID $(grep Cpus_allowed_list /proc/self/status | cut -f2)"],
                         env=real_profile_cluster.env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert sorted(out.stdout.splitlines()) == ["0 0", "1 1"]


def test_course_reservation_is_open_to_the_course_account_only(slurm_cluster, sl):
    show = sl("scontrol", "-o", "show", "reservation", slurm_cluster.reservation)
    fields = dict(item.partition("=")[::2] for item in show.stdout.split())
    assert fields["Accounts"] == "project_465000000"
    assert fields["Nodes"] == "nid[005001-005002]"
    inside = sl("srun", "-N2", "-A", "project_465000000", "--reservation", "lumikit-course", "bash", "-c",
                   "echo $SLURMD_NODENAME $SLURM_JOB_RESERVATION")
    assert sorted(inside.stdout.splitlines()) == ["nid005001 lumikit-course", "nid005002 lumikit-course"]
    denied = sl("srun", "-A", "project_465000001", "--reservation", "lumikit-course", "true")
    assert denied.returncode == 1
    assert "Access denied to requested reservation" in denied.stderr
    # Jobs that do not ask for the reservation still run on the same nodes.
    outside = sl("srun", "-A", "project_465000001", "-n1", "bash", "-c",
                    "echo [$SLURM_JOB_RESERVATION]")
    assert (outside.returncode, outside.stdout.strip()) == (0, "[]")


# ---------------------------------------------------------------------------------------------- accounting

@pytest.fixture
def accounting(slurm_cluster):
    if not slurm_cluster.accounting:
        pytest.skip("this lumi-sim runs without accounting (LUMIKIT_SLURM_ACCOUNTING=0)")
    return slurm_cluster


def test_course_and_second_account_exist_and_course_is_default(accounting, sl):
    assoc = sl("sacctmgr", "-n", "-P", "show", "assoc", "where", "user=root",
                  "format=account").stdout.split()
    assert {"project_465000000", "project_465000001"} <= set(assoc)
    default = sl("sacctmgr", "-n", "-P", "show", "user", "root", "format=defaultaccount")
    assert default.stdout.strip() == accounting.account == "project_465000000"


def test_unknown_account_is_rejected_at_submission(accounting, sl):
    out = sl("sbatch", "--account", "project_999", "--wrap", "true")
    assert out.returncode == 1
    assert "Invalid account or account/partition combination specified" in out.stderr


def test_sacct_reports_a_finished_job_with_its_account(accounting, sl, poll):
    job = sl.sbatch("-A", "project_465000001", "-o", "/dev/null", "--wrap", "exit 3")
    def record() -> str | None:
        out = sl("sacct", "-X", "-n", "-P", "-j", job, "--format=JobID,Account,State,ExitCode")
        return out.stdout.strip() if out.stdout.strip().endswith("FAILED|3:0") else None
    assert poll(record, 30, f"sacct to record job {job} as FAILED") == f"{job}|project_465000001|FAILED|3:0"


def test_job_without_account_runs_under_the_course_account(accounting, sl):
    out = sl("srun", "-n1", "bash", "-c", "echo $SLURM_JOB_ACCOUNT")
    assert (out.returncode, out.stdout.strip()) == (0, "project_465000000")


# ---------------------------------------------------------------------------------------------- the scripts

@pytest.mark.usefixtures("slurm_admin")
def test_up_again_is_a_no_op_that_keeps_the_daemons(slurm_cluster, scripts_dir):
    state = slurm_cluster.sim_dir / "state"
    before = {p.name: p.read_text() for p in state.glob("slurm*.pid")}
    out = subprocess.run(["bash", str(scripts_dir / "up.sh")], capture_output=True, text=True, timeout=60,
                         env={**slurm_cluster.env, "LUMIKIT_SLURM_ACCOUNTING": "1" if slurm_cluster.accounting
                              else "0", "LUMIKIT_SLURM_PROFILE": slurm_cluster.profile})
    assert out.returncode == 0, out.stderr
    assert "already up" in out.stdout
    assert {p.name: p.read_text() for p in state.glob("slurm*.pid")} == before


def test_env_sh_prints_the_slurm_conf(slurm_cluster, scripts_dir):
    out = subprocess.run(["bash", str(scripts_dir / "env.sh")], capture_output=True, text=True, timeout=10,
                         env={**slurm_cluster.env, "LUMIKIT_SLURM_SIM_DIR": str(slurm_cluster.sim_dir)})
    assert out.stdout == f"export SLURM_CONF={slurm_cluster.conf}\n"
