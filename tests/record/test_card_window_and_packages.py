"""The report card on records whose answers are known by construction: MI250X package power where amd-smi prints
0 W on the second GCD (shared packages said), the job's whole window with labelled edges, a killed recorder and a
gap flagged, totals, impossible values left out, LUMI's pm_counters and Slurm's ConsumedEnergy."""
from __future__ import annotations

import json
import os
import stat
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from lumikit.errors import LumikitError
from lumikit.launch.runfolder import RunFolder
from lumikit.record import read_record
from lumikit.record.card import SHARED, card_of_run, report_card
from lumikit.record.recorder import Recorder, job_gpus
from lumikit.smi.pm_counters import parse_value, read_counters

START = datetime(2026, 1, 5, 10, 0, 0, tzinfo=timezone.utc)
T0 = START.timestamp()


def amd_smi_monitor(header: str, gcds: list[tuple[int, int, int, int]]) -> str:
    """``amd-smi monitor -ptumv`` text in the real layout (the header line taken from the shared fixture): per GCD
    (number, W, GFX %, MHz)."""
    rows = [f"{g:>3}  {w:>3} W     40 °C     42 °C     {busy:>3} %   {mhz:>4} MHz       0 %   1600 MHz   "
            f"40000 MB   65520 MB" for g, w, busy, mhz in gcds]
    return "\n".join([header, *rows]) + "\n"


@pytest.fixture
def monitor_header(shared_fixtures: Path) -> str:
    path = shared_fixtures / "smi" / "amd-smi_monitor_ptumv_rocm6.1_mi300x_8gpu.txt"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    return path.read_text(encoding="utf-8").splitlines()[0]


def node_of_eight(busy_gcd: int) -> list[tuple[int, int, int, int]]:
    """An MI250X node as amd-smi prints it: the first GCD of each package reads the package power, the second 0 W;
    only ``busy_gcd`` computes (its package draws 300 W, the others idle at 90 W)."""
    out = []
    for g in range(8):
        pkg_w = 300 if g // 2 == busy_gcd // 2 else 90
        out.append((g, pkg_w if g % 2 == 0 else 0, 100 if g == busy_gcd else 0, 1700 if g == busy_gcd else 800))
    return out


def record_with(tmp_path: Path, text: str, monkeypatch, gpus: str, samples: int = 4) -> Path:
    """A run folder whose record the recorder wrote from ``text`` (a stand-in tool that prints it)."""
    tool = tmp_path / "amd-smi-output.txt"
    tool.write_text(text, encoding="utf-8")
    monkeypatch.setenv("SLURM_JOB_GPUS", gpus)
    monkeypatch.delenv("SLURM_STEP_GPUS", raising=False)
    rec = Recorder(tmp_path / "run", node="nid005001", interval=0.05, command=["cat", str(tool)], site="lumi")
    assert rec.run(max_samples=samples) == samples
    return tmp_path / "run"


def test_a_busy_odd_gcd_gets_its_packages_power_and_computing_hours_and_the_sharing_is_said(
        tmp_path: Path, monkeypatch, monitor_header: str):
    run = record_with(tmp_path, amd_smi_monitor(monitor_header, node_of_eight(5)), monkeypatch, gpus="5")
    sess = read_record(run)["nid005001"]
    assert sess.header.job_gpus == (5,) and sess.snapshots()[0].devices[5].power_w == 0  # amd-smi's 0 W
    manifest = {"site": "lumi", "spec": {"partition": "small-g", "gpus_per_node": 1}}
    card = report_card(read_record(run), manifest, run="r")
    gcd5 = next(r for r in card.rows if r.gcd == 5)
    span = card.nodes["nid005001"]["covered_s"]  # the record's span (no job times), its edge held
    assert gcd5.in_job and gcd5.busy_mean_pct == 100 and gcd5.computing_s == pytest.approx(span) and span > 0
    assert card.billing["computing_gpu_hours"] == pytest.approx(span / 3600 * 0.5)  # busy %, not the 0 W
    assert gcd5.power_mean_w is None and gcd5.power_note.startswith(SHARED) and "GCD 4" in gcd5.power_note
    (pkg,) = card.packages  # the job's one package: GCDs 4 and 5, power read on GCD 4
    assert (pkg.package, pkg.gcds, pkg.job_gcds, pkg.outside) == (2, [4, 5], [5], [4])
    assert pkg.power_mean_w == 300 and pkg.energy_j == pytest.approx(300 * span)
    assert not [r for r in card.rows if r.in_job and r.gcd != 5]
    text = card.text()
    assert "package power includes GCDs outside this job (4)" in text
    assert "on packages shared with other jobs" in text and "computing" in text


