"""Checks for module 02 (containers and Python environments): the container command of a 2-node job, the bind
set RCCL needs, the python a venv runs, and the pins that keep pip off the container's packages.

Expected binds and images come from the LUMI site profile; the venv and version answers are judged against what
the notebook measured (``pyvenv.cfg`` and the base environment's package versions).
"""
from __future__ import annotations

import dataclasses
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from itertools import pairwise
from pathlib import Path

from ..jobs import Command, effective_binds, render_srun, spec
from ..site import Site, load_site
from .concepts import Choice, Option, choice_check
from .framework import CheckFailed, Passed, check, expect_in, expect_type, passed, wrong


#: The file name of a Python interpreter: python, python3, python3.11 (not python3-config, not pip).
_PYTHON_NAME = re.compile(r"python(\d+(\.\d+)*)?")
#: One constraint line: a name, an operator, a version (``torch == 2.1.0``).
_PIN = re.compile(r"^\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)\s*(?P<op>===|==|>=|<=|~=|!=|>|<)?\s*(?P<version>\S*)\s*$")


def _lumi() -> Site:
    return load_site("lumi")


def _bound(argv: Sequence[str]) -> list[str]:
    """Paths given to ``-B``/``--bind`` in an argv (comma lists split)."""
    out: list[str] = []
    for flag, value in pairwise(argv):
        if flag in ("-B", "--bind"):
            out.extend(v.split(":", 1)[0] for v in value.split(","))
    return out


def _with_last_option(argv: Sequence[str], option: str) -> tuple[str, ...]:
    """``argv`` with ``option`` added after srun's own options (for a declared wrong answer of 02.1)."""
    end = next((i for i, a in enumerate(argv) if i and not a.startswith("-")), len(argv))
    return (*argv[:end], option, *argv[end:])


def _words(argv: Sequence[str]) -> list[str]:
    """The argv with the script of an outer ``bash -c`` split into words too (a multi-node step sets MASTER_ADDR
    in a shell around ``singularity``), so the image, its binds and $WITH_CONDA are found either way."""
    out = list(argv)
    for i in range(len(argv) - 2):
        if argv[i] == "bash" and argv[i + 1] == "-c":
            out += shlex.split(argv[i + 2])
            break
    return out


def _srun_option(argv: Sequence[str], name: str) -> str | None:
    """The value srun takes for ``name`` (``--partition``): the last one among its options, before the command."""
    value = None
    for word in argv[1:]:
        if not word.startswith("-"):
            break
        if word.startswith(name + "="):
            value = word.split("=", 1)[1]
    return value


def _expect_option(exercise: str, argv: Sequence[str], name: str, wanted: str, what: str,
                   mistakes: dict[str, str], hint: str) -> None:
    """Fail unless srun takes ``wanted`` for option ``name``; ``mistakes`` names the kind of mistake a value shows
    (``{"1": "one task per node"}``, ``"*"`` for any other), never the value wanted."""
    found = _srun_option(argv, name)
    if found != wanted:
        raise CheckFailed(exercise, f"{what} of the command is not the one asked for", found=found or f"no {name}",
                          mistake=mistakes.get(found or "", mistakes.get("*")), hint=hint)


def _two_node_command(**changes: object) -> Command:
    """The 2-node container job of exercise 02.1 with ``changes``, rendered: material for its wrong answers."""
    site = _lumi()
    job = spec(["python", "train.py"], partition="standard-g", nodes=2, ntasks_per_node=8, gpus_per_node=8,
               cpus_per_task=7, time="0:30:00", container=site.default_container)
    return render_srun(job.with_(**changes), site)


