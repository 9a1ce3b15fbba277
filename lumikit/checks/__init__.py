"""Checked exercises, the learner's side: the framework check modules use and what a check needs in a kernel.

Writing an exercise (the solution is the one source)::

    # %% tags=["solution"]                     <- in solutions/NN_name.py (Jupytext percent format)
    # Exercise 01.2: Which CPU mask goes with GCD 0? Store it in `mask0`.
    # Hint: `site.node.masks()` lists them in GCD order.
    mask0 = site.node.masks()[0]

    # %% tags=["check"]
    checks.check_mask(mask0)                   <- the cell ends with the call, so its green line is shown

The check function declares its exercise and known-wrong answers (``lumikit verify`` requires each to fail)::

    @check("01.2", wrong("the mask of GCD 1", answer=lambda a: site.node.masks()[1]),
                   wrong("core numbers instead of a mask", answer="1-7"))
    def check_mask(answer: str | None) -> Passed: ...

``make exercises`` (``python -m lumikit.checks.instructor.generate``) writes ``exercises/NN_name.py`` with the
solution cell replaced by its comments, ``mask0 = None`` and ``raise NotImplementedError(...)``, plus both ``.ipynb``
files.
Put imports in a cell before the exercise (a stub assigns None to names, not imports). ``lumikit verify`` proves
that every solution passes and every check fails on the stubs with its own message.

Per-module checks live in ``lumikit.checks.mNN`` (``lumikit.checks.example`` shows the pattern). What only the
instructor runs (the generator, ``verify``, the notebook runner, grading, the class view) lives in
:mod:`lumikit.checks.instructor`, which this side never imports.
"""
from .framework import (
    PASS_MIMETYPE,
    CheckFailed,
    Passed,
    Wrong,
    check,
    expect_answer,
    expect_close,
    expect_equal,
    expect_in,
    expect_type,
    passed,
    wrong,
)
from .hints import hint

__all__ = [
    "PASS_MIMETYPE",
    "CheckFailed",
    "Passed",
    "expect_answer",
    "expect_close",
    "expect_equal",
    "expect_in",
    "expect_type",
    "passed",
    "Wrong",
    "check",
    "wrong",
    "hint",
]