def test_a_job_that_owns_the_package_gets_the_package_figure(tmp_path: Path, monkeypatch, monitor_header: str):
    # the job's cgroup shows its two GCDs as devices 0 and 1; Slurm says they are GCDs 4 and 5
    two = [(0, 300, 0, 800), (1, 0, 100, 1700)]
    run = record_with(tmp_path, amd_smi_monitor(monitor_header, two), monkeypatch, gpus="4,5")
    card = report_card(read_record(run), {"site": "lumi", "spec": {"partition": "small-g"}}, run="r")
    first, second = card.rows
    assert (first.node_gcd, second.node_gcd) == (4, 5) and card.packages[0].outside == []
    span = card.nodes["nid005001"]["covered_s"]  # the record's span (no job times), its edge held
    assert first.power_mean_w == 300 and first.energy_j == pytest.approx(300 * span)
    assert second.power_note == "on GCD 4" and second.computing_s == pytest.approx(span)
    assert card.totals["job"]["gpu_energy_j"] == pytest.approx(300 * span)
    assert "SLURM_JOB_GPUS" in " ".join(card.nodes["nid005001"]["notes"])


def write_record(folder: Path, node: str, samples: list[tuple[float, list[list]]], *, end: dict | None = None,
                 interval: float = 2.0) -> Path:
    """``gpu/<node>.jsonl`` in the recorder's compact format (rows: [busy %, W] per device), started at T0."""
    gpu = folder / "gpu"
    gpu.mkdir(parents=True, exist_ok=True)
    head = {"format": "lumikit-smi-session", "name": node, "kind": "generated", "interval_s": interval,
            "site": "lumi", "started": T0, "source": "generated for a test", "command": [], "description": "",
            "job_gpus": [0, 1], "job_gpus_from": "SLURM_JOB_GPUS", "record_format": "lumikit-readings-1"}
    path = gpu / f"{node}.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in [head, *({"t": t, "r": r} for t, r in samples)]))
    if end is not None:
        Path(str(path) + ".end").write_text(json.dumps(end))
    return path


BUSY = [[100, 300], [0, 0]]  # GCD 0 computing, its package at 300 W; GCD 1 idle, 0 W (amd-smi)


def thirteen_second_run(tmp_path: Path) -> Path:
    folder = RunFolder.create("w", tmp_path)
    folder.update(site="lumi", state="COMPLETED", start_time=START.isoformat(),
                  end_time=datetime.fromtimestamp(T0 + 13, timezone.utc).isoformat())
    write_record(folder.path, "nid005001", [(0.5 + 2 * i, BUSY) for i in range(7)], end={"state": "stopped"})
    # a recorder killed after its third sample: its end file still says "recording"
    write_record(folder.path, "nid005002", [(0.5 + 2 * i, BUSY) for i in range(3)], end={"state": "recording"})
    return folder.path


def test_the_card_covers_the_jobs_13_s_with_labelled_edges_and_flags_a_killed_recorder(tmp_path: Path):
    card = card_of_run(thirteen_second_run(tmp_path))
    whole, killed = card.nodes["nid005001"], card.nodes["nid005002"]
    assert card.window["duration_s"] == 13.0
    # samples at 0.5 ... 12.5 s: 12 s between them, 0.5 s held at each edge
    assert (whole["covered_s"], whole["start_edge_s"], whole["end_edge_s"]) == (13.0, 0.5, 0.5)
    assert whole["flags"] == []
    (row0,) = [r for r in card.rows if r.node == "nid005001" and r.gcd == 0]
    assert row0.energy_j == pytest.approx(300 * 13) and row0.computing_s == pytest.approx(13)
    # samples at 0.5, 2.5, 4.5 s: 0 to 4.5 s covered; the last 8.5 s (over 3 intervals) not counted, and flagged
    assert killed["covered_s"] == pytest.approx(4.5) and killed["early_stop_s"] == pytest.approx(8.5)
    assert "stopped 8.5 s before the job ended" in killed["flags"][0] and "killed?" in killed["flags"][0]
    assert card.totals["nodes"]["nid005002"]["gpu_energy_j"] == pytest.approx(300 * 4.5)
    assert card.totals["job"]["gpu_energy_j"] == pytest.approx(300 * 13 + 300 * 4.5)
    assert card.totals["job"]["computing_gcd_s"] == pytest.approx(13 + 4.5)
    text = card.text()
    assert "covers 13.0 of 13.0 s (first 0.5 s extrapolated from the first sample; last 0.5 s extrapolated" in text
    assert "FLAG: the record stopped 8.5 s before the job ended" in text
    assert "  job: 5250 J (0.0015 kWh) on the GPUs, computing 17.5 GCD-s over 13.0 s" in text


