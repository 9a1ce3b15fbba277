"""rocprof statistics CSVs (v1 and v3) become one ranked, classified table."""
from __future__ import annotations

import pandas as pd
import pytest

from lumikit.errors import ParseError
from lumikit.rocprof import class_totals, combine_stats, parse_rocprof_stats, stats_from_durations, stats_kind

V1_STATS = '''"Name","Calls","TotalDurationNs","AverageNs","Percentage"
"gemm_kernel(float*, float*, int) [clone .kd]",10,4000,400,40.0
"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",2,5000,2500,50.0
"__amd_rocclr_copyBuffer.kd",4,1000,250,10.0
'''

V3_STATS = '''"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"
"Cijk_Ailk_Bljk_SB_MT64x64x16",3,900,300.0,90.00,200,400,81.6
"__amd_rocclr_fillBufferAligned",1,100,100.0,10.00,100,100,0.0
'''


def test_v1_stats_are_ranked_by_total_time_and_classified():
    table = parse_rocprof_stats(V1_STATS, source="results.stats.csv")
    assert list(table["rank"]) == [1, 2, 3]
    assert list(table["name"].str[:10]) == ["ncclDevKer", "gemm_kerne", "__amd_rocc"]
    assert list(table["kernel_class"]) == ["communication", "compute", "memory"]
    assert list(table["calls"]) == [2, 10, 4]
    assert table["total_ns"].sum() == 10000
    assert table["min_ns"].isna().all()  # rocprof v1 has no min/max/stddev
    assert table.attrs["generation"] == "v1"


def test_v3_stats_keep_min_max_and_stddev():
    table = parse_rocprof_stats(V3_STATS)
    first = table.iloc[0]
    assert (first["name"], first["min_ns"], first["max_ns"], first["stddev_ns"]) == \
        ("Cijk_Ailk_Bljk_SB_MT64x64x16", 200, 400, 81.6)
    assert table.attrs["generation"] == "v3"


def test_a_pasted_prompt_before_the_header_is_skipped():
    table = parse_rocprof_stats("$ cat results.hip_stats.csv\n" + V1_STATS.replace('"', "", 2))
    assert len(table) == 3


def test_host_api_tables_have_no_kernel_class():
    hip = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\nhipLaunchKernel,5,500,100,100.0\n'
    table = parse_rocprof_stats(hip, kind="hip_api")
    assert table["kernel_class"].isna().all()
    assert class_totals(table)["total_ns"].sum() == 0


def test_trailing_debris_after_a_number_is_ignored_but_a_missing_number_is_an_error():
    debris = V3_STATS.replace("0.0\n", "0.0> \n")
    assert parse_rocprof_stats(debris).iloc[1]["stddev_ns"] == 0.0
    with pytest.raises(ParseError, match=r"line 2.*expected a number"):
        parse_rocprof_stats(V3_STATS.replace(",3,900,", ",three,900,"), source="x.csv")


def test_text_without_a_header_names_the_fix():
    with pytest.raises(ParseError, match="rocprof --stats"):
        parse_rocprof_stats("hello\nworld\n", source="notes.txt")


@pytest.mark.parametrize("name, kind", [
    ("results.stats.csv", "kernel"), ("results.hip_stats.csv", "hip_api"), ("results.hsa_stats.csv", "hsa_api"),
    ("results.copy_stats.csv", "copy"), ("1234_kernel_stats.csv", "kernel"), ("1234_hip_api_stats.csv", "hip_api"),
    ("1234_memory_copy_stats.csv", "copy"), ("1234_domain_stats.csv", "domain"),
    ("1234_memory_allocation_stats.csv", "memory_allocation"),
])
def test_the_kind_of_statistics_comes_from_the_file_name(name, kind):
    assert stats_kind(name) == kind


def test_class_totals_give_every_class_and_shares_that_sum_to_one():
    totals = class_totals(parse_rocprof_stats(V1_STATS))
    assert list(totals.index) == ["communication", "compute", "memory"]
    assert totals.loc["communication", "share"] == pytest.approx(0.5)
    assert totals["share"].sum() == pytest.approx(1.0)


def test_individual_durations_become_the_same_table():
    import pandas as pd

    trace = pd.DataFrame({"name": ["a", "b", "a", "a"], "duration_ns": [10, 100, 20, 30]})
    table = stats_from_durations(trace)
    assert list(table["name"]) == ["b", "a"]
    a = table.iloc[1]
    assert (a["calls"], a["total_ns"], a["average_ns"], a["min_ns"], a["max_ns"]) == (3, 60, 20, 10, 30)
    assert a["stddev_ns"] == pytest.approx(8.1649658)
    assert a["percent"] == pytest.approx(37.5)


def test_tables_of_several_processes_combine_by_name():
    one = parse_rocprof_stats(V3_STATS)
    two = parse_rocprof_stats(V3_STATS.replace(",3,900,300.0,90.00,200,", ",1,150,150.0,60.00,150,"))
    both = combine_stats([one, two])
    gemm = both[both["name"] == "Cijk_Ailk_Bljk_SB_MT64x64x16"].iloc[0]
    assert (gemm["calls"], gemm["total_ns"], gemm["min_ns"], gemm["max_ns"]) == (4, 1050, 150, 400)
    assert gemm["average_ns"] == pytest.approx(262.5)
    assert both["stddev_ns"].isna().all()


def test_a_table_written_in_rocprofv3_layout_reads_back_the_same(tmp_path):
    from lumikit.errors import LumikitError
    from lumikit.rocprof import read_rocprof_stats, write_rocprof_stats

    durations = pd.DataFrame({"name": ["gemm", "gemm", "ncclDevKernel_Generic"], "duration_ns": [300.0, 100.0, 50.0]})
    table = stats_from_durations(durations)
    path = write_rocprof_stats(table, tmp_path / "0" / "rank0_kernel_stats.csv")
    assert path.read_text().splitlines()[0] == ('"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs",'
                                                '"MaxNs","StdDev"')
    back = read_rocprof_stats(path)
    assert back[["name", "calls", "total_ns", "kernel_class"]].values.tolist() == [
        ["gemm", 2, 400.0, "compute"], ["ncclDevKernel_Generic", 1, 50.0, "communication"]]
    with pytest.raises(LumikitError, match="already exists"):
        write_rocprof_stats(table, path)


def test_stats_whose_percentages_miss_rows_or_repeat_them_are_flagged():
    from lumikit.rocprof.stats import parse_rocprof_stats

    head = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
    rows = ['"gemm",10,6000,600,60.00\n', '"add",10,3000,300,30.00\n', '"copy",10,1000,100,10.00\n']
    assert parse_rocprof_stats(head + "".join(rows)).attrs["notes"] == []
    cut = parse_rocprof_stats(head + "".join(rows[:2]))  # cut at a row boundary: looks complete, is not
    assert "add up to 90.0 %, not 100" in cut.attrs["notes"][0]
    twice = parse_rocprof_stats(head + "".join(rows + rows[:1]))
    assert "more than 100" in twice.attrs["notes"][0]
    rounded = parse_rocprof_stats(head + "".join(f'"k{i}",1,1,1,3.33\n' for i in range(30)))  # 99.9 by rounding
    assert rounded.attrs["notes"] == []
