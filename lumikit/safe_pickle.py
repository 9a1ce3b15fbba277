"""Pickles that a file supplies, read as plain values only, within bounds.

Two course files are pickles: PyTorch's flight-recorder dumps and ``torch.cuda.memory._dump_snapshot`` files.
Both hold dicts, lists, tuples, strings, bytes, numbers, bools and None. ``pickle.load`` on them would run any code
the file names and trust every length and memo index it gives (a 35-byte pickle can make the C unpickler reserve
gigabytes for its memo). So a pickle is read in three steps:

1. a scan of every opcode with :mod:`pickletools` (no object is built): only the opcodes that make plain values
   are allowed, memo indices must be ones the file itself stored, and every length must fit the bytes that remain;
2. the C unpickler builds the values, with ``find_class`` refusing every class or function;
3. a walk of the result, following shared references as often as they occur, refuses cycles, more than
   ``max_depth`` levels of nesting, more values and characters than the file's size allows (a fixed multiple:
   references counted as copies) and integers past 64 bits (so a "billion laughs" of shared lists or strings
   cannot blow up whoever reads the result next).
"""
from __future__ import annotations

import io
import pickle
import pickletools
from typing import Any

from .errors import ParseError

#: Opcodes that build plain values (or only frame and mark the stream); anything else is refused.
_PLAIN_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "POP", "POP_MARK", "DUP",
    "NONE", "NEWTRUE", "NEWFALSE", "INT", "BININT", "BININT1", "BININT2", "LONG", "LONG1", "LONG4",
    "FLOAT", "BINFLOAT", "STRING", "BINSTRING", "SHORT_BINSTRING", "UNICODE", "BINUNICODE", "SHORT_BINUNICODE",
    "BINUNICODE8", "BINBYTES", "SHORT_BINBYTES", "BINBYTES8", "BYTEARRAY8",
    "EMPTY_LIST", "APPEND", "APPENDS", "LIST", "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_SET", "ADDITEMS", "FROZENSET",
    "PUT", "BINPUT", "LONG_BINPUT", "MEMOIZE", "GET", "BINGET", "LONG_BINGET",
})
_PUTS = {"PUT", "BINPUT", "LONG_BINPUT"}
_GETS = {"GET", "BINGET", "LONG_BINGET"}


class _NoClasses(pickle.Unpickler):
    """The C unpickler with every class and function refused (the scan already refused the opcodes naming one)."""

    def find_class(self, module: str, name: str):  # noqa: ANN201 - pickle's signature
        raise pickle.UnpicklingError(f"the pickle names {module}.{name}")


def _scan(data: bytes, source: str, what: str) -> None:
    """Refuse any opcode that is not plain, a memo index the file never stored, or a frame past the data's end."""
    stored: set[int] = set()
    memo_count = 0
    try:
        for op, arg, pos in pickletools.genops(io.BytesIO(data)):
            name = op.name
            if name not in _PLAIN_OPCODES:
                raise ParseError(f"the pickle uses {name} at byte {pos}, which builds objects or calls code; "
                                 f"{what} holds plain values only, so it is refused", source=source)
            if name == "MEMOIZE":
                stored.add(memo_count)
                memo_count += 1
            elif name in _PUTS:
                if not isinstance(arg, int) or arg < 0 or arg > len(data):
                    raise ParseError(f"memo index {arg!r} at byte {pos} is out of range: a damaged or hostile "
                                     f"pickle, not {what}", source=source)
                stored.add(arg)
                memo_count = max(memo_count, arg + 1)
            elif name in _GETS and arg not in stored:
                raise ParseError(f"the pickle reads memo entry {arg!r} at byte {pos} that it never stored: a "
                                 f"damaged or hostile pickle, not {what}", source=source)
            elif name == "FRAME" and isinstance(arg, int) and arg > len(data) - pos:
                raise ParseError(f"a frame of {arg:,} bytes at byte {pos} runs past the end of the file: cut "
                                 f"short while being written?", source=source)
    except ParseError:
        raise
    except (ValueError, TypeError, OverflowError, MemoryError) as exc:  # genops' own complaints about the bytes
        raise ParseError(f"not a readable pickle ({str(exc)[:120]}); was it cut short while being written?",
                         source=source) from None


