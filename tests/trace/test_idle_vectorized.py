"""The idle causes' per-gap questions asked for all gaps at once (:func:`_starved_labels`, :func:`_waiting_calls`)
give the answers of the per-gap functions they replace, on generated host timelines with ties, nesting and
overlapping threads."""
from __future__ import annotations

import random

import numpy as np
import pytest

from lumikit.trace.idle import (_LAUNCH, _LOADING, _UNTRACED, _flatten, _HostTimeline, _starved_label,
                                _starved_labels, _waiting_call, _waiting_calls)


def generated_host(rnd: random.Random, threads: int, events: int, grid: float) -> _HostTimeline:
    """Random nested events on a few threads (times on a grid, so equal times and exact ties are common)."""
    labels = [None, "data loading", "launch overhead", "aten::mm", "aten::nonzero", "Optimizer.step"]
    label_of = {0: _UNTRACED, 1: _LOADING, 2: _LAUNCH, 3: 3, 4: 4, 5: 5}
    flat = []
    for _ in range(threads):
        ts = np.array([rnd.randint(0, 400) * grid for _ in range(events)])
        dur = np.array([rnd.randint(1, 60) * grid for _ in range(events)])
        code = np.array([rnd.randrange(6) for _ in range(events)])
        order = np.lexsort((-dur, ts))
        flat.append(_flatten(ts[order], ts[order] + dur[order], code[order], label_of, {1}))
    w_start = np.sort(np.array([rnd.randint(0, 400) * grid for _ in range(rnd.randint(0, 12))], dtype=float))
    w_end = w_start + np.array([rnd.randint(0, 50) * grid for _ in range(len(w_start))], dtype=float)
    reach = np.maximum.accumulate(w_end) if len(w_end) else w_end
    return _HostTimeline(flat, labels, w_start, w_end, reach, [f"hipCall{i}" for i in range(len(w_start))])


def generated_gaps(rnd: random.Random, grid: float) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint gaps in time order, some touching."""
    edges = np.sort(np.array(rnd.sample(range(-20, 460), 2 * rnd.randint(1, 25)), dtype=float)) * grid
    g0, g1 = edges[0::2].copy(), edges[1::2].copy()
    for i in range(1, len(g0)):
        if rnd.random() < 0.2:
            g0[i] = g1[i - 1]
    return g0, g1


@pytest.mark.parametrize("grid", [1.0, 0.1, 0.001])
def test_all_gaps_at_once_give_each_gaps_own_answer(grid):
    rnd = random.Random(int(grid * 1000))
    for _ in range(300):
        host = generated_host(rnd, rnd.randint(1, 3), rnd.randint(1, 40), grid)
        g0, g1 = generated_gaps(rnd, grid)
        assert _starved_labels(host, g0, g1) == [_starved_label(host, float(a), float(b)) for a, b in zip(g0, g1)]
        calls = _waiting_calls(host, g0)
        assert [host.wait_name[c] if c >= 0 else None for c in calls.tolist()] == [
            _waiting_call(host, float(a)) for a in g0]


def test_a_gap_split_evenly_between_an_op_and_nothing_goes_to_nothing_traced():
    # Generated: one thread runs aten::mm for half of the gap [0, 100): a tie, which the loop gives to nothing traced
    host = _HostTimeline([(np.array([0.0]), np.array([50.0]), np.array([3]))], [None, "", "", "aten::mm"],
                         np.empty(0), np.empty(0), np.empty(0), [])
    assert _starved_labels(host, np.array([0.0, 200.0]), np.array([100.0, 300.0])) == [
        "starved: nothing traced", "starved: nothing traced"]
    assert _starved_labels(host, np.array([0.0]), np.array([90.0])) == ["starved: aten::mm"]


def flatten_before(ts, end, code, label_of, loading_codes):
    """:func:`_flatten` as it was written first (a closure per segment): the reference for the rewrite."""
    seg_s, seg_e, seg_l, stack = [], [], [], []
    t = -np.inf

    def emit(until):
        nonlocal t
        if stack and until > t:
            seg_s.append(t)
            seg_e.append(until)
            seg_l.append(stack[-1][1])
        t = max(t, until)

    for s, e, c in zip(ts.tolist(), end.tolist(), code.tolist()):
        while stack and stack[-1][0] <= s:
            emit(stack[-1][0])
            stack.pop()
        emit(s)
        t = s
        loading = c in loading_codes or (bool(stack) and stack[-1][1] == _LOADING)
        if stack:
            e = min(e, stack[-1][0])
        stack.append((e, _LOADING if loading else label_of[c]))
    while stack:
        emit(stack[-1][0])
        stack.pop()
    return np.array(seg_s), np.array(seg_e), np.array(seg_l, dtype=np.int64)


@pytest.mark.parametrize("grid", [1.0, 0.001])
def test_the_flattened_host_thread_is_the_first_versions(grid):
    # Generated nested, touching and mis-nested events (and a NaN end), flattened by both versions
    rnd = random.Random(7)
    label_of = {c: c + 3 for c in range(6)}
    for _ in range(300):
        n = rnd.randint(0, 50)
        ts = np.array([rnd.randint(0, 300) * grid for _ in range(n)])
        dur = np.array([rnd.randint(0, 80) * grid for _ in range(n)])
        if n and rnd.random() < 0.1:
            dur[rnd.randrange(n)] = np.nan
        code = np.array([rnd.randrange(6) for _ in range(n)], dtype=np.int64)
        order = np.lexsort((-dur, ts))
        args = (ts[order], ts[order] + dur[order], code[order], label_of, {1, 4})
        for new, old in zip(_flatten(*args), flatten_before(*args)):
            np.testing.assert_array_equal(new, old)


def test_the_gaps_numbers_round_as_python_rounds_each():
    # Generated: values on and off the 0.001 grid, halfway cases, large and non-finite ones
    from lumikit.trace.idle import _round3

    rnd = random.Random(3)
    values = [rnd.randint(-10 ** 9, 10 ** 12) / 1000 for _ in range(20000)]
    values += [rnd.uniform(-1e6, 1e13) for _ in range(20000)]
    values += [k / 1000 + 0.0005 for k in range(-2000, 2000)] + [2.0005, 1.0015, 0.0, -0.0, 1e15 + 0.5, 2.5e-4]
    values += [float("nan"), float("inf"), -float("inf")]
    got, want = _round3(np.array(values)), [round(v, 3) for v in values]
    assert [repr(g) for g in got] == [repr(w) for w in want]  # repr: -0.0 and nan compared too