@check("02.1",
       wrong("a 1-node job", command=lambda a: _two_node_command(nodes=1), mentions="two nodes"),
       wrong("no bind sets: the user file systems are missing", command=lambda a: _two_node_command(bind_sets=()),
             mentions="not bound"),
       wrong("the image by its path: nothing activates its conda environment",
             command=lambda a: _two_node_command(container=_lumi().container("pytorch").path), mentions="conda"),
       wrong("no container at all", command=lambda a: _two_node_command(container=None)),
       wrong("one task per node", command=lambda a: _two_node_command(ntasks_per_node=1), mentions="tasks per node"),
       wrong("four GCDs per node", command=lambda a: _two_node_command(gpus_per_node=4),
             mentions="GCDs per node"),
       wrong("on small-g", command=lambda a: _two_node_command(partition="small-g"), mentions="partition"),
       wrong("the spec instead of the rendered command", command=lambda a: spec(["python", "train.py"], nodes=2)),
       wrong("a second --nodes=1 after --nodes=2: srun takes the last one", mentions="two nodes",
             command=lambda a: dataclasses.replace(a.command, argv=_with_last_option(a.command.argv, "--nodes=1"))))
def check_two_node_container(command: Command | None) -> Passed:
    """Exercise 02.1: the ``srun`` command of a 2-node job in the site's default (PyTorch) container."""
    site = _lumi()
    container = site.container(site.default_container or "pytorch")
    expect_type("02.1", command, Command, what="the rendered srun command",
                hint="the check reads the command srun would run, rendered from your job spec, not the spec "
                     "itself.")
    argv = _words(command.argv)
    if next((a for a in reversed(argv) if a.startswith("--nodes=")), None) != "--nodes=2":  # srun: the last wins
        raise CheckFailed("02.1", "the command does not ask for two nodes", expected="--nodes=2",
                          found=next((a for a in argv if a.startswith("--nodes=")), "no --nodes"),
                          hint="the job spans two nodes, and srun keeps the last `--nodes` on its line.")
    _expect_option("02.1", argv, "--partition", "standard-g", "the partition",
                   {"small-g": "a partition of shared nodes, where the question asks for whole ones"},
                   "the question names the partition to use.")
    _expect_option("02.1", argv, "--ntasks-per-node", "8", "the tasks per node",
                   {"1": "one task per node: the other GCDs get no process"},
                   "one task (process) per GCD on each node.")
    _expect_option("02.1", argv, "--gpus-per-node", "8", "the GCDs per node",
                   {"*": "part of each node: the question asks for all its GCDs"}, "every GCD of each node.")
    if container.path not in argv:
        raise CheckFailed("02.1", "the command does not run the site's PyTorch container",
                          expected=container.path, found=next((a for a in argv if a.endswith(".sif")), "no .sif image"),
                          hint="the job runs in the site's PyTorch container: name it in the spec, as the lesson "
                               "does.")
    start = argv.index("singularity") if "singularity" in argv else -1
    if start < 0 or argv[start + 1] != container.launch:
        raise CheckFailed("02.1", f"no `singularity {container.launch}` in front of the image",
                          hint="lumikit writes it when the spec names a container.")
    needed = [p for name in ("user", "multinode") for p in site.binds.get(name, ())]
    missing = [p for p in needed if p not in _bound(argv)]
    if missing:
        raise CheckFailed("02.1", "some paths a 2-node job needs are not bound", expected=needed,
                          found=_bound(argv), hint="leave `bind_sets` at its default: the site profile's sets hold what a job "
                                                   "across nodes needs.")
    if container.with_conda and not any("$WITH_CONDA" in a for a in argv):
        raise CheckFailed("02.1", "nothing activates the container's conda environment",
                          hint="an `exec` image of the sif-images needs $WITH_CONDA; lumikit adds it for named "
                               "containers, so use the container's name, not its path.")
    return passed("02.1", f"{len(needed)} binds ({len(site.binds.get('multinode', ()))} of them for "
                          f"multi-node) around {Path(container.path).name}")


@check("02.2",
       wrong("the user file systems, needed on one node too", answer="user", mentions="Slingshot"),
       wrong("a set the site does not have", answer="rccl"),
       wrong("a path instead of the set's name", answer="/opt/cray"))
