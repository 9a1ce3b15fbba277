"""The job spec checks its own types and reads Slurm's totals (--ntasks, --gpus, --gpus-per-task) as Slurm does."""
from __future__ import annotations

import pytest

from lumikit.errors import SpecError
from lumikit.jobs import JobSpec, is_secret, parse_mem_mb, render_srun, spec


@pytest.mark.parametrize("field, value, words", [
    ("binds", "/scratch", "binds=['/scratch']"),
    ("bind_sets", "user", "as a list"),
    ("env_recipes", "caches", "as a list"),
    ("secrets", "HF_TOKEN", "as a list"),
    ("nodes", "2", "whole number"),
    ("gpus_per_node", 1.5, "whole number"),
    ("exclusive", "yes", "True or False"),
    ("time", 30, "0:30:00"),
    ("mem", 16, "60G"),
    ("env", "A=B", "dict"),
    ("env", [("A",)], "pair"),
    ("profile_ranks", "0", "list"),
    ("nodes", True, "whole number"),
])
def test_wrong_types_are_refused_where_the_spec_is_made(field, value, words):
    with pytest.raises(SpecError, match=words.replace("[", r"\[").replace("]", r"\]").replace("(", r"\(")) as err:
        spec(["true"], **{field: value})
    assert err.value.field == field


def test_one_bind_is_one_bind():
    argv = render_srun(spec(["true"], binds=("/scratch/project_465000000",), container="pytorch"), "lumi").argv
    bound = [argv[i + 1] for i, a in enumerate(argv) if a == "-B"]
    assert "/scratch/project_465000000" in bound and min(len(b) for b in bound) > 1


def test_totals_give_the_shape_on_each_node():
    assert spec(["t"], ntasks=4, nodes=2).ntasks_per_node == 2
    assert spec(["t"], gpus=3).gpus_per_node == 3
    assert spec(["t"], ntasks=4, gpus_per_task=2).gpus_per_node == 8
    job = spec(["t"], ntasks=4, nodes=1)
    assert job.with_(nodes=2).ntasks_per_node == 2  # derived again, not carried over
    assert JobSpec.from_dict(job.to_dict()) == job


@pytest.mark.parametrize("options, words", [
    (dict(ntasks=3, nodes=2), "unequal"),
    (dict(ntasks=4, ntasks_per_node=1), "only one of"),
    (dict(gpus=8, nodes=2), "--gpus-per-node=4"),
    (dict(gpus=2, gpus_per_task=1), "one GPU option"),
    (dict(gpus=2, gpus_per_node=4), "only one GPU option"),
    (dict(ntasks=0), "at least 1"),
])
def test_totals_that_cannot_be_run_evenly_are_refused_with_the_option_to_use(options, words):
    with pytest.raises(SpecError, match=words):
        spec(["t"], **options)


@pytest.mark.parametrize("text, mb", [("16", 16), ("16M", 16), ("2G", 2048), ("16GB", 16384), ("1T", 1024 ** 2),
                                      ("512k", 0.5)])
def test_memory_is_read_as_slurm_reads_it(text, mb):
    assert parse_mem_mb(text, "mem") == mb


def test_slurm_takes_whole_memory_numbers_only():
    with pytest.raises(SpecError, match="1536M"):
        parse_mem_mb("1.5G", "mem")


def test_secret_names_and_their_redaction_in_the_spec_record():
    assert all(is_secret(n) for n in ("HF_TOKEN", "WANDB_API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                                      "FTP_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS"))
    assert not is_secret("TOKENIZERS_PARALLELISM") and not is_secret("PATH")
    job = spec(["t"], env={"HF_TOKEN": "hf_x", "COURSE": "ai", "MINE": "m"}, secrets=["MINE"])
    assert job.secret_names() == ("HF_TOKEN", "MINE")
    assert job.to_dict()["env"] == [["HF_TOKEN", "<redacted>"], ["COURSE", "ai"], ["MINE", "<redacted>"]]
