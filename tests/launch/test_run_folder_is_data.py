"""A run folder is data, never code: a manifest that names a site file (whose Slurm conf names a plugin folder, or
whose ``watch_command`` runs a program) never loads or runs either through `status`, `cancel`, `smi watch` or
`rehearse --collect`; a watch or a cancel touches only the run's own job; local `cancel` signals only the run's own
supervisor; run folders carry no group write under ``umask 002``; the manifest keeps only allow-listed values."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.jobs import spec
from lumikit.launch import launch, open_run
from lumikit.launch.local import process_start
from lumikit.launch.runfolder import NOT_KEPT, RunFolder, kept_environment
from lumikit.site import SITES_DIR

PY = sys.executable
ROOT = Path(__file__).resolve().parents[2]


def lumikit(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The CLI in a fresh process (as a project member would run it), with this checkout on the path."""
    env = {k: v for k, v in os.environ.items() if k != "LUMIKIT_SITE"}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([PY, "-m", "lumikit", *args], capture_output=True, text=True, timeout=timeout, env=env)


def plant(run: Path, site: str) -> None:
    """What a project member who can write the run folder does: point the manifest's site elsewhere."""
    m = json.loads((run / "manifest.json").read_text())
    m["site"] = site
    (run / "manifest.json").write_text(json.dumps(m))


def hostile_site(path: Path, conf: Path, marker: Path) -> Path:
    path.write_text(f'inherits = "lumi-sim"\nname = "planted"\n[slurm]\nconf = "{conf}"\n'
                    f'watch_command = ["sh", "-c", "echo ran >> {marker}"]\n')
    return path


# --- without Slurm ----------------------------------------------------------------------------------------------

def dry_run(tmp_path: Path) -> Path:
    return launch(spec(["true"]), site="laptop", backend="dry-run", runs_dir=tmp_path / "runs").path


def test_a_site_file_inside_the_run_folder_is_refused(tmp_path):
    run = dry_run(tmp_path)
    plant(run, str(hostile_site(run / "site.toml", tmp_path / "x.conf", tmp_path / "ran")))
    with pytest.raises(LaunchError, match="inside the run folder"):
        open_run(run)


def test_a_site_file_of_another_user_or_writable_by_the_group_is_refused(tmp_path):
    run = dry_run(tmp_path)
    site = hostile_site(tmp_path / "site.toml", tmp_path / "x.conf", tmp_path / "ran")
    site.chmod(0o664)
    plant(run, str(site))
    with pytest.raises(LaunchError, match="others may write it"):
        open_run(run)
    if os.getuid() == 0:
        site.chmod(0o644)
        os.chown(site, 65534, 65534)
        with pytest.raises(LaunchError, match="not your file"):
            open_run(run)


def test_a_relative_name_that_is_not_shipped_is_refused(tmp_path):
    run = dry_run(tmp_path)
    plant(run, "../../evil")
    with pytest.raises(LaunchError, match="not a shipped profile"):
        open_run(run)


def test_the_callers_own_site_file_outside_the_folder_is_used_and_said(tmp_path, capsys):
    own = tmp_path / "mine.toml"
    shutil.copy(SITES_DIR / "laptop.toml", own)
    own.chmod(0o644)
    run = dry_run(tmp_path)
    plant(run, str(own))
    assert open_run(run).backend.site.source == str(own)
    assert f"site profile from your own file {own}" in capsys.readouterr().err


def test_a_fifo_named_as_the_site_is_refused_at_once(tmp_path):
    run = dry_run(tmp_path)
    os.mkfifo(tmp_path / "site.toml")
    plant(run, str(tmp_path / "site.toml"))
    done = lumikit("status", str(run), timeout=60)
    assert done.returncode != 0 and "Traceback" not in done.stderr
    assert "not a regular file" in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_run_folders_carry_no_group_write_under_umask_002(tmp_path, monkeypatch):
    old = os.umask(0o002)
    try:
        run = launch(spec([PY, "-c", "print(1)"]), site="laptop", backend="local", runs_dir=tmp_path / "runs")
        assert run.wait(timeout=60, progress=False) == "COMPLETED"
        dry = dry_run(tmp_path)
        monkeypatch.setenv("LUMIKIT_SHARE_RUNS", "group")
        shared = dry_run(tmp_path)
    finally:
        os.umask(old)
    for folder in (run.path, dry):
        for p in [folder, *folder.rglob("*")]:
            assert stat.S_IMODE(p.lstat().st_mode) & 0o077 == 0, (p, oct(p.lstat().st_mode))
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in [shared, *shared.iterdir()]}
    assert modes[shared.name] == 0o750 and modes["manifest.json"] == 0o640, modes


