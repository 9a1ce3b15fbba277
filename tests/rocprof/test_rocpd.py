"""rocprofv3's rocpd databases (ROCm 7's default output), built from the documented schema with known contents."""
from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from lumikit.cli import main
from lumikit.errors import LumikitError, ParseError
from lumikit.rocprof import rocprof_kernels
from lumikit.rocprof.outputs import activities, find_outputs
from lumikit.rocprof.rocpd import read_rocpd, rocpd_kernel_stats, rocpd_totals, suffixes
from lumikit.testing import rocprof_outputs as gen

RUN = gen.generated_run(nodes=2, processes_per_node=2, steps=4)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rocpd")
    per_process = gen.write_rocpd_per_process(root / "db", RUN)
    merged = gen.write_rocpd(root / "merged_results.db", RUN, merged=True)
    gen.write_kernel_traces(root / "csv", RUN)
    return {"root": root, "per_process": per_process, "merged": merged, "csv": root / "csv"}


def ranking(table):
    return [(r["name"], int(r["calls"]), float(r["total_ns"])) for _, r in table.iterrows()]


def test_the_generated_databases_have_the_documented_layout(outputs):
    con = sqlite3.connect(outputs["per_process"][0])
    names = {n for (n,) in con.execute("SELECT name FROM sqlite_master")}
    (sfx,) = suffixes(con)
    assert len(sfx) == 37 and f"rocpd_kernel_dispatch{sfx}" in names and "rocpd_kernel_dispatch" in names
    assert con.execute("SELECT value FROM rocpd_metadata WHERE tag = 'schema_version'").fetchone() == ("3",)
    merged = sqlite3.connect(outputs["merged"])
    assert len(suffixes(merged)) == 4  # one suffix (and guid) per process, no views


def test_known_contents_of_four_processes_on_two_nodes(outputs):
    acts = read_rocpd(outputs["per_process"])
    s = acts.summary()
    assert (s["kernels"]["count"], s["copies"]["count"], s["api"]["count"], s["processes"]) == (80, 16, 96, 4)
    assert s["nodes"] == ["nid005001", "nid005002"]
    assert s["copies"]["bytes"] == 16 * (4 << 20)
    assert s["kernels"]["total_ns"] == sum(d.end - d.start for d in RUN.dispatches)
    k = acts.kernels
    assert sorted(k.groupby(["hostname", "pid"]).size().to_dict().items()) == [
        (("nid005001", 40000), 20), (("nid005001", 40001), 20), (("nid005002", 40100), 20),
        (("nid005002", 40101), 20)]
    assert set(k.loc[k["pid"] == 40001, "gpu_index"]) == {1}  # process 1 of each node drives GCD 1
    assert (k["kernel_class"] == "communication").sum() == 16
    assert set(acts.copies["src_type"]) == {"CPU"} and set(acts.copies["dst_type"]) == {"GPU"}
    assert set(acts.api["category"]) == {"HIP_RUNTIME_API_EXT"}
    assert set(acts.api.loc[acts.api["pid"] == 40100, "tid"]) == {40100}


def test_merged_and_per_process_databases_rank_like_the_csv_twin(outputs):
    csv = ranking(rocprof_kernels(outputs["csv"]))
    assert len(csv) == 5
    assert ranking(rocprof_kernels(outputs["merged"])) == csv
    assert ranking(rocprof_kernels(outputs["root"] / "db")) == csv


def test_cli_stats_on_a_multi_process_database_prints_the_csv_ranking(outputs, capsys):
    assert main(["rocprof", "stats", str(outputs["merged"]), "--json", "--top", "0"]) == 0
    db = json.loads(capsys.readouterr().out)
    assert main(["rocprof", "stats", str(outputs["csv"]), "--json", "--top", "0"]) == 0
    csv = json.loads(capsys.readouterr().out)
    assert [(k["name"], k["calls"], k["total_ns"]) for k in db["kernels"]] == \
           [(k["name"], k["calls"], k["total_ns"]) for k in csv["kernels"]]
    assert db["classes"] == csv["classes"]
    assert main(["rocprof", "stats", str(outputs["merged"])]) == 0
    out = capsys.readouterr().out
    assert "5 kernels, 1.738 ms of GPU time" in out and "ncclDevKernel_Generic" in out


