"""The check framework: what a learner reads when an answer is missing, wrong, or right."""
from __future__ import annotations

import numpy as np
import pytest

from lumikit.checks import (
    PASS_MIMETYPE,
    CheckFailed,
    expect_answer,
    expect_close,
    expect_equal,
    expect_in,
    expect_type,
    passed,
)
from lumikit.checks import example
from lumikit.errors import LumikitError


def test_check_failed_is_both_a_lumikit_error_and_an_assertion() -> None:
    error = CheckFailed("01.2", "the mask is wrong")
    assert isinstance(error, LumikitError)
    assert isinstance(error, AssertionError)


@pytest.mark.parametrize("helper, args", [
    (expect_answer, ()),
    (expect_equal, (8,)),
    (expect_close, (0.5,)),
    (expect_in, (("compute", "memory"),)),
    (expect_type, (int,)),
])
def test_every_helper_says_no_answer_yet_for_the_stub_placeholder(helper, args) -> None:
    with pytest.raises(CheckFailed) as caught:
        helper("01.2", None, *args, what="the number of GCDs", hint="count them")
    assert str(caught.value).startswith("No answer yet for 01.2: the number of GCDs.")
    assert "Hint: count them" in str(caught.value)
    assert caught.value.unanswered


def test_expect_equal_names_what_was_found_and_the_hint_but_never_the_answer() -> None:
    with pytest.raises(CheckFailed) as caught:
        expect_equal("01.1", 4, 8, what="the number of GCDs", hint="two per package")
    assert str(caught.value) == "Exercise 01.1: the number of GCDs is not right; you gave 4. Hint: two per package"
    assert (caught.value.expected, caught.value.found) == (8, 4)


def test_an_off_by_one_whole_number_is_named_as_counted_from_1() -> None:
    with pytest.raises(CheckFailed, match="counted from 1 where the numbering starts at 0") as caught:
        expect_equal("04.1", 6, 5, what="the starved GCD")
    assert "5" not in str(caught.value).replace("04.1", "")


def test_an_off_by_one_count_is_not_called_counting_from_1() -> None:
    with pytest.raises(CheckFailed) as caught:
        expect_equal("01.1", 3, 2, what="the number of nodes")
    assert caught.value.mistake is None and "counted from 1" not in str(caught.value)
    with pytest.raises(CheckFailed, match="a fencepost: one end left out") as caught:
        expect_equal("03.2", 9, 10, what="the steps trained", off_by_one=("a fencepost: one end twice",
                                                                         "a fencepost: one end left out"))


@pytest.mark.parametrize("found, expected, helper", [
    (np.int64(11), 11, "equal"), (np.bool_(False), False, "equal"), ("  busy-without-power ", "busy-without-power",
                                                                       "equal"), (np.float32(0.5), 0.5, "close"),
    (np.bool_(True), bool, "type"), (np.int64(3), int, "type"), (" b", ["a", "b"], "in")])
def test_numpy_numbers_and_bools_and_spaced_strings_are_accepted(found, expected, helper) -> None:
    if helper == "equal":
        expect_equal("00.1", found, expected, what="the answer")
    elif helper == "close":
        expect_close("00.1", found, expected, what="the answer")
    elif helper == "type":
        expect_type("00.1", found, expected, what="the answer")
    else:
        expect_in("00.1", found, expected, what="the answer")


def test_a_numpy_bool_is_still_not_a_number() -> None:
    with pytest.raises(CheckFailed, match="wrong type"):
        expect_type("00.1", np.bool_(True), int, what="the count")


@pytest.mark.parametrize("found, mistake", [
    (500.0, "a unit off by 1000"), (0.0005, "a unit off by 1000"), (50.0, "a percentage where a fraction"),
    (2.0, "upside down"), (-0.5, "sign reversed"),
])
def test_expect_close_names_the_kind_of_mistake_without_the_answer(found, mistake) -> None:
    with pytest.raises(CheckFailed, match=mistake) as caught:
        expect_close("03.1", found, 0.5, rel=0.02, what="the step time (s)")
    assert "0.5 " not in str(caught.value) and "0.5;" not in str(caught.value)


def test_expect_equal_returns_the_answer_when_right() -> None:
    assert expect_equal("01.1", "0x00fe", "0x00fe", what="the mask") == "0x00fe"


def test_expect_equal_treats_an_incomparable_answer_as_wrong_not_as_a_crash() -> None:
    class Weird:
        def __eq__(self, other):
            raise TypeError("cannot compare")

    with pytest.raises(CheckFailed, match="is not right"):
        expect_equal("01.1", Weird(), 8, what="the count")


