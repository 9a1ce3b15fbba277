"""Secrets masked where a job's output is written: a value the run marks secret becomes ``***`` before it reaches
the run folder, also when the program prints it in two writes and many times; nothing the CLI shows of the run
(tail, report --json) and no reference pack holds it."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from lumikit import reference
from lumikit.cli import main
from lumikit.jobs import spec
from lumikit.launch import launch
from lumikit.launch.mask import MASK, SecretMask, mask_text

PY = sys.executable
#: short, lower-case, not the shape of any well-known token: only the run's own secrets can find it
SECRET = "plum7orchard"


def _masked_in_pieces(text: bytes, values: list[bytes], cuts: list[int]) -> bytes:
    mask = SecretMask(values)
    pieces = [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]
    return b"".join(mask.feed(p) for p in pieces) + mask.flush()


def test_a_secret_cut_anywhere_and_repeated_is_masked_like_a_whole_replace() -> None:
    values = [b"plum7orchard", b"plum"]  # one value the start of another: the longer wins where both fit
    text = b"a plum7orchard b plum7orchardplum7orchard c plum7orc d plu"
    want = text.replace(b"plum7orchard", MASK).replace(b"plum", MASK)
    for cut in range(1, len(text)):
        assert _masked_in_pieces(text, values, [cut]) == want, cut
    assert _masked_in_pieces(text, values, list(range(1, len(text)))) == want  # one byte a write
    assert b"plum" not in want and want.count(MASK) == 4


def test_no_secret_means_no_change_and_no_holding_back() -> None:
    mask = SecretMask([])
    assert mask.feed(b"partial line") == b"partial line" and mask.flush() == b""
    assert mask_text("ab cd", ["ab"]) == "ab cd"  # shorter than MIN_SECRET_LEN: ordinary text stays


@pytest.fixture
def secret_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A local run that prints SECRET in two writes (a flushed half, a pause, the rest), three times, on stdout and
    stderr, and mentions it in the GPU recorder's environment."""
    monkeypatch.setenv("LUMIKIT_SECRETS_DIR", str(tmp_path / "secrets"))
    code = ("import os, sys, time\n"
            "v = os.environ['LUMI_PASSPHRASE']\n"
            "for stream in (sys.stdout, sys.stderr):\n"
            "    for _ in range(3):\n"
            "        stream.write('value=' + v[:5]); stream.flush(); time.sleep(0.2)\n"
            "        stream.write(v[5:] + ' end\\n'); stream.flush()\n")
    job = spec([PY, "-c", code], env=[("LUMI_PASSPHRASE", SECRET)], secrets=("LUMI_PASSPHRASE",))
    run = launch(job, site="laptop", backend="local", runs_dir=tmp_path / "runs")
    assert run.wait(timeout=120, progress=False) == "COMPLETED", run.stderr()
    return run.path


def _holders(folder: Path) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


def test_a_printed_secret_leaves_no_copy_in_the_run_folder(secret_run: Path) -> None:
    assert _holders(secret_run) == []
    out = (secret_run / "rank0.out").read_text()
    assert out.count("value=*** end") == 3, out  # the job's output is still there, the value masked
    assert (secret_run / "rank0.err").read_text().count("value=*** end") == 3


def test_tail_and_report_show_the_mask_not_the_secret(secret_run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["tail", str(secret_run)])
    shown = capsys.readouterr()
    assert "value=*** end" in shown.out + shown.err and SECRET not in shown.out + shown.err
    main(["report", str(secret_run), "--json"])
    shown = capsys.readouterr()
    assert SECRET not in shown.out + shown.err


def test_a_reference_pack_of_the_run_holds_no_secret(secret_run: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    ref_dir = tmp_path / "reference"
    ref_dir.mkdir()
    shutil.copy2(reference.SOURCES_FILE, ref_dir / "SOURCES.toml")
    main(["reference", "add", str(secret_run), "--source", "a test", "--licence", "MIT", "--reference-dir",
          str(ref_dir), "--allow-generated"])
    shown = capsys.readouterr()
    assert SECRET not in shown.out + shown.err
    assert _holders(ref_dir) == []
    manifest = json.loads((secret_run / "manifest.json").read_text())
    assert SECRET not in json.dumps(manifest)
