"""Collectives matched across ranks: true time, waits, the last rank and the skew, from durations only."""
from __future__ import annotations

import json

import pytest

from lumikit.cli import main
from lumikit.site import load_site
from lumikit.trace.comms import bus_bandwidth
from lumikit.trace.matched import collect_calls, expand_nodelist, hosts_from_run, match_collectives
from lumikit.trace.synth_ranks import RanksSpec, write_straggler_ranks


@pytest.fixture(scope="module")
def straggler_run(tmp_path_factory):
    """4 ranks on 2 nodes, node 1's clock 37 ms behind; rank 2 computes 3 ms longer before each of 6 all-reduces,
    which take 2 ms once every rank has arrived."""
    folder = tmp_path_factory.mktemp("straggler")
    write_straggler_ranks(folder, RanksSpec())
    return folder


def test_every_all_reduce_names_the_straggler_with_its_skew_and_the_true_time(straggler_run):
    result = match_collectives(collect_calls(straggler_run), links=load_site("lumi").links)
    assert len(result["matched"]) == 6 and result["matched_by"] == "sequence number"
    for m in result["matched"]:
        assert m["collective"] == "all_reduce" and m["last_rank"] == 2
        assert m["skew_us"] == pytest.approx(3000, rel=0.1)
        assert m["comm_us"] == pytest.approx(2000, rel=0.1)
        assert m["wait_us"][2] == pytest.approx(0, abs=1)
        assert all(m["wait_us"][r] == pytest.approx(3000, rel=0.1) for r in (0, 1, 3))
        # 25 MB all-reduced by 4 ranks in the 2 ms true time: algbw 12.5 GB/s, busbw x 2 * 3 / 4
        assert m["busbw_gb_s"] == pytest.approx(bus_bandwidth("all_reduce", 25e6, 2e-3, 4)[1]) == \
            pytest.approx(18.75)
        assert m["link"] == "slingshot_nic"  # ranks on two nodes (from the traces' hostnames)
    first = result["stragglers"][0]
    assert (first["rank"], first["times_last"], first["of"]) == (2, 6, 6)
    assert first["mean_delay_us"] == pytest.approx(3000, rel=0.1)
    assert all(row["times_last"] == 0 for row in result["stragglers"][1:])
    assert not result["mismatches"]
    # the clocks are only estimated (aligned on the collectives' common ends), never used for the numbers above
    assert result["clock_offset_us"][2] == pytest.approx(-37000, abs=50)
    assert result["clock_offset_us"][1] == pytest.approx(0, abs=50)


def test_without_sequence_numbers_the_order_in_the_group_matches_the_same_calls(tmp_path):
    write_straggler_ranks(tmp_path, RanksSpec(with_seq=False, hostname=False, straggler=1, extra_us=800))
    result = match_collectives(collect_calls(tmp_path))
    assert result["matched_by"] == "order in the group"
    assert [m["last_rank"] for m in result["matched"]] == [1] * 6
    assert result["matched"][0]["skew_us"] == pytest.approx(800, rel=0.1)
    assert result["matched"][0]["link"] is None  # no node names: the link is not guessed


def test_a_rank_calling_another_size_is_a_mismatch(tmp_path):
    write_straggler_ranks(tmp_path, RanksSpec())
    f = tmp_path / "rank3.trace.json"
    f.write_text(f.read_text().replace('"In msg nelems":12500000', '"In msg nelems":12500001')
                 .replace('"Out msg nelems":12500000', '"Out msg nelems":12500001'))
    result = match_collectives(collect_calls(tmp_path))
    assert {(x["field"], x["values"][3]) for x in result["mismatches"]} == {("elements", 12500001)}


def test_no_straggler_when_every_rank_arrives_together(tmp_path):
    write_straggler_ranks(tmp_path, RanksSpec(straggler=None))
    result = match_collectives(collect_calls(tmp_path))
    assert all(row["times_last"] == 0 for row in result["stragglers"])
    assert all(m["skew_us"] == pytest.approx(0, abs=1) for m in result["matched"])


