"""Run folders: every launch gets its own, never reused, with a manifest written atomically beside its logs."""
from __future__ import annotations

import json
import os
import platform
import re
import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping

from ..errors import LaunchError
from ..files import write_atomic
from ..packages import installed_versions

SECRET = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
REDACTED = "<redacted>"
DEFAULT_RUNS = "runs"


def redact(env: Mapping[str, str]) -> dict[str, str]:
    """The environment with the values of secret-looking names (``*TOKEN*``, ``*KEY*``, ...) hidden."""
    return {k: (REDACTED if SECRET.search(k) else v) for k, v in sorted(env.items())}


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
        base = Path(runs_dir or os.environ.get("LUMIKIT_RUNS_DIR") or DEFAULT_RUNS).resolve()
        base.mkdir(parents=True, exist_ok=True)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        for _ in range(20):
            path = base / f"{stamp}-{_slug(name)}-{secrets.token_hex(3)}"
            try:
                path.mkdir()
            except FileExistsError:
                continue
            return cls(path)
        raise LaunchError(f"could not create a new run folder under {base}")

    @classmethod
    def open(cls, path: str | os.PathLike[str]) -> "RunFolder":
        p = Path(path)
        if not (p / "manifest.json").is_file():
            raise LaunchError(f"{p} is not a run folder (no manifest.json); give a folder printed by `lumikit run`")
        return cls(p)

    @property
    def manifest_path(self) -> Path:
        return self.path / "manifest.json"

    def read(self) -> dict[str, Any]:
        try:
            return json.loads(self.manifest_path.read_text())
        except FileNotFoundError:
            return {}

    def update(self, **fields: Any) -> dict[str, Any]:
        """Merge fields into the manifest and rewrite it atomically."""
        data = self.read()
        data.update(fields)
        write_atomic(self.manifest_path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
        return data

    def rank_log(self, rank: int, stream: str = "out") -> Path:
        return self.path / f"rank{rank}.{stream}"

    def logs(self) -> list[Path]:
        return sorted(p for p in self.path.iterdir() if p.suffix in (".out", ".err") and p.is_file())


def base_manifest(spec: Any, site: Any, backend: str, command: Any, env: Mapping[str, str]) -> dict[str, Any]:
    return {"spec": spec.to_dict(), "site": site.name, "backend": backend, "command": command,
            "environment": redact(env), "versions": versions(), "git_revision": git_revision(),
            "submit_time": now_iso(), "start_time": None, "end_time": None, "state": "PENDING",
            "exit_code": None, "job_id": None, "argv0": sys.argv[0] if sys.argv else None,
            "billing_estimate": _billing(spec, site)}


def _billing(spec: Any, site: Any) -> dict[str, Any] | None:
    """The job's estimated bill (see jobs/billing.py), or None where the site has no GPU billing rule."""
    from ..jobs.billing import estimate

    bill = estimate(spec, site)
    return None if bill is None else bill.to_dict()
