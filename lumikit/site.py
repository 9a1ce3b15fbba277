"""Site profiles: the machine as data (topology, partitions, containers, binds, environment recipes).

Profiles are TOML files in ``lumikit/sites/`` (or a path). A profile may name another in ``inherits``; tables
are merged key by key and everything else is replaced; ``drop_partitions`` lists inherited partitions it lacks.
CPU masks are derived from the GCD -> cores map.
"""
from __future__ import annotations

import os
import re
import socket
import stat
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .errors import LumikitError, SiteError
from .files import read_text
from .text import printable

SITES_DIR = Path(__file__).with_name("sites")
DEFAULT_SITE = "laptop"


@dataclass(frozen=True)
class Gcd:
    """One Graphics Compute Die: what Slurm and PyTorch call a GPU on LUMI."""

    index: int
    cores: tuple[int, ...]
    numa: int
    package: int

    @property
    def mask(self) -> int:
        """Bit mask of this GCD's cores, as ``--cpu-bind=mask_cpu:`` wants it."""
        return sum(1 << c for c in self.cores)

    @property
    def mask_hex(self) -> str:
        return f"0x{self.mask:016x}"


@dataclass(frozen=True)
class Node:
    """One compute node's shape."""

    cores: int
    threads_per_core: int
    memory_gb: int
    gcds: tuple[Gcd, ...]
    gcd_memory_gb: int
    usable_memory_per_gcd_gb: int
    cpus_per_gcd: int
    reserved_cores: tuple[int, ...]

    @property
    def gcd_count(self) -> int:
        return len(self.gcds)

    def gcd(self, index: int) -> Gcd:
        for g in self.gcds:
            if g.index == index:
                return g
        raise SiteError(f"GCD {index} does not exist on this node (it has GCDs 0..{self.gcd_count - 1})")

    def packages(self) -> dict[int, tuple[int, ...]]:
        """Package number -> the GCD indices that share it (and its power reading)."""
        out: dict[int, list[int]] = {}
        for g in self.gcds:
            out.setdefault(g.package, []).append(g.index)
        return {k: tuple(sorted(v)) for k, v in sorted(out.items())}

    def masks(self, gcd_indices: list[int] | tuple[int, ...] | None = None) -> list[str]:
        """CPU masks in GCD order (task i on a node gets GCD i)."""
        idx = range(self.gcd_count) if gcd_indices is None else gcd_indices
        return [self.gcd(i).mask_hex for i in idx]


@dataclass(frozen=True)
class Partition:
    name: str
    kind: str  # "gpu" or "cpu"
    exclusive: bool
    max_nodes: int
    max_time: str
    gpus_per_node: int


@dataclass(frozen=True)
class Container:
    name: str
    path: str
    launch: str  # "exec" or "run"
    with_conda: bool
    # profiling mode -> {overlay, lacks, build, source}: a squashfs overlay the mode needs in this image (see jobs/)
    overlays: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    multinode_env: tuple[str, ...] = ()  # environment recipes a multi-node job in this image gets
    job_env: tuple[str, ...] = ()  # environment recipes every job in this image gets (LAIF: FI_MR_CACHE_MONITOR)
    note: str = ""  # a known problem of this image, with its source: shown as advice to a job that uses it


@dataclass(frozen=True)
class PowerThresholds:
    idle_below_w: float = 150
    one_gcd_busy_w: float = 300
    both_gcds_busy_w: float = 500
    busy_pct: float = 50
    low_sclk_mhz: float = 900
    memory_full_pct: float = 95


