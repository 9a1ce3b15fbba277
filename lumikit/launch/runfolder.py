"""Run folders: every launch gets its own, never reused, with a manifest written atomically beside its logs."""
from __future__ import annotations

import errno
import fcntl
import json
import os
import platform
import re
import secrets
import shlex
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import LaunchError, LumikitError
from ..files import load_json_bounded, read_bytes, write_atomic
from ..jobs.spec import REDACTED, is_secret
from ..packages import installed_versions
from ..record.recorder import GPU_DIR
from ..text import printable

DEFAULT_RUNS = "runs"
#: A run folder keeps this much space for itself (a file freed on "disk full"), so its manifest can still record
#: how the run ended when the job has filled the file system.
RESERVE_FILE, RESERVE_BYTES = ".space-reserve", 64 * 1024
_FULL = (errno.ENOSPC, errno.EDQUOT)


def disk_full(path: Path) -> bool:
    """Has the file system under ``path`` (almost) no space left for its user?"""
    try:
        st = os.statvfs(path)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < RESERVE_BYTES


def disk_full_note(folder: "RunFolder", state: str) -> str:
    """The note of a run whose folder's file system filled up ("" when it did not): what was cut short and the
    fix. The state stays the command's own (a command that exited 0 is COMPLETED), so the note says which."""
    if not (disk_full(folder.path) or folder.read().get("disk_full")):
        return ""
    cut = "the ranks' logs" + (" and the GPU record" if (folder.path / GPU_DIR).is_dir() else "")
    own = ("the command exited 0, so the run is COMPLETED" if state == "COMPLETED" else
           f"the run is {state} by its command's own outcome")
    return (f"disk full: the run folder's file system has no space left, so {cut} may be cut short ({own}; what "
            f"it wrote after the disk filled is lost). Fix: free space under {folder.path.parent} before the next run")


#: Manifest fields and the types a damaged manifest is checked against (None allowed for each).
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "backend": (str,), "site": (str,), "state": (str,), "job_id": (str,), "exit_code": (int,),
    "supervisor_pid": (int,), "supervisor_start": (str,), "spec": (dict,), "command": (dict,),
    "rank_exit_codes": (list,), "master_port": (int,), "failed_rank": (int,), "elapsed_s": (int, float),
    "reason": (str,), "note": (str,), "submit_error": (str,), "disk_full": (str,), "environment": (dict,),
    "versions": (dict,), "gpu_record": (dict,), "billing_estimate": (dict,), "billing_actual": (dict,)}
#: Numbers of the bills (jobs.billing.Billing) that the report card adds and divides: finite and not negative.
_BILL_NUMBERS = ("nodes", "gcds", "cores", "memory_gb", "gcd_equivalents", "gpu_hours_per_hour", "hours",
                 "gpu_hours")
#: A manifest is a few kilobytes; a larger one is not a manifest lumikit wrote.
MANIFEST_MAX_BYTES = 16 << 20


#: Set to ``group`` to let the project group read new run folders on purpose (never write them); unset, a run
#: folder is its owner's alone, whatever the umask.
SHARE_ENV = "LUMIKIT_SHARE_RUNS"


def run_umask() -> int:
    """The umask of everything in a run folder (its files, the job's logs, the GPU record): 077 (owner only), or
    027 (the group reads, never writes) when :data:`SHARE_ENV` is ``group``. A run folder that a project member can
    write is one they can plant a manifest in, so group write is never given, whatever the caller's umask."""
    return 0o027 if os.environ.get(SHARE_ENV, "").strip().lower() == "group" else 0o077


def file_mode() -> int:
    """The mode of a file lumikit writes in a run folder (0600, or 0640 shared)."""
    return 0o666 & ~run_umask()


def default_runs_dir() -> Path:
    """Where run folders go unless told: ``$LUMIKIT_RUNS_DIR``, else the clone's ``runs/`` when lumikit is used
    from a clone of the workbook (a notebook's kernel runs in ``notebooks/``, the command line at the root: one
    place for both), else ``runs/`` in the working folder."""
    given = os.environ.get("LUMIKIT_RUNS_DIR")
    if given:
        return Path(given).resolve()
    clone = Path(__file__).resolve().parents[2]
    if (clone / "pyproject.toml").is_file() and (clone / "notebooks").is_dir():
        return clone / DEFAULT_RUNS
    return Path(DEFAULT_RUNS).resolve()


