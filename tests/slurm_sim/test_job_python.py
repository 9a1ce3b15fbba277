"""Everything lumikit starts inside a job runs the way the job's ranks do: on lumi-sim with a stand-in `singularity`
that, like a container with its own PATH, runs the command in a clean environment whose `python3` has no lumikit, a
`--container` GPU job still leaves a GPU record on every node, and module 01's job (and the rehearsal's copy of it,
behind the probe) completes inside the container."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.course_jobs import course_job
from lumikit.jobs import spec
from lumikit.jobs.python import python_argv
from lumikit.launch import launch
from lumikit.rehearse import rehearse
from lumikit.site import load_site

pytestmark = pytest.mark.slurm

#: The container's own `python3`: there, but without lumikit (as in the course images, whose PATH finds their conda
#: Python first).
CONTAINER_PYTHON3 = """#!/bin/bash
echo "python3 in the container: No module named 'lumikit' (this is the image's Python, not the workbook's)" >&2
exit 1
"""

#: `singularity exec [OPTIONS] IMAGE CMD...` as a test stand-in: checks the image exists, then runs CMD with a clean
#: environment (env -i) and the container's own PATH. What Singularity passes into a container on its own is kept:
#: Slurm's and the GPU variables, the caller's PYTHONPATH (this checkout), HOME; SINGULARITY_CONTAINER names the image.
SINGULARITY = """#!/bin/bash
[ "$1" = exec ] || [ "$1" = run ] || { echo "stand-in singularity: only exec/run, got $1" >&2; exit 255; }
shift
while [ "${1#-}" != "$1" ]; do
  case "$1" in -B|--bind|--overlay|--env) shift 2 ;; *) shift ;; esac
done
image="$1"; shift
[ -f "$image" ] || { echo "FATAL: could not open image $image" >&2; exit 255; }
keep=()
while IFS= read -r -d '' kv; do
  case "${kv%%=*}" in
    SLURM_*|SLURMD_*|PMI_*|LUMIKIT_*|PYTHONPATH|HOME|USER|TMPDIR|OMP_*|NCCL_*|MASTER_*|RANK|LOCAL_RANK|WORLD_SIZE|\\
    LOCAL_WORLD_SIZE|ROCR_VISIBLE_DEVICES|HIP_VISIBLE_DEVICES|CUDA_VISIBLE_DEVICES|GPU_DEVICE_ORDINAL) keep+=("$kv") ;;
  esac
done < <(env -0)
exec /usr/bin/env -i PATH="@CONTAINER_BIN@" SINGULARITY_CONTAINER="$image" "${keep[@]}" "$@"
"""

#: The tools a rank script and the recorder's step need from the container's PATH (never a Python).
CONTAINER_TOOLS = ("bash", "sh", "env", "cat", "sleep", "mkdir", "touch", "hostname", "ls")


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


@pytest.fixture
def container_site(slurm_cluster, monkeypatch, tmp_path) -> Path:
    """A site profile that is lumi-sim with Singularity and a course container (a dummy .sif), the stand-in
    `singularity` first on PATH for the jobs (the backend submits with this PATH), and lumi-sim's cluster."""
    monkeypatch.setenv("LUMIKIT_SLURM_SIM_DIR", str(slurm_cluster.sim_dir))
    monkeypatch.delenv("SLURM_CONF", raising=False)
    container_bin = tmp_path / "container" / "bin"
    container_bin.mkdir(parents=True)
    for tool in CONTAINER_TOOLS:
        found = next((d / tool for d in (Path("/usr/bin"), Path("/bin")) if (d / tool).exists()), None)
        if found is not None:
            (container_bin / tool).symlink_to(found.resolve())
    _executable(container_bin / "python3", CONTAINER_PYTHON3)
    (container_bin / "python").symlink_to("python3")
    host_bin = tmp_path / "host-bin"
    host_bin.mkdir()
    _executable(host_bin / "singularity", SINGULARITY.replace("@CONTAINER_BIN@", str(container_bin)))
    monkeypatch.setenv("PATH", f"{host_bin}{os.pathsep}{os.environ['PATH']}")
    image = tmp_path / "course.sif"
    image.write_bytes(b"not a real image: the stand-in singularity only checks that it exists\n")
    profile = tmp_path / "lumi-sim-container.toml"
    profile.write_text(f'inherits = "lumi-sim"\nname = "lumi-sim"\ncontainer_runtime = "singularity"\n'
                       f'default_container = "pytorch"\n\n[containers.pytorch]\npath = "{image}"\n'
                       'launch = "exec"\nwith_conda = false\n')
    assert load_site(profile).container("pytorch").path == str(image)
    return profile


