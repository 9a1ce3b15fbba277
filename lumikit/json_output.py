"""JSON that every JSON reader accepts: what ``--json`` prints on the command line.

Python's ``json`` writes ``NaN`` and ``Infinity`` for non-finite floats, which is not JSON (jq, JavaScript and
strict parsers refuse it). :func:`to_json` writes them as ``null`` and says where; numpy and pandas scalars become
plain numbers (integers stay exact whatever their size, never cast through a float or a 64-bit integer).
"""
from __future__ import annotations

import json
import math
import sys
from typing import Any, TextIO

import orjson

#: Floats that orjson writes as Python's ``json`` does (``repr``): from 1e-4 up; smaller ones it writes without an
#: exponent (``0.00001`` for ``1e-05``).
_ORJSON_SAME_FLOAT = 1e-4


def jsonable(value: Any, notes: list[str] | None = None, where: str = "") -> Any:
    """``value`` with non-finite floats as None (each noted as ``where``), numpy scalars as Python numbers,
    tuples as lists and mapping keys as strings."""
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        if notes is not None:
            notes.append(where or "(top)")
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v, notes, f"{where}.{k}" if where else str(k)) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, notes, f"{where}[{i}]") for i, v in enumerate(value)]
    if hasattr(value, "item") and not hasattr(value, "__len__"):  # numpy / pandas scalars
        return jsonable(value.item(), notes, where)
    if value.__class__.__name__ in ("NAType", "NaTType"):
        return None
    return str(value)


def to_json(value: Any, *, indent: int | None = 2) -> tuple[str, list[str]]:
    """The JSON text of ``value`` and the places where a non-finite number was written as ``null``: the text of
    ``json.dumps(jsonable(value))``, written by orjson (its C encoder: tens of times faster on a large report, and
    no copy of it) where that gives the same text, else by ``json``."""
    if indent == 2 and _orjson_same(value):
        try:
            return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode("ascii"), []
        except (orjson.JSONEncodeError, UnicodeDecodeError):  # nested too deep for orjson
            pass
    notes: list[str] = []
    text = json.dumps(jsonable(value, notes), indent=indent, allow_nan=False)
    return text, notes


def _orjson_same(value: Any) -> bool:
    """Whether orjson writes ``value`` as ``json.dumps(jsonable(value))`` does: plain dicts (string keys), lists,
    tuples, strings, ints, floats, booleans and None only, with no non-finite float (:func:`jsonable` notes it),
    no float below 1e-4 in size but zero (orjson writes ``0.00001`` for ``1e-05``), no integer beyond 64 bits, no
    string with DEL or a non-ASCII character (``json`` escapes them; orjson writes them as they are)."""
    stack = [value]
    pop, extend = stack.pop, stack.extend
    lo, hi, small, isfinite = -(1 << 63), (1 << 64) - 1, _ORJSON_SAME_FLOAT, math.isfinite
    while stack:
        v = pop()
        t = type(v)
        if t is float:
            if not isfinite(v) or (v != 0.0 and -small < v < small):
                return False
        elif t is str:
            if not v.isascii() or "\x7f" in v:
                return False
        elif t is dict:
            for k in v:
                if type(k) is not str or not k.isascii() or "\x7f" in k:
                    return False
            extend(v.values())
        elif t is list or t is tuple:
            extend(v)
        elif t is int:
            if not lo <= v <= hi:
                return False
        elif t is not bool and v is not None:
            return False
    return True


def print_json(value: Any, *, out: TextIO | None = None, err: TextIO | None = None) -> None:
    """Print ``value`` as standard JSON; non-finite numbers become ``null`` with one note on stderr."""
    text, notes = to_json(value)
    print(text, file=out or sys.stdout)
    if notes:
        shown = ", ".join(notes[:5]) + (f" and {len(notes) - 5} more" if len(notes) > 5 else "")
        print(f"lumikit: note: {len(notes)} non-finite number{'s' if len(notes) != 1 else ''} (NaN or infinity) "
              f"written as null: {shown}", file=err or sys.stderr)
