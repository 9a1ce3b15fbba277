"""A runaway SMI tool (megabytes a call) no longer grows the GPU record without bound: each sample keeps at most
RAW_SAMPLE_CHARS of the tool's raw output, with a note of what was left out (it once grew a record to 640 MB in 6 s)."""
from __future__ import annotations

import json
import os
import stat
import sys

from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.record.recorder import RAW_SAMPLE_CHARS

PY = sys.executable


def test_a_tool_printing_megabytes_a_call_is_kept_capped(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    tool = bin_dir / "amd-smi"  # generated: 2 MB of output no parser reads, every call
    tool.write_text(f"#!{PY}\nimport sys\nsys.stdout.write('generated ' * 200_000)\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run = launch(spec([PY, "-c", "import time; time.sleep(4)"], gpus_per_node=1), site="laptop", backend="local",
                 runs_dir=tmp_path / "runs", gpu_record_interval=0.5)
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.tail()
    [record] = (run.path / "gpu").glob("*.jsonl")
    samples = [json.loads(line) for line in record.read_text().splitlines()[1:] if line.strip()]
    kept = [s["stdout"] for s in samples if "stdout" in s]
    assert kept, "the recorder kept no sample of the tool's output"
    assert all(len(k) <= RAW_SAMPLE_CHARS + 200 for k in kept)
    assert all("more characters left out" in k for k in kept)
    assert record.stat().st_size < len(samples) * (RAW_SAMPLE_CHARS + 4096) + 65536  # not 2 MB a sample


def test_an_end_time_seen_after_a_controller_outage_does_not_make_the_recorder_end_early(tmp_path):
    """When Slurm had forgotten the job by the time lumikit asked (a controller outage), the run's end time is when
    lumikit saw it, possibly minutes late: the card then ends the window at the last sample and does not blame the
    recorder (generated record; the same manifest without the mark is flagged, so the test can fail)."""
    from datetime import datetime, timedelta

    from lumikit.launch.runfolder import RunFolder
    from lumikit.record.card import card_of_run
    from lumikit.testing.records import write_generated_record

    run = write_generated_record(tmp_path / "run", nodes=1, samples=8)
    m = RunFolder(run).read()
    late = (datetime.fromisoformat(m["end_time"]) + timedelta(minutes=10)).isoformat()
    RunFolder(run).update(end_time=late)
    assert "its recorder ended early" in card_of_run(run).text()
    RunFolder(run).update(end_time_observed=True)
    text = card_of_run(run).text()
    assert "ended early" not in text and "Slurm gave no end time" in text