def test_the_stand_in_container_has_no_python_with_lumikit(container_site, tmp_path):
    """The check bites: a command that relies on `python3` fails in the container."""
    run = launch(spec(["python3", "-c", "import lumikit"], time="0:05:00", container="pytorch"), site=container_site,
                 runs_dir=tmp_path / "runs")
    assert run.wait(timeout=120, progress=False) == "FAILED"
    assert "No module named 'lumikit'" in run.stderr()


def test_a_container_gpu_run_leaves_a_gpu_record_on_every_node(container_site, tmp_path, capsys):
    code = "import os, lumikit; print('in', os.environ['SINGULARITY_CONTAINER'])"
    rc = main(["run", "--site", str(container_site), "--container", "pytorch", "-N", "2", "--ntasks-per-node", "1",
               "--gpus-per-node", "1", "-t", "0:05:00", "--gpu-record-interval", "0.5", "--runs-dir",
               str(tmp_path / "runs"), "--wait", "--timeout", "180", "--", *python_argv("-c", code + "; "
               "import time; time.sleep(4)")])
    out = capsys.readouterr().out
    assert rc == 0, out
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert f"in {tmp_path / 'course.sif'}" in (run_dir / "rank0.out").read_text()
    records = sorted(p.name for p in (run_dir / "gpu").glob("*.jsonl"))
    assert records == ["nid005001.jsonl", "nid005002.jsonl"], sorted(p.name for p in (run_dir / "gpu").iterdir())
    for name in records:
        lines = (run_dir / "gpu" / name).read_text().splitlines()
        assert len(lines) >= 2, f"{name}: a header and at least one sample"
        assert json.loads(lines[0]).get("kind") == "generated"


def test_module_01s_job_and_the_rehearsals_copy_complete_in_the_container(container_site, tmp_path):
    job = course_job("01", "ranks")
    assert job.container == "pytorch"
    run = launch(job, site=container_site, runs_dir=tmp_path / "runs")
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    assert sorted(run.stdout(r).split()[:4][1] for r in range(2)) == ["0", "1"]
    # The rehearsal's copies: the probe, then the module's command, in the container; module 08's 2-node GPU job
    # is a course workload with its GPU recorder on both nodes.
    result = rehearse(container_site, ["01", "08"], runs_dir=tmp_path / "rehearsal", timeout=300)
    by_key = {o.key: o for o in result.outcomes}
    assert all(o.state == "COMPLETED" for o in result.outcomes), [(o.key, o.state, o.error) for o in result.outcomes]
    for outcome in result.outcomes:
        probes = [json.loads(p.read_text()) for p in sorted(Path(outcome.run).glob("probe.rank*.json"))]
        assert [p["container"] for p in probes] == [str(tmp_path / "course.sif")] * 2, outcome.key
    assert {c.key: c.verdict for c in by_key["ranks"].checks} == {"ranks": "holds", "nodes": "holds"}
    gpu = Path(by_key["gpu-2nodes"].run) / "gpu"
    assert sorted(p.name for p in gpu.glob("*.jsonl")) == ["nid005001.jsonl", "nid005002.jsonl"]
    assert by_key["gpu-2nodes"].card.get("kind") == "generated"
