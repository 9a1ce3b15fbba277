"""Does a failure message hand over the method? The solution's names, its formula, and proximity or elimination.

A first failure names the kind of mistake; the recipe (the computation), the column and the call that hold the answer
belong to the hint levels (``hint("06.2")``, shown from the second and third attempt). :func:`recipe_leaks` finds, in a
message, the kinds :mod:`.leaks` does not (that module searches the printed *value* of the answer):

``name``
    a name the solution's code reads (a column ``mean_comm_us``, a call ``idxmax``, an attribute ``.cores``, a keyword
    ``cpu_bind``) written as code: backticked, called, quoted, or a name with ``_`` or ``.`` in it. A name the question
    itself states (its text, the stub, the check cell a learner sees) is allowed.
``recipe``
    the computation spelled out: an arithmetic formula (``15 % 8 = 7``, ``FLOPs per step / step time / peak``), or an
    aggregate joined to another quantity by an arithmetic word ("the mean of the others minus the straggler's",
    "the first step minus the median of the later steps").
``proximity``
    where the answer lies from the learner's ("the neighbouring one below", "one too many", "just too high").
``elimination``
    which options are ruled out, leaving the answer ("neither host_wait nor other", "the remaining one").
"""
from __future__ import annotations

import ast
import builtins
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

#: The kinds :func:`recipe_leaks` tells apart.
RECIPE_KINDS = ("name", "recipe", "proximity", "elimination")

#: Names too common to be a recipe: builtins, and the plain words any message may use.
_COMMON = set(dir(builtins)) | {"self", "np", "pd", "numpy", "pandas", "math", "json", "re", "os", "Path", "path",
                                "checks", "lumikit", "print", "rank", "step", "steps", "time", "name", "value", "data",
                                "job", "run", "site", "node", "nodes", "gpu", "gpus", "cores", "task", "tasks",
                                "partition", "account", "container", "env", "args", "argv", "text", "lines",
                                "index", "values", "items", "keys", "get", "append", "split", "strip", "join", "read",
                                "format", "to_string", "round", "head", "tail", "copy", "astype", "tolist", "item",
                                "iloc", "loc", "columns", "shape", "size", "dtype", "to_dict", "reset_index", "T",
                                "startswith", "endswith", "lower", "upper", "replace", "exists", "is_file", "open",
                                "read_text", "write_text", "parent", "stem", "suffix", "mkdir", "glob"}
_ARITH = (r"(?:minus|plus|divided by|multiplied by|over the (?!window|session|run|steps?\b)|over its|over one|less the"
          r"|subtract(?:ed)? from)")
_AGGREGATE = r"(?:mean|median|average|sum|total|max(?:imum)?|min(?:imum)?|first|last|count|share|ratio|peak)"
#: A formula written out: operands around an operator with spaces (``15 % 8``, ``a / b / c``); "43%", "100 % GPU%"
#: or "µs/step" are units, not formulas (a modulo needs a number after it).
_FORMULA = re.compile(r"(?:[\w)\]`'’]+\s+(?://|/|×|÷|\*)\s+[\w(`'\[]+)|(?:[\w)\]`]+\s+%\s+(?:\d+|X)\b)"
                      r"|(?:\d+\s*(?:%|//|×|÷|\*)\s*\d+\s*=\s*\d+)")
_PROXIMITY = re.compile(
    r"\bneighbou?ring (?:one|index|value|number|rank|gcd|line|count)?\s*(?:below|above)\b"
    r"|\bone (?:too many|too few|more than (?:the|it should)|less than (?:the|it should))"
    r"|\b(?:just|slightly|a (?:bit|little)) (?:too )?(?:high|low|big|small|large|above|below|over|under)\b"
    r"|\b(?:almost|nearly) (?:right|there|the answer)\b|\bclose to the (?:answer|right)\b"
, re.IGNORECASE)
_ELIMINATION = re.compile(
    r"\bneither\b[^.;]{1,60}\bnor\b|\bthe (?:only one|remaining one|one left|other one)\b|\bby elimination\b"
    r"|\bruled? out\b|\bnot (?:\w+|`[^`]+`|'[^']+') (?:and not|nor) ", re.IGNORECASE)


@dataclass(frozen=True)
class RecipeLeak:
    """One piece of method found in a message: what was found and its kind (one of :data:`RECIPE_KINDS`)."""

    form: str
    kind: str

    def __str__(self) -> str:
        return f"{self.form} ({self.kind})"


