"""``--json`` text: orjson writes it where it gives exactly the text of ``json.dumps(indent=2)``, else ``json`` does;
checked against ``json.dumps`` on generated documents of every kind of value, the awkward ones included."""
from __future__ import annotations

import json
import math
import random
import struct

import numpy as np

from lumikit.json_output import jsonable, to_json


def reference(value) -> str:
    """The text ``json`` writes (the definition of ``--json``)."""
    return json.dumps(jsonable(value), indent=2, allow_nan=False)


def random_float(rnd: random.Random) -> float:
    pick = rnd.randrange(4)
    if pick == 0:
        return struct.unpack("d", struct.pack("Q", rnd.getrandbits(64)))[0]
    if pick == 1:
        return round(rnd.uniform(-1e7, 1e7), rnd.randint(0, 6))
    if pick == 2:
        return rnd.uniform(-1, 1) * 10.0 ** rnd.randint(-30, 30)
    return rnd.choice([0.0, -0.0, 1e-4, 9.99e-5, 1e16, 1e15, 123456789012345678.0, 5e-324, 0.1, 1 / 3])


def random_value(rnd: random.Random, depth: int = 0):
    pick = rnd.randrange(9 if depth < 4 else 6)
    if pick == 0:
        return random_float(rnd)
    if pick == 1:
        return rnd.choice([0, -1, 7, 2 ** 63 - 1, -(2 ** 63), 2 ** 64 - 1, 2 ** 64, -(2 ** 63) - 1, 10 ** 30])
    if pick == 2:
        return "".join(rnd.choice(["a", " ", "\"", "\\", "/", "\n", "\t", "\x00", "\x1f", "\x7f", "é", "µ",
                                   "\u2028", "\U0001f600"]) for _ in range(rnd.randint(0, 6)))
    if pick == 3:
        return rnd.choice([True, False, None])
    if pick == 4:
        return np.float64(random_float(rnd)) if rnd.random() < 0.5 else np.int64(rnd.randint(-5, 5))
    if pick == 5:
        return "kernel_" + str(rnd.randint(0, 99))
    if pick == 6:
        return [random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 4))]
    if pick == 7:
        return tuple(random_value(rnd, depth + 1) for _ in range(rnd.randint(0, 3)))
    if rnd.random() < 0.1:
        return {1: 2, 2.5: "x", True: None}  # keys that are not strings
    return {rnd.choice(["a", "b", "µs", "x\x7f", "gaps"]) + rnd.choice(["", "_2"]): random_value(rnd, depth + 1)
            for _ in range(rnd.randint(0, 4))}


def test_the_text_is_json_dumps_text_on_every_kind_of_value():
    rnd = random.Random(38)
    for _ in range(3000):
        value = random_value(rnd)
        assert to_json(value)[0] == reference(value)


def test_plain_reports_of_floats_and_names_match_too():
    # the shape of an idle report: many gaps with rounded times and ASCII names (the fast path's case)
    rnd = random.Random(5)
    gaps = [{"start_us": round(rnd.uniform(0, 1e9), 3), "dur_us": round(rnd.uniform(0, 1e4), 3), "step": i,
             "since_step_us": None, "cause": "starved: nothing traced", "next": f"kernel_{i % 7}",
             "before_first_gpu": i == 0} for i in range(2000)]
    value = {"ranks": {"0": {"0": {"gaps": gaps, "idle_us": 12.5, "share": 0.000123}}}, "window": "ProfilerStep#1"}
    assert to_json(value)[0] == reference(value)


def test_non_finite_numbers_are_null_and_noted():
    text, notes = to_json({"a": [1.0, math.nan], "b": math.inf})
    assert json.loads(text) == {"a": [1.0, None], "b": None} and notes == ["a[1]", "b"]
    assert text == reference({"a": [1.0, None], "b": None})


def test_other_indents_are_json_dumps_own():
    value = {"a": [1, 2.5e-7, "µ"]}
    assert to_json(value, indent=None)[0] == json.dumps(jsonable(value), allow_nan=False)
    assert to_json(value, indent=4)[0] == json.dumps(jsonable(value), indent=4, allow_nan=False)
