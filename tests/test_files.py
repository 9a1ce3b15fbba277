"""Files: atomic replacement keeps the old content on failure and leaves no temporary files; the safe readers take
regular files only, of a bounded size."""
from __future__ import annotations

import gzip
import os

import pytest

from lumikit.errors import LumikitError
from lumikit.files import (MAX_READ_ENV, atomic_path, gunzip_bounded, open_regular, read_bytes, read_text,
                           regular_file, write_atomic, write_new)


def test_write_atomic_replaces_the_content_and_creates_folders(tmp_path):
    target = tmp_path / "deep" / "notes.txt"
    write_atomic(target, "first")
    write_atomic(target, b"second")
    assert target.read_text() == "second"
    assert [p.name for p in target.parent.iterdir()] == ["notes.txt"]


def test_a_failed_streaming_write_keeps_the_old_file_and_removes_the_temporary(tmp_path):
    target = tmp_path / "trace.json"
    target.write_text("old")
    with pytest.raises(RuntimeError, match="disk full"):
        with atomic_path(target) as tmp:
            tmp.write_text("half a fi")
            raise RuntimeError("disk full")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["trace.json"]


def test_write_new_refuses_to_overwrite_unless_forced(tmp_path):
    target = write_new(tmp_path / "job.sh", "#!/bin/bash\n")
    with pytest.raises(LumikitError, match="already exists.*force"):
        write_new(target, "other")
    write_new(target, "other", force=True)
    assert target.read_text() == "other"


# -- the safe readers ------------------------------------------------------------------------------------
def test_a_regular_file_is_read_and_its_text_decoded(tmp_path):
    path = tmp_path / "log.out"
    path.write_bytes(b"step 1 \xff loss 0.5\n")
    assert read_bytes(path) == b"step 1 \xff loss 0.5\n"
    assert read_text(path) == "step 1 \ufffd loss 0.5\n"


@pytest.mark.parametrize("make, kind", [(lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
                                        (lambda p: p.mkdir(), "a folder")], ids=["fifo", "folder"])
def test_anything_but_a_regular_file_is_refused_by_name_and_kind(tmp_path, make, kind):
    path = tmp_path / "thing"
    make(path)
    with pytest.raises(LumikitError) as err:
        read_text(path, "a job log")
    assert str(err.value).startswith(f"{path}: is {kind}, not a regular file") and "give a job log" in str(err.value)


def test_a_device_and_a_missing_file_are_refused(tmp_path):
    with pytest.raises(LumikitError, match="/dev/zero: is a character device"):
        read_bytes("/dev/zero")
    with pytest.raises(LumikitError, match="no such file; give a trace"):
        regular_file(tmp_path / "gone.json", "a trace")


def test_a_fifo_swapped_in_after_the_stat_never_blocks_the_open(tmp_path, monkeypatch):
    """The race: the path was a file when stat-ed, a FIFO when opened. O_NONBLOCK + fstat refuses it at once."""
    import lumikit.files as files

    fifo = tmp_path / "swapped"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "regular_file", lambda *a, **k: None)  # the stat saw a regular file
    with pytest.raises(LumikitError, match="is a FIFO"):
        open_regular(fifo)


def test_files_above_the_limit_are_refused_without_being_read(tmp_path, monkeypatch):
    sparse = tmp_path / "huge.out"
    with open(sparse, "wb") as fh:
        fh.truncate(2 << 30)  # 2 GB of holes: nothing on disk, 2 GB to read
    with pytest.raises(LumikitError) as err:
        read_bytes(sparse)
    assert "2.0 GB, above the 512 MB limit" in str(err.value) and f"{MAX_READ_ENV}=4096" in str(err.value)
    small = tmp_path / "small.out"
    small.write_bytes(b"x" * (3 << 20))
    monkeypatch.setenv(MAX_READ_ENV, "2")
    with pytest.raises(LumikitError, match="3 MB, above the 2 MB limit"):
        read_bytes(small)
    monkeypatch.setenv(MAX_READ_ENV, "4")
    assert len(read_bytes(small)) == 3 << 20
    monkeypatch.setenv(MAX_READ_ENV, "lots")
    with pytest.raises(LumikitError, match="a number of megabytes"):
        read_bytes(small)


def test_a_gzip_bomb_is_refused_and_several_members_are_read(monkeypatch):
    monkeypatch.setenv(MAX_READ_ENV, "1")
    bomb = gzip.compress(b"\0" * (8 << 20))
    assert len(bomb) < 20_000
    with pytest.raises(LumikitError, match="decompresses to more than the 1 MB limit"):
        gunzip_bounded(bomb, "bomb.jsonl.gz")
    assert gunzip_bounded(gzip.compress(b"a\n") + gzip.compress(b"b\n"), "two.gz") == b"a\nb\n"
    with pytest.raises(EOFError):
        gunzip_bounded(gzip.compress(b"abc" * 100)[:-6], "cut.gz")


def test_bounded_json_refuses_deep_nesting_huge_numbers_and_non_finite_values() -> None:
    from lumikit.errors import ParseError
    from lumikit.files import load_json_bounded

    assert load_json_bounded(b'{"a": [1, 2.5, null], "b": {"c": "x"}}', "ok.json") == {"a": [1, 2.5, None],
                                                                                         "b": {"c": "x"}}
    assert load_json_bounded("[" * 100 + "]" * 100, "deep.json", max_depth=100) is not None
    for text, why in [("[" * 101 + "]" * 101, "nested more than 100"),
                      ("[" * 100_000 + "]" * 100_000, "nested more than 100"),
                      ('{"n": ' + "9" * 5000 + "}", "an integer of 5,000 digits"),
                      ("[1e400]", "beyond a double's range"), ("[NaN]", "NaN is not a JSON number"),
                      ("[-Infinity]", "-Infinity is not a JSON number"), (b"\xff\xfe{", "not valid JSON"),
                      ('{"a": 1', "not valid JSON")]:
        with pytest.raises(ParseError, match=why) as info:
            load_json_bounded(text, "bad.json")
        assert str(info.value).startswith("bad.json: ")


@pytest.mark.parametrize("mask, mode", [(0o002, 0o664), (0o022, 0o644), (0o077, 0o600)])
def test_atomic_writes_keep_the_umask_group_bits_not_a_private_temp_mode(tmp_path, mask, mode) -> None:
    old = os.umask(mask)
    try:
        written = write_atomic(tmp_path / "manifest.json", "{}\n")
        new = write_new(tmp_path / "class.csv", "a,b\n")
    finally:
        os.umask(old)
    assert written.stat().st_mode & 0o777 == mode and new.stat().st_mode & 0o777 == mode


def test_the_secrets_file_stays_private_whatever_the_umask(tmp_path, monkeypatch) -> None:
    from lumikit.launch.runfolder import RunFolder, write_secrets

    monkeypatch.setenv("LUMIKIT_SECRETS_DIR", str(tmp_path / "secrets"))
    old = os.umask(0o002)
    try:
        path = write_secrets(RunFolder(tmp_path / "run"), {"HF_TOKEN": "hf_x"})
    finally:
        os.umask(old)
    assert path is not None and path.stat().st_mode & 0o777 == 0o600
