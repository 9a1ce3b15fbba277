"""The optimisation ladder: rungs add up, `lumikit ladder --site laptop` runs one local job that writes ladder.json
(samples/s with spread, speed-up, MFU, memory, a trace per rung) and the table says what it was measured on."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.errors import LumikitError, SpecError
from lumikit.ladder import cumulative_options, ladder_table, parse_rungs, read_ladder
from lumikit.model_estimate import estimate_workload, gcd_peak_flops
from lumikit.trace.loader import load_trace


def test_rungs_are_cumulative_and_a_later_precision_replaces_an_earlier_one():
    assert cumulative_options(parse_rungs("fp32,bf16,channels-last,fp16,compile")) == [
        ("fp32", []),
        ("bf16", ["--precision", "bf16"]),
        ("channels-last", ["--precision", "bf16", "--channels-last"]),
        ("fp16", ["--channels-last", "--precision", "fp16"]),
        ("compile", ["--channels-last", "--precision", "fp16", "--compile"]),
    ]


@pytest.mark.parametrize("text", ["fp32,turbo", "fp32,fp32", ","])
def test_unknown_or_repeated_rungs_are_refused_naming_the_option(text):
    with pytest.raises(SpecError, match="--rungs"):
        parse_rungs(text)


def _generated(rates_by_rung):
    """A ladder.json as the job writes it, with generated rates (labelled so), for the table's wording."""
    rows = []
    for name, values in rates_by_rung:
        ordered = sorted(values)
        rows.append({"rung": name, "samples_per_s": {"median": ordered[len(ordered) // 2], "min": ordered[0],
                                                     "max": ordered[-1], "values": values},
                     "speedup": 1.0, "mfu": 0.01, "peak_tflops": 47.87, "peak_name": "fp32_matrix",
                     "peak_memory_bytes": 2 ** 30, "notes": [], "trace": f"ladder/{name}/trace/rank0.1.pt.trace.json"})
    return {"generated_by": "test (generated rates)", "model": "lm", "size": "tiny", "batch_size": 8,
            "device_type": "cuda", "measured_on": "this GPU (generated)", "repeats": 3, "steps_per_repeat": 2,
            "warmup_steps": 1, "site": "lumi", "rungs": rows}


def test_the_table_calls_overlapping_rates_noise_and_separated_ones_a_gain():
    text = ladder_table(_generated([("fp32", [100, 110, 105]), ("bf16", [104, 112, 99]),
                                    ("compile", [300, 310, 305])]))
    lines = {line.split()[0]: line for line in text.splitlines() if line.split()[:1] in (["fp32"], ["bf16"],
                                                                                        ["compile"])}
    assert "within noise" in lines["bf16"] and "faster, beyond noise" in lines["compile"]
    assert "this GPU (generated)" in text and "1.00 GiB" in lines["fp32"]


def test_a_file_without_rungs_is_refused_with_the_fix(tmp_path):
    (tmp_path / "ladder.json").write_text(json.dumps({"rungs": []}))
    with pytest.raises(LumikitError, match="no rungs with samples/s"):
        read_ladder(tmp_path)
    with pytest.raises(LumikitError, match="no such file; give the ladder.json"):
        read_ladder(tmp_path / "missing")


def test_ladder_on_the_laptop_writes_rates_spread_speedup_mfu_and_a_trace_per_rung(tmp_path, capsys):
    """One local job, three rungs of the tiny language model, a few steps each (tens of seconds here)."""
    rc = main(["ladder", "--site", "laptop", "--rungs", "fp32,bf16,fused", "--steps", "2", "--repeats", "3",
               "--warmup", "1", "--profile-steps", "1", "--runs-dir", str(tmp_path), "--wait", "--quiet"])
    out = capsys.readouterr().out
    assert rc == 0, out
    run = next(p for p in tmp_path.iterdir() if (p / "ladder.json").exists())
    data = read_ladder(run)
    assert [row["rung"] for row in data["rungs"]] == ["fp32", "bf16", "fused"]
    assert data["device_type"] == "cpu" and data["measured_on"].startswith("this CPU (")
    assert data["measured_on"] in out  # the table says where it was measured
    step_flops = estimate_workload("lm", "tiny", 8).step_flops
    base = data["rungs"][0]["samples_per_s"]["median"]
    for row in data["rungs"]:
        rates = row["samples_per_s"]
        assert len(rates["values"]) == 3 and all(v > 0 for v in rates["values"])
        assert rates["min"] <= rates["median"] <= rates["max"]
        assert row["speedup"] == pytest.approx(rates["median"] / base)
        peak = gcd_peak_flops({"fp32": "fp32_matrix", "bf16": "bf16"}[row["precision"]], "laptop")
        assert row["mfu"] == pytest.approx(step_flops * rates["median"] / 8 / peak)
        trace = load_trace(run / row["trace"], workers=1)
        assert trace.rank_ids == [0] and len(trace[0].events) > 0
        assert row["rung"] in out
    assert data["rungs"][0]["speedup"] == 1.0
    assert "lumikit trace diff RUN/ladder/fp32/trace RUN/ladder/bf16/trace" in out
    assert data["rungs"][2]["applied"]["fused_optimizer"] and data["rungs"][2]["applied"]["precision"] in ("bf16",
                                                                                                        "fp32")


@pytest.mark.parametrize("option", [["--steps", "0"], ["--repeats", "0"], ["--warmup", "-1"]])
def test_counts_no_ladder_can_use_are_refused_before_anything_is_submitted(option, tmp_path, capsys):
    assert main(["ladder", "--site", "laptop", "--runs-dir", str(tmp_path), *option]) == 2
    assert f"{option[0]}: must be at least" in capsys.readouterr().err and not list(tmp_path.iterdir())


def test_show_prints_the_table_of_a_ladder_that_ran(tmp_path, capsys):
    (tmp_path / "ladder.json").write_text(json.dumps(_generated([("fp32", [10.0, 11.0, 12.0])])))
    assert main(["ladder", "--show", str(tmp_path)]) == 0
    assert "Rungs are cumulative" in capsys.readouterr().out
    assert main(["ladder", "--show", str(tmp_path / "nothing")]) == 2
    assert "no such file" in capsys.readouterr().err


@pytest.mark.slurm
def test_ladder_on_lumi_sim_is_one_slurm_job_with_the_same_ladder_json(slurm_cluster, tmp_path, capsys):
    """Through the Slurm backend: one job, one task, one GCD asked for; lumi-sim's nodes are CPUs, and say so."""
    rc = main(["ladder", "--site", "lumi-sim", "--rungs", "fp32,bf16,fused", "--steps", "1", "--repeats", "2",
               "--warmup", "0", "--profile-steps", "1", "--runs-dir", str(tmp_path), "--wait", "--quiet",
               "--timeout", "300"])
    out = capsys.readouterr().out
    assert rc == 0, out
    run = next(p for p in tmp_path.iterdir() if (p / "ladder.json").exists())
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["backend"] == "slurm" and manifest["spec"]["gpus_per_node"] == 1
    data = read_ladder(run)
    assert [row["rung"] for row in data["rungs"]] == ["fp32", "bf16", "fused"]
    assert data["measured_on"].startswith("this CPU (") and data["site"] == "lumi-sim"
    assert all(load_trace(run / row["trace"], workers=1).rank_ids == [0] for row in data["rungs"])
