"""rocprofv3's Perfetto traces, written with perfetto's own protobuf definitions in rocprofv3's track layout."""
from __future__ import annotations

import json
import sys

import pytest

from lumikit.cli import main
from lumikit.errors import LumikitError, ParseError
from lumikit.rocprof import rocprof_kernels
from lumikit.rocprof.pftrace import read_pftrace
from lumikit.testing import rocprof_outputs as gen

pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")
RUN = gen.generated_run(nodes=2, processes_per_node=2, steps=3)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("pftrace")
    traces = gen.write_pftrace_per_process(root / "pf", RUN)
    gen.write_kernel_traces(root / "csv", RUN)
    return {"root": root, "traces": traces, "csv": root / "csv"}


def ranking(table):
    return [(r["name"], int(r["calls"]), float(r["total_ns"])) for _, r in table.iterrows()]


def test_a_folder_of_traces_ranks_like_its_csv_twin(outputs, capsys):
    csv = ranking(rocprof_kernels(outputs["csv"]))
    assert len(csv) == 5
    assert ranking(rocprof_kernels(outputs["root"] / "pf")) == csv
    assert main(["rocprof", "stats", str(outputs["root"] / "pf"), "--json", "--top", "0"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(k["name"], k["calls"], k["total_ns"]) for k in report["kernels"]] == csv


def test_kernel_copy_and_api_tracks_go_to_their_tables(outputs):
    acts = read_pftrace(outputs["traces"])
    s = acts.summary()
    assert (s["kernels"]["count"], s["copies"]["count"], s["api"]["count"], s["processes"]) == (60, 12, 72, 4)
    assert s["copies"]["bytes"] == 12 * (4 << 20) and s["nodes"] == ["nid005001", "nid005002"]
    k = acts.kernels
    assert set(k.loc[k["pid"] == 40101, "gpu_index"]) == {1} and set(k["queue_id"]) == {0}
    assert k["track"].str.startswith("COMPUTE AGENT [").all()
    assert set(acts.api["category"]) == {"hip_api"} and set(acts.api["name"]) == {"hipLaunchKernel", "hipMemcpyAsync"}
    one = RUN.of("nid005002", 40100)
    mine = k[k["pid"] == 40100]
    assert list(mine["start_ns"]) == [d.start for d in one.dispatches]  # the incremental clock decoded
    assert list(mine["end_ns"]) == [d.end for d in one.dispatches]


def test_absolute_timestamps_decode_the_same(tmp_path):
    one = RUN.of("nid005001", 40000)
    a = read_pftrace(gen.write_pftrace(tmp_path / "40000_results.pftrace", one, incremental_clock=False))
    b = read_pftrace(gen.write_pftrace(tmp_path / "40000_inc.pftrace", one))
    assert list(a.kernels["start_ns"]) == list(b.kernels["start_ns"]) == [d.start for d in one.dispatches]


def test_a_cut_trace_keeps_what_it_wrote_before_the_cut(tmp_path, outputs):
    data = outputs["traces"][0].read_bytes()
    cut = tmp_path / "1_results.pftrace"
    cut.write_bytes(data[: len(data) // 2 + 3])
    with pytest.warns(UserWarning, match="cut short"):
        assert 0 < len(read_pftrace(cut).kernels) < len(read_pftrace(outputs["traces"][0]).kernels)
    cut.write_bytes(b"\x0a\xff\x7f" + data[:40])  # a first packet longer than the file
    with pytest.raises(ParseError, match="not a Perfetto trace.*--output-format csv"):
        read_pftrace(cut)


def test_without_the_perfetto_package_it_says_how_to_install_it(outputs, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "perfetto.protos.perfetto.trace", None)
    with pytest.raises(LumikitError, match="pip install perfetto==0.59.1.*--output-format csv"):
        read_pftrace(outputs["traces"][0])
    assert main(["rocprof", "stats", str(outputs["traces"][0])]) == 2
    assert "pip install perfetto" in capsys.readouterr().err


def test_an_empty_pftrace_is_refused_with_a_message_and_exit_status_2(tmp_path, capsys):
    from lumikit.cli import main

    for name, data in (("0_results.pftrace", b""), ("1_results.pftrace", b"\0" * 4096)):
        path = tmp_path / name
        path.write_bytes(data)
        for command in ("summary", "stats"):
            assert main(["rocprof", command, str(path)]) == 2
            err = capsys.readouterr().err
            assert err.count("\n") == 1 and f"{path}: empty" in err and "re-run" in err
