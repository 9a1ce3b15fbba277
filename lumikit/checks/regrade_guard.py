"""A fence around a regrade: while a check is judged again on the instructor's side, it may open only the files
lumikit and Python ship (and the private folder the evidence was rebuilt in), and no pickle may name a class.

The grading never hands a check a path in a learner's folder (:data:`lumikit.checks.grading.PATH_ARGUMENTS`); this
fence is the second line: an ``open`` of anything else, or a pickle naming a class or function, raises
:class:`PermissionError` inside the check and is noted, so the record is "not regraded" with the reason. It uses
one process-wide audit hook (:func:`sys.addaudithook`), active only inside :func:`fenced`.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Fence:
    """Where a fenced regrade may read: ``trusted`` always (lumikit, Python, the evidence folder), ``forbidden``
    never (the class folder), ``allowed`` otherwise; and what it tried that was refused."""

    trusted: tuple[str, ...]
    allowed: tuple[str, ...]
    forbidden: tuple[str, ...]
    refused: list[str] = field(default_factory=list)


_FENCE: ContextVar[Fence | None] = ContextVar("lumikit_regrade_fence", default=None)
_INSTALLED = False
#: System folders no learner can write, read by Python and its libraries (time zones, locales, /proc/self...).
_SYSTEM = ("/usr", "/etc", "/proc", "/sys", "/lib", "/lib64", "/dev/null", "/dev/urandom",
           "/dev/random")


def _inside(path: str, roots: Sequence[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


def _hook(event: str, args: tuple[Any, ...]) -> None:
    fence = _FENCE.get()
    if fence is None:
        return
    if event == "pickle.find_class":
        fence.refused.append(f"a pickle naming {args[0]}.{args[1]}")
        raise PermissionError("the regrade unpickles no class or function")
    if event != "open" or not args or isinstance(args[0], int):
        return
    raw = os.fsdecode(args[0]) if isinstance(args[0], (str, bytes, os.PathLike)) else ""
    if not raw:
        return
    path = os.path.realpath(raw)
    if _inside(path, fence.trusted):
        return
    if _inside(path, fence.forbidden) or not _inside(path, fence.allowed):
        fence.refused.append(path)
        raise PermissionError(f"{raw}: the regrade opens no file outside lumikit and its own evidence folder")


def _install() -> None:
    global _INSTALLED
    if not _INSTALLED:
        sys.addaudithook(_hook)
        _INSTALLED = True


def _trusted(evidence_folder: Path) -> tuple[str, ...]:
    """Folders read even inside the class folder (an instructor's clone may lie there): the rebuilt evidence,
    lumikit's own package and Python's installation, none of which a learner writes."""
    import lumikit

    roots = [str(evidence_folder), str(Path(lumikit.__file__).parent), sys.prefix, sys.base_prefix, sys.exec_prefix]
    return tuple(dict.fromkeys(os.path.realpath(r) for r in roots))


def default_allowed() -> tuple[str, ...]:
    """The other folders a fenced check may read, outside the class folder: the libraries' folders (absolute
    ``sys.path`` entries), the instructor's home, the system folders and the local Slurm cluster's configuration
    (to look a job up in ``sacct``)."""
    from ..launch.terminal import SIM_DIR_DEFAULT

    slurm = [os.environ.get("LUMIKIT_SLURM_SIM_DIR") or SIM_DIR_DEFAULT]  # the local cluster's state (site detection)
    if os.environ.get("SLURM_CONF"):
        slurm.append(str(Path(os.environ["SLURM_CONF"]).parent))
    roots = [*(p for p in sys.path if p and os.path.isabs(p)), str(Path.home()), *_SYSTEM, *slurm]
    return tuple(dict.fromkeys(os.path.realpath(r) for r in roots))


@contextmanager
def fenced(evidence_folder: Path, forbidden: Sequence[Path] = ()) -> Iterator[Fence]:
    """Run the body inside the fence; ``forbidden`` (the class folder) is refused even where it lies inside an
    allowed folder (not inside a trusted one). The :class:`Fence` yielded lists what was refused."""
    _install()
    fence = Fence(_trusted(evidence_folder), default_allowed(), tuple(os.path.realpath(p) for p in forbidden))
    token = _FENCE.set(fence)
    try:
        yield fence
    finally:
        _FENCE.reset(token)
