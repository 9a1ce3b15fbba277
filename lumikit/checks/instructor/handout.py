"""A graded course: the learners get a copy of the workbook without the answers, the instructor grades with theirs.

``lumikit handout DEST`` (or ``make handout DEST=...``) copies the workbook's tracked files to ``DEST`` leaving out
``solutions/`` (the model answers), ``docs/instructor-notes/`` (model answers to the open questions), the instructor
guide (its worked example is a model answer) and ``tests/`` (which read the solutions), and writes ``HANDOUT.md``
saying so. A link in a copied file to something the copy does not hold (``../solutions/...``) keeps its words and
loses its target, so a learner never meets a link that leads nowhere. The instructor keeps the full workbook and grades
from it: ``lumikit progress --class DIR --grade --references FULL_WORKBOOK``; grading refuses a references folder
without ``solutions/``, so a learner's copy is never taken for the instructor's.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from ...errors import LumikitError

#: Folders of the workbook that stay with the instructor.
WITHHELD = ("solutions/", "docs/instructor-notes/", "docs/instructor-guide.md", "tests/")
#: Never copied, tracked or not (the learner's own state).
_NEVER = (".git/", ".venv/", "progress/", "runs/", "test-artifacts/")


def tracked_files(root: Path) -> list[str]:
    """The workbook's files as git tracks them (relative paths), or every file below ``root`` outside git."""
    try:
        out = subprocess.run(["git", "-C", str(root), "ls-files", "-z"], capture_output=True, check=True,
                             timeout=60)
        names = [n for n in out.stdout.decode().split("\0") if n]
        if names:
            return names
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def handout(root: Path, dest: Path) -> list[str]:
    """Copy the workbook at ``root`` to ``dest`` without :data:`WITHHELD`; returns the files copied."""
    root, dest = Path(root).resolve(), Path(dest)
    if not (root / "solutions").is_dir():
        raise LumikitError(f"{root} has no solutions/: it is not the instructor's workbook (a learner's copy?). "
                           f"Fix: run this in the full workbook checkout")
    if dest.exists() and any(dest.iterdir()):
        raise LumikitError(f"{dest} is not empty. Fix: give a new folder for the learners' copy")
    if dest.resolve() == root or root in dest.resolve().parents:
        raise LumikitError(f"{dest} is inside the workbook. Fix: give a folder outside {root}")
    copied = []
    for name in tracked_files(root):
        if name.startswith(WITHHELD) or name.startswith(_NEVER):
            continue
        source = root / name
        if source.is_symlink() or not source.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        copied.append(name)
    unlinked = sum(_drop_dead_links(dest, name) for name in copied if name.endswith(_LINKING))
    commit = ""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    (dest / "HANDOUT.md").write_text(
        f"# The learners' copy of the LUMI AI workbook\n\n"
        f"Made {stamp} from the instructor's workbook{f' at commit {commit}' if commit else ''} with `lumikit "
        f"handout`. It leaves out {', '.join(WITHHELD)}: the model answers stay with the instructor.\n\n"
        f"Work in `exercises/` and `notebooks/`; every check records its result in `progress/` (keep your "
        f"`umask 002` on LUMI so your instructor can read it). `lumikit progress` shows where you stand.\n\n"
        f"The instructor grades with `lumikit progress --class DIR --grade --references FULL_WORKBOOK`, from "
        f"their own copy.\n"
        + (f"\n{unlinked} link(s) to what this copy leaves out keep their words without a target.\n" if unlinked
           else ""), encoding="utf-8")
    return copied


#: Files whose markdown links are checked in the copy (notebooks hold markdown cells, as text or as JSON).
_LINKING = (".md", ".py", ".ipynb")
_LINK = re.compile(r"\[([^\]\n]+)\]\(([^)\s]+)\)")


def _drop_dead_links(dest: Path, name: str) -> int:
    """Replace each relative link in ``dest/name`` whose target the copy lacks by its text; the count replaced."""
    path = dest / name
    text = path.read_text(encoding="utf-8", errors="surrogateescape")
    dropped = 0

    def keep_or_drop(m: re.Match[str]) -> str:
        nonlocal dropped
        target = m.group(2).split("#", 1)[0]
        if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("/"):
            return m.group(0)  # an anchor, a URL or an absolute path: not the copy's business
        if (path.parent / target).exists():
            return m.group(0)
        dropped += 1
        return m.group(1)

    new = _LINK.sub(keep_or_drop, text)
    if dropped:
        path.write_text(new, encoding="utf-8", errors="surrogateescape")
    return dropped


def references_root(path: Path) -> Path:
    """The instructor's workbook given with ``--references``: refused when it has no ``solutions/``."""
    path = Path(path)
    if not (path / "solutions").is_dir():
        raise LumikitError(f"{path} has no solutions/: grading needs the instructor's full workbook, not a "
                           f"learner's copy. Fix: give the checkout you ran `lumikit handout` in")
    return path
