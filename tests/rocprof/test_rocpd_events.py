"""Idle causes and the critical path on rocprofv3 databases, on a generated database whose answers are known by
construction (:mod:`lumikit.testing.rocpd_calls`: one step of HIP calls with their stream and event arguments)."""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.rocprof.rocpd_events import rocpd_trace
from lumikit.testing.rocpd_calls import (COMM, EVENT_1, MAIN, PID, STEP_IDLE_US, STEP_PATH_US, STREAM_A, STREAM_C,
                                        SUFFIX, Call, write_calls_db)
from lumikit.testing.rocprof_outputs import generated_run, write_rocpd_per_process
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.critical_path import critical_path
from lumikit.trace.idle import idle_report

@pytest.fixture
def known_db(tmp_path):
    return write_calls_db(tmp_path / "known_results.db")


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
    # the host's 76 µs between HIP calls count as host_untraced by default; weighed as HTA does (0) here
    result = critical_path(rocpd_trace(known_db)[0].columns, what_if=["gemm_first=2", "hipHostMalloc=2",
                                                                      "hipMalloc=2"], count_untraced_host=False)
    assert result["path_us"] == pytest.approx(STEP_PATH_US)
    assert result["bound_by_us"] == pytest.approx({
        "cpu_bound": 199.0, "data_loading": 0.0, "gpu_compute_bound": 985.0, "gpu_communication_bound": 80.0,
        "gpu_kernel_launch_overhead": 45.0, "gpu_kernel_kernel_overhead": 0.0, "gpu_queue_wait": 0.0,
        "unexplained_wait": 0.0, "host_untraced": 0.0})
    assert critical_path(rocpd_trace(known_db)[0].columns)["bound_by_us"]["host_untraced"] == pytest.approx(76.0)
    # the wait, the stream sync, the device sync (streams A, B, C): 5 edges read from rocpd_arg, none inferred
    assert (result["sync_edges"], result["inferred_edges"]) == (5, 0)
    on_path = {e["name"] for e in result["path_events"]}
    assert {"gemm_first", "gemm_second", COMM, "gemm_third", "loss_kernel", "hipMalloc"} <= on_path
    assert "side_kernel" not in on_path and "hipHostMalloc" not in on_path
    first, helper, malloc = result["what_if"]
    assert first["path_us_after"] == pytest.approx(STEP_PATH_US - 250.0)
    assert helper["speedup_pct"] == 0.0  # off the path: nothing gained
    assert malloc["path_us_after"] == pytest.approx(STEP_PATH_US - 97.5)


def test_without_event_arguments_the_wait_is_inferred_and_the_path_is_wrong(tmp_path):
    """The same calls without the event handles: the wait goes to the last record before it (of the side stream),
    the edge is counted as inferred, and the collective no longer waits for gemm_second. The arguments matter."""
    result = critical_path(rocpd_trace(write_calls_db(tmp_path / "no_events.db", events=False))[0].columns)
    assert result["inferred_edges"] == 1
    assert result["inferred"] == {"hipStreamWaitEvent: event = record's stream, waiting stream = its stream "
                                  "argument": 1}
    assert result["path_us"] < STEP_PATH_US


def test_idle_causes_of_the_known_database_sum_to_the_idle_time(known_db):
    """Gaps by construction: 5 µs queued (the collective was launched long before), 25 µs while the host waited
    in hipStreamSynchronize, 15 µs in hipDeviceSynchronize, 215 µs while the host was in hipMalloc."""
    (report,) = idle_report(TraceAnalyzer(rocpd_trace(known_db)))["ranks"]["0"].values()
    assert report["idle_us"] == pytest.approx(STEP_IDLE_US)
    assert report["causes"] == pytest.approx({"starved: hipMalloc": 215.0, "sync drain: hipStreamSynchronize": 25.0,
                                              "sync drain: hipDeviceSynchronize": 15.0, "queued": 5.0})
    assert sum(report["causes"].values()) == pytest.approx(report["idle_us"])


