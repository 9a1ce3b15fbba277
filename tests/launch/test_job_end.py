"""How a local run ends: a hung SMI tool neither holds the job's end for more than one record interval nor
outlives it, and the card of a record without samples says "no samples" (a stand-in amd-smi that hangs, with a
child that hangs too, stands in for a wedged driver; generated, not a reading of a real tool)."""
from __future__ import annotations

import json
import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.launch.states import FINAL
from lumikit.record import card_of_run
from lumikit.testing.hung_tool import hung_smi_tool
from lumikit.testing.processes import processes_with

PY = sys.executable
#: Not whole seconds: the recorder then calls amd-smi per sample (at whole seconds it reads `amd-smi monitor
#: --watch` as a stream, which its stop ends at once), the path a hung call can hold.
INTERVAL_S = 2.5


def hung_tool(bin_dir: Path, marker: str) -> Path:
    """The hanging ``amd-smi``; each start leaves a file in ``bin_dir/started`` so the test knows the recorder ran it."""
    return hung_smi_tool(bin_dir, marker, log_starts=True)


def test_a_hung_smi_tool_ends_with_the_job_within_one_interval_and_leaves_nothing(tmp_path, monkeypatch, capsys):
    marker = f"lumikit-hung-smi-{uuid.uuid4().hex[:12]}"
    bin_dir = tmp_path / marker
    hung_tool(bin_dir, marker)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # the job outlives the recorder's start-up, so its first sample hangs while the job still runs
    job = "import time; time.sleep(4); print(repr(time.time()), flush=True)"
    run = launch(spec([PY, "-c", job], gpus_per_node=1), site="laptop", backend="local",
                 runs_dir=tmp_path / "runs", gpu_record_interval=INTERVAL_S)
    while run.manifest.get("state") not in FINAL:
        time.sleep(0.02)
    ended_seen = time.time()
    assert run.manifest["state"] == "COMPLETED", run.tail()
    assert list((bin_dir / "started").iterdir()), "the recorder never ran the stand-in tool"
    delay = ended_seen - float(run.stdout().strip())
    # the job's end waits one interval for the recorder (a hung tool held it 30 s before); 10x that at most
    assert delay < 10 * INTERVAL_S, f"the job's end was held {delay:.1f} s"
    assert not processes_with(marker), "a process of the hung tool outlived the job"
    m = run.manifest
    assert "GPU recorder had not ended" in m["note"] and "were ended" in m["note"]
    assert main(["status", str(run.path)]) == 0
    assert "GPU recorder had not ended" in capsys.readouterr().out
    text = card_of_run(run.path).text()
    assert "no samples" in text and "findings: none" not in text and "run note: the GPU recorder had not" in text


def test_a_background_process_of_a_rank_ends_with_the_job(tmp_path):
    marker = f"lumikit-left-behind-{uuid.uuid4().hex[:12]}"
    job = ("import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(1000)', "
           f"{marker!r}]); print('started')")
    run = launch(spec([PY, "-c", job]), site="laptop", backend="local", runs_dir=tmp_path / "runs")
    assert run.wait(timeout=60, poll=0.1, progress=False) == "COMPLETED", run.tail()
    assert not processes_with(marker)
    assert "1 process(es) of the job still running after its ranks ended were ended" in run.manifest["note"]
    assert json.loads((run.path / "manifest.json").read_text())["rank_exit_codes"] == [0]


def gone(marker: str, within_s: float = 10.0) -> bool:
    """Whether every process holding ``marker`` has ended within ``within_s`` (a SIGKILLed process takes a moment
    to leave /proc; a process that would outlive its job never does)."""
    deadline = time.monotonic() + within_s
    while processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_one_call_of_a_hung_tool_ends_at_its_deadline_with_its_children(tmp_path):
    from lumikit.smi.sources import CommandSource, UnreadOutput

    marker = f"lumikit-hung-call-{uuid.uuid4().hex[:12]}"
    tool = hung_tool(tmp_path / marker, marker)
    start = time.monotonic()
    with pytest.raises(UnreadOutput) as ended:
        CommandSource([str(tool)], timeout=1.0).read()
    assert ended.value.exit_status == 124  # timeout's convention
    assert time.monotonic() - start < 10  # the deadline is 1 s; the tool would sleep 1000 s
    assert gone(marker)
