"""Cell values as the tools print them: ``39.0c``, ``46.0°C``, ``88.0W``, ``1650Mhz``, ``98%``, ``N/A``, ``4976 MB``.

Shared by every parser so that one spelling of a unit is understood everywhere. All regexes are anchored and
linear (no nested quantifiers): a hostile line costs time proportional to its length.
"""
from __future__ import annotations

import math
import re

MISSING = frozenset({"", "n/a", "na", "none", "-", "[n/a]", "[not supported]", "not supported", "unknown"})

_NUMBER = re.compile(r"\s*\(?([-+]?\d+(?:\.\d+)?)\s*([A-Za-z°%/]*)\)?\s*")
_BYTE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
               "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}


_ASCII_INDEX = re.compile(r"[0-9]{1,9}")


def ascii_index(cell: object) -> int | None:
    """A GPU, card or rank number written in ASCII digits (at most 9), else None. ``str.isdigit`` is no test for
    this: it is True for ``'²'`` and other digits ``int()`` refuses."""
    if isinstance(cell, int) and not isinstance(cell, bool):
        return cell if 0 <= cell < 10**9 else None
    if not isinstance(cell, str):
        return None
    text = cell.strip()
    return int(text) if _ASCII_INDEX.fullmatch(text) else None


def is_missing(cell: str | None) -> bool:
    """``True`` for the spellings of "no value" (``N/A``, empty, ``[N/A]``, ``Not supported``)."""
    return cell is None or cell.strip().lower() in MISSING


def number(cell: str | None) -> float | None:
    """The number in a cell with an optional unit (``39.0c`` -> 39.0, ``(1650Mhz)`` -> 1650.0); ``None`` when
    the cell holds no number."""
    if cell is None:
        return None
    try:
        val = float(cell)  # the common case: a bare number ("88.0", "100")
        return val if math.isfinite(val) else None
    except ValueError:
        pass
    if is_missing(cell):
        return None
    m = _NUMBER.fullmatch(cell)
    if m is None:
        return None
    val = float(m.group(1))
    return val if math.isfinite(val) else None  # 400 digits are damage, not a reading


def integer(cell: str | None) -> int | None:
    """Like :func:`number`, as an ``int`` (``None`` when absent or beyond 64 bits)."""
    v = number(cell)
    return None if v is None or abs(v) >= 2**63 else int(v)


def nbytes(cell: str | None, default_unit: str = "b") -> int | None:
    """A memory size in bytes: ``4976 MB``, ``40960 MiB``, ``1.1 GB``, ``297611264`` (``default_unit`` when bare).

    amd-smi and nvidia-smi write ``MB``/``MiB`` for 2**20 bytes; both are read as MiB (amd-smi's "MB" are
    mebibytes: 196592 MB on a 192 GiB MI300X).
    """
    if cell is None or is_missing(cell):
        return None
    m = _NUMBER.fullmatch(cell)
    if m is None:
        return None
    unit = (m.group(2) or default_unit).lower()
    if unit in ("mb", "gb", "tb", "kb"):
        unit = unit[0] + "ib"
    factor = _BYTE_UNITS.get(unit)
    if factor is None:
        return None
    size = float(m.group(1)) * factor
    return int(round(size)) if math.isfinite(size) and abs(size) < 2**63 else None


def text(cell: str | None) -> str | None:
    """A text cell, ``None`` when missing."""
    if cell is None or is_missing(cell):
        return None
    return cell.strip()
