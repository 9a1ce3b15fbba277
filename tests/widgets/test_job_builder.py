"""The job-builder widget shows the rendered command live, errors inline, and saves the batch script."""
from __future__ import annotations

from lumikit.widgets.job_builder import JobBuilder


def test_shows_the_command_for_the_chosen_shape():
    w = JobBuilder(["python", "train.py"], site="lumi")
    assert "--gpus-per-node=1" in w.out.value and "python train.py" in w.out.value
    w.partition.value = "standard-g"
    w.nodes.value = 2
    w.gcds.value = 8
    w.masks.value = True
    assert "mask_cpu:0x00fe000000000000" in w.out.value
    assert "--ntasks-per-node=8" in w.out.value and "MASTER_ADDR" in w.out.value
    assert "lumikit-job-builder" in w._dom_classes


def test_invalid_choices_show_inline_and_disable_saving():
    w = JobBuilder(site="lumi")
    w.masks.value = True  # masks on small-g without exclusive
    assert "--exclusive" in w.errors.value and w.out.value == "" and w.save.disabled
    w.exclusive.value = True
    assert w.errors.value == "" and not w.save.disabled


def test_save_writes_the_script_once(tmp_path):
    w = JobBuilder(site="lumi")
    w.filename.value = str(tmp_path / "job.sh")
    assert w._save() == tmp_path / "job.sh"
    assert (tmp_path / "job.sh").read_text().startswith("#!/bin/bash")
    assert w._save() is None and "already exists" in w.saved.value


def test_profiling_one_rank():
    w = JobBuilder(site="lumi")
    w.gcds.value = 8
    w.profile.value = "rocprof"
    w.profile_rank.value = "3"
    assert 'case &quot;$SLURM_PROCID&quot; in 3)' in w.out.value


def test_the_user_config_is_read_once_when_the_widget_is_made(monkeypatch, tmp_path):
    import lumikit.widgets.job_builder as builder

    cfg = tmp_path / "config.toml"
    cfg.write_text('account = "project_465000123"\n')
    monkeypatch.setenv("LUMIKIT_CONFIG", str(cfg))
    reads = []
    real = builder.load_config
    monkeypatch.setattr(builder, "load_config", lambda: reads.append(1) or real())
    w = JobBuilder(site="lumi")
    w.gcds.value = 2
    w.kind.value = "sbatch"
    assert "--account=project_465000123" in w.out.value and len(reads) == 1
