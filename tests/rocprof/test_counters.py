"""rocprofv3 --pmc counters: the counter CSV (a real documented output) and the rocpd tables (generated)."""
from __future__ import annotations

import sqlite3

import pytest

from lumikit.errors import LumikitError, ParseError
from lumikit.rocprof.counters import counters_per_kernel, parse_counter_csv, read_counter_db, read_counters, \
    waves_per_cu
from lumikit.rocprof.rocpd import suffixes
from lumikit.testing import counter_outputs as co
from lumikit.testing import rocprof_outputs as gen

DOCUMENTED = co.DOCUMENTED_CSV  # real output printed in ROCprofiler-SDK's documentation (source there)

# Written from the same documented columns in the newer spelling ("Agent 1"), not recorded: a one-wave kernel and a
# kernel that fills the GCD, both with GRBM_GUI_ACTIVE over their whole run.
NEWER = '''\
"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"
1,1,"Agent 1",2,77,77,64,5,"tiny_kernel",64,0,0,12,4,32,"GRBM_GUI_ACTIVE",170000,1000,101000
1,1,"Agent 1",2,77,77,64,5,"tiny_kernel",64,0,0,12,4,32,"SQ_WAVES",1,1000,101000
2,2,"Agent 1",2,77,77,4194304,3,"big_kernel",256,0,0,52,4,32,"GRBM_GUI_ACTIVE",170000,200000,300000
2,2,"Agent 1",2,77,77,4194304,3,"big_kernel",256,0,0,52,4,32,"SQ_WAVES",65536,200000,300000
'''


def test_the_documented_counter_csv():
    table = parse_counter_csv(DOCUMENTED, source="312_counter_collection.csv")
    assert len(table) == 4 and set(table["counter"]) == {"SQ_WAVES"} and set(table["agent"]) == {4}
    assert list(table["value"]) == [16384.0] * 4
    assert table.loc[0, "duration_ns"] == 317095766775957 - 317095766765717
    per_kernel = counters_per_kernel(table)
    assert list(per_kernel["duration_ns"]) == [10240, 10160, 9800, 9680]  # addition, divide, subtract, multiply
    assert list(per_kernel["SQ_WAVES"]) == [16384.0] * 4 and list(per_kernel["dispatches"]) == [1] * 4


def test_gpu_busy_is_not_gpu_used():
    table = parse_counter_csv(NEWER)
    assert set(table["agent"]) == {1}
    waves = waves_per_cu(table).set_index("kernel")
    # both kept the GPU "busy" for every cycle counted, but the tiny kernel had one wave for 110 compute units
    assert waves.loc["tiny_kernel", "busy_cycles"] == waves.loc["big_kernel", "busy_cycles"]
    assert waves.loc["tiny_kernel", "waves_per_cu"] == pytest.approx(1 / 110)
    assert waves.loc["big_kernel", "waves_per_cu"] > 500
    per_kernel = counters_per_kernel(table).set_index("kernel")
    assert per_kernel.loc["tiny_kernel", "duration_ns"] == 100000 and per_kernel.loc["tiny_kernel", "dispatches"] == 1


def test_bad_counter_files_say_what_to_give():
    with pytest.raises(ParseError, match="counter_collection.csv"):
        parse_counter_csv('"Name","Calls","TotalDurationNs"\n"k",1,2\n')
    with pytest.raises(ParseError, match="not numbers"):
        parse_counter_csv(DOCUMENTED.replace("16384.000000", "n/a", 1))
    with pytest.raises(LumikitError, match="no SQ_WAVES"):
        waves_per_cu(parse_counter_csv(DOCUMENTED).assign(counter="GRBM_GUI_ACTIVE"))


def test_counters_from_the_rocpd_tables(tmp_path):
    # Generated: a one-process database with the documented rocpd_info_pmc / rocpd_pmc_event tables added.
    path = tmp_path / "1_results.db"
    gen.write_rocpd(path, gen.generated_run(nodes=1, processes_per_node=1, steps=1))
    assert pytest.raises(LumikitError, read_counter_db, path).match("no hardware counters.*--pmc")
    con = sqlite3.connect(path)
    (sfx,) = suffixes(con)
    con.execute(f'CREATE TABLE "rocpd_info_pmc{sfx}" (id INTEGER PRIMARY KEY, guid TEXT, nid INTEGER, pid INTEGER, '
                'agent_id INTEGER, name TEXT NOT NULL, symbol TEXT NOT NULL)')
    con.execute(f'CREATE TABLE "rocpd_pmc_event{sfx}" (id INTEGER PRIMARY KEY, guid TEXT, event_id INTEGER, '
                'pmc_id INTEGER NOT NULL, value REAL)')
    con.execute(f'INSERT INTO "rocpd_info_pmc{sfx}" (id, nid, pid, name, symbol) VALUES (1, 1, 1, "SQ_WAVES", '
                '"SQ_WAVES"), (2, 1, 1, "GRBM_GUI_ACTIVE", "GRBM_GUI_ACTIVE")')
    dispatches = con.execute(f'SELECT event_id, "end" - start FROM "rocpd_kernel_dispatch{sfx}"').fetchall()
    for event, dur in dispatches:
        con.execute(f'INSERT INTO "rocpd_pmc_event{sfx}" (event_id, pmc_id, value) VALUES (?, 1, 64), (?, 2, ?)',
                    (event, event, dur * 1.7))
    con.commit()
    con.close()
    table = read_counters(path)
    assert len(table) == 2 * len(dispatches)
    assert set(table["counter"]) == {"SQ_WAVES", "GRBM_GUI_ACTIVE"}
    assert table["kernel"].notna().all() and set(table["agent"]) >= {1}
    per_kernel = counters_per_kernel(table)
    assert per_kernel["dispatches"].sum() == len(dispatches)
    assert per_kernel["SQ_WAVES"].sum() == 64 * len(dispatches)


