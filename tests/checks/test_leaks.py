"""The leak test verify runs on every failure message: the solution's value in its printed forms."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lumikit.checks.leaks import count_by_kind, kinded_forms, leaked, leaks
from lumikit.checks.verify import cross_leaks


def test_a_number_leaks_in_any_of_its_printed_forms() -> None:
    assert leaked("Exercise 03.1: the warm step time is off; expected 0.1234", 0.123412)
    assert leaked("Exercise 05.2: backward takes 43% of the step", 0.4321)
    assert leaked("Exercise 03.3: about 8,123 steps fit", 8123)
    assert leaked("Exercise 06.2: the others wait 812.5 µs", np.float64(812.49))


def test_the_learners_own_value_echoed_back_is_not_a_leak() -> None:
    assert not leaked("Exercise 06.2: the wait is off; you gave 812.5", 812.5, given=[812.5])
    assert not leaked("Exercise 04.2: you gave [0, 1, 2, 3, 4, 5, 6, 7]", [0, 2, 4, 6], given=[list(range(8))])
    assert not leaked("Exercise 01.2: you gave [40, 41, 42, 43, 44, 45, 46, 47].", [41, 42, 43, 44, 45, 46, 47],
                      given=[[40, 41, 42, 43, 44, 45, 46, 47]])


def test_the_exercise_id_and_unrelated_numbers_do_not_count() -> None:
    assert not leaked("Exercise 04.1: the index of the starved GCD is not right; you gave 6.", 5, given=[6])
    assert not leaked("Exercise 01.2: the cores next to GCD 1 are not right", 1)


def test_a_single_digit_leaks_only_when_announced() -> None:
    assert leaked("Exercise 04.1: not right; expected 5", 5)
    assert leaked("Exercise 04.1: the starved GCD should be 5.", np.int64(5))


def test_strings_leak_as_whole_words_and_letters_only_as_options() -> None:
    assert leaked("Exercise 06.1: expected 'communication'", "communication")
    assert not leaked("Exercise 06.1: the class with most time is not right", "communication")
    assert not leaked("Exercise 08.3: the recipe that moves MIOpen's database off Lustre", "miopen")
    assert leaked("Exercise 01.q1: the right option is 'b'", "b")
    assert not leaked("Exercise 04.3: about 300 W is one busy GCD", {0: "one", 1: "idle"})
    assert leaked("Exercise 04.3: package 0 should be 'one'", {0: "one", 1: "idle"})
    assert not leaked("Exercise 01.q1: (a) is not the best answer: be careful", "b")
    assert leaked("Exercise 02.3: the venv runs /opt/py/bin/python3.12", Path("/opt/py/bin/python3.12"))


def test_list_items_leak_one_by_one() -> None:
    assert leaked("Exercise 01.1: GCD 0 goes with 0x00fe000000000000", ["0x00fe000000000000", "0xfe00000000000000"])
    assert leaked("Exercise 01.2: expected [49, 50, 51]", [49, 50, 51])


def test_a_whole_number_leaks_in_words() -> None:
    assert [str(x) for x in leaks("Exercise 10.2: two tasks per node, one GCD each.", 2)] == ["two (words)"]
    assert leaks("Exercise 08.6: it is rank eleven", np.int64(11))
    assert not leaks("Exercise 10.2: one task per GCD", 1)  # "one" is too common to count unannounced
    assert leaks("Exercise 10.2: each process should see only one GCD", 1)
    assert not leaks("Exercise 10.2: you gave three, which is not right", 2, given=[3])


def test_identifiers_keys_and_letters_of_the_solution_leak() -> None:
    assert [x.kind for x in leaks("Exercise 08.5: the Slingshot NIC limits it", "slingshot_nic")] == ["identifier"]
    env = {"MIOPEN_USER_DB_PATH": "/scratch/p/miopen", "TRITON_CACHE_DIR": "/scratch/p/triton"}
    assert [str(x) for x in leaks("Exercise 05.W1: TRITON_CACHE_DIR is not set", env)] == ["TRITON_CACHE_DIR (key)"]
    # a key the learner's own (wrong) dict has is theirs to read back
    home = {"MIOPEN_USER_DB_PATH": "$HOME/miopen", "TRITON_CACHE_DIR": "$HOME/triton"}
    assert not leaks("Exercise 05.W1: TRITON_CACHE_DIR=$HOME/triton is not under /scratch/p", env, given=[home])
    assert [x.kind for x in leaks("Exercise 11.1: option B is the one", "b")] == ["letter"]
    assert [x.kind for x in leaks("Exercise 11.1: think of (b)", "b")] == ["letter"]
    assert not leaks("Exercise 11.1: (a) is not the best answer", "b", given=["a"])


def test_leaks_are_counted_by_kind() -> None:
    found = leaks("Exercise 05.W1: set TRITON_CACHE_DIR, two of them, expected 0.25", {"TRITON_CACHE_DIR": 0.25})
    assert count_by_kind(found) == {"value": 1, "words": 0, "identifier": 0, "key": 1, "letter": 0}
    assert count_by_kind(["two (words)", "0.25"]) == {"value": 1, "words": 1, "identifier": 0, "key": 0,
                                                      "letter": 0}


def test_verify_finds_another_exercises_answer_in_a_message() -> None:
    gcd = {"exercise": "04.1", "answer_forms": [list(f) for f in kinded_forms("gcd_5_starved")]}
    power = {"exercise": "04.3", "answer_forms": [list(f) for f in kinded_forms(300.0)],
             "outcomes": [{"outcome": "rejected", "message": "Exercise 04.3: the GCD gcd_5_starved idles"}]}
    assert [(other, form) for _, other, form in cross_leaks(power, [gcd])] == [("04.1", "gcd_5_starved")]  # found once, as printed
    assert not cross_leaks({**power, "outcomes": [{"outcome": "rejected", "message": "Exercise 04.3: off"}]}, [gcd])


# --- The probe verify runs after each check cell, on a planted leak and on shipped checks ---------------------------

def test_the_probe_finds_a_planted_leak_in_words_and_keys() -> None:
    from lumikit.checks import CheckFailed, check, passed, wrong
    from lumikit.checks.probe import try_wrong_answers

    @check("99.2", wrong("an empty dict", env={}), wrong("one variable in home", env={"OTHER_DIR": "/home/x"}))
    def leaky(env, tasks):
        if env != {"CACHE_DIR": "/scratch/p"}:
            raise CheckFailed("99.2", "the cache is not moved", hint="set CACHE_DIR; the job has two tasks")
        return passed("99.2")

    report = try_wrong_answers("leaky(env, tasks)", {"leaky": leaky, "env": {"CACHE_DIR": "/scratch/p"}, "tasks": 2})
    assert report.leaks == 3  # both wrong answers' messages and the stub's name the key
    assert all("CACHE_DIR (key)" in o.leaked for o in report.outcomes)


SCRIPT = ('srun singularity exec $CONTAINER bash -c "export RANK=\\$SLURM_PROCID LOCAL_RANK=\\$SLURM_LOCALID '
          'WORLD_SIZE=\\$SLURM_NPROCS && python train.py"')
WRAPPER = "#!/bin/bash\nexport RANK=$SLURM_PROCID\nexport LOCAL_RANK=$SLURM_LOCALID\nexport WORLD_SIZE=$SLURM_NPROCS\n" \
          'exec "$@"\n'


def _shipped_cells():
    from lumikit.checks import handson, m05, m08
    from lumikit.jobs import spec

    project = "project_465000000"
    return [
        ("handson.check_slurm_escaping(srun_line, wrapper)", {"handson": handson, "srun_line": SCRIPT,
                                                              "wrapper": WRAPPER}),
        ("m05.check_cache_env(cache_env, project)", {"m05": m05, "project": project, "cache_env": {
            v: f"/scratch/{project}/caches/{v.lower()}" for v in m05.CACHE_VARIABLES}}),
        ("handson.check_miopen_logging(job)", {"handson": handson, "job": spec(
            ["python", "train.py"], partition="small-g", gpus_per_node=1, time="0:10:00",
            env={"MIOPEN_ENABLE_LOGGING": "1", "MIOPEN_ENABLE_LOGGING_CMD": "1"})}),
        ("handson.check_jax_per_gcd(job, 1, 2)", {"handson": handson, "job": spec(
            ["python", "-c", "import jax"], partition="small-g", ntasks_per_node=2, gpus_per_task=1,
            time="0:05:00", container="jax", env={"PYTHONNOUSERSITE": "1"})}),
        ("m08.check_hang(m08.RECORDER_ENV, rank, seq)", {"m08": m08, "rank": m08._hang_truth()[0],
                                                          "seq": m08._hang_truth()[1]}),
    ]


def test_the_probe_finds_no_leak_in_shipped_checks() -> None:
    from lumikit.checks.probe import try_wrong_answers

    for source, namespace in _shipped_cells():
        report = try_wrong_answers(source, namespace)
        assert not report.problem, (source, report.problem)
        assert all(o.rejected for o in report.outcomes), [(o.why, o.outcome, o.message) for o in report.outcomes]
        assert report.leaks == 0, [(o.why, o.leaked, o.message) for o in report.outcomes if o.leaked]
