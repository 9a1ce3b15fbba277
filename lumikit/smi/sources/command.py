"""The per-call source: run an SMI tool once per sample (a new process each time: the last resort)."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from dataclasses import replace
from typing import Sequence

from ...errors import LumikitError
from ...site import Site
from ..parse import parse_smi
from ..readings import energy_counters
from .base import Sample, UnreadOutput


class CommandSource:
    """Run a command (argv list, never a shell) and parse what it prints; ``last_run_s`` is how long it took.

    A non-zero exit with parseable output is a good sample (rocm-smi 5 on LUMI exits 2 while printing a valid
    table); output the parsers do not read is an :class:`UnreadOutput` (a :class:`LaunchError`) that carries the
    output, so a recorder can keep it; a missing tool exits 127, one that hangs past ``timeout`` 124. The tool runs
    in its own process group: a timeout or :meth:`cancel` ends it with every process it started (a wedged driver
    hangs ``amd-smi``; a helper it forked would outlive it).
    """

    how = "per-call"
    paced = False

    def __init__(self, argv: Sequence[str], *, timeout: float = 30.0, site: str | Site | None = "lumi") -> None:
        if isinstance(argv, str) or not argv:
            raise LumikitError("a command source takes an argv list such as ['rocm-smi', '--json'], not a string")
        self.argv = [str(a) for a in argv]
        self.name = " ".join(self.argv)
        self.timeout = timeout
        self.site = site
        self.last_run_s: float | None = None
        self._proc: subprocess.Popen[str] | None = None
        self._lock = threading.Lock()

    def read(self) -> Sample:
        t0 = time.monotonic()
        try:
            with self._lock:
                self._proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                              errors="replace", stdin=subprocess.DEVNULL, process_group=0)
            out, err = self._proc.communicate(timeout=self.timeout)
        except FileNotFoundError:
            raise UnreadOutput(f"command not found: {self.argv[0]!r}; is it installed and on PATH here? (on LUMI, "
                               "run it on the compute node: srun --jobid <id> --overlap ...)", "", 127) from None
        except subprocess.TimeoutExpired:
            self.cancel()
            with self._lock:
                proc = self._proc
            if proc is not None:
                for pipe in (proc.stdout, proc.stderr):
                    if pipe is not None:
                        pipe.close()  # a child that left the group may hold the pipe: do not wait for its end
                proc.wait()
            raise UnreadOutput(f"{self.name!r} did not answer within {self.timeout:g} s", "", 124) from None
        finally:
            self.last_run_s = time.monotonic() - t0
            with self._lock:
                proc, self._proc = self._proc, None
        status = proc.returncode if proc is not None else None
        try:
            snap = parse_smi(out, source=self.argv[0], timestamp=time.time(), site=self.site)
        except LumikitError as exc:
            if status:
                tail = (err or out).strip().splitlines()[-1:] or ["(no output)"]
                raise UnreadOutput(f"{self.name!r} exited with status {status}: {tail[0][:200]}", out,
                                   status) from None
            raise UnreadOutput(str(exc), out, status) from None
        if snap.timestamp is None:
            snap = snap.with_timestamp(time.time())
        return Sample(snapshot=replace(snap, exit_status=status), raw=out, exit_status=status,
                      energies=energy_counters(out))

    def cancel(self) -> None:
        """End a call under way, with every process of its group."""
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                try:
                    os.killpg(self._proc.pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    self._proc.kill()


__all__ = ["CommandSource"]
