"""Every picture drawn from generated data says so in the image itself (a corner mark, a text artist of the
figure), and a picture of real data does not: one example of each per plotting wing."""
from __future__ import annotations

import pytest

from lumikit import reference
from lumikit.logs.collbench import GENERATED_MARK, parse_collbench, synthesize
from lumikit.logs.plots import plot_busbw
from lumikit.plotting import figure, is_marked_generated, mark_generated
from lumikit.smi import load_session, parse_smi
from lumikit.smi.plots import node_map, timeline
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.plots import (idle_chart, kernel_breakdown_bars, overlap_chart, step_timeline, temporal_bars)
from lumikit.trace.synth import SynthSpec, is_generated, write_synthetic


def _texts(fig) -> list[str]:
    return [t.get_text() for t in fig.texts]


def test_the_mark_is_a_text_of_the_figure_and_is_written_once() -> None:
    fig = figure(figsize=(3, 2))
    ax = fig.add_subplot()
    assert not is_marked_generated(fig)
    mark_generated(ax, "trace")
    mark_generated(fig, "trace")
    assert _texts(fig) == ["generated trace"] and is_marked_generated(fig)


@pytest.fixture(scope="module")
def generated_trace(tmp_path_factory: pytest.TempPathFactory) -> TraceAnalyzer:
    folder = tmp_path_factory.mktemp("synth")
    write_synthetic(folder, SynthSpec(ranks=2, steps=2, layers=1))
    return TraceAnalyzer.from_path(folder)


@pytest.fixture(scope="module")
def real_trace() -> TraceAnalyzer:
    return TraceAnalyzer.from_path(reference.load("trace-mi250").file_path)


def test_trace_pictures_of_a_generated_trace_are_marked(generated_trace: TraceAnalyzer) -> None:
    assert is_generated(generated_trace)
    for fig in (kernel_breakdown_bars(generated_trace), step_timeline(generated_trace, 0),
                temporal_bars(generated_trace), overlap_chart(generated_trace), idle_chart(generated_trace)):
        assert "generated trace" in _texts(fig), fig.axes[0].get_title()


def test_trace_pictures_of_a_real_trace_are_not(real_trace: TraceAnalyzer) -> None:
    assert not is_generated(real_trace)
    rank = real_trace.ranks[0]
    for fig in (kernel_breakdown_bars(real_trace), step_timeline(real_trace, rank), temporal_bars(real_trace)):
        assert not is_marked_generated(fig) and not any("generated" in t for t in _texts(fig))


def test_smi_pictures_of_a_generated_session_are_marked_and_of_a_real_table_not() -> None:
    snaps = load_session("ddp-8gcd-starved")
    assert "generated session" in _texts(timeline(snaps)) and "generated session" in _texts(node_map(snaps[-1]))
    real = parse_smi(reference.load("rocm-smi-one-gcd-busy").file_path.read_text(encoding="utf-8"))
    assert not is_marked_generated(timeline([real])) and not is_marked_generated(node_map(real))


def test_a_table_says_generated_only_when_told() -> None:
    from lumikit.smi import tidy

    table = tidy(load_session("ddp-8gcd-starved")[:3])
    assert not is_marked_generated(timeline(table)) and is_marked_generated(timeline(table, generated=True))


def test_rccl_tests_plot_is_marked_when_an_output_is_generated() -> None:
    text = synthesize((0, 1))
    as_the_tool_prints = "\n".join(line for line in text.splitlines() if GENERATED_MARK not in line)
    assert "generated rccl-tests output" in _texts(plot_busbw({"0+1": parse_collbench(text)}))
    assert not is_marked_generated(plot_busbw({"0+1": parse_collbench(as_the_tool_prints)}))
