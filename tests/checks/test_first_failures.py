"""The first failed check a learner meets (modules 01 and 02, the stub's None answers) names the kind of mistake
and the idea, never the tool the exercise asks them to find: that is the third rung of the help (attempt 3 shows
the "tool" line of exercises/hints.json), so a code name from that line must not be in the first message."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from lumikit.checks import CheckFailed, m01, m02
from lumikit.jobs import spec

HINTS = json.loads((Path(__file__).resolve().parents[2] / "exercises" / "hints.json").read_text())
REJECTED = spec(["python", "train.py"], partition="small-g", ntasks_per_node=8, gpus_per_node=8, cpus_per_task=8)
FULL = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
            cpus_per_task=7, cpu_bind="auto")
#: Words of the tool lines that name no tool (the exercise's own variables, placeholders).
NOT_TOOLS = {"job", "site", "NAME", "FOLDER", "IMAGE", "base_versions"}

#: Each exercise's check called as the stub leaves it (every answer None), the first failure a learner meets.
STUBS = {
    "01.1": lambda: m01.check_full_node_job(None, None),
    "01.2": lambda: m01.check_gcd_neighbours(None, None),
    "01.3": lambda: m01.check_rejected_job(None, None, REJECTED),
    "01.4": lambda: m01.check_rank_rule(None, None),
    "02.1": lambda: m02.check_two_node_container(None),
    "02.2": lambda: m02.check_rccl_bind_set(None),
    "02.3": lambda: m02.check_venv_python(None, {"home": "/usr/bin"}),
    "02.4": lambda: m02.check_pins(None, {"torch": "2.6.0", "numpy": "1.26.4"}),
}


def tool_names(exercise: str) -> set[str]:
    """The code names in an exercise's "tool" hint: each identifier inside its backticks (``render_srun``,
    ``site.node.gcd``, ``cpu_bind``), each dotted name also as its last part."""
    names = set()
    for code in re.findall(r"`([^`]+)`", HINTS[exercise]["tool"]):
        for name in re.findall(r"[A-Za-z_][\w.]*[\w]", code):
            if name not in NOT_TOOLS and len(name) > 2:
                names |= {name, name.rsplit(".", 1)[-1]}
    return names - NOT_TOOLS


def test_every_stub_of_modules_01_and_02_is_covered() -> None:
    assert sorted(STUBS) == sorted(e for e in HINTS if e[:2] in ("01", "02") and "tool" in HINTS[e]
                                   and e.split(".")[1].isdigit())


def test_the_tool_names_are_found_in_the_hint_lines() -> None:
    assert {"render_srun", "spec"} <= tool_names("01.1") and "gcd" in tool_names("01.2")
    assert {"rank_table", "problems", "effective_binds", "resolve"} <= (tool_names("01.4") | tool_names("01.3")
                                                                        | tool_names("02.2") | tool_names("02.3"))


@pytest.mark.parametrize("exercise", sorted(STUBS))
def test_the_first_failure_points_to_the_idea_not_the_tool(exercise: str) -> None:
    with pytest.raises(CheckFailed, match=f"No answer yet for {re.escape(exercise)}") as err:
        STUBS[exercise]()
    message = str(err.value)
    assert " Hint: " in message  # it still helps: the kind of answer and the idea
    named = {name for name in tool_names(exercise) if names_in_code(name, message)}
    assert not named, f"{exercise}'s first failure names {sorted(named)}: {message}"


def names_in_code(name: str, message: str) -> bool:
    """Whether ``message`` names ``name`` as code: anywhere for a name with ``_`` or ``.`` (``render_srun``), else
    only in backticks, called (``spec(``) or as an attribute (``.cores``): "your job spec" is plain English."""
    word = re.escape(name)
    if "_" in name or "." in name:
        return re.search(rf"(?<![\w.]){word}(?!\w)", message) is not None
    return any(re.search(pattern, message) for pattern in (rf"`[^`]*(?<![\w-]){word}(?![\w-])[^`]*`",
                                                           rf"(?<![\w.]){word}\(", rf"\.{word}(?!\w)"))
