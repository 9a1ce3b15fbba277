"""The chunk parser: complete events become columns, whatever phases and value types sit around them."""
from __future__ import annotations

import json

import msgspec
import numpy as np
import pytest

from lumikit.trace import columns
from lumikit.trace.columns import TableBuilder, decode_complete_events, parse_chunk


@pytest.fixture(autouse=True, params=["compiled", "msgspec"])
def reader(request, monkeypatch):
    """Every test here runs with each reader: the compiled one (where built) and msgspec alone."""
    if request.param == "compiled" and columns._fastevents is None:
        pytest.skip("the compiled reader is not built here")
    monkeypatch.setenv("LUMIKIT_COMPILED_READER", "1" if request.param == "compiled" else "0")
    return request.param


def body(*events: dict) -> bytes:
    """An array body as the reader hands it over: events joined by commas, without the brackets."""
    return ",".join(json.dumps(e) for e in events).encode()


KERNEL = {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 0, "ts": 10.0, "dur": 5.0,
          "args": {"stream": 0, "correlation": 7, "External id": 3}}
FLOW = {"ph": "f", "id": 7, "pid": 0, "tid": 0, "ts": 10.0, "cat": "ac2g", "name": "ac2g", "bp": "e"}
META = {"name": "thread_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "stream 0"}}


def test_only_complete_events_become_rows_but_every_event_is_counted():
    chunk = parse_chunk(body(META, KERNEL, FLOW, {**KERNEL, "name": "copy", "ts": 20.0}))
    assert chunk.n_events == 4
    assert [chunk.names[c] for c in chunk.name_code] == ["gemm", "copy"]
    assert chunk.arrays["ts"].tolist() == [10.0, 20.0]
    assert chunk.arrays["correlation"].tolist() == [7, 7]
    assert chunk.arrays["external_id"].tolist() == [3, 3]


@pytest.mark.parametrize("odd", [{"name": "no phase at all", "ts": 1}, {"ph": "Z", "name": "unknown phase"},
                                 {"ph": 5, "name": "numeric phase"}])
def test_events_the_fast_decoder_does_not_know_fall_back_to_the_general_one(odd):
    kept, n_all = decode_complete_events(body(KERNEL, odd, FLOW))
    assert n_all == 3
    assert [e.name for e in kept] == ["gemm"]


def test_every_chrome_phase_takes_the_fast_path():
    # the phases of the Trace Event Format: an event of any of them must not force the general decoder
    events = [{"ph": ph, "name": "e", "pid": 0, "tid": 0, "ts": 1.0} for ph in "BEXiIbnesStTfpPNODMVvRcC()"]
    decoded = columns._FAST_DECODER.decode(b"[" + body(*events) + b"]")
    assert [e.__class__ is columns._Complete for e in decoded].count(True) == 1


def test_stream_ids_mixed_as_hex_strings_ints_and_junk():
    streams = ["0x0", 2, "7", "0x1f", None, [1], "stream?", 2**70, 3.0]
    events = [{**KERNEL, "args": {"stream": s}} for s in streams]
    chunk = parse_chunk(body(*events))
    assert chunk.arrays["stream"].tolist() == [0, 2, 7, 31, -1, -1, -1, -1, 3]


def test_bytes_fall_back_to_size_and_names_that_are_not_strings_are_kept_as_text():
    events = [{**KERNEL, "cat": "gpu_memcpy", "args": {"bytes": 4096}},
              {**KERNEL, "cat": "gpu_memcpy", "args": {"size": 512}},
              {**KERNEL, "name": 42, "args": "not an object"},
              {**KERNEL, "name": ["a", "list"], "cat": None}]
    chunk = parse_chunk(body(*events))
    assert chunk.arrays["bytes"].tolist() == [4096, 512, -1, -1]
    assert [chunk.names[c] for c in chunk.name_code] == ["gemm", "gemm", "42", "['a', 'list']"]
    assert [chunk.cats[c] for c in chunk.cat_code] == ["gpu_memcpy", "gpu_memcpy", "kernel", ""]


def test_broken_json_still_raises_a_decode_error():
    with pytest.raises(msgspec.DecodeError):
        parse_chunk(body(KERNEL)[:-5])


def test_chunks_with_their_own_codes_are_recoded_into_one_table():
    builder = TableBuilder()
    builder.add(parse_chunk(body({**KERNEL, "name": "b", "ts": 2.0}, {**KERNEL, "name": "a", "ts": 1.0})))
    builder.add(parse_chunk(body({**KERNEL, "name": "a", "ts": 0.5}, FLOW)))
    table = builder.build()
    assert table["name"].astype(str).tolist() == ["a", "a", "b"]  # sorted by start time
    assert np.array_equal(table["ts"].to_numpy(), [0.5, 1.0, 2.0])
    assert builder.n_events == 4