def test_the_manifest_keeps_only_allow_listed_values():
    env = {"MYSQL_PASS": "hunter2", "DATABASE_URL": "postgres://u:pw@db/x", "https_proxy": "http://u:pw@proxy:3128",
           "HF_TOKEN": "hf_x", "OMP_NUM_THREADS": "7", "PATH": "/usr/bin", "NCCL_DEBUG": "INFO"}
    kept = kept_environment(env)
    assert kept["MYSQL_PASS"] == kept["DATABASE_URL"] == kept["https_proxy"] == NOT_KEPT
    assert kept["HF_TOKEN"] == "<redacted>"
    assert (kept["OMP_NUM_THREADS"], kept["PATH"], kept["NCCL_DEBUG"]) == ("7", "/usr/bin", "INFO")


def test_a_launched_manifest_holds_no_clear_password(tmp_path, monkeypatch):
    monkeypatch.setenv("MYSQL_PASS", "hunter2-not-kept")
    monkeypatch.setenv("DATABASE_URL", "postgres://u:hunter3@db/x")
    run = dry_run(tmp_path)
    text = (run / "manifest.json").read_text()
    assert "hunter2-not-kept" not in text and "hunter3" not in text
    assert json.loads(text)["environment"]["MYSQL_PASS"] == NOT_KEPT


def test_local_cancel_leaves_an_unrelated_process_with_the_recorded_pid_and_start(tmp_path):
    run = launch(spec([PY, "-c", "print(1)"]), site="laptop", backend="local", runs_dir=tmp_path / "runs")
    assert run.wait(timeout=60, progress=False) == "COMPLETED"
    victim = subprocess.Popen(["sleep", "60"])
    try:
        RunFolder(run.path).update(state="RUNNING", supervisor_pid=victim.pid, supervisor_start=process_start(victim.pid))
        open_run(run.path).cancel()
        time.sleep(0.3)
        assert victim.poll() is None, "cancel signalled a process that is not the run's supervisor"
    finally:
        victim.kill()
        victim.wait()


def test_rehearse_collect_on_a_damaged_driver_file_is_one_line(tmp_path):
    folder = tmp_path / "rehearsal"
    folder.mkdir()
    for text in ("[1, 2]", '{"run": 5}', '{"run": "/etc"}', "{}"):
        (folder / "driver.json").write_text(text)
        done = lumikit("rehearse", "--collect", str(folder), timeout=60)
        assert done.returncode != 0 and "Traceback" not in done.stderr, (text, done.stderr)
        assert "driver.json" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


# --- on lumi-sim --------------------------------------------------------------------------------------------------

def plugin_dir() -> str:
    out = subprocess.run(["scontrol", "show", "config"], capture_output=True, text=True, timeout=30).stdout
    for line in out.splitlines():
        if line.split("=")[0].strip() == "PluginDir":
            return line.split("=", 1)[1].strip()
    return next((d for d in ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib64/slurm", "/usr/lib/slurm")
                 if Path(d).is_dir()), "/usr/lib/slurm")


@pytest.fixture
def plugin_conf(slurm_cluster, tmp_path):
    """A Slurm conf like lumi-sim's whose PluginDir puts first a plugin that writes a marker when loaded."""
    if shutil.which("gcc") is None:
        pytest.skip("needs gcc to build the marker plugin")
    marker = tmp_path / "plugin-loaded"
    src, plugins = tmp_path / "mark.c", tmp_path / "plugins"
    plugins.mkdir()
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void mark(void) '
                   f'{{ FILE *f = fopen("{marker}", "a"); if (f) {{ fputs("loaded\\n", f); fclose(f); }} }}\n')
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(plugins / "auth_munge.so"), str(src)], check=True)
    real = Path(os.environ.get("LUMIKIT_SLURM_SIM_DIR", "/tmp/lumikit-slurm-sim")) / "etc" / "slurm.conf"
    conf = tmp_path / "slurm.conf"
    conf.write_text(f"PluginDir={plugins}:{plugin_dir()}\n" + real.read_text())
    return conf, marker


