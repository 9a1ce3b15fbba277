"""Many runs at once and a runs folder that cannot be written, against the real lumi-sim cluster: twenty runs of
the same name get twenty folders and twenty jobs; a read-only runs folder is refused before anything is submitted."""
from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch import launch

pytestmark = pytest.mark.slurm
PY = sys.executable


def test_twenty_concurrent_runs_of_the_same_name_each_get_a_folder_and_a_job(slurm_cluster, tmp_path):
    def one(i: int):
        return launch(spec([PY, "-c", f"print({i})"], name="same", partition="small-g", time="0:05:00"),
                      site="lumi-sim", runs_dir=tmp_path)
    with ThreadPoolExecutor(max_workers=20) as pool:
        runs = list(pool.map(one, range(20)))
    assert len({r.path for r in runs}) == 20 and len({r.job_id for r in runs}) == 20
    states = [r.wait(timeout=600, poll=2, progress=False) for r in runs]
    assert states == ["COMPLETED"] * 20
    assert sorted(int(r.stdout()) for r in runs) == list(range(20))


def test_a_read_only_runs_folder_is_refused_before_submitting(slurm_cluster, tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True)
    if mounted.returncode != 0:
        ro.chmod(0o555)  # as an ordinary user, permissions are enough
    try:
        before = subprocess.run(["squeue", "-h", "-o", "%i"], env=slurm_cluster.env, capture_output=True,
                                text=True).stdout.split()
        with pytest.raises((LaunchError, OSError), match=str(ro)):
            launch(spec([PY, "-c", "pass"], partition="small-g"), site="lumi-sim", runs_dir=ro)
        after = subprocess.run(["squeue", "-h", "-o", "%i"], env=slurm_cluster.env, capture_output=True,
                               text=True).stdout.split()
        assert set(after) <= set(before), "a job was submitted although its run folder could not be made"
    finally:
        if mounted.returncode == 0:
            subprocess.run(["umount", "-l", str(ro)], check=False)
