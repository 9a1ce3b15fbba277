"""A first failure names the kind of mistake, never the method: every check's first-failure text is held against its
solution's code (the names it reads, its computation) and the question a learner sees; the recipe, the column and the
call belong to the hint levels (``hint("NN.k")``), shown from the second and third attempt."""
from __future__ import annotations

from pathlib import Path

import pytest

from lumikit.checks.framework import _whole_number_mistake
from lumikit.checks.instructor.recipes import (first_failure_texts, leaks_for, recipe_leaks, solution_cells,
                                               solution_expressions, solution_names, sweep)

ROOT = Path(__file__).resolve().parents[2]
CELLS = {k: v for p in sorted((ROOT / "solutions").glob("[0-9][0-9]_*.py"))
         for k, v in solution_cells(p.read_text(encoding="utf-8")).items()}

#: Seven messages the checks printed at a first failure before issue 40, each handing over the method.
RECIPE_MESSAGES = {
    "06.2": "Exercise 06.2: the other ranks' wait is off; you gave 12.0. Hint: the mean of the other ranks' "
            "`mean_comm_us` minus the straggler's `mean_comm_us`.",
    "05.P1": "Exercise 05.P1: MFU (0-1) is off; you gave 0.5. Hint: FLOPs per step / step time / one GCD's peak for "
             "the run's precision (load_site('lumi').hardware['gcd_peak_tflops']).",
    "08.1": "Exercise 08.1: the masks of task 15 are not right. Hint: task 15 is local task 15 % 8 = 7 on its node; "
            "masks repeat on every node (`cpu_masks(spec, site)` gives one node's list).",
    "05.W2": "Exercise 05.W2: the first step's extra time is off; you gave 3.0. Hint: the first step minus the "
             "median of the later steps.",
    "07.4": "Exercise 07.4: the overhead is off; you gave 0.5. Hint: `mean_step_time_s` of DP / that of the single "
            "run - 1 (0.25 means 25 % longer steps).",
    "06.1": "Exercise 06.1: the kernel class is not right; you gave 'compute'. Hint: keep rank 0's rows of "
            "`get_kernel_breakdown()` and take the `kclass` of the largest `total_us`.",
    "04.1": "Exercise 04.1: the index of the starved GCD is not right; you gave 6. It looks like the neighbouring "
            "one below: check which you took (the numbering starts at 0).",
}


@pytest.mark.parametrize("exercise", sorted(RECIPE_MESSAGES))
def test_the_leak_check_finds_each_recipe_the_issue_quotes(exercise: str) -> None:
    assert leaks_for(RECIPE_MESSAGES[exercise], CELLS[exercise]), RECIPE_MESSAGES[exercise]


def test_each_kind_of_method_leak_is_named() -> None:
    kinds = lambda message, **kw: {leak.kind for leak in recipe_leaks(message, **kw)}  # noqa: E731
    assert kinds("take the largest `total_us`", names={"total_us"}) == {"name"}
    assert kinds("call .idxmax() on it", names={"idxmax"}) == {"name"}
    assert kinds("task 15 is local task 15 % 8 = 7") == {"recipe"}
    assert kinds("the first step minus the median of the later steps") == {"recipe"}
    assert kinds("the neighbouring one below") == {"proximity"}
    assert kinds("one too many: look again") == {"proximity"}
    assert kinds("it is neither host_wait nor other") == {"elimination"}
    assert kinds("wait = others.mean() - mine", expressions={"others.mean() - mine"}) == {"recipe"}


def test_the_kind_of_mistake_and_stated_names_are_not_leaks() -> None:
    assert not recipe_leaks("a percentage where a fraction (0 to 1) is asked")
    assert not recipe_leaks("the straggler waits least at each all-reduce; compare the ranks' waits")
    assert not recipe_leaks("a unit off by 1000 (µs for ms): 43% of the step, 120 µs/step")
    assert not recipe_leaks("store it in `wait_us`", names={"wait_us"}, stated={"wait_us"})
    assert not recipe_leaks("the mean of the ranks", names={"mean"})  # plain English, not `mean(`
    assert not recipe_leaks("Exercise 06.2: you gave 3 % 2 = 1.")  # the learner's own value echoed back


def test_the_solution_code_gives_the_names_and_expressions_it_reads() -> None:
    code = ('s = analyzer.get_stragglers()\nmine = float(s.loc[s["rank"] == r, "mean_comm_us"].iloc[0])\n'
            'wait_us = float(s[s["rank"] != r]["mean_comm_us"].mean() - mine)\n')
    assert {"get_stragglers", "mean_comm_us", "mean"} <= solution_names(code)
    assert "mine" not in solution_names(code) and "rank" not in solution_names(code)
    assert 's[s[\'rank\'] != r][\'mean_comm_us\'].mean() - mine' in solution_expressions(code)


