"""Per-dispatch outputs: rocprofv3 kernel_trace.csv and rocprof v1 results.json."""
from __future__ import annotations

import json

import pytest

from lumikit.errors import ParseError
from lumikit.rocprof import parse_kernel_trace, parse_rocprof_json, stats_from_durations

TRACE = '''"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp","Workgroup_Size_X","Grid_Size_X"
"KERNEL_DISPATCH","Agent 4",1,0,77,2,9,"void gemm<float>(float*, int)",5,2000,2600,256,4096
"KERNEL_DISPATCH","Agent 4",1,0,77,1,3,"__amd_rocclr_fillBufferAligned",4,1000,1100,256,256
"KERNEL_DISPATCH","Agent 4",1,0,77,3,9,"void gemm<float>(float*, int)",6,3000,3400,256,4096
'''


def test_kernel_trace_rows_are_in_start_order_with_durations_and_classes():
    trace = parse_kernel_trace(TRACE)
    assert list(trace["start_ns"]) == [1000, 2000, 3000]
    assert list(trace["duration_ns"]) == [100, 600, 400]
    assert list(trace["kernel_class"]) == ["memory", "compute", "compute"]
    assert list(trace["agent_id"]) == [4, 4, 4]
    assert trace["grid_size_x"].tolist() == [256, 4096, 4096]


def test_kernel_trace_turns_into_kernel_statistics():
    table = stats_from_durations(parse_kernel_trace(TRACE)[["name", "duration_ns"]])
    top = table.iloc[0]
    assert (top["name"], top["calls"], top["total_ns"]) == ("void gemm<float>(float*, int)", 2, 1000)


def test_a_csv_without_kernel_names_is_refused():
    with pytest.raises(ParseError, match="kernel_trace.csv"):
        parse_kernel_trace('"Name","Calls"\n"x",1\n')


def _rocprof_json(events: list[dict], close: bool = True) -> str:
    """Text shaped like rocprof v1's writer: an empty first event, one event per line, numbers as strings."""
    lines = ['{ "traceEvents":[{}']
    lines += ["," + json.dumps(e, separators=(",", ":")) for e in events]
    return "\n".join(lines) + ('\n],\n"otherData": {\n    "ROCm": "6.0"\n  }\n}' if close else "\n}")


EVENTS = [
    {"args": {"name": "CPU HIP API"}, "ph": "M", "pid": 2, "name": "process_name", "sort_index": 0},
    {"args": {"name": "COPY"}, "ph": "M", "pid": 1, "name": "process_name", "sort_index": 1},
    {"args": {"name": "GPU0"}, "ph": "M", "pid": 6, "name": "process_name", "sort_index": 2},
    {"ph": "X", "name": "hipLaunchKernel", "pid": "2", "tid": "4711", "ts": "10", "dur": "3", "args": {}},
    {"ph": "X", "name": "my_kernel(float*)", "pid": "6", "tid": "0", "ts": "15", "dur": "40", "args": {}},
    {"ph": "X", "name": "CopyHostToDevice", "pid": "6", "tid": "0", "ts": "5", "dur": "2", "args": {}},
    {"ph": "X", "name": "hsa_amd_memory_async_copy", "pid": "1", "tid": "0", "ts": "1", "dur": "1", "args": {}},
]


def test_rocprof_json_events_get_kinds_from_their_process_labels():
    events = parse_rocprof_json(_rocprof_json(EVENTS))
    assert list(events["name"]) == ["hsa_amd_memory_async_copy", "CopyHostToDevice", "hipLaunchKernel",
                                    "my_kernel(float*)"]
    assert list(events["kind"]) == ["copy", "copy", "api", "kernel"]
    assert events["kernel_class"].fillna("-").tolist() == ["memory", "memory", "-", "compute"]
    kernel = events[events["kind"] == "kernel"].iloc[0]
    assert (kernel["ts_us"], kernel["dur_us"], kernel["duration_ns"], kernel["process"]) == (15.0, 40.0, 40000, "GPU0")


def test_rocprof_json_without_its_closing_metadata_is_still_read():
    events = parse_rocprof_json(_rocprof_json(EVENTS, close=False))
    assert len(events) == 4


def test_a_cut_json_file_keeps_its_complete_events_and_says_what_was_dropped():
    text = _rocprof_json(EVENTS)
    cut = text.index('"my_kernel') + 5  # inside the kernel's line
    events = parse_rocprof_json(text[:cut])
    assert list(events["name"]) == ["hipLaunchKernel"]
    assert "cut short" in events.attrs["notes"][0]


def test_a_json_file_cut_in_its_first_line_says_how_to_get_a_whole_one():
    with pytest.raises(ParseError, match="fewer steps"):
        parse_rocprof_json(_rocprof_json(EVENTS)[:12])