def test_a_gap_is_flagged_and_impossible_values_are_left_out_with_a_note(tmp_path: Path):
    samples = [(0.0, BUSY), (2.0, BUSY), (10.0, BUSY), (12.0, [[100, 1e300], [0, 0]]), (11.0, BUSY),
               (14.0, [[140, 300], [0, -5]])]
    write_record(tmp_path, "n1", samples)
    card = card_of_run(tmp_path)
    info = card.nodes["n1"]
    assert any("1 gap(s) longer than 3 intervals (6 s)" in f and "longest 8.0 s from 2.0 s" in f
               for f in info["flags"])
    notes = " ".join(info["notes"])
    assert "left out 1 samples whose time does not move forward" in notes
    assert "left out 2 power_w readings outside 0..5000 (e.g. 1e+300)" in notes  # 1e300 W and -5 W
    assert "left out 1 gpu_busy_pct readings outside 0..100 (e.g. 140)" in notes
    # the 1e300 W sample is bridged: 300 W over 0..14 s (the record's span: the manifest has no job times)
    row0 = next(r for r in card.rows if r.gcd == 0)
    assert row0.energy_j == pytest.approx(300 * 14) and row0.samples == 5


def test_a_record_without_samples_says_no_samples_not_no_findings(tmp_path: Path):
    write_record(tmp_path, "n1", [])
    text = card_of_run(tmp_path).text()
    assert "n1: generated, no samples" in text and "no samples: nothing to sum up" in text
    assert "findings: none" not in text


