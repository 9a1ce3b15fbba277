"""Idle causes and the critical path on rocprofv3 databases, on a generated database whose answers are known by
construction (the handle texts in rocpd_arg are made up: they are matched as opaque text)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.rocprof.rocpd_events import rocpd_trace
from lumikit.testing.rocprof_outputs import _SCHEMA, _Db, _create, generated_run, write_rocpd_per_process
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.critical_path import critical_path
from lumikit.trace.idle import idle_report

PID, MAIN, HELPER = 40000, 40000, 40001
A, B, C = "0x7f00a0", "0x7f00b0", "0x7f00c0"  # stream handles: compute, communication, a side stream
E1, E2 = "0x5500e1", "0x5500e2"  # event handles
COMM = "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)"

#: (thread, call, start µs, end µs, arguments, the GPU work it enqueued: (kernel, stream, start µs, end µs))
CALLS = [
    (MAIN, "hipLaunchKernel", 0, 10, {"stream": A}, ("gemm_first", A, 20, 520)),
    (MAIN, "hipLaunchKernel", 12, 22, {"stream": A}, ("gemm_second", A, 520, 820)),
    (MAIN, "hipEventRecord", 24, 26, {"event": E1, "stream": A}, None),
    (MAIN, "hipLaunchKernel", 27, 29, {"stream": C}, ("side_kernel", C, 35, 60)),
    (MAIN, "hipEventRecord", 30, 32, {"event": E2, "stream": C}, None),  # the later record, of another event
    (MAIN, "hipStreamWaitEvent", 33, 35, {"stream": B, "event": E1}, None),
    (MAIN, "hipLaunchKernel", 36, 40, {"stream": B}, (COMM, B, 825, 905)),
    (MAIN, "hipStreamSynchronize", 42, 910, {"stream": B}, None),
    (MAIN, "hipLaunchKernel", 915, 920, {"stream": A}, ("gemm_third", A, 930, 1030)),
    (MAIN, "hipDeviceSynchronize", 921, 1035, {}, None),
    (MAIN, "hipLaunchKernel", 1036, 1040, {"stream": A}, ("norm_kernel", A, 1045, 1100)),
    (MAIN, "hipMalloc", 1105, 1300, {}, None),
    (MAIN, "hipLaunchKernel", 1305, 1310, {"stream": A}, ("loss_kernel", A, 1315, 1400)),
    (HELPER, "hipHostMalloc", 100, 700, {}, None),  # a long call on another thread, off the path
]


SUFFIX = "_00000000_0000_0000_0000_000000000001"


def write_known_db(path: Path, arguments: bool = True, events: bool = True) -> Path:
    """The calls above as rocprofv3 writes them (schema 3): one region per call, one dispatch per kernel, GPU work
    linked to its call by rocpd_event.stack_id; ``rocpd_arg`` rows for the handles (and a function address), all
    of them when ``arguments``, without the event handles when not ``events``."""
    con = sqlite3.connect(path)
    sfx = SUFFIX
    _create(con, sfx, views=True)
    con.execute(f'CREATE TABLE "rocpd_arg{sfx}" (id INTEGER PRIMARY KEY AUTOINCREMENT, guid TEXT NOT NULL, '
                'event_id INTEGER NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL, name TEXT NOT NULL, '
                "value TEXT, extdata JSONB DEFAULT '{}' NOT NULL)")
    assert "rocpd_arg" not in _SCHEMA  # the generator of lumikit.testing has no arguments: added here
    db = _Db(con, sfx, "guid-1")
    db.insert("rocpd_metadata", tag="schema_version", value="3")
    nid = db.insert("rocpd_info_node", hash=1, machine_id="m", system_name="Linux", hostname="nid005001")
    proc = db.insert("rocpd_info_process", nid=nid, ppid=1, pid=PID, start=0, end=2_000_000, command="python t.py")
    threads = {t: db.insert("rocpd_info_thread", nid=nid, ppid=1, pid=proc, tid=t) for t in (MAIN, HELPER)}
    db.insert("rocpd_info_agent", nid=nid, pid=proc, type="CPU", absolute_index=0, logical_index=0, type_index=0)
    gpu = db.insert("rocpd_info_agent", nid=nid, pid=proc, type="GPU", absolute_index=1, logical_index=1,
                    type_index=0, name="gfx90a")
    code = db.insert("rocpd_info_code_object", nid=nid, pid=proc, agent_id=gpu)
    queue = db.insert("rocpd_info_queue", nid=nid, pid=proc, name="queue 0")
    streams = {h: db.insert("rocpd_info_stream", nid=nid, pid=proc, name=f"stream {h}") for h in (A, B, C)}
    for corr, (tid, call, start, end, args, work) in enumerate(CALLS, start=1):
        ev = db.insert("rocpd_event", category_id=db.string("HIP_RUNTIME_API_EXT"), stack_id=corr,
                       parent_stack_id=0, correlation_id=0)  # rocprofv3 writes the external id (0) here
        db.insert("rocpd_region", nid=nid, pid=proc, tid=threads[tid], start=start * 1000, end=end * 1000,
                  name_id=db.string(call), event_id=ev)
        if arguments:
            db.insert("rocpd_arg", event_id=ev, position=0, type="const void*", name="function_address",
                      value="0x1234")
            for pos, (name, value) in enumerate(args.items(), start=1):
                if events or name != "event":
                    db.insert("rocpd_arg", event_id=ev, position=pos, type=f"hip{name.title()}_t", name=name,
                              value=value)
        if work:
            kernel, handle, k0, k1 = work
            sym = db.insert("rocpd_info_kernel_symbol", nid=nid, pid=proc, code_object_id=code, kernel_name=kernel,
                            display_name=kernel)
            kev = db.insert("rocpd_event", category_id=db.string("KERNEL_DISPATCH"), stack_id=corr,
                            parent_stack_id=corr, correlation_id=0)
            db.insert("rocpd_kernel_dispatch", nid=nid, pid=proc, tid=threads[tid], agent_id=gpu, kernel_id=sym,
                      dispatch_id=corr, queue_id=queue, stream_id=streams[handle], start=k0 * 1000, end=k1 * 1000,
                      workgroup_size_x=256, workgroup_size_y=1, workgroup_size_z=1, grid_size_x=1024,
                      grid_size_y=1, grid_size_z=1, event_id=kev)
    con.commit()
    con.close()
    return path


@pytest.fixture
def known_db(tmp_path):
    return write_known_db(tmp_path / "known_results.db")


def test_the_database_becomes_one_rank_with_exact_streams_and_events(known_db):
    trace = rocpd_trace(known_db)
    assert trace.rank_ids == [0]
    meta = trace[0].metadata["rocpd"]
    assert (meta["pid"], meta["host"], meta["link"]) == (PID, "nid005001", "stack_id")
    assert (meta["host_calls"], meta["kernels"], meta["skipped_regions"]) == (14, 7, 0)
    # every call with a stream argument got a stream (the launches taught each handle its stream id)
    assert (meta["calls_with_stream"], meta["calls_with_event"], meta["stream_handles"]) == (11, 3, 3)
    cols = trace[0].columns
    names = cols.labels["name"]
    wait = [i for i in range(len(cols)) if names[cols["name"][i]] == "hipStreamWaitEvent"][0]
    comm = [i for i in range(len(cols)) if names[cols["name"][i]] == COMM][0]
    assert cols["stream"][wait] == cols["stream"][comm] == cols["tid"][comm]  # B, as a stream id
    assert cols["ts"][comm] == pytest.approx(825.0) and cols["dur"][comm] == pytest.approx(80.0)


def test_critical_path_crosses_the_exact_event_wait_and_stream_sync(known_db):
    """By construction: launch 20 + gemm_first 500 + gemm_second 300, the wait edge to the collective (80), the
    stream sync back to the host, launch 15 + gemm_third 100, the device sync, hipLaunchKernel's 4 µs, hipMalloc
    195, launch 10 + loss_kernel 85: 1309 µs. Every sync edge is read from the arguments, none inferred."""
    result = critical_path(rocpd_trace(known_db)[0].columns, what_if=["gemm_first=2", "hipHostMalloc=2",
                                                                      "hipMalloc=2"])
    assert result["path_us"] == pytest.approx(1309.0)
    assert result["bound_by_us"] == pytest.approx({
        "cpu_bound": 199.0, "data_loading": 0.0, "gpu_compute_bound": 985.0, "gpu_communication_bound": 80.0,
        "gpu_kernel_launch_overhead": 45.0, "gpu_kernel_kernel_overhead": 0.0})
    # the wait, the stream sync, the device sync (streams A, B, C): 5 edges read from rocpd_arg, none inferred
    assert (result["sync_edges"], result["inferred_edges"]) == (5, 0)
    on_path = {e["name"] for e in result["path_events"]}
    assert {"gemm_first", "gemm_second", COMM, "gemm_third", "loss_kernel", "hipMalloc"} <= on_path
    assert "side_kernel" not in on_path and "hipHostMalloc" not in on_path
    first, helper, malloc = result["what_if"]
    assert first["path_us_after"] == pytest.approx(1309.0 - 250.0)
    assert helper["speedup_pct"] == 0.0  # off the path: nothing gained
    assert malloc["path_us_after"] == pytest.approx(1309.0 - 97.5)


def test_without_event_arguments_the_wait_is_inferred_and_the_path_is_wrong(tmp_path):
    """The same calls without the event handles: the wait goes to the last record before it (of the side stream),
    the edge is counted as inferred, and the collective no longer waits for gemm_second. The arguments matter."""
    result = critical_path(rocpd_trace(write_known_db(tmp_path / "no_events.db", events=False))[0].columns)
    assert result["inferred_edges"] == 1
    assert result["inferred"] == {"hipStreamWaitEvent: event = record's stream, waiting stream = its stream "
                                  "argument": 1}
    assert result["path_us"] < 1309.0


def test_idle_causes_of_the_known_database_sum_to_the_idle_time(known_db):
    """Gaps by construction: 5 µs queued (the collective was launched long before), 25 µs while the host waited
    in hipStreamSynchronize, 15 µs in hipDeviceSynchronize, 215 µs while the host was in hipMalloc."""
    (report,) = idle_report(TraceAnalyzer(rocpd_trace(known_db)))["ranks"]["0"].values()
    assert report["idle_us"] == pytest.approx(260.0)
    assert report["causes"] == pytest.approx({"starved: hipMalloc": 215.0, "sync drain: hipStreamSynchronize": 25.0,
                                              "sync drain: hipDeviceSynchronize": 15.0, "queued": 5.0})
    assert sum(report["causes"].values()) == pytest.approx(report["idle_us"])


def test_cli_reads_a_database_for_idle_and_critical_path(known_db, capsys):
    assert main(["trace", "critical-path", str(known_db), "--json", "--what-if", "gemm_first=2"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["path_us"] == pytest.approx(1309.0) and result["what_if"][0]["speedup_pct"] > 0
    assert main(["trace", "idle", str(known_db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ranks"]["0"]["0"]["idle_us"] == pytest.approx(260.0)
    assert "rocpd" in report["window"]
    assert main(["trace", "idle", str(known_db)]) == 0
    assert "sync drain: hipStreamSynchronize" in capsys.readouterr().out


def test_a_rank_that_is_not_there_is_named(known_db, capsys):
    assert main(["trace", "idle", str(known_db), "--rank", "3"]) != 0
    assert "rank 3 is not in this rocpd database" in capsys.readouterr().err


def test_generated_multi_process_databases_give_one_rank_per_process_and_causes_that_sum(tmp_path):
    """The generated four-process run of lumikit.testing (no arguments, no syncs): every process a rank, and on
    each device the causes add up to the idle time."""
    files = write_rocpd_per_process(tmp_path, generated_run(nodes=2, processes_per_node=2, steps=2))
    analyzer = TraceAnalyzer(rocpd_trace(files))
    assert analyzer.ranks == [0, 1, 2, 3]
    for devices in idle_report(analyzer)["ranks"].values():
        for d in devices.values():
            assert d["idle_us"] > 0
            assert sum(d["causes"].values()) == pytest.approx(d["idle_us"], rel=0.01)


def test_real_rocpd_databases_in_the_fixtures_give_causes_that_sum_to_the_idle_time(shared_fixtures):
    """Every rocprofv3 database among the shared fixtures: causes sum to the idle time (to 1 %)."""
    found = sorted(Path(shared_fixtures).rglob("*.db"))
    if not found:
        pytest.skip("no real rocpd database among the shared fixtures yet")
    for path in found:
        analyzer = TraceAnalyzer(rocpd_trace(path))
        for devices in idle_report(analyzer)["ranks"].values():
            for d in devices.values():
                assert sum(d["causes"].values()) == pytest.approx(d["idle_us"], rel=0.01, abs=1e-6)


def test_a_kernel_only_database_gives_idle_but_refuses_a_path_naming_the_fix(known_db, capsys):
    """rocprofv3 without --hip-trace: no host side. Idle still splits the gaps (nothing traced on the host);
    the critical path says which option records the calls."""
    con = sqlite3.connect(known_db)
    con.execute(f'DELETE FROM "rocpd_region{SUFFIX}"')
    con.commit()
    con.close()
    assert main(["trace", "idle", str(known_db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["ranks"]["0"]["0"]
    assert set(report["causes"]) == {"starved: nothing traced"}
    assert report["causes"]["starved: nothing traced"] == pytest.approx(report["idle_us"])
    assert main(["trace", "critical-path", str(known_db)]) != 0
    assert "--hip-trace" in capsys.readouterr().err


def test_a_sqlite_file_that_is_not_rocpd_is_named(tmp_path, capsys):
    other = tmp_path / "notes.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE notes (id INTEGER)")
    con.commit()
    con.close()
    assert main(["trace", "idle", str(other)]) != 0
    err = capsys.readouterr().err
    assert "not a rocprofv3 (rocpd) database" in err and "Traceback" not in err


def test_a_folder_of_per_process_databases_is_read_as_ranks(tmp_path, capsys):
    files = write_rocpd_per_process(tmp_path / "run", generated_run(nodes=1, processes_per_node=2, steps=2))
    assert len(files) == 2
    assert main(["trace", "idle", str(tmp_path / "run"), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert sorted(report["ranks"]) == ["0", "1"]


def test_a_dispatch_without_an_end_is_named_as_damage(known_db, capsys):
    con = sqlite3.connect(known_db)
    con.execute(f'UPDATE "rocpd_kernel_dispatch{SUFFIX}" SET "end" = \'x\' WHERE id = 1')
    con.commit()
    con.close()
    assert main(["trace", "critical-path", str(known_db)]) != 0
    err = capsys.readouterr().err
    assert "GPU activities without a time in nanoseconds" in err and "Traceback" not in err
