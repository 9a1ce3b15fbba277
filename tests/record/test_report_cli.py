"""`lumikit report RUN [--json]` and the launch side of the record (the batch script, the local backend)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.jobs.spec import spec
from lumikit.launch import launch
from lumikit.launch.gpu_record import plan, with_record
from lumikit.launch.runfolder import RunFolder
from lumikit.launch.slurm import SlurmBackend
from lumikit.record.recorder import choose_tool
from lumikit.site import load_site
from lumikit.smi.sessions import SessionWriter

from .test_report_card import MANIFEST, session


def run_folder(tmp_path: Path) -> Path:
    """A run folder with a manifest and a 2-node record."""
    folder = RunFolder.create("cli", tmp_path)
    folder.update(**MANIFEST)
    (folder.path / "gpu").mkdir()
    for node in ("nid005001", "nid005002"):
        sess = session(name=node, kind="generated")
        w = SessionWriter(folder.path / "gpu" / f"{node}.jsonl", sess.header)
        for fr in sess.frames:
            w.add(fr)
        w.close()
    return folder.path


def test_report_prints_a_line_per_node_and_gcd_and_the_gpu_hours(tmp_path: Path, capsys):
    run = run_folder(tmp_path)
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("nid00500")]
    assert [(r[0], r[1]) for r in rows] == [("nid005001", "0"), ("nid005001", "1"), ("nid005002", "0"),
                                            ("nid005002", "1")]
    assert rows[0][3:5] == ["100/100", "320/340"] and "1280 J" in " ".join(rows[0])
    assert "GPU-hours: billed 0.0100" in out and "GENERATED readings" in out


def test_report_json_parses(tmp_path: Path, capsys):
    assert main(["report", str(run_folder(tmp_path)), "--json"]) == 0
    card = json.loads(capsys.readouterr().out)
    assert card["record"] == "present" and len(card["gcds"]) == 4
    assert card["gcds"][0]["energy_j"] == 1280.0 and card["billing"]["billed_gpu_hours"] == 0.01


def test_a_laptop_run_has_no_record_and_says_why(tmp_path: Path, capsys):
    if choose_tool():
        pytest.skip(f"this machine has an SMI tool ({choose_tool()[0]}): its run has a record")
    run = launch(spec(["python3", "-c", "print(1)"], gpus_per_node=1), site="laptop", runs_dir=tmp_path)
    assert run.wait(timeout=120, progress=False) == "COMPLETED"
    assert main(["report", str(run.path)]) == 0
    out = capsys.readouterr().out
    assert len(list((run.path / "gpu").glob("*.jsonl"))) == 1  # the header-only file: the tools looked for
    assert out.startswith(f"{run.path.name}: no GPU record: none of amd-smi, rocm-smi, nvidia-smi was found")
    assert main(["report", str(run.path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["record"] == "absent"


def test_no_gpu_record_and_jobs_without_gpus_record_nothing(tmp_path: Path, capsys):
    off = launch(spec(["true"], gpus_per_node=1), site="laptop", runs_dir=tmp_path, gpu_record=False)
    no_gpus = launch(spec(["true"]), site="laptop", runs_dir=tmp_path)
    for run, why in ((off, "turned off at launch"), (no_gpus, "the job asks for no GPUs")):
        assert run.wait(timeout=120, progress=False) == "COMPLETED"
        assert not (run.path / "gpu").exists()
        assert main(["report", str(run.path)]) == 0
        assert why in capsys.readouterr().out


def test_the_batch_script_starts_one_recorder_per_node_around_the_step(tmp_path: Path):
    site = load_site("lumi-sim")
    folder = RunFolder.create("s", tmp_path)
    job = spec(["python3", "train.py"], partition="small-g", nodes=2, gpus_per_node=2, ntasks_per_node=2,
               account="project_465000000")
    folder.update(gpu_record=plan(job))
    script = SlurmBackend(site).script(job, folder).splitlines()
    rec = next(i for i, line in enumerate(script) if "-m lumikit.record sample" in line)
    step = next(i for i, line in enumerate(script) if "train.py" in line)
    assert rec < step and script[rec].endswith(" &") and "--overlap" in script[rec]
    assert "--ntasks-per-node=1" in script[rec] and "--kind generated --stream" in script[rec]
    assert script[step].endswith(" || LUMIKIT_STEP_STATUS=$?") and script[-1] == 'exit "$LUMIKIT_STEP_STATUS"'
    assert "touch" in script[step + 1] and ".stop" in script[step + 1]
    folder.update(gpu_record=plan(job, enabled=False))
    assert "lumikit.record" not in SlurmBackend(site).script(job, folder)
    assert with_record("#!/bin/bash\nsrun x\n", plan(spec(["x"])), site, "/r") == "#!/bin/bash\nsrun x\n"


def test_the_run_command_takes_no_gpu_record(tmp_path: Path, capsys):
    assert main(["run", "--site", "laptop", "--gpus-per-node", "1", "--no-gpu-record", "--runs-dir", str(tmp_path),
                 "--wait", "--", "true"]) == 0
    run = Path(capsys.readouterr().out.splitlines()[0])
    assert RunFolder.open(run).read()["gpu_record"] == {"enabled": False, "why": "turned off at launch "
                                                        "(--no-gpu-record / gpu_record=False)"}
    assert not (run / "gpu").exists()
    assert main(["run", "--site", "laptop", "--gpus-per-node", "1", "--gpu-record-interval", "0", "--runs-dir",
                 str(tmp_path), "--", "true"]) == 2
    assert "--gpu-record-interval 0.0: give the seconds between two GPU samples" in capsys.readouterr().err
    assert [p.name for p in tmp_path.iterdir()] == [run.name]  # a refused launch leaves no run folder


def test_run_report_gives_the_card_a_table_and_a_picture(tmp_path: Path, capsys):
    import matplotlib

    matplotlib.use("Agg")
    from lumikit.launch import open_run

    run = open_run(run_folder(tmp_path))
    card = run.report()  # outside IPython: the text
    assert "nid005002" in capsys.readouterr().out
    assert list(card.table()[["node", "gcd"]].itertuples(index=False, name=None)) == [
        ("nid005001", 0), ("nid005001", 1), ("nid005002", 0), ("nid005002", 1)]
    fig = card.figure()
    assert [line.get_label() for line in fig.axes[0].get_lines()] == ["nid005001 (generated)",
                                                                      "nid005002 (generated)"]


def test_a_copied_record_without_its_manifest_still_gets_a_card(tmp_path: Path, capsys):
    run = run_folder(tmp_path)
    (run / "manifest.json").unlink()
    assert main(["report", str(run)]) == 0
    out = capsys.readouterr().out
    assert sum(line.startswith("nid005001 ") for line in out.splitlines()) == 2
    assert "GPU-hours: billed - (the manifest has no bill" in out
    assert main(["report", str(tmp_path / "nowhere")]) == 2
    assert "is not a run folder" in capsys.readouterr().err


def test_on_lumi_the_recorder_runs_in_the_jobs_container():
    site = load_site("lumi")
    job = spec(["python", "train.py"], partition="small-g", gpus_per_node=8, container="pytorch",
               account="project_465000000")
    script = with_record("#!/bin/bash\nsrun python train.py\n", plan(job), site, "/scratch/run", job)
    rec = next(line for line in script.splitlines() if "-m lumikit.record sample" in line)
    assert "singularity" in rec and site.container("pytorch").path in rec and "--site lumi" in rec
    # the job's Python (this kernel's, by its full path: the workbook's venv on LUMI), never a bare python3
    assert f"{sys.executable} -m lumikit.record sample" in rec and " python3 -m lumikit.record" not in rec
    assert "--command" not in rec  # LUMI's profile names no stand-in: the recorder picks amd-smi / rocm-smi there
