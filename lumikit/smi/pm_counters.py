"""HPE Cray's node power counters (``/sys/cray/pm_counters`` on LUMI's compute nodes) read as plain numbers.

Each value file holds one line ``<value> <unit> <timestamp> us`` (HPE CSM documentation, "User access to compute
node power data"): ``power``/``energy`` (the whole node), ``cpu_power``/``cpu_energy``, ``memory_power``/
``memory_energy`` and ``accel{0..3}_power``/``accel{0..3}_energy`` (one per MI250X package), updated at about
10 Hz; ``freshness``, ``generation``, ``raw_scan_hz`` and ``startup`` hold a bare number. ``$LUMIKIT_PM_COUNTERS``
names another folder in the same layout (tests, or a copy taken on a node). Nothing here imports the record or
the GPU views: the recorder and any watcher call :func:`read_counters`.
"""
from __future__ import annotations

import os
from pathlib import Path

from ..errors import LumikitError
from ..files import read_bytes

DEFAULT_DIR = "/sys/cray/pm_counters"
ENV = "LUMIKIT_PM_COUNTERS"
ACCELS = 4
#: The value files, in the order a card shows them: what each one measures.
VALUE_FILES: dict[str, str] = {
    "power": "node", "energy": "node", "cpu_power": "CPU", "cpu_energy": "CPU", "memory_power": "memory",
    "memory_energy": "memory",
    **{f"accel{i}_{q}": f"accelerator {i}" for i in range(ACCELS) for q in ("power", "energy")},
}
PLAIN_FILES = ("freshness", "generation", "raw_scan_hz", "startup")
_UNITS = {"J": 1.0, "kJ": 1e3, "W": 1.0, "kW": 1e3}


def counters_dir() -> Path | None:
    """The counters' folder: ``$LUMIKIT_PM_COUNTERS`` where set, else ``/sys/cray/pm_counters`` where it exists."""
    given = os.environ.get(ENV)
    path = Path(given) if given else Path(DEFAULT_DIR)
    return path if path.is_dir() else None


def parse_value(text: str, name: str = "<value>") -> tuple[float, str, float | None]:
    """``"123456 J 1700000000123456 us"`` -> (value in J or W, unit, epoch seconds of the reading or None)."""
    words = text.split()
    try:
        value = float(words[0])
    except (IndexError, ValueError):
        raise LumikitError(f"{name}: {text.strip()[:60]!r} is not '<value> <unit> <timestamp> us' as "
                           "/sys/cray/pm_counters files read") from None
    unit = words[1] if len(words) > 1 else ""
    if unit not in _UNITS:
        raise LumikitError(f"{name}: unit {unit!r} is not one of {', '.join(_UNITS)}")
    when = float(words[2]) / 1e6 if len(words) > 3 and words[3] == "us" and words[2].isdigit() else None
    return value * _UNITS[unit], unit.lstrip("k"), when


def read_counters(folder: str | os.PathLike[str] | None = None) -> dict[str, float]:
    """``{file: number}`` of every readable counter (J for energies, W for powers, bare numbers for the others)
    plus ``time`` (the newest reading's epoch seconds); ``{}`` without a counters folder. A file that cannot be
    read or does not hold a counter is left out (a node may expose only some of them)."""
    path = Path(folder) if folder is not None else counters_dir()
    if path is None or not path.is_dir():
        return {}
    out: dict[str, float] = {}
    times = []
    for name in (*VALUE_FILES, *PLAIN_FILES):
        try:
            text = read_bytes(path / name, "a pm_counters file", limit=4096).decode("ascii", errors="replace")
        except (LumikitError, OSError):
            continue
        try:
            if name in VALUE_FILES:
                value, _, when = parse_value(text, str(path / name))
                if when is not None:
                    times.append(when)
            else:
                value = float(text.split()[0])
        except (LumikitError, ValueError, IndexError):
            continue
        out[name] = value
    if times:
        out["time"] = max(times)
    return out


def energy_between(first: dict[str, float], last: dict[str, float]) -> dict[str, float]:
    """``{file: joules}`` used between two readings of :func:`read_counters` for each energy counter both hold;
    a counter that went down (the node restarted its counters: ``generation`` changed) is left out."""
    if first.get("generation") != last.get("generation"):
        return {}
    return {k: last[k] - first[k] for k in VALUE_FILES if k.endswith("energy") and k in first and k in last
            and last[k] >= first[k]}


__all__ = ["ACCELS", "DEFAULT_DIR", "ENV", "PLAIN_FILES", "VALUE_FILES", "counters_dir", "energy_between",
           "parse_value", "read_counters"]