def _parse(source: str) -> ast.AST | None:
    """The solution cell as Python (IPython magics and shell lines turned into calls), or None if it is not."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
        source = TransformerManager().transform_cell(source)
    except ImportError:  # pragma: no cover (IPython ships with the workbook)
        pass
    try:
        return ast.parse(source)
    except SyntaxError:
        return None


def solution_names(source: str) -> set[str]:
    """The names a solution's code reads to get its answer: attributes and calls it uses, the keywords it sets, the
    string keys and column names it indexes with. The solution's own variables (``others``, ``mine``) are its
    invention, not the method, and are left out, as are builtins and plain words."""
    tree = _parse(source)
    if tree is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            names.add(node.func.id)
        elif isinstance(node, ast.keyword) and node.arg:
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if re.fullmatch(r"[A-Za-z_][\w.]*", text) and ("_" in text or "." in text):
                names.add(text)
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) \
                and isinstance(node.slice.value, str):
            names.add(node.slice.value)
    return {n for n in names if len(n) >= 3 and n not in _COMMON and not n.startswith("_")}


def solution_expressions(source: str) -> set[str]:
    """The computations of a solution's code as written (``stragglers["mean_comm_us"].mean() - mine``, ``task % 8``):
    each arithmetic expression, unparsed, for a message that quotes one."""
    tree = _parse(source)
    if tree is None:
        return set()
    return {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.BinOp) and len(ast.unparse(n)) >= 5}


def stated_names(text: str) -> set[str]:
    """Every name-like word in what a learner sees before answering (the question, the stub, the check cell)."""
    return set(re.findall(r"[A-Za-z_][\w]*", text)) | set(re.findall(r"[A-Za-z_][\w.]*\w", text))


def _named_as_code(name: str, message: str) -> bool:
    """Is ``name`` in ``message`` as code: anywhere for a name with ``_`` or ``.``, else backticked, quoted, called
    (``idxmax(``) or as an attribute (``.cores``); the same word in plain English ("the mean") is not."""
    word = re.escape(name)
    if "_" in name or "." in name:
        return re.search(rf"(?<![\w.]){word}(?![\w])", message) is not None
    spans = re.findall(r"`([^`]*)`", message)  # paired backticks: the code a message quotes
    return any(re.search(rf"(?<![\w-]){word}(?![\w-])", span) for span in spans) or \
        any(re.search(p, message) for p in (rf"['\"]{word}['\"]", rf"(?<![\w.]){word}\(", rf"\.{word}(?![\w])"))


def _in_question(found: str, question: str) -> bool:
    squeeze = lambda t: re.sub(r"[\s`'\"]+", "", t).lower()  # noqa: E731
    return bool(question) and squeeze(found) in squeeze(question)


def recipe_leaks(message: str, names: Iterable[str] = (), stated: Iterable[str] = (),
                 expressions: Iterable[str] = (), question: str = "") -> list[RecipeLeak]:
    """The method found in ``message``: the solution's ``names`` not in ``stated``, a formula, proximity, elimination.

    ``message`` is the text a learner reads at the first failure (the "Exercise NN.k:" prefix and their own values
    echoed back may stay: a name is searched as code, a formula needs its operator between spaced operands). A
    formula the ``question`` itself writes ("by what factor (ridge point / intensity)") is the question's, not a
    leak."""
    text = re.sub(r"^(?:Exercise|No answer yet for)\s+[\w.]+:\s*", "", message)
    text = re.sub(r"you gave .*?(?=[.;] |$)", "", text)  # the learner's own value, echoed back
    allowed = set(stated)
    found: list[RecipeLeak] = []
    for name in sorted(set(names) - allowed, key=lambda n: (-len(n), n)):
        if _named_as_code(name, text) and not any(name in f.form for f in found):
            found.append(RecipeLeak(name, "name"))
    squeezed = re.sub(r"\s+", "", text)
    for expression in sorted(expressions, key=len, reverse=True):
        if re.sub(r"\s+", "", expression) in squeezed:
            found.append(RecipeLeak(expression, "recipe"))
            break
    for pattern, kind in ((_FORMULA, "recipe"), (_PROXIMITY, "proximity"), (_ELIMINATION, "elimination")):
        match = pattern.search(text)
        if match and not _in_question(match.group(0), question):
            found.append(RecipeLeak(match.group(0).strip(), kind))
    match = re.search(rf"\b{_AGGREGATE}\b[^.;:]{{0,80}}?\b{_ARITH}\b[^.;:]{{0,60}}", text, flags=re.IGNORECASE) \
        or re.search(rf"\b{_ARITH}\b[^.;:]{{0,40}}?\bthe {_AGGREGATE}\b", text, flags=re.IGNORECASE)
    if match and not any(f.kind == "recipe" for f in found) and not _in_question(match.group(0), question):
        found.append(RecipeLeak(match.group(0).strip(), "recipe"))
    return found


# --- The first-failure texts of the checks, read from their source --------------------------------------------------

#: The keywords of ``expect_*`` and ``CheckFailed`` whose text a learner reads at the first failure.
_MESSAGE_KEYWORDS = ("problem", "what", "hint", "mistake", "off_by_one", "why")


def _text_of(node: ast.AST, constants: dict[str, ast.AST], depth: int = 0) -> list[str]:
    """The text(s) a message expression can print: a string, an f-string with each field as ``X``, a module constant,
    either side of ``a if c else b``, the parts of ``+``, the items of a tuple (``off_by_one=(more, less)``)."""
    if depth > 4:
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        return ["".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)]
    if isinstance(node, ast.Name) and node.id in constants:
        return _text_of(constants[node.id], constants, depth + 1)
    if isinstance(node, ast.IfExp):
        return _text_of(node.body, constants, depth + 1) + _text_of(node.orelse, constants, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _text_of(node.left, constants, depth + 1), _text_of(node.right, constants, depth + 1)
        return [a + b for a in left or ["X"] for b in right or ["X"]] if left or right else []
    if isinstance(node, (ast.Tuple, ast.List)):
        return [t for item in node.elts for t in _text_of(item, constants, depth + 1)]
    return []


def first_failure_texts(source: str) -> dict[str, list[str]]:
    """Exercise id -> the texts its check can show at a first failure, read from a checks module's source.

    A text is what the check (and the module's helpers it calls, and their string constants) passes to
    ``CheckFailed`` or to an ``expect_*`` helper as the problem, ``what``, ``hint``, ``mistake`` or ``off_by_one``, or
    assigns to a name called ``hint``/``mistake``/``problem``, or a helper returns; an f-string's fields read ``X``.
    A pass line
    (``passed(...)``) is not a failure and is left out."""
    tree = ast.parse(source)
    constants: dict[str, ast.AST] = {}
    functions: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            constants[node.targets[0].id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            constants[node.target.id] = node.value
        elif isinstance(node, ast.FunctionDef):
            functions[node.name] = node
    out: dict[str, list[str]] = {}
    for func in functions.values():
        exercise = _exercise_of(func)
        if exercise:
            texts = out.setdefault(exercise, [])
            for part in _reachable(func, functions):
                texts += _messages_in(part, constants)
    return out


def _exercise_of(func: ast.FunctionDef) -> str:
    for deco in func.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "id", "") == "check" and deco.args \
                and isinstance(deco.args[0], ast.Constant):
            return str(deco.args[0].value)
    return ""


def _reachable(func: ast.FunctionDef, functions: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """The check function and the module's (non-check) helpers it calls, transitively."""
    seen, todo = [func], [func]
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in functions:
                helper = functions[node.func.id]
                if helper not in seen and not _exercise_of(helper):
                    seen.append(helper)
                    todo.append(helper)
    return seen


def _messages_in(func: ast.FunctionDef, constants: dict[str, ast.AST]) -> list[str]:
    local = dict(constants)
    texts: list[str] = []
    for node in ast.walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            local[node.targets[0].id] = node.value
            if node.targets[0].id in ("hint", "mistake", "problem", "why", "what"):
                texts += _text_of(node.value, local)
        if isinstance(node, ast.Return) and node.value is not None and not _exercise_of(func):
            texts += _text_of(node.value, local)  # a helper's words (a mistake it names)
        if not isinstance(node, ast.Call):
            continue
        callee = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
        if callee == "passed" or callee == "not_checked":
            continue
        if callee == "CheckFailed":
            for arg in node.args[1:2]:
                texts += _text_of(arg, local)
        if callee == "CheckFailed" or callee.startswith("expect_") or callee.startswith("_fail"):
            for kw in node.keywords:
                if kw.arg in _MESSAGE_KEYWORDS:
                    texts += _text_of(kw.value, local)
    return [t for t in dict.fromkeys(texts) if " " in t.strip()]


# --- A solution's cells: the code of each exercise and what its question states ------------------------------------

_CELL = re.compile(r"^# %%(?P<head>.*)$", re.MULTILINE)
_QUESTION = re.compile(r"^#\s*Exercise\s+(?P<id>[\w.-]+?)\s*:", re.MULTILINE)


@dataclass(frozen=True)
class SolutionCell:
    """One exercise of a solution: the code that answers it, and what a learner sees of it before answering."""

    exercise: str
    code: str
    stated: str


#: What separates the cells of a solution handed to :func:`question_of` (``lumikit verify`` joins them with it).
CELL_BREAK = "\n# %%\n"


def question_of(source: str) -> str:
    """What a learner reads of a solution's cells (joined with :data:`CELL_BREAK`): a code cell's comment lines
    without the hints, a markdown cell's text before its ``**Answer.**`` line (the code and the answer are the
    solution's own)."""
    out = []
    for cell in source.split(CELL_BREAK):
        lines = cell.splitlines()
        answer = next((i for i, line in enumerate(lines) if line.lstrip().startswith("**Answer")), None)
        if answer is not None:
            out += lines[:answer]
        else:
            out += [line for line in lines if line.lstrip().startswith("#")
                    and not re.match(r"^\s*#\s*(Hint|Tool)\s*:", line)]
    return "\n".join(out)


def solution_cells(text: str) -> dict[str, SolutionCell]:
    """Exercise id -> its solution cell(s) in a ``solutions/NN_name.py`` (percent format). ``stated`` is what the
    exercise notebook shows around the question: the cell's comment lines but the hints, the markdown cell before it
    and the check cell after it."""
    heads = list(_CELL.finditer(text))
    cells = [(m.group("head"), text[m.end():heads[i + 1].start() if i + 1 < len(heads) else len(text)])
             for i, m in enumerate(heads)]
    out: dict[str, SolutionCell] = {}
    for i, (head, body) in enumerate(cells):
        if '"solution"' not in head:
            continue
        ids = [m.group("id") for m in _QUESTION.finditer(body)]
        if not ids:
            continue
        comments = [line for line in body.splitlines() if line.lstrip().startswith("#")
                    and not re.match(r"^\s*#\s*(Hint|Tool)\s*:", line)]
        before = cells[i - 1][1] if i and "markdown" in cells[i - 1][0] else ""
        after = next((b for h, b in cells[i + 1:i + 3] if '"check"' in h), "")
        code = "" if "markdown" in head else body
        for exercise in ids:
            old = out.get(exercise)
            out[exercise] = SolutionCell(exercise, (old.code + "\n" if old else "") + code,
                                         (old.stated + "\n" if old else "") + "\n".join([before, *comments, after]))
    return out


def leaks_for(message: str, cell: SolutionCell | None) -> list[RecipeLeak]:
    """:func:`recipe_leaks` of ``message`` against one exercise's solution (its names, expressions and question)."""
    if cell is None:
        return recipe_leaks(message)
    return recipe_leaks(message, solution_names(cell.code), stated_names(cell.stated), solution_expressions(cell.code),
                        cell.stated)


@dataclass(frozen=True)
class Finding:
    """A first-failure text of a check that hands over the method."""

    module: str
    exercise: str
    text: str
    leaks: tuple[RecipeLeak, ...]

    def __str__(self) -> str:
        return f"{self.module} {self.exercise}: {', '.join(map(str, self.leaks))}: {self.text!r}"


def sweep(checks_dir: Path, solutions_dir: Path) -> tuple[int, list[Finding]]:
    """Every first-failure text of every check in ``checks_dir`` held against its exercise's solution in
    ``solutions_dir``: how many texts were searched, and those that hand over the method."""
    cells: dict[str, SolutionCell] = {}
    for path in sorted(Path(solutions_dir).glob("[0-9][0-9]_*.py")):
        cells.update(solution_cells(path.read_text(encoding="utf-8")))
    searched, findings = 0, []
    for path in sorted(Path(checks_dir).glob("*.py")):
        for exercise, texts in first_failure_texts(path.read_text(encoding="utf-8")).items():
            for text in texts:
                searched += 1
                found = leaks_for(text, cells.get(exercise))
                if found:
                    findings.append(Finding(path.name, exercise, text, tuple(found)))
    return searched, findings
