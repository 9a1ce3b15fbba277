"""The job spec: one immutable, typed description of a job, from which every command is rendered.

A spec says what the learner wants (partition, shape, container, command, which ranks to profile); the site
profile says what the machine allows. Units follow Slurm: times as ``[D-]H:MM:SS``, memory as ``60G``.
"""
from __future__ import annotations

import numbers
import os
import re
from dataclasses import dataclass, fields, replace
from typing import Any, Iterable, Mapping, Sequence

from ..errors import SpecError

_TIME = re.compile(r"^(?:(?P<d>\d+)-)?(?P<rest>\d+(?::\d+){0,2})$")
# Slurm reads a whole number, then looks at one unit letter (K, M, G, T; none means M): "16GB" is 16G, "1.5G" is refused
_MEM = re.compile(r"^(?P<n>\d+)(?P<u>[KMGT]?)(?:B)?$", re.IGNORECASE)
_DECIMAL_MEM = re.compile(r"^\d*\.\d+\s*[KMGT]?B?$", re.IGNORECASE)
_UNIT_MB = {"": 1, "K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
#: Environment names whose values lumikit never writes or prints (plus the names a spec marks in ``secrets``).
REDACTED = "<redacted>"
SECRET_NAME = re.compile(r"TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)


#: Names that look secret but are settings that a job needs in plain sight (Hugging Face's tokenizers switch).
NOT_SECRET = frozenset({"TOKENIZERS_PARALLELISM"})


def is_secret(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether an environment variable's value must stay out of files, argv and printed text."""
    return name in set(marked) or (bool(SECRET_NAME.search(name)) and name.upper() not in NOT_SECRET)


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
    """Slurm memory (``60G``, ``61440M``, ``480GB``; plain numbers are megabytes, as Slurm reads them) -> megabytes."""
    text = value.strip() if isinstance(value, str) else ""
    m = _MEM.match(text)
    if not m:
        if _DECIMAL_MEM.match(text):
            raise SpecError(field_name, f"{value!r}: Slurm takes whole numbers only",
                            "write it in a smaller unit, e.g. 1536M instead of 1.5G")
        raise SpecError(field_name, f"{value!r} is not a memory size", "write a number with a unit, e.g. 60G or 500M")
    return float(m.group("n")) * _UNIT_MB[m.group("u").upper()]


def mem_without_unit(value: str | None) -> bool:
    """Whether a memory value is a bare number (Slurm reads megabytes: ``--mem=16`` is 16 MB)."""
    return isinstance(value, str) and value.strip().isdigit() and value.strip() != "0"


_INT_FIELDS = ("nodes", "ntasks_per_node", "ntasks", "gpus_per_node", "gpus", "gpus_per_task", "cpus_per_task",
               "threads_per_core", "profile_steps")
_STR_FIELDS = ("name", "partition", "mem_per_gpu", "mem", "mem_per_cpu", "time", "account", "reservation",
               "container", "workdir", "cpu_bind", "output", "profile", "gres_flags")
_STR_TUPLES = ("command", "binds", "bind_sets", "env_recipes", "secrets")


def _as_int(name: str, value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SpecError(name, f"got {value!r} ({type(value).__name__})", f"give {name} as a whole number")
    return int(value)


def _as_strings(name: str, value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        example = "['python', 'train.py']" if name == "command" else f"[{value!r}]"
        raise SpecError(name, f"got the single value {value!r}", f"give {name} as a list, e.g. {name}={example}")
    items = tuple(value)
    for item in items:
        if not isinstance(item, (str, int, float, os.PathLike)) or isinstance(item, bool):
            raise SpecError(name, f"holds {item!r} ({type(item).__name__})", f"give {name} as a list of strings")
    return tuple(os.fspath(i) if isinstance(i, os.PathLike) else str(i) for i in items)


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

    Slurm's totals mean what they mean in Slurm: ``ntasks`` is tasks in the whole job, ``gpus`` GPUs in the whole
    job (one node only: Slurm may split them unevenly), ``gpus_per_task`` GPUs per task; the per-node fields are
    derived from them. ``secrets`` marks more environment names as secret (``*TOKEN*``, ``*KEY*``, ... always
    are): their values never go into a file lumikit writes, a printed command or an argv.
    """

    command: tuple[str, ...]
    name: str = "lumikit"
    partition: str | None = None
    nodes: int = 1
    ntasks_per_node: int | None = None
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
    ntasks: int | None = None
    gpus: int | None = None
    gpus_per_task: int | None = None
    secrets: tuple[str, ...] = ()
    gres_flags: str | None = None  # Slurm's --gres-flags (allow-task-sharing: per-task GPUs that keep peer access)

    def __post_init__(self) -> None:
        # Types are checked here, once: a string where a list belongs would otherwise render one -B per character.
        def setf(name: str, value: Any) -> None:
            object.__setattr__(self, name, value)
        for name in _STR_TUPLES:
            value = getattr(self, name)
            if name == "bind_sets" and value is None:
                continue
            setf(name, _as_strings(name, value))
        for name in _INT_FIELDS:
            setf(name, _as_int(name, getattr(self, name)))
        for name in _STR_FIELDS:
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                fix = "write it as Slurm does, e.g. '0:30:00'" if name == "time" else \
                      "write it as Slurm does, e.g. '60G'" if name.startswith("mem") else f"give {name} as text"
                raise SpecError(name, f"got {value!r} ({type(value).__name__})", fix)
        for name in ("exclusive", "rank_env"):
            value = getattr(self, name)
            if not (isinstance(value, bool) or (name == "rank_env" and value is None)):
                raise SpecError(name, f"got {value!r}", f"give {name} as True or False")
        env = self.env.items() if isinstance(self.env, Mapping) else self.env
        if isinstance(env, (str, bytes)):
            raise SpecError("env", f"got the string {self.env!r}",
                            "give env as a dict, e.g. env={'OMP_NUM_THREADS': '1'}")
        pairs = []
        for item in env:
            if isinstance(item, (str, bytes)) or len(item) != 2:
                raise SpecError("env", f"{item!r} is not a (name, value) pair", "give env as a dict of names to values")
            pairs.append((str(item[0]), str(item[1])))
        setf("env", tuple(pairs))
        if isinstance(self.profile_ranks, (str, bytes)):
            raise SpecError("profile_ranks", f"got the string {self.profile_ranks!r}", "give a list, e.g. [0, 3]")
        setf("profile_ranks", tuple(_as_int("profile_ranks", r) for r in self.profile_ranks))
        self._derive_shape(setf)

    def _derive_shape(self, setf: Any) -> None:
        """Slurm's totals (``--ntasks``, ``--gpus``, ``--gpus-per-task``) -> the per-node shape lumikit works with.

        Slurm may spread totals unevenly over nodes; lumikit runs the same shape on every node, so a total that
        does not divide evenly is refused with the per-node option to use instead.
        """
        nodes = self.nodes if self.nodes and self.nodes > 0 else 1
        if self.ntasks is not None:
            if self.ntasks < 1:
                raise SpecError("ntasks", f"{self.ntasks} tasks", "ask for at least 1 task")
            if self.ntasks % nodes:
                raise SpecError("ntasks", f"{self.ntasks} tasks on {nodes} nodes: Slurm would give the nodes unequal "
                                "task counts", f"use a multiple of {nodes}, or --ntasks-per-node")
            per_node = self.ntasks // nodes
            if self.ntasks_per_node not in (None, per_node):
                raise SpecError("ntasks", f"--ntasks={self.ntasks} with --ntasks-per-node={self.ntasks_per_node} on "
                                f"{nodes} node(s) ({nodes * self.ntasks_per_node} tasks)",
                                "give only one of --ntasks (tasks in total) and --ntasks-per-node")
            setf("ntasks_per_node", per_node)
        elif self.ntasks_per_node is None:
            setf("ntasks_per_node", 1)
        given = [n for n in ("gpus", "gpus_per_task") if getattr(self, n) is not None]
        if len(given) > 1:
            raise SpecError(given[1], "both --gpus and --gpus-per-task given",
                            "use one GPU option: --gpus-per-node (per node), --gpus (in total) or --gpus-per-task")
        if self.gpus is not None:
            if self.gpus < 0:
                raise SpecError("gpus", f"{self.gpus} GPUs", "ask for 0 or more GPUs")
            if nodes > 1:
                raise SpecError("gpus", f"--gpus={self.gpus} on {nodes} nodes: Slurm may split a job's GPUs unevenly "
                                "over its nodes",
                                f"use --gpus-per-node (e.g. --gpus-per-node={max(1, self.gpus // nodes)})")
            derived = self.gpus
        elif self.gpus_per_task is not None:
            if self.gpus_per_task < 1:
                raise SpecError("gpus_per_task", f"{self.gpus_per_task} GPUs per task", "ask for at least 1")
            derived = self.gpus_per_task * self.ntasks_per_node
        else:
            return
        if self.gpus_per_node not in (None, derived):
            raise SpecError(given[0], f"--{given[0].replace('_', '-')}={getattr(self, given[0])} gives {derived} GPUs "
                            f"per node, but --gpus-per-node={self.gpus_per_node}", "give only one GPU option")
        setf("gpus_per_node", derived)

    @property
    def total_tasks(self) -> int:
        return self.nodes * self.ntasks_per_node

    @property
    def distributed(self) -> bool:
        """Whether ranks need RANK/LOCAL_RANK/WORLD_SIZE and a MASTER_ADDR (explicit, or more than one task)."""
        return self.total_tasks > 1 if self.rank_env is None else self.rank_env

    def with_(self, **changes: Any) -> "JobSpec":
        """A copy with some fields changed (the spec itself never changes); per-node values derived from Slurm's
        totals (``ntasks``, ``gpus``, ``gpus_per_task``) are derived again unless given."""
        if self.ntasks is not None and "ntasks_per_node" not in changes:
            changes["ntasks_per_node"] = None
        if (self.gpus is not None or self.gpus_per_task is not None) and "gpus_per_node" not in changes:
            changes["gpus_per_node"] = None
        return replace(self, **changes)

    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    def secret_names(self) -> tuple[str, ...]:
        """Names whose values are secret: secret-looking names in ``env`` and every name in ``secrets``."""
        names = [k for k, _ in self.env if is_secret(k, self.secrets)]
        return tuple(dict.fromkeys(names + list(self.secrets)))

    def to_dict(self, redact: bool = True) -> dict[str, Any]:
        """Plain JSON-able form (for run manifests); secret values are replaced by ``<redacted>``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "env":
                out[f.name] = [[k, REDACTED if redact and is_secret(k, self.secrets) else val] for k, val in v]
            else:
                out[f.name] = list(v) if isinstance(v, tuple) else v
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "JobSpec":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise SpecError(", ".join(sorted(unknown)), "unknown job spec field(s)",
                            f"use only: {', '.join(sorted(known))}")
        values = {k: (tuple(v) if isinstance(v, list) and k != "env" else v) for k, v in data.items()}
        for derived, sources in (("ntasks_per_node", ("ntasks",)), ("gpus_per_node", ("gpus", "gpus_per_task"))):
            if any(values.get(src) is not None for src in sources):
                values[derived] = None  # derived again from Slurm's total, as when the spec was made
        return cls(**values)


def spec(command: Sequence[str], **options: Any) -> JobSpec:
    """Shorthand: ``spec(["python", "train.py"], partition="small-g", gpus_per_node=1)``."""
    return JobSpec(command=tuple(command), **options)
