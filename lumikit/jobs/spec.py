"""The job spec: one immutable, typed description of a job, from which every command is rendered.

A spec says what the learner wants (partition, shape, container, command, which ranks to profile); the site
profile says what the machine allows. Units follow Slurm: times as ``[D-]H:MM:SS``, memory as ``60G``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping, Sequence

from ..errors import SpecError

_TIME = re.compile(r"^(?:(?P<d>\d+)-)?(?P<rest>\d+(?::\d+){0,2})$")
_MEM = re.compile(r"^(?P<n>\d+(?:\.\d+)?)\s*(?P<u>[KMGT]?)B?$", re.IGNORECASE)
_UNIT_MB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}


def parse_time(value: str, field_name: str = "time") -> int:
    """Slurm's time formats (M, M:S, H:M:S, D-H, D-H:M, D-H:M:S) -> seconds."""
    m = _TIME.match(value.strip()) if isinstance(value, str) else None
    if not m:
        raise SpecError(field_name, f"{value!r} is not a Slurm time",
                        "write minutes (30), H:MM:SS (1:30:00) or D-HH:MM:SS (1-12:00:00)")
    parts = [int(p) for p in m.group("rest").split(":")]
    days = m.group("d")
    if days is not None:
        d = int(days)
        h, mi, s = (parts + [0, 0])[:3]
        return ((d * 24 + h) * 60 + mi) * 60 + s
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return (parts[0] * 60 + parts[1]) * 60 + parts[2]


def format_time(seconds: int) -> str:
    """Seconds -> ``D-HH:MM:SS`` or ``H:MM:SS``."""
    d, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    m, s = divmod(rest, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h}:{m:02d}:{s:02d}"


def parse_mem_mb(value: str, field_name: str) -> float:
    """Slurm memory (``60G``, ``61440M``, ``480GB``; plain numbers are megabytes) -> megabytes."""
    m = _MEM.match(value.strip()) if isinstance(value, str) else None
    if not m:
        raise SpecError(field_name, f"{value!r} is not a memory size", "write a number with a unit, e.g. 60G or 500M")
    return float(m.group("n")) * _UNIT_MB[m.group("u").upper()]


@dataclass(frozen=True)
class JobSpec:
    """What to run and on what: rendered to ``srun``/``salloc`` argv or an ``sbatch`` script by :mod:`.render`.

    ``None`` means "not asked for" (Slurm's or the site's default applies). ``bind_sets`` names bind sets of the
    site (``None``: the user file systems when a container is used). ``env`` values are literal; ``env_recipes``
    name environment sets of the site. ``profile`` is a profiling mode (see :mod:`.profiling`) applied to
    ``profile_ranks`` only (empty: every rank); ``profile_steps`` limits the run's steps when profiling.
    ``workdir`` is where each rank starts (inside the container when there is one). Command tokens are literal,
    except the placeholders ``{rank}``, ``{local_rank}``, ``{world_size}``, ``{master_addr}``, ``{master_port}``,
    which become the rank's own values on the compute node.
    """

    command: tuple[str, ...]
    name: str = "lumikit"
    partition: str | None = None
    nodes: int = 1
    ntasks_per_node: int = 1
    gpus_per_node: int | None = None
    cpus_per_task: int | None = None
    mem_per_gpu: str | None = None
    mem: str | None = None
    mem_per_cpu: str | None = None
    time: str | None = None
    exclusive: bool = False
    account: str | None = None
    reservation: str | None = None
    container: str | None = None
    binds: tuple[str, ...] = ()
    bind_sets: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    env_recipes: tuple[str, ...] = ()
    workdir: str | None = None
    cpu_bind: str | None = None
    threads_per_core: int | None = None
    output: str | None = None
    rank_env: bool | None = None
    profile: str | None = None
    profile_ranks: tuple[int, ...] = ()
    profile_steps: int | None = None

    def __post_init__(self) -> None:
        # Accept lists and mappings from callers, keep tuples inside (hashable, immutable).
        def setf(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)
        if isinstance(self.command, str):
            raise SpecError("command", f"got the string {self.command!r}",
                            "give the command as a list of arguments, e.g. ['python', 'train.py']")
        setf("command", tuple(str(c) for c in self.command))
        setf("binds", tuple(self.binds))
        if self.bind_sets is not None:
            setf("bind_sets", tuple(self.bind_sets))
        env = self.env.items() if isinstance(self.env, Mapping) else self.env
        setf("env", tuple((str(k), str(v)) for k, v in env))
        setf("env_recipes", tuple(self.env_recipes))
        setf("profile_ranks", tuple(int(r) for r in self.profile_ranks))

    @property
    def total_tasks(self) -> int:
        return self.nodes * self.ntasks_per_node

    @property
    def distributed(self) -> bool:
        """Whether ranks need RANK/LOCAL_RANK/WORLD_SIZE and a MASTER_ADDR (explicit, or more than one task)."""
        return self.total_tasks > 1 if self.rank_env is None else self.rank_env

    def with_(self, **changes: Any) -> "JobSpec":
        """A copy with some fields changed (the spec itself never changes)."""
        return replace(self, **changes)

    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (for run manifests)."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            out[f.name] = [list(p) for p in v] if f.name == "env" else (list(v) if isinstance(v, tuple) else v)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "JobSpec":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise SpecError(", ".join(sorted(unknown)), "unknown job spec field(s)",
                            f"use only: {', '.join(sorted(known))}")
        return cls(**{k: (tuple(v) if isinstance(v, list) and k != "env" else v) for k, v in data.items()})


def spec(command: Sequence[str], **options: Any) -> JobSpec:
    """Shorthand: ``spec(["python", "train.py"], partition="small-g", gpus_per_node=1)``."""
    return JobSpec(command=tuple(command), **options)
