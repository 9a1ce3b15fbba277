"""Hostile files given as a flight recorder dump, as a run's manifest and as a run's GPU record
(``RUN/gpu/<node>.jsonl``): how long each command takes to refuse them, whether it says so in one line, and how
much memory a 35-byte pickle bomb costs the doctor.

Each case runs ``python -m lumikit ...`` in a fresh process (start-up included, as a learner meets it) on a FIFO
nobody writes to, ``/dev/zero``, a 3 GB sparse file and 100,000 nested brackets; the target is under 5 s and one
line on stderr with exit status 2. The bomb runs the doctor in a process that reports its peak memory growth
(target: under 200 MB). Prints a table; exit status 1 when a case misses its target.

    .venv/bin/python benchmarks/bench_hostile_files.py
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.testing.bad_inputs import HOSTILE_KINDS, NESTED, write_hostile  # noqa: E402
from lumikit.testing.records import node_names, write_generated_record  # noqa: E402

LIMIT_S = 5.0
BOMB_LIMIT_MB = 200
#: A 30-byte pickle naming "entries" and "pg_config" (so the doctor takes it for a dump) whose LONG_BINPUT asks
#: the C unpickler for a memo of 2^31 entries (16 GB) unless the reader refuses it first.
BOMB = b"\x80\x04}(\x8c\x07entries\x8c\x09pg_configr\xff\xff\xff\x7f."


def _run(argv: list[str]) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "lumikit", *argv], capture_output=True, text=True, timeout=120,
                         env=env, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started, out.returncode, out.stderr


def main() -> int:
    rows, ok = [], True
    with tempfile.TemporaryDirectory(prefix="lumikit-hostile-") as tmp:
        for kind in HOSTILE_KINDS:
            slug = kind.replace(" ", "-").replace("/", "").replace(",", "")
            dump = Path(tmp) / f"dump-{slug}" / "nccl_trace_rank_0.json"
            dump.parent.mkdir()
            write_hostile(kind, dump, b'{"pg_config": {}, "entries": ' + NESTED + b"}")
            run = Path(tmp) / f"run-{slug}"
            run.mkdir()
            write_hostile(kind, run / "manifest.json")
            recorded = write_generated_record(Path(tmp) / f"record-{slug}", nodes=1, gcds=2, samples=4)
            record = recorded / "gpu" / f"{node_names(1)[0]}.jsonl"  # a finished run whose record is replaced
            record.unlink()
            write_hostile(kind, record)
            for what, argv in (("flight recorder dump", ["logs", "flight-recorder", str(dump)]),
                               ("flight recorder dump", ["doctor", str(dump)]),
                               ("manifest", ["status", str(run)]), ("manifest", ["report", str(run)]),
                               ("GPU record", ["report", str(recorded)])):
                seconds, status, err = _run(argv)
                one_line = status == 2 and len(err.strip().splitlines()) == 1
                ok &= one_line and seconds < LIMIT_S
                rows.append((what, kind, f"lumikit {argv[0]}{' ' + argv[1] if argv[0] == 'logs' else ''}", seconds,
                             status, one_line))
        bomb = Path(tmp) / "nccl_trace_rank_0"
        bomb.write_bytes(BOMB)
        code = ("import resource, sys\nfrom lumikit.logs.doctor import diagnose\nfrom lumikit.errors import "
                "LumikitError\nbefore = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\ntry:\n    "
                "diagnose(sys.argv[1])\nexcept LumikitError as exc:\n    print('refused:', exc, file=sys.stderr)\n"
                "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)\n")
        out = subprocess.run([sys.executable, "-c", code, str(bomb)], capture_output=True, text=True, timeout=120,
                             env={**os.environ, "PYTHONPATH": str(REPO)})
        grown = float(out.stdout.strip() or "nan")
        ok &= grown < BOMB_LIMIT_MB and "refused" in out.stderr
    print(f"{'given as':<22} {'input':<24} {'command':<30} {'seconds':>8} {'exit':>5} {'one line':>9}")
    for what, kind, command, seconds, status, one_line in rows:
        print(f"{what:<22} {kind:<24} {command:<30} {seconds:>8.2f} {status:>5} {str(one_line):>9}")
    print(f"\n{len(BOMB)}-byte pickle bomb given to the doctor: peak memory grew {grown:.1f} MB "
          f"(limit {BOMB_LIMIT_MB}); {out.stderr.strip()[:160]}")
    print(f"slowest case: {max(r[3] for r in rows):.2f} s (limit {LIMIT_S:g} s, Python start-up included)")
    ok &= every_command()
    return 0 if ok else 1


def every_command() -> bool:
    """Every CLI entry point (read from the argparse tree) on each hostile kind, forked from a process that has
    imported lumikit (start-up not counted): the targets are 5 s, 200 MB of memory growth and one line."""
    import warnings

    from lumikit.testing.cli_walk import READS_NO_FILE, walk

    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="lumikit-walk-") as tmp:
        cases = walk(Path(tmp), timeout=60)
    print(f"\nevery command ({len({c.command for c in cases})} read files; {len(READS_NO_FILE)} read none: "
          f"{', '.join(sorted(READS_NO_FILE))}) on {len({c.kind for c in cases})} hostile kinds:")
    print(f"{'command':<24} {'input':<24} {'seconds':>8} {'grew MB':>8} {'exit':>5}  problem")
    bad = 0
    for c in cases:
        problem = c.problem(LIMIT_S, BOMB_LIMIT_MB)
        bad += bool(problem)
        print(f"{c.command:<24} {c.kind:<24} {c.seconds:>8.2f} {c.grew_mb:>8.0f} {str(c.status):>5}  "
              f"{problem.split(': ', 2)[1] if problem else ''}")
    print(f"{len(cases)} cases, {bad} missing a target; slowest {max(c.seconds for c in cases):.2f} s, largest "
          f"growth {max(c.grew_mb for c in cases):.0f} MB (load average {os.getloadavg()[0]:.1f} on "
          f"{os.cpu_count()} cores)")
    return bad == 0


if __name__ == "__main__":
    sys.exit(main())
