"""A seeded, bounded mutation fuzzer for the readers: what a killed job or a broken disk does to their inputs.

Each reader family (``smi``, ``trace``, ``logs``, ``rocprof``; issue 31's ``counters``, ``flightrec``,
``rccltests``, ``manifest``, ``markers``, ``record``, ``omnistat`` and ``progress``) has seed inputs (real
outputs from the shared fixtures where they exist, plus the project's own generated data) and one target that
feeds an input through the command line in-process (``lumikit ... --json``) and the public API behind it. A
mutated input may be refused with a :class:`~lumikit.errors.LumikitError` (exit status 2 with one line); it may
not raise anything else, take more than :data:`SLOW_S` seconds, or make the command print invalid JSON
(``NaN``/``Infinity`` included).
Used by ``tests/test_fuzz.py`` (a few hundred inputs per family) and ``benchmarks/bench_fuzz.py`` (thousands).
"""
from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import os
import random
import re
import signal
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from ..errors import LumikitError

FAMILIES = ("smi", "trace", "logs", "rocprof")
SLOW_S = 2.0     # an input that takes more CPU time than this counts as a hang (CPU time: a loaded machine's
#                  waiting for a core is not the reader's slowness; a blocked reader is caught by HARD_STOP_S)
HARD_STOP_S = 20.0  # an input still running after this is interrupted (and counted as a hang)
MAX_SEED_BYTES = 400_000  # bigger seeds make the fuzz slow without finding more

#: Tokens that break parsers in the ways real damage does: brackets, quotes, separators, non-finite and huge
#: numbers, control characters, bits of tqdm bars and key-value views, long runs.
TOKENS = (
    b"{", b"}", b"[", b"]", b",", b'"', b":", b"\n", b"\r", b"\t", b"\x00", b"\xff\xfe", b"\xc3", b"\\",
    b"NaN", b"Infinity", b"-Infinity", b"1e309", b"-1", b"0", b"99999999999999999999999999", b"null", b"true",
    b'""', b"{}", b"[]", b"N/A", b"%|", b"|", b"/s]", b"it/s", b"[00:01<00:02, ", b"{'loss': ", b"loss: ",
    b"GPU[0]", b"card0", b"GPU  POWER", b"==========", b'"traceEvents": [', b'{"ph": "X", "name": "k", "ts": ',
    b'"dur": ', b'"ts": "x"', b"Calls", b'"Kernel_Name"', b"\x1b[2K", b"a" * 3000, b"7" * 3000, b"%|" * 500,
)
_NUMBER = re.compile(rb"-?\d+(?:\.\d+)?")
_NUMBERS = (b"0", b"-1", b"-0", b"1e309", b"NaN", b"99999999999999999999999999", b"3.5", b"-7e-320",
            b"18446744073709551616", b"0x1f", b"1" * 40, b"")


@dataclass
class Seed:
    """One seed input: its bytes and the file name it gets (the name decides how some readers read it)."""

    name: str
    data: bytes
    generated: bool = True  # the project's own generated data (False: a real output from the fixtures)


@dataclass
class FamilyResult:
    """What happened to the inputs of one family."""

    family: str
    inputs: int = 0
    accepted: int = 0   # the reader gave a result
    refused: int = 0    # the reader raised a LumikitError (exit status 2)
    unhandled: list[str] = field(default_factory=list)
    hangs: list[str] = field(default_factory=list)
    invalid_json: list[str] = field(default_factory=list)
    slowest_s: float = 0.0
    slowest_case: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, object]:
        return {"family": self.family, "inputs": self.inputs, "accepted": self.accepted, "refused": self.refused,
                "unhandled": len(self.unhandled), "hangs": len(self.hangs), "invalid_json": len(self.invalid_json),
                "slowest_s": round(self.slowest_s, 3), "seconds": round(self.seconds, 1)}


# -- mutations -------------------------------------------------------------------------------------------
def _flip(rng: random.Random, data: bytes) -> bytes:
    buf = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if buf:
            buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
    return bytes(buf)


def _insert(rng: random.Random, data: bytes) -> bytes:
    pos = rng.randint(0, len(data))
    return data[:pos] + rng.choice(TOKENS) + data[pos:]


def _lines(rng: random.Random, data: bytes, duplicate: bool) -> bytes:
    lines = data.split(b"\n")
    if len(lines) < 2:
        return data
    i = rng.randrange(len(lines))
    j = min(len(lines), i + rng.randint(1, 3))
    return b"\n".join(lines[:j] + lines[i:j] + lines[j:]) if duplicate else b"\n".join(lines[:i] + lines[j:])


def _number(rng: random.Random, data: bytes) -> bytes:
    found = list(_NUMBER.finditer(data[:200_000]))
    if not found:
        return _insert(rng, data)
    m = rng.choice(found)
    return data[:m.start()] + rng.choice(_NUMBERS) + data[m.end():]


def _truncate(rng: random.Random, data: bytes) -> bytes:
    return data[:rng.randint(0, len(data))] if data else data


_ODD_VALUES = ("x", "", {}, [], None, -1, 2**70, 1.5e308, True, "NaN", "0x1f", [1, 2], {"a": {}})


def _json_edit(rng: random.Random, data: bytes) -> bytes:
    """Parse as JSON (or JSON lines) and change the structure: a value replaced, a key removed, a list shortened."""
    try:
        docs = [json.loads(data)]
        lines = False
    except ValueError:
        try:
            docs = [json.loads(ln) for ln in data.split(b"\n") if ln.strip()]
            lines = True
        except ValueError:
            return _insert(rng, data)
    if not docs:
        return data
    k = rng.randrange(len(docs))
    nodes: list[tuple[object, object]] = []  # (container, key)

    def walk(node: object, depth: int) -> None:
        if len(nodes) > 5000 or depth > 12:
            return
        if isinstance(node, dict):
            for key, value in node.items():
                nodes.append((node, key))
                walk(value, depth + 1)
        elif isinstance(node, list):
            for i, value in enumerate(node[:2000]):
                nodes.append((node, i))
                walk(value, depth + 1)

    walk(docs[k], 0)
    if nodes:
        container, key = rng.choice(nodes)
        action = rng.randrange(4)
        if action == 0 and isinstance(container, dict):
            del container[key]  # type: ignore[arg-type]
        elif action == 1 and isinstance(container, list):
            del container[key:]  # type: ignore[misc]
        else:
            container[key] = rng.choice(_ODD_VALUES)  # type: ignore[index]
    else:
        docs[k] = rng.choice(_ODD_VALUES)
    if lines:
        return b"\n".join(json.dumps(d).encode() for d in docs) + b"\n"
    return json.dumps(docs[0]).encode()


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {
    "flip": _flip, "insert": _insert, "delete-lines": lambda r, d: _lines(r, d, False),
    "duplicate-lines": lambda r, d: _lines(r, d, True), "number": _number, "truncate": _truncate,
    "json": _json_edit,
}


