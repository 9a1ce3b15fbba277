"""Line handling shared by the text parsers: numbered lines, ``srun --label`` prefixes, banners, shell noise.

Every parser works on ``(line_no, text)`` pairs so that a :class:`~lumikit.errors.ParseError` can name the line
of the original input, even after the ``srun --label`` prefixes were stripped and the tasks split apart.
"""
from __future__ import annotations

import re

Line = tuple[int, str]

_LABEL = re.compile(r"^ {0,8}(\d{1,6}):(?: |$)")
_BANNER = re.compile(r"^[=\-+]{3,}|^\s*$")
_NOTE = re.compile(r"^\s*(WARNING|ERROR|Error|Warning)\b")
_ECHO_STATUS = re.compile(r"echo \$\?\s*$")


def numbered(text: str) -> list[Line]:
    """The text's lines with 1-based numbers (a BOM removed; ``\\r\\n`` and a lone ``\\r`` end a line, as in a file
    read as text, so a ``\\r`` inside a CSV row never reaches the csv module)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return list(enumerate(text.split("\n"), start=1))


def split_tasks(lines: list[Line]) -> dict[int | None, list[Line]]:
    """Group ``srun --label`` output by task (``{None: lines}`` when the lines carry no labels).

    Labels are recognised only when at least four in five non-blank lines carry one; the prefix is removed.
    """
    nonblank = [s for _, s in lines if s.strip()]
    labelled = sum(1 for s in nonblank if _LABEL.match(s))
    if not nonblank or labelled * 5 < len(nonblank) * 4:
        return {None: lines}
    out: dict[int | None, list[Line]] = {}
    for no, s in lines:
        m = _LABEL.match(s)
        if m is None:
            out.setdefault(None, []).append((no, s))
            continue
        rest = s[m.end():]
        out.setdefault(int(m.group(1)), []).append((no, rest))
    return out


def is_banner(s: str) -> bool:
    """A rule line (``=====``, ``-----``, ``+----+``) or a blank line."""
    return bool(_BANNER.match(s))


def is_note(s: str) -> bool:
    """A ``WARNING: ...`` / ``ERROR: ...`` line the tool printed between its tables."""
    return bool(_NOTE.match(s))


def exit_status(lines: list[Line]) -> int | None:
    """The status a shell transcript shows (a line ending in ``echo $?`` followed by a number), else ``None``."""
    for i, (_, s) in enumerate(lines[:-1]):
        if _ECHO_STATUS.search(s):
            nxt = lines[i + 1][1].strip()
            if nxt.isdigit() and len(nxt) <= 3:
                return int(nxt)
    return None


def first_content(lines: list[Line]) -> Line:
    """The first line that is not blank, a rule or a title banner (for error messages)."""
    for no, s in lines:
        if s.strip() and not is_banner(s):
            return no, s
    for no, s in lines:
        if s.strip():
            return no, s
    return (lines[0] if lines else (1, ""))
