"""Loading traces: ranks, formats, chunking, truncation and salvage."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
import warnings

import pytest

from lumikit.errors import TraceError
from lumikit.trace import loader
from lumikit.trace.loader import find_trace_files, load_trace, rank_from_name
from lumikit.trace.synth import event as x
from lumikit.trace.synth import write_events


def test_rank_comes_from_distributed_info_even_in_compact_json(tmp_path):
    # HTA's regex needs '"rank": N' with a space; compact JSON must still give the right rank
    write_events(tmp_path / "a.json", [x("aten::mm", "cpu_op", 0, 1)], rank=1, compact=True)
    write_events(tmp_path / "b.json", [x("aten::mm", "cpu_op", 0, 1)], rank=0, compact=False)
    files = find_trace_files(tmp_path)
    assert {r: p.name for r, p in files.items()} == {0: "b.json", 1: "a.json"}


@pytest.mark.parametrize("name, rank", [("rank-3.json", 3), ("worker_rank7.pt.trace.json.gz", 7),
                                        ("rank_12.json", 12), ("host.1234.pt.trace.json", None)])
def test_rank_from_file_name(tmp_path, name, rank):
    assert rank_from_name(tmp_path / name) == rank


@pytest.mark.parametrize("name", ["trace_5.json", "benchmark_result_493459_1694039959_trace.json.gz",
                                  "run-2026.pt.trace.json", "frank3.json"])
def test_digits_at_the_end_of_a_name_are_no_rank(tmp_path, name):
    # a time stamp or a job id is not a rank: only an explicit marker (rank3, rank-3) or distributedInfo names one
    assert rank_from_name(tmp_path / name) is None
    path = write_events(tmp_path / name, [x("aten::mm", "cpu_op", 0, 1)])
    assert list(find_trace_files(path)) == [0]


def test_two_files_on_one_rank_is_an_error_unless_mapped(tmp_path):
    a = write_events(tmp_path / "a.json", [x("k", "cpu_op", 0, 1)], rank=0)
    b = write_events(tmp_path / "b.json", [x("k", "cpu_op", 0, 1)], rank=0)
    with pytest.raises(TraceError, match="both claim rank 0.*explicit mapping"):
        find_trace_files(tmp_path)
    assert find_trace_files(tmp_path, rank_map={0: a, 1: b}) == {0: a, 1: b}


def test_non_trace_json_in_the_folder_is_skipped_with_a_warning(tmp_path):
    write_events(tmp_path / "rank0.json", [x("k", "cpu_op", 0, 1)], rank=0)
    (tmp_path / "config.json").write_text('{"lr": 0.1}')
    with pytest.warns(UserWarning, match="config.json: skipped, not a trace"):
        files = find_trace_files(tmp_path)
    assert list(files) == [0]


def test_stream_ids_as_hex_strings_and_integers(tmp_path):
    events = [x("hipLaunchKernel", "cuda_runtime", 0, 5, stream="0x0", correlation=7),
              x("Cijk_gemm", "kernel", 6, 10, pid=2, tid=0, stream=0, correlation=7),
              x("nccl", "kernel", 6, 10, pid=2, tid=3, stream="0x3", correlation=8)]
    table = load_trace(write_events(tmp_path / "t.json", events)).ranks[0].events
    assert table["stream"].tolist() == [0, 0, 3]
    assert table["correlation"].tolist() == [7, 7, 8]


def test_small_chunks_and_parallel_workers_give_the_same_table(rocm_run, monkeypatch):
    whole = load_trace(rocm_run, workers=1)
    monkeypatch.setattr(loader, "CHUNK_BYTES", 8192)  # about 40 chunks per rank
    chunked = load_trace(rocm_run, workers=2)
    for r in (0, 1):
        assert chunked[r].events.equals(whole[r].events)
        assert chunked[r].metadata["distributedInfo"]["rank"] == r
    assert len(whole[0].events) > 300


def test_lambda_braces_in_kernel_names_do_not_split_events(tmp_path, monkeypatch):
    name = "void k<{lambda()#1}, {lambda()#2}>(int), {\"ph\"}"
    events = [x(name, "kernel", i, 1, pid=0, tid=0, stream=0) for i in range(200)]
    path = write_events(tmp_path / "t.json", events)
    monkeypatch.setattr(loader, "CHUNK_BYTES", 1024)
    table = load_trace(path, workers=1)[0].events
    assert len(table) == 200 and set(table["name"].astype(str)) == {name}


def test_gzip_and_plain_files_load_the_same(rocm_run, tmp_path):
    plain = rocm_run / "rank0.synthetic.pt.trace.json"
    packed = tmp_path / "rank0.pt.trace.json.gz"
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    assert load_trace(packed)[0].events.equals(load_trace(plain)[0].events)


def test_truncated_file_says_so_and_salvage_keeps_complete_events(rocm_run, tmp_path):
    data = (rocm_run / "rank0.synthetic.pt.trace.json").read_bytes()
    cut = tmp_path / "rank0.json"
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(TraceError, match="truncated.*salvage=True"):
        load_trace(cut)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        salvaged = load_trace(cut, salvage=True)[0]
    full = load_trace(rocm_run / "rank0.synthetic.pt.trace.json")[0].events
    assert salvaged.truncated
    kept = salvaged.events
    assert 0.4 * len(full) < len(kept) < 0.6 * len(full)
    # the kept events are exactly the first ones of the complete file
    assert kept["ts"].max() <= full["ts"].max()
    assert kept["correlation"].isin(full["correlation"]).all()


def test_truncated_gzip_is_reported_too(rocm_run, tmp_path):
    packed = gzip.compress((rocm_run / "rank1.synthetic.pt.trace.json").read_bytes())
    cut = tmp_path / "rank1.json.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(TraceError, match="truncated"):
        load_trace(cut)


def test_not_a_trace_is_a_clear_error(tmp_path):
    (tmp_path / "x.json").write_text('{"lr": 0.1}')
    with pytest.raises(TraceError, match="not a Chrome/Kineto trace"):
        load_trace(tmp_path / "x.json")


def test_unknown_rank_request_names_the_ranks_found(rocm_run):
    with pytest.raises(TraceError, match=r"rank\(s\) \[5\].*ranks found: \[0, 1\]"):
        load_trace(rocm_run, ranks=[5])


def test_workers_follow_the_cpu_affinity_not_the_node(monkeypatch):
    """A 7-core Open OnDemand session on a 128-thread node: 7 workers, not 8 (or 128)."""
    monkeypatch.setattr(loader.os, "cpu_count", lambda: 128)
    monkeypatch.setattr(loader.os, "sched_getaffinity", lambda pid: set(range(7)), raising=False)
    assert loader.usable_cores() == 7 and loader._default_workers() == 7


@pytest.mark.parametrize("mb, workers, method, reader, expected", [
    (5, 2, "fork", "compiled", False),  # a small trace: forking costs more than it saves
    (80, 2, "fork", "compiled", True),  # the benchmark's 100 MB case: two workers pay (0.13 s against 0.17 s)
    (80, 2, "forkserver", "compiled", False),  # in a Jupyter kernel fresh interpreters cost 0.25 s: alone is faster
    (80, 2, "fork", "msgspec", True),
    (2000, 7, "forkserver", "compiled", True),  # a big trace in a 7-core Open OnDemand session
    (2000, 1, "fork", "compiled", False),  # one core: never a pool
])
def test_parser_processes_start_only_where_they_pay(mb, workers, method, reader, expected):
    assert loader.parallel_pays(int(mb * 1e6), workers, method, reader) is expected


def test_a_small_trace_is_parsed_in_this_process(monkeypatch, rocm_run):
    monkeypatch.setattr(loader, "_pool", lambda workers: pytest.fail("started a pool for a small trace"))
    assert load_trace(rocm_run).rank_ids == [0, 1]


def test_a_threaded_process_does_not_fork_its_parsers(monkeypatch, tmp_path):
    import threading

    import sys

    monkeypatch.setattr(loader, "_threads_in_process", lambda: 1)
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.delitem(sys.modules, "ipykernel", raising=False)
    assert loader.start_method() == "fork"
    monkeypatch.setitem(sys.modules, "ipykernel", object())  # inside a Jupyter kernel
    assert loader.start_method() in ("forkserver", "spawn")
    monkeypatch.delitem(sys.modules, "ipykernel")
    monkeypatch.setattr(loader, "_threads_in_process", lambda: 4)  # another Python thread
    assert loader.start_method() in ("forkserver", "spawn")
    monkeypatch.undo()
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait, daemon=True)
    worker.start()
    try:
        assert loader._threads_in_process() >= 2 and loader.start_method() != "fork"
    finally:
        stop.set()
        worker.join()


def test_columns_come_back_through_the_shared_mapping_when_workers_fork(rocm_run):
    """A fresh process (one thread: fork) parses with two workers; every task's columns arrive as views of the
    shared mapping, and the tables equal a one-process parse."""
    code = """
