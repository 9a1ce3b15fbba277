"""The critical path across ranks: rank 0's wait in each all-reduce leads to the straggler's compute."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.trace.critical_path import critical_path
from lumikit.trace.cross_path import cross_rank_path
from lumikit.trace.loader import load_trace
from lumikit.trace.synth_ranks import RanksSpec, write_straggler_ranks


@pytest.fixture(scope="module")
def straggler_run(tmp_path_factory):
    folder = tmp_path_factory.mktemp("straggler")
    write_straggler_ranks(folder, RanksSpec())
    return folder


def test_rank_0s_path_runs_through_rank_2s_compute(straggler_run):
    result = cross_rank_path(straggler_run, 0, what_if=["2:backward_gemm=1.3", "2:backward_gemm=1000"])
    assert result["by_rank"][2] > 0.5
    assert {f["to_rank"] for f in result["followed"]} == {2}
    top = result["path_events"][0]
    assert (top["rank"], top["category"]) == (2, "gpu_compute_bound") and "backward_gemm" in top["name"]
    # steps 1-5 (the last one left out): 5 x (1 forward + 6 backward + 2 all-reduce + 0.3 optimizer) of GPU work,
    # within the 5 x 9.96 ms of the window (how much host time between them counts is the one-rank path's rule)
    path = result["path_us"]
    assert 5 * 9300 <= path <= 5 * 9960
    # rank 2's backward 1.3x faster: 6 ms -> 4.62 ms, still the slowest: 1.38 ms less per step
    slower, gone = result["what_if"]
    assert path * slower["speedup_pct"] / 100 == pytest.approx(5 * (6000 - 6000 / 1.3), rel=0.01)
    # with rank 2 no slower than the others, rank 0's own path is left: 3 ms less per step
    assert path * gone["speedup_pct"] / 100 == pytest.approx(5 * 3000, rel=0.01)
    assert "rank 2's backward_gemm 1.3x faster -> step" in slower["text"]


def test_one_file_gives_the_one_rank_path_unchanged(straggler_run):
    one = straggler_run / "rank1.trace.json"
    cross = cross_rank_path(one)
    plain = critical_path(load_trace(one)[1].columns)
    assert cross["path_us"] == pytest.approx(plain["path_us"]) and cross["followed"] == []


def test_the_command_line_follows_the_ranks(straggler_run, capsys):
    assert main(["trace", "critical-path", str(straggler_run), "--across-ranks", "--what-if",
                 "2:backward_gemm=1.3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["by_rank"]["2"] > 0.5 and out["what_if"][0]["rank"] == 2
    assert main(["trace", "critical-path", str(straggler_run), "--across-ranks"]) == 0
    text = capsys.readouterr().out
    assert "it waited in 5 collectives for rank 2" in text


def test_a_straggling_data_loader_shows_on_the_other_ranks_path(tmp_path):
    # the other generator: rank 2's data loader is 400 µs slower each step and the others wait in their all-reduce
    from lumikit.trace.synth import SynthSpec, write_synthetic

    write_synthetic(tmp_path, SynthSpec(ranks=4, steps=4, layers=4, straggler=2))
    result = cross_rank_path(tmp_path, 0)
    assert result["by_rank"][2] > 0.5
    loader = [e for e in result["path_events"] if e["rank"] == 2 and e["category"] == "data_loading"]
    assert loader and loader[0]["name"].startswith("enumerate(DataLoader)")
