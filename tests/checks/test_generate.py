"""The exercise generator: stubs from solution cells, everything else unchanged, idempotent, drift detected."""
from __future__ import annotations

import json
from pathlib import Path

import jupytext
import nbformat
import pytest

from lumikit.checks.instructor import generate as gen
from lumikit.errors import ParseError


def test_assigned_names_are_module_scope_bindings_in_order() -> None:
    source = "\n".join([
        "import numpy as np",
        "a, (b, *c) = 1, (2, 3)",
        "for i in range(2):",
        "    total: int = i",
        "with open('f') as handle:",
        "    pass",
        "def helper(x):",
        "    inner = x",
        "class Box: ...",
        "squares = [k * k for k in range(3)]",
        "if (n := 3) > 2:",
        "    big = True",
        "counter += 1",
        "obj.attr = 1",
        "table['x'] = 2",
        "files = !ls",
    ])
    assert gen.assigned_names(source) == ["a", "b", "c", "i", "total", "handle", "helper", "Box", "squares",
                                          "n", "big", "counter", "files"]


def test_assigned_names_names_the_cell_on_a_syntax_error() -> None:
    with pytest.raises(ParseError, match=r"solutions/01_x.py, cell 3, line 1: the solution cell is not valid"):
        gen.assigned_names("gcds = = 8", where="solutions/01_x.py, cell 3")


SOLUTION_CELL = """\
# Exercise 01.2: Which CPU mask goes with GCD 0?
# The mask is derived from the node's topology.
# Hint: `site.node.masks()` lists them in GCD order.

site = load_site("lumi")
masks = site.node.masks()
mask0 = masks[0]"""


def test_stub_keeps_the_question_assigns_none_and_leaves_the_hint_for_later() -> None:
    stub, exercise_id = gen.stub_source(SOLUTION_CELL, where="cell", prefix="01")
    assert exercise_id == "01.2"
    assert stub == """\
# Exercise 01.2: Which CPU mask goes with GCD 0?
# The mask is derived from the node's topology.
site = None
masks = None
mask0 = None
# Your answer replaces each None; then delete the `raise` line below.
# Stuck? from lumikit.checks import hint; hint("01.2")
raise NotImplementedError("Exercise 01.2: write your answer above, then delete this line")"""


def test_the_hint_and_the_tool_of_a_cell_continue_over_comment_lines() -> None:
    source = ("# Exercise 01.T1: which mask?\n# Hint: think of the\n# reserved core.\n# Tool: `site.node.masks()`.\n"
              "x = 1")
    assert gen.cell_hints(source) == {"idea": "think of the reserved core.", "tool": "`site.node.masks()`."}
    stub, _ = gen.stub_source(source, where="cell", prefix="01")
    assert "reserved core" not in stub and "masks()" not in stub and stub.startswith("# Exercise 01.T1: which mask?\nx")


def test_stub_quotes_its_message_safely() -> None:
    stub, _ = gen.stub_source('# Exercise 02.1: bind it\n# Hint: use "--bind" and \\ paths\nx = 1',
                              where="cell", prefix="02")
    raise_line = stub.splitlines()[-1]
    namespace: dict = {}
    with pytest.raises(NotImplementedError) as caught:
        exec(compile(stub, "stub", "exec"), namespace)
    assert str(caught.value) == "Exercise 02.1: write your answer above, then delete this line"
    assert 'hint("02.1")' in stub
    assert "--bind" not in stub
    assert raise_line.startswith("raise NotImplementedError(")
    assert namespace["x"] is None


@pytest.mark.parametrize("source, message", [
    ("# Hint: count\nx = 1", r"must open with a comment line `# Exercise NN.k: <the question>`"),
    ("# Exercise 01.1: count\nx = 1", r"exercise 01.1 has no `# Hint: ...` line"),
    ("# Exercise 02.1: count\n# Hint: h\nx = 1", r"exercise id '02.1' does not belong to this notebook. Fix: "
                                                  r"number it 01.1, 01.2"),
])
def test_stub_rejects_a_solution_cell_without_id_or_hint(source: str, message: str) -> None:
    with pytest.raises(ParseError, match=message):
        gen.stub_source(source, where="solutions/01_x.py, cell 2", prefix="01")


def test_generated_exercise_replaces_only_the_solution_cells(good_workbook: Path) -> None:
    solution = jupytext.read(good_workbook / "solutions" / "00_sample.py")
    exercise = jupytext.read(good_workbook / "exercises" / "00_sample.py")
    assert len(exercise.cells) == len(solution.cells) == 9
    for sol, ex in zip(solution.cells, exercise.cells):
        if "solution" in sol.metadata.get("tags", []):
            assert ex.metadata["tags"] == ["exercise"]
            if sol.cell_type == "markdown":
                assert ex.source == ("**Question.** Why is the first step slower than the others, and which steps "
                                     "should you compare?\n\n" + gen.ANSWER_PLACEHOLDER)
                assert "warm-up" not in ex.source
            else:
                assert ex.source.splitlines()[-1].startswith('raise NotImplementedError("Exercise 00.')
        else:
            assert (ex.cell_type, ex.source, ex.metadata) == (sol.cell_type, sol.source, sol.metadata)
    stub = exercise.cells[2].source
    assert "describes the node" not in stub
    hints = json.loads((good_workbook / "exercises" / "hints.json").read_text())
    assert hints["00.1"]["idea"] == "`load_site(\"lumi\").node` describes the node; each MI250X package holds two GCDs."
    assert "node = None\ngcds = None\n" in stub
    assert "len(node.gcds)" not in stub


