"""The small-files experiment of module 09: the same bytes written twice, and both read back timed."""
from __future__ import annotations

import numpy as np
import pytest

from lumikit.errors import LumikitError
from lumikit.io_bench import best_of, time_reads, write_image_files


def test_the_small_files_and_the_one_file_hold_the_same_images(tmp_path) -> None:
    files = write_image_files(tmp_path, 20, seed=3)
    as_files = [p.read_bytes() for p in sorted(files.small_files.iterdir())]
    assert len(as_files) == 20 and files.megabytes == pytest.approx(20 * 3072 / 1e6)
    assert b"".join(as_files) == np.load(files.one_file).tobytes()


def test_both_reads_are_timed_in_seconds(tmp_path) -> None:
    times = time_reads(write_image_files(tmp_path, 10), repeat=2)
    assert list(times) == ["many small files", "one .npy file"]
    assert all(t > 0 for t in times.values())


def test_an_existing_set_is_never_overwritten(tmp_path) -> None:
    write_image_files(tmp_path, 2)
    with pytest.raises(LumikitError, match="small-files exists; pass a new folder"):
        write_image_files(tmp_path, 2)


def test_best_of_keeps_the_fastest_call() -> None:
    delays = iter([0.02, 0.0, 0.01])
    assert best_of(lambda: __import__("time").sleep(next(delays)), repeat=3) < 0.01
