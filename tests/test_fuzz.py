"""The readers under mutation fuzzing: no exception but LumikitError, no input over 2 s, only standard JSON.

Seeded and bounded (the same inputs every run). 500 mutated inputs per family of the project's generated data,
and 200 more per family of the real outputs in ../shared/fixtures (skipped without them). The long run is
``benchmarks/bench_fuzz.py``. A family takes a few seconds on an idle core; the trace family is the slowest (each
input is loaded and summarised).
"""
from __future__ import annotations

import warnings

import pytest

from lumikit.errors import LumikitError
from lumikit.testing.fuzz import FAMILIES, InvalidJson, fuzz_family, mutate, strict_json

CI_INPUTS = 500
CI_REAL_INPUTS = 200


def _assert_clean(result) -> None:
    problems = result.unhandled + result.hangs + result.invalid_json
    assert not problems, f"{len(problems)} failing inputs, first ones:\n" + "\n".join(problems[:5])
    assert result.inputs >= 1 and result.accepted + result.refused == result.inputs


@pytest.mark.parametrize("family", FAMILIES)
def test_generated_inputs_mutated(family: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # salvaged traces and recordings warn; that is their job
        result = fuzz_family(family, CI_INPUTS, seed=15)
    _assert_clean(result)
    assert result.inputs == CI_INPUTS
    # both outcomes occur: the mutations are neither all harmless nor all fatal
    assert result.accepted > 0 and (result.refused > 0 or family == "logs")


@pytest.mark.parametrize("family", FAMILIES)
def test_real_outputs_mutated(family: str, shared_fixtures) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = fuzz_family(family, CI_REAL_INPUTS, seed=15, fixtures=shared_fixtures, generated=False,
                             max_seed_bytes=200_000)
    _assert_clean(result)
    assert result.inputs == CI_REAL_INPUTS


def test_mutations_are_seeded_and_change_the_input() -> None:
    import random

    data = b'{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}]}\nline two 42\n'
    first = [mutate(random.Random(i), data) for i in range(50)]
    again = [mutate(random.Random(i), data) for i in range(50)]
    assert first == again
    assert sum(out != data for out, _ in first) >= 40


def test_strict_json_refuses_nan_and_infinity() -> None:
    assert strict_json('{"a": null, "b": 1e300}') == {"a": None, "b": 1e300}
    for bad in ('{"a": NaN}', "[Infinity]", "[-Infinity]", "not json"):
        with pytest.raises(InvalidJson):
            strict_json(bad)


def test_no_seeds_is_an_error_not_a_silent_pass() -> None:
    with pytest.raises(LumikitError, match="no smi seeds"):
        fuzz_family("smi", 10, fixtures=None, generated=False)