@dataclass(frozen=True)
class Site:
    """A whole site profile. Build with :func:`load_site`."""

    name: str
    description: str
    scheduler: str  # "slurm" or "none"
    backend: str  # default launch backend: "slurm" or "local"
    container_runtime: str  # "singularity" or "none"
    default_partition: str
    default_container: str | None
    node: Node
    power: PowerThresholds
    partitions: Mapping[str, Partition]
    containers: Mapping[str, Container]
    binds: Mapping[str, tuple[str, ...]]
    env: Mapping[str, Mapping[str, str]]
    detect: Mapping[str, Any] = field(default_factory=dict)
    slurm: Mapping[str, Any] = field(default_factory=dict)
    billing: Mapping[str, Any] = field(default_factory=dict)  # the billing rule, see jobs/billing.py
    hardware: Mapping[str, Any] = field(default_factory=dict)  # sourced peak figures, see lumikit/model_estimate.py
    source: str = ""

    @property
    def links(self) -> Mapping[str, Mapping[str, Any]]:
        """Peak link speeds of a node (``[hardware.links.NAME]``: ``gb_s`` per direction, ``description``,
        ``source``), what collective bandwidths are held against (see :mod:`lumikit.trace.comms`)."""
        return self.hardware.get("links", {})

    @property
    def ref(self) -> str:
        """What names this profile to another process (a run's manifest, a recorder, a job's own command): the name
        of a shipped profile, else the full path of the profile's file (a name alone would not be found there)."""
        try:
            if Path(self.source).resolve().parent == SITES_DIR.resolve():
                return self.name
            return str(Path(self.source).resolve()) if self.source.endswith(".toml") else self.name
        except (OSError, RuntimeError):
            return self.name

    @property
    def uses_containers(self) -> bool:
        return self.container_runtime != "none"

    def partition(self, name: str) -> Partition:
        try:
            return self.partitions[name]
        except KeyError:
            known = ", ".join(sorted(self.partitions))
            raise SiteError(f"unknown partition {name!r} on site {self.name!r}; known: {known}") from None

    def container(self, name_or_path: str) -> Container:
        """A named container, or an ad-hoc one for a path (``.sif`` files use ``exec`` without conda)."""
        if name_or_path in self.containers:
            return self.containers[name_or_path]
        if "/" in name_or_path or name_or_path.endswith(".sif"):
            return Container(name=Path(name_or_path).stem, path=name_or_path, launch="exec", with_conda=False)
        known = ", ".join(sorted(self.containers)) or "none"
        raise SiteError(f"unknown container {name_or_path!r} on site {self.name!r}; known: {known}; "
                        "or give a path to a .sif image")

    def env_recipe(self, name: str) -> Mapping[str, str]:
        try:
            return self.env[name]
        except KeyError:
            known = ", ".join(sorted(self.env))
            raise SiteError(f"unknown environment recipe {name!r} on site {self.name!r}; known: {known}") from None


def available_sites() -> list[str]:
    """Names of the profiles shipped with lumikit."""
    return sorted(p.stem for p in SITES_DIR.glob("*.toml"))


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in over.items():
        if isinstance(v, Mapping) and isinstance(out.get(k), Mapping):
            out[k] = _merge(dict(out[k]), v)
        else:
            out[k] = v
    return out


#: A site profile is a few kilobytes (LUMI's is 20 KB); a larger file is not one.
SITE_MAX_BYTES = 1 << 20


def _read_raw(name_or_path: str | os.PathLike[str], seen: tuple[str, ...] = ()) -> tuple[dict[str, Any], str]:
    p = Path(name_or_path)
    path = p if p.suffix == ".toml" or (os.path.lexists(p) and not p.is_dir()) else SITES_DIR / f"{name_or_path}.toml"
    if not os.path.lexists(path):
        raise SiteError(f"no site profile {printable(str(name_or_path))!r}; shipped profiles: "
                        f"{', '.join(available_sites())}; or give the path of a .toml file")
    try:  # a FIFO, /dev/zero or a 3 GB file named *.toml is refused at once (lumikit.files)
        raw = tomllib.loads(read_text(path, "a site profile (.toml)", limit=SITE_MAX_BYTES, errors="strict"))
    except LumikitError as exc:
        raise SiteError(str(exc)) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise SiteError(f"{printable(str(path))}: not valid TOML ({printable(str(exc))[:200]}); fix the file") from None
    parent = raw.pop("inherits", None)
    if parent:
        if parent in seen:
            raise SiteError(f"{path}: 'inherits' loops through {' -> '.join(seen + (parent,))}")
        base, _ = _read_raw(parent, seen + (str(raw.get("name", path.stem)),))
        raw = _merge(base, raw)
    for name in raw.pop("drop_partitions", ()):  # inherited partitions this site does not have
        raw.get("partitions", {}).pop(name, None)
    return raw, str(path)


