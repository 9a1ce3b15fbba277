"""`lumikit reference add RUN` packs a run's GPU record (markers, profile/ folder, logs) into a reference folder
with a SOURCES.toml entry from its manifest, and `reference.load` reads it back; always into a temporary copy of
the reference folder here, never the shipped one. The record is GENERATED test data (lumikit.testing.records)."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from lumikit import reference
from lumikit.cli import main
from lumikit.errors import LumikitError
from lumikit.record.recorder import header_line
from lumikit.smi.sessions import SessionHeader
from lumikit.testing.records import write_generated_record


@pytest.fixture
def ref_dir(tmp_path: Path) -> Path:
    """A copy of the shipped SOURCES.toml in a temporary reference folder."""
    folder = tmp_path / "reference"
    folder.mkdir()
    shutil.copy2(reference.SOURCES_FILE, folder / "SOURCES.toml")
    return folder


@pytest.fixture
def run(tmp_path: Path) -> Path:
    path = write_generated_record(tmp_path / "runs" / "20251125-120000-train-abc123", samples=5,
                                  markers=[("training", 2)])
    (path / "rank0.out").write_text("epoch 1 loss 2.3\n")
    (path / "rank0.err").write_text("")
    (path / "profile").mkdir()
    (path / "profile" / "rank0.pt.trace.json").write_text('{"traceEvents": []}')
    os.symlink("rank0.pt.trace.json", path / "profile" / "link-inside")
    return path


def _recorded(run: Path) -> None:
    """Relabel the generated test record as recorded (what a real tool's record says), for the default path."""
    for f in (run / "gpu").glob("*.jsonl"):
        lines = f.read_text().splitlines()
        head = SessionHeader(name=f.stem, kind="recorded", source="rocm-smi --json", started=1_764_072_000.0,
                             interval_s=2.0)
        f.write_text("\n".join([json.dumps(header_line(head)), *lines[1:]]) + "\n")


def test_add_then_load_round_trips_the_record_with_its_source_line(run: Path, ref_dir: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    shipped_before = reference.SOURCES_FILE.read_bytes()
    assert main(["reference", "add", str(run), "--source", "test course 2025-11, a test", "--licence", "CC BY 4.0",
                 "--reference-dir", str(ref_dir), "--allow-generated"]) == 0
    out = capsys.readouterr().out
    assert "added [run-20251125-120000-train-abc123]" in out
    ref = reference.load("run-20251125-120000-train-abc123", folder=ref_dir)
    assert ref.kind == "run-record" and ref.record_kind == "generated"
    assert ref.container == "lumi-pytorch-rocm-6.2.4.sif" and ref.command == "python3 train.py"
    assert ref.commit == "0123456789abcdef0123456789abcdef01234567" and ref.date == "2025-11-25"
    assert ref.machine.startswith("lumi-sim")
    assert ref.source_line == ("generated run (lumi-sim (a local Slurm cluster; generated stand-in GPUs), 2025-11-25): "
                               "`python3 train.py` in container lumi-pytorch-rocm-6.2.4.sif, lumikit commit "
                               "0123456789; source: test course 2025-11, a test (CC BY 4.0)")
    assert ref.source_line in out
    sessions = ref.parsed()
    assert list(sessions) == ["nid005001", "nid005002"] and all(len(s.frames) == 5 for s in sessions.values())
    assert sessions["nid005001"].header.kind == "generated"
    files = ref.text.splitlines()
    assert {"gpu/nid005001.jsonl", "markers.jsonl", "rank0.out", "rank0.err", "manifest.json",
            "profile/rank0.pt.trace.json"} <= set(files)
    assert "profile/link-inside" not in files  # a link is never packed (one inside the run is a duplicate)
    assert "environment" not in (ref.file_path / "manifest.json").read_text()
    # the other entries are still there, and the shipped reference folder was not touched
    assert reference.load("rocm-smi-8gcd-idle", folder=ref_dir).file == "rocm-smi_lumi_8gcd_idle.txt"
    assert reference.SOURCES_FILE.read_bytes() == shipped_before


def test_an_existing_entry_is_never_overwritten(run: Path, ref_dir: Path) -> None:
    reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True, name="run-a")
    sources = (ref_dir / "SOURCES.toml").read_text()
    with pytest.raises(LumikitError, match=r"reference 'run-a' exists \(an entry \[run-a\] in .*SOURCES.toml\).*"
                                            r"Give another --name"):
        reference.add_run(run, source="other", licence="MIT", folder=ref_dir, allow_generated=True, name="run-a")
    with pytest.raises(LumikitError, match="rocm-smi-8gcd-idle"):
        reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True,
                          name="rocm-smi-8gcd-idle")
    assert (ref_dir / "SOURCES.toml").read_text() == sources