@pytest.mark.slurm
def test_a_planted_site_file_never_loads_its_plugin_or_runs_its_watch_command(plugin_conf, tmp_path):
    conf, marker = plugin_conf
    ran = tmp_path / "watch-command-ran"
    rehearsal = tmp_path / "rehearsal"
    run = launch(spec(["sleep", "60"], time="0:02:00", name="victim"), site="lumi-sim", runs_dir=rehearsal / "driver")
    try:
        for _ in range(60):
            if run.status() == "RUNNING":
                break
            time.sleep(1)
        (rehearsal / "driver.json").write_text(json.dumps({"run": str(run.path), "job_id": run.job_id}))
        inside = hostile_site(run.path / "site.toml", conf, ran)
        outside = hostile_site(tmp_path / "theirs.toml", conf, ran)
        if os.getuid() == 0:
            os.chown(outside, 65534, 65534)
        for planted in (inside, outside) if os.getuid() == 0 else (inside,):
            plant(run.path, str(planted))
            for args in (["status", str(run.path)], ["smi", "watch", str(run.path), "--count", "1"],
                         ["rehearse", "--collect", str(rehearsal)], ["cancel", str(run.path)]):
                done = lumikit(*args)
                assert done.returncode != 0 and "Traceback" not in done.stderr, (args, done.stderr)
                assert "not a shipped profile" in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert not marker.exists(), "a Slurm command of lumikit loaded the planted plugin"
        assert not ran.exists(), "lumikit ran the planted watch_command"
        plant(run.path, "lumi-sim")
        assert open_run(run.path).status() == "RUNNING"  # the job was left alone
        # the planted conf is live: Slurm's own client loads the plugin when pointed at it (so the test can fail)
        subprocess.run(["scontrol", "show", "job", str(run.job_id)], env={**os.environ, "SLURM_CONF": str(conf)},
                       capture_output=True, timeout=30)
        assert marker.exists()
    finally:
        plant(run.path, "lumi-sim")
        with contextlib.suppress(LaunchError):
            run.cancel()


@pytest.mark.slurm
def test_smi_watch_and_cancel_refuse_a_job_that_is_not_the_runs(slurm_cluster, tmp_path):
    mine = launch(spec(["sleep", "60"], time="0:02:00", name="mine"), site="lumi-sim", runs_dir=tmp_path)
    other = launch(spec(["sleep", "60"], time="0:02:00", name="other"), site="lumi-sim", runs_dir=tmp_path)
    try:
        for _ in range(60):
            if mine.status() == "RUNNING" and other.status() == "RUNNING":
                break
            time.sleep(1)
        RunFolder(mine.path).update(job_id=other.job_id)  # a manifest pointed at another job
        for args in (["smi", "watch", str(mine.path), "--count", "1"], ["cancel", str(mine.path)]):
            done = lumikit(*args)
            assert done.returncode != 0 and f"job {other.job_id} is not {mine.path.name}'s" in done.stderr, done.stderr
        # a manifest naming the other job's name and time still needs the caller as the job's user
        m = other.manifest
        RunFolder(mine.path).update(job_name=m["job_name"], submitted_epoch=m["submitted_epoch"], job_user="someone")
        done = lumikit("smi", "watch", str(mine.path), "--count", "1")
        assert done.returncode != 0 and "is not" in done.stderr, done.stderr
        assert open_run(other.path).status() == "RUNNING"
    finally:
        for run in (other,):
            with contextlib.suppress(LaunchError):
                run.cancel()
        subprocess.run(["scancel", str(mine.job_id)], capture_output=True, timeout=30)


@pytest.mark.slurm
def test_a_hung_smi_tool_does_not_hold_a_slurm_jobs_end(slurm_cluster, tmp_path):
    """A 5 s job on lumi-sim whose recorder's tool (a generated stand-in) never prints: the recorder sees the stop
    file, gives the call 5 s, then ends it, so the job ends within ~6 s of its step (it ran 18 s before)."""
    from lumikit.testing.hung_tool import hung_smi_tool

    tool = hung_smi_tool(tmp_path / "bin", f"lumikit-hung-{os.getpid()}")
    site = tmp_path / "hung.toml"  # the caller's own file outside the run folder
    site.write_text(f'inherits = "lumi-sim"\nname = "lumi-sim-hung"\n[slurm]\nrecord_command = ["{tool}"]\n')
    run = launch(spec(["sleep", "5"], time="0:02:00", name="hung-smi", gpus_per_node=1, partition="small-g"),
                 site=str(site), runs_dir=tmp_path / "runs", gpu_record_interval=2)
    try:
        assert run.wait(timeout=120, poll=1, progress=False) == "COMPLETED", run.tail()
        out = subprocess.run(["scontrol", "show", "job", str(run.job_id)], capture_output=True, text=True,
                             timeout=30, env={**os.environ, "SLURM_CONF": str(Path(os.environ.get(
                                 "LUMIKIT_SLURM_SIM_DIR", "/tmp/lumikit-slurm-sim")) / "etc" / "slurm.conf")})
        run_time = next((w.split("=", 1)[1] for w in out.stdout.split() if w.startswith("RunTime=")), None)
        if run_time is not None:  # H:MM:SS while the controller still knows the job
            h, m, s = (int(x) for x in run_time.split(":"))
            assert h * 3600 + m * 60 + s <= 14, f"the job ran {run_time} for a 5 s step"  # 18 s before; 11 s seen
        else:
            assert run.manifest.get("elapsed_s", 0) <= 14
    finally:
        with contextlib.suppress(LaunchError):
            run.cancel()