def _build(raw: dict[str, Any], source: str) -> Site:
    try:
        n = raw["node"]
        gcds = tuple(Gcd(index=int(g["index"]), cores=tuple(int(c) for c in g["cores"]), numa=int(g["numa"]),
                         package=int(g["package"])) for g in n["gcd"])
        node = Node(cores=int(n["cores"]), threads_per_core=int(n.get("threads_per_core", 1)),
                    memory_gb=int(n["memory_gb"]), gcds=tuple(sorted(gcds, key=lambda g: g.index)),
                    gcd_memory_gb=int(n["gcd_memory_gb"]), usable_memory_per_gcd_gb=int(n["usable_memory_per_gcd_gb"]),
                    cpus_per_gcd=int(n["cpus_per_gcd"]), reserved_cores=tuple(n.get("reserved_cores", ())))
        partitions = {name: Partition(name=name, kind=p["kind"], exclusive=bool(p["exclusive"]),
                                      max_nodes=int(p["max_nodes"]), max_time=str(p["max_time"]),
                                      gpus_per_node=int(p["gpus_per_node"]))
                      for name, p in raw.get("partitions", {}).items()}
        containers = {name: Container(name=name, path=c["path"], launch=c.get("launch", "exec"),
                                      with_conda=bool(c.get("with_conda", False)),
                                      overlays={m: {k: str(v) for k, v in o.items()}
                                                for m, o in c.get("overlays", {}).items()},
                                      multinode_env=tuple(c.get("multinode_env", ())),
                                      job_env=tuple(c.get("job_env", ())),
                                      note=str(c.get("note", "")))
                      for name, c in raw.get("containers", {}).items()}
        return Site(
            name=raw["name"], description=raw.get("description", ""), scheduler=raw.get("scheduler", "none"),
            backend=raw.get("backend", "local"), container_runtime=raw.get("container_runtime", "none"),
            default_partition=raw.get("default_partition", next(iter(partitions), "")),
            default_container=raw.get("default_container"), node=node,
            power=PowerThresholds(**raw.get("power", {})), partitions=partitions, containers=containers,
            binds={k: tuple(v) for k, v in raw.get("binds", {}).items()},
            env={k: {ek: str(ev) for ek, ev in v.items()} for k, v in raw.get("env", {}).items()},
            detect=raw.get("detect", {}), slurm=raw.get("slurm", {}), billing=raw.get("billing", {}),
            hardware=raw.get("hardware", {}), source=source)
    except (KeyError, TypeError, ValueError) as exc:
        raise SiteError(f"{source}: malformed site profile ({type(exc).__name__}: {exc}); "
                        "compare it with lumikit/sites/lumi.toml") from None


@lru_cache(maxsize=32)
def _load_cached(name_or_path: str) -> Site:
    raw, source = _read_raw(name_or_path)
    return _build(raw, source)


def load_site(name_or_path: str | os.PathLike[str] | Site | None = None) -> Site:
    """Load a site profile by name or path; ``None`` means the detected site (see :func:`detect_site`)."""
    if isinstance(name_or_path, Site):
        return name_or_path
    if name_or_path is None:
        name_or_path = detect_site()
    return _load_cached(str(name_or_path))


