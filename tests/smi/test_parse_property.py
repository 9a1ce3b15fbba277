"""Mutated outputs either parse or raise ParseError: no other exception, no hang (the parsers are bounded)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lumikit.errors import ParseError
from lumikit.smi.parse import parse_smi
from lumikit.smi.sessions import read_session

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])
NOISE = st.text(alphabet=st.sampled_from(list(" \t\n:,%/[](){}\"=-.0123456789WcCMhzN/A\u00b0|+GPUcard")),
                max_size=40)


@st.composite
def mutations(draw: st.DrawFn, texts: list[str]) -> str:
    """A text with a few edits: deletions, insertions, duplicated or dropped lines, a truncation."""
    text = draw(st.sampled_from(texts))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(["insert", "delete", "dup-line", "drop-line", "truncate", "swap-digit"]))
        pos = draw(st.integers(0, max(0, len(text) - 1)))
        if kind == "insert":
            text = text[:pos] + draw(NOISE) + text[pos:]
        elif kind == "delete":
            text = text[:pos] + text[pos + draw(st.integers(1, 30)):]
        elif kind == "truncate":
            text = text[:pos]
        elif kind == "swap-digit":
            text = text[:pos] + draw(st.sampled_from("0123456789xN")) + text[pos + 1:]
        else:
            lines = text.split("\n")
            i = draw(st.integers(0, len(lines) - 1))
            if kind == "dup-line":
                lines.insert(i, lines[i])
            else:
                del lines[i]
            text = "\n".join(lines)
    return text


def _check(text: str) -> None:
    try:
        snap = parse_smi(text, source="mutant")
    except ParseError as err:
        assert err.source == "mutant"
    else:
        assert snap.devices


@lru_cache(maxsize=1)
def _session_texts() -> list[str]:
    return [read_session(n).frames[k].stdout for n in ("single-gcd-training", "ddp-8gcd-starved", "idle-node")
            for k in (0, 20)]


@SETTINGS
@given(data=st.data())
def test_mutated_session_frames(data: st.DataObject) -> None:
    _check(data.draw(mutations(list(_session_texts()))))


@pytest.mark.conformance
@SETTINGS
@given(data=st.data())
def test_mutated_fixtures(smi_dir: Path, data: st.DataObject) -> None:
    texts = [p.read_text(encoding="utf-8") for p in sorted(smi_dir.iterdir())]
    _check(data.draw(mutations(texts)))


@pytest.mark.parametrize("line", ["GPU  Temp" + " x," * 20000, "[" * 50000, "GPU[0] :" + " a:" * 30000,
                                  "MPI 000 - OMP 000 " * 5000, "0, " * 30000 + "NVIDIA"])
def test_hostile_long_lines_are_rejected_or_parsed(line: str) -> None:
    _check(line)