def test_a_generated_record_needs_allow_generated_and_a_recorded_one_does_not(run: Path, ref_dir: Path) -> None:
    with pytest.raises(LumikitError, match="generated, not recorded from a real tool.*--allow-generated"):
        reference.add_run(run, source="s", licence="MIT", folder=ref_dir)
    _recorded(run)
    ref = reference.add_run(run, source="s", licence="MIT", folder=ref_dir, machine="a test machine")
    assert ref.source_line.startswith("recorded run (a test machine, 2025-11-25)")


def test_a_folder_without_record_or_manifest_is_refused(tmp_path: Path, ref_dir: Path) -> None:
    (tmp_path / "plain").mkdir()
    with pytest.raises(LumikitError, match="not a run folder"):
        reference.add_run(tmp_path / "plain", source="s", licence="MIT", folder=ref_dir)
    (tmp_path / "plain" / "manifest.json").write_text("{}")
    with pytest.raises(LumikitError, match="no GPU record"):
        reference.add_run(tmp_path / "plain", source="s", licence="MIT", folder=ref_dir)
    assert main(["reference", "add", str(tmp_path / "plain"), "--source", "s", "--licence", "MIT",
                 "--reference-dir", str(ref_dir)]) == 2


# -- only the run's own files, and none of its secrets (issue 31) -------------------------------------------------
SECRET = "hf_" + "Q7x" * 12  # the shape of a Hugging Face token; made up


def _with_secret_name(run: Path) -> None:
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["environment"] = {"HF_TOKEN": "<redacted>", "PATH": "/usr/bin"}
    (run / "manifest.json").write_text(json.dumps(manifest))


def test_a_link_out_and_a_log_holding_the_runs_secret_are_refused_and_named(run: Path, ref_dir: Path,
                                                                            tmp_path: Path, capsys) -> None:
    _with_secret_name(run)
    outside = tmp_path / "private.txt"
    outside.write_text("not the run's\n")
    outside.chmod(0o600)
    os.symlink(outside, run / "rank1.out")
    (run / "rank0.out").write_text("epoch 1\nHF_TOKEN=opensesame123\nepoch 2\n")
    with pytest.raises(LumikitError) as info:
        reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True)
    message = str(info.value)
    assert f"rank1.out -> {outside}: a link to a file outside the run folder (never followed)" in message
    assert "rank0.out:2: a value of HF_TOKEN, a secret of the run" in message and "opensesame" not in message
    assert not any(p.name.startswith("run-") for p in ref_dir.iterdir())  # nothing was packed
    assert main(["reference", "add", str(run), "--source", "s", "--licence", "MIT", "--reference-dir",
                 str(ref_dir), "--allow-generated"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rank1.out" in err and "rank0.out:2" in err
    (run / "rank1.out").unlink()  # a link out is refused even with --redact: remove it
    with pytest.raises(LumikitError, match="--redact"):
        reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True)


def test_redact_replaces_secrets_and_token_shapes_in_the_packed_copy(run: Path, ref_dir: Path) -> None:
    _with_secret_name(run)
    (run / "rank0.out").write_text(f"HF_TOKEN={SECRET}\nok\nsaw {SECRET} again\n")
    (run / "profile" / "notes.txt").write_text("key AKIAABCDEFGHIJKLMNOP here\n")
    ref = reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True, redact=True)
    packed = (ref.file_path / "rank0.out").read_text()
    assert packed == "HF_TOKEN=<redacted>\nok\nsaw <redacted> again\n"
    assert (ref.file_path / "profile" / "notes.txt").read_text() == "key <redacted> here\n"
    assert "3 secret(s) replaced with <redacted>" in ref.note and "rank0.out:1" in ref.note
    assert (run / "rank0.out").read_text().startswith(f"HF_TOKEN={SECRET}")  # the run itself is untouched


def test_packed_files_get_the_umask_mode_not_the_sources(run: Path, ref_dir: Path) -> None:
    (run / "rank0.out").chmod(0o600)
    old = os.umask(0o002)
    try:
        ref = reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True)
    finally:
        os.umask(old)
    for rel in ("rank0.out", "manifest.json", "gpu/nid005001.jsonl"):
        assert (ref.file_path / rel).stat().st_mode & 0o777 == 0o664, rel
    assert (ref_dir / "SOURCES.toml").stat().st_mode & 0o777 == 0o664


def test_a_record_file_that_is_a_link_out_is_refused_before_it_is_read(run: Path, ref_dir: Path,
                                                                       tmp_path: Path) -> None:
    node = run / "gpu" / "nid005002.jsonl"
    outside = tmp_path / "elsewhere.jsonl"
    node.rename(outside)
    node.symlink_to(outside)
    with pytest.raises(LumikitError, match=r"gpu/nid005002.jsonl -> .*elsewhere.jsonl: a link to a file outside the run folder"):
        reference.add_run(run, source="s", licence="MIT", folder=ref_dir, allow_generated=True)