def pm_folder(path: Path, node_j: int, accel_j: list[int], when_us: int) -> Path:
    """A folder in the /sys/cray/pm_counters layout (HPE CSM docs: '<value> <unit> <timestamp> us')."""
    path.mkdir(exist_ok=True)
    values = {"energy": (node_j, "J"), "power": (900, "W"), "cpu_energy": (node_j // 4, "J"), "cpu_power": (200, "W"),
              "memory_energy": (node_j // 10, "J"), "memory_power": (60, "W"),
              **{f"accel{i}_energy": (j, "J") for i, j in enumerate(accel_j)},
              **{f"accel{i}_power": (150, "W") for i in range(4)}}
    for name, (v, unit) in values.items():
        (path / name).write_text(f"{v} {unit} {when_us} us\n")
    for name, v in (("freshness", 17), ("generation", 3), ("raw_scan_hz", 10), ("startup", 1700000000)):
        (path / name).write_text(f"{v}\n")
    return path


def test_pm_counters_give_node_accelerator_cpu_and_memory_energy(tmp_path: Path, monkeypatch):
    assert parse_value("123456 J 1700000000123456 us") == (123456.0, "J", 1700000000.123456)
    counters = pm_folder(tmp_path / "pm", 1_000_000, [10_000, 20_000, 30_000, 40_000], 1_700_000_000_000_000)
    monkeypatch.setenv("LUMIKIT_PM_COUNTERS", str(counters))
    assert read_counters()["accel3_energy"] == 40_000 and read_counters()["generation"] == 3
    tool = tmp_path / "out.txt"
    tool.write_text(json.dumps([{"gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}},
                                 "usage": {"gfx_activity": {"value": 100, "unit": "%"}}}]))
    rec = Recorder(tmp_path / "run", node="nid005001", interval=0.05, command=["cat", str(tool)])
    # the job runs: 3000 J on the node, 500 J on each accelerator, over 10 s of the counters' own clock
    pm_folder(counters, 1_003_000, [10_500, 20_500, 30_500, 40_500], 1_700_000_010_000_000)
    assert rec.run(max_samples=2) == 2
    folder = RunFolder.create("pm", tmp_path)
    os.rename(tmp_path / "run" / "gpu", folder.path / "gpu")
    folder.update(site="lumi", spec={"partition": "standard-g"})
    card = card_of_run(folder.path)
    pm = card.totals["nodes"]["nid005001"]["pm_counters"]
    assert pm["energy_j"]["energy"] == 3000 and pm["span_s"] == pytest.approx(10.0)
    assert sum(v for k, v in pm["energy_j"].items() if k.startswith("accel")) == 2000
    assert pm["energy_j"]["cpu_energy"] == 750 and pm["energy_j"]["memory_energy"] == 300
    assert pm["note"] == ""  # a whole-node job: the node's counters are the job's
    assert "pm_counters over 10.0 s: node 3000 J (0.0008 kWh), accelerators 2000 J" in card.text()


def test_slurm_consumed_energy_is_shown_for_whole_node_jobs(tmp_path: Path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    sacct = bin_dir / "sacct"
    sacct.write_text("#!/bin/sh\necho 123456\n")  # a stand-in: what sacct -o ConsumedEnergyRaw prints
    sacct.chmod(sacct.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    run = thirteen_second_run(tmp_path)
    RunFolder(run).update(backend="slurm", job_id="77", spec={"partition": "standard-g"})
    assert "Slurm ConsumedEnergy: 123456 J (0.0343 kWh) (sacct ConsumedEnergyRaw of job 77)" in card_of_run(run).text()
    assert RunFolder(run).read()["consumed_energy"]["joules"] == 123456  # asked once, kept
    RunFolder(run).update(spec={"partition": "small-g", "gpus_per_node": 1})
    assert "ConsumedEnergy" not in card_of_run(run).text()  # a shared node: Slurm's figure is not the job's


def test_the_job_gpus_come_from_slurm_variables():
    assert job_gpus({"SLURM_STEP_GPUS": "4,5", "SLURM_JOB_GPUS": "0"}) == ((4, 5), "SLURM_STEP_GPUS")
    assert job_gpus({"SLURM_JOB_GPUS": "0-2,6"}) == ((0, 1, 2, 6), "SLURM_JOB_GPUS")
    assert job_gpus({"SLURM_JOB_GPUS": "gpu:2"}) == ((), "")


def test_a_full_disk_cuts_the_record_short_and_the_card_says_so(tmp_path: Path, monkeypatch):
    import errno

    from lumikit.record import recorder as rec_mod

    tool = tmp_path / "out.txt"
    tool.write_text(json.dumps([{"gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}},
                                 "usage": {"gfx_activity": {"value": 100, "unit": "%"}}}]))
    rec = Recorder(tmp_path, node="n1", interval=0.01, command=["cat", str(tool)])
    real_write, calls = os.write, []

    def full_after_two(fd: int, data: bytes) -> int:
        calls.append(fd)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(rec_mod.os, "write", full_after_two)
    assert rec.run(max_samples=10) == 2
    monkeypatch.undo()
    end = json.loads((tmp_path / "gpu" / "n1.jsonl.end").read_text())
    assert end["state"] == "disk full" and end["samples"] == 2 and "No space left" in end["why"]
    flags = card_of_run(tmp_path).nodes["n1"]["flags"]
    assert flags[0].startswith("the record was cut short by a full disk after 2 samples")


def test_a_value_that_is_not_a_number_reads_as_no_reading(tmp_path: Path):
    write_record(tmp_path, "n1", [(0.0, BUSY), (2.0, [["busy", 300], [0, 0]]), (4.0, [[100, 300, 1700], [0]])])
    row0 = next(r for r in card_of_run(tmp_path).rows if r.gcd == 0)
    assert row0.samples == 3 and row0.busy_mean_pct == 100 and row0.sclk_max_mhz == 1700
    assert row0.energy_j == pytest.approx(300 * 4)


def test_a_missing_record_names_the_recorders_log_and_shows_its_last_lines(tmp_path: Path):
    folder = RunFolder.create("nolog", tmp_path)
    folder.update(site="lumi", gpu_record={"enabled": True, "interval_s": 2.0}, state="COMPLETED")
    (folder.path / "gpu").mkdir()
    (folder.path / "gpu" / "recorder-node0.log").write_text(
        "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'lumikit'\x1b[2J\n")
    text = card_of_run(folder.path).text()
    assert "gpu/recorder-node*.log" in text and "gpu/recorder-node0.log (last lines):" in text
    assert "    ModuleNotFoundError: No module named 'lumikit'\\x1b[2J" in text  # the escape is shown, not run


def test_the_tools_energy_counter_is_kept_from_its_first_reading(tmp_path: Path):
    """amd-smi's counter runs from the driver's start: the record keeps it minus the first reading (smaller lines),
    and the card's energy is its increase."""
    tool = tmp_path / "out.txt"

    def metric(joules: float) -> str:
        return json.dumps([{"gpu": 0, "power": {"socket_power": {"value": 300, "unit": "W"}},
                            "usage": {"gfx_activity": {"value": 100, "unit": "%"}},
                            "energy": {"total_energy_consumption": {"value": joules, "unit": "J"}}}])

    tool.write_text(metric(9_876_543_210.0))
    rec = Recorder(tmp_path, node="n1", interval=0.05, command=["cat", str(tool)])
    rec.sample()
    time.sleep(0.5)
    tool.write_text(metric(9_876_543_210.0 + 100.0))  # 100 J in 0.5 s: 200 W, a power a package can draw
    rec.sample()
    rec.close()
    first, second = [json.loads(x) for x in (tmp_path / "gpu" / "n1.jsonl").read_text().splitlines()[1:]]
    assert first["e0"] == {"0": 9_876_543_210.0} and first["r"][0][-1] == 0 and second["r"][0][-1] == 100
    card = report_card(read_record(tmp_path), {"site": "lumi", "spec": {"partition": "standard-g"}})
    held = 300 * card.nodes["n1"]["start_edge_s"]  # recorder start to first sample: the first power, held
    assert card.rows[0].energy_j == pytest.approx(100.0 + held) and "counter" in card.rows[0].energy_source


def test_lumikit_tail_shows_the_recorders_log(tmp_path: Path, capsys):
    from lumikit.cli import main

    folder = RunFolder.create("tail", tmp_path)
    folder.update(site="laptop", backend="local", state="COMPLETED")
    (folder.path / "rank0.out").write_text("hello\n")
    (folder.path / "gpu").mkdir()
    (folder.path / "gpu" / "recorder-node0.log").write_text("ModuleNotFoundError: No module named 'lumikit'\n")
    (folder.path / "gpu" / "recorder-node1.log").write_text("")  # said nothing: not shown
    assert main(["tail", str(folder.path)]) == 0
    out = capsys.readouterr().out
    assert "==> recorder-node0.log <==\nModuleNotFoundError: No module named 'lumikit'" in out
    assert "recorder-node1.log" not in out and "==> rank0.out <==" in out


def test_gpus_the_site_does_not_pair_keep_their_own_power():
    """Another machine's 4 GPUs (each reports its own power) read with the LUMI profile: no package is invented."""
    from lumikit.smi.sessions import Frame, Session, SessionHeader

    gpus = json.dumps([{"gpu": g, "power": {"socket_power": {"value": 100 + g, "unit": "W"}},
                        "usage": {"gfx_activity": {"value": 100, "unit": "%"}}} for g in range(10)])
    sess = Session(SessionHeader(name="n", kind="recorded", interval_s=2.0, started=T0, source="amd-smi"),
                   [Frame(0.0, gpus), Frame(2.0, gpus)])
    card = report_card({"n": sess}, {"site": "lumi"})
    row9 = next(r for r in card.rows if r.gcd == 9)
    assert row9.power_mean_w == 109 and row9.energy_j == pytest.approx(218) and row9.power_note == ""
    assert all(p.package < 4 for p in card.packages)


def test_the_card_streams_a_record_larger_than_the_read_limit(tmp_path: Path, monkeypatch):
    write_record(tmp_path, "n1", [(2.0 * i, BUSY) for i in range(2000)])  # about 60 kB
    monkeypatch.setenv("LUMIKIT_MAX_READ_MB", "0.01")  # files read whole: at most 10 kB
    with pytest.raises(LumikitError, match="limit for files read whole"):
        read_record(tmp_path)
    row0 = next(r for r in card_of_run(tmp_path).rows if r.gcd == 0)
    assert row0.samples == 2000 and row0.energy_j == pytest.approx(300 * 2 * 1999)


def test_slurm_times_without_a_zone_read_in_another_zone_are_shifted_back(tmp_path: Path):
    run = thirteen_second_run(tmp_path)
    # Slurm's own spelling: no zone, the cluster's local time (here two hours ahead of this machine's)
    local = datetime.fromtimestamp(T0 + 7200).replace(tzinfo=None)
    RunFolder(run).update(start_time=local.isoformat(), end_time=(local.replace(second=13)).isoformat())
    card = card_of_run(run)
    assert card.window["duration_s"] == 13.0 and "+2 h off the recorders' clocks" in card.window["source"]
    assert card.nodes["nid005001"]["covered_s"] == 13.0 and card.nodes["nid005001"]["flags"] == []
