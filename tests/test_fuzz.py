"""The readers under mutation fuzzing: no exception but LumikitError, no input over 2 s, only standard JSON, and
no NaN or infinity in what the Python API returns for ``--json``.

CI stays seeded and small: a fixed seed (``LUMIKIT_FUZZ_SEED=N`` runs another; every failing case names the chunk
seed that replays it alone) and 400 mutated inputs per core family of the project's generated data and the real
outputs in ../shared/fixtures (where present), plus a seeded sample of every other family, in-process in two
forked workers. A worker that dies (a segmentation fault in a C extension) fails the run. The full run, thousands
of fresh inputs for each of the families with a table of counts, is ``benchmarks/bench_fuzz.py``.
"""
from __future__ import annotations

import os
import random
import warnings
from pathlib import Path

import pytest

from lumikit.errors import LumikitError
from lumikit.testing.fuzz import (FAMILIES, InvalidJson, finite_json, fresh_seed, fuzz_family, fuzz_parallel, mutate,
                                  strict_json)

CI_INPUTS_PER_FAMILY = 400
CI_SEED = 37
#: Families with a seeded sample of their own below (a fixed seed, so a failure replays) and their fresh
#: thousands in benchmarks/bench_fuzz.py.
SAMPLED_FAMILIES = ("flightrec", "rccltests", "manifest", "markers", "counters", "record", "omnistat", "progress",
                    "memory", "ladder")


def test_a_seeded_sample_gives_no_crash_hang_or_invalid_json(capsys: pytest.CaptureFixture[str]) -> None:
    fixtures = Path(os.environ.get("LUMIKIT_SHARED_FIXTURES", Path(__file__).resolve().parents[2] / "shared"
                                   / "fixtures"))  # as tests/conftest.py finds it; absent: generated seeds only
    seed = fresh_seed() if os.environ.get("LUMIKIT_FUZZ_SEED") else CI_SEED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # salvaged traces and recordings warn; that is their job
        results = fuzz_parallel(CI_INPUTS_PER_FAMILY, seed=seed, fixtures=fixtures if fixtures.is_dir() else None,
                                workers=2, families=tuple(f for f in FAMILIES if f not in SAMPLED_FAMILIES))
    total = sum(r.inputs for r in results)
    problems = [p for r in results for p in r.unhandled + r.hangs + r.invalid_json]
    with capsys.disabled():
        print(f"\nfuzz: seed {seed} (LUMIKIT_FUZZ_SEED={seed} replays it): {total} inputs, {len(problems)} failing; "
              + ", ".join(f"{r.family} {r.accepted} read / {r.refused} refused" for r in results))
    assert not problems, f"seed {seed}: {len(problems)} failing inputs, first ones:\n" + "\n".join(problems[:5])
    assert total == CI_INPUTS_PER_FAMILY * len(results) and len(results) == 4
    for r in results:  # both outcomes occur: the mutations are neither all harmless nor all fatal
        assert r.accepted + r.refused == r.inputs and r.accepted > 0 and (r.refused > 0 or r.family == "logs")


def test_a_worker_that_dies_is_a_failure_of_its_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    import faulthandler
    import signal

    import lumikit.testing.fuzz as fuzz

    def crash(path: Path, rng: random.Random) -> None:
        faulthandler.disable()  # a real crash dumps its stack; this one needs none
        os.kill(os.getpid(), signal.SIGSEGV)

    monkeypatch.setitem(fuzz._TARGETS, "smi", crash)
    [result] = fuzz_parallel(3, seed=5, families=("smi",), workers=2, chunk=2)
    assert len(result.unhandled) == 2 and all("exit status -11" in u for u in result.unhandled)
    # the two chunks die in either order (two workers): each names the call that replays it
    assert any("fuzz_family('smi', 2, seed='5.0')" in u for u in result.unhandled)
    assert any("fuzz_family('smi', 1, seed='5.1')" in u for u in result.unhandled)


