"""Checks for module 02 (containers and Python environments): the container command of a 2-node job, the bind
set RCCL needs, the python a venv runs, and the pins that keep pip off the container's packages.

Expected binds and images come from the LUMI site profile; the venv and version answers are judged against what
the notebook measured (``pyvenv.cfg`` and the base environment's package versions).
"""
from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path

from ..jobs import Command, effective_binds, spec
from ..site import Site, load_site
from .framework import CheckFailed, Passed, expect_in, expect_type, passed


def _lumi() -> Site:
    return load_site("lumi")


def _bound(argv: Sequence[str]) -> list[str]:
    """Paths given to ``-B``/``--bind`` in an argv (comma lists split)."""
    out: list[str] = []
    for flag, value in pairwise(argv):
        if flag in ("-B", "--bind"):
            out.extend(v.split(":", 1)[0] for v in value.split(","))
    return out


def check_two_node_container(command: Command | None) -> Passed:
    """Exercise 02.1: the ``srun`` command of a 2-node job in the site's default (PyTorch) container."""
    site = _lumi()
    container = site.container(site.default_container or "pytorch")
    expect_type("02.1", command, Command, what="the rendered srun command",
                hint="render your job spec with `render_srun(job, site)`.")
    argv = list(command.argv)
    if "--nodes=2" not in argv:
        raise CheckFailed("02.1", "the command does not ask for two nodes", expected="--nodes=2",
                          found=next((a for a in argv if a.startswith("--nodes=")), "no --nodes"),
                          hint="the job spans two nodes: `nodes=2` in the spec.")
    if container.path not in argv:
        raise CheckFailed("02.1", "the command does not run the site's PyTorch container",
                          expected=container.path, found=next((a for a in argv if a.endswith(".sif")), "no .sif image"),
                          hint=f"add `container={container.name!r}` to the spec.")
    start = argv.index("singularity") if "singularity" in argv else -1
    if start < 0 or argv[start + 1] != container.launch:
        raise CheckFailed("02.1", f"no `singularity {container.launch}` in front of the image",
                          hint="lumikit writes it when the spec names a container.")
    needed = [p for name in ("user", "multinode") for p in site.binds.get(name, ())]
    missing = [p for p in needed if p not in _bound(argv)]
    if missing:
        raise CheckFailed("02.1", "some paths a 2-node job needs are not bound", expected=needed,
                          found=_bound(argv), hint="leave `bind_sets` at its default, or name both "
                                                   "'user' and 'multinode'.")
    if container.with_conda and not any("$WITH_CONDA" in a for a in argv):
        raise CheckFailed("02.1", "nothing activates the container's conda environment",
                          hint="an `exec` image of the sif-images needs $WITH_CONDA; lumikit adds it for named "
                               "containers, so use the container's name, not its path.")
    return passed("02.1", f"{len(needed)} binds ({len(site.binds.get('multinode', ()))} of them for "
                          f"multi-node) around {Path(container.path).name}")


def check_rccl_bind_set(answer: str | None) -> Passed:
    """Exercise 02.2: the name of the bind set a job needs once it spans nodes (RCCL over Slingshot)."""
    site = _lumi()
    base = spec(["true"], container=site.default_container)
    extra = set(effective_binds(base.with_(nodes=2), site)) - set(effective_binds(base, site))
    expected = [name for name, paths in site.binds.items() if paths and set(paths) <= extra]
    expect_type("02.2", answer, str, what="the name of the bind set",
                hint=f"one of the names in `site.binds`: {', '.join(site.binds)}.")
    expect_in("02.2", answer, list(site.binds), what="the bind set",
              hint="compare `effective_binds` of a 1-node and a 2-node spec.")
    expect_in("02.2", answer, expected, what="the bind set RCCL needs across nodes",
              hint="the user file systems are needed on one node too; which set holds the Cray and Slingshot "
                   "libraries?")
    return passed("02.2", f"'{answer}' binds {', '.join(site.binds[answer])}")


def check_venv_python(answer: str | os.PathLike[str] | None, pyvenv_cfg: Mapping[str, str]) -> Passed:
    """Exercise 02.3: the interpreter a venv really runs (its ``bin/python`` is a link into ``home``)."""
    expect_type("02.3", answer, (str, os.PathLike), what="the path of the python the venv runs",
                hint="follow the link: `Path(venv / 'bin' / 'python').resolve()`, or read `home` in pyvenv.cfg.")
    home = pyvenv_cfg.get("home")
    if not home:
        raise CheckFailed("02.3", "the pyvenv.cfg passed to the check has no `home` line",
                          hint="pass the parsed pyvenv.cfg of the venv made above.")
    folder = Path(os.path.abspath(answer)).parent
    allowed = {Path(home), Path(home).resolve()}
    if folder not in allowed:
        raise CheckFailed("02.3", "that python is not the one the venv runs", expected=f"a python in {home}",
                          found=str(answer), hint="`venv/bin/python` is only a link: the interpreter lives where "
                                                  "pyvenv.cfg's `home` says (in the container, on LUMI).")
    return passed("02.3", f"the venv runs {Path(answer).name} from {home}")


def check_pins(pins: Sequence[str] | None, base_versions: Mapping[str, str]) -> Passed:
    """Exercise 02.4: the ``name==version`` constraint lines that stop pip replacing the base's packages."""
    expected = sorted(f"{name}=={version}" for name, version in base_versions.items())
    expect_type("02.4", pins, (list, tuple, set), what="the list of pin lines",
                hint="one string per package, e.g. ['torch==X.Y.Z', ...].")
    found = sorted(str(p).strip().replace(" ", "") for p in pins)
    missing = [e for e in expected if e not in found]
    if missing:
        raise CheckFailed("02.4", "some packages of the base are not pinned to the version it has",
                          expected=expected, found=found,
                          hint="use `==` and the versions measured in the base (`importlib.metadata.version`).")
    return passed("02.4", f"pip may add packages but keeps {', '.join(expected)}")
