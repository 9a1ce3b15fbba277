"""Slicing traces for Perfetto, and the ``lumikit trace`` command."""
from __future__ import annotations

import gzip
import json

import pytest

from lumikit.cli import main
from lumikit.errors import TraceError
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.loader import load_trace
from lumikit.trace.slicing import slice_trace, step_window


def test_slice_keeps_the_chosen_steps_metadata_and_gpu_tail(rocm_run, tmp_path):
    out = slice_trace(rocm_run, tmp_path / "cut", steps=(11, 12), ranks=[1])
    assert [p.name for p in out] == ["rank1.slice.pt.trace.json.gz"]
    doc = json.loads(gzip.decompress(out[0].read_bytes()))  # plain JSON: what Perfetto reads
    assert doc["distributedInfo"]["rank"] == 1 and doc["deviceProperties"]
    assert sum(e["ph"] == "M" for e in doc["traceEvents"]) == 6  # every metadata event kept
    a = TraceAnalyzer(load_trace(out[0]))
    assert a.get_profiler_steps() == [11, 12]
    whole = TraceAnalyzer.from_path(rocm_run, ranks=[1])
    # every GPU activity of steps 11-12 is in the slice, even those that end after the host step
    want = whole.gpu(1)[whole.gpu(1)["step"].isin([11, 12])]
    got = a.gpu(1)
    assert len(got[got["step"].isin([11, 12])]) == len(want)


def test_slice_to_one_file_and_refuse_to_overwrite(rocm_run, tmp_path):
    target = tmp_path / "one.json.gz"
    slice_trace(rocm_run, target, steps=(10, 10), ranks=[0])
    with pytest.raises(TraceError, match="exists.*force"):
        slice_trace(rocm_run, target, steps=(10, 10), ranks=[0])
    slice_trace(rocm_run, target, steps=(10, 10), ranks=[0], force=True)
    assert TraceAnalyzer(load_trace(target)).get_profiler_steps() == [10]


def test_a_slice_named_json_is_plain_and_json_gz_is_compressed(rocm_run, tmp_path):
    import orjson

    plain = slice_trace(rocm_run, tmp_path / "one.json", steps=(10, 10), ranks=[0])[0]
    packed = slice_trace(rocm_run, tmp_path / "one.json.gz", steps=(10, 10), ranks=[0])[0]
    assert plain.read_bytes()[:1] == b"{" and packed.read_bytes()[:2] == b"\x1f\x8b"
    assert len(orjson.loads(plain.read_bytes())["traceEvents"]) > 0
    assert TraceAnalyzer(load_trace(plain)).get_profiler_steps() == [10]


def test_slice_by_time_window(rocm_run, tmp_path):
    trace = load_trace(rocm_run, ranks=[0])
    w = step_window(trace, 0, 12, 12)
    out = slice_trace(rocm_run, tmp_path / "w.json.gz", ranks=[0], start_us=w.start, end_us=w.end, trace=trace)
    events = load_trace(out[0])[0].events
    assert events["ts"].min() >= w.start - 2000 and (events["ts"] < w.end).all()


def test_unknown_steps_name_the_steps_that_exist(rocm_run, tmp_path):
    with pytest.raises(TraceError, match="no ProfilerStep in 40-41.*10, 11, 12, 13"):
        slice_trace(rocm_run, tmp_path / "x", steps=(40, 41))


def test_cli_summary_json(rocm_run, capsys):
    assert main(["trace", "summary", str(rocm_run), "--json", "--top", "2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert sorted(out["ranks"]) == ["0", "1"] and out["straggler"] == 1
    r0 = out["ranks"]["0"]
    assert set(r0["kernel_time_us"]) == {"compute", "communication", "memory"}
    assert len(r0["top_kernels"]) == 2 and set(r0["temporal"]) == {"span_us", "idle", "compute", "non_compute"}


def test_cli_summary_text(cuda_run, capsys):
    assert main(["trace", "summary", str(cuda_run)]) == 0
    text = capsys.readouterr().out
    assert "steps: #10" in text and "streams [7, 20]" in text


def test_cli_slice_and_errors(rocm_run, tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["trace", "slice", str(rocm_run), "--steps", "11-12", "--ranks", "0", "-o", str(out)]) == 0
    assert (out / "rank0.slice.pt.trace.json.gz").exists()
    assert main(["trace", "slice", str(rocm_run), "--steps", "11-12", "--ranks", "0", "-o", str(out)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(["trace", "summary", str(tmp_path / "missing.json")]) == 2
