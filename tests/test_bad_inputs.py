"""Hand-made bad inputs: what a killed job, a broken copy or the wrong file give every reader.

Each case of issue 15 has its test: long lines read in linear time, the summary of a slice of a slice, corrupt
gzip and invalid UTF-8 named as damage (not "truncated"), cut rocprof traces and torn recordings read up to the
cut, JSON output without NaN/Infinity, and one line with exit status 2 for every reader given a bad file.
"""
from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

from lumikit.errors import LumikitError, ParseError, TraceError
from lumikit.json_output import to_json
from lumikit.logs.progress import MAX_UPDATES_PER_LINE, parse_progress, progress_summary
from lumikit.rocprof import parse_kernel_trace
from lumikit.rocprof.stats import parse_rocprof_stats
from lumikit.smi import synth
from lumikit.smi.parse import parse_smi
from lumikit.smi.sessions import Frame, Session, SessionHeader, read_session, session_bytes
from lumikit.testing.bad_inputs import bad_input_rows
from lumikit.testing.fuzz import run_cli, strict_json
from lumikit.trace.loader import load_trace
from lumikit.trace.synth import SynthSpec, event, write_events, write_synthetic


# -- long lines ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("line", ["a" * 100_000, "7" * 100_000, "val loss: " * 10_000, "{'a': 1, " * 12_000,
                                  "images/" * 15_000, "%|" * 50_000],
                         ids=["letters", "digits", "loss-words", "dict-openers", "slashes", "bar-markers"])
def test_a_100000_character_line_is_read_in_linear_time(line: str) -> None:
    started = time.perf_counter()
    table = parse_progress(line + "\nEpoch 2, Training Loss: 0.25\n")
    took = time.perf_counter() - started
    assert took < 10, f"{took:.1f} s for a 100,000-character line (benchmarks/bench_long_lines.py has the target)"
    assert table["loss"].dropna().tolist() == [0.25]  # the reader still reads the line after it


def test_a_line_of_many_bar_updates_is_read_at_evenly_spaced_places_and_says_so() -> None:
    bars = "\r".join(f" {n % 100:3d}%|#####     | {n % 100}/100 [00:{n % 60:02d}<00:30, 2.50it/s]" for n in range(9000))
    table = parse_progress(bars)
    assert MAX_UPDATES_PER_LINE // 2 < len(table) <= MAX_UPDATES_PER_LINE + 3
    assert table["step"].iloc[-1] == 8999 % 100  # the last update is always read
    summary = progress_summary(table)
    assert "9,000 carriage-return updates" in summary["notes"][0]


def test_labels_are_still_read_from_before_the_loss() -> None:
    table = parse_progress("Epoch 3 validation loss: 0.5\nval_loss = 0.25\nTrainLoss: 0.75 acc: 97%\n")
    assert table["split"].tolist() == ["validation", "validation", "train"]
    assert table["loss"].tolist() == [0.5, 0.25, 0.75]
    assert table["accuracy"].iloc[-1] == pytest.approx(0.97)


