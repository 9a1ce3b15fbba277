"""The compiled chunk reader (``lumikit.trace._fastevents``) against the msgspec reader it speeds up.

The rule it must keep: on any input, it either hands the chunk back (``None``: msgspec then reads it) or gives
exactly the columns msgspec gives. These tests hold it to that on generated events in the common shape (where it
must also *take* the chunk, or it would be dead code), on events of any shape, on mutated bytes, on hostile input
and on every real trace in ``../shared/fixtures``.
"""
from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lumikit.trace import columns
from lumikit.trace.columns import FLOAT_COLUMNS, INT_COLUMNS, ColumnChunk, parse_array_msgspec
from lumikit.trace.reader import TraceStream

fast = columns._fastevents
needs_fast = pytest.mark.skipif(fast is None, reason="the compiled reader is not built here (no C compiler when "
                                                     "lumikit was installed); `pip install -e .` builds it")


def test_ci_builds_the_compiled_reader():
    # In CI the venv is built with a compiler at hand: a silent build failure would skip every test below.
    if os.environ.get("CI") != "true":
        pytest.skip("only CI promises a C compiler")
    assert fast is not None, "lumikit.trace._fastevents was not built by `pip install -e .` (see setup.py)"


def compiled(body: bytes) -> ColumnChunk | None:
    got = fast.parse(body)
    return None if got is None else columns._chunk_from_compiled(got)


def reference(body: bytes) -> ColumnChunk | Exception:
    try:
        return parse_array_msgspec(body)
    except Exception as exc:  # noqa: BLE001 - what msgspec raises is what the loader reports
        return exc


def assert_same(mine: ColumnChunk, ref: ColumnChunk) -> None:
    assert mine.n_events == ref.n_events
    assert mine.names == ref.names and mine.cats == ref.cats
    assert mine.name_code.tolist() == ref.name_code.tolist()
    assert mine.cat_code.tolist() == ref.cat_code.tolist()
    for col in INT_COLUMNS:
        assert mine.arrays[col].tolist() == ref.arrays[col].tolist(), col
    for col in FLOAT_COLUMNS:
        np.testing.assert_array_equal(mine.arrays[col], ref.arrays[col], err_msg=col)
        # -0.0 == 0.0 above: the sign of a zero must agree too (a "-0" in JSON is msgspec's integer 0)
        assert np.signbit(mine.arrays[col]).tolist() == np.signbit(ref.arrays[col]).tolist(), col


def check(body: bytes) -> bool:
    """The rule above on one input; returns whether the compiled reader took it."""
    mine, ref = compiled(body), reference(body)
    if mine is None:
        return False
    assert not isinstance(ref, Exception), f"compiled reader accepted what msgspec refuses ({ref!r}): {body[:200]!r}"
    assert_same(mine, ref)
    return True


# -- events in the common shape: taken, and read alike -------------------------------------------------------
PLAIN_TEXT = st.text(st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters='"\\'), max_size=40)
INT64 = st.integers(-(2**63), 2**63 - 1)
ID = st.one_of(INT64, st.integers(0, 2**40).map(hex), st.integers(-(10**12), 10**12).map(str), st.none(),
               st.sampled_from(["Spans", "PyTorch Profiler", "gpu 0", "n/a"]))  # text no int() reads: -1
NUMBER = st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(-(10**17), 10**17), st.none())
JUNK = st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
                                                                                     allow_infinity=False),
                              st.text(max_size=10)),
                    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3)),
                    max_leaves=6)
ARG_KEYS = {"stream": ID, "correlation": ID, "External id": ID, "bytes": ID, "size": ID}


@st.composite
def common_event(draw) -> dict:
    event = {"ph": draw(st.sampled_from("XXXXsfMiC"))}
    optional = {"name": PLAIN_TEXT, "cat": st.one_of(PLAIN_TEXT, st.none()), "pid": ID, "tid": ID,
                "ts": NUMBER, "dur": NUMBER,
                "args": st.one_of(st.none(), PLAIN_TEXT, st.fixed_dictionaries(
                    {}, optional={**ARG_KEYS, "Input Dims": JUNK, "device": JUNK})),
                "id": JUNK, "bp": JUNK}
    for key, values in optional.items():
        if draw(st.booleans()):
            event[key] = draw(values)
    keys = draw(st.permutations(list(event)))
    return {k: event[k] for k in keys}


