"""Answers and a check's other inputs in a JSON form the instructor can turn back into the same values.

A check is regraded from what the learner's progress record holds: the answers, and the evidence (the check's other
arguments: step times, a table, a job spec, a script file's text, what ``sh(...)`` printed). :func:`encode` writes
them as JSON (tables, lumikit's own dataclasses and small files tagged so :func:`decode` rebuilds them); a value it
cannot write exactly raises :class:`Unencodable`, and that record is then self-reported, never verified.
Decoding only rebuilds lumikit's own dataclasses and pandas tables, and writes files into a folder the caller gives.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import math
import re
import stat
import sys
import zlib
from pathlib import Path, PurePath
from typing import Any

from ..files import load_json_bounded

#: The largest file kept as evidence (a batch script, a small trace); a larger one makes the record self-reported.
FILE_LIMIT = 256 * 1024
#: The largest table kept (cells); a larger one is not even written out.
CELL_LIMIT = 100_000
#: The largest evidence kept for one record, as JSON text (compressed when it is over :data:`COMPRESS_OVER`).
EVIDENCE_LIMIT = 300 * 1024
COMPRESS_OVER = 32 * 1024
#: The most a compressed evidence may expand to when read back (no zip bomb reaches the instructor's memory).
EXPAND_LIMIT = 16 * 1024 * 1024
#: The most a run folder's files may hold to be hashed at check time (their digest is compared at grade time).
FOLDER_HASH_LIMIT = 512 * 1024 * 1024
#: The deepest nesting compressed evidence may have once expanded (what :func:`encode` writes stays far below).
EXPAND_MAX_DEPTH = 64
#: The most elements an array or a table is rebuilt with (what :func:`encode` keeps); checked before allocation.
ARRAY_ELEMENTS = CELL_LIMIT
#: The most bytes one rebuilt array may take (elements times the element size), checked before allocation.
ARRAY_BYTES = 16 * 1024 * 1024
#: Element types an array is rebuilt with: booleans, integers, floats, complex numbers, dates and durations, and text
#: of at most :data:`ARRAY_TEXT_CHARS` characters (no objects, records, sub-arrays or raw bytes).
ARRAY_KINDS = "biufcMmU"
ARRAY_TEXT_CHARS = 4096
_DTYPE = re.compile(r"[<>|=]?(?:bool|u?int(?:8|16|32|64)|float(?:16|32|64)|complex(?:64|128)|[?biufc]\d{0,2}"
                    r"|U\d{0,5}|(?:datetime64|timedelta64|[Mm]8)(?:\[\d{0,3}[a-zA-Z]{1,2}\])?)")
#: The most values (commas) and containers (brackets) compressed evidence may hold once expanded, counted in its
#: text before it is parsed: an honest record's largest table is a tenth of this.
EXPAND_VALUES = 1_000_000
EXPAND_CONTAINERS = 250_000
#: Exercise -> its arguments naming a run folder: hashed when the check passes (:func:`run_folders`), and the grade
#: compares the folder with that hash (the folder is never handed to a check on the instructor's side).
RUN_FOLDERS: dict[str, tuple[str, ...]] = {
    "06.4": ("trace_dir",),
    "11.1": ("before_dir",),
    "11.2": ("before_dir",),
    "11.3": ("before_dir", "after_dir"),
    "11.A": ("before_dir", "after_dir"),
}


class Unencodable(ValueError):
    """A value with no exact JSON form (an object, a folder, a file too big)."""


def encode(value: Any, depth: int = 0) -> Any:
    """The JSON form of ``value``: plain JSON as it is, the rest tagged (``{"__frame__": ...}``)."""
    if depth > 12:
        raise Unencodable("nested too deep")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"__float__": repr(value)}
        return value
    type_name = type(value).__module__ + "." + type(value).__name__
    if type_name.startswith("numpy."):
        import numpy as np

        if isinstance(value, np.generic):
            return encode(value.item(), depth + 1)
        if isinstance(value, np.ndarray) and value.size <= 100_000:
            return {"__array__": encode(value.tolist(), depth + 1), "dtype": str(value.dtype)}
        raise Unencodable(f"a numpy {type(value).__name__}")
    if type_name.startswith("pandas."):
        import pandas as pd

        if value.size > CELL_LIMIT:
            raise Unencodable(f"a table of {value.size:,} cells (more than {CELL_LIMIT:,})")
        if isinstance(value, pd.DataFrame):
            return {"__frame__": json.loads(value.to_json(orient="split", date_format="iso", double_precision=15))}
        if isinstance(value, pd.Series):
            return {"__series__": json.loads(value.to_json(orient="split", date_format="iso", double_precision=15))}
        raise Unencodable(f"a pandas {type(value).__name__}")
    if isinstance(value, PurePath):
        return _encode_file(Path(value))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        cls = type(value)
        if not cls.__module__.startswith("lumikit."):
            raise Unencodable(f"a {cls.__name__} (not one of lumikit's own)")
        fields = {f.name: encode(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value) if f.init}
        return {"__dataclass__": f"{cls.__module__}:{cls.__qualname__}", "fields": fields}
    if isinstance(value, tuple):
        return {"__tuple__": [encode(v, depth + 1) for v in value]}
    if isinstance(value, (list, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [encode(v, depth + 1) for v in items]
    if isinstance(value, dict) or hasattr(value, "items") and hasattr(value, "keys"):
        if all(isinstance(k, str) for k in value.keys()):
            return {"__dict__": {k: encode(v, depth + 1) for k, v in value.items()}}
        return {"__pairs__": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in value.items()]}
    raise Unencodable(f"a {type(value).__name__}")


def _encode_file(path: Path) -> dict[str, Any]:
    """A path to a small regular file: its name and text (so the regrade never reads the learner's path)."""
    try:
        info = path.stat()
    except OSError:
        return {"__path__": str(path), "missing": True}
    if not stat.S_ISREG(info.st_mode):
        raise Unencodable(f"{path} is not a regular file")
    if info.st_size > FILE_LIMIT:
        raise Unencodable(f"{path} is larger than {FILE_LIMIT // 1024} KB")
    data = path.read_bytes()[:FILE_LIMIT + 1]
    kept: dict[str, Any] = {"__path__": str(path), "name": path.name, "sha256": hashlib.sha256(data).hexdigest()}
    try:
        kept["text"] = data.decode("utf-8")
    except UnicodeDecodeError:
        kept["base64"] = base64.b64encode(data).decode("ascii")
    return kept


def decode(data: Any, files: Path | None = None) -> Any:
    """The value :func:`encode` wrote; files are written again under ``files`` (a fresh folder), by name only."""
    if isinstance(data, list):
        return [decode(v, files) for v in data]
    if not isinstance(data, dict):
        return data
    if "__float__" in data:
        return float(data["__float__"])
    if "__tuple__" in data:
        return tuple(decode(v, files) for v in data["__tuple__"])
    if "__dict__" in data:
        return {k: decode(v, files) for k, v in data["__dict__"].items()}
    if "__pairs__" in data:
        return {_hashable(decode(k, files)): decode(v, files) for k, v in data["__pairs__"]}
    if "__array__" in data:
        return _array(data)
    if "__frame__" in data or "__series__" in data:
        import pandas as pd

        part = data.get("__frame__") or data.get("__series__")
        if not isinstance(part, dict):
            raise Unencodable("a table that is not a mapping")
        _table_size(part)
        index = part.get("index")
        if "__frame__" in data:
            return pd.DataFrame(part.get("data", []), index=index, columns=part.get("columns"))
        return pd.Series(part.get("data", []), index=index, name=part.get("name"))
    if "__path__" in data:
        if data.get("missing") or files is None or ("text" not in data and "base64" not in data):
            return Path("/nonexistent-evidence") / Path(str(data.get("name") or "missing")).name
        target = Path(files) / (Path(str(data.get("name", "file"))).name or "file")
        target.parent.mkdir(parents=True, exist_ok=True)
        if "text" in data:
            target.write_text(str(data["text"]), encoding="utf-8")
        else:
            target.write_bytes(base64.b64decode(str(data["base64"]))[:FILE_LIMIT])
        return target
    if "__dataclass__" in data:
        module_name, _, qualname = str(data["__dataclass__"]).partition(":")
        if not module_name.startswith("lumikit.") or "." in qualname:
            raise Unencodable(f"{data['__dataclass__']} is not one of lumikit's dataclasses")
        # never imported because a record names it: the record chooses nothing to load, only among what the
        # checks themselves already loaded
        cls = getattr(sys.modules.get(module_name), qualname, None)
        if cls is None or not dataclasses.is_dataclass(cls) or not isinstance(cls, type):
            raise Unencodable(f"{data['__dataclass__']} is not one of lumikit's dataclasses")
        fields = {k: decode(v, files) for k, v in dict(data.get("fields") or {}).items()}
        return cls(**fields)
    return {k: decode(v, files) for k, v in data.items()}


def _array_dtype(text: Any) -> Any:
    """The numpy element type a record names, only when it is one of :data:`ARRAY_KINDS` (text kept short)."""
    import numpy as np

    if not isinstance(text, str) or len(text) > 24 or not _DTYPE.fullmatch(text):
        raise Unencodable(f"an array of {str(text)[:40]!r} elements, not a kind an array is rebuilt with")
    try:
        dtype = np.dtype(text)
    except (TypeError, ValueError):
        raise Unencodable(f"an array of {text!r} elements, not a numpy type") from None
    if dtype.kind not in ARRAY_KINDS or dtype.shape or dtype.names or dtype.hasobject or \
            (dtype.kind == "U" and dtype.itemsize > 4 * ARRAY_TEXT_CHARS):
        raise Unencodable(f"an array of {text!r} elements, not a kind an array is rebuilt with")
    return dtype


def _leaves(value: Any, limit: int) -> tuple[int, int]:
    """(how many scalars a nested list holds, the longest text among them), counted without recursion and
    stopped past ``limit``."""
    count = longest = 0
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, list):
            pending.extend(item)
            if len(pending) > limit + 1:
                return limit + 1, longest
            continue
        count += 1
        if isinstance(item, str):
            longest = max(longest, len(item))
        if count > limit:
            break
    return count, longest


