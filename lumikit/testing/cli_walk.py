"""Every CLI entry point given hostile files: a FIFO nobody writes to, ``/dev/zero``, a 3 GB sparse file and
100,000 nested brackets, wherever the command reads a file (the file itself, a site profile, a run folder's
manifest and GPU record, a roster, a reference list, a rehearsal's driver file, a solution notebook).

The commands come from the argparse tree (:func:`leaf_commands`), so a new command must be given its hostile form
here (:data:`FORMS`) or a reason it reads no file (:data:`READS_NO_FILE`). Each case runs in a process forked from
one that has imported lumikit already (a case costs its own work, not Python's start-up), with a time limit; its
memory growth is its peak resident size less the parent's at the fork. Used by ``tests/test_bad_inputs.py`` (a
generous limit: two shared cores) and ``benchmarks/bench_hostile_files.py`` (the 5 s and 200 MB targets).
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from .bad_inputs import HOSTILE_KINDS, write_hostile

#: Commands that read no file a user names (they render a command line, launch, or write the shipped files).
READS_NO_FILE = {
    "attach": "prints the srun line that attaches to a job id",
    "handout": "copies the shipped notebooks to a new folder",
    "verify": "runs the instructor's solution notebooks in a kernel (reads the workbook's own files)",
}


@dataclass(frozen=True)
class Workspace:
    """The hostile files of one kind, placed where each command looks for its input."""

    root: Path
    kind: str

    @property
    def file(self) -> Path:
        return self.root / "input.json"

    @property
    def site(self) -> Path:
        return self.root / "site.toml"

    @property
    def run(self) -> Path:
        return self.root / "runs" / "run"

    @classmethod
    def make(cls, root: Path, kind: str) -> "Workspace":
        ws = cls(root, kind)
        root.mkdir(parents=True)
        for path in (ws.file, ws.site, root / "seeds.csv"):
            write_hostile(kind, path)
        (ws.run / "gpu").mkdir(parents=True)
        write_hostile(kind, ws.run / "manifest.json")
        write_hostile(kind, ws.run / "gpu" / "nid001.jsonl")
        for folder, name in (("solutions", "01_hostile.py"), ("class/alice/progress", "01.first.json"),
                             ("rehearsal", "driver.json"), ("reference", "SOURCES.toml")):
            (root / folder).mkdir(parents=True)
            write_hostile(kind, root / folder / name)
        (root / "exercises").mkdir()
        return ws


def _file(*before: str, after: tuple[str, ...] = ()) -> Callable[[Workspace], list[str]]:
    return lambda ws: [*before, str(ws.file), *(a.replace("{tmp}", str(ws.root)) for a in after)]


def _site(*before: str, after: tuple[str, ...] = ()) -> Callable[[Workspace], list[str]]:
    return lambda ws: [*before, "--site", str(ws.site), *after]


def _run(*before: str, after: tuple[str, ...] = ()) -> Callable[[Workspace], list[str]]:
    return lambda ws: [*before, str(ws.run), *after]


#: Command -> the argv that makes it read a hostile file.
FORMS: dict[str, Callable[[Workspace], list[str]]] = {
    "srun": _site("srun", after=("true",)), "salloc": _site("salloc", after=("true",)),
    "sbatch": _site("sbatch", after=("true",)), "vllm": _site("vllm"), "site": _site("site"),
    "run": lambda ws: ["run", "--backend", "dry-run", "--site", str(ws.site), "--runs-dir", str(ws.root / "new"),
                       "true"],
    "status": _run("status"), "cancel": _run("cancel"), "tail": _run("tail"), "report": _run("report"),
    "smi parse": _file("smi", "parse"), "smi watch": _run("smi", "watch", after=("--count", "1")),
    "smi sessions": lambda ws: ["smi", "sessions", "--runs", str(ws.run.parent)],
    "smi record": lambda ws: ["smi", "record", "--replay", str(ws.file), "--duration", "1", "-o",
                              str(ws.root / "out.jsonl")],
    "trace summary": _file("trace", "summary"), "trace collectives": _file("trace", "collectives"),
    "trace memory": _file("trace", "memory"), "trace critical-path": _file("trace", "critical-path"),
    "trace idle": _file("trace", "idle"), "trace diff": lambda ws: ["trace", "diff", str(ws.file), str(ws.file)],
    "trace slice": _file("trace", "slice", after=("-o", "{tmp}/slice.json.gz")),
    "rocprof stats": _file("rocprof", "stats"), "rocprof summary": _file("rocprof", "summary"),
    "rocprof counters": _file("rocprof", "counters"), "rocprof roofline": _file("rocprof", "roofline"),
    "logs progress": _file("logs", "progress"), "logs hip": _file("logs", "hip"), "logs rccl": _file("logs", "rccl"),
    "logs rccl-tests": _file("logs", "rccl-tests"), "logs flight-recorder": _file("logs", "flight-recorder"),
    "doctor": _file("doctor"), "advise": _file("advise"), "trace check": _file("trace", "check"),
    "exercises generate": lambda ws: ["exercises", "generate", "--solutions", str(ws.root / "solutions"),
                                      "--exercises", str(ws.root / "exercises")],
    "exercises check": lambda ws: ["exercises", "check", "--solutions", str(ws.root / "solutions"),
                                   "--exercises", str(ws.root / "exercises")],
    "progress": lambda ws: ["progress", "--class", str(ws.root / "class"), "--grade", "--seeds",
                            str(ws.root / "seeds.csv"), "--csv", str(ws.root / "class.csv")],
    "class": lambda ws: ["class", str(ws.root / "class")],
    "rehearse": lambda ws: ["rehearse", "--collect", str(ws.root / "rehearsal")],
    "reference add": lambda ws: ["reference", "add", str(ws.run), "--source", "hostile", "--licence", "CC-BY-4.0",
                                 "--reference-dir", str(ws.root / "packed")],
    "reference list": lambda ws: ["reference", "list", "--reference-dir", str(ws.root / "reference")],
    "ladder": _file("ladder", "--show"),
}


def leaf_commands(parser: argparse.ArgumentParser | None = None, path: tuple[str, ...] = ()) -> list[str]:
    """Every command of the CLI ("trace summary", "doctor", ...), read from the argparse tree."""
    if parser is None:
        from ..cli import build_parser

        parser = build_parser()
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [" ".join(path)]
    return [c for s in subs for name, sub in s.choices.items() for c in leaf_commands(sub, (*path, name))]


@dataclass(frozen=True)
class Case:
    """One command on one hostile kind: exit status (None: killed at the time limit), stderr, seconds, and the
    growth of its peak resident memory over the parent's (MB)."""

    command: str
    kind: str
    argv: tuple[str, ...]
    status: int | None
    stderr: str
    seconds: float
    grew_mb: float

    def problem(self, limit_s: float, limit_mb: float) -> str:
        """What is wrong with this case ("" when nothing): a hang, a traceback, a refusal in other than one line,
        or past the limits. Exit 0 is fine: a log reader reads any text, brackets included."""
        lines = self.stderr.strip().splitlines()
        why = ("still running at the time limit" if self.status is None else
               "a traceback" if "Traceback" in self.stderr else
               f"{len(lines)} lines on stderr" if self.status != 0 and len(lines) != 1 else
               f"{self.seconds:.1f} s" if self.seconds > limit_s else
               f"{self.grew_mb:.0f} MB" if self.grew_mb > limit_mb else "")
        return f"{self.command} on {self.kind}: {why}: {self.stderr.strip()[-300:]!r}" if why else ""