def serialise(events: list[dict], spaced: bool) -> bytes:
    if spaced:
        return ("[\n" + ",\n".join(json.dumps(e, indent=1, ensure_ascii=False) for e in events) + "\n]").encode()
    return json.dumps(events, separators=(",", ":"), ensure_ascii=False).encode()


@needs_fast
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(common_event(), max_size=12), st.booleans())
def test_common_shape_is_taken_and_read_as_msgspec_reads_it(events, spaced):
    body = serialise(events, spaced)
    assert check(body), f"the compiled reader handed back a chunk in the common shape: {body[:300]!r}"


# -- events of any shape: handed back, or read alike ---------------------------------------------------------
ANY_EVENT = st.dictionaries(st.sampled_from(["ph", "name", "cat", "pid", "tid", "ts", "dur", "args", "x"]),
                            st.one_of(JUNK, st.sampled_from(["X", "s", "Z", ""]),
                                      st.dictionaries(st.sampled_from(list(ARG_KEYS)), JUNK, max_size=3)),
                            max_size=8)


@needs_fast
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(ANY_EVENT, JUNK), max_size=8), st.booleans())
def test_any_shape_is_handed_back_or_read_alike(events, spaced):
    check(serialise(events, spaced))


KERNEL = {"ph": "X", "cat": "kernel", "name": "Cijk_Alik_Bljk_BBS", "pid": 0, "tid": 0, "ts": 4203669600037.5,
          "dur": 42.0, "args": {"External id": 2, "device": 0, "stream": 0, "correlation": 5000000, "bytes": 4096}}
LAUNCH = {"ph": "X", "cat": "cuda_runtime", "name": "hipModuleLaunchKernel", "pid": 1000, "tid": 1000,
          "ts": 4203669600020.0, "dur": 14.0, "args": {"External id": 2, "cbid": 211, "correlation": 5000000,
                                                       "stream": "0x0"}}
FLOW = {"ph": "s", "id": 5000000, "pid": 1000, "tid": 1000, "ts": 4203669600020.0, "cat": "ac2g", "name": "ac2g"}


