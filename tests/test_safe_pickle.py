"""lumikit.safe_pickle: plain values come back; code, bombs, cycles and damage are refused with a reason."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from lumikit.errors import ParseError
from lumikit.safe_pickle import load_plain


def test_plain_values_round_trip() -> None:
    value = {"entries": [{"collective_seq_id": 3, "state": "started", "sizes": [[4, 4]], "ok": True,
                          "t": 1.5, "raw": b"\x00\x01", "none": None}], "version": "2.4", "pair": (1, 2)}
    for protocol in (3, 4, 5):
        assert load_plain(pickle.dumps(value, protocol=protocol), "dump") == value
    del value["entries"][0]["raw"]  # protocol 2 writes bytes as a call to _codecs.encode: refused, so leave them out
    assert load_plain(pickle.dumps(value, protocol=2), "dump") == value


def test_shared_references_are_fine_when_small() -> None:
    leaf = {"frames": [{"filename": "train.py", "line": 3}]}
    value = {"blocks": [leaf] * 100}
    assert load_plain(pickle.dumps(value), "snap")["blocks"][99] == leaf


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch /tmp/should-never-exist",))


def test_a_pickle_that_calls_code_is_refused_before_anything_runs() -> None:
    with pytest.raises(ParseError, match="builds objects or calls code"):
        load_plain(pickle.dumps({"entries": [_Payload()]}), "evil.pkl")


def test_a_memo_index_never_stored_is_refused() -> None:
    # PROTO 4, LONG_BINGET 2**31 - 1, STOP: the C unpickler would look far outside its memo
    data = b"\x80\x04j\xff\xff\xff\x7f."
    with pytest.raises(ParseError, match="never stored"):
        load_plain(data, "bomb")


def test_a_huge_memo_index_is_refused_not_allocated() -> None:
    # PROTO 4, NONE, LONG_BINPUT 2**31 - 1, STOP: the C unpickler resizes its memo array to the index
    data = b"\x80\x04Nr\xff\xff\xff\x7f."
    with pytest.raises(ParseError, match="out of range"):
        load_plain(data, "bomb")


def _laughs(levels: int) -> bytes:
    value: list = ["ha"]
    for _ in range(levels):
        value = [value, value]
    return pickle.dumps(value)


def test_a_billion_laughs_is_refused_by_its_count_of_values() -> None:
    data = _laughs(60)
    assert len(data) < 2000
    with pytest.raises(ParseError, match="multiplies itself|more than"):
        load_plain(data, "laughs", max_items=1_000_000)


def test_a_list_that_holds_itself_is_refused() -> None:
    cycle: list = []
    cycle.append(cycle)
    with pytest.raises(ParseError, match="holds itself"):
        load_plain(pickle.dumps(cycle), "cycle")


def test_deep_nesting_is_refused() -> None:
    value: list = []
    for _ in range(200):
        value = [value]
    with pytest.raises(ParseError, match="nested more than 64"):
        load_plain(pickle.dumps(value), "deep")


@pytest.mark.parametrize("data", [b"", b"\x80", b"\x80\x04\x95\xff\xff\xff\xff\x00\x00\x00\x00", b"{}",
                                  pickle.dumps({"a": "b" * 100})[:-5]])
def test_damaged_or_foreign_bytes_are_a_parse_error(data: bytes) -> None:
    with pytest.raises(ParseError):
        load_plain(data, "damaged")


def test_small_bombs_stay_small_in_memory() -> None:
    """Each hostile pickle is refused in a fresh process whose peak memory grows by less than 200 MB."""
    code = (
        "import resource\n"
        "from lumikit.safe_pickle import load_plain\n"
        "from lumikit.errors import ParseError\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "bombs = (b'\\x80\\x04Nr\\xff\\xff\\xff\\x7f.', b'\\x80\\x04j\\xff\\xff\\xff\\x7f.',\n"
        "         b'\\x80\\x04\\x95' + (2**62).to_bytes(8, 'little') + b'N.')\n"
        "refused = 0\n"
        "for data in bombs:\n"
        "    try:\n"
        "        load_plain(data, 'bomb')\n"
        "    except ParseError:\n"
        "        refused += 1\n"
        "grown_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before\n"
        "print(refused, grown_kb)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.returncode == 0, out.stderr[-2000:]
    refused, grown_kb = (int(x) for x in out.stdout.split())
    assert refused == 3
    assert grown_kb < 200 * 1024


def test_an_opcode_applied_to_the_wrong_kind_of_value_is_a_parse_error() -> None:
    # PROTO 4, EMPTY_DICT, NONE, APPEND (a list's opcode on a dict), STOP: the C unpickler raises AttributeError
    with pytest.raises(ParseError, match="not a readable pickle"):
        load_plain(b"\x80\x04}Na.", "mutated")
