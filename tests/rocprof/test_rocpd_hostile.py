"""Hostile rocpd databases (issue 37): every one ends within 10 s and 500 MB with at most one line on stderr, through
`rocprof stats`, `rocprof summary`, `trace idle` and `trace critical-path`. Each database is built here; each case
runs in its own Python process, whose own peak memory is read from /proc (VmHWM)."""
from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from lumikit.cli import main
from lumikit.testing import rocprof_outputs as gen
from lumikit.testing.rocpd_calls import SUFFIX, write_calls_db

REPO = Path(__file__).resolve().parents[2]
COMMANDS = (["rocprof", "stats"], ["rocprof", "summary"], ["trace", "idle"], ["trace", "critical-path"])
#: Runs the four commands on one database in a fresh interpreter; prints their exit codes, stderr line counts,
#: seconds, whether a traceback appeared, and the peak RSS of the whole process.
PROBE = r"""
import contextlib, io, json, resource, sys, time
from lumikit.cli import main
out = []
for cmd in json.loads(sys.argv[2]):
    err = io.StringIO()
    t0 = time.monotonic()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = main(cmd + [sys.argv[1]])
        except SystemExit as exc:
            rc = exc.code
    text = err.getvalue()
    out.append({"cmd": cmd, "rc": rc, "lines": text.count("\n"), "s": time.monotonic() - t0,
                "traceback": "Traceback" in text, "err": text[:300]})
# VmHWM is this interpreter's own peak: ru_maxrss survives exec, so it would report the forking test process's
hwm = [line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:")]
peak = int(hwm[0]) / 1024 if hwm else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"runs": out, "peak_mb": peak}))
"""


