"""Each learner's own exercise data, generated from their seed (:mod:`lumikit.checks.learner`).

The exercise notebook and its check call the same function, so the check judges against data it makes itself,
not against values from the learner's notebook; two learners get different answers; the same learner always the
same. Everything here is generated: a GPU session is the shipped *generated* ``ddp-8gcd-starved`` session with its
packages shuffled (and the GCDs inside a package swapped), so the starved GCD moves and the package powers move
with it; a trace spec varies the straggler, its delay and the model's size.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import TypeVar

from ..smi.model import Snapshot
from ..smi.sessions import load_session
from ..trace.synth import SynthSpec
from .learner import learner_seed, rng_for

T = TypeVar("T")
#: The session the per-learner GPU sessions are made from, and its starved GCD.
BASE_SESSION, BASE_STARVED = "ddp-8gcd-starved", 4
#: Readings that belong to one GCD (they move with it); the package power moves with its package.
_GCD_FIELDS = ("temp_c", "sclk_mhz", "mclk_mhz", "fan_pct", "perf", "vram_pct", "vram_used_bytes", "gpu_busy_pct")
_PACKAGE_FIELDS = ("power_w", "power_cap_w")


def pick(topic: str, options: Sequence[T], seed: str | None = None) -> T:
    """One of ``options``, chosen for this learner and topic (``pick("01.2", range(8))``)."""
    return rng_for(topic, seed).choice(list(options))


def _layout(topic: str, seed: str, avoid: int | None) -> dict[int, int]:
    """Source GCD -> target GCD: packages shuffled, the two GCDs of a package maybe swapped."""
    rng = rng_for(topic, seed)
    while True:
        packages = list(range(4))
        rng.shuffle(packages)
        flips = [rng.randrange(2) for _ in range(4)]
        mapping = {2 * p + r: 2 * packages[p] + (r ^ flips[p]) for p in range(4) for r in range(2)}
        # never GCD 0: a stub's 0, and "counted from 1" landing on its package neighbour, would pass or look right
        if mapping[BASE_STARVED] not in (avoid, BASE_STARVED, 0):
            return mapping


@lru_cache(maxsize=8)
def _session(topic: str, seed: str, avoid: int | None) -> tuple[Snapshot, ...]:
    mapping = _layout(topic, seed, avoid)
    out = []
    for snap in load_session(BASE_SESSION):
        by_index = {d.index: d for d in snap.devices}
        devices = []
        for slot in sorted(by_index):  # the slot keeps its identity (index, package, bus id...)
            source = next(s for s, t in mapping.items() if t == slot)
            values = {f: getattr(by_index[source], f) for f in _GCD_FIELDS}
            package_head = by_index[2 * (source // 2)]  # the package power sits on the even GCD
            if slot % 2 == 0:
                values.update({f: getattr(package_head, f) for f in _PACKAGE_FIELDS})
            else:
                values.update({f: getattr(by_index[slot], f) for f in _PACKAGE_FIELDS})
            devices.append(replace(by_index[slot], **values))
        out.append(replace(snap, devices=tuple(devices), source=f"generated for the learner ({topic})"))
    return tuple(out)


def starved_session(topic: str, *, avoid: int | None = None, seed: str | None = None) -> list[Snapshot]:
    """This learner's generated 8-GCD DDP session with one starved GCD (never GCD ``avoid``, never the base's)."""
    return list(_session(topic, learner_seed() if seed is None else seed, avoid))


def starved_gcd(topic: str, *, avoid: int | None = None, seed: str | None = None) -> int:
    """The starved GCD of :func:`starved_session` (for tests and the instructor's reference)."""
    return _layout(topic, learner_seed() if seed is None else seed, avoid)[BASE_STARVED]


def trace_spec(topic: str = "06", seed: str | None = None) -> SynthSpec:
    """This learner's 4-rank trace: the straggler (never rank 0), its data-loader delay and the model size vary."""
    rng = rng_for(topic, seed)
    return SynthSpec(ranks=4, steps=5, layers=rng.randint(6, 10), straggler=rng.randrange(1, 4),
                     straggler_delay_us=float(rng.randrange(250, 750, 10)))