def _rss_mb() -> float:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


def run_case(command: str, kind: str, argv: list[str], timeout: float) -> Case:
    """``lumikit ARGV`` in a forked child (stdin /dev/null, stdout dropped, stderr kept), killed at ``timeout``."""
    from ..cli import main

    with tempfile.TemporaryFile() as err:
        base = _rss_mb()
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: never returns into the caller's code
            status = 70
            try:
                os.setsid()  # its own group: killed as a whole with what it started
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(err.fileno(), 2)
                sys.stdout = open(1, "w", closefd=False)
                sys.stderr = open(2, "w", closefd=False)
                status = int(main(argv) or 0)
            except SystemExit as exc:
                status = exc.code if isinstance(exc.code, int) else 1
            except BaseException:  # noqa: BLE001 - what escapes main is the traceback the case looks for
                import traceback

                traceback.print_exc()
                status = 1
            finally:
                sys.stderr.flush()
                os._exit(status)
        status: int | None = None
        usage = None
        while time.perf_counter() - started < timeout:
            done, raw, usage = os.wait4(pid, os.WNOHANG)
            if done:
                status = os.waitstatus_to_exitcode(raw)
                break
            time.sleep(0.02)
        seconds = time.perf_counter() - started
        if status is None:
            for target in (-pid, pid):
                try:
                    os.kill(target, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            _, _, usage = os.wait4(pid, 0)
        err.seek(0)
        text = err.read().decode(errors="replace")
    grew = max(0.0, usage.ru_maxrss / 1024 - base) if usage is not None else 0.0
    return Case(command, kind, tuple(argv), status, text, seconds, grew)


def walk(root: Path, timeout: float, kinds: tuple[str, ...] = HOSTILE_KINDS,
         on_case: Callable[[Case], None] | None = None) -> list[Case]:
    """Every command of :func:`leaf_commands` that reads a file, on each hostile kind (files under ``root``)."""
    commands = leaf_commands()
    unknown = [c for c in commands if c not in FORMS and c not in READS_NO_FILE]
    if unknown:
        raise KeyError(f"commands without a hostile form in lumikit.testing.cli_walk.FORMS: {unknown}")
    cases = []
    for kind in kinds:
        ws = Workspace.make(root / kind.replace(" ", "-").replace("/", "").replace(",", ""), kind)
        for command in commands:
            if command in READS_NO_FILE:
                continue
            case = run_case(command, kind, FORMS[command](ws), timeout)
            cases.append(case)
            if on_case is not None:
                on_case(case)
    return cases
