"""The job builder renders the commands LUMI needs: masks, binds, quoting, per-rank variables, profiling."""
from __future__ import annotations

import ast
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import lumikit
from lumikit.cli import main
from lumikit.config import load_config
from lumikit.errors import SpecError
from lumikit.jobs import JobSpec, attach_argv, render_salloc, render_sbatch, render_srun, resolve, spec
from lumikit.jobs.render import MASTER_IN_STEP
from lumikit.site import load_site

LUMI = load_site("lumi")

LUMI_MASKS = ["0x00fe000000000000", "0xfe00000000000000", "0x0000000000fe0000", "0x00000000fe000000",
              "0x00000000000000fe", "0x000000000000fe00", "0x000000fe00000000", "0x0000fe0000000000"]


def full_node(**kw) -> JobSpec:
    base = dict(partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8, cpus_per_task=7,
                exclusive=True, cpu_bind="auto", container="pytorch")
    base.update(kw)
    return spec(["python", "train.py"], **base)


def opened(argv: tuple[str, ...]) -> tuple[str, ...]:
    """A printed srun with the step's MASTER_ADDR shell opened: srun's options, then what that shell execs."""
    i = argv.index("bash")
    if argv[i + 2].startswith(MASTER_IN_STEP + " && exec "):
        return argv[:i] + tuple(shlex.split(argv[i + 2][len(MASTER_IN_STEP + " && exec "):]))
    return argv


def test_masks_are_the_eight_lumi_masks_in_gcd_order():
    argv = render_srun(full_node(), "lumi").argv
    bind = next(a for a in argv if a.startswith("--cpu-bind="))
    assert bind == "--cpu-bind=mask_cpu:" + ",".join(LUMI_MASKS)


def test_masks_are_derived_from_the_topology_not_pasted():
    site = load_site("lumi")
    assert site.node.masks() == LUMI_MASKS
    assert site.node.gcd(0).cores == (49, 50, 51, 52, 53, 54, 55)
    assert site.node.packages() == {0: (0, 1), 1: (2, 3), 2: (4, 5), 3: (6, 7)}


def test_one_task_driving_two_gcds_gets_the_union_of_their_cores():
    s = spec(["python", "t.py"], partition="small-g", exclusive=True, ntasks_per_node=1, gpus_per_node=2,
             cpus_per_task=14, cpu_bind="auto")
    bind = next(a for a in render_srun(s, "lumi").argv if a.startswith("--cpu-bind="))
    assert bind == "--cpu-bind=mask_cpu:0xfefe000000000000"


def test_container_with_conda_activates_it_inside_and_ranks_expand_on_the_node():
    argv = opened(render_srun(full_node(), "lumi").argv)
    i = argv.index("singularity")
    assert argv[i + 1] == "exec"
    script = argv[-1]
    assert argv[-3:-1] == ("bash", "-c")
    assert script.startswith("$WITH_CONDA && ")
    assert "export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID WORLD_SIZE=$SLURM_NTASKS" in script
    # the whole script is one argv element: in the shell text it is single-quoted, so $ survives to the node
    assert "'$WITH_CONDA && " in render_srun(full_node(), "lumi").text()


def test_newer_containers_use_singularity_run_without_with_conda():
    argv = opened(render_srun(full_node(container="laif-pytorch"), "lumi").argv)
    assert argv[argv.index("singularity") + 1] == "run"
    assert "$WITH_CONDA" not in argv[-1]


def test_multi_node_adds_the_system_binds_and_master_addr_outside_the_container():
    cmd = render_srun(full_node(), "lumi")
    binds = [a for a in shlex.split(cmd.argv[-1]) if a.startswith("/")]
    assert {"/var/spool/slurmd", "/opt/cray", "/usr/lib64/libcxi.so.1", "/pfs"} <= set(binds)
    # a printed srun computes them in the step's own shell, which then starts the container
    outer = cmd.argv[cmd.argv.index("bash") + 2]
    assert outer.startswith("export MASTER_ADDR=$(scontrol show hostnames") and " && exec singularity exec " in outer
    assert outer.index("scontrol") < outer.index("singularity")
    assert cmd.exports == ()
    inner = opened(cmd.argv)
    assert "scontrol" not in inner[-1]  # no Slurm tools inside the container
    # a batch script exports them before srun, on the first node of the job
    script = render_sbatch(full_node(), "lumi")
    assert script.index("export MASTER_ADDR=$(scontrol") < script.index("\nsrun ")
    single = render_srun(full_node(nodes=1), "lumi")
    assert "/opt/cray" not in single.argv


def test_single_gcd_job_needs_no_wrapper_script():
    s = spec(["python", "train.py"], partition="small-g", gpus_per_node=1, cpus_per_task=7, mem_per_gpu="60G",
             time="0:15:00")
    assert render_srun(s, "lumi").argv == ("srun", "--job-name=lumikit", "--partition=small-g", "--nodes=1",
                                           "--ntasks-per-node=1", "--gpus-per-node=1", "--cpus-per-task=7",
                                           "--mem-per-gpu=60G", "--time=0:15:00", "python", "train.py")


def test_profiling_wraps_only_the_chosen_ranks():
    script = render_srun(full_node(profile="rocprof", profile_ranks=(3,)), "lumi").argv[-1]
    assert 'case "$SLURM_PROCID" in 3) ' in script
    assert "exec rocprof --hip-trace --stats" in script
    assert "*) exec python train.py ;; esac" in script