def _array(data: dict[str, Any]) -> Any:
    """An array rebuilt from its record, only within :data:`ARRAY_KINDS`, :data:`ARRAY_ELEMENTS` and
    :data:`ARRAY_BYTES`: both sizes are worked out from the record before numpy allocates anything."""
    import numpy as np

    dtype = _array_dtype(data.get("dtype", "float64"))
    items = data["__array__"]
    if isinstance(items, dict):
        raise Unencodable("an array whose elements are not a list")
    count, longest = _leaves(items, ARRAY_ELEMENTS)
    if count > ARRAY_ELEMENTS:
        raise Unencodable(f"an array of more than {ARRAY_ELEMENTS:,} elements")
    size = dtype.itemsize or 4 * max(1, longest)  # "U" alone takes the longest text's size
    if dtype.kind == "U" and longest > ARRAY_TEXT_CHARS:
        raise Unencodable(f"an array with a text longer than {ARRAY_TEXT_CHARS:,} characters")
    if count * size > ARRAY_BYTES:
        raise Unencodable(f"an array of {count * size:,} bytes (more than {ARRAY_BYTES:,})")
    return np.asarray(items, dtype=dtype)


def _table_size(part: dict[str, Any]) -> None:
    """Refuse a stored table of more than :data:`CELL_LIMIT` cells (rows times columns) before it is built."""
    rows = part.get("data", [])
    columns = part.get("columns")
    index = part.get("index")
    width = max([len(columns) if isinstance(columns, list) else 1,
                 *(len(r) for r in rows[:1] if isinstance(r, list))]) if isinstance(rows, list) else 1
    height = max(len(rows) if isinstance(rows, list) else 1, len(index) if isinstance(index, list) else 0)
    if height * max(width, 1) > CELL_LIMIT:
        raise Unencodable(f"a table of {height * width:,} cells (more than {CELL_LIMIT:,})")