# -- traces ----------------------------------------------------------------------------------------------
def test_the_summary_of_a_slice_of_a_slice_works(tmp_path: Path) -> None:
    src = write_synthetic(tmp_path / "run", SynthSpec(ranks=1, steps=3, layers=1))[0]
    events = load_trace(src, workers=1)[0].events
    kernels = events[events["cat"] == "kernel"]
    k = kernels.iloc[len(kernels) // 2]
    first = tmp_path / "first.json.gz"
    assert run_cli(["trace", "slice", str(src), "--start-us", str(k.ts - 50), "--end-us", str(k.ts + k.dur + 50),
                    "-o", str(first)])[0] == 0
    second = tmp_path / "second.json.gz"
    assert run_cli(["trace", "slice", str(first), "--start-us", str(k.ts), "--end-us", str(k.ts + k.dur),
                    "-o", str(second)])[0] == 0
    status, out, err = run_cli(["trace", "summary", str(second), "--json"])
    assert status == 0, err
    summary = strict_json(out)
    rank = next(iter(summary["ranks"].values()))
    assert rank["top_kernels"] and rank["top_kernels"][0]["name"] == k["name"]


def test_kernels_without_any_launch_event_are_summarised(tmp_path: Path) -> None:
    path = write_events(tmp_path / "k.json", [event("Cijk_gemm", "kernel", 10, 5, pid=0, tid=0, stream=0,
                                                    correlation=5)])
    status, out, _ = run_cli(["trace", "summary", str(path), "--json"])
    assert status == 0
    assert next(iter(strict_json(out)["ranks"].values()))["kernel_time_us"]["compute"] == 5


def _trace_bytes() -> bytes:
    evs = [event(f"kernel_{i}", "kernel", 10 * i, 5, pid=0, tid=0, stream=0) for i in range(200)]
    return json.dumps({"schemaVersion": 1, "traceEvents": evs}).encode()


def test_a_corrupt_gzip_is_named_as_damage_not_truncation(tmp_path: Path) -> None:
    good = gzip.compress(_trace_bytes(), mtime=0)
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(good[:len(good) // 2] + bytes(b ^ 0xA5 for b in good[len(good) // 2:len(good) // 2 + 64])
                     + good[len(good) // 2 + 64:])
    with pytest.raises(TraceError, match="corrupt compressed data") as err:
        load_trace(path, workers=1)
    assert "truncated" not in str(err.value) and "--salvage" in str(err.value)
    assert str(err.value).count(str(path)) == 1
    with pytest.warns(UserWarning, match="corrupt gzip data"):
        kept = load_trace(path, workers=1, salvage=True)[0]
    assert 0 < len(kept.events) < 200 and kept.truncated


def test_invalid_utf8_is_named_as_corruption_not_truncation(tmp_path: Path) -> None:
    data = _trace_bytes()
    last = data.rindex(b'"kernel_199"')
    path = tmp_path / "rank0.pt.trace.json"
    path.write_bytes(data[:last + 3] + b"\xff\xfe" + data[last + 3:])
    with pytest.raises(TraceError, match="not UTF-8") as err:
        load_trace(path, workers=1)
    assert "truncated" not in str(err.value)
    middle = data.index(b'"kernel_50"')
    path.write_bytes(data[:middle + 3] + b"\xff\xfe" + data[middle + 3:])
    with pytest.raises(TraceError, match="malformed trace events"):
        load_trace(path, workers=1)


def test_text_where_a_timestamp_belongs_counts_as_missing(tmp_path: Path) -> None:
    evs = [event("k", "kernel", 10, 5, pid=0, tid=0, stream=0), {**event("k", "kernel", 20, 5), "ts": "soon"},
           {**event("k", "kernel", 30, 5), "dur": {}}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    status, out, _ = run_cli(["trace", "summary", str(path), "--json"])
    assert status == 0
    strict_json(out)


# -- rocprof ---------------------------------------------------------------------------------------------
_KERNEL_TRACE = ('"Kind","Agent_Id","Kernel_Name","Correlation_Id","Start_Timestamp","End_Timestamp"\n'
                 + "".join(f'"KERNEL_DISPATCH","Agent 4","void gemm<float>(float*, int)",{i},{1000 * i},'
                           f'{1000 * i + 300}\n' for i in range(1, 21)))


@pytest.mark.parametrize("cut", [-5, -20, -60], ids=["in-end-time", "in-start-time", "in-quoted-name"])
def test_a_cut_rocprof_kernel_trace_is_read_up_to_the_cut(cut: int) -> None:
    table = parse_kernel_trace(_KERNEL_TRACE[:cut])
    assert len(table) == 19
    assert table["duration_ns"].tolist() == [300] * 19
    assert "cut short" in table.attrs["notes"][0]


def test_a_damaged_row_inside_a_kernel_trace_names_its_line() -> None:
    lines = _KERNEL_TRACE.splitlines()
    lines[5] = lines[5].replace(",5000,", ",five,")
    with pytest.raises(ParseError, match="line 6") as err:
        parse_kernel_trace("\n".join(lines) + "\n", source="k_kernel_trace.csv")
    assert str(err.value).count("k_kernel_trace.csv") == 1


def test_a_26_digit_call_count_is_refused_never_wrapped(tmp_path: Path) -> None:
    text = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n'
            '"gemm",99999999999999999999999999,5000,500,100.0\n"copy",3,100,33,1.0\n')
    with pytest.raises(ParseError, match="call count"):
        parse_rocprof_stats(text)
    path = tmp_path / "r_kernel_stats.csv"
    path.write_text(text)
    status, out, err = run_cli(["rocprof", "stats", str(path), "--json"])
    assert status == 2 and "-9223372036854775808" not in out + err


def test_a_cut_rocprof_stats_file_keeps_the_rows_before_the_cut() -> None:
    text = ('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"gemm",10,5000,500,62.5\n'
            '"copy",3,3000,1000,37.5\n')
    table = parse_rocprof_stats(text[:-12])
    assert table["name"].tolist() == ["gemm"]
    assert "cut short" in table.attrs["notes"][0]


# -- recordings ------------------------------------------------------------------------------------------
def _recording(tmp_path: Path, frames: int = 5) -> tuple[Path, bytes]:
    session = synth.single_gcd_training()
    session = Session(SessionHeader(name="rec"), [Frame(t=float(i), stdout=f.stdout)
                                                  for i, f in enumerate(session.frames[:frames])])
    data = session_bytes(session, gzip_it=False)
    return tmp_path / "rec.jsonl", data


@pytest.mark.parametrize("cut", [2, 40, 200])
def test_a_torn_recording_keeps_all_complete_frames(tmp_path: Path, cut: int) -> None:
    path, data = _recording(tmp_path)
    path.write_bytes(data[:-cut])
    with pytest.warns(UserWarning, match="cut short"):
        session = read_session(path)
    assert len(session.frames) == 4
    assert "kept the 4 complete frames" in session.notes[0]
    status, out, err = run_cli(["smi", "watch", "--replay", str(path), "--count", "1", "--interval", "0.01"])
    assert status == 0, err
    assert err.startswith("lumikit: warning: ") and "kept the 4 complete frames" in err and err.count("\n") == 1


def test_a_recording_damaged_in_the_middle_names_the_line(tmp_path: Path) -> None:
    path, data = _recording(tmp_path)
    lines = data.split(b"\n")
    lines[2] = lines[2][:30]
    path.write_bytes(b"\n".join(lines))
    with pytest.raises(ParseError, match="line 3") as err:
        read_session(path)
    assert str(err.value).count(str(path)) == 1


@pytest.mark.parametrize("damage", [b"\x1f\x8b\x08\x00garbage", b'{"format": "lumikit-smi-session"}\n\xff\xfe\n'],
                         ids=["corrupt-gzip", "invalid-utf8"])
def test_a_broken_recording_gives_the_projects_error(tmp_path: Path, damage: bytes) -> None:
    path = tmp_path / "rec.jsonl"
    path.write_bytes(damage)
    with pytest.raises(ParseError):
        read_session(path)


# -- JSON and format detection ---------------------------------------------------------------------------
def test_json_output_writes_non_finite_numbers_as_null_with_a_note(tmp_path: Path) -> None:
    text, notes = to_json({"a": float("nan"), "b": [1.0, float("inf")], "n": 10**30})
    assert strict_json(text) == {"a": None, "b": [1.0, None], "n": 10**30}
    assert notes == ["a", "b[1]"]
    log = tmp_path / "train.out"
    log.write_text("Epoch 1, Training Loss: 1e999\n")
    assert progress_summary(parse_progress(log.read_text()))["last_train_loss"] is None  # the API: no inf
    status, out, err = run_cli(["logs", "progress", str(log), "--json"])
    assert status == 0 and strict_json(out)["summary"]["last_train_loss"] is None
    assert err == ""  # nothing non-finite reached print_json, so no note


def test_a_chrome_trace_is_not_amd_smi_output() -> None:
    trace = json.dumps([{"ph": "X", "name": "k", "ts": 1, "dur": 2, "pid": 0, "tid": 0}] * 2)
    with pytest.raises(ParseError, match="Chrome/Kineto profiler trace"):
        parse_smi(trace, source="trace.json")


def test_parse_errors_name_the_location_once() -> None:
    with pytest.raises(ParseError) as err:
        parse_smi("GPU  Temp  AvgPwr\n0  40c\n", source="out.txt")
    assert str(err.value).count("out.txt") == 1 and str(err.value).count("line") == 1


# -- every reader on bad files ---------------------------------------------------------------------------
def test_every_reader_prints_one_line_and_exits_2_for_a_bad_file(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = bad_input_rows(tmp_path)
    assert len({r.command for r in rows}) == 10 and {"/dev/zero", "a FIFO nobody writes to"} <= {r.input for r in rows}
    for row in rows:
        where = f"{row.command} on {row.input}"
        assert row.status == 2, f"{where}: exit status {row.status}"
        lines = row.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("lumikit: error: "), f"{where}: {row.stderr!r}"
        assert "Traceback" not in row.stderr
        if row.input not in ("missing file",) or "replay" not in row.command:
            assert str(tmp_path) in lines[0] or row.input == "/dev/zero", f"{where} does not name the file: {lines[0]}"


def test_an_unreadable_file_is_one_line_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.out"
    path.write_text("hello\n")

    real_open = os.open

    def refuse(name: str | os.PathLike[str], flags: int, *args: object, **kwargs: object) -> int:
        if Path(name) == path:  # as chmod 000 would for a plain user (root reads anything)
            raise PermissionError(13, "Permission denied", str(name))
        return real_open(name, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refuse)
    status, _, err = run_cli(["logs", "progress", str(path)])
    assert status == 2 and err.strip() == f"lumikit: error: {path}: Permission denied; check the path and its " \
                                          f"permissions"


def test_lumikit_errors_are_value_errors_where_they_were() -> None:
    assert issubclass(ParseError, (LumikitError, ValueError))


# -- control characters in names -------------------------------------------------------------------------
#: A name that sets the terminal's title (OSC ... BEL), clears the screen (CSI 2J) and forges a table row.
EVIL = "evil\x1b]0;pwned\x07\x1b[2J\nFORGED ROW"


def _assert_escaped(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out, f"raw control characters reach the terminal: {out!r}"
    assert not any(line.startswith("FORGED") or line.strip().startswith("FORGED") for line in out.splitlines())
    assert "\\x1b]0;pwned\\x07\\x1b[2J\\nFORGED ROW" in out or "\\x1b]0;pwned\\x07" in out, out


def _strings(value: object) -> list[str]:
    """Every string in a parsed JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *_strings(v))]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _evil_inputs(tmp_path: Path) -> dict[str, tuple[list[str], str]]:
    """{command: (argv, the raw name the JSON output must keep)}: a kernel name with ESC, BEL and a newline in
    each reader's own format; where the format has no room for a newline in a name (a log line), the file's name
    carries it."""
    from lumikit.logs.samples import rccl_debug_log
    from lumikit.testing.rocprof_outputs import Dispatch, Run, write_rocpd

    stats = tmp_path / "results.stats.csv"
    quoted = EVIL.replace('"', '""')
    stats.write_text(f'"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"{quoted}",10,5000,500,100.0\n')
    db = write_rocpd(tmp_path / "1_results.db", Run(tuple(Dispatch("nid005001", 7, 0, EVIL, 1000 * i, 1000 * i + 500)
                                                           for i in range(1, 4))))
    trace = write_events(tmp_path / "evil.pt.trace.json", [event(EVIL, "kernel", 10 * i, 5, pid=0, tid=0, stream=0)
                                                          for i in range(3)])
    logs = tmp_path / "logs"
    logs.mkdir()
    named = logs / f"{EVIL}.out"  # a file name can hold every character but "/" and NUL
    hip = named.with_name(f"{EVIL}.hip.log")
    hip.write_text(":3:hip_module.cpp :662 : 100 us: [pid:1 tid: 0x1] hipLaunchKernel ( 0x1, {1,1,1}, {64,1,1}, "
                   "0x2, 0, stream:<null> )\n:3:rocvirtual.cpp :2853: 101 us: [pid:1 tid: 0x1] ShaderName : "
                   "k\x1b]0;pwned\x07\n")
    named.write_text("Epoch 1, Training Loss: 0.5\n\x1b]0;pwned\x07 ModuleNotFoundError: No module named 'torch'\n"
                     + rccl_debug_log(plugin=False).replace("NCCL INFO ", "NCCL INFO \x1b]0;pwned\x07 ", 1))
    smi = logs / f"{EVIL}.txt"
    smi.write_text(synth.concise_rocm6([synth.Gcd(index=0, temp_c=40.0, power_w=90.0, cap_w=500.0, sclk=1700,
                                                  busy=100, vram_pct=50)]))
    return {"rocprof stats": (["rocprof", "stats", str(stats)], EVIL),
            "rocprof summary": (["rocprof", "summary", str(db)], EVIL),
            "trace summary": (["trace", "summary", str(trace)], EVIL),
            "logs progress": (["logs", "progress", str(named)], str(named)),
            "logs hip": (["logs", "hip", str(hip)], "k\x1b]0;pwned\x07"),
            "logs rccl": (["logs", "rccl", str(named)], str(named)),
            "doctor": (["doctor", str(named)], str(named)),
            "smi parse": (["smi", "parse", str(smi)], str(smi))}


@pytest.mark.parametrize("command", ["rocprof stats", "rocprof summary", "trace summary", "logs progress",
                                     "logs hip", "logs rccl", "doctor", "smi parse"])
def test_names_with_control_characters_print_escaped_and_stay_raw_in_json(tmp_path: Path, command: str) -> None:
    argv, raw = _evil_inputs(tmp_path)[command]
    status, out, err = run_cli(argv)
    assert status in (0, 1), err  # 1: doctor found a problem, rccl the socket fall-back
    _assert_escaped(out)
    status, out, err = run_cli([*argv, "--json"])
    assert status in (0, 1), err
    assert any(raw in s for s in _strings(strict_json(out))), out  # JSON escapes them itself: nothing lost


def test_errors_and_warnings_name_a_hostile_file_escaped(tmp_path: Path) -> None:
    path = tmp_path / f"{EVIL}.out"
    path.write_bytes(bytes(range(256)) * 8)  # binary: refused, the message names the file
    status, out, err = run_cli(["logs", "progress", str(path)])
    assert status == 2 and err.count("\n") == 1
    _assert_escaped(err)


# -- FIFOs, devices and huge files -------------------------------------------------------------------------
#: The reader commands of issue 23 and the name each one's sparse file gets (the name decides how some read it).
HOSTILE_READERS = {"logs progress": ("train.out",), "logs hip": ("hip.log",), "logs rccl": ("rccl.log",),
                   "doctor": ("job.out",), "smi parse": ("rocm-smi.txt",), "trace summary": ("rank0.pt.trace.json",),
                   "rocprof stats": ("results.stats.csv", "run.pftrace")}


def _lumikit_capped(argv: list[str]) -> subprocess.CompletedProcess[str]:
    """``lumikit ARGV`` in a fresh process with 1 GB of address space (reading a 2 GB file whole fails) and a
    timeout (a reader blocked on a FIFO never returns by itself)."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))

    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "OPENBLAS_NUM_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "lumikit", *argv], capture_output=True, text=True, timeout=60,
                          env=env, preexec_fn=cap)


@pytest.mark.parametrize("command", HOSTILE_READERS)
def test_a_fifo_and_dev_zero_are_refused_at_once_by_every_reader(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / HOSTILE_READERS[command][0]
    os.mkfifo(fifo)  # nobody writes to it: a reader that opens it blocks for ever (the timeout catches that)
    for path, kind in ((fifo, "a FIFO (named pipe)"), (Path("/dev/zero"), "a character device")):
        done = _lumikit_capped([*command.split(), str(path)])
        assert done.returncode == 2, f"{command} {path}: {done.returncode} {done.stderr[-300:]}"
        assert done.stderr.startswith(f"lumikit: error: {path}: is {kind}, not a regular file; lumikit reads "
                                      f"saved files only") and done.stderr.count("\n") == 1, done.stderr
        assert done.stdout == ""


@pytest.mark.parametrize("command", HOSTILE_READERS)
def test_a_2_gb_sparse_file_is_refused_without_being_read(tmp_path: Path, command: str) -> None:
    for name in HOSTILE_READERS[command]:
        sparse = tmp_path / name
        with open(sparse, "wb") as fh:
            fh.truncate(2 << 30)
        done = _lumikit_capped([*command.split(), str(sparse)])
        assert done.returncode == 2, f"{command} {name}: {done.returncode} {done.stderr[-300:]}"
        line = done.stderr.strip()
        assert line.count("\n") == 0 and line.startswith(f"lumikit: error: {sparse}: ")
        if command == "trace summary":  # streamed, never read whole: refused at its first bytes
            assert "not a Chrome/Kineto trace" in line
        else:
            assert "2.0 GB, above the 512 MB limit for files read whole" in line and "LUMIKIT_MAX_READ_MB" in line


# -- crashes found by fuzzing (issue 23) -----------------------------------------------------------------
def test_a_20_digit_profiler_step_is_no_step_and_no_overflow(tmp_path: Path) -> None:
    path = write_events(tmp_path / "t.json", [
        {**event("ProfilerStep#99999999999999999999", "user_annotation", 0, 100, pid=0, tid=0)},
        event("ProfilerStep#3", "user_annotation", 100, 100, pid=0, tid=0),
        event("k", "kernel", 120, 5, pid=0, tid=0, stream=0)])
    status, out, err = run_cli(["trace", "summary", str(path), "--json", "--include-last-step"])
    assert status == 0, err
    assert [s["step"] for s in next(iter(strict_json(out)["ranks"].values()))["steps"]] == [3]


def test_a_carriage_return_inside_an_smi_csv_is_a_line_end_for_the_api_too() -> None:
    text = "device,Temperature (Sensor edge) (C),GPU use (%)\ncard0,40.0,5\ncard1,41.0,9\n"
    for cut in range(len(text)):
        damaged = text[:cut] + "\r" + text[cut:]
        try:
            parse_smi(damaged, source="smi.csv")
        except ParseError:
            pass  # refused with the project's error: fine; csv's own Error escaping is not


def test_a_pftrace_cut_short_keeps_its_complete_packets(tmp_path: Path) -> None:
    from lumikit.rocprof.pftrace import read_pftrace
    from lumikit.testing import rocprof_outputs as gen

    whole = gen.write_pftrace(tmp_path / "whole.pftrace", gen.generated_run(nodes=1, processes_per_node=1, steps=2))
    kernels = len(read_pftrace(whole).kernels)
    cut = tmp_path / "cut.pftrace"
    cut.write_bytes(whole.read_bytes()[:-1])
    with pytest.warns(UserWarning, match="cut short .* kept its \\d+ complete packets"):
        assert 0 < len(read_pftrace(cut).kernels) <= kernels
    status, _, err = run_cli(["rocprof", "summary", str(cut)])
    assert status == 0 and err.startswith(f"lumikit: warning: {cut}: cut short") and err.count("\n") == 1
    cut.write_bytes(whole.read_bytes()[:5])
    with pytest.raises(ParseError, match="cut short before its first complete packet"):
        read_pftrace(cut)


def test_api_summaries_carry_no_nan_or_infinity(tmp_path: Path) -> None:
    from lumikit.rocprof.cli import stats_report
    from lumikit.testing.fuzz import finite_json

    finite_json(progress_summary(parse_progress("rank 0: 1e999 images/sec per GPU\nEpoch 1, Training Loss: nan\n")))
    table = parse_rocprof_stats('"Name","Calls","TotalDurationNs","AverageNs","Percentage"\n"gemm",3,1e309,1e309,'
                                '1e309\n')
    finite_json(stats_report(table))
    with pytest.raises(Exception, match="the API returned nan at a.b"):
        finite_json({"a": {"b": float("nan")}})


def test_a_rocpd_database_whose_name_holds_uri_characters_is_read(tmp_path: Path) -> None:
    from lumikit.rocprof.rocpd import read_rocpd
    from lumikit.testing import rocprof_outputs as gen

    path = gen.write_rocpd(tmp_path / "run?1#2_results.db", gen.generated_run(nodes=1, processes_per_node=1, steps=1))
    assert len(read_rocpd(path).kernels) == len(gen.KERNELS)


# -- small messages that say what they mean ----------------------------------------------------------------
def test_a_cpu_only_trace_summary_says_there_were_no_gpu_events(tmp_path: Path) -> None:
    path = write_events(tmp_path / "cpu.json", [event("ProfilerStep#1", "user_annotation", 0, 100, pid=0, tid=0),
                                               event("aten::mm", "cpu_op", 10, 50, pid=0, tid=0)])
    status, out, err = run_cli(["trace", "summary", str(path), "--include-last-step"])
    assert status == 0, err
    assert "no GPU events in this trace" in out and "streams []" not in out and "GPU span" not in out


def test_smi_headers_print_clock_time_for_live_samples_and_seconds_for_replays() -> None:
    from lumikit.smi.cli import format_table

    snap = parse_smi(synth.concise_rocm6([synth.Gcd(index=0, temp_c=40.0, power_w=90.0, cap_w=500.0, sclk=1700,
                                                    busy=100, vram_pct=50)]), source="rocm-smi")
    live = format_table(snap.with_timestamp(1764073200.5)).splitlines()[0]
    assert "e+09" not in live and time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(1764073200.5)) in live
    assert format_table(snap.with_timestamp(12.0)).splitlines()[0].endswith("t=12.0 s")


# -- issue 37: the minimal inputs that escaped as tracebacks, and the bombs --------------------------------------
def _one_line_refusal(argv: list[str], *needles: str) -> str:
    """``lumikit ARGV`` in this process refuses its input in one line with exit status 2 (a traceback escapes)."""
    rc, out, err = run_cli(argv)
    assert rc == 2 and err.count("\n") == 1, (argv, rc, err[-400:])
    for needle in needles:
        assert needle in err, (needle, err)
    return err


def test_an_rccl_tests_report_without_an_algbw_column_is_read(tmp_path: Path) -> None:
    report = tmp_path / "report.csv"
    report.write_text("collective, ranks, rankspernode, gpusperrank, size, type, redop, inplace, time, algbx, busbw, "
                      "#wrong\n" + "".join(f"AllReduce, 4, 4, 1, {1 << k}, float, sum, 0, {20 + k}.5, {k}.25, "
                                           f"{1.5 * k}, 0\n" for k in range(3, 8)))
    rc, out, err = run_cli(["logs", "rccl-tests", str(report)])
    assert rc == 0 and "peak busbw 10.5 GB/s (no algbw column)" in out, err


@pytest.mark.parametrize("header, row", [("device,Temperature (Sensor edge) (C)", "card0," + "9" * 140_000),
                                         ('device,"' + "x" * 140_000 + '"', "card0,1")])
def test_a_140000_character_csv_field_is_one_line(tmp_path: Path, header: str, row: str) -> None:
    path = tmp_path / "rocm-smi.csv"
    path.write_text(f"{header}\n{row}\n")
    _one_line_refusal(["smi", "parse", str(path)], str(path), "not a GPU tool's CSV")
    stats = tmp_path / "results.stats.csv"
    stats.write_text("Name,Calls,TotalDurationNs,AverageNs,Percentage\n" + "k" * 140_000 + ",1,2,3,4\n")
    _one_line_refusal(["rocprof", "stats", str(stats)], str(stats))


def test_huge_integers_in_a_memory_snapshot_are_refused(tmp_path: Path) -> None:
    import pickle

    snap = {"segments": [{"device": 0, "address": 10**400, "total_size": 10**400, "allocated_size": 1,
                          "active_size": 1, "stream": 0, "segment_type": "large",
                          "blocks": [{"size": 10**400, "state": "active_allocated", "frames": []}]}],
            "device_traces": [[{"action": "alloc", "addr": 1, "size": 10**400, "stream": 0, "frames": []}]]}
    path = tmp_path / "snapshot.pickle"
    path.write_bytes(pickle.dumps(snap, protocol=4))
    _one_line_refusal(["trace", "memory", str(path)], str(path), "a huge integer")


def _trace_with_args(tmp_path: Path, name: str, args: str) -> Path:
    path = tmp_path / name
    path.write_text('{"traceEvents":[{"ph":"X","name":"k","ts":1,"dur":2,"pid":1,"tid":1,"args":' + args + "}]}")
    return path


def test_args_nested_a_thousand_deep_are_named_as_such(tmp_path: Path) -> None:
    path = _trace_with_args(tmp_path, "deep.pt.trace.json", "[" * 1000 + "]" * 1000)
    for extra in ([], ["--salvage"]):
        _one_line_refusal(["trace", "summary", str(path), *extra], str(path), "nested deeper than the reader follows")


def test_a_100000_bracket_trace_is_not_called_truncated(tmp_path: Path) -> None:
    path = _trace_with_args(tmp_path, "brackets.pt.trace.json", '{"a":' + "[" * 100_000 + "]" * 100_000 + "}")
    err = _one_line_refusal(["trace", "summary", str(path)], str(path), "not a cut-short trace")
    assert "truncated" not in err and "probably stopped" not in err


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
@pytest.mark.parametrize("workers", [1, 2])
def test_a_valid_trace_whose_args_hold_arrays_of_objects_loads(tmp_path: Path, suffix: str, workers: int) -> None:
    # the chunk boundary pattern `},{"name":` matches between the objects inside these args (4.4 MB, 24,000 events)
    events = [{"ph": "X", "name": f"op{i}", "ts": i * 10, "dur": 5, "pid": 1, "tid": 1, "cat": "cpu_op",
               "args": {"inputs": [{"name": "x", "shape": [i, 2]}, {"name": "y", "dtype": "float"}]}}
              for i in range(24_000)]
    text = json.dumps({"traceEvents": events}).encode()
    path = tmp_path / f"rank0.pt.trace{suffix}"
    path.write_bytes(gzip.compress(text) if suffix.endswith(".gz") else text)
    for salvage in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # no "truncated" warning either
            trace = load_trace(path, workers=workers, salvage=salvage)
        [rank] = trace.ranks.values()
        assert rank.n_events == 24_000 and not rank.truncated


def test_a_gzip_of_tiny_events_is_refused_before_its_columns_grow(tmp_path: Path) -> None:
    event_text = b'{"ph":"X","name":"k","ts":1,"dur":1,"pid":1,"tid":1}'
    path = tmp_path / "rank0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(b'{"traceEvents":[' + b",".join([event_text] * 2_000_000) + b"]}", 6))
    assert path.stat().st_size < 1 << 20  # 100 MB of events in a few hundred kilobytes
    _one_line_refusal(["trace", "summary", str(path)], str(path), "gzip bomb", "per compressed byte")


def test_a_session_gzip_bomb_is_refused_at_its_budget(tmp_path: Path) -> None:
    import zlib

    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    line = b'{"t": 1.0, "raw": "' + b"x" * 900 + b'"}\n'
    path = tmp_path / "bomb.jsonl.gz"
    path.write_bytes(z.compress(b'{"kind":"session"}\n') + b"".join(z.compress(line) for _ in range(200_000))
                     + z.flush())
    with pytest.raises(LumikitError, match="decompresses to more than 64 MB"):
        read_session(path)


def test_a_dump_of_shared_references_is_refused_by_its_expanded_size(tmp_path: Path) -> None:
    import pickle

    shared: list = ["x" * 64]
    for _ in range(4):
        shared = [shared] * 60  # 13 million values once followed, in 644 bytes
    path = tmp_path / "nccl_trace_rank_0"
    path.write_bytes(pickle.dumps({"entries": [{"record_id": 0, "frames": shared}], "pg_config": {},
                                   "version": "2.4"}, protocol=4))
    assert path.stat().st_size < 4096
    _one_line_refusal(["logs", "flight-recorder", str(path)], str(path), "shared references are followed")
    _one_line_refusal(["doctor", str(path)], str(path), "shared references are followed")


@pytest.mark.parametrize("text", ["[" * 100_000 + "]" * 100_000, '{"rungs": [{"samples_per_s": 1}]}',
                                  '{"rungs": [{"rung": "a", "samples_per_s": {"median": "x"}}]}'])
def test_ladder_show_on_deep_or_damaged_json_is_one_line(tmp_path: Path, text: str) -> None:
    path = tmp_path / "ladder.json"
    path.write_text(text)
    _one_line_refusal(["ladder", "--show", str(path)], str(path))


def test_every_cli_entry_point_refuses_hostile_files_in_one_line(tmp_path: Path) -> None:
    """The commands come from the argparse tree (a new one must be given a hostile form or a reason it reads no
    file); each case is forked with a generous limit (two shared cores); the 5 s target is asserted by
    benchmarks/bench_hostile_files.py."""
    from lumikit.testing.cli_walk import FORMS, READS_NO_FILE, leaf_commands, walk

    commands = leaf_commands()
    assert set(commands) == set(FORMS) | set(READS_NO_FILE) and len(commands) > 40
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = walk(tmp_path, timeout=120)
    assert len(cases) == 4 * len(FORMS)
    problems = [p for c in cases if (p := c.problem(limit_s=120, limit_mb=200))]
    assert not problems, "\n".join(problems[:10])
    refused = [c for c in cases if c.status != 0]
    assert len(refused) > 0.8 * len(cases)  # most refuse; a log reader may read brackets as text
