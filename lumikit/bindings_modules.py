"""LUMI's Singularity bindings modules (binds /project, /scratch and the host's network libraries into a container),
with the module folder ``module use`` must add first: one place for the checks, the log doctor and the RCCL reader.

Sources (summarised in the course research notes, lumi-courses.md, parts 2, 3 and the edition table): every job
script of the 2026 LAIF material (Getting_Started_with_AI_workshop, edition 2026-06; LUMI-AI-Guide, 2026) starts
``module use /appl/local/laifs/modules; module load lumi-aif-singularity-bindings``; the 2025 editions of the
workshop used ``module use /appl/local/containers/ai-modules; module load singularity-AI-bindings``.
"""
from __future__ import annotations

#: The module of LUMI's 2026 AI material and the folder that holds it.
CURRENT = ("lumi-aif-singularity-bindings", "/appl/local/laifs/modules")
#: The module of older course editions (2025) and its folder.
OLDER = ("singularity-AI-bindings", "/appl/local/containers/ai-modules")
#: Every bindings module a learner may use, name -> folder, the current one first.
MODULES: dict[str, str] = dict([CURRENT, OLDER])


def load_commands(module: tuple[str, str] = CURRENT) -> str:
    """The two commands that make a bindings module's binds active, as one shell line."""
    name, folder = module
    return f"module use {folder}; module load {name}"


def load_advice() -> str:
    """The advice text: the current module's commands, the older editions' module named after it."""
    return f"`{load_commands()}` (older course editions: {OLDER[0]} from {OLDER[1]})"
