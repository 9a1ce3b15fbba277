"""Whatever a learner types (spaces, quotes, $, backslashes, line breaks) survives rendering unchanged."""
from __future__ import annotations

import shlex

from hypothesis import given, settings
from hypothesis import strategies as st

from lumikit.jobs import render_salloc, render_srun, spec

# Text without NUL (argv cannot hold it) and without "{" (reserved for the {rank}-style placeholders).
text = st.text(st.characters(blacklist_characters="\x00{", blacklist_categories=("Cs",)), min_size=1, max_size=40)
names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,15}", fullmatch=True)


@settings(max_examples=300, deadline=None)
@given(name=text, workdir=text, args=st.lists(text, min_size=1, max_size=5),
       env=st.dictionaries(names, text, max_size=4))
def test_srun_text_splits_back_into_the_intended_argv(name, workdir, args, env):
    job = spec(["python", *args], name=name, workdir="/w/" + workdir, env=env, partition="small-g",
               gpus_per_node=1)
    cmd = render_srun(job, "lumi")
    assert shlex.split(cmd.text()) == list(cmd.argv)
    assert f"--job-name={name}" in cmd.argv
    script = cmd.argv[-1]
    words = shlex.split(script)
    # the rank script holds the literal values: cd into the workdir, one export per variable, then the command
    assert words[:2] == ["cd", "/w/" + workdir]
    for k, v in env.items():
        assert f"{k}={v}" in words
    assert words[-(len(args) + 2):] == ["exec", "python", *args]


@settings(max_examples=200, deadline=None)
@given(name=text, account=st.from_regex(r"project_[0-9]{9}", fullmatch=True))
def test_salloc_text_round_trips(name, account):
    cmd = render_salloc(spec(["true"], name=name, account=account, partition="small-g"), "lumi")
    assert shlex.split(cmd.text()) == list(cmd.argv)
