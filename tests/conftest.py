"""Shared test helpers: where the third-party conformance fixtures live, and how to skip without them."""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_FIXTURES = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", REPO.parent / "shared" / "fixtures"))


LEARNER_PROGRESS = REPO / "progress"  # the learner's own records in this clone (lumikit.checks.progress)


def _progress_state(folder: Path = LEARNER_PROGRESS) -> dict[str, tuple[int, int]]:
    """Each file under the learner's ``progress/`` with its size and modification time: what a test must not touch."""
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*") if p.is_file()}


@pytest.fixture(scope="session", autouse=True)
def _progress_elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """For the whole session every check records its progress in a temporary folder, never in the learner's
    ``progress/``, and every run folder goes to a temporary ``runs`` folder, never the clone's ``runs/`` (notebook
    kernels, JupyterLab and `lumikit verify` inherit the settings); a test may still point them elsewhere."""
    folder = tmp_path_factory.mktemp("progress")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LUMIKIT_PROGRESS_DIR", str(folder))
        patch.setenv("LUMIKIT_RUNS_DIR", str(tmp_path_factory.mktemp("runs")))
        patch.delenv("LUMIKIT_PROGRESS", raising=False)
        yield folder


@pytest.fixture(autouse=True)
def _no_user_config(monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory,
                    _progress_elsewhere: Path) -> Iterator[None]:
    """Tests never read the developer's own ~/.config/lumikit or LUMIKIT_* settings, and never change the learner's
    ``progress/`` (a test that does fails, naming the files)."""
    monkeypatch.setenv("LUMIKIT_CONFIG", str(tmp_path_factory.getbasetemp() / "no-such-config.toml"))
    for name in ("LUMIKIT_ACCOUNT", "LUMIKIT_RESERVATION", "LUMIKIT_SITE"):
        monkeypatch.delenv(name, raising=False)
    before = _progress_state()
    yield
    after = _progress_state()
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert not changed, (f"this test changed the learner's records in {LEARNER_PROGRESS}: {changed[:5]}; point the "
                         f"check at a temporary folder (LUMIKIT_PROGRESS_DIR) instead")


@pytest.fixture(scope="session")
def shared_fixtures() -> Path:
    """The folder ``../shared/fixtures`` (third-party outputs); tests that need it skip where it is absent."""
    if not SHARED_FIXTURES.is_dir():
        pytest.skip(f"conformance fixtures not found at {SHARED_FIXTURES} (clone with ../shared beside the repo)")
    return SHARED_FIXTURES


# ------------------------------------------------------------------------------------------------------
# The local Slurm cluster "lumi-sim" (scripts/slurm-sim/up.sh, `make slurm-up`) for tests marked `slurm`.
import getpass  # noqa: E402  (appended section: its own imports)
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402