def test_cli_reads_a_database_for_idle_and_critical_path(known_db, capsys):
    assert main(["trace", "critical-path", str(known_db), "--json", "--what-if", "gemm_first=2",
                 "--no-untraced-host"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["path_us"] == pytest.approx(STEP_PATH_US) and result["what_if"][0]["speedup_pct"] > 0
    assert main(["trace", "idle", str(known_db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["ranks"]["0"]["0"]["idle_us"] == pytest.approx(STEP_IDLE_US)
    assert "rocpd" in report["window"]
    assert main(["trace", "idle", str(known_db)]) == 0
    assert "sync drain: hipStreamSynchronize" in capsys.readouterr().out


def test_a_rank_that_is_not_there_is_named(known_db, capsys):
    assert main(["trace", "idle", str(known_db), "--rank", "3"]) != 0
    assert "rank 3 is not in this rocprofv3 output" in capsys.readouterr().err


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


def test_three_steps_chain_through_the_host_thread(tmp_path):
    """Three steps 1500 µs apart: each step's path up to its last launch (1219 µs: the 1309 less loss_kernel's 85
    and its 10 µs launch delay, plus the launch call's own 5) leads into the next step; the last step adds its
    1309. Between steps the GPU idles 120 µs with nothing traced on the host."""
    trace = rocpd_trace(write_calls_db(tmp_path / "three.db", steps=3))
    assert critical_path(trace[0].columns, count_untraced_host=False)["path_us"] == \
        pytest.approx(2 * 1219.0 + STEP_PATH_US)
    (report,) = idle_report(TraceAnalyzer(trace))["ranks"]["0"].values()
    assert report["idle_us"] == pytest.approx(3 * STEP_IDLE_US + 2 * 120.0)
    assert report["causes"]["starved: nothing traced"] == pytest.approx(2 * 120.0)
    assert report["causes"]["starved: hipMalloc"] == pytest.approx(3 * 215.0)


def test_a_host_that_waits_in_a_device_to_host_copy_is_a_sync_drain(tmp_path):
    """hipMemcpyAsync to pageable memory blocks the host until its copy (rocprofv3's MEMORY_COPY_DEVICE_TO_HOST)
    is done: the 95 µs the GPU then idles, before the next launch, are the copy's sync drain, not launch overhead."""
    calls = (Call(MAIN, "hipLaunchKernel", 0, 5, {"stream": STREAM_A}, ("gemm", STREAM_A, 10, 110)),
             Call(MAIN, "hipMemcpyAsync", 6, 200, {"stream": STREAM_A},
                  ("MEMORY_COPY_DEVICE_TO_HOST", STREAM_A, 110, 120)),
             Call(MAIN, "hipLaunchKernel", 205, 210, {"stream": STREAM_A}, ("next_kernel", STREAM_A, 215, 300)))
    trace = rocpd_trace(write_calls_db(tmp_path / "copy.db", calls=calls, step_us=400))
    assert trace[0].metadata["rocpd"]["copies"] == 1
    (report,) = idle_report(TraceAnalyzer(trace))["ranks"]["0"].values()
    assert report["causes"] == pytest.approx({"sync drain: hipMemcpyAsync": 95.0})
    path = critical_path(trace[0].columns, count_untraced_host=False)
    assert path["sync_edges"] == 1  # the copy's end leads to the end of the call that waited for it
    # launch delay 10, gemm 100, the copy 10 right behind it, the wait back to the host, launch delay 10, 85
    assert path["path_us"] == pytest.approx(10 + 100 + 10 + 10 + 85)


def test_an_event_synchronize_waits_for_the_record_of_its_own_event(tmp_path):
    """hipEventSynchronize(E) after E was recorded on stream A behind a 500 µs kernel and F on stream C behind a
    shorter one: with the event handles the host waits for the long kernel (launch 10 + 500, then launch 10 +
    tail 70 = 590 µs); without them the last record (F) is taken, labelled inferred, and the path is shorter."""
    event_f = "0x5500f0"
    calls = (Call(MAIN, "hipLaunchKernel", 0, 5, {"stream": STREAM_A}, ("long_kernel", STREAM_A, 10, 510)),
             Call(MAIN, "hipEventRecord", 6, 8, {"event": EVENT_1, "stream": STREAM_A}),
             Call(MAIN, "hipLaunchKernel", 9, 10, {"stream": STREAM_C}, ("short_kernel", STREAM_C, 15, 300)),
             Call(MAIN, "hipEventRecord", 10.5, 11, {"event": event_f, "stream": STREAM_C}),
             Call(MAIN, "hipEventSynchronize", 12, 515, {"event": EVENT_1}),
             Call(MAIN, "hipLaunchKernel", 520, 525, {"stream": STREAM_A}, ("tail_kernel", STREAM_A, 530, 600)))
    exact = critical_path(rocpd_trace(write_calls_db(tmp_path / "e.db", calls=calls, step_us=700))[0].columns,
                          count_untraced_host=False)
    assert exact["path_us"] == pytest.approx(10 + 500 + 10 + 70)
    assert (exact["sync_edges"], exact["inferred_edges"]) == (1, 0)
    guessed = critical_path(rocpd_trace(write_calls_db(tmp_path / "g.db", calls=calls, step_us=700,
                                                       events=False))[0].columns)
    assert guessed["inferred"] == {"hipEventSynchronize: event = record's stream": 1}
    assert guessed["path_us"] < exact["path_us"]


@pytest.mark.parametrize("layout", ["track", "timestamp", "develop"])
def test_newer_layouts_give_the_known_path_and_idle_causes(tmp_path, layout, capsys):
    """The known step in the track layout (4.1), the timestamp layout (4.0) and rocprofiler-sdk develop's timestamp
    layout still saying schema_version "3": the same exact path (1309 µs weighed as HTA does, every sync edge from the
    arguments; the 76 µs between HIP calls as host_untraced by default) and the same idle causes as the 3.0 layout, through the command line (generated)."""
    from lumikit.testing.rocpd_layouts import convert_layout

    db = convert_layout(write_calls_db(tmp_path / f"{layout}_results.db"), layout)
    assert main(["trace", "critical-path", str(db), "--json", "--no-untraced-host"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["path_us"] == pytest.approx(STEP_PATH_US)
    assert (result["sync_edges"], result["inferred_edges"]) == (5, 0)
    assert main(["trace", "critical-path", str(db), "--json"]) == 0  # the host's gaps between HIP calls count
    assert json.loads(capsys.readouterr().out)["bound_by_us"]["host_untraced"] == pytest.approx(76.0)
    assert main(["trace", "idle", str(db), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)["ranks"]["0"]["0"]
    assert report["idle_us"] == pytest.approx(STEP_IDLE_US)
    assert report["causes"] == pytest.approx({"starved: hipMalloc": 215.0, "sync drain: hipStreamSynchronize": 25.0,
                                              "sync drain: hipDeviceSynchronize": 15.0, "queued": 5.0})
