"""Try a check's known-wrong answers in the kernel where its solution just passed (``lumikit verify`` does this).

After each ``check`` cell of a solution, verify runs ``probe_cell(<that cell's source>)``: the check call is read
from the cell, its arguments are evaluated in the notebook's namespace and bound to the check's parameters, and
the check is called once per declared :class:`~lumikit.checks.framework.Wrong` answer, with the answer arguments
replaced. Each must raise :class:`~lumikit.checks.framework.CheckFailed` (a real failure, not "no answer yet") whose
message names the exercise (and the wrong answer's ``mentions``, if given), and no message (nor the stub's, every
answer None) may show the solution's answer (:func:`lumikit.checks.instructor.leaks.leaks`: its printed value, or in words, identifiers, keys and letters).
Given the solution cell the check follows, no first-failure message may hand over its method either (:func:`lumikit.checks.instructor.recipes.leaks_for`: the names its code reads, its formula,
where the answer lies from the learner's, which options are ruled out). Nothing is recorded as progress.
"""
from __future__ import annotations

import ast
import copy
import inspect
from dataclasses import asdict, dataclass, replace
from types import SimpleNamespace
from typing import Any, Mapping

from ..framework import _PROBING, WRONG_MIMETYPE, CheckFailed, check_info
from ..hints import hint_levels
from .leaks import kinded_forms, leaks, without_echoes
from .recipes import SolutionCell, leaks_for, question_of


@dataclass(frozen=True)
class WrongOutcome:
    """What one known-wrong answer did to its check: ``rejected`` is the only good outcome."""

    exercise: str
    why: str
    outcome: str  # rejected | accepted | unanswered | crashed | not mentioned
    message: str
    leaked: tuple[str, ...] = ()  # printed forms of the solution's answer found in the message
    searched: str = ""  # the message without the wrong values echoed back (verify searches it for other answers)

    @property
    def rejected(self) -> bool:
        return self.outcome == "rejected"


@dataclass(frozen=True)
class ProbeReport:
    """The wrong answers tried after one check cell (``exercise`` is empty when the cell calls no declared check)."""

    exercise: str
    function: str
    outcomes: tuple[WrongOutcome, ...]
    problem: str = ""
    stub_message: str = ""  # the check's message for an unanswered exercise (every answer None)
    stub_leaked: tuple[str, ...] = ()
    #: The solution's answer in every (form, kind) a message could carry, for verify's search across exercises.
    answer_forms: tuple[tuple[str, str], ...] = ()

    @property
    def messages_checked(self) -> int:
        """How many failure messages were searched for the solution's answer (the wrong answers' and the stub's)."""
        return sum(bool(o.message) for o in self.outcomes) + bool(self.stub_message)

    @property
    def leaks(self) -> int:
        """How many of those messages showed the solution's answer."""
        return sum(bool(o.leaked) for o in self.outcomes) + bool(self.stub_leaked)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        rejected = sum(o.rejected for o in self.outcomes)
        text = (self.problem or f"{self.exercise}: {rejected}/{len(self.outcomes)} known-wrong answers rejected")
        if self.leaks:
            text += f"; {self.leaks} message(s) show the solution's answer"
        data = {"exercise": self.exercise, "function": self.function, "problem": self.problem,
                "outcomes": [asdict(o) for o in self.outcomes], "stub_message": self.stub_message,
                "stub_leaked": list(self.stub_leaked), "answer_forms": [list(f) for f in self.answer_forms]}
        return {"text/plain": text, WRONG_MIMETYPE: data}


