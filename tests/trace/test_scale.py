"""Many ranks: one rank in memory at a time, then one reduction; on Slurm, a job array (lumi-sim)."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.trace import TraceAnalyzer
from lumikit.trace import scale
from lumikit.trace.synth import SynthSpec, write_synthetic


@pytest.fixture(scope="module")
def four_ranks(tmp_path_factory):
    folder = tmp_path_factory.mktemp("four")
    write_synthetic(folder, SynthSpec(ranks=4, steps=3, layers=2, vendor="rocm", straggler=2))
    return folder


def test_streamed_summaries_equal_the_all_at_once_summary(four_ranks, monkeypatch):
    loaded = []
    real = scale.load_trace
    monkeypatch.setattr(scale, "load_trace", lambda *a, **k: loaded.append(k["rank_map"]) or real(*a, **k))
    per_rank = dict(scale.summarise_ranks(four_ranks))
    assert [list(m) for m in loaded] == [[0], [1], [2], [3]]  # one rank per load
    streamed = scale.reduce_summaries(per_rank)
    whole = TraceAnalyzer.from_path(four_ranks).summary()
    assert streamed == whole and streamed["straggler"] == 2


def test_the_command_streams_rank_by_rank(four_ranks, capsys):
    assert main(["trace", "summary", str(four_ranks)]) == 0
    out = capsys.readouterr().out
    assert [line.split(":")[0] for line in out.splitlines() if line.startswith("rank ")] == \
        ["rank 0", "rank 1", "rank 2", "rank 3"]
    assert "straggler: rank 2" in out
    assert main(["trace", "summary", str(four_ranks), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["straggler"] == 2


def test_an_array_task_writes_its_share_of_the_ranks(four_ranks, tmp_path, monkeypatch):
    plan = tmp_path / "plan.json"
    files = {str(r): str(p) for r, p in scale.find_trace_files(four_ranks).items()}
    plan.write_text(json.dumps({"files": files, "tasks": 2, "top": 3, "include_last_step": False,
                                "out": str(tmp_path / "parts")}))
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "1")
    assert scale.main([str(plan)]) == 0
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["rank-1.json", "rank-3.json"]
    assert scale.main([]) == 2


@pytest.mark.slurm
def test_via_slurm_fans_out_as_a_job_array_and_reduces(slurm_cluster, four_ranks, tmp_path, monkeypatch):
    monkeypatch.setenv("LUMIKIT_SITE", "lumi-sim")
    result = scale.summarise_via_slurm(four_ranks, site="lumi-sim", tasks=2, runs_dir=tmp_path, timeout=300,
                                       poll=1.0)
    assert result["via"]["tasks"] == 2 and result["via"]["slurm_job"].isdigit()
    script = (tmp_path / result["via"]["run_folder"] / "job.sbatch").read_text()
    assert "#SBATCH --array=0-1%2" in script
    local = scale.reduce_summaries(dict(scale.summarise_ranks(four_ranks)))
    assert {k: v for k, v in result.items() if k != "via"} == local


@pytest.fixture(scope="module")
def straggler_ranks(tmp_path_factory):
    from lumikit.trace.synth_ranks import RanksSpec, write_straggler_ranks

    folder = tmp_path_factory.mktemp("straggler")
    write_straggler_ranks(folder, RanksSpec())
    return folder


def test_an_array_task_can_read_collective_calls_instead(straggler_ranks, tmp_path, monkeypatch):
    from lumikit.trace.matched import collect_calls

    plan = tmp_path / "plan.json"
    files = {str(r): str(p) for r, p in scale.find_trace_files(straggler_ranks).items()}
    plan.write_text(json.dumps({"files": files, "tasks": 2, "top": 3, "include_last_step": False,
                                "out": str(tmp_path / "parts"), "work": "collectives"}))
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "0")
    assert scale.main([str(plan)]) == 0
    part = json.loads((tmp_path / "parts" / "rank-2.json").read_text())
    assert part == json.loads(json.dumps(collect_calls(straggler_ranks)[2]))  # the same calls as read here


@pytest.mark.slurm
def test_collectives_via_slurm_match_the_same(slurm_cluster, straggler_ranks, tmp_path, monkeypatch):
    from lumikit.trace.matched import collect_calls, match_collectives

    monkeypatch.setenv("LUMIKIT_SITE", "lumi-sim")
    per_rank = scale.calls_via_slurm(straggler_ranks, site="lumi-sim", tasks=2, runs_dir=tmp_path, timeout=300,
                                     poll=1.0)
    assert sorted(per_rank) == [0, 1, 2, 3]
    remote, here = match_collectives(per_rank), match_collectives(collect_calls(straggler_ranks))
    assert remote["stragglers"] == here["stragglers"] and remote["stragglers"][0]["rank"] == 2