def test_cli_summary_names_processes_nodes_copies_and_api(outputs, capsys):
    assert main(["rocprof", "summary", str(outputs["root"] / "db")]) == 0
    out = capsys.readouterr().out
    assert "4 processes on 2 nodes (nid005001, nid005002)" in out
    assert "memory copies: 16 in 1 names" in out and "64.0 MiB" in out
    assert "API calls: 96 in 2 names" in out and "hipLaunchKernel" in out
    assert main(["rocprof", "summary", str(outputs["merged"]), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["top"]["kernels"][0]["name"].startswith("Cijk_") and report["api"]["count"] == 96


def test_a_folder_finds_the_databases(outputs):
    found = find_outputs(outputs["root"] / "db")
    assert len(found.databases) == 4
    assert activities(outputs["root"] / "db").summary()["processes"] == 4


def test_unsuffixed_tables_are_read_too(tmp_path):
    path = tmp_path / "plain_results.db"
    con = sqlite3.connect(path)
    gen._create(con, "", views=False)
    one = RUN.of("nid005001", 40000)
    gen._fill(gen._Db(con, "", guid="g"), one, "nid005001", 40000, 0)
    con.commit()
    con.close()
    assert read_rocpd(path).summary()["kernels"]["count"] == 20


def test_bad_inputs_say_what_to_do(tmp_path, capsys):
    text = tmp_path / "1_results.db"
    text.write_text("hello")
    with pytest.raises(ParseError, match="not a SQLite database.*--output-format csv"):
        read_rocpd(text)
    other = tmp_path / "2_results.db"
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(ParseError, match="not a rocprofv3 \\(rocpd\\) database"):
        read_rocpd(other)
    cut = tmp_path / "3_results.db"
    con = sqlite3.connect(cut)
    con.execute('CREATE TABLE "rocpd_kernel_dispatch_ab" (id, guid)')
    con.commit()
    with pytest.raises(ParseError, match="rocpd_info_kernel_symbol_ab is missing"):
        read_rocpd(cut)
    with pytest.raises(ParseError, match="rocpd_info_kernel_symbol_ab is missing"):
        rocpd_kernel_stats(cut)
    with pytest.raises(LumikitError, match="no such file"):
        read_rocpd(tmp_path / "absent.db")
    assert main(["rocprof", "stats", str(text)]) == 2
    assert "not a SQLite database" in capsys.readouterr().err


def _one_process_db(path, edit):
    """A one-process database (generated) changed by ``edit(con, suffix)`` before it is closed."""
    gen.write_rocpd(path, RUN.of("nid005001", 40000))
    con = sqlite3.connect(path)
    (sfx,) = suffixes(con)
    edit(con, sfx)
    con.commit()
    con.close()
    return path


def test_sql_statistics_equal_the_per_row_ones_across_many_attached_databases(tmp_path):
    run = gen.generated_run(nodes=3, processes_per_node=4, steps=3)  # 12 databases: more than one ATTACH batch
    files = gen.write_rocpd_per_process(tmp_path, run)
    assert len(files) == 12
    sql = rocpd_kernel_stats(files)
    rows = read_rocpd(files).kernel_stats()
    assert ranking(sql) == ranking(rows)
    for col in ("average_ns", "min_ns", "max_ns", "stddev_ns", "percent"):
        assert sql[col].to_numpy() == pytest.approx(rows[col].to_numpy(), rel=1e-9, abs=1e-6)
    assert list(sql["kernel_class"]) == list(rows["kernel_class"])
    assert sql.attrs["notes"] == [] and sql.attrs["generation"] == "v3 rocpd"


def test_totals_per_agent_and_per_process_are_added_up_in_sqlite(outputs):
    kernels = read_rocpd(outputs["merged"]).kernels
    per_agent = rocpd_totals(outputs["merged"], by="agent")
    expected = kernels.groupby(["hostname", "pid", "agent_id", "gpu_index"])["duration_ns"].agg(["count", "sum"])
    assert [(r.hostname, r.pid, r.agent_id, r.gpu_index, r.calls, r.total_ns) for r in per_agent.itertuples()] == \
        [(*k, c, float(t)) for k, (c, t) in expected.iterrows()]
    per_process = rocpd_totals(outputs["per_process"], by="process")
    assert list(per_process["calls"]) == [20, 20, 20, 20]
    assert list(per_process["pid"]) == [40000, 40001, 40100, 40101]
    with pytest.raises(LumikitError, match="give 'agent' or 'process'"):
        rocpd_totals(outputs["merged"], by="node")


def test_a_database_without_optional_tables_is_read(tmp_path, capsys):
    def drop(con, sfx):
        for t in ("rocpd_memory_copy", "rocpd_region", "rocpd_info_thread"):
            con.execute(f'DROP VIEW "{t}"')
            con.execute(f'DROP TABLE "{t}{sfx}"')
    path = _one_process_db(tmp_path / "1_results.db", drop)
    acts = read_rocpd(path)
    assert (len(acts.kernels), len(acts.copies), len(acts.api)) == (20, 0, 0)
    assert any("rocpd_memory_copy_" in n and "read as empty" in n for n in acts.notes)
    assert rocpd_kernel_stats(path)["calls"].sum() == 20
    assert main(["rocprof", "summary", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kernels"]["count"] == 20 and report["copies"]["count"] == 0


def test_an_unknown_schema_version_is_flagged(tmp_path, capsys):
    def bump(con, sfx):
        con.execute(f"UPDATE \"rocpd_metadata{sfx}\" SET value = '7' WHERE tag = 'schema_version'")
    path = _one_process_db(tmp_path / "1_results.db", bump)
    (note,) = rocpd_kernel_stats(path).attrs["notes"]
    assert "schema version '7' is not one this reader knows (3, 4)" in note
    assert any("schema version '7'" in n for n in read_rocpd(path).notes)
    assert main(["rocprof", "stats", str(path)]) == 0
    assert "note: " in capsys.readouterr().out


def test_negative_durations_are_flagged(tmp_path, capsys):
    def swap(con, sfx):
        con.execute(f'UPDATE "rocpd_kernel_dispatch{sfx}" SET start = "end" + 5, "end" = start WHERE id IN (1, 2)')
    path = _one_process_db(tmp_path / "1_results.db", swap)
    table = rocpd_kernel_stats(path)
    (note,) = table.attrs["notes"]
    assert "2 kernel dispatches end before they start" in note
    assert table["min_ns"].min() < 0
    assert any("2 kernel dispatches end before they start" in n for n in read_rocpd(path).notes)
    assert main(["rocprof", "stats", str(path)]) == 0
    assert "negative durations" in capsys.readouterr().out


def test_the_scale_benchmark_runs_and_saves_its_table(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_rocpd.py"
    done = subprocess.run([sys.executable, str(script), "--rows", "3000", "--repeat", "1", "--results", str(tmp_path)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = json.loads((tmp_path / "rocpd.json").read_text())
    assert rows[0]["rows"] == 3000 and rows[0]["lumikit"]["peak_mb"] > 0 and rows[0]["ratio"] > 0
    assert "| 3,000 |" in (tmp_path / "rocpd.md").read_text()


def test_the_sql_summary_equals_the_row_by_row_one(outputs):
    from lumikit.rocprof.rocpd import rocpd_summary

    for files in (outputs["per_process"], [outputs["merged"]]):
        report, tables = rocpd_summary(files)
        acts = read_rocpd(files)
        expected = acts.summary()
        for key in ("kernels", "copies", "api", "processes", "nodes"):
            assert report[key] == expected[key], key
        for key, rows in (("kernels", acts.kernel_stats()), ("copies", acts.copy_stats()), ("api", acts.api_stats())):
            assert ranking(tables[key]) == ranking(rows), key
        assert tables["copies"]["bytes"].sum() == expected["copies"]["bytes"]


@pytest.mark.parametrize("layout", ["track", "timestamp", "develop"])
def test_every_rocpd_layout_reads_to_the_same_tables(tmp_path, layout, capsys):
    """The track layout (4.1), the timestamp layout (4.0) and rocprofiler-sdk develop's timestamp layout that still
    says schema_version "3" are recognised by their columns and give the same kernels, copies, calls and ranking as
    the 3.0 layout they were converted from (generated)."""
    from lumikit.testing.rocpd_layouts import convert_layout

    old = gen.write_rocpd(tmp_path / "old_results.db", RUN.of("nid005001", 40000))
    new = convert_layout(gen.write_rocpd(tmp_path / "new_results.db", RUN.of("nid005001", 40000)), layout)
    with sqlite3.connect(new) as con:
        tables = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert any(n.startswith("rocpd_track") for n in tables)
        assert any(n.startswith("rocpd_timestamp") for n in tables) == (layout != "track")
    a, b = read_rocpd(old), read_rocpd(new)
    assert {**b.summary(), "source": ""} == {**a.summary(), "source": ""}
    for key in ("kernels", "copies", "api"):
        cols = [c for c in getattr(a, key).columns if c not in ("queue_id", "stream_id", "dispatch_id")]
        pd.testing.assert_frame_equal(getattr(b, key)[cols], getattr(a, key)[cols], check_dtype=False)
    assert ranking(rocpd_kernel_stats(new)) == ranking(rocpd_kernel_stats(old))
    assert rocpd_totals(new).equals(rocpd_totals(old))
    for command in ("stats", "summary"):
        printed = []
        for path in (old, new):
            assert main(["rocprof", command, str(path), "--json"]) == 0
            report = json.loads(capsys.readouterr().out)
            report.pop("source", None)
            printed.append(report)
        assert printed[0] == printed[1]