#: Values a reader may meet per byte of the pickle once shared references are followed, and the characters of
#: strings and bytes (each reference counted as a copy): a real dump of 2,000 collectives expands to under one value
#: and four characters per byte; a "billion laughs" of shared lists or strings expands to millions.
ITEMS_PER_BYTE, CHARS_PER_BYTE = 32, 64
MIN_ITEMS, MIN_CHARS = 200_000, 8 << 20
#: The largest integer a course pickle holds (nanosecond timestamps, byte counts and addresses fit in 64 bits).
MAX_INT = 2 ** 64


def _walk(value: Any, source: str, what: str, *, max_depth: int, max_items: int, max_chars: int) -> None:
    """Count every value as a reader will meet it (shared references each time, the characters of strings and
    bytes too), refusing cycles, excess and integers past 64 bits."""
    seen = chars = 0
    stack: list[tuple[Any, int, bool]] = [(value, 1, False)]
    on_path: set[int] = set()
    while stack:
        item, depth, leaving = stack.pop()
        if leaving:
            on_path.discard(id(item))
            continue
        seen += 1
        if seen > max_items:
            raise ParseError(f"more than {max_items:,} values once shared references are followed: not {what} "
                             f"(a pickle that multiplies itself is refused)", source=source)
        if isinstance(item, (str, bytes, bytearray)):
            chars += len(item)
            if chars > max_chars:
                raise ParseError(f"more than {max_chars:,} characters of text once shared references are followed: "
                                 f"not {what} (a pickle that multiplies itself is refused)", source=source)
            continue
        if isinstance(item, int) and not -MAX_INT < item < MAX_INT:
            raise ParseError(f"a huge integer ({item.bit_length()} bits), past the 64 bits of any count, size or time "
                             f"in {what}: a damaged or hostile pickle", source=source)
        if not isinstance(item, (dict, list, tuple, set, frozenset)):
            continue
        if id(item) in on_path:
            raise ParseError(f"a container that holds itself: not {what}", source=source)
        if depth > max_depth:
            raise ParseError(f"values nested more than {max_depth} deep: not {what}", source=source)
        on_path.add(id(item))
        stack.append((item, depth, True))
        children = [x for kv in item.items() for x in kv] if isinstance(item, dict) else item
        stack.extend((child, depth + 1, False) for child in children)


def load_plain(data: bytes, source: str, *, what: str = "a plain-value pickle", max_depth: int = 64,
               max_items: int | None = None, max_chars: int | None = None) -> Any:
    """The plain value a pickle holds, or ParseError naming ``source`` and why it was refused.

    ``what`` names the kind of file in messages ("a flight recorder dump"); ``max_items`` bounds the values a reader
    of the result will visit and ``max_chars`` the characters of its strings (shared references counted as copies;
    default: :data:`ITEMS_PER_BYTE` and :data:`CHARS_PER_BYTE` times the pickle's size, at least
    :data:`MIN_ITEMS` and :data:`MIN_CHARS`), ``max_depth`` the nesting it will recurse into.
    """
    if data[:1] != b"\x80":
        raise ParseError(f"not a pickle (protocol 2 or later starts with byte 0x80): not {what}", source=source)
    _scan(data, source, what)
    try:
        value = _NoClasses(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, KeyError, IndexError, OverflowError,
            AttributeError, MemoryError, RecursionError) as exc:  # AttributeError: APPEND on a dict, and the like
        raise ParseError(f"not a readable pickle ({str(exc)[:120]}): not {what}", source=source) from None
    _walk(value, source, what, max_depth=max_depth,
          max_items=max(MIN_ITEMS, ITEMS_PER_BYTE * len(data)) if max_items is None else max_items,
          max_chars=max(MIN_CHARS, CHARS_PER_BYTE * len(data)) if max_chars is None else max_chars)
    return value