def check_call(source: str) -> ast.Call | None:
    """The call a check cell ends with (``checks.check_x(a, b, rank=0)``), or None."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    if tree.body and isinstance(tree.body[-1], ast.Expr) and isinstance(tree.body[-1].value, ast.Call):
        return tree.body[-1].value
    return None


def try_wrong_answers(source: str, namespace: Mapping[str, Any], solution: str = "") -> ProbeReport:
    """Call the check of a check cell once per known-wrong answer, in ``namespace``; report each outcome.

    ``solution``: the source of the solution cell(s) the check follows, whose method no message may hand over."""
    call = check_call(source)
    if call is None:
        return ProbeReport("", "", (), "the check cell does not end with a call to a check")
    env = dict(namespace)

    def evaluate(node: ast.expr) -> Any:
        return eval(compile(ast.Expression(node), "<check cell>", "eval"), env)  # noqa: S307 (our own notebook)

    func = evaluate(call.func)
    name = ast.unparse(call.func)
    info = check_info(func)
    if info is None:
        return ProbeReport("", name, (), f"{name} is not declared with @check(exercise, wrong(...), ...)")
    args = [evaluate(a) for a in call.args]
    kwargs = {k.arg: evaluate(k.value) for k in call.keywords if k.arg}
    bound = inspect.signature(func).bind(*args, **kwargs)
    bound.apply_defaults()
    outcomes = []
    cell = SolutionCell(info.exercise, solution, question_of(solution) + "\n" + source) if solution else None
    solution = {n: bound.arguments.get(n) for n in info.answer_names}
    token = _PROBING.set(True)
    try:
        for case in info.wrong:
            arguments = dict(bound.arguments)
            try:
                replaced = case.values(SimpleNamespace(**copy.copy(arguments)))
            except Exception as exc:  # noqa: BLE001 (a broken declaration is reported, not raised)
                outcomes.append(WrongOutcome(info.exercise, case.why, "crashed",
                                             f"building the wrong answer raised {type(exc).__name__}: {exc}"))
                continue
            arguments.update(replaced)
            outcome = _judge(info.exercise, case.why, case.mentions, func, arguments)
            given = list(replaced.values())  # answers the case leaves alone are right: showing them tells nothing
            found = [str(f) for n, v in solution.items() if n in replaced for f in leaks(outcome.message, v, given)]
            # the right answers the case leaves alone, and what the learner wrote (a field of their own job spec, a
            # key of their own dict), may be named
            kept = " ".join([str(v) for n, v in solution.items() if n not in replaced] + [repr(v) for v in given])
            found += ([str(f) for f in leaks_for(without_echoes(outcome.message, given),
                                                 replace(cell, stated=f"{cell.stated}\n{kept}"))]
                      if cell and outcome.rejected else [])
            outcomes.append(replace(outcome, leaked=tuple(dict.fromkeys(found)),
                                    searched=without_echoes(outcome.message, given)))
        stub_message, stub_found = _stub(func, bound.arguments, solution, info.exercise, cell)
    finally:
        _PROBING.reset(token)
    answer_forms = tuple(sorted(set().union(*(kinded_forms(v) for v in solution.values())) if solution else ()))
    return ProbeReport(info.exercise, name, tuple(outcomes), stub_message=stub_message, stub_leaked=stub_found,
                       answer_forms=answer_forms)


def _stub(func: Any, arguments: Mapping[str, Any], solution: Mapping[str, Any],
          exercise: str = "", cell: SolutionCell | None = None) -> tuple[str, tuple[str, ...]]:
    """The check's message when every answer is None (the exercise's stub) followed by the exercise's on-demand
    hints (all the help a learner gets without answering), and the solution's forms found in them; the method of
    the solution ``cell`` is searched in the first message only (the hints are where it belongs)."""
    try:
        func(**{**arguments, **{n: None for n in solution}})
    except CheckFailed as failure:
        message = str(failure)
    except Exception as exc:  # noqa: BLE001 (verify's exercise run reports a crash on None)
        return f"{type(exc).__name__}: {exc}", ()
    else:
        return "", ()
    recipe = [str(f) for f in leaks_for(message, cell)] if cell else []
    message = " ".join([message, *hint_levels(exercise)]) if exercise else message
    return message, tuple(dict.fromkeys([str(f) for v in solution.values() for f in leaks(message, v)] + recipe))


def _judge(exercise: str, why: str, mentions: str | None, func: Any, arguments: dict[str, Any]) -> WrongOutcome:
    try:
        result = func(**arguments)
    except CheckFailed as failure:
        text = str(failure)
        if failure.unanswered:
            return WrongOutcome(exercise, why, "unanswered", text)
        if mentions and mentions.lower() not in text.lower():
            return WrongOutcome(exercise, why, "not mentioned", f"the message does not mention {mentions!r}: {text}")
        return WrongOutcome(exercise, why, "rejected", text)
    except Exception as exc:  # noqa: BLE001 (a crash is a finding for the author)
        return WrongOutcome(exercise, why, "crashed", f"{type(exc).__name__}: {exc}")
    return WrongOutcome(exercise, why, "accepted", f"the check passed it: {result}")


def probe_cell(source: str, solution: str = "") -> ProbeReport:
    """``try_wrong_answers`` in the running IPython kernel's namespace; its value is shown for verify to read."""
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        raise RuntimeError("probe_cell runs inside a notebook kernel")
    return try_wrong_answers(source, shell.user_ns, solution)
