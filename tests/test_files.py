"""Writing files: atomic replacement keeps the old content on failure and leaves no temporary files."""
from __future__ import annotations

import pytest

from lumikit.errors import LumikitError
from lumikit.files import atomic_path, write_atomic, write_new


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
