"""The leak test verify runs on every failure message: the solution's value in its printed forms."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from lumikit.checks.leaks import leaked


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
