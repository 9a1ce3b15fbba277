"""rocprofv3's JSON and CSV outputs read into the same trace columns as its rocpd database, on the generated step of
HIP calls whose answers are known by construction (:mod:`lumikit.testing.rocpd_calls`). Neither format keeps the
calls' arguments, so each must give exactly what a database without arguments gives."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lumikit.cli import main
from lumikit.rocprof.rocpd import rocpd_kernel_stats
from lumikit.rocprof.rocpd_events import rocpd_databases, rocpd_trace
from lumikit.testing.rocpd_calls import PID, STEP_IDLE_US, write_calls_db
from lumikit.testing.rocprofv3_formats import write_rocprofv3_csv, write_rocprofv3_json
from lumikit.trace.analyses import TraceAnalyzer
from lumikit.trace.critical_path import critical_path
from lumikit.trace.idle import idle_report


@pytest.fixture
def outputs(tmp_path):
    (tmp_path / "db").mkdir()
    return {"db": write_calls_db(tmp_path / "db" / f"{PID}_results.db", steps=3, arguments=False),
            "json": write_rocprofv3_json(tmp_path / f"{PID}_results.json", steps=3),
            "csv": write_rocprofv3_csv(tmp_path / "csv", steps=3)}


def _table(columns):
    names = columns.labels["name"]
    cats = columns.labels["cat"]
    return sorted((names[n], cats[c], round(float(t), 3), round(float(d), 3))
                  for n, c, t, d in zip(columns["name"], columns["cat"], columns["ts"], columns["dur"]))


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_json_and_csv_give_the_columns_and_path_of_a_database_without_arguments(outputs, fmt):
    db, other = rocpd_trace(outputs["db"]), rocpd_trace(outputs[fmt])
    assert other.rank_ids == [0] and other[0].metadata["rocpd"]["pid"] == PID
    assert _table(other[0].columns) == _table(db[0].columns)
    # the work is linked to its call (the correlation id), streams are told apart, and nothing else is known
    meta = other[0].metadata["rocpd"]
    assert (meta["host_calls"], meta["kernels"], meta["calls_with_stream"]) == (42, 21, 0)
    linked = other[0].columns["correlation"][other[0].columns["cat"] >= 2]
    assert (linked > 0).all()
    assert len(np.unique(other[0].columns["stream"][other[0].columns["cat"] >= 2])) == 3
    ours, theirs = critical_path(other[0].columns), critical_path(db[0].columns)
    assert ours["path_us"] == pytest.approx(theirs["path_us"])
    assert ours["bound_by_us"] == pytest.approx(theirs["bound_by_us"])
    (a,) = idle_report(TraceAnalyzer(other))["ranks"]["0"].values()
    (b,) = idle_report(TraceAnalyzer(db))["ranks"]["0"].values()
    assert a["idle_us"] == pytest.approx(b["idle_us"]) and a["causes"] == pytest.approx(b["causes"])
    assert a["idle_us"] >= 3 * STEP_IDLE_US


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_the_commands_read_json_and_csv(outputs, fmt, capsys):
    path = outputs[fmt] if fmt == "json" else outputs[fmt].parent
    assert rocpd_databases(path)
    assert main(["trace", "critical-path", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["path_us"] > 0
    assert main(["trace", "idle", str(path)]) == 0
    assert "GPU idle" in capsys.readouterr().out
    assert main(["rocprof", "stats", str(outputs[fmt]), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = rocpd_kernel_stats(outputs["db"])
    assert sorted((k["name"], k["calls"], k["total_ns"]) for k in printed["kernels"]) == \
        sorted(zip(expected["name"], expected["calls"], expected["total_ns"]))


def test_rocprofv3_json_is_not_taken_for_rocprof_v1(tmp_path, capsys):
    bad = tmp_path / "other.json"
    bad.write_text('{"rocprofiler-sdk-tool": 5}')
    assert main(["trace", "critical-path", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rocprofiler-sdk-tool" in err and "rocprof v1" not in err
    cut = tmp_path / "cut.json"
    cut.write_text(write_rocprofv3_json(tmp_path / "whole.json").read_text()[:500])
    assert main(["rocprof", "stats", str(cut)]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_a_json_output_without_hip_calls_is_refused_for_the_path_naming_the_fix(tmp_path, capsys):
    path = write_rocprofv3_json(tmp_path / "k_results.json")
    doc = json.loads(path.read_text())
    doc["rocprofiler-sdk-tool"][0]["buffer_records"]["hip_api"] = []
    path.write_text(json.dumps(doc))
    assert main(["trace", "critical-path", str(path)]) == 2
    assert "--hip-trace" in capsys.readouterr().err


@pytest.mark.parametrize("damage", [
    lambda p: p.update(buffer_records={"hip_api": [1, "x", None, {"start_timestamp": "soon"}]}),
    lambda p: p["buffer_records"]["kernel_dispatch"].append({"start_timestamp": 1e999, "end_timestamp": -5}),
    lambda p: p["buffer_records"]["hip_api"].append({"kind": 10**30, "operation": -7, "correlation_id": [1],
                                                     "start_timestamp": 5, "end_timestamp": 6, "thread_id": {}}),
    lambda p: p.update(strings={"buffer_records": {"not": "a list"}}, agents="none", kernel_symbols=7),
    lambda p: p["buffer_records"]["kernel_dispatch"][0].update(dispatch_info=None, correlation_id="x"),
    lambda p: p.update(metadata=[], buffer_records=None),
], ids=["junk calls", "infinite times", "absurd ids", "wrong tables", "broken dispatch", "no records"])
def test_a_damaged_json_output_is_read_or_refused_in_one_line(tmp_path, damage, capsys):
    path = write_rocprofv3_json(tmp_path / f"{PID}_results.json")
    doc = json.loads(path.read_text())
    damage(doc["rocprofiler-sdk-tool"][0])
    path.write_text(json.dumps(doc).replace("Infinity", "1e999"))
    for command in (["trace", "critical-path"], ["trace", "idle"], ["rocprof", "stats"]):
        rc = main(command + [str(path)])
        err = capsys.readouterr().err
        assert rc in (0, 2) and err.count("\n") <= 1 and "Traceback" not in err, (command, err)