import sys
from lumikit.trace import handoff, loader
stored = []
load = handoff.SharedColumns.load
def counting(self, item):
    stored.append(isinstance(item, handoff.StoredChunk))
    return load(self, item)
handoff.SharedColumns.load = counting
loader.CHUNK_BYTES = 8192
shared = loader.load_trace(sys.argv[1], workers=2)
whole = loader.load_trace(sys.argv[1], workers=1)
assert all(shared[r].events.equals(whole[r].events) for r in whole.rank_ids)
print(len(stored), all(stored))
"""
    run = subprocess.run([sys.executable, "-c", code, str(rocm_run)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    chunks, all_shared = run.stdout.split()
    assert int(chunks) > 10 and all_shared == "True"


def test_a_parallel_load_leaves_no_thread_behind_so_the_next_one_forks_too(rocm_run):
    """The pool's helper threads are joined before the load returns: one left running would make the next load
    in the same process start its parsers through a forkserver (slower, and it re-imports a script's main)."""
    code = """
import sys, threading
from lumikit.trace import loader
loader.load_trace(sys.argv[1], workers=2)
print(threading.active_count(), loader.start_method())
"""
    run = subprocess.run([sys.executable, "-c", code, str(rocm_run)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["1", "fork"]


def test_tasks_shrink_towards_the_end_of_a_load_so_the_workers_finish_together():
    mb = 1 << 20
    sizes = [loader._batch_bytes(left * mb, workers=2) for left in (300, 64, 32, 16, 8, 4, 2, 1, 0)]
    assert sizes[0] == loader.BATCH_BYTES  # much left: full tasks
    assert sizes == sorted(sizes, reverse=True)  # then smaller and smaller
    assert sizes[-1] == loader.CHUNK_BYTES  # down to one reader chunk, never less


def test_a_task_that_overflows_its_slice_sends_its_arrays_instead():
    from lumikit.trace.columns import parse_chunk
    from lumikit.trace.handoff import ROW_BYTES, SharedColumns, StoredChunk

    chunk = parse_chunk(",".join(json.dumps(x(f"k{i}", "kernel", i, 1, stream=0)) for i in range(50)).encode())
    shared = SharedColumns(1 << 20)
    roomy = shared.reserve(50 * 200)
    (stored,) = shared.store([chunk], roomy)
    assert isinstance(stored, StoredChunk)
    back = shared.load(stored)
    assert back.names == chunk.names and back.name_code.tolist() == chunk.name_code.tolist()
    assert all(back.arrays[c].tolist() == chunk.arrays[c].tolist() for c in chunk.arrays)
    tight = (roomy[0] + roomy[1], 49 * ROW_BYTES)  # room for 49 of the 50 rows
    assert shared.store([chunk], tight) == [chunk]
    del back, stored
    shared.close()


def test_a_rocprof_v1_results_json_beside_a_kineto_trace_is_skipped_and_named(tmp_path):
    # Generated: one Kineto trace without a rank and rocprof v1's results.json (its documented first bytes).
    write_events(tmp_path / "host.pt.trace.json", [x("ProfilerStep#1", "user_annotation", 0, 100, pid=1),
                                                   x("k", "kernel", 5, 2, pid=0, tid=0)])
    (tmp_path / "results.json").write_text('{ "traceEvents":[{}\n,{"ph":"X","pid":6,"tid":1,"name":"copy_kernel",'
                                           '"ts":"1","dur":"2"}\n]}\n')
    with pytest.warns(UserWarning, match="results.json.*rocprof v1.*lumikit rocprof stats"):
        files = find_trace_files(tmp_path)
    assert list(files.values()) == [tmp_path / "host.pt.trace.json"]