def test_generator_writes_paired_notebooks_without_outputs(good_workbook: Path) -> None:
    for folder in ("solutions", "exercises"):
        notebook = nbformat.read(good_workbook / folder / "00_sample.ipynb", as_version=4)
        nbformat.validate(notebook)
        assert notebook.metadata["kernelspec"]["name"] == "python3"
        assert notebook.metadata["jupytext"]["formats"] == "ipynb,py:percent"
        code = [c for c in notebook.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code)
        text = jupytext.read(good_workbook / folder / "00_sample.py")
        assert [c.source for c in notebook.cells] == [c.source for c in text.cells]


def test_generation_is_idempotent(good_workbook: Path) -> None:
    files = sorted((good_workbook / "exercises").iterdir()) + [good_workbook / "solutions" / "00_sample.ipynb"]
    before = {p: p.read_bytes() for p in files}
    assert gen.generate(good_workbook / "solutions", good_workbook / "exercises") == []
    assert {p: p.read_bytes() for p in files} == before


def test_cell_ids_are_stable_and_unique(tmp_path: Path) -> None:
    notebook = jupytext.reads("# %%\nx = 1\n\n# %%\nx = 1\n\n# %%\ny = 2\n", fmt="py:percent")
    ids = [c["id"] for c in json.loads(gen.ipynb_text(notebook))["cells"]]
    assert len(set(ids)) == 3
    assert ids == [c["id"] for c in json.loads(gen.ipynb_text(notebook))["cells"]]


def test_a_yaml_header_is_kept_as_the_solution_wrote_it(tmp_path: Path) -> None:
    header = ("# ---\n# jupyter:\n#   jupytext:\n#     text_representation:\n#       extension: .py\n"
              "#       format_name: percent\n#       format_version: '1.3'\n#       jupytext_version: 1.14.0\n"
              "#   kernelspec:\n#     display_name: Python 3\n#     language: python\n#     name: python3\n# ---\n")
    source = header + "\n# %% tags=[\"solution\"]\n# Exercise 05.1: x\n# Hint: y\nx = 1\n"
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "05_header.py").write_text(source)
    gen.generate(tmp_path / "solutions", tmp_path / "exercises")
    written = (tmp_path / "exercises" / "05_header.py").read_text()
    assert written.startswith(header)
    assert written.endswith('x = None\n# Your answer replaces each None; then delete the `raise` line below.\n'
                            '# Stuck? from lumikit.checks import hint; hint("05.1")\n'
                            'raise NotImplementedError("Exercise 05.1: write your answer above, then delete this '
                            'line")\n')


def test_check_mode_names_drifted_missing_and_orphan_files(good_workbook: Path, capsys) -> None:
    solutions, exercises = good_workbook / "solutions", good_workbook / "exercises"
    assert gen.main(["--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 0
    assert "exercises up to date: 1 solution(s)" in capsys.readouterr().out

    edited = solutions / "00_sample.py"
    edited.write_text(edited.read_text().replace("# # 00 A sample module", "# # 00 A sample module, edited"))
    (exercises / "00_sample.ipynb").unlink()
    (exercises / "07_removed.py").write_text("# %%\n")
    assert gen.main(["--check", "--solutions", str(solutions), "--exercises", str(exercises)]) == 1
    out = capsys.readouterr().out
    assert f"{solutions / '00_sample.ipynb'}: differs from what {solutions} generates" in out
    assert f"{exercises / '00_sample.py'}: differs from what {solutions} generates" in out
    assert f"{exercises / '00_sample.ipynb'}: missing" in out
    assert f"{exercises / '07_removed.py'}: has no solution" in out
    assert "Fix: run `make exercises`" in out
    assert not (exercises / "00_sample.ipynb").exists()  # --check writes nothing


def test_main_reports_a_missing_folder_as_a_clear_error(tmp_path: Path, capsys) -> None:
    assert gen.main(["--solutions", str(tmp_path / "nope"), "--exercises", str(tmp_path / "ex")]) == 2
    assert "nope: no such folder of solutions. Fix:" in capsys.readouterr().err


def test_an_empty_solutions_folder_generates_nothing(tmp_path: Path, capsys) -> None:
    (tmp_path / "solutions").mkdir()
    assert gen.main(["--solutions", str(tmp_path / "solutions"), "--exercises", str(tmp_path / "ex")]) == 0
    assert "nothing to generate" in capsys.readouterr().out
    assert not (tmp_path / "ex").exists()


def test_sample_solutions_in_the_test_data_have_no_generated_files_committed(sample_data: Path) -> None:
    # Each test generates the samples into a temporary folder; nothing generated lives beside the sources.
    assert not list(sample_data.glob("*/exercises")) and not list(sample_data.glob("*/solutions/*.ipynb"))


@pytest.mark.parametrize("source", ["**Answer.** no question above", "Why? but no answer line",
                                    "A remark.\n**Answer.** x"])
def test_a_discussion_cell_without_its_question_or_answer_line_is_refused(source: str) -> None:
    with pytest.raises(ParseError, match="must open with the question"):
        gen.question_source(source, where="solutions/01_x.py, cell 9")