def test_mutations_are_seeded_and_change_the_input() -> None:
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
    finite_json({"a": [1.0, None, {"b": 2}]})
    with pytest.raises(InvalidJson, match=r"at a\[1\]"):
        finite_json({"a": [1.0, float("inf")]})


def test_no_seeds_is_an_error_not_a_silent_pass() -> None:
    with pytest.raises(LumikitError, match="no smi seeds"):
        fuzz_family("smi", 10, fixtures=None, generated=False)


# -- the flight recorder, rccl-tests, manifest and marker readers (issue 31): a seeded sample each ---------------
def test_the_new_readers_take_a_seeded_sample_without_crash_hang_or_invalid_json() -> None:
    assert set(SAMPLED_FAMILIES) <= set(FAMILIES)  # so benchmarks/bench_fuzz.py feeds them fresh inputs too
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = fuzz_parallel(300, seed=31, families=SAMPLED_FAMILIES, workers=2, chunk=150)
    for r in results:
        problems = r.unhandled + r.hangs + r.invalid_json
        assert not problems, f"{r.family}: " + "\n".join(problems[:5])
        assert r.inputs == 300 and r.accepted > 0
        # a damaged marker line is skipped and a damaged progress record shows as "unreadable", never an error
        assert r.refused > 0 or r.family in ("markers", "progress")


# -- the counters reader (issue 31): `rocprof counters` / `rocprof roofline` on counter CSVs, rocpd databases and
# torch traces with shapes; its seeded sample is the test above (SAMPLED_FAMILIES)
def test_the_counters_reader_is_fuzzed_on_each_of_its_formats() -> None:
    from lumikit.testing.fuzz import family_seeds

    assert "counters" in SAMPLED_FAMILIES
    names = {s.name for s in family_seeds("counters", None)}
    assert names >= {"312_counter_collection.csv", "77_counter_collection.csv", "77_results.db",
                     "shapes.pt.trace.json"}


# -- the GPU record, Omnistat exports and progress records (issue 31): each format in the seeded sample above
def test_the_record_omnistat_and_progress_families_seed_each_of_their_files() -> None:
    from lumikit.testing.fuzz import family_seeds

    assert {"record", "omnistat", "progress"} <= set(SAMPLED_FAMILIES)
    assert {s.name for s in family_seeds("record", None)} == {"nid005001.jsonl", "legacy.jsonl", "nid005001.jsonl.end"}
    assert {s.name for s in family_seeds("omnistat", None)} == {"omnistat-rocm.gpu.csv", "omnistat-vendor.csv",
                                                                "omnistat-vendor.gpu.csv"}
    assert {s.name for s in family_seeds("progress", None)} == {"01.2.json", "02.q1.json"}


def test_the_record_seed_reads_as_built_before_any_mutation(tmp_path: Path) -> None:
    """The fuzz starts from a sound record: 6 samples, and pm_counters readings 900 J (node) and 400 J
    (accelerator) apart per sample, read over samples 0 to 4: 3,600 J and 1,600 J by construction."""
    from lumikit.record.card import card_of_run
    from lumikit.testing.fuzz import RECORD_NODE, _generated_run, family_seeds

    seeds = {s.name: s.data for s in family_seeds("record", None)}
    run = _generated_run(tmp_path / "run")
    (run / "gpu" / f"{RECORD_NODE}.jsonl").write_bytes(seeds[f"{RECORD_NODE}.jsonl"])
    (run / "gpu" / f"{RECORD_NODE}.jsonl.end").write_bytes(seeds[f"{RECORD_NODE}.jsonl.end"])
    card = card_of_run(run)
    assert card.nodes[RECORD_NODE]["samples"] == 6
    pm = card.totals["nodes"][RECORD_NODE]["pm_counters"]
    assert pm["energy_j"] == {"energy": 3600.0, "accel0_energy": 1600.0} and pm["span_s"] == 4.0
    assert any("full disk after 6 samples" in flag for flag in card.nodes[RECORD_NODE]["flags"])
