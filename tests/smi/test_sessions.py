"""The shipped sessions: names, contents in the real formats, the tidy table, and the generator's bytes."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.errors import LumikitError
from lumikit.smi import synth
from lumikit.smi.sessions import (DATA_DIR, Frame, Session, SessionHeader, SessionWriter, list_sessions,
                                  load_session, read_session, session_frame, write_session)


def test_shipped_sessions() -> None:
    assert list_sessions() == ["ddp-8gcd-starved", "idle-node", "single-gcd-training"]
    formats = {n: load_session(n)[0].format for n in list_sessions()}
    assert formats == {"ddp-8gcd-starved": "rocm-smi-json", "idle-node": "rocm-smi-concise",
                       "single-gcd-training": "rocm-smi-concise"}


def test_ddp_session_starves_gcd4() -> None:
    df = session_frame("ddp-8gcd-starved")
    assert df["sample"].nunique() == 60 and sorted(df["index"].unique()) == list(range(8))
    training = df[df["time"] >= 12]
    busy = training.groupby("index")["gpu_busy_pct"].mean()
    assert busy[4] < 50 and busy.drop(4).min() > 90
    assert training[training["index"] == 4]["sclk_mhz"].median() == 800
    assert training["package"].tolist()[:8] == [0, 0, 1, 1, 2, 2, 3, 3]


def test_single_gcd_session_odd_gcd_prints_no_power() -> None:
    first = load_session("single-gcd-training")[40]
    assert first.device(0).power_w is not None and first.device(1).power_w is None
    assert "Concise Info" in read_session("single-gcd-training").frames[0].stdout


def test_generator_reproduces_the_shipped_bytes(tmp_path: Path) -> None:
    written = synth.write_all(tmp_path)
    for path in written:
        assert path.read_bytes() == (DATA_DIR / path.name).read_bytes(), f"{path.name} drifted: run " \
                                                                          "python -m lumikit.smi.synth"


def test_write_refuses_to_overwrite(tmp_path: Path) -> None:
    sess = Session(SessionHeader(name="x"), [Frame(t=0.0, stdout="GPU[0] : GPU use (%): 5\n")])
    path = write_session(sess, tmp_path / "x.jsonl")
    with pytest.raises(LumikitError, match="exists"):
        write_session(sess, path)
    assert load_session(path)[0].device(0).gpu_busy_pct == 5.0


def test_writer_keeps_frames_until_closed(tmp_path: Path) -> None:
    w = SessionWriter(tmp_path / "rec.jsonl", SessionHeader(name="rec"))
    w.add(Frame(t=0.0, stdout="GPU[0] : GPU use (%): 1\n"))
    assert w.partial.read_text().count("\n") == 2 and not (tmp_path / "rec.jsonl").exists()
    assert w.close() == tmp_path / "rec.jsonl"
    assert [s.timestamp for s in load_session(tmp_path / "rec.jsonl")] == [0.0]


def test_unknown_session_names_the_shipped_ones() -> None:
    with pytest.raises(LumikitError, match="ddp-8gcd-starved"):
        load_session("nope")