@dataclass(frozen=True)
class SlurmCluster:
    """The running lumi-sim cluster as its ``mode.json`` describes it."""

    sim_dir: Path
    conf: Path  # the SLURM_CONF to give Slurm commands
    accounting: bool  # slurmdbd + MariaDB: sacct works and --account is checked
    profile: str  # "real" (this machine's CPUs, binding enforced) or "lumi" (nodes claim LUMI-G's shape)
    nodes: tuple[str, ...]
    account: str | None  # root's default account, when accounting is on
    reservation: str
    mode: dict = field(default_factory=dict)  # the whole mode.json

    @property
    def env(self) -> dict[str, str]:
        """This process's environment plus SLURM_CONF, for subprocesses that run Slurm commands."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}


def _slurm_sim_dir() -> Path:
    return Path(os.environ.get("LUMIKIT_SLURM_SIM_DIR") or "/tmp/lumikit-slurm-sim")


def _find_slurm_cluster(sim_dir: Path | None = None) -> tuple[SlurmCluster | None, str]:
    """The cluster running from ``sim_dir`` (the shared one by default), or None and why not."""
    sim_dir = sim_dir or _slurm_sim_dir()
    mode_file = sim_dir / "mode.json"
    if not mode_file.is_file():
        return None, f"lumi-sim Slurm cluster is not up (no {mode_file}); start it with `make slurm-up`"
    try:
        mode = json.loads(mode_file.read_text())
        cluster = SlurmCluster(sim_dir=sim_dir, conf=Path(mode["slurm_conf"]), accounting=bool(mode["accounting"]),
                               profile=str(mode["profile"]), nodes=tuple(mode["nodes"]),
                               account=mode.get("default_account"), reservation=str(mode["reservation"]), mode=mode)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"{mode_file} is unreadable ({exc}); restart the cluster with `make slurm-down slurm-up`"
    from lumikit.launch.terminal import find_cluster  # the workbook's own "can I submit here?" test
    reachable, why = find_cluster(sim=sim_dir)
    if reachable is None:
        return None, f"lumi-sim: not usable by this user here: {why}"
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], env=cluster.env, capture_output=True, text=True,
                         timeout=15)
    if not set(cluster.nodes) <= set(out.stdout.split()):
        return None, f"lumi-sim lists nodes {sorted(set(out.stdout.split()))}, expected {list(cluster.nodes)}"
    return cluster, ""


def skip_unless_root(what: str) -> None:
    """Skip, naming ``what``, unless this is root: lumi-sim's daemons start only as root (slurmd starts each job
    step as the user who submitted it), so starting, stopping or killing them is root's."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root to {what} (lumi-sim's daemons run as root; this test runs as {getpass.getuser()})")


@pytest.fixture(scope="session")
def slurm_admin(slurm_cluster: SlurmCluster) -> SlurmCluster:
    """The running lumi-sim, for a test or fixture that starts, stops or kills lumi-sim daemons (the shared
    cluster's or a private one's): skips unless this is root."""
    skip_unless_root("start, stop or kill lumi-sim daemons")
    return slurm_cluster


@pytest.fixture(scope="session")
def slurm_cluster() -> SlurmCluster:
    """The running lumi-sim cluster. Skips with the reason when it is not up, but fails when CI=true."""
    cluster, why = _find_slurm_cluster()
    if cluster is None:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true and {why}", pytrace=False)
        pytest.skip(why)
    return cluster


REAL_PROFILE_PORT_BASE = 8517  # the binding tests' private cluster (others: 6817 shared, 7917, 8117, 8317)


@pytest.fixture(scope="session")
def real_profile_cluster(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """A lumi-sim in the ``real`` node profile (this machine's CPUs, CPU masks applied by task/affinity), for the
    tests of real CPU binding: the shared cluster when it runs that profile, else a private one without accounting
    (own folder, ports from 8517), stopped and purged after the session. The shared cluster is never restarted."""
    if slurm_cluster.profile == "real":
        yield slurm_cluster
        return
    skip_unless_root("start a private lumi-sim in the real profile")
    # Not below pytest's 0700 temporary folders: munged wants every folder above its socket searchable.
    sim_dir = Path(tempfile.mkdtemp(prefix="lumikit-slurm-sim-real-"))
    sim_dir.chmod(0o755)
    env = {**os.environ, "LUMIKIT_SLURM_SIM_DIR": str(sim_dir), "LUMIKIT_SLURM_PORT_BASE": str(REAL_PROFILE_PORT_BASE),
           "LUMIKIT_SLURM_PROFILE": "real", "LUMIKIT_SLURM_ACCOUNTING": "0", "LUMIKIT_SLURM_INSTALL": "0"}
    scripts = REPO / "scripts" / "slurm-sim"
    try:
        up = subprocess.run(["bash", str(scripts / "up.sh")], env=env, capture_output=True, text=True, timeout=180)
        assert up.returncode == 0, f"a private real-profile lumi-sim did not start:\n{up.stdout}{up.stderr}"
        cluster, why = _find_slurm_cluster(sim_dir)
        assert cluster is not None and cluster.profile == "real", why or cluster
        yield cluster
    finally:
        subprocess.run(["bash", str(scripts / "down.sh"), "--purge"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(sim_dir, ignore_errors=True)
