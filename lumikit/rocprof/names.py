"""Short, readable kernel names for tables and plots (the full name stays in the data).

GPU kernel names are often hundreds of characters of C++ templates or an Itanium-mangled symbol;
a reader needs ``at::native::vectorized_elementwise_kernel``, not the whole signature.
"""
from __future__ import annotations

import re

_CLONE = re.compile(r"\s*\[clone [^\]]*\]\s*$")
_MANGLED_PART = re.compile(r"(\d+)")
#: An anonymous namespace as demanglers write it (``(anonymous namespace)::``, ``{anonymous}::``) or as the mangled
#: name holds it (``_GLOBAL__N_1``): it says nothing to a reader, and dropping the parentheses would leave ``::::``.
_ANONYMOUS = re.compile(r"(?:\(anonymous namespace\)|\{anonymous\}|_GLOBAL__N_\d+)::")


def _mangled_base(symbol: str) -> str | None:
    """The qualified name at the front of an Itanium-mangled symbol (``_ZN2at6native...E``), or None."""
    if symbol.startswith("_ZN"):
        pos, parts = 3, []
        while pos < len(symbol):
            while pos < len(symbol) and symbol[pos] in "KVrL":  # cv-qualifiers and local prefixes
                pos += 1
            m = _MANGLED_PART.match(symbol, pos)
            if not m:
                break
            size = int(m.group(1))
            start = m.end()
            parts.append(symbol[start:start + size])
            pos = start + size
        return "::".join(p for p in parts if not p.startswith("_GLOBAL__N")) or None
    if symbol.startswith("_Z"):
        m = _MANGLED_PART.match(symbol, 2)
        if m:
            return symbol[m.end():m.end() + int(m.group(1))] or None
    return None


def _drop_bracketed(text: str, open_: str, close: str) -> str:
    """Remove every balanced ``open_ ... close`` group (template arguments, parameter lists)."""
    out, depth = [], 0
    for ch in text:
        if ch == open_:
            depth += 1
        elif ch == close and depth:
            depth -= 1
        elif depth == 0:
            out.append(ch)
    return "".join(out)


def short_kernel_name(name: str, width: int = 60) -> str:
    """A kernel's name without return type, template arguments, parameters or clone suffix, cut to ``width``.

    >>> short_kernel_name("void at::native::vectorized_elementwise_kernel<4, Mul<float> >(int, Mul<float>)")
    'at::native::vectorized_elementwise_kernel'
    >>> short_kernel_name("_ZN2at6native6legacy18elementwise_kernelILi512ELi1EEvi")
    'at::native::legacy::elementwise_kernel'
    >>> short_kernel_name("void at::native::(anonymous namespace)::batch_norm_collect_statistics_kernel<float>(int)")
    'at::native::batch_norm_collect_statistics_kernel'
    """
    text = _CLONE.sub("", str(name).strip())
    if text.startswith("_Z"):
        text = _mangled_base(text) or text
    text = _ANONYMOUS.sub("", text)
    text = _drop_bracketed(text, "(", ")")
    text = _drop_bracketed(text, "<", ">").strip()
    if text.startswith("void "):
        text = text[5:].strip()
    text = text or str(name).strip()
    if len(text) > width:
        text = text[: max(width - 1, 1)] + "…"
    return text
