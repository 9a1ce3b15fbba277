"""Streams: one long-lived process gives a reading per interval (how a job's node is watched), and the
stand-in for rocm-smi that lumi-sim's nodes stream."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

from lumikit.errors import LaunchError
from lumikit.smi.sampler import FRAME_END, EndOfSource, Sampler, StreamSource, stream_loop
from lumikit.testing.fake_rocm_smi import READING, reading

FAKE = [sys.executable, "-m", "lumikit.testing.fake_rocm_smi"]


def test_the_stand_in_prints_only_keys_real_rocm_smi_json_prints(shared_fixtures: Path):
    real = json.loads((shared_fixtures / "smi" / "rocm-smi_json_allflags_rx6700xt_rocm612.json").read_text())
    fake = json.loads(reading(8))
    assert len([k for k in fake if k.startswith("card")]) == 8
    assert set(fake["card0"]) <= set(real["card0"])
    assert READING.read_text() == reading(8)  # the file it prints is the generator's (regenerate: --write)


def test_one_process_gives_every_reading_and_cancel_ends_it():
    src = StreamSource(stream_loop(FAKE, 0.05), name="fake")
    try:
        samples = [src.read() for _ in range(3)]
        proc = src._proc
        assert proc is not None and proc.poll() is None  # the same process, still streaming
        assert [len(s.snapshot.devices) for s in samples] == [8, 8, 8]
        assert all(s.exit_status == 0 and s.snapshot.format == "rocm-smi-json" for s in samples)
        assert samples[0].snapshot.device(0).sclk_mhz == 800.0
        assert samples[0].snapshot.timestamp <= samples[2].snapshot.timestamp
    finally:
        t0 = time.monotonic()
        src.cancel()
    assert proc.poll() is not None and time.monotonic() - t0 < 5
    with pytest.raises(EndOfSource):
        src.read()


def test_a_stream_that_fails_at_once_says_why_then_ends():
    src = StreamSource(["bash", "-c", "echo 'srun: error: Unable to create step for job 99: Invalid job id' >&2; exit 1"],
                       name="job 99")
    with pytest.raises(LaunchError, match="status 1 before its first reading: srun: error: Unable to create step"):
        src.read()
    with pytest.raises(EndOfSource):
        src.read()


def test_the_tool_status_travels_with_each_reading():
    src = StreamSource(["bash", "-c", f"{' '.join(FAKE)}; echo '{FRAME_END} 2'"], name="one")
    assert src.read().exit_status == 2
    with pytest.raises(EndOfSource):
        src.read()


def test_a_sampler_over_a_stream_finishes_when_the_stream_ends():
    loop = ["bash", "-c", f"for i in 1 2 3; do {' '.join(FAKE)}; echo '{FRAME_END} 0'; done"]
    sampler = Sampler(StreamSource(loop, name="three"), interval=0.01).start()
    assert sampler.wait(timeout=60)
    assert sampler.state == "finished" and sampler.samples == 3 and sampler.errors == 0
