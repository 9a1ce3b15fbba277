"""Names from data files made safe to print: control characters escaped, so a kernel or file name cannot set the
terminal's title, clear the screen or forge a table row (JSON output escapes them already)."""
from __future__ import annotations

import re

#: C0 and C1 controls and DEL (ESC, BEL, CR, newline, tab, ...), line and paragraph separators, the bidirectional
#: overrides that reorder what a reader sees, and lone surrogates (undecodable file-name bytes) that stdout cannot
#: encode.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(m: re.Match[str]) -> str:
    ch = m.group()
    return _NAMED.get(ch) or (f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}")


def printable(value: object) -> str:
    """``str(value)`` with every control character written as an escape (``\\x1b``, ``\\x07``, ``\\n``,
    ``\\u202e``): what every text printer applies to names and text that come from a data file.

    >>> printable("k\\x1b]0;title\\x07\\nfake row")
    'k\\\\x1b]0;title\\\\x07\\\\nfake row'
    """
    text = value if isinstance(value, str) else str(value)
    return _UNSAFE.sub(_escape, text) if not text.isprintable() else text