def test_first_failure_texts_are_read_from_a_checks_source() -> None:
    source = '''
HINT = "compare the waits"
@check("99.1", wrong("x", a=1), wrong("y", a=2))
def check_a(a, b):
    expect_close("99.1", a, b, what="the wait (µs)", hint=HINT)
    if a < 0:
        raise CheckFailed("99.1", f"rank {a} is not a rank", mistake=_why(a))
    return passed("99.1", "the answer is 12 and well done")
def _why(a):
    return "a rank counted from 1"
'''
    assert first_failure_texts(source) == {"99.1": ["the wait (µs)", "compare the waits", "rank X is not a rank",
                                                    "a rank counted from 1"]}


def test_an_off_by_one_names_no_direction() -> None:
    above = _whole_number_mistake(6, 5, "the index of the starved GCD")
    below = _whole_number_mistake(4, 5, "the index of the starved GCD")
    assert above == below and not recipe_leaks(above)


def test_no_first_failure_of_any_check_hands_over_the_method() -> None:
    searched, findings = sweep(ROOT / "lumikit" / "checks", ROOT / "solutions")
    assert searched > 600  # every check's texts were read
    assert not findings, f"{len(findings)} first-failure texts hand over the method (move the recipe, the column " \
                         f"and the call to the solution's # Hint:/# Tool: lines):\n" + "\n".join(map(str, findings))


# --- verify's probe holds each message against the solution cell the check follows ---------------------------------

def test_the_probe_finds_a_recipe_in_a_wrong_answers_message_and_the_stubs() -> None:
    import pandas as pd

    from lumikit.checks import check, expect_close, passed, wrong
    from lumikit.checks.instructor.probe import try_wrong_answers

    @check("99.3", wrong("twice the wait", w=lambda a: 2 * a.w), wrong("the sign reversed", w=lambda a: -a.w))
    def leaky(w, table):
        expect_close("99.3", w, table["x_us"].mean() - 1, what="the wait", hint="the mean of `x_us` minus one")
        return passed("99.3")

    namespace = {"leaky": leaky, "w": 3.0, "t": pd.DataFrame({"x_us": [3.0, 5.0]})}
    solution = '# Exercise 99.3: How long is the wait? Store it in `w`.\nw = t["x_us"].mean() - 1\n'
    report = try_wrong_answers("leaky(w, t)", namespace, solution)
    assert report.leaks == 3  # both wrong answers' messages and the stub's
    assert all("x_us (name)" in o.leaked for o in report.outcomes)
    assert not try_wrong_answers("leaky(w, t)", namespace).leaks  # without the solution: its value alone, not shown


def test_another_exercises_number_is_not_a_cross_leak_whichever_run_was_faster() -> None:
    from lumikit.checks.instructor.leaks import kinded_forms
    from lumikit.checks.instructor.verify import cross_leaks

    timing = {"exercise": "07.2", "answer_forms": [list(f) for f in kinded_forms(0.412)]}
    message = {"exercise": "07.3", "answer_forms": [], "outcomes": [
        {"outcome": "rejected", "message": "Exercise 07.3: the speed-up is off; you gave 0.412."}]}
    assert not cross_leaks(message, [timing])  # a measured number meeting another by chance is no leak
    name = {"exercise": "06.1", "answer_forms": [list(f) for f in kinded_forms("ncclDevKernel_AllReduce")]}
    message["outcomes"][0]["message"] = "Exercise 06.3: ncclDevKernel_AllReduce idles"
    assert cross_leaks(message, [name])


def test_another_exercises_short_word_counts_only_quoted() -> None:
    from lumikit.checks.instructor.leaks import kinded_forms
    from lumikit.checks.instructor.verify import cross_leaks

    rung = {"exercise": "12.1", "answer_forms": [list(f) for f in kinded_forms("bf16")]}
    message = {"exercise": "12.2", "answer_forms": [], "outcomes": [
        {"outcome": "rejected", "message": "Exercise 12.2: off. Hint: the bf16 rung's peak."}]}
    assert not cross_leaks(message, [rung])  # the word the question uses; which rung won turns with the run
    message["outcomes"][0]["message"] = "Exercise 12.2: off; the rung that helped is 'bf16'."
    assert cross_leaks(message, [rung])


def test_a_right_answer_the_wrong_case_leaves_alone_may_be_named() -> None:
    from lumikit.checks import CheckFailed, check, passed, wrong
    from lumikit.checks.instructor.probe import try_wrong_answers

    @check("99.4", wrong("the job kept as it was", fixed=lambda a: "broken"), wrong("another field", field="nodes"))
    def fields(field, fixed):
        if field != "cpus_per_task":
            raise CheckFailed("99.4", "that field is not at fault")
        if fixed != "good":
            raise CheckFailed("99.4", f"the fixed job is still rejected: {field} is over the limit")
        return passed("99.4")

    solution = '# Exercise 99.4: Which field is at fault (`field`)? Fix it (`fixed`).\nfield = p[0].cpus_per_task\n' \
               'fixed = "good"\n'
    report = try_wrong_answers("fields(field, fixed)", {"fields": fields, "field": "cpus_per_task",
                                                         "fixed": "good"}, solution)
    assert report.leaks == 0  # the field is the learner's own right answer to the first part