@needs_fast
def test_kineto_profiler_span_with_text_ids_is_taken():
    # Every Kineto trace ends with this span; its pid and tid are names, which the id columns keep as -1.
    span = {"ph": "X", "cat": "Trace", "ts": 4203669603018.756, "dur": 9761.878, "pid": "Spans",
            "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}
    body = serialise([KERNEL, span], spaced=True)
    assert check(body)
    assert compiled(body).arrays["pid"].tolist() == [0, -1]


@needs_fast
def test_mutated_bytes_are_handed_back_or_read_alike():
    # Flip, drop, repeat and insert bytes of a valid chunk: a broken chunk must never come back as columns.
    base = serialise([KERNEL, LAUNCH, FLOW] * 6, spaced=True)
    rng = random.Random(27)
    taken = 0
    for _ in range(3000):
        data = bytearray(base)
        for _ in range(rng.randint(1, 3)):
            at = rng.randrange(len(data))
            kind = rng.randrange(4)
            if kind == 0:
                data[at] = rng.choice(b'{}[]",:0x- \\\x00\x1f\xff.eE')
            elif kind == 1:
                del data[at:at + rng.randint(1, 8)]
            elif kind == 2:
                data[at:at] = data[at:at + rng.randint(1, 8)]
            else:
                data[at:at] = bytes([rng.randrange(256)])
        taken += check(bytes(data))
    assert taken > 100  # many mutations (inside skipped strings, digits) leave valid JSON: those are read


@needs_fast
@pytest.mark.parametrize("body", [
    b"", b"[", b"]", b"[]", b"[] x", b"[{}]", b"[1]", b"[{" * 100_000, b"[" + b"[" * 100_000,
    b'[{"ph":"X","args":' + b"[" * 5000 + b"]" * 5000 + b"}]",
    b'[{"ph":"X","name":"a\x00b"}]', b'[{"ph":"X","name":"\xff\xfe"}]', b'[{"ph":"X","ts":1e999}]',
    b'[{"ph":"X","pid":99999999999999999999}]', b'[{"ph":"X","ts":' + b"1" * 5000 + b"}]",
    b'[{"ph":"X","name":"' + b"n" * 1_000_000 + b'"}]', b"\x00" * 4096,
])
def test_hostile_chunks_never_crash_and_agree(body):
    check(body)


@needs_fast
def test_deep_nesting_in_a_skipped_value_is_read_to_the_compiled_limit_then_handed_back():
    shallow = serialise([{**KERNEL, "args": {**KERNEL["args"], "deep": json.loads("[" * 100 + "]" * 100)}}], False)
    deep = serialise([{**KERNEL, "args": {**KERNEL["args"], "deep": json.loads("[" * 600 + "]" * 600)}}], False)
    assert check(shallow)
    assert fast.parse(deep) is None  # past 512 levels: msgspec's reading (and its own limit) decides


@needs_fast
def test_numbers_are_rounded_as_msgspec_rounds_them():
    texts = ["0", "-0", "0.1", "1e-7", "2.5E+3", "4203669600037.123456", "9007199254740993", "123456789012345678",
             "1.7976931348623157e308", "5e-324", "0.30000000000000004", "-1.5", "1" + "0" * 17, "3.14159265358979323846"]
    for text in texts:
        body = b'[{"ph":"X","name":"k","ts":' + text.encode() + b',"dur":' + text.encode() + b"}]"
        assert check(body), text


@needs_fast
@pytest.mark.parametrize("text", ["-0", "-0.0", "-0e0", "-0.5", "0"])
def test_a_negative_zero_is_signed_as_msgspec_signs_it(text):
    body = b'[{"ph":"X","name":"k","ts":' + text.encode() + b',"dur":' + text.encode() + b',"pid":1,"tid":1}]'
    check(body)  # "-0" is the integer 0 (then +0.0); "-0.0" and "-0e0" stay negative zeros


@needs_fast
@pytest.mark.parametrize("text", ['"0x-5"', '"0x+5"', '"0x_5"', '"0x-0"', '"0x-8000000000000000"', '"0X5"',
                                  '"-0x5"', '"0x5"', '"0xff"'])
def test_signed_or_odd_hex_ids_are_read_as_python_reads_them(text):
    for where in ('"pid":' + text + ',"tid":1', '"pid":1,"tid":1,"args":{"stream":' + text + ',"correlation":'
                  + text + '}'):
        check(b'[{"ph":"X","name":"k","cat":"kernel","ts":1,"dur":2,' + where.encode() + b"}]")


@needs_fast
def test_the_switch_turns_the_compiled_reader_off(monkeypatch):
    body = serialise([KERNEL, LAUNCH], spaced=False)
    monkeypatch.setenv("LUMIKIT_COMPILED_READER", "0")
    assert not columns.compiled_reader_enabled()
    monkeypatch.setenv("LUMIKIT_COMPILED_READER", "1")
    assert columns.compiled_reader_enabled()
    assert_same(columns.parse_array(body), parse_array_msgspec(body))


# -- real traces: whole loads agree, and the compiled reader takes real Kineto chunks -------------------------
@needs_fast
@pytest.mark.conformance
def test_every_real_trace_loads_to_the_same_table_either_way(shared_fixtures, monkeypatch):
    from lumikit.trace.loader import load_trace

    traces = sorted(p for p in (shared_fixtures / "traces").rglob("*") if p.name.endswith((".json", ".json.gz")))
    assert traces
    taken = total = 0
    for path in traces:
        try:
            chunks = list(TraceStream(path).chunks())
        except Exception:  # noqa: BLE001 - not a trace (a rocprof file, a damaged one): the loader's tests cover it
            continue
        taken += sum(fast.parse(b"[" + c + b"]") is not None for c in chunks)
        total += len(chunks)
        for c in chunks:
            check(b"[" + c + b"]")
        results = {}
        for switch in ("0", "1"):
            monkeypatch.setenv("LUMIKIT_COMPILED_READER", switch)
            try:
                results[switch] = load_trace(path, workers=1)
            except Exception as exc:  # noqa: BLE001 - both readers must fail alike
                results[switch] = type(exc)
        if isinstance(results["0"], type):
            assert results["1"] is results["0"], path
            continue
        for rank in results["0"].rank_ids:
            a, b = results["0"][rank].columns, results["1"][rank].columns
            assert a.labels == b.labels, path
            for col in a.data:
                np.testing.assert_array_equal(a[col], b[col], err_msg=f"{path}: {col}")
    assert taken == total, f"the compiled reader handed back {total - taken} of {total} chunks of real traces"