def mutate(rng: random.Random, data: bytes) -> tuple[bytes, list[str]]:
    """One to three mutations of ``data``, and their names."""
    names = [rng.choice(list(MUTATIONS)) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
    for name in names:
        data = MUTATIONS[name](rng, data)
    return data, names


# -- seeds -----------------------------------------------------------------------------------------------
def _fixture_seeds(fixtures: Path | None, folders: tuple[str, ...], gunzip: bool = False) -> list[Seed]:
    out = []
    if fixtures is None or not fixtures.is_dir():
        return out
    for folder in folders:
        for p in sorted((fixtures / folder).glob("*")):
            if not p.is_file():
                continue
            data = p.read_bytes()
            name = p.name
            if gunzip and name.endswith(".gz"):
                data = gzip.decompress(data)
                name = name[:-3]
            if len(data) <= MAX_SEED_BYTES:
                out.append(Seed(name, data, generated=False))
    return out


def smi_seeds(fixtures: Path | None) -> list[Seed]:
    """Real tool outputs and the generated ones (each format), plus recorded-session files."""
    from ..smi import synth
    from ..smi.sessions import session_bytes

    busy = (100, 0, 80, 5, 100, 100, 0, 0)
    gcds = [synth.Gcd(index=i, temp_c=45.0 + i, power_w=None if i % 2 else 90.0 + 3 * busy[i], cap_w=500.0,
                      sclk=1700 if busy[i] else 800, busy=busy[i], vram_pct=60) for i in range(8)]
    seeds = [Seed("concise5.txt", synth.concise_rocm5(gcds, warning=True).encode()),
             Seed("concise6.txt", synth.concise_rocm6(gcds).encode()),
             Seed("rocm.json", synth.rocm_json(gcds).encode())]
    session = synth.single_gcd_training()
    session.frames = session.frames[:6]
    seeds.append(Seed("session.jsonl", session_bytes(session, gzip_it=False)))
    return seeds + _fixture_seeds(fixtures, ("smi",))


def trace_seeds(fixtures: Path | None) -> list[Seed]:
    """Small generated Kineto traces (two ranks' worth of steps, kernels, NCCL) and the small real traces."""
    from ..trace.synth import SynthSpec, iter_rank_bytes

    seeds = []
    for i, spec in enumerate((SynthSpec(ranks=1, steps=2, layers=2), SynthSpec(ranks=2, steps=2, layers=1))):
        seeds.append(Seed(f"synth{i}.pt.trace.json", b"".join(iter_rank_bytes(spec, 0))))
    seeds += [s for s in _fixture_seeds(fixtures, ("traces/hta-real", "traces/torch-cpu"), gunzip=True)
              if len(s.data) <= 150_000]
    return seeds


def logs_seeds(fixtures: Path | None) -> list[Seed]:
    """Job logs: real ones and the generated RCCL, HIP and training logs."""
    from ..logs.collbench import synthesize
    from ..logs.samples import rccl_debug_log

    bars = "".join(f"\r 40%|####      | {n}/100 [00:{n:02d}<00:30, 2.5it/s, loss=0.{n}]" for n in range(40, 60))
    train = (f"Epoch 1\n{bars}\n{{'loss': 1.25, 'learning_rate': 4e-05, 'epoch': 0.5}}\n"
             "Epoch 1, Training Loss: 0.53, Validation Accuracy: 81.5%\nrank 3: 1234.5 images/sec per GPU\n")
    hip = "".join(f":3:hip_module.cpp           :662 : {1000 + i} us: [pid:7 tid:0x1a] hipModuleLaunchKernel "
                  f"( 0x1, 2, 1, 1, 256, 1, 1, 0, stream:0x2, 0x0, 0x0 )\n"
                  f":3:hip_module.cpp           :680 : {1001 + i} us: [pid:7 tid:0x1a] hipModuleLaunchKernel: "
                  f"Returned hipSuccess : \n" for i in range(4))
    seeds = [Seed("rccl.log", rccl_debug_log(plugin=False).encode()), Seed("train.out", train.encode()),
             Seed("hip.log", hip.encode()), Seed("all_reduce_perf.out", synthesize((0, 1), max_bytes=1 << 16).encode())]
    return seeds + _fixture_seeds(fixtures, ("logs", "slurm"))


def rocprof_seeds(fixtures: Path | None) -> list[Seed]:
    """rocprof statistics, rocprofv3 kernel traces and rocprof v1 results.json (generated and real)."""
    trace = ['"Kind","Agent_Id","Queue_Id","Stream_Id","Thread_Id","Dispatch_Id","Kernel_Id","Kernel_Name",'
             '"Correlation_Id","Start_Timestamp","End_Timestamp","Workgroup_Size_X","Grid_Size_X"']
    for i in range(12):
        name = ("void gemm<float>(float*, int)", "__amd_rocclr_fillBufferAligned", "ncclKernel_AllReduce")[i % 3]
        trace.append(f'"KERNEL_DISPATCH","Agent 4",1,0,77,{i},{i % 3},"{name}",{i},{1000 * i},{1000 * i + 300 + i},'
                     f"256,4096")
    events = ['{ "traceEvents":[{}', ',{"ph":"M","name":"process_name","pid":"2","args":{"name":"GPU0"}}',
              ',{"ph":"M","name":"process_name","pid":"5","args":{"name":"CPU HIP API"}}']
    for i in range(8):
        events.append(f',{{"ph":"X","name":"Cijk_gemm_{i % 2}","pid":"2","tid":"0","ts":"{10 * i}","dur":"{3 + i}"}}')
        events.append(f',{{"ph":"X","name":"hipLaunchKernel","pid":"5","tid":"9","ts":"{10 * i}","dur":"1"}}')
    events.append('],"otherData":{}}')
    stats = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
             '"void gemm<float>(float*, int)",10,5000,500,62.5\n"__amd_rocclr_copyBuffer",3,3000,1000,37.5\n')
    seeds = [Seed("run_kernel_trace.csv", ("\n".join(trace) + "\n").encode()),
             Seed("results.json", ("\n".join(events) + "\n").encode()),
             Seed("results.stats.csv", stats.encode())]
    from . import rocprof_outputs as gen  # rocprofv3's ROCm 7 outputs: a rocpd database and a Perfetto trace

    run = gen.generated_run(nodes=1, processes_per_node=1, steps=1)
    with tempfile.TemporaryDirectory(prefix="lumikit-fuzz-seeds-") as tmp:
        for name, write in (("run_results.db", gen.write_rocpd), ("run.pftrace", gen.write_pftrace)):
            seeds.append(Seed(name, write(Path(tmp) / name, run).read_bytes()))
    for s in _fixture_seeds(fixtures, ("rocprof",)):
        name = s.name.lower()
        if "hsa_stats" in name:
            s.name = "results.hsa_stats.csv"
        elif name.endswith("_stats.csv") or name.endswith(".csv"):
            s.name = "p_kernel_stats.csv"
        else:
            s.name = "results.stats.csv"
        seeds.append(s)
    return seeds