def test_cli_counters_per_kernel(tmp_path, capsys):
    import json

    from lumikit.cli import main

    path = tmp_path / "77_counter_collection.csv"
    path.write_text(NEWER)
    assert main(["rocprof", "counters", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["counters"] == ["GRBM_GUI_ACTIVE", "SQ_WAVES"]
    tiny = next(k for k in report["kernels"] if k["kernel"] == "tiny_kernel")
    assert tiny["waves_per_cu_per_dispatch"] == pytest.approx(1 / 110)
    assert main(["rocprof", "counters", str(path)]) == 0
    assert "waves/CU" in capsys.readouterr().out


# -- hostile files (issue 31): refused at once with one line, never read whole or waited on ------------------
def _counters_capped(path) -> "subprocess.CompletedProcess[str]":
    """``lumikit rocprof counters PATH`` in a fresh process with 1 GB of address space and a timeout (a reader
    blocked on a FIFO never returns by itself; benchmarks/bad_inputs_table.py times these)."""
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "lumikit", "rocprof", "counters", str(path)], capture_output=True,
                          text=True, timeout=60, env=env, preexec_fn=cap)


def _one_error_line(done, path) -> str:
    assert done.returncode == 2 and done.stdout == "", (done.returncode, done.stderr[-300:])
    line = done.stderr.rstrip("\n")
    assert "\n" not in line and line.startswith(f"lumikit: error: {path}: "), done.stderr[-300:]
    return line


def test_a_fifo_dev_zero_and_a_3_gb_sparse_file_are_refused_at_once(tmp_path):
    import os

    fifo = tmp_path / "1_counter_collection.csv"
    os.mkfifo(fifo)  # nobody writes to it: a reader that opened it would wait for ever
    assert "is a FIFO (named pipe), not a regular file" in _one_error_line(_counters_capped(fifo), fifo)
    assert "is a character device" in _one_error_line(_counters_capped("/dev/zero"), "/dev/zero")
    sparse = tmp_path / "2_counter_collection.csv"
    with open(sparse, "wb") as fh:
        fh.truncate(3 << 30)
    assert "3.0 GB, above the 512 MB limit" in _one_error_line(_counters_capped(sparse), sparse)


def test_100000_nested_brackets_are_no_counter_file(tmp_path):
    path = tmp_path / "3_counter_collection.csv"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert "no rocprofv3 counter header" in _one_error_line(_counters_capped(path), path)


def test_counter_and_kernel_names_reach_the_terminal_escaped(tmp_path, capsys):
    from lumikit.cli import main

    path = tmp_path / "77_counter_collection.csv"
    path.write_text(NEWER.replace('"SQ_WAVES"', '"SQ_\x1b]0;owned\x07WAVES"').replace("tiny_kernel", "tiny\x1b[2Jk"))
    assert main(["rocprof", "counters", str(path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "SQ_\\x1b]0;owned\\x07WAVES" in out and "tiny\\x1b[2Jk" in out


def test_damaged_numbers_read_as_missing_or_are_refused():
    # a 26-digit dispatch id, a 20-digit agent and an end before the start: the row stays, the damage is missing
    damaged = NEWER.replace("1,1,\"Agent 1\"", "1,99999999999999999999999999,\"Agent 99999999999999999999\"", 1)
    damaged = damaged.replace("1000,101000\n", "1000,-5\n", 1)
    table = parse_counter_csv(damaged)
    assert table["dispatch_id"].isna().sum() == 1 and table["agent"].isna().sum() == 1
    assert table["duration_ns"].isna().sum() == 1
    with pytest.raises(ParseError, match="not numbers or not finite"):
        parse_counter_csv(NEWER.replace(",170000,", ",1e999,", 1))


def test_a_last_row_cut_short_is_left_out_and_said():
    table = parse_counter_csv(NEWER[:-20])
    assert len(table) == 3 and "last row is cut short" in table.attrs["notes"][0]


def test_a_counter_file_without_timestamps_says_so(tmp_path, capsys):
    import json

    from lumikit.cli import main

    lines = NEWER.splitlines()
    no_times = "\n".join(",".join(ln.split(",")[:-2]) for ln in lines) + "\n"
    path = tmp_path / "78_counter_collection.csv"
    path.write_text(no_times)
    assert main(["rocprof", "counters", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no timestamps" in out and "0.000" not in out
    assert main(["rocprof", "counters", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert all(k["duration_ns"] is None for k in report["kernels"])
    assert "no start and end timestamps" in report["notes"][0]