def test_profiling_env_modes_and_step_limit():
    script = render_srun(full_node(profile="hiplog", profile_steps=10), "lumi").argv[-1]
    assert 'export AMD_LOG_LEVEL="4"' in script
    assert "export LUMIKIT_MAX_STEPS=10" in script  # every rank stops at the same step (DDP would hang otherwise)


def test_sbatch_script_is_complete():
    text = render_sbatch(full_node(account="project_465000000", time="1:00:00", output="slurm-%j.out"), "lumi")
    lines = text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert "#SBATCH --partition=standard-g" in lines
    assert "#SBATCH --account=project_465000000" in lines
    assert "#SBATCH --output=slurm-%j.out" in lines
    assert any(line.startswith("export MASTER_ADDR=$(scontrol") for line in lines)
    srun = lines[-1]
    assert srun.startswith("srun --cpu-bind=mask_cpu:")
    assert "--partition" not in srun  # the allocation is stated once, in #SBATCH lines
    assert "export SRUN_CPUS_PER_TASK=$SLURM_CPUS_PER_TASK" in text


def test_sbatch_refuses_a_job_name_with_a_line_break():
    with pytest.raises(Exception, match="line break"):
        render_sbatch(spec(["true"], name="two\nlines"), "lumi")


def test_salloc_is_the_allocation_only():
    argv = render_salloc(full_node(), "lumi").argv
    assert argv[0] == "salloc"
    assert "singularity" not in argv and not any(a.startswith("--cpu-bind") for a in argv)


def test_attach_overlaps_the_running_job():
    assert attach_argv(7100665) == ["srun", "--jobid=7100665", "--overlap", "-N1", "-n1", "--pty", "/bin/bash"]
    assert attach_argv(42, ["rocm-smi"], node="nid005001", pty=False) == [
        "srun", "--jobid=42", "--overlap", "-N1", "-n1", "--nodelist=nid005001", "rocm-smi"]


def test_account_and_reservation_come_from_the_user_config_at_the_edge(monkeypatch, tmp_path, capsys):
    cfg = tmp_path / "config.toml"
    cfg.write_text('account = "project_465000123"\nreservation = "AI_workshop_Day1"\n')
    monkeypatch.setenv("LUMIKIT_CONFIG", str(cfg))
    argv = render_salloc(resolve(spec(["true"]), LUMI, load_config()), LUMI).argv
    assert "--account=project_465000123" in argv and "--reservation=AI_workshop_Day1" in argv
    monkeypatch.setenv("LUMIKIT_ACCOUNT", "project_465000999")
    assert main(["salloc", "--site", "lumi", "-p", "small-g"]) == 0
    assert "--account=project_465000999" in capsys.readouterr().out


def test_rendering_is_pure_the_user_config_does_not_reach_it(monkeypatch, tmp_path):
    job = spec(["python", "train.py"], partition="small-g", gpus_per_node=1)
    before = render_sbatch(job, LUMI)
    cfg = tmp_path / "config.toml"
    cfg.write_text('account = "project_465000123"\nsite = "lumi-sim"\n')
    monkeypatch.setenv("LUMIKIT_CONFIG", str(cfg))
    monkeypatch.setenv("LUMIKIT_ACCOUNT", "project_465000999")
    assert render_sbatch(job, LUMI) == before and "--account" not in before
    with pytest.raises(SpecError, match="no site"):
        render_srun(job, None)  # type: ignore[arg-type]


def test_the_launcher_does_not_import_the_course_workloads():
    package = Path(lumikit.__file__).parent
    for path in [*(package / "launch").glob("*.py"), *(package / "jobs").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "workloads" not in (node.module or ""), f"{path.name} imports {node.module}"
    code = ("import sys, lumikit.launch, lumikit.launch.cli, lumikit.jobs; "
            "print(sorted(m for m in sys.modules if m.startswith('lumikit.workloads')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_generated_batch_script_names_its_site_and_where_to_submit_it():
    first = render_sbatch(full_node(account="project_465000000"), LUMI).splitlines()[1]
    assert "site lumi." in first and "LUMI login node" in first and "sbatch" in first
    assert "no Slurm" in render_sbatch(full_node(), "laptop").splitlines()[1]
    assert "SLURM_CONF=" in render_sbatch(full_node(), "lumi-sim").splitlines()[1]


def test_explain_has_one_line_per_flag():
    cmd = render_srun(full_node(), "lumi")
    explain = cmd.explain().splitlines()
    assert len(explain) == len(cmd.flags) + len(cmd.exports)
    assert any("MASTER_ADDR (first node)" in line for line in explain)
    assert any("GCD -> CCD" in line for line in explain)


def test_placeholders_become_the_ranks_own_values():
    s = spec(["python", "cv.py", "--rank", "{rank}", "--dist-url", "tcp://{master_addr}:45678"], ntasks_per_node=8)
    script = render_srun(s, "lumi").argv[-1]
    assert '--rank "${RANK}" --dist-url "tcp://${MASTER_ADDR}:45678"' in script
    assert shlex.split(script)[-4:] == ["--rank", "${RANK}", "--dist-url", "tcp://${MASTER_ADDR}:45678"]


def test_laptop_site_renders_the_same_lumi_commands():
    assert render_srun(full_node(), "laptop").argv == render_srun(full_node(), "lumi").argv