def redact(env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """The environment with the values of secret-looking names (``*TOKEN*``, ``*KEY*``, ...) and of the ``marked``
    names hidden."""
    marked = tuple(marked)
    return {k: (REDACTED if is_secret(k, marked) else v) for k, v in sorted(env.items())}


NOT_KEPT = "<not kept>"
#: Environment variables whose values a manifest keeps (what shapes a run: paths, threads, devices, the ROCm/RCCL,
#: PyTorch, MPI and network libraries' settings); any other name is kept as :data:`NOT_KEPT`, so ``MYSQL_PASS``,
#: ``DATABASE_URL`` or a proxy URL with a password never reach a run folder others may read.
KEPT_ENV = frozenset({"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV",
                      "USER", "SHELL", "LANG", "LC_ALL", "TZ", "HOSTNAME", "MASTER_ADDR", "MASTER_PORT", "WORLD_SIZE",
                      "CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "SLURM_CONF",
                      "TOKENIZERS_PARALLELISM", "CC", "CXX", "LMOD_FAMILY_PRGENV"})
KEPT_ENV_PREFIXES = ("OMP_", "MKL_", "NCCL_", "RCCL_", "HSA_", "HIP_", "ROCM_", "MIOPEN_", "AMD_", "PYTORCH_",
                     "TORCH_", "TORCHINDUCTOR_", "HF_HUB_", "FI_", "CXI_", "MPICH_", "CRAY_", "SINGULARITY_BIND",
                     "APPTAINER_BIND", "LUMIKIT_")


def kept_environment(env: Mapping[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """The environment a manifest keeps: secret-looking or ``marked`` names as ``<redacted>``, values of the names
    on the allow-list (:data:`KEPT_ENV`, :data:`KEPT_ENV_PREFIXES`), every other name with ``<not kept>``."""
    marked = tuple(marked)
    return {k: (REDACTED if is_secret(k, marked) else v if k in KEPT_ENV or k.startswith(KEPT_ENV_PREFIXES)
                else NOT_KEPT) for k, v in sorted(env.items())}


def secrets_dir() -> Path:
    """Where a launch keeps its job's secret values while the job runs: outside the run folder, readable by the
    user only, on the home file system that compute nodes see (``$LUMIKIT_SECRETS_DIR`` overrides)."""
    return Path(os.environ.get("LUMIKIT_SECRETS_DIR") or Path.home() / ".cache" / "lumikit" / "secrets")


def write_secrets(folder: "RunFolder", values: Mapping[str, str]) -> Path | None:
    """A 0600 file of ``export NAME=value`` lines that the rank script sources (None when there are no values)."""
    if not values:
        return None
    d = secrets_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(d, 0o700)
    path = d / f"{folder.path.name}.env"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.writelines(f"export {k}={shlex.quote(v)}\n" for k, v in values.items())
    return path


def remove_secrets(folder: "RunFolder") -> None:
    """Delete the run's secrets file (the job has ended, or never started)."""
    (secrets_dir() / f"{folder.path.name}.env").unlink(missing_ok=True)


def write_new_file(path: Path, data: bytes) -> None:
    """Write a new file of the run folder with the folder's mode (:func:`file_mode`), whatever the umask."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, file_mode())
    os.fchmod(fd, file_mode())
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def open_log(path: Path) -> Any:
    """Open a log of the run folder for appending, with the folder's mode (:func:`file_mode`)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode()), "ab")


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-.")[:40] or "job"


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def versions() -> dict[str, str]:
    return {"python": platform.python_version(), "platform": platform.platform(),
            **installed_versions(("lumikit", "torch", "numpy", "pandas"))}


def git_revision(cwd: Path | None = None) -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


@dataclass(frozen=True)
class RunFolder:
    """One launch's folder: ``manifest.json``, the submitted script or command, per-rank logs, profiles."""

    path: Path

    @classmethod
    def create(cls, name: str, runs_dir: str | os.PathLike[str] | None = None) -> "RunFolder":
        """A new folder ``runs/<timestamp>-<name>-<id>``; ``mkdir`` without exist_ok makes it safe under concurrency."""
        base = Path(runs_dir).resolve() if runs_dir else default_runs_dir()
        base.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for _ in range(20):
            path = base / f"{stamp}-{_slug(name)}-{secrets.token_hex(3)}"
            try:
                path.mkdir(mode=0o700)
            except FileExistsError:
                continue
            try:
                os.chmod(path, 0o777 & ~run_umask())  # mkdir's mode is cut by the umask, never widened
                write_new_file(path / RESERVE_FILE, b"\0" * RESERVE_BYTES)
            except OSError as exc:
                raise LaunchError(f"cannot write in the new run folder {path}: {exc.strerror}. Fix: free space "
                                  f"under {base} or give another folder (--runs-dir or LUMIKIT_RUNS_DIR)") from None
            return cls(path)
        raise LaunchError(f"could not create a new run folder under {base}")

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "RunFolder":
        p = Path(path)
        if not os.path.lexists(p / "manifest.json"):
            raise LaunchError(f"{printable(p)} is not a run folder (no manifest.json); give a folder printed by "
                              "`lumikit run`")
        return cls(p)

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def read(self) -> dict[str, Any]:
        """The manifest (empty before the first write); a damaged one is a LaunchError naming what is wrong. It is
        read as hostile input: a regular file of at most :data:`MANIFEST_MAX_BYTES`, JSON of bounded depth with
        finite numbers, each known field of its type (a FIFO, ``/dev/zero`` or a 3 GB file is refused at once)."""
        path = self.manifest_path
        if not os.path.lexists(path):
            return {}
        try:
            data = load_json_bounded(read_bytes(path, "the run's manifest.json", limit=MANIFEST_MAX_BYTES),
                                     str(path), max_depth=32)
        except OSError as exc:
            raise self._damaged(f"it cannot be read ({exc.strerror or exc})") from None
        except LumikitError as exc:
            raise self._damaged(str(exc).removeprefix(f"{path}: ")) from None
        if not isinstance(data, dict):
            raise self._damaged(f"it holds a {type(data).__name__}, not an object")
        for key, types in _FIELD_TYPES.items():
            value = data.get(key)
            if value is not None and (not isinstance(value, types) or isinstance(value, bool)):
                raise self._damaged(f"field {key!r} is {printable(repr(value)[:80])}, not "
                                    f"{' or '.join(t.__name__ for t in types)}")
        pid = data.get("supervisor_pid")
        if pid is not None and not 1 < pid < 2**31:  # 0 and -1 would signal whole process groups; 1 is init
            raise self._damaged(f"field 'supervisor_pid' is {pid}")
        for key in ("billing_estimate", "billing_actual"):
            for name in _BILL_NUMBERS:
                value = (data.get(key) or {}).get(name)
                if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                          or not 0 <= value < 1e15):
                    raise self._damaged(f"{key}.{name} is {printable(repr(value)[:80])}, not a number of "
                                        "GPU-hours, nodes or hours")
        if data.get("elapsed_s") is not None and not 0 <= data["elapsed_s"] < 1e10:
            raise self._damaged(f"field 'elapsed_s' is {data['elapsed_s']}, not a duration")
        return data

    def _damaged(self, why: str) -> LaunchError:
        why = why.rstrip(".")
        return LaunchError(f"{printable(self.manifest_path)}: the run's manifest is damaged: {why}"
                           f"{' ' if why.endswith('?') else '. '}Fix: restore it or launch the job again; its logs "
                           f"are still in {printable(self.path)}")

    @contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the run folder's lock: read-modify-write of the manifest by the supervisor, a notebook and the CLI
        at the same time would otherwise lose one side's fields."""
        with os.fdopen(os.open(self.path / ".manifest.lock", os.O_WRONLY | os.O_CREAT | os.O_APPEND, file_mode()),
                       "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def update(self, _only_if: Callable[[dict[str, Any]], bool] | None = None, **fields: Any) -> dict[str, Any]:
        """Merge fields into the manifest and rewrite it atomically, under the folder's lock; with ``_only_if``,
        only when that test of the current manifest holds (e.g. "not final yet")."""
        with self._locked():
            data = self.read()
            if _only_if is not None and not _only_if(data):
                return data
            data.update(fields)
            try:
                write_atomic(self.manifest_path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n",
                             mode=file_mode())
            except OSError as exc:
                if exc.errno not in _FULL:
                    raise
                reserve = self.path / RESERVE_FILE
                if not reserve.exists():
                    raise LaunchError(f"{self.manifest_path}: cannot record {sorted(fields)}: the disk is full "
                                      f"({exc.strerror}). Fix: free space on the file system of {self.path}") from None
                reserve.unlink()  # the space kept for this moment
                data["disk_full"] = f"the file system of the run folder filled up ({now_iso()})"
                write_atomic(self.manifest_path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n",
                             mode=file_mode())
            return data

    def rank_log(self, rank: int, stream: str = "out") -> Path:
        return self.path / f"rank{rank}.{stream}"

    def logs(self) -> list[Path]:
        """Per-rank stdout/stderr (and the local supervisor's own log when it said anything), then what each node's
        GPU recorder printed when it said anything (``gpu/recorder-node*.log``)."""
        own = sorted(p for p in self.path.iterdir() if p.is_file() and (
            p.suffix in (".out", ".err") or (p.name == "supervisor.log" and p.stat().st_size)))
        return own + sorted(p for p in self.path.glob("gpu/recorder-node*.log") if p.is_file() and p.stat().st_size)


def base_manifest(spec: Any, site: Any, backend: str, command: Any, env: Mapping[str, str]) -> dict[str, Any]:
    return {"spec": spec.to_dict(), "site": site.ref, "backend": backend, "command": command,
            "environment": kept_environment(env, spec.secret_names()), "versions": versions(), "git_revision": git_revision(),
            "submit_time": now_iso(), "start_time": None, "end_time": None, "state": "PENDING",
            "exit_code": None, "job_id": None, "argv0": sys.argv[0] if sys.argv else None,
            "billing_estimate": _billing(spec, site)}


def _billing(spec: Any, site: Any) -> dict[str, Any] | None:
    """The job's estimated bill (see jobs/billing.py), or None where the site has no GPU billing rule."""
    from ..jobs.billing import estimate

    bill = estimate(spec, site)
    return None if bill is None else bill.to_dict()
