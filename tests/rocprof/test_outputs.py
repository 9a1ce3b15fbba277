"""Finding rocprof outputs in a run folder and reading the kernel table without naming files."""
from __future__ import annotations

import pytest

from lumikit.errors import LumikitError
from lumikit.rocprof import find_outputs, rocprof_kernels

V1 = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"k1",2,300,150,100.0\n'
V3 = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage","MinNs","MaxNs","StdDev"\n'
      '"k1",1,100,100.0,50.0,100,100,0\n"k2",1,100,100.0,50.0,100,100,0\n')
HIP = '"Name","Calls","TotalDurationNs","AverageNs","Percentage"\nhipMalloc,1,10,10,100.0\n'


@pytest.fixture
def run_folder(tmp_path):
    (tmp_path / "results.stats.csv").write_text(V1)
    (tmp_path / "results.hip_stats.csv").write_text(HIP)
    (tmp_path / "results.json").write_text('{ "traceEvents":[{}\n]}')
    (tmp_path / "rank0.pt.trace.json").write_text('{"schemaVersion": 1, "traceEvents": []}')
    node = tmp_path / "nid001234" / "4242"
    node.mkdir(parents=True)
    (node / "4242_kernel_stats.csv").write_text(V3)
    (node / "4242_kernel_trace.csv").write_text('"Kernel_Name","Start_Timestamp","End_Timestamp"\n"k1",1,2\n')
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "old.stats.csv").write_text(V1)
    return tmp_path


def test_find_outputs_sorts_files_by_role_and_leaves_pytorch_traces_alone(run_folder):
    out = find_outputs(run_folder)
    rel = lambda paths: [str(p.relative_to(run_folder)) for p in paths]  # noqa: E731
    assert rel(out.kernel_stats) == ["nid001234/4242/4242_kernel_stats.csv", "results.stats.csv"]
    assert rel(out.api_stats) == ["results.hip_stats.csv"]
    assert rel(out.kernel_traces) == ["nid001234/4242/4242_kernel_trace.csv"]
    assert rel(out.json_traces) == ["results.json"]
    assert "kernel stats" in out.describe()


def test_a_run_folder_gives_one_combined_kernel_table(run_folder):
    table = rocprof_kernels(run_folder)
    assert dict(zip(table["name"], table["total_ns"])) == {"k1": 400.0, "k2": 100.0}
    assert table.attrs["generation"] == "v1/v3"


def test_a_folder_without_outputs_says_how_to_make_them(tmp_path):
    assert not find_outputs(tmp_path)
    with pytest.raises(LumikitError, match="rocprofv3 --kernel-trace --stats"):
        rocprof_kernels(tmp_path)


def test_a_missing_path_is_named(tmp_path):
    with pytest.raises(LumikitError, match="nowhere"):
        rocprof_kernels(tmp_path / "nowhere")