def check_rccl_bind_set(answer: str | None) -> Passed:
    """Exercise 02.2: the name of the bind set a job needs once it spans nodes (RCCL over Slingshot)."""
    site = _lumi()
    base = spec(["true"], container=site.default_container)
    extra = set(effective_binds(base.with_(nodes=2), site)) - set(effective_binds(base, site))
    expected = [name for name, paths in site.binds.items() if paths and set(paths) <= extra]
    expect_type("02.2", answer, str, what="the name of the bind set",
                hint="a bind set's name (a word, not a path), as the site profile names its sets.")
    answer = expect_in("02.2", answer, list(site.binds), what="the bind set",
                       hint="the site profile names its bind sets; which paths does a 2-node job bind that a 1-node "
                            "job does not?")
    expect_in("02.2", answer, expected, what="the bind set RCCL needs across nodes",
              hint="the user file systems are needed on one node too; which set holds the Cray and Slingshot "
                   "libraries?")
    return passed("02.2", f"'{answer}' binds {', '.join(site.binds[answer])}")


@check("02.3",
       wrong("pip from the home folder, not python", answer=lambda a: str(Path(a.pyvenv_cfg["home"]) / "pip"),
             mentions="python"),
       wrong("a python that does not exist", answer=lambda a: str(Path(a.pyvenv_cfg["home"]) / "python9.99"),
             mentions="does not exist"),
       wrong("the home folder itself", answer=lambda a: a.pyvenv_cfg["home"]),
       wrong("the pyvenv.cfg file", answer=lambda a: str(Path(a.pyvenv_cfg["home"]).parent / "pyvenv.cfg")),
       wrong("python3-config, a build helper beside the interpreter",
             answer=lambda a: str(Path(a.pyvenv_cfg["home"]) / "python3-config"), mentions="python3-config"))
def check_venv_python(answer: str | os.PathLike[str] | None, pyvenv_cfg: Mapping[str, str]) -> Passed:
    """Exercise 02.3: the interpreter a venv really runs (its ``bin/python`` is a link into ``home``)."""
    expect_type("02.3", answer, (str, os.PathLike), what="the path of the python the venv runs",
                hint="`venv/bin/python` is only a link: a path (a string) to where it leads.")
    home = pyvenv_cfg.get("home")
    if not home:
        raise CheckFailed("02.3", "the pyvenv.cfg passed to the check names no base interpreter",
                          hint="pass the parsed pyvenv.cfg of the venv made above.")
    path = Path(os.path.abspath(answer))
    if not _PYTHON_NAME.fullmatch(path.name):
        raise CheckFailed("02.3", f"{path.name} is not a python interpreter", found=str(answer),
                          mistake=("a helper script beside the interpreter (python3-config prints build flags; it "
                                   "runs no Python)" if path.name.startswith("python") else None),
                          hint="the interpreter itself (`python` or `python3.X`), not another tool.")
    if not path.is_file():
        raise CheckFailed("02.3", f"{path} does not exist or is not a file",
                          hint="give the path of an interpreter that exists: follow the link.")
    folder = path.parent
    allowed = {Path(home), Path(home).resolve()}
    if folder not in allowed:
        raise CheckFailed("02.3", "that python is not the one the venv runs", expected=f"a python in {home}",
                          found=str(answer), hint="`venv/bin/python` is only a link: the interpreter lives "
                                                  "where the venv's configuration says (in the container, on LUMI).")
    return passed("02.3", f"the venv runs {Path(answer).name} from {home}")


@check("02.4",
       wrong("lower bounds, which let pip upgrade torch",
             pins=lambda a: [f"{n}>={v}" for n, v in a.base_versions.items()], mentions="=="),
       wrong("names without versions", pins=lambda a: list(a.base_versions)),
       wrong("only torch pinned", pins=lambda a: [f"{n}=={v}" for n, v in a.base_versions.items()][:1]),
       wrong("one string with every pin", pins=lambda a: " ".join(f"{n}=={v}" for n, v in a.base_versions.items())),
       wrong("the right pins plus one that contradicts them",
             pins=lambda a: [*(f"{n}=={v}" for n, v in a.base_versions.items()),
                             f"{next(iter(a.base_versions))}==0.0.1"], mentions="contradicts"))
