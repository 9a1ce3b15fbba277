"""What a file looks like, from its first bytes: so a reader that refuses a file can say what it is instead.

``lumikit smi parse`` given a profiler trace should not answer "not a format I know" but "this is a Chrome trace;
read it with ``lumikit trace summary``". Every rule here looks at a short head of the text (no pattern runs over
more than :data:`HEAD_CHARS` characters), so sniffing costs the same for a 10 GB file as for a small one.
"""
from __future__ import annotations

import re

HEAD_CHARS = 8192

# (what the file looks like, the command that reads it, a test on the head of the text); first match wins.
_RULES: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    ("a lumikit GPU session recording", "lumikit smi watch --replay FILE",
     re.compile(r'^\s*\{[^\n]{0,2000}"format"\s*:\s*"lumikit-smi-session"')),
    ("rocprof v1's results.json", "lumikit rocprof stats FILE",
     re.compile(r'^\s*\{\s*"traceEvents"\s*:\s*\[\s*\{\s*\}')),
    ("a Chrome/Kineto profiler trace", "lumikit trace summary FILE",
     re.compile(r'^\s*(?:\{[\s\S]{0,4000}?"traceEvents"|\[\s*\{\s*"(?:ph|name|cat|pid|ts)"\s*:)')),
    ("a rocprof statistics CSV", "lumikit rocprof stats FILE",
     re.compile(r'^[ \t]*"?Name"?[ \t]*,[ \t]*"?Calls"?[ \t]*,', re.MULTILINE)),
    ("a rocprofv3 kernel trace CSV", "lumikit rocprof stats FILE", re.compile(r'"?Kernel_Name"?\s*,')),
    ("a HIP runtime log (AMD_LOG_LEVEL)", "lumikit logs hip FILE",
     re.compile(r"^:\d:[\w.]{1,80}\s{0,40}:\s{0,10}\d{1,8}\s{0,10}:", re.MULTILINE)),
    ("an RCCL/NCCL debug log", "lumikit logs rccl FILE", re.compile(r"\bNCCL (?:INFO|WARN)\b")),
    ("a training log with progress bars", "lumikit logs progress FILE",
     re.compile(r"\d{1,3}%\|[^|\n]{0,200}\|\s{0,5}\d{1,12}/\d{1,12}")),
    ("GPU tool output (rocm-smi / amd-smi / nvidia-smi)", "lumikit smi parse FILE",
     re.compile(r"ROCm System Management Interface|AMD-SMI|^[ \t]*GPU[ \t]+(?:XCP[ \t]+)?POWER\b|GPU\[\d{1,4}\]\s{0,8}:"
                r"|\bcard\d{1,4}\b", re.MULTILINE)),
)


def looks_like(text: str | bytes) -> tuple[str, str] | None:
    """(what ``text`` looks like, the command that reads it), from its head; None when nothing fits."""
    if isinstance(text, bytes):
        head_bytes = text[:HEAD_CHARS]
        if head_bytes[:2] == b"\x1f\x8b":
            return "gzip-compressed data", "gunzip it first (traces may stay .json.gz: lumikit trace summary FILE)"
        if b"\0" in head_bytes:
            return "binary data", "give a text output of the tool"
        text = head_bytes.decode("utf-8", errors="replace")
    head = text[:HEAD_CHARS]
    if "\0" in head:
        return "binary data", "give a text output of the tool"
    for what, command, pattern in _RULES:
        if pattern.search(head):
            return what, command
    return None


def looks_like_sentence(text: str | bytes, *, unless: str = "") -> str:
    """``"; it looks like X (read it with CMD)"`` for a refusal message, or ``""`` when nothing fits or the
    file looks like ``unless`` (the format the refusing reader itself reads)."""
    found = looks_like(text)
    if found is None or (unless and unless in found[0]):
        return ""
    what, command = found
    return f"; it looks like {what} (read it with `{command}`)" if command.startswith("lumikit") else \
        f"; it looks like {what} ({command})"