def _probe(path: Path) -> dict:
    env = {"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(path), json.dumps(COMMANDS)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=str(path.parent))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def _generated(path: Path) -> tuple[Path, str]:
    """A real-looking one-process database (with its unsuffixed views) to spoil."""
    write_calls_db(path)
    return path, SUFFIX


def recursive_view(path: Path) -> None:
    """The 90 KB case of issue 37: rocpd_kernel_dispatch is an endless WITH RECURSIVE view (no table of that
    name), beside real tables."""
    db, sfx = _generated(path)
    with sqlite3.connect(db) as con:
        for (view,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            con.execute(f'DROP VIEW "{view}"')
        con.execute(f'DROP TABLE "rocpd_kernel_dispatch{sfx}"')
        endless = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i AS id, 'g' AS guid, "
                   "1 AS nid, 1 AS pid, 1 AS tid, 1 AS agent_id, 1 AS kernel_id, i AS dispatch_id, 1 AS queue_id, "
                   "1 AS stream_id, i AS start, i + 1 AS \"end\", 1 AS event_id FROM n")
        con.execute(f'CREATE VIEW "rocpd_kernel_dispatch{sfx}" AS {endless}')
        con.execute(f'CREATE VIEW "rocpd_kernel_dispatch" AS {endless}')


def huge_names(path: Path) -> None:
    """Kernel and call names of 3 MB each."""
    db, sfx = _generated(path)
    with sqlite3.connect(db) as con:
        con.execute(f"UPDATE \"rocpd_string{sfx}\" SET string = string || printf('%.*c', 3000000, 'x')")
        con.execute(f"UPDATE \"rocpd_info_kernel_symbol{sfx}\" SET display_name = printf('%.*c', 3000000, 'k')")


def cross_join(path: Path) -> None:
    """Views that cross-join the tables with themselves, under the names a careless reader queries, and a kernel
    symbol table whose ids repeat (no primary key), so a join by id multiplies rows."""
    db, sfx = _generated(path)
    with sqlite3.connect(db) as con:
        for (view,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            con.execute(f'DROP VIEW "{view}"')
        con.execute(f'CREATE VIEW "rocpd_kernel_dispatch" AS SELECT a.* FROM "rocpd_region{sfx}" a, '
                    f'"rocpd_region{sfx}" b, "rocpd_region{sfx}" c, "rocpd_region{sfx}" d')
        sym = f"rocpd_info_kernel_symbol{sfx}"
        con.execute(f'CREATE TABLE "{sym}_dup" AS SELECT * FROM "{sym}"')
        con.execute(f'DROP TABLE "{sym}"')
        con.execute(f'ALTER TABLE "{sym}_dup" RENAME TO "{sym}"')
        con.execute(f'INSERT INTO "{sym}" SELECT a.* FROM "{sym}" a, (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL '
                    'SELECT i + 1 FROM n WHERE i < 3000) SELECT i FROM n)')


def randomblob_views(path: Path) -> None:
    """Views that hand back a gigabyte of random bytes per row, under every unsuffixed name."""
    db, sfx = _generated(path)
    with sqlite3.connect(db) as con:
        for (view,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall():
            con.execute(f'DROP VIEW "{view}"')
            con.execute(f'CREATE VIEW "{view}" AS SELECT randomblob(1000000000) AS id, randomblob(1000000000) AS '
                        f'start FROM "{view}{sfx}"')


def many_suffixes(path: Path) -> None:
    """Thousands of table suffixes, each with the tables a kernel reader needs."""
    con = sqlite3.connect(path)
    con.executescript("BEGIN;" + "".join(
        f'CREATE TABLE "rocpd_kernel_dispatch_{i:08d}" (id INTEGER PRIMARY KEY, kernel_id INTEGER, start INTEGER, '
        f'"end" INTEGER); CREATE TABLE "rocpd_info_kernel_symbol_{i:08d}" (id INTEGER PRIMARY KEY, display_name TEXT);'
        for i in range(3000)) + "COMMIT;")
    con.close()


HOSTILE = {f.__name__: f for f in (recursive_view, huge_names, cross_join, randomblob_views, many_suffixes)}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_database_ends_within_10_s_and_500_mb_with_one_line(tmp_path, case):
    path = tmp_path / f"{case}_results.db"
    HOSTILE[case](path)
    report = _probe(path)
    assert report["peak_mb"] < 500, report
    for run in report["runs"]:
        assert run["s"] < 10, run
        assert not run["traceback"] and run["lines"] <= 1, run
        assert run["rc"] in (0, 2), run
        if run["rc"]:
            assert str(path) in run["err"], run  # the error names the file


def test_infinite_timestamps_in_summary_are_one_line_naming_the_damage(tmp_path, capsys):
    path = gen.write_rocpd(tmp_path / "1_results.db", gen.generated_run(nodes=1, processes_per_node=1, steps=1))
    with sqlite3.connect(path) as con:
        (sfx,) = [n[len("rocpd_kernel_dispatch"):] for (n,) in con.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch%'")]
        con.execute(f'UPDATE "rocpd_kernel_dispatch{sfx}" SET "end" = 1e999 WHERE id = 1')
    for command in ("summary", "stats"):
        assert main(["rocprof", command, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "without a time in nanoseconds" in err and str(path) in err


def test_a_database_without_processes_is_one_line_in_critical_path(tmp_path, capsys):
    path = write_calls_db(tmp_path / "known_results.db")
    with sqlite3.connect(path) as con:
        con.execute(f'DELETE FROM "rocpd_info_process{SUFFIX}"')
    for command in ("critical-path", "idle"):
        assert main(["trace", command, str(path)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert "process" in err and str(path) in err


def test_a_database_without_hip_calls_is_refused_before_its_dispatches_are_read(tmp_path, capsys, monkeypatch):
    """A kernel-only run: the critical path names the missing option without reading a dispatch."""
    from lumikit.rocprof import rocpd_events

    path = write_calls_db(tmp_path / "known_results.db", steps=50)
    with sqlite3.connect(path) as con:
        con.execute(f'DELETE FROM "rocpd_region{SUFFIX}"')
    read = []
    monkeypatch.setattr(rocpd_events, "_read_layout", lambda *a: read.append(a) or None)
    assert main(["trace", "critical-path", str(path)]) == 2
    assert "--hip-trace" in capsys.readouterr().err
    assert read == []