def test_expect_close_accepts_within_tolerance_and_reports_it_when_off() -> None:
    assert expect_close("03.1", 0.505, 0.5, rel=0.02, what="the step time") == pytest.approx(0.505)
    with pytest.raises(CheckFailed) as caught:
        expect_close("03.1", 0.6, 0.5, rel=0.02, what="the step time (s)", hint="drop the warm-up")
    assert str(caught.value) == "Exercise 03.1: the step time (s) is off; you gave 0.6. Hint: drop the warm-up"


def test_expect_close_with_an_absolute_tolerance() -> None:
    assert expect_close("04.1", 3, 0, rel=0, abs=5, what="the idle GPU%") == 3.0
    with pytest.raises(CheckFailed, match="the idle GPU% is off; you gave 9.0.$"):
        expect_close("04.1", 9, 0, rel=0, abs=5, what="the idle GPU%")


@pytest.mark.parametrize("answer", ["fast", True, [0.5]])
def test_expect_close_wants_a_number(answer) -> None:
    with pytest.raises(CheckFailed, match="should be a number"):
        expect_close("03.1", answer, 0.5, what="the step time")


def test_expect_in_says_the_answer_is_not_a_possible_one_without_listing_them() -> None:
    with pytest.raises(CheckFailed) as caught:
        expect_in("06.1", "network", ("compute", "memory"), what="the kernel class")
    assert str(caught.value) == ("Exercise 06.1: the kernel class is not one of the possible answers; "
                                 "you gave 'network'.")
    assert caught.value.expected == ["compute", "memory"]


def test_expect_type_names_both_types() -> None:
    with pytest.raises(CheckFailed) as caught:
        expect_type("01.1", "8", int, what="the number of GCDs")
    assert str(caught.value) == ("Exercise 01.1: the number of GCDs has the wrong type: a string, where a whole "
                                 "number (int) is asked; you gave '8'.")
    with pytest.raises(CheckFailed, match="a numpy array, where a whole number") as caught:  # issue 40: "a Integral"
        expect_type("04.1", __import__("numpy").array([1]), __import__("numbers").Integral, what="the GCD")
    assert " a int" not in str(caught.value) and "a Integral" not in str(caught.value)


def test_numpy_numbers_are_numbers_and_bools_are_not() -> None:
    import numpy as np

    assert expect_type("06.2", np.int64(3), int, what="the rank") == 3
    assert expect_type("09.1", np.float32(2.5), float, what="the speed-up") == 2.5
    with pytest.raises(CheckFailed, match="wrong type"):
        expect_type("06.2", True, int, what="the rank")


def test_long_answers_are_shortened_in_messages() -> None:
    with pytest.raises(CheckFailed) as caught:
        expect_equal("09.1", "x" * 500, "y", what="the path")
    assert len(str(caught.value)) < 300
    assert "..." in str(caught.value)


def test_passed_shows_a_green_line_and_a_plain_text_line() -> None:
    result = passed("01.1", "8 GCDs")
    bundle = result._repr_mimebundle_()
    assert str(result) == "✓ Exercise 01.1 passed: 8 GCDs"
    assert bundle["text/plain"] == "✓ Exercise 01.1 passed: 8 GCDs"
    assert "color:#1a7f37" in bundle["text/html"] and "✓ Exercise 01.1 passed: 8 GCDs" in bundle["text/html"]
    assert bundle[PASS_MIMETYPE] == {"exercise": "01.1", "passed": True, "message": "8 GCDs"}


def test_ipython_shows_a_failed_check_as_one_line_not_a_traceback() -> None:
    lines = CheckFailed("01.1", "the mask is wrong", expected="0xfe", found="0xff")._render_traceback_()
    assert lines == ["\x1b[31m✗ Exercise 01.1: the mask is wrong; you gave '0xff'.\x1b[0m"]


def test_example_checks_pass_on_right_answers() -> None:
    assert str(example.check_gcd_count(8)) == "✓ Exercise 00.1 passed: 8 GCDs, two per MI250X package"
    assert example.check_mean_step_time(0.5, [1.9, 0.49, 0.51])
    assert example.check_kernel_class("communication")


@pytest.mark.parametrize("check, args, message", [
    (example.check_gcd_count, (4,), "Exercise 00.1: the number of GCDs on one LUMI-G node is not right; "
                                    "you gave 4."),
    (example.check_gcd_count, (8.0,), "Exercise 00.1: the number of GCDs on one LUMI-G node has the wrong type"),
    (example.check_mean_step_time, (0.9, [1.9, 0.49, 0.51]), "Exercise 00.2: the mean step time without the "
                                                              "warm-up step (s) is off; you gave 0.9"),
    (example.check_kernel_class, ("memory",), "Exercise 00.3: the class of `ncclDevKernel_Generic` is not right"),
    (example.check_kernel_class, (None,), "No answer yet for 00.3: the kernel class."),
])
def test_example_checks_fail_with_their_own_message(check, args, message) -> None:
    with pytest.raises(CheckFailed) as caught:
        check(*args)
    assert str(caught.value).startswith(message)
