"""Every real output in ../shared/fixtures/smi parses; the LUMI ones give exactly the values they show."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.site import load_site
from lumikit.smi.parse import parse_smi, parse_smi_series

pytestmark = pytest.mark.conformance

# file -> (format, number of devices): the documented result for each, partial ones included.
EXPECTED = {
    "amd-smi_default-view_rocm7.0_mi300x_8gpu.txt": ("amd-smi-default", 8),
    "amd-smi_metric_p_json_rocm6.1.json": ("amd-smi-metric-json", 1),
    "amd-smi_monitor_ptumv_rocm6.1_mi300x_8gpu.txt": ("amd-smi-monitor", 8),
    "amd-smi_monitor_q_rocm6.2_radeon_with-process-table.txt": ("amd-smi-monitor", 1),
    "amd-smi_monitor_rocm7.1_guest_1gpu.txt": ("amd-smi-monitor", 1),
    "gpu_check_allow-task-sharing_2day20260422.txt": ("gpu_check", 12),
    "gpu_check_taskcgroup_2day20260422.txt": ("gpu_check", 12),
    "nvidia-smi_query-gpu_csv_a100x3_omniopt_DERIVED-with-documented-header.csv": ("nvidia-smi-csv", 2),
    "nvidia-smi_query-gpu_csv_noheader_a100x3_omniopt.csv": ("nvidia-smi-csv", 2),
    "rocm-smi_concise_rocm4-5.0_tempdieedge_FRAGMENT.txt": ("rocm-smi-concise", 2),
    "rocm-smi_concise_rocm5_archer2-mi210_4gpu_alldevices.txt": ("rocm-smi-concise", 4),
    "rocm-smi_concise_rocm5_lumi-mi250x_2gcd_busy.txt": ("rocm-smi-concise", 2),
    "rocm-smi_concise_rocm5_lumi-mi250x_8gcd_with-warning.txt": ("rocm-smi-concise", 8),
    "rocm-smi_concise_rocm6.0-6.1_mi300x_8gpu_model-revision.txt": ("rocm-smi-concise", 8),
    "rocm-smi_concise_rocm6.0_mi300a_model-revision_name-row.txt": ("rocm-smi-concise", 1),
    "rocm-smi_concise_rocm6.1.1_radeon_node-ids-partitions.txt": ("rocm-smi-concise", 2),
    "rocm-smi_concise_rocm6_lumi-mi250x_8gcd_DERIVED-label-stripped.txt": ("rocm-smi-concise", 8),
    "rocm-smi_concise_rocm6_lumi-mi250x_srun-label-sorted.txt": ("rocm-smi-concise", 12),
    "rocm-smi_json_allflags_mi100_rocm571.json": ("rocm-smi-json", 6),
    "rocm-smi_json_allflags_rx6700xt_rocm612.json": ("rocm-smi-json", 1),
    "rocm-smi_json_allflags_vega-20-WKS-GL-XE.json": ("rocm-smi-json", 1),
    "rocm-smi_showallinfo-style_rocm5.x_gentoo-apu_REAL-TABS.txt": ("rocm-smi-text", 1),
    "rocm-smi_showbus_lumi-mi250x_8gcd.txt": ("rocm-smi-text", 8),
    "rocm-smi_showhw_rocm6.1.1_mi300a_tpx.txt": ("rocm-smi-text", 12),
    "rocm-smi_showmemuse_rocm5_archer2-mi210.txt": ("rocm-smi-text", 4),
    "rocm-smi_showpidgpus_FRAGMENT.txt": ("rocm-smi-text", 2),
    "rocm-smi_showproduct_rocm6.1.1_mi300a.txt": ("rocm-smi-text", 4),
    "rocm-smi_showtopo_rocm5_archer2-mi210_4gpu.txt": ("rocm-smi-text", 4),
    "rocm-smi_showtopo_rocm6.1.0_mi300a_tpx_BROKEN-known-issue.txt": ("rocm-smi-text", 12),
    "rocm-smi_showtoponuma_rocm6.1.1_mi300a_tpx.txt": ("rocm-smi-text", 12),
    "rocm-smi_showuse_rocm5_archer2-mi210.txt": ("rocm-smi-text", 4),
    "rocm-smi_showuse_showmeminfo-vram_rocm6_mi308x.txt": ("rocm-smi-text", 8),
    "rocm-smi_showuse_showmemuse_csv_FRAGMENT.csv": ("rocm-smi-csv", 2),
    "rocm_smi_concise_legacy_2023_exitcode2_hedgedoc.txt": ("rocm-smi-concise", 1),
    "rocm_smi_concise_legacy_8gcd_io_bound_workshop09.txt": ("rocm-smi-concise", 8),
    "rocm_smi_concise_rocm6_label_allow-task-sharing_2day20260422.txt": ("rocm-smi-concise", 12),
    "rocm_smi_showtoponuma_lumi_userguide.txt": ("rocm-smi-text", 8),
}


def parsed(smi_dir: Path, name: str):
    return parse_smi((smi_dir / name).read_text(encoding="utf-8"), source=name)


def test_every_fixture_is_listed(smi_dir: Path) -> None:
    assert sorted(p.name for p in smi_dir.iterdir()) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_fixture_parses(smi_dir: Path, name: str) -> None:
    fmt, count = EXPECTED[name]
    snap = parsed(smi_dir, name)
    assert (snap.format, len(snap.devices)) == (fmt, count)
    assert snap.source == name


def test_lumi_8gcd_power_on_even_gcds_only(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_concise_rocm5_lumi-mi250x_8gcd_with-warning.txt")
    assert [d.power_w for d in snap.devices] == [88.0, None, 85.0, None, 82.0, None, 83.0, None]
    assert [d.power_cap_w for d in snap.devices] == [560.0, 0.0] * 4
    assert [d.temp_c for d in snap.devices] == [39.0, 45.0, 43.0, 41.0, 44.0, 41.0, 41.0, 40.0]
    assert [d.package for d in snap.devices] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert {d.sclk_mhz for d in snap.devices} == {800.0} and {d.mclk_mhz for d in snap.devices} == {1600.0}
    assert {d.perf for d in snap.devices} == {"auto"} and {d.gpu_busy_pct for d in snap.devices} == {0.0}
    assert snap.notes == ("WARNING:                 One or more commands failed",)


def test_cli_parse_json_acceptance_line(smi_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = smi_dir / "rocm-smi_concise_rocm5_lumi-mi250x_8gcd_with-warning.txt"
    assert main(["smi", "parse", str(path), "--json"]) == 0
    devices = json.loads(capsys.readouterr().out)["devices"]
    assert len(devices) == 8
    assert [d["power_w"] for d in devices] == [88.0, None, 85.0, None, 82.0, None, 83.0, None]


def test_lumi_2gcd_under_pytorch_load(smi_dir: Path) -> None:
    gcd0, gcd1 = parsed(smi_dir, "rocm-smi_concise_rocm5_lumi-mi250x_2gcd_busy.txt").devices
    assert (gcd0.temp_c, gcd0.power_w, gcd0.power_cap_w, gcd0.sclk_mhz, gcd0.perf, gcd0.vram_pct,
            gcd0.gpu_busy_pct) == (58.0, 324.0, 500.0, 1650.0, "manual", 98.0, 100.0)
    assert (gcd1.power_w, gcd1.power_cap_w, gcd1.sclk_mhz, gcd1.gpu_busy_pct) == (None, 0.0, 800.0, 0.0)
    assert gcd0.package is None  # two devices are not the whole node: no package from the site


def test_lumi_io_bound_gcd4(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm_smi_concise_legacy_8gcd_io_bound_workshop09.txt")
    assert [d.gpu_busy_pct for d in snap.devices] == [100.0] * 4 + [0.0] + [100.0] * 3
    assert snap.device(4).sclk_mhz == 800.0 and snap.device(5).sclk_mhz == 1650.0
    assert [d.power_w for d in snap.devices if d.power_w is not None] == [128.0, 132.0, 111.0, 130.0]
    assert {d.vram_pct for d in snap.devices} == {78.0}


def test_lumi_rocm6_label_sorted_keeps_tasks(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_concise_rocm6_lumi-mi250x_srun-label-sorted.txt")
    assert [(d.task, d.index, d.node_id) for d in snap.devices[:4]] == [(0, 0, 8), (0, 1, 11), (1, 0, 8),
                                                                        (1, 1, 11)]
    task2 = [d for d in snap.devices if d.task == 2]
    assert [d.node_id for d in task2] == [4, 5, 6, 7, 8, 9, 10, 11]
    assert [d.power_w for d in task2] == [90.0, None, 93.0, None, 91.0, None, 83.0, None]
    assert [d.temp_c for d in task2] == [39.0, 47.0, 41.0, 44.0, 44.0, 45.0, 40.0, 45.0]
    assert [d.package for d in task2] == [0, 0, 1, 1, 2, 2, 3, 3]
    assert all(d.package is None for d in snap.devices if d.task in (0, 1))


def test_lumi_rocm6_derived_equals_task_2_of_the_labelled_output(smi_dir: Path) -> None:
    plain = parsed(smi_dir, "rocm-smi_concise_rocm6_lumi-mi250x_8gcd_DERIVED-label-stripped.txt")
    labelled = parsed(smi_dir, "rocm-smi_concise_rocm6_lumi-mi250x_srun-label-sorted.txt")
    assert plain.devices == tuple(replace(d, task=None) for d in labelled.devices if d.task == 2)
    assert plain.device(7).perf == "manual" and plain.device(6).power_cap_w == 500.0


def test_lumi_toponuma_matches_the_site_profile(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm_smi_showtoponuma_lumi_userguide.txt")
    assert [d.numa_node for d in snap.devices] == [3, 3, 1, 1, 0, 0, 2, 2]
    assert [d.numa_node for d in snap.devices] == [g.numa for g in load_site("lumi").node.gcds]


def test_lumi_showbus(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_showbus_lumi-mi250x_8gcd.txt")
    assert [d.bus_id for d in snap.devices] == ["0000:C1:00.0", "0000:C6:00.0", "0000:C9:00.0", "0000:CE:00.0",
                                                "0000:D1:00.0", "0000:D6:00.0", "0000:D9:00.0", "0000:DE:00.0"]


def test_lumi_shell_transcript_keeps_exit_status(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm_smi_concise_legacy_2023_exitcode2_hedgedoc.txt")
    assert snap.exit_status == 2
    assert (snap.devices[0].power_w, snap.devices[0].power_cap_w) == (91.0, 560.0)


def test_lumi_gpu_check_maps_ranks_to_gcds(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "gpu_check_taskcgroup_2day20260422.txt")
    first_node = [(d.task, d.index, d.bus_id) for d in snap.devices if d.host == "nid005109"]
    assert first_node == [(0, 4, "d1"), (0, 5, "d6"), (1, 2, "c9"), (1, 3, "ce"), (2, 6, "d9"), (2, 7, "de"),
                          (3, 0, "c1"), (3, 1, "c6")]
    assert snap.notes == ("+ srun gpu_check -l",)


def test_lumi_allow_task_sharing_table(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm_smi_concise_rocm6_label_allow-task-sharing_2day20260422.txt")
    assert sorted({d.task for d in snap.devices}) == [0, 1, 2]
    assert snap.notes == ()  # the "+ srun ..." shell trace lines are not part of any task


def test_rocm6_model_revision_layout_reads_the_name_row(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_concise_rocm6.0-6.1_mi300x_8gpu_model-revision.txt")
    assert {d.name for d in snap.devices} == {"AMD Instinct MI300X"}
    assert snap.device(3).vram_pct == 17.0 and snap.device(2).power_w == 180.0
    assert all(d.package is None for d in snap.devices)  # 8 devices, but not MI250X GCDs


def test_rocm_json_key_drift(smi_dir: Path) -> None:
    old = parsed(smi_dir, "rocm-smi_json_allflags_mi100_rocm571.json").device(0)
    new = parsed(smi_dir, "rocm-smi_json_allflags_rx6700xt_rocm612.json").device(0)
    assert (old.name, old.power_w, old.power_cap_w, old.sclk_mhz, old.vram_total_bytes) == \
        ("Arcturus GL-XL [Instinct MI100]", 39.0, 290.0, 300.0, 34342961152)
    assert (new.name, new.vram_pct, new.vram_used_bytes, new.node_id) == \
        ("Navi 22 [Radeon RX 6700/6700 XT / 6800M]", 12.0, 1572745216, 1)


def test_amd_smi_views(smi_dir: Path) -> None:
    box = parsed(smi_dir, "amd-smi_default-view_rocm7.0_mi300x_8gpu.txt")
    assert (box.device(0).power_w, box.device(0).power_cap_w, box.device(0).gpu_busy_pct) == (734.0, 750.0, 98.0)
    assert box.device(7).vram_used_bytes == 4976 * 2**20 and len(box.processes) == 8
    guest = parsed(smi_dir, "amd-smi_monitor_rocm7.1_guest_1gpu.txt").device(0)
    assert (guest.power_w, guest.temp_c, guest.sclk_mhz, guest.gpu_busy_pct) == (12.0, 40.0, 9.0, 8.0)
    assert guest.vram_total_bytes == round(25.4 * 2**30)
    metric = parsed(smi_dir, "amd-smi_metric_p_json_rocm6.1.json").device(0)
    assert metric.power_w == 10.0


def test_nvidia_csv_samples(smi_dir: Path) -> None:
    text = (smi_dir / "nvidia-smi_query-gpu_csv_a100x3_omniopt_DERIVED-with-documented-header.csv").read_text()
    samples = parse_smi_series(text)
    assert [len(s.devices) for s in samples] == [3, 3, 2]
    first = samples[0]
    assert [d.bus_id for d in first.devices] == ["00000000:0B:00.0", "00000000:3B:00.0", "00000000:8B:00.0"]
    assert first.device(0).vram_total_bytes == 40960 * 2**20 and first.device(0).vram_used_bytes == 4 * 2**20
    assert samples[1].device(2).gpu_busy_pct == 3.0
    noheader = parse_smi_series((smi_dir / "nvidia-smi_query-gpu_csv_noheader_a100x3_omniopt.csv").read_text())
    assert [[d.gpu_busy_pct for d in s.devices] for s in noheader] == [[0.0] * 3, [3.0] * 3, [1.0, 3.0]]
    assert noheader[0].device(1).vram_total_bytes == 40960 * 2**20


def test_broken_topology_keeps_numa_and_error_line(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_showtopo_rocm6.1.0_mi300a_tpx_BROKEN-known-issue.txt")
    assert [d.numa_node for d in snap.devices] == [0] * 9 + [1, 2, 3]
    assert snap.notes == ("ERROR: GPU[1]   : Cannot read Link Weight: Not supported on this machine",)


def test_pid_fragment_gives_processes(smi_dir: Path) -> None:
    snap = parsed(smi_dir, "rocm-smi_showpidgpus_FRAGMENT.txt")
    assert [(p.pid, p.devices) for p in snap.processes] == [(28156, (0, 1)), (28154, (0,))]
