"""PyTorch flight recorder dumps in the log doctor, on dumps recorded with torch (gloo, a skipped collective)."""
from __future__ import annotations

import pickle
import shutil
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.errors import ParseError
from lumikit.logs.doctor import diagnose
from lumikit.logs.flight_recorder import find_hangs, is_flight_recorder_dump, read_flight_recorder

DATA = Path(__file__).parent / "data" / "flight_recorder"


@pytest.mark.parametrize("suffix", ["", ".json"])
def test_a_recorded_dump_is_read_as_torch_wrote_it(suffix):
    record = read_flight_recorder(DATA / f"fr_trace_rank_0{suffix}")
    assert record.rank == 0 and record.version == "2.10"
    assert [e["collective_seq_id"] for e in record.entries] == [1, 2, 3]
    assert [e["profiling_name"] for e in record.entries] == ["gloo:all_reduce", "gloo:broadcast", "gloo:all_reduce"]
    assert record.last_seq() == {"default_pg (id 0)": 3}
    assert read_flight_recorder(DATA / f"fr_trace_rank_1{suffix}").last_seq() == {"default_pg (id 0)": 2}


def test_the_rank_that_never_joined_is_named():
    (hang,) = find_hangs(read_flight_recorder(DATA / f"fr_trace_rank_{r}") for r in (0, 1))
    assert (hang.seq, hang.collective, hang.waiting, hang.missing) == (3, "gloo:all_reduce", (0,), (1,))
    assert hang.describe() == ("rank 1 (last: collective 2) never joined collective 3 (gloo:all_reduce) of process "
                               "group default_pg (id 0); rank 0 waited in it")


def test_the_doctor_finds_the_dumps_in_a_run_folder(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for r in (0, 1):
        shutil.copy(DATA / f"fr_trace_rank_{r}", run / f"nccl_trace_rank_{r}")
    (run / "slurm-1.out").write_text("epoch 1\n")
    (diagnosis,) = [d for d in diagnose(run) if d.signature == "collective-never-joined"]
    assert "rank 1 (last: collective 2) never joined collective 3" in diagnosis.line
    assert "py-spy dump" in diagnosis.fix and diagnosis.file.endswith("nccl_trace_rank_0")
    assert main(["doctor", str(run)]) == 1  # a problem found
    assert "never joined collective 3" in capsys.readouterr().out


def test_a_pickle_that_builds_objects_is_refused(tmp_path):
    evil = tmp_path / "fr_trace_rank_0"
    evil.write_bytes(pickle.dumps({"entries": [], "pg_config": {}, "x": Path("/")}))
    assert is_flight_recorder_dump(evil)
    with pytest.raises(ParseError, match="names pathlib"):
        read_flight_recorder(evil)
    cut = tmp_path / "fr_trace_rank_1"
    cut.write_bytes((DATA / "fr_trace_rank_1").read_bytes()[:200])
    with pytest.raises(ParseError, match="cut while being written"):
        read_flight_recorder(cut)
