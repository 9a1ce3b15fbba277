"""An example check module: the pattern every per-module check module (``m01.py`` ... ``m09.py``) follows.

One public function per exercise, named ``check_<what>``, taking the learner's answer(s) and returning
:func:`~lumikit.checks.framework.passed`. The exercise id (``"00.1"``) is the one written in the solution cell's
``# Exercise 00.1: ...`` line. Expected values come from the site profile or from the data the check cell passes
in (never from the learner's own answers, and never numbers pasted here when they can be derived). Each function is
declared with ``@check(id, wrong(...), wrong(...), ...)``: at least two known-wrong answers, each naming the
argument(s) it replaces, with a value or a function of the check's bound arguments (``lambda a: a.step_times[0]``);
``lumikit verify`` calls the check with each and requires it to fail. A check cell in a notebook is one line::

    # %% tags=["check"]
    checks.check_gcd_count(gcds_per_node)

The sample notebooks under ``tests/checks/data/`` use these checks.
"""
from __future__ import annotations

from typing import Sequence

from ..kernels import CLASSES
from ..site import load_site
from .framework import Passed, check, expect_close, expect_equal, expect_in, expect_type, passed, wrong


@check("00.1",
       wrong("counts MI250X packages, not GCDs", answer=lambda a: load_site("lumi").node.gcd_count // 2),
       wrong("the count as text", answer="8"),
       wrong("counts CPU cores", answer=64))
def check_gcd_count(answer: int | None) -> Passed:
    """Exercise 00.1: how many GCDs (what PyTorch calls GPUs) does one LUMI-G node have?"""
    node = load_site("lumi").node
    expect_type("00.1", answer, int, what="the number of GCDs on one LUMI-G node",
                hint="a whole number: count what one node holds, not what one package holds.")
    expect_equal("00.1", answer, node.gcd_count, what="the number of GCDs on one LUMI-G node",
                 hint="each MI250X package holds two GCDs: how many packages has a node?")
    return passed("00.1", f"{node.gcd_count} GCDs, two per MI250X package")


@check("00.2",
       wrong("keeps the warm-up step in the mean", answer=lambda a: sum(a.step_times) / len(a.step_times)),
       wrong("the first step's time", answer=lambda a: a.step_times[0], mentions="warm-up"))
def check_mean_step_time(answer: float | None, step_times: Sequence[float]) -> Passed:
    """Exercise 00.2: the mean of the measured step times, leaving out the first (warm-up) step."""
    steady = list(step_times)[1:]
    expected = sum(steady) / len(steady)
    expect_close("00.2", answer, expected, rel=0.02, what="the mean step time without the warm-up step (s)",
                 hint="the first step includes the warm-up: a typical step leaves it out.")
    return passed("00.2", f"{expected:.3f} s per step once warm")


@check("00.3",
       wrong("a class that is not one of lumikit's", answer="network", mentions="one of"),
       wrong("calls a collective compute", answer="compute"))
def check_kernel_class(answer: str | None) -> Passed:
    """Exercise 00.3: which class of GPU work does a kernel named ``ncclDevKernel_Generic`` belong to?"""
    expect_in("00.3", answer, CLASSES, what="the kernel class",
              hint="collectives from RCCL/NCCL move data between GPUs.")
    expect_equal("00.3", answer, "communication", what="the class of `ncclDevKernel_Generic`",
                 hint="collectives from RCCL/NCCL move data between GPUs.")
    return passed("00.3", "RCCL kernels are communication")