def test_the_command_line_gains_matched_and_stragglers(straggler_run, capsys):
    assert main(["trace", "collectives", str(straggler_run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [s["rank"] for s in out["stragglers"]][0] == 2 and out["stragglers"][0]["times_last"] == 6
    m = out["matched"][0]
    assert {"group", "index", "collective", "last_rank", "skew_us", "comm_us", "wait_us"} <= set(m)
    assert m["wait_us"]["0"] == pytest.approx(3000, rel=0.1)
    assert main(["trace", "collectives", str(straggler_run)]) == 0
    text = capsys.readouterr().out
    assert "rank 2 arrived last at 6 of its 6 collectives" in text
    assert "true time 2.00 ms" in text and "durations only" in text and "37.0 ms behind" in text


def test_nodes_come_from_the_run_folder_manifest(tmp_path):
    assert expand_nodelist("nid[005000-005002,005010],uan01") == ["nid005000", "nid005001", "nid005002",
                                                                   "nid005010", "uan01"]
    (tmp_path / "manifest.json").write_text(json.dumps({"nodes": "nid[000007-000008]",
                                                        "spec": {"ntasks_per_node": 2}}))
    (tmp_path / "traces").mkdir()
    assert hosts_from_run(tmp_path / "traces") == {0: "nid000007", 1: "nid000007", 2: "nid000008",
                                                   3: "nid000008"}


def test_the_real_two_rank_traces_match_their_send_recv_pairs(shared_fixtures):
    real = shared_fixtures / "traces" / "hta-real"
    files = {0: real / "trace_filter__sampled_rank-0.json.gz", 1: real / "trace_filter__sampled_rank-1.json.gz"}
    result = match_collectives(collect_calls(real, rank_map=files))
    # no sequence numbers in these traces: the calls of each rank are paired by their order
    assert result["matched_by"] == "order in the group" and len(result["matched"]) == 10
    for m in result["matched"]:
        assert m["comm_us"] == min(m["comm_us"] + m["wait_us"][r] for r in (0, 1))
        assert min(m["wait_us"].values()) == 0 and max(m["wait_us"].values()) == pytest.approx(m["skew_us"])
    assert sum(row["times_last"] for row in result["stragglers"]) <= 10


def test_the_waits_chart_draws_every_rank_and_says_generated(straggler_run):
    from lumikit.plotting import is_marked_generated
    from lumikit.trace.plots import collective_waits_chart

    result = match_collectives(collect_calls(straggler_run))
    fig = collective_waits_chart(result)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    assert len(heights) == 6 * 5  # 6 collectives x (4 ranks + the true time)
    assert sorted(set(round(h, 3) for h in heights)) == [0.0, 2.0, 3.0]
    assert is_marked_generated(fig)


def test_the_link_a_group_crosses():
    from lumikit.trace.matched import link_of

    nodes = {0: "a", 1: "a", 2: "a", 3: "b"}
    devices = {0: 0, 1: 1, 2: 2, 3: 0}
    assert link_of([0, 1], nodes, devices) == "gcd_in_package"  # GCDs 0 and 1: one MI250X
    assert link_of([1, 2], nodes, devices) == "gcd_between_packages"
    assert link_of([0, 1, 2], nodes, devices) == "gcd_between_packages"
    assert link_of([0, 3], nodes, devices) == "slingshot_nic"
    assert link_of([0, 3], {0: "a", 3: None}, devices) is None


def _call(ts, dur, elements, collective="all_to_all"):
    return {"group": "0", "seq": 1, "collective": collective, "elements": elements, "in_elements": elements,
            "dtype": "Float", "bytes": 4 * elements, "group_size": 2, "group_ranks": [0, 1], "splits": None,
            "device": 0, "kernel": "ncclDevKernel_Generic", "ts": ts, "dur": dur}


def test_an_uneven_all_to_all_is_an_imbalance_not_a_mismatch():
    per_rank = {0: {"rank": 0, "host": None, "calls": [_call(100.0, 500.0, 3000)]},
                1: {"rank": 1, "host": None, "calls": [_call(900.0, 200.0, 1000)]}}
    result = match_collectives(per_rank)
    assert not result["mismatches"]
    assert result["imbalance"] == [{"group": "0", "index": 1, "imbalance": 1.5}]  # 3000 against a mean of 2000
    m = result["matched"][0]
    assert (m["last_rank"], m["comm_us"], m["skew_us"]) == (1, 200.0, 300.0)
    # an all-reduce of different sizes is a mismatch
    per_rank[1]["calls"][0]["collective"] = per_rank[0]["calls"][0]["collective"] = "all_reduce"
    assert [x["field"] for x in match_collectives(per_rank)["mismatches"]] == ["elements"]
