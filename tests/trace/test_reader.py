"""The streaming reader and the chunk parser: byte ranges for workers, odd field values, broken events."""
from __future__ import annotations

import gzip
import json
from itertools import pairwise

import orjson
import pytest

from lumikit.errors import TraceError
from lumikit.trace import loader
from lumikit.trace.columns import parse_chunk
from lumikit.trace.loader import load_trace
from lumikit.trace.reader import FileRange, TraceStream
from lumikit.trace.synth import event as x
from lumikit.trace.synth import write_events


def _events(pieces) -> list[dict]:
    out = []
    for p in pieces:
        body = p.read() if isinstance(p, FileRange) else p
        out += orjson.loads(b"[" + body + b"]")
    return out


def test_plain_files_are_cut_into_byte_ranges_of_whole_events(rocm_run):
    path = rocm_run / "rank0.synthetic.pt.trace.json"
    pieces = list(TraceStream(path, chunk_bytes=4096).pieces())
    ranges = [p for p in pieces if isinstance(p, FileRange)]
    assert len(ranges) > 10 and len(ranges) == len(pieces)  # the last events too: no bytes go through the pool
    # consecutive, each ends with a closing brace, and the events are exactly those of the whole file
    assert all(a.stop <= b.start for a, b in pairwise(ranges))
    assert all(r.read().endswith(b"}") for r in ranges)
    assert _events(pieces) == json.loads(path.read_text())["traceEvents"]


def test_gzip_files_are_streamed_as_bytes(cuda_run):
    path = next(cuda_run.glob("*.json.gz"))
    pieces = list(TraceStream(path, chunk_bytes=4096).pieces())
    assert all(isinstance(p, bytes) for p in pieces)
    assert _events(pieces) == json.loads(gzip.decompress(path.read_bytes()))["traceEvents"]


def test_kernel_names_with_braces_never_start_a_byte_range(tmp_path):
    name = 'void k<{lambda()#1}, {lambda()#2}>(int), {"ph"}'
    path = write_events(tmp_path / "t.json", [x(name, "kernel", i, 1, pid=0, tid=0, stream=0)
                                              for i in range(300)])
    pieces = list(TraceStream(path, chunk_bytes=2048).pieces())
    assert sum(isinstance(p, FileRange) for p in pieces) > 5
    assert [e["name"] for e in _events(pieces)] == [name] * 300


def test_truncated_plain_file_with_small_chunks_salvages_the_complete_events(rocm_run, tmp_path, monkeypatch):
    data = (rocm_run / "rank1.synthetic.pt.trace.json").read_bytes()
    cut = tmp_path / "rank1.json"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    monkeypatch.setattr(loader, "CHUNK_BYTES", 4096)
    with pytest.raises(TraceError, match="truncated"):
        load_trace(cut, workers=1)
    with pytest.warns(UserWarning, match="truncated trace, kept"):
        salvaged = load_trace(cut, salvage=True, workers=2)[1]
    full = load_trace(rocm_run / "rank1.synthetic.pt.trace.json")[1].events
    assert 0.6 * len(full) < len(salvaged.events) < 0.8 * len(full)


def test_odd_field_values_are_read_like_the_profilers_mean_them():
    events = [
        {"ph": "X", "name": "k1", "cat": "kernel", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2,
         "args": {"stream": "0x0", "correlation": 5, "External id": 3, "bytes": 64, "size": 10}},
        {"ph": "X", "name": "k2", "pid": "Spans", "tid": 1, "ts": "3.25", "dur": "4",
         "args": {"stream": "0x1f", "correlation": "12", "size": 99}},
        {"ph": "X", "name": "k3", "cat": None, "ts": 5, "args": [1, 2]},  # args not an object: no args
        {"ph": "X", "name": "k4", "cat": "kernel", "pid": 1, "tid": 2, "ts": 6, "dur": 1,
         "args": {"stream": 7, "bytes": 2**70, "External id": "007"}},
        {"ph": "i", "name": "instant", "pid": 0, "tid": 0, "ts": 1},
        {"ph": "s", "id": 5, "pid": 0, "tid": 0, "ts": 1, "cat": "ac2g", "name": "ac2g"},
    ]
    chunk = parse_chunk(json.dumps(events)[1:-1].encode())
    assert chunk.n_events == 6 and len(chunk) == 4
    assert [chunk.names[c] for c in chunk.name_code] == ["k1", "k2", "k3", "k4"]
    assert [chunk.cats[c] for c in chunk.cat_code] == ["kernel", "", "", "kernel"]
    a = {k: v.tolist() for k, v in chunk.arrays.items()}
    assert a["pid"] == [0, -1, -1, 1]
    assert a["ts"] == [1.5, 3.25, 5.0, 6.0] and a["dur"] == [2.0, 4.0, 0.0, 1.0]
    assert a["stream"] == [0, 31, -1, 7]
    assert a["correlation"] == [5, 12, -1, -1]
    assert a["external_id"] == [3, -1, -1, 7]
    assert a["bytes"] == [64, 99, -1, -1]  # "bytes" first, else "size"; beyond 64 bits counts as missing


def test_an_event_that_is_not_an_object_is_a_clear_error(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [{"ph": "X", "name": "k", "ts": 1}, 5, {"ph": "X", "name": "k", "ts": 2}, '
                    '{"ph": "X", "name": "k", "ts": 3}]}')
    with pytest.raises(TraceError, match=r"t.json: malformed trace events .*\$\[1\]"):
        load_trace(path)


@pytest.mark.parametrize("indent", [None, 1])
def test_keys_after_the_events_may_hold_arrays_of_objects(tmp_path, indent):
    # Generated: a valid trace whose trailing keys hold arrays of objects that look like events ("name" first).
    events = [x("k1", "kernel", 1.0, 2.0, pid=0, tid=0), x("k2", "kernel", 4.0, 2.0, pid=0, tid=0)]
    trailer = {"deviceProperties": [{"name": "AMD Instinct MI250X", "id": 0}, {"name": "AMD Instinct MI250X", "id": 1}],
               "traceName": "rank0"}
    path = tmp_path / "trailing.pt.trace.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events, **trailer}, indent=indent))
    stream = TraceStream(path)
    assert [e["name"] for e in _events(stream.pieces())] == ["k1", "k2"]
    assert stream.metadata["deviceProperties"] == trailer["deviceProperties"]
    assert len(load_trace(path)[0].columns) == 2