def check_pins(pins: Sequence[str] | None, base_versions: Mapping[str, str]) -> Passed:
    """Exercise 02.4: the ``name==version`` constraint lines that stop pip replacing the base's packages.

    Names are compared as pip compares them (``TORCH``, ``Torch_Vision`` and ``torch-vision`` are one package); a
    pin that contradicts another for a base package (a second version, a lower bound) is refused.
    """
    expected = {_canonical(name): version for name, version in base_versions.items()}
    expect_type("02.4", pins, (list, tuple, set), what="the list of pin lines",
                hint="one string per package.")
    parsed = []
    for line in pins:
        bounded = _bounded_pin(str(line))
        if bounded:  # name>=v,<=v holds pip to v as == does
            parsed.append(bounded)
            continue
        match = _PIN.match(str(line))
        if not match:
            raise CheckFailed("02.4", f"{str(line)!r} is not a constraint line", found=line,
                              hint="a line is a package name, an operator and a version.")
        parsed.append((_canonical(match["name"]), match["op"] or "", match["version"]))
    for name, version in expected.items():
        mine = [(op, v) for n, op, v in parsed if n == name]
        if not any(_pins(op, v, version) for op, v in mine):
            raise CheckFailed("02.4", "some packages of the base are not pinned to the version it has", found=pins,
                              hint="a lower bound (`>=`) or a bare name lets pip replace the package; only `==` "
                                   "keeps the base's version.")
        others = [f"{op}{v}" for op, v in mine if not _pins(op, v, version)]
        if others:
            raise CheckFailed("02.4", f"{name} is pinned twice, and the other line ({', '.join(others)}) contradicts "
                                      f"the base's version", found=pins,
                              mistake="a contradicting pin: pip then either fails to resolve or replaces the base's "
                                      "package", hint="one line per package, the base's version only.")
    return passed("02.4", f"pip may add packages but keeps {', '.join(sorted(f'{n}=={v}' for n, v in expected.items()))}")


def _bounded_pin(line: str) -> tuple[str, str, str] | None:
    """``name>=v,<=v`` (either order) as the pin ``(name, "==", v)`` it amounts to; None for any other line."""
    match = re.fullmatch(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(>=|<=)\s*([^\s,]+)\s*,\s*(>=|<=)\s*([^\s,]+)\s*", line)
    if not match or {match[2], match[4]} != {">=", "<="} or match[3] != match[5]:
        return None
    return _canonical(match[1]), "==", match[3]


def _pins(op: str, version: str, base: str) -> bool:
    """Does ``op version`` hold pip to exactly the base's release? ``==`` as pip reads it (PEP 440: ``==2.5.1``
    matches ``2.5.1+rocm6.2`` and ``2.5.1.0``; no wildcard), ``===`` only as the same text."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    if op == "===":
        return version == base
    if op != "==" or "*" in version:
        return False
    try:
        return SpecifierSet(f"=={version}").contains(Version(base), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return version == base


def _canonical(name: str) -> str:
    """A package name as pip compares it (PEP 503): lower case, runs of ``-``, ``_`` and ``.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- Conceptual questions ----------------------------------------------------------------------------------------

WHY_PIN = Choice("02.q1", "Why must `pip install` in the venv never replace the container's torch?", {
    "a": Option("pip cannot write inside a container.", False,
                "the venv lives outside the image and pip writes there without trouble; that is exactly how a new "
                "torch would shadow the container's one."),
    "b": Option("The container's torch is built for ROCm and LUMI's libraries; a torch from PyPI is another build.",
                True, "a wheel from PyPI is built for CUDA, for the CPU or for another ROCm; installed in the venv "
                      "it comes first on the path, so the job silently loses the GCDs or mixes libraries."),
    "c": Option("A newer torch would make the training slower.", False,
                "speed is not the point: the build must match the container's ROCm, RCCL and MIOpen."),
})
check_why_pin = choice_check(WHY_PIN)