SEEDS: dict[str, Callable[[Path | None], list[Seed]]] = {
    "smi": smi_seeds, "trace": trace_seeds, "logs": logs_seeds, "rocprof": rocprof_seeds}


_SEED_CACHE: dict[tuple[str, Path | None], list[Seed]] = {}


def family_seeds(family: str, fixtures: Path | None) -> list[Seed]:
    """The seeds of ``family`` (made once per process; forked workers share the parent's)."""
    key = (family, fixtures)
    if key not in _SEED_CACHE:
        _SEED_CACHE[key] = SEEDS[family](fixtures)
    return [Seed(s.name, s.data, s.generated) for s in _SEED_CACHE[key]]


# -- targets ---------------------------------------------------------------------------------------------
class InvalidJson(Exception):
    """A command printed something that is not standard JSON, or the Python API returned a JSON-ready value with
    NaN or infinity in it."""


def finite_json(value: object, where: str = "") -> None:
    """Raise :class:`InvalidJson` where a JSON-ready value (dicts, lists, numbers: what the Python API returns
    for ``--json``) holds NaN or infinity; the command line would write null there and say so in a note."""
    if isinstance(value, float) or (hasattr(value, "dtype") and getattr(value, "ndim", 1) == 0):
        try:
            number = float(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return
        if not math.isfinite(number):
            raise InvalidJson(f"the API returned {number} at {where or '(top)'}")
    elif isinstance(value, dict):
        for k, v in value.items():
            finite_json(v, f"{where}.{k}" if where else str(k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            finite_json(v, f"{where}[{i}]")


def strict_json(text: str) -> object:
    """``text`` parsed as standard JSON; :class:`InvalidJson` for anything else (``NaN`` and ``Infinity`` too)."""
    def refuse(token: str) -> None:
        raise InvalidJson(f"non-standard JSON constant {token}")
    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        raise InvalidJson(f"not JSON ({exc}): {text[:120]!r}") from None


_PARSER = None


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run ``lumikit ARGV`` in this process: (exit status, stdout, stderr). Non-LumikitError exceptions escape."""
    from ..cli import build_parser, main

    global _PARSER
    if _PARSER is None:
        _PARSER = build_parser()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv, parser=_PARSER)
    return status, out.getvalue(), err.getvalue()


def _check_cli(argv: list[str], json_out: bool = True) -> int:
    status, out, err = run_cli(argv)
    if status == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        if len(lines) != 1 or not lines[0].startswith("lumikit: error: "):
            raise AssertionError(f"exit status 2 without exactly one error line: {err[:300]!r}")
        raise _Refused(lines[0])
    if json_out:
        strict_json(out)
        if "non-finite number" in err:  # print_json met NaN or infinity in the value the API returned
            raise InvalidJson(f"the API returned NaN or infinity: {err.strip()[:300]}")
    return status


class _Refused(Exception):
    """The command refused the input the proper way (one line, exit status 2)."""


def _smi_target(path: Path, rng: random.Random) -> None:
    if path.name.endswith(".jsonl"):
        from ..smi.sessions import load_session
        try:
            load_session(path)
        except LumikitError:
            pass
        return
    _check_cli(["smi", "parse", str(path), "--json"])
    from ..smi.interpret import interpret
    from ..smi.parse import parse_smi_series
    text = path.read_bytes().decode("utf-8", errors="replace")  # the API gets the text as it is, \r and all
    for snap in parse_smi_series(text, source=str(path)):
        finite_json(snap.to_dict())
        interpret(snap)


def _trace_target(path: Path, rng: random.Random) -> None:
    salvage = ["--salvage"] if rng.random() < 0.5 else []
    _check_cli(["trace", "summary", str(path), "--json", *salvage])
    if rng.random() < 0.25:
        out = path.with_name("slice.json.gz")
        _check_cli(["trace", "slice", str(path), "--start-us", "0", "--end-us", "1e18", "-o", str(out), "--force"],
                   json_out=False)
        _check_cli(["trace", "summary", str(out), "--json"])


LOG_COMMANDS = (("logs", "progress"), ("logs", "hip"), ("logs", "rccl"), ("logs", "rccl-tests"), ("doctor",))


def _logs_target(path: Path, rng: random.Random) -> None:
    _check_cli([*rng.choice(LOG_COMMANDS), str(path), "--json"])


def _rocprof_target(path: Path, rng: random.Random) -> None:
    _check_cli(["rocprof", rng.choice(("stats", "summary")), str(path), "--json", "--top", "0"])


_TARGETS: dict[str, Callable[[Path, random.Random], None]] = {
    "smi": _smi_target, "trace": _trace_target, "logs": _logs_target, "rocprof": _rocprof_target}



# -- counters: rocprofv3 --pmc outputs (issue 31), read by `rocprof counters` and `rocprof roofline` ------
def counters_seeds(fixtures: Path | None) -> list[Seed]:
    """The documented counter CSV, generated roofline counters as CSV and as a rocpd database."""
    from . import counter_outputs as co

    dispatches = co.roofline_dispatches()
    seeds = [Seed("312_counter_collection.csv", co.DOCUMENTED_CSV.encode(), generated=False),
             Seed("77_counter_collection.csv", co.counter_csv(dispatches).encode())]
    with tempfile.TemporaryDirectory(prefix="lumikit-fuzz-seeds-") as tmp:
        seeds.append(Seed("77_results.db", co.write_counter_db(Path(tmp) / "77_results.db",
                                                               dispatches[:2]).read_bytes()))
    seeds.append(Seed("shapes.pt.trace.json", co.shapes_trace().encode()))  # the roofline from shapes
    return seeds


def _counters_target(path: Path, rng: random.Random) -> None:
    command = "roofline" if ".json" in path.name else rng.choice(("counters", "roofline"))
    _check_cli(["rocprof", command, str(path), "--json", "--top", "0"])


FAMILIES = (*FAMILIES, "counters")
SEEDS["counters"] = counters_seeds
_TARGETS["counters"] = _counters_target


def _write_input(folder: Path, seed: Seed, data: bytes, rng: random.Random) -> Path:
    path = folder / seed.name
    if seed.name.endswith(".pt.trace.json") or seed.name.endswith(".json") and rng.random() < 0.3:
        if rng.random() < 0.4:  # gzip the damaged text, or damage the gzip stream itself
            path = folder / (seed.name + ".gz")
            data = gzip.compress(data, mtime=0)
            if rng.random() < 0.3:
                data = mutate(rng, data)[0]
    path.write_bytes(data)
    return path


# -- the flight recorder, rccl-tests, run-folder manifests and markers (issue 31): their own families -----------
def _fr_dump(rank: int, skip_last: bool = False, as_json: bool = False) -> bytes:
    """A GENERATED flight recorder dump in the layout torch writes (two process groups, 1,024 ranks listed)."""
    import pickle

    def entry(seq: int, pg: tuple[str, str], name: str = "nccl:all_reduce") -> dict[str, Any]:
        return {"collective_seq_id": seq, "profiling_name": name, "process_group": list(pg), "is_p2p": False,
                "state": "completed", "input_sizes": [[1024, 4]], "output_sizes": [[1024, 4]], "p2p_seq_id": 0,
                "time_created_ns": 1_795_610_695_564_771_201 + seq, "timeout_ms": 600000}

    world, tp = ("0", "default_pg"), ("1", "tp_group")
    entries = [entry(s, world, "nccl:broadcast" if s == 2 else "nccl:all_reduce") for s in range(1, 6 - skip_last)]
    entries += [entry(s, tp, "nccl:all_gather") for s in range(1, 4)]
    dump = {"version": "2.10", "comm_lib_version": "2.20.5", "entries": entries,
            "pg_config": {"0": {"name": "0", "desc": "default_pg", "ranks": str(list(range(1024)))},
                          "1": {"name": "1", "desc": "tp_group", "ranks": "[0, 1]"}},
            "pg_status": {"0": {"last_enqueued_collective": 5, "last_started_collective": 5,
                                "last_completed_collective": 4}}}
    return json.dumps(dump).encode() if as_json else pickle.dumps(dump, protocol=4)


def flightrec_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED dumps: pickle and JSON, under torch's names and a ``.pkl`` name."""
    return [Seed("nccl_trace_rank_0", _fr_dump(0)), Seed("nccl_trace_rank_0.json", _fr_dump(0, as_json=True)),
            Seed("fr_trace_rank_0.pkl", _fr_dump(0, skip_last=True))]


def _flightrec_target(path: Path, rng: random.Random) -> None:
    other = path.with_name("nccl_trace_rank_1")  # a sound second rank beside the damaged one: hangs, desyncs
    other.write_bytes(_fr_dump(1, skip_last=rng.random() < 0.5))
    if rng.random() < 0.5:
        _check_cli(["logs", "flight-recorder", str(path), str(other), "--json"])
    else:
        _check_cli(["doctor", str(path.parent if rng.random() < 0.5 else path), "--json"])


def rccltests_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED rccl-tests outputs in each mode: both placements, in-place only (-O 0), CPU time (-C 1), ROCm's
    unnamed test on four GCDs, the -Z csv / -Z json report files, and nccl-tests' JSON output file."""
    from ..logs.collbench import synthesize

    pair = synthesize((0, 1), max_bytes=1 << 16)
    four = "\n".join(ln for ln in synthesize((0, 1, 2, 3), max_bytes=1 << 16).splitlines()
                     if "Collective test starting" not in ln) + "\n"
    in_place = re.sub(r"(?m)^(\s+\d+\s+\d+\s+\w+\s+\w+\s+-?\d+)(?:\s+\S+){4}", r"\1", pair)
    in_place = in_place.replace("out-of-place", "").replace("#wrong     time   algbw   busbw #wrong", "#wrong")
    report = ["collective, ranks, rankspernode, gpusperrank, size, type, redop, inplace, time, algbw, busbw, #wrong"]
    report += [f"AllReduce, 4, 4, 1, {1 << k}, float, sum, {p}, {20 + k}.5, {k}.25, {1.5 * k}, 0"
               for k in range(3, 12) for p in (0, 1)]
    jsonl = [f'{{"name":AllReduce, "nodes":1, "ranks":4, "ranksPerNode":4, "gpusPerRank":1, "size":{1 << k}, '
             f'"type":float, "redop":sum, "inPlace":{p}, "time":{20 + k}.5, "algBw":{k}.25, "busBw":{1.5 * k}, '
             f'"wrong":0}}' for k in range(3, 12) for p in (0, 1)]
    return [Seed("all_reduce_perf.out", pair.encode()), Seed("slurm-7.out", four.encode()),
            Seed("all_reduce_perf_O0.out", in_place.encode()),
            Seed("all_reduce_perf_C1.out", pair.replace("    time   algbw", " cputime   algbw").encode()),
            Seed("report.csv", ("\n".join(report) + "\n").encode()),
            Seed("report.json", ("\n".join(jsonl) + "\n").encode()),
            Seed("nccl_tests.json", json.dumps(_nccl_tests_json()).encode())]


def _nccl_tests_json() -> dict[str, Any]:
    """A GENERATED nccl-tests JSON output file (-J), in the layout of NVIDIA/nccl-tests src/util.cu."""
    return {"version": 1, "args": ["/opt/nccl-tests/build/all_reduce_perf", "-J", "out.json"],
            "devices": [{"rank": r, "group": 0, "pid": 100 + r, "hostname": "nid005001", "device": r,
                         "device_hex": bus, "device_info": "AMD Instinct MI250X"}
                        for r, bus in ((0, "0000:c1:00"), (1, "0000:c6:00"))],
            "results": [{"size": 1 << k, "count": 1 << (k - 2), "type": "float", "redop": "sum", "root": "    -1",
                         "out_of_place": {"time": 20.0 + k, "alg_bw": k / 2, "bus_bw": k / 2, "nwrong": 0.0},
                         "in_place": {"time": 21.0 + k, "alg_bw": k / 2.1, "bus_bw": k / 2.1, "nwrong": None},
                         "actual_iterations": 20} for k in range(10, 20)],
            "out_of_bounds": {"count": 0, "okay": "true"},
            "average_bus_bandwidth": {"bandwidth": 7.0, "okay": "unchecked"}}


def _rccltests_target(path: Path, rng: random.Random) -> None:
    _check_cli(["logs", "rccl-tests", str(path), "--json"])


def _generated_run(folder: Path) -> Path:
    """A GENERATED run folder (lumikit.testing.records: manifest, a one-node GPU record, two markers)."""
    from .records import write_generated_record

    return write_generated_record(folder, nodes=1, gcds=2, samples=6, markers=(("load", 1), ("train", 3)))


def _run_folder(path: Path) -> tuple[Path, Path]:
    """The generated run folder beside an input (in the family's temporary folder, made on first use) and a
    pristine copy of its manifest: each input replaces the manifest or the markers."""
    import shutil

    base = path.parent.parent
    run, manifest = base / "generated-run", base / "generated-manifest.json"
    if not manifest.exists():
        shutil.copy(_generated_run(run) / "manifest.json", manifest)
    return run, manifest


def _generated_seed(name: str) -> Seed:
    with tempfile.TemporaryDirectory(prefix="lumikit-fuzz-seeds-") as tmp:
        return Seed(name, (_generated_run(Path(tmp) / "run") / name).read_bytes())


def manifest_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED manifests: a finished dry run with a bill, and the generated record's Slurm run."""
    bill = {"partition": "small-g", "nodes": 1, "gcds": 2, "cores": 14, "memory_gb": 120.0, "exclusive": False,
            "gcd_equivalents": 2.0, "reason": "GCDs", "gpu_hours_per_hour": 1.0, "hours": 0.5, "gpu_hours": 0.5,
            "warnings": [], "source": "generated"}
    dry = {"backend": "dry-run", "site": "laptop", "state": "COMPLETED", "exit_code": 0, "job_id": None,
           "spec": {"name": "fuzz", "nodes": 1, "ntasks_per_node": 1, "env": [["HF_TOKEN", "<redacted>"]]},
           "command": {"argv": ["python3", "train.py"]}, "environment": {"HF_TOKEN": "<redacted>", "PATH": "/bin"},
           "versions": {"python": "3.11.7"}, "submit_time": "2025-11-25T12:00:00+00:00", "elapsed_s": 61,
           "billing_estimate": bill, "billing_actual": {**bill, "hours": 0.017, "gpu_hours": 0.034},
           "gpu_record": {"enabled": True, "interval_s": 2.0}, "note": "dry run: nothing was started"}
    return [Seed("manifest.json", json.dumps(dry, indent=2).encode()), _generated_seed("manifest.json")]


def _manifest_target(path: Path, rng: random.Random) -> None:
    import shutil

    from ..launch.runfolder import RunFolder

    run, _ = _run_folder(path)
    shutil.copy(path, run / "manifest.json")
    try:
        manifest = RunFolder(run).read()
    except LumikitError:
        manifest = {}
    if manifest.get("backend") == "dry-run":  # other backends ask Slurm or look for processes: not this reader
        _check_cli(["status", str(run)], json_out=False)
    _check_cli(["report", str(run), "--json"])


def markers_seeds(fixtures: Path | None) -> list[Seed]:
    """The generated record's markers (``lumikit.mark`` lines)."""
    return [_generated_seed("markers.jsonl")]


def _markers_target(path: Path, rng: random.Random) -> None:
    import shutil

    from ..record import read_markers

    run, manifest = _run_folder(path)
    shutil.copy(manifest, run / "manifest.json")
    shutil.copy(path, run / "markers.jsonl")
    finite_json(read_markers(run))
    _check_cli(["report", str(run), "--json"])


FAMILIES = (*FAMILIES, "flightrec", "rccltests", "manifest", "markers")
SEEDS.update(flightrec=flightrec_seeds, rccltests=rccltests_seeds, manifest=manifest_seeds, markers=markers_seeds)
_TARGETS.update(flightrec=_flightrec_target, rccltests=_rccltests_target, manifest=_manifest_target,
                markers=_markers_target)


# -- the GPU record, Omnistat exports and progress records (issue 31): their own families ----------------------
RECORD_NODE = "nid005001"  # the node of the generated run's record (lumikit.testing.records' first node name)


def _compact_record(legacy: bytes) -> bytes:
    """The generated record (tool output per line, as records were written before ``record_format``) rewritten
    as the recorder writes it today: numbers per GCD (``r``), the first raw output and the energy counters' start
    (``e0``) once, pm_counters readings at the start and on every other sample (``pm_start``, ``pm``; GENERATED)."""
    from ..smi.interpret import main_group
    from ..smi.parse import parse_smi
    from ..smi.readings import FORMAT as READINGS_FORMAT
    from ..smi.readings import encode, energy_counters

    lines = [json.loads(ln) for ln in legacy.splitlines() if ln.strip()]
    head = {**lines[0], "record_format": READINGS_FORMAT, "pm_start": {"energy": 1_000_000.0, "cpu_energy": 2e5,
                                                                       "accel0_energy": 3e5, "time": 1_764_072_000}}
    out = [head]
    for k, rec in enumerate(lines[1:]):
        snap = parse_smi(rec["stdout"], site="lumi")
        idx, rows = encode(main_group(snap), energy_counters(rec["stdout"]))
        line: dict[str, Any] = {"t": rec["t"], "r": rows}
        if idx is not None:
            line["i"] = idx
        if k == 0:
            line["raw"] = rec["stdout"]
            line["e0"] = {"0": 1.5e9}
        if k % 2 == 0:
            line["pm"] = {"energy": 1_000_000.0 + 900 * k, "accel0_energy": 3e5 + 400 * k, "time": 1_764_072_000 + k}
        out.append(line)
    return b"".join(json.dumps(x, sort_keys=True).encode() + b"\n" for x in out)


def record_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED GPU records of one node (``RUN/gpu/<node>.jsonl``): the compact numbers the recorder writes today
    (with pm_counters readings), the tool's output per line (older records), and the recorder's end file."""
    with tempfile.TemporaryDirectory(prefix="lumikit-fuzz-seeds-") as tmp:
        run = _generated_run(Path(tmp) / "run")
        legacy = (run / "gpu" / f"{RECORD_NODE}.jsonl").read_bytes()
    end = json.dumps({"state": "disk full", "samples": 6, "end": 1_764_072_012.5,  # as Recorder._write ends it
                      "why": f"No space left on device writing {RECORD_NODE}.jsonl"}, sort_keys=True).encode()
    return [Seed(f"{RECORD_NODE}.jsonl", _compact_record(legacy)), Seed("legacy.jsonl", legacy),
            Seed(f"{RECORD_NODE}.jsonl.end", end.ljust(2048))]


def _record_target(path: Path, rng: random.Random) -> None:
    import shutil

    from ..record import read_record

    run, manifest = _run_folder(path)
    shutil.copy(manifest, run / "manifest.json")
    record = run / "gpu" / f"{RECORD_NODE}.jsonl"
    pristine = run.parent / "generated-record.jsonl"
    if not pristine.exists():
        shutil.copy(record, pristine)
    end = Path(f"{record}.end")
    end.unlink(missing_ok=True)
    if path.name.endswith(".end"):  # a damaged end file beside a sound record
        shutil.copy(pristine, record)
        shutil.copy(path, end)
    else:
        shutil.copy(path, record)
    _check_cli(["report", str(run), "--json"])
    if rng.random() < 0.3:
        _check_cli(["report", str(run)], json_out=False)  # the text card: every number formatted
    if rng.random() < 0.3:  # the Python API's reading of the same file (lumikit.smi.sessions)
        try:
            for session in read_record(record).values():
                for snap in session.snapshots():
                    finite_json(snap.to_dict())
        except LumikitError:
            pass
    if rng.random() < 0.3:  # the live view's reading (the dashboard's RecordTail: it notes damage, never raises)
        from ..smi.record_tail import RecordTail

        tail = RecordTail(run)
        tail.poll()
        for node in tail.nodes:
            for snap in tail.snapshots(node):
                finite_json(snap.to_dict())


def _omnistat_export(vendor: bool) -> dict[str, bytes]:
    """A GENERATED Omnistat export in the layout of ``omnistat-query --export`` (ROCm/omnistat ``query.py``:
    ``metric`` / ``instance`` / ``card`` column levels over a ``timestamp`` index; the vendor files' ``vendor`` and
    ``accel`` levels): two nodes of two GCDs, six samples; with ``vendor``, the node's pm_counters files too."""
    nodes, cards = ("nid005001:8001", "nid005002:8001"), ("0", "1")
    metrics = ("rocm_utilization_percentage", "rocm_vram_used_percentage", "rocm_temperature_celsius",
               "rocm_sclk_clock_mhz", "rocm_average_socket_power_watts")
    cols = [(m, n, c) for m in metrics for n in nodes for c in cards]
    times = [f"2025-11-25 12:00:{s:02d}" for s in range(6)]
    gpu = [",".join(["metric", *(c[0] for c in cols)]), ",".join(["instance", *(c[1] for c in cols)]),
           ",".join(["card", *(c[2] for c in cols)]), "timestamp" + "," * len(cols)]
    values = {"rocm_utilization_percentage": lambda k, c: 100.0 if k > 1 else 0.0,
              "rocm_vram_used_percentage": lambda k, c: 15.0 * k, "rocm_temperature_celsius": lambda k, c: 40.0 + k,
              "rocm_sclk_clock_mhz": lambda k, c: 1700.0 if k > 1 else 800.0,
              "rocm_average_socket_power_watts": lambda k, c: "" if c == "1" else 90.0 + 60 * k}
    gpu += [",".join([t, *(str(values[m](k, c)) for m, _, c in cols)]) for k, t in enumerate(times)]
    files = {"omnistat-rocm.gpu.csv": ("\n".join(gpu) + "\n").encode()}
    if vendor:
        node = ["metric,omnistat_vendor_energy_joules,omnistat_vendor_cpu_energy_joules,omnistat_vendor_power_watts",
                f"instance,{nodes[0]},{nodes[0]},{nodes[0]}", "vendor,cray,cray,cray", "timestamp,,,"]
        node += [f"{t},{100000 + 750 * k},{20000 + 100 * k},700" for k, t in enumerate(times)]
        accel = ["metric" + ",omnistat_vendor_accel_energy_joules" * 2, f"instance,{nodes[0]},{nodes[0]}",
                 "accel,0,1", "vendor,cray,cray", "timestamp,,"]
        accel += [f"{t},{5000 + 125 * k},{10000 + 125 * k}" for k, t in enumerate(times)]
        files["omnistat-vendor.csv"] = ("\n".join(node) + "\n").encode()
        files["omnistat-vendor.gpu.csv"] = ("\n".join(accel) + "\n").encode()
    return files


def omnistat_seeds(fixtures: Path | None) -> list[Seed]:
    """A GENERATED Omnistat export: its per-GPU CSV and its two vendor (pm_counters) CSVs."""
    return [Seed(name, data) for name, data in _omnistat_export(vendor=True).items()]


def _omnistat_target(path: Path, rng: random.Random) -> None:
    from ..record import report_card
    from ..smi.omnistat import read_omnistat

    for name, data in _omnistat_export(vendor=rng.random() < 0.7).items():  # the damaged file among sound ones
        if name != path.name:
            (path.parent / name).write_bytes(data)
    try:
        sessions = read_omnistat(path.parent if rng.random() < 0.5 else path.parent / "omnistat-rocm.gpu.csv")
    except LumikitError:
        raise _Refused("read_omnistat") from None
    for session in sessions.values():
        for snap in session.snapshots():
            finite_json(snap.to_dict())
    card = report_card(sessions, {}, run="omnistat-export")
    finite_json(card.to_dict())
    card.text()


def progress_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED progress records (``progress/<exercise>.json``) written by the checks' own writer
    (:func:`lumikit.checks.progress.record`): a pass after a failure, and a failure naming its mistake."""
    from ..checks.progress import record

    with tempfile.TemporaryDirectory(prefix="lumikit-fuzz-seeds-") as tmp:
        folder = Path(tmp)
        record("01.2", {"cores_k": [1, 2, 3, 4, 5, 6, 7], "numa_k": 2}, passed=False, unanswered=False,
               message="Exercise 01.2: the cores next to GCD 0 is not right.", folder=folder,
               mistake="cores 8k to 8k+7")
        record("01.2", {"cores_k": [49, 50, 51, 52, 53, 54, 55], "numa_k": 3}, passed=True, unanswered=False,
               message="GCD 0 sits on NUMA 3, cores 49-55", folder=folder, evidence={"site": "lumi"})
        record("02.q1", {"why_pin": "b"}, passed=False, unanswered=False, message="Exercise 02.q1: not that one.",
               folder=folder, mistake="a wrong option")
        seeds = []
        for path in sorted(folder.glob("*.json")):  # what depends on the clock and the user made fixed (a replay)
            data = json.loads(path.read_bytes())
            data.update(learner="ada", updated="2025-11-25T12:00:00+00:00", seed_digest="3f2a9c5e1b7d",
                        from_solutions=False)
            if data.get("first_passed"):
                data["first_passed"] = "2025-11-25T11:58:00+00:00"
            for n, entry in enumerate(data.get("recent", [])):
                entry["at"] = f"2025-11-25T11:5{n}:00+00:00"
            seeds.append(Seed(path.name, json.dumps(data, indent=1, ensure_ascii=False).encode() + b"\n"))
        return seeds


def _progress_target(path: Path, rng: random.Random) -> None:
    import shutil

    from ..checks.progress import format_summary, read_results, summary_table

    learner = path.parent.parent / "class" / "ada" / "progress"  # one learner's folder in a class folder
    shutil.rmtree(learner.parent.parent, ignore_errors=True)
    learner.mkdir(parents=True)
    shutil.copy(path, learner / path.name.removesuffix(".gz"))  # a gzipped record: damaged under its own name
    results = read_results(learner, learner="ada")
    if len(results) != 1:  # a damaged record still gets its row ("unreadable", never a pass)
        raise AssertionError(f"{len(results)} results read from one record")
    if results[0].status == "unreadable" and results[0].ever_passed:
        raise AssertionError("an unreadable record counted as passed")
    format_summary(summary_table(results), "ada", learner, results)
    if rng.random() < 0.5:
        _check_cli(["progress", "--dir", str(learner)], json_out=False)
        return
    status, out, err = run_cli(["progress", "--class", str(learner.parent.parent)])
    rows = [row for row in csv.reader(io.StringIO(out)) if row]
    if status != 0 or len(rows) != 2 or rows[1][0] != "ada":  # the header and the learner's row
        raise AssertionError(f"progress --class: exit status {status}, {len(rows)} CSV rows: {out[:200]!r} "
                             f"{err[:200]!r}")


FAMILIES = (*FAMILIES, "record", "omnistat", "progress")
SEEDS.update(record=record_seeds, omnistat=omnistat_seeds, progress=progress_seeds)
_TARGETS.update(record=_record_target, omnistat=_omnistat_target, progress=_progress_target)


# -- memory snapshots and ladder tables (issue 37: both gave tracebacks) ------------------------------------------
def _snapshot(n: int = 6, huge: bool = False) -> bytes:
    """A GENERATED ``torch.cuda.memory._dump_snapshot`` pickle: one device's allocation history, with frames."""
    import pickle

    frames = [{"filename": "train.py", "line": 40 + i, "name": "forward" if i % 2 else "backward"} for i in range(3)]
    trace = [{"action": action, "addr": 0x7F00_0000_0000 + (i << 20), "size": (i + 1) << 20, "stream": 0,
              "time_us": 1_700_000_000_000_000 + i * 100, "frames": frames}
             for i in range(n) for action in ("alloc", "free_requested", "free_completed")[: 1 + i % 3]]
    snap = {"segments": [{"device": 0, "address": 0x7F00_0000_0000, "total_size": 64 << 20, "allocated_size": 6 << 20,
                          "active_size": 6 << 20, "stream": 0, "segment_type": "large",
                          "blocks": [{"size": 1 << 20, "state": "active_allocated", "frames": frames}]}],
            "device_traces": [trace]}
    return pickle.dumps(snap, protocol=4)


def memory_seeds(fixtures: Path | None) -> list[Seed]:
    """GENERATED memory snapshots (a short and a longer history)."""
    return [Seed("snapshot.pickle", _snapshot(4)), Seed("memory_snapshot.pickle", _snapshot(40))]


def _memory_target(path: Path, rng: random.Random) -> None:
    _check_cli(["trace", "memory", str(path), "--json"])


def ladder_seeds(fixtures: Path | None) -> list[Seed]:
    """The shipped ladder tables (recorded on an H100) and a GENERATED one in the layout `lumikit ladder` writes."""
    from ..ladder import shipped_ladder
    from ..reference import names

    seeds = [Seed(f"{name}.json", json.dumps(shipped_ladder(name)[0]).encode(), generated=False)
             for name in names("ladder")[:2]]
    rungs = [{"rung": r, "samples_per_s": {"median": 100.0 * (i + 1), "min": 90.0 * (i + 1), "max": 110.0 * (i + 1),
                                           "values": [90.0 * (i + 1), 100.0 * (i + 1), 110.0 * (i + 1)]},
              "speedup": float(i + 1), "mfu": 0.1 * (i + 1), "peak_tflops": 191.5, "peak_name": "bf16",
              "notes": [f"generated rung {r}"], "trace_dir": f"profile/{r}"} for i, r in enumerate(("fp32", "bf16"))]
    seeds.append(Seed("ladder.json", json.dumps({"model": "lm", "size": "tiny", "device_type": "cuda",
                                                 "rungs": rungs, "site": "laptop"}).encode()))
    return seeds


def _ladder_target(path: Path, rng: random.Random) -> None:
    as_json = rng.random() < 0.5
    _check_cli(["ladder", "--show", str(path), *(["--json"] if as_json else [])], json_out=as_json)


FAMILIES = (*FAMILIES, "memory", "ladder")
SEEDS.update(memory=memory_seeds, ladder=ladder_seeds)
_TARGETS.update(memory=_memory_target, ladder=_ladder_target)


class _HardStop(Exception):
    pass


def _alarm(_signum: int, _frame: object) -> None:
    raise _HardStop()


def fuzz_family(family: str, count: int, *, seed: int | str = 0, fixtures: Path | None = None,
                generated: bool = True, max_seed_bytes: int = MAX_SEED_BYTES,
                on_progress: Callable[[FamilyResult], None] | None = None) -> FamilyResult:
    """Feed ``count`` mutated inputs of ``family`` to its readers; returns what happened (never raises for them).

    Seeds are the project's generated inputs (unless ``generated=False``) and the real outputs under ``fixtures``
    (the shared fixtures folder; None: none); seeds bigger than ``max_seed_bytes`` are left out."""
    seeds = [s for s in family_seeds(family, fixtures) if len(s.data) <= max_seed_bytes]
    if not generated:
        seeds = [s for s in seeds if not s.generated]
    if not seeds:
        raise LumikitError(f"no {family} seeds to fuzz (fixtures {fixtures}, generated={generated})")
    rng = random.Random(f"{family}-{seed}")
    result = FamilyResult(family)
    started = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        with tempfile.TemporaryDirectory(prefix=f"lumikit-fuzz-{family}-") as tmp:
            warm = Path(tmp) / "warm-up"
            warm.mkdir()
            try:  # the first call imports the readers: not a property of any input
                _TARGETS[family](_write_input(warm, seeds[0], seeds[0].data, random.Random(0)), random.Random(0))
            except (_Refused, LumikitError):
                pass
            for i in range(count):
                base = seeds[i % len(seeds)]
                data, names = mutate(rng, base.data)
                case = f"{family} #{i} {base.name} {'+'.join(names)} (seed {seed})"
                folder = Path(tmp) / str(i % 4)
                folder.mkdir(exist_ok=True)
                for old_file in folder.iterdir():
                    old_file.unlink()
                path = _write_input(folder, base, data, rng)
                t0 = time.process_time()
                signal.setitimer(signal.ITIMER_REAL, HARD_STOP_S)
                try:
                    _TARGETS[family](path, rng)
                    result.accepted += 1
                except (_Refused, LumikitError):
                    result.refused += 1
                except _HardStop:
                    result.hangs.append(f"{case}: still running after {HARD_STOP_S:g} s")
                except InvalidJson as exc:
                    result.invalid_json.append(f"{case}: {exc}")
                except Exception:  # noqa: BLE001 - this is what the fuzzer looks for
                    result.unhandled.append(f"{case}: {_short_tb()}")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                took = time.process_time() - t0
                if took > result.slowest_s:
                    result.slowest_s, result.slowest_case = took, case
                if took > SLOW_S and not any(h.startswith(case) for h in result.hangs):
                    result.hangs.append(f"{case}: took {took:.1f} s of CPU time")
                result.inputs += 1
                if on_progress is not None and (i + 1) % 500 == 0:
                    on_progress(result)
    finally:
        signal.signal(signal.SIGALRM, old)
    result.seconds = time.perf_counter() - started
    return result


def fresh_seed() -> int:
    """A new seed for a run (``LUMIKIT_FUZZ_SEED`` when set, to replay one): print it with the results."""
    given = os.environ.get("LUMIKIT_FUZZ_SEED", "").strip()
    return int(given) if given else int.from_bytes(os.urandom(4), "big")


def _chunk(conn: Any, family: str, count: int, seed: str, fixtures: Path | None, max_seed_bytes: int) -> None:
    """Run one chunk in a forked worker and send its result back (warnings silenced: salvaging is their job)."""
    import warnings

    warnings.simplefilter("ignore")
    try:
        conn.send(fuzz_family(family, count, seed=seed, fixtures=fixtures, max_seed_bytes=max_seed_bytes))
    except BaseException as exc:  # noqa: BLE001 - reported, not lost
        result = FamilyResult(family, inputs=count)
        result.unhandled.append(f"{family} chunk (seed {seed}): the fuzzer itself failed: {exc!r}")
        conn.send(result)
    conn.close()


def fuzz_parallel(count: int, *, seed: int, families: tuple[str, ...] = FAMILIES, fixtures: Path | None = None,
                  workers: int = 2, chunk: int = 250, max_seed_bytes: int = MAX_SEED_BYTES,
                  on_progress: Callable[[FamilyResult], None] | None = None) -> list[FamilyResult]:
    """``count`` inputs of each family in chunks of ``chunk``, ``workers`` forked processes at a time; each
    chunk has its own seed (``"<seed>.<n>"``, named in every failing case, so ``fuzz_family(family, chunk,
    seed="<seed>.<n>")`` replays it). A worker killed by a signal (a segmentation fault in a C extension) is a
    failure of its chunk, never of the run. Returns one merged :class:`FamilyResult` per family."""
    import multiprocessing as mp
    import multiprocessing.connection

    for family in families:  # seeds made and readers imported once (never run here): forked workers start warm
        family_seeds(family, fixtures)
    for argv in (["smi", "parse"], ["trace", "summary"], ["logs", "progress"], ["rocprof", "stats"]):
        run_cli([*argv, "/nonexistent/warm-up"])
    ctx = mp.get_context("fork")
    tasks = [(family, min(chunk, count - start), f"{seed}.{n}")
             for family in families for n, start in enumerate(range(0, count, chunk))]
    merged = {family: FamilyResult(family) for family in families}
    running: list[tuple[Any, Any, tuple[str, int, str], float]] = []
    started = time.perf_counter()

    def collect(proc: Any, conn: Any, task: tuple[str, int, str]) -> None:
        family, n, chunk_seed = task
        try:
            got = conn.recv() if conn.poll() else None
        except EOFError:  # the worker died before it could answer
            got = None
        proc.join()
        if got is None:
            got = FamilyResult(family, inputs=n)
            got.unhandled.append(f"{family} chunk of {n} inputs (seed {chunk_seed}): the worker died with exit "
                                 f"status {proc.exitcode} (a negative status is a signal: -11 is a segmentation "
                                 f"fault); replay: fuzz_family({family!r}, {n}, seed={chunk_seed!r})")
        m = merged[family]
        m.inputs += got.inputs
        m.accepted += got.accepted
        m.refused += got.refused
        m.unhandled += got.unhandled
        m.hangs += got.hangs
        m.invalid_json += got.invalid_json
        if got.slowest_s > m.slowest_s:
            m.slowest_s, m.slowest_case = got.slowest_s, got.slowest_case
        m.seconds = time.perf_counter() - started
        if on_progress is not None:
            on_progress(m)

    while tasks or running:
        while tasks and len(running) < workers:
            task = tasks.pop(0)
            parent, child = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_chunk, args=(child, task[0], task[1], task[2], fixtures, max_seed_bytes))
            proc.start()
            child.close()
            running.append((proc, parent, task, time.perf_counter()))
        ready = multiprocessing.connection.wait([r[1] for r in running] + [r[0].sentinel for r in running], timeout=1.0)
        for entry in [r for r in running if r[1] in ready or r[0].sentinel in ready]:
            running.remove(entry)
            collect(entry[0], entry[1], entry[2])
    return [merged[f] for f in families]


def _short_tb() -> str:
    lines = traceback.format_exc().strip().splitlines()
    where = [ln.strip() for ln in lines if ln.strip().startswith("File ")][-2:]
    return f"{lines[-1][:300]} at {' / '.join(where)}"
