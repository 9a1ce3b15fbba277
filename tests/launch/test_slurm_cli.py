"""`lumikit run --wait`, `status` and `tail` on lumi-sim: a failed Slurm job says why."""
from __future__ import annotations

import pytest

from lumikit.cli import main

pytestmark = pytest.mark.slurm
CODE = ("import os, sys; r = os.environ['SLURM_PROCID']; print('hello from', r, flush=True); "
        "print('rank', r, 'cannot go on', file=sys.stderr); sys.exit(3 if r == '1' else 0)")


def test_a_failed_slurm_run_says_why(slurm_cluster, tmp_path, capsys):
    assert main(["run", "--site", "lumi-sim", "-p", "small-g", "-n", "2", "--runs-dir", str(tmp_path), "--wait",
                 "--timeout", "120", "--", "python3", "-c", CODE]) == 1
    out, err = capsys.readouterr()
    path = out.splitlines()[0]
    assert "hello from 0" in out and out.rstrip().endswith("FAILED")  # rank 0 streamed, the state last
    assert "exit code 3 (rank 1)" in err and "rank 1 cannot go on" in err
    assert main(["status", path]) == 0
    assert "FAILED" in (status := capsys.readouterr().out) and "exit code 3" in status
    assert main(["tail", path]) == 0
    tail = capsys.readouterr().out
    assert "==> rank1.err <==" in tail and "rank 1 cannot go on" in tail and "hello from 1" in tail
