"""A run's job id is trusted only for the job the run submitted: the same id, named and owned the same, submitted
at about the recorded time. A stand-in ``scontrol`` (generated: it prints the fields ``scontrol -o show job``
prints) answers as another user's job of the same id and name would after a rebuilt cluster."""
from __future__ import annotations

import os
import stat
import time
from datetime import datetime

import pytest

from lumikit.errors import LaunchError
from lumikit.launch import RunFolder, SlurmBackend


def stand_in_scontrol(bin_dir, job_id: str, name: str, user: str, state: str = "RUNNING"):
    bin_dir.mkdir()
    submit = datetime.now().isoformat(timespec="seconds")
    line = (f"JobId={job_id} JobName={name} UserId={user}(1234) GroupId={user}(1234) JobState={state} "
            f"RunTime=00:00:05 SubmitTime={submit} StartTime={submit} EndTime=Unknown NodeList=nid005001 "
            "ExitCode=0:0")
    tool = bin_dir / "scontrol"
    tool.write_text(f"#!/bin/sh\necho '{line}'\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def run_folder(tmp_path):
    folder = RunFolder.create("mine", tmp_path / "runs")
    folder.update(backend="slurm", site="lumi", state="PENDING", job_id="4242", job_name="mine",
                  submitted_epoch=round(time.time(), 3), job_user="learner")
    return folder


def test_the_same_id_and_name_of_another_user_is_not_this_runs_job(tmp_path, monkeypatch, run_folder):
    stand_in_scontrol(tmp_path / "bin", "4242", "mine", "someone")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(LaunchError, match="job 4242 is not .*'s any more.*by someone.*as learner.*last known "
                                          "state is PENDING"):
        SlurmBackend("lumi").status(run_folder)
    assert run_folder.read()["state"] == "PENDING"


def test_this_runs_own_job_is_reported(tmp_path, monkeypatch, run_folder):
    stand_in_scontrol(tmp_path / "bin", "4242", "mine", "learner")
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert SlurmBackend("lumi").status(run_folder) == "RUNNING"
