"""rocprofv3 --pmc counters: the counter CSV (a real documented output) and the rocpd tables (generated)."""
from __future__ import annotations

import sqlite3

import pytest

from lumikit.errors import LumikitError, ParseError
from lumikit.rocprof.counters import counters_per_kernel, parse_counter_csv, read_counter_db, read_counters, \
    waves_per_cu
from lumikit.rocprof.rocpd import suffixes
from lumikit.testing import rocprof_outputs as gen

# Real output printed in ROCprofiler-SDK's documentation (ROCm/rocm-systems @ 1b1610fc2b2ab32af71e6e04e4d4a6a4ae597992,
# projects/rocprofiler-sdk/source/docs/how-to/using-rocprofv3.rst lines 1839-1843, the 4-space indent removed):
# `rocprofv3 -i input.yml --output-format csv` with `pmc: [SQ_WAVES]`, file pass_1/312_counter_collection.csv.
DOCUMENTED = '''\
"Correlation_Id","Dispatch_Id","Agent_Id","Queue_Id","Process_Id","Thread_Id","Grid_Size","Kernel_Id","Kernel_Name","Workgroup_Size","LDS_Block_Size","Scratch_Size","VGPR_Count","Accum_VGPR_Count","SGPR_Count","Counter_Name","Counter_Value","Start_Timestamp","End_Timestamp"
1,1,4,1,225049,225049,1048576,10,"void addition_kernel<float>(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095766765717,317095766775957
2,2,4,1,225049,225049,1048576,13,"subtract_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095767013157,317095767022957
3,3,4,1,225049,225049,1048576,11,"multiply_kernel(float*, float const*, float const*, int, int)",64,0,0,8,0,16,"SQ_WAVES",16384.000000,317095767176998,317095767186678
4,4,4,1,225049,225049,1048576,12,"divide_kernel(float*, float const*, float const*, int, int)",64,0,0,12,4,16,"SQ_WAVES",16384.000000,317095767380718,317095767390878
'''

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