def _hashable(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def encode_all(values: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """(the JSON form of each value, True when every one was written exactly and the whole fits the limit)."""
    out: dict[str, Any] = {}
    exact = True
    for name, value in values.items():
        try:
            out[name] = encode(value)
        except (Unencodable, OSError, TypeError, ValueError) as why:
            out[name] = {"__unencodable__": str(why)[:200]}
            exact = False
    text = json.dumps(out, ensure_ascii=False)
    if len(text) > COMPRESS_OVER:
        packed = base64.b64encode(zlib.compress(text.encode(), 9)).decode("ascii")
        if len(packed) > EVIDENCE_LIMIT:
            return {name: {"__unencodable__": "too large to keep"} for name in values}, False
        return {"__zlib__": packed}, exact
    return out, exact


def expand(values: Any) -> dict[str, Any]:
    """The mapping :func:`encode_all` wrote, decompressed (at most :data:`EXPAND_LIMIT` bytes) where it was."""
    if not isinstance(values, dict):
        return {}
    if "__zlib__" not in values:
        return values
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(base64.b64decode(str(values["__zlib__"])), EXPAND_LIMIT)
        if inflater.unconsumed_tail:
            raise Unencodable("expands beyond the limit")
        if raw.count(b",") + raw.count(b":") > EXPAND_VALUES:
            raise Unencodable(f"holds more than {EXPAND_VALUES:,} values")
        if raw.count(b"[") + raw.count(b"{") > EXPAND_CONTAINERS:
            raise Unencodable(f"holds more than {EXPAND_CONTAINERS:,} lists and mappings")
        data = load_json_bounded(raw.decode("utf-8"), "compressed evidence", max_depth=EXPAND_MAX_DEPTH)
    except (ValueError, zlib.error, UnicodeDecodeError) as err:
        raise Unencodable(f"compressed evidence unreadable ({err})") from None
    if not isinstance(data, dict):
        raise Unencodable("compressed evidence is not a mapping")
    return data


def folder_digest(folder: Path, *, limit: int = FOLDER_HASH_LIMIT) -> dict[str, Any]:
    """A digest of a run folder's regular files (names and contents, links and other entries left out):
    ``{"sha256", "files", "bytes"}``. Raises :class:`Unencodable` when it cannot be read or holds more than
    ``limit`` bytes. Files are opened without following links and never parsed."""
    import os

    digest = hashlib.sha256()
    files = total = 0
    pending = [Path(folder)]
    found: list[tuple[str, Path]] = []
    try:
        while pending:
            current = pending.pop()
            with os.scandir(current) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
                    elif entry.is_file(follow_symlinks=False):
                        found.append((os.path.relpath(entry.path, folder), Path(entry.path)))
        for name, path in sorted(found):
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as fh:
                if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                    continue
                digest.update(name.encode("utf-8", "replace") + b"\0")
                while chunk := fh.read(1 << 20):
                    total += len(chunk)
                    if total > limit:
                        raise Unencodable(f"{folder} holds more than {limit >> 20} MB")
                    digest.update(chunk)
            digest.update(b"\0")
            files += 1
    except OSError as err:
        raise Unencodable(f"{folder} cannot be read ({err.strerror or err})") from None
    return {"sha256": digest.hexdigest(), "files": files, "bytes": total}


def run_folders(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Argument -> ``{"path", "sha256", "files", "bytes"}`` (or ``"unhashed"``: why) for every value naming a
    folder (a path, or a launched run's ``.path``): what the grade compares the folder with later."""
    out: dict[str, dict[str, Any]] = {}
    for name, value in values.items():
        target = getattr(value, "path", value)
        if not isinstance(target, (str, PurePath)) or not str(target).strip():
            continue
        try:
            folder = Path(target)
            if not folder.is_dir():
                continue
            out[name] = {"path": str(folder.resolve()), **folder_digest(folder)}
        except Unencodable as why:
            out[name] = {"path": str(target), "unhashed": str(why)[:200]}
        except (OSError, ValueError):
            continue
    return out


def fresh_folder() -> Path:
    """A private temporary folder for files rebuilt from evidence."""
    import tempfile

    return Path(tempfile.mkdtemp(prefix="lumikit-regrade-"))


__all__ = ["FILE_LIMIT", "RUN_FOLDERS", "Unencodable", "decode", "encode", "encode_all", "expand", "folder_digest", "fresh_folder",
           "run_folders"]
