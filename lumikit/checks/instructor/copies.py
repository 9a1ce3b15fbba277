"""Copies across a class: what two learners' records cannot both hold unless one copied the other.

Each learner's data comes from their own seed, and each record carries the second it was first passed. So the
same ``progress/seed`` text, the same second for a pass, the same own measurements (:mod:`.rebuilt`'s own data) or
the same free text (a conclusion of several words) in two learners' folders is flagged for both: the instructor
decides who copied. Answers to multiple-choice and short questions are not compared: the same answer is expected.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from ..evidence import Unencodable, expand
from ..progress import Result
from .rebuilt import FIXED, JUDGED, PASTED_OUTPUT, REBUILT

_OWN = "the same own measurements as"
_WORD = re.compile(r"[^\W\d_]{2,}|\d+(?:[.,]\d+)?%?")
#: The fewest passes two learners must share to the second before they are flagged.
SAME_SECOND_MIN = 3
#: Free text of at least this many words, the same in two learners' records, is flagged.
MIN_TEXT_WORDS = 8


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _own_evidence(result: Result) -> str | None:
    """The record's own inputs (not rebuilt, fixed or judged) as canonical JSON; None when there are none."""
    try:
        evidence = expand(result.passed_evidence if result.ever_passed else result.evidence)
    except Unencodable:
        return None
    skip = {*REBUILT.get(result.exercise, {}), *FIXED.get(result.exercise, {}), *JUDGED.get(result.exercise, ()),
            *PASTED_OUTPUT.get(result.exercise, ())}
    kept = {k: v for k, v in evidence.items() if k not in skip and v not in (None, "", [], {})}
    return _canonical(kept) if kept else None


def _prose(text: str) -> bool:
    """True for written sentences, not a command line or a script: most tokens are plain words."""
    tokens = text.split()
    words = [t for t in tokens if _WORD.fullmatch(t.strip(".,;:!?()\"'"))]
    return len(words) >= MIN_TEXT_WORDS and len(words) >= 0.7 * len(tokens)


def _free_texts(result: Result) -> list[str]:
    """Answers of the record written as prose of :data:`MIN_TEXT_WORDS` words or more, normalised."""
    try:
        answers = expand(result.passed_answers if result.ever_passed else result.answers)
    except Unencodable:
        return []
    texts = {" ".join(v.split()).lower() for v in answers.values() if isinstance(v, str)}
    return sorted(t for t in texts if _prose(t))


def _same_run_folders(results: Mapping[str, Sequence[Result]]) -> dict[str, list[str]]:
    """Learner -> one line per run folder whose content hash (taken when the check passed) another learner's record
    holds too: a run's files (its manifest's times, its traces) are never the same in two runs, so one is a copy.
    Empty folders are not compared."""
    holders: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for learner, rows in results.items():
        for r in rows:
            kept = r.run_folders if isinstance(r.run_folders, Mapping) else {}
            for digest in kept.values():
                if isinstance(digest, Mapping) and isinstance(digest.get("sha256"), str) and digest.get("files"):
                    holders[digest["sha256"]][learner].add(r.exercise)
    flags: dict[str, list[str]] = defaultdict(list)
    for by_learner in holders.values():
        if len(by_learner) < 2:
            continue
        for learner, exercises in sorted(by_learner.items()):
            others = ", ".join(sorted(set(by_learner) - {learner}))
            flags[learner].append(f"{', '.join(sorted(exercises))}: copy? a run folder with the same content (hash) "
                                  f"as {others}'s")
    return flags


def copy_flags(results: Mapping[str, Sequence[Result]], seed_files: Mapping[str, str] | None = None
               ) -> dict[str, list[str]]:
    """Learner -> what they share with other learners (one line each, naming the exercise and the others).

    Own measurements the same for every learner who has them (an input the notebook fixes) are not flagged, nor
    are ones most of a larger class shares; the same written answer and the same seed always are. Two learners
    passing one exercise in the same second happens in a workshop (a whole room does, at the instructor's word): a
    pair alone in the same second for :data:`SAME_SECOND_MIN` passes or more, and for three quarters of the
    passes of the one with fewer, is flagged.
    """
    groups: dict[tuple[str, str], dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    same_second: dict[tuple[str, str], list[str]] = defaultdict(list)
    for learner, rows in results.items():
        for r in rows:
            own = _own_evidence(r)
            if own is not None:
                groups[(r.exercise, _OWN)][own].add(learner)
            for text in _free_texts(r):
                groups[(r.exercise, "the same written answer as")][text].add(learner)
    for learner, text in (seed_files or {}).items():
        if text.strip():
            groups[("seed", "the same progress/seed as")][text.strip()].add(learner)
    passed_at: dict[tuple[str, str], set[str]] = defaultdict(set)
    for learner, rows in results.items():
        for r in rows:
            if r.first_passed:
                passed_at[(r.exercise, r.first_passed)].add(learner)
    for (exercise, _), learners in sorted(passed_at.items()):
        if len(learners) > 2:  # a room running the cell together at the instructor's word, not a copy
            continue
        for a in learners:
            for b in learners - {a}:
                same_second[(a, b)].append(exercise)
    flags: dict[str, list[str]] = defaultdict(list)
    for (exercise, what), values in sorted(groups.items()):
        holders = sum(len(v) for v in values.values())
        for learners in values.values():
            common = len(values) == 1 or (len(learners) > 2 and len(learners) > holders / 2)
            if len(learners) < 2 or (common and what == _OWN):
                continue
            for learner in sorted(learners):
                flags[learner].append(f"{exercise}: copy? {what} {', '.join(sorted(learners - {learner}))}")
    for learner, lines in _same_run_folders(results).items():
        flags[learner].extend(lines)
    passes = {learner: sum(1 for r in rows if r.first_passed) for learner, rows in results.items()}
    for (a, b), exercises in sorted(same_second.items()):
        if len(exercises) >= SAME_SECOND_MIN and len(exercises) >= 0.75 * min(passes[a], passes[b]):
            flags[a].append(f"copy? {len(exercises)} exercises first passed in the same second as {b} "
                            f"({', '.join(exercises[:5])})")
    return {learner: list(dict.fromkeys(lines)) for learner, lines in flags.items()}