def site_of_record(value: object, folder: str | os.PathLike[str]) -> tuple[Site, str]:
    """The site a run folder's manifest (or a rehearsal's driver file) names, and a note ("" when none). A run
    folder is data, never code: a shipped profile's name is loaded; a path only when it is the caller's own file
    (owned by this user, writable by no one else) outside ``folder``, and the note says so; anything else is a
    SiteError. A profile decides ``SLURM_CONF`` and the commands a job watch runs, so a planted one would run code
    (a conf's PluginDir, a ``watch_command``) as whoever looks at the run."""
    if value is None or value == "":
        return load_site(None), ""
    text = str(value)
    if text in available_sites():
        return load_site(text), ""
    shown, where = printable(text[:200]), printable(str(folder))
    refused = (f"{where}: the manifest names the site {shown!r}, which is not a shipped profile "
               f"({', '.join(available_sites())})")
    p = Path(text)
    if not (p.is_absolute() and p.suffix == ".toml"):
        raise SiteError(f"{refused}. Fix: write a shipped profile's name in the manifest's 'site'")
    try:
        real, inside = p.resolve(), Path(folder).resolve()
        st = os.stat(real)
    except (OSError, RuntimeError):
        raise SiteError(f"{refused}, and no such file. Fix: write a shipped profile's name in the manifest's "
                        "'site'") from None
    why = ("it lies inside the run folder" if real == inside or inside in real.parents else
           "it is not a regular file" if not stat.S_ISREG(st.st_mode) else
           "it is not your file" if st.st_uid != os.getuid() else
           "others may write it" if st.st_mode & 0o022 else "")
    if why:
        raise SiteError(f"{refused}, and {why}: a run folder is data, so a site file it names is loaded only when "
                        "it is your own file outside the run folder, writable by you alone (it chooses Slurm's "
                        "configuration and the commands a watch runs). Fix: write a shipped profile's name in the "
                        "manifest's 'site', or use your own copy of the file")
    return load_site(real), (f"note: {where}: site profile from your own file {printable(str(real))} (named in the "
                             "manifest; not a shipped profile)")


_DEFAULTED = re.compile(r"\$\{(\w+):-([^}]*)\}")


def expand(text: str) -> str:
    """``${NAME:-default}`` and ``$NAME`` from the environment (what site profiles write), then ``~``."""
    text = _DEFAULTED.sub(lambda m: os.environ.get(m.group(1)) or m.group(2), text)
    return os.path.expanduser(os.path.expandvars(text))


def _same_file(a: str, b: str) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except (OSError, RuntimeError):
        return False


def _matches(detect: Mapping[str, Any]) -> bool:
    if any(os.environ.get(v) for v in detect.get("env", ())):
        return True
    # Inside a job of this cluster: Slurm hands the job its SLURM_CONF, which names the cluster's configuration.
    conf = os.environ.get("SLURM_CONF")
    if conf and (os.environ.get("SLURM_JOB_ID") or os.environ.get("SLURM_JOBID")) and any(
            _same_file(conf, expand(str(c))) for c in detect.get("slurm_conf", ())):
        return True
    host = socket.gethostname()
    if any(host.startswith(p) for p in detect.get("hostname_prefixes", ())):
        return True
    return any(Path(p).exists() for p in detect.get("paths", ()))


def detect_site() -> str:
    """The site this process runs on: ``$LUMIKIT_SITE``, the user config's ``site``, a profile whose
    ``detect`` rules match (an environment variable, a host name prefix, a path, or, inside a Slurm job, the
    ``SLURM_CONF`` it was given), else the embedded default (laptop)."""
    from .config import load_config

    explicit = os.environ.get("LUMIKIT_SITE") or load_config().site
    if explicit:
        return explicit
    for name in available_sites():
        raw, _ = _read_raw(name)
        if raw.get("detect") and _matches(raw["detect"]):
            return name
    return DEFAULT_SITE
