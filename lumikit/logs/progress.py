"""Training output -> a time series of throughput and loss.

Reads what training scripts print into ``slurm-*.out``: tqdm bars (updates joined by carriage returns, often
interleaved from several ranks), ``it/s`` or ``s/it`` rates, Hugging Face metric dicts
(``{'loss': ..., 'epoch': ...}``, ``{'eval_loss': ...}``), ``images/sec`` lines and ``Epoch N, Training Loss: x`` /
``Validation Accuracy: y%`` lines. Fragments that ranks wrote over each other are skipped, never guessed.
"""
from __future__ import annotations

import ast
import math
import os
import re

import numpy as np
import pandas as pd

from ..json_output import jsonable
from .text import clean, read_log_text

_NUM = r"[-+]?\d{1,40}(?:\.\d{1,40})?(?:[eE][-+]?\d{1,4})?"
# Every pattern below is applied to whatever a job printed, so each one is linear in the length of the line:
# repeats are bounded, the loss/accuracy/throughput patterns start at a fixed word (the label or number in front
# is read from a short window before it), and a pattern is tried only when its fixed text is in the segment.
_TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|(?P<bar>[^|]{0,1000})\|\s{0,20}(?P<n>\d{1,18})/(?P<total>\d{1,18})\s{0,20}"
    r"\[(?P<elapsed>(?:\d{1,6}:)?\d{1,6}:\d{1,6})<(?P<remaining>(?:\d{1,6}:)?\d{1,6}:\d{1,6}|\?)?,\s{0,20}"
    r"(?P<rate>\?|\d{1,18}(?:\.\d{1,18})?)\s{0,20}(?P<unit>[A-Za-z_]{1,20}/s|s/[A-Za-z_]{1,20})"
    r"(?P<postfix>,[^\]]{0,1000})?\]")
#: Units of a bar that counts training iterations (tqdm's default, and the course workloads' own bar).
ITERATION_UNITS = ("it/s", "step/s", "steps/s", "batch/s", "batches/s")
_DICT = re.compile(r"\{'[A-Za-z_]\w{0,100}':[^{}]{0,4000}\}")
_THROUGHPUT_WORD = re.compile(r"(?P<what>images|imgs|img|samples|tokens|examples|sequences|seqs)\s{0,20}$",
                              re.IGNORECASE)
_PER_SECOND = re.compile(r"/\s{0,20}s(?:ec(?:ond)?)?\b", re.IGNORECASE)
_EPOCH = re.compile(r"\b[Ee]poch\s{0,20}[:=]?\s{0,20}(?P<epoch>\d{1,18})")
_RANK = re.compile(r"\b[Rr]ank\s{0,20}[:=]?\s{0,20}(?P<rank>\d{1,18})")
_LOSS = re.compile(rf"[Ll]oss\s{{0,20}}[:=]\s{{0,20}}(?P<value>{_NUM})")
_ACCURACY = re.compile(rf"[Aa]cc(?:uracy)?\s{{0,20}}[:=]\s{{0,20}}(?P<value>{_NUM})\s{{0,20}}(?P<pct>%)?")
_LOOKBACK = 64  # characters before a match where its label or number is read
_LABEL_BEFORE = re.compile(r"[A-Za-z]+[ _]$")
_NUMBER_BEFORE = re.compile(rf"{_NUM}\s*$")
_BAR_CLOCK = re.compile(r"\[\d{1,6}:\d\d")
#: Bar updates read from one line at most: tqdm without a terminal writes a whole run as one line of updates
#: joined by carriage returns; beyond this many, evenly spaced ones (and the last) are read and the rest noted.
MAX_UPDATES_PER_LINE = 2000
#: Places where a pattern's fixed word occurs that are tried per segment before giving up on that pattern.
MAX_TRIES = 10_000

#: The columns of the progress table, in order.
COLUMNS = ["log_line", "kind", "series", "split", "rank", "epoch", "step", "total", "elapsed_s", "rate", "unit",
           "loss", "accuracy", "metrics"]


def _seconds(text: str) -> float:
    """``mm:ss`` or ``h:mm:ss`` -> seconds."""
    total = 0.0
    for part in text.split(":"):
        total = total * 60 + float(part)
    return total


def _split_of(label: str) -> str:
    label = label.strip().lower().rstrip("_ ")
    if label.startswith(("val", "valid")):
        return "validation"
    if label.startswith("test"):
        return "test"
    if label.startswith("eval"):
        return "eval"
    return "train"


def _series_name(prefix: str) -> str | None:
    """The description in front of a tqdm bar ("Map (num_proc=7)"), or None for an unnamed bar."""
    text = re.split(r"[\]|]", prefix[-256:])[-1].strip().rstrip(":").strip()
    return text if text[:1].isascii() and text[:1].isalpha() else None


def _before(segment: str, start: int, pattern: re.Pattern[str]) -> str:
    """What ``pattern`` (anchored at its end) finds right before ``start``, read from a short window."""
    m = pattern.search(segment, max(0, start - _LOOKBACK), start)
    return m.group(0) if m else ""


def _find(pattern: re.Pattern[str], segment: str, word: str, back: int = 1) -> re.Match[str] | None:
    """The first match of ``pattern`` that starts ``back`` characters before an occurrence of ``word`` (found with
    ``str.find``, so the pattern is tried only where it can match; at most :data:`MAX_TRIES` places)."""
    i = segment.find(word)
    for _ in range(MAX_TRIES):
        if i < 0:
            return None
        m = pattern.match(segment, max(0, i - back))
        if m:
            return m
        i = segment.find(word, i + 1)
    return None


def _throughput(segment: str) -> tuple[float, str] | None:
    """The first ``<number> images/sec`` (samples, tokens...) of a segment: (rate, what)."""
    i = segment.find("/")
    for _ in range(MAX_TRIES):
        if i < 0:
            return None
        word = _THROUGHPUT_WORD.search(segment, max(0, i - 32), i)
        if word and _PER_SECOND.match(segment, i):
            number = _before(segment, word.start(), _NUMBER_BEFORE).strip()
            if number:
                return float(number), word.group("what").lower()
        i = segment.find("/", i + 1)
    return None


def _bar_matches(segment: str) -> tuple[list[re.Match[str]], int]:
    """The tqdm bar updates of a segment (at most :data:`MAX_UPDATES_PER_LINE`, evenly spread, the last one
    included) and how many ``%|`` a huge segment held in all (0 when every one was read)."""
    count = segment.count("%|")
    if not count:
        return [], 0
    if count <= MAX_UPDATES_PER_LINE:
        starts, i = [], segment.find("%|")
        while i >= 0:
            starts.append(i)
            i = segment.find("%|", i + 2)
    else:
        step = len(segment) // MAX_UPDATES_PER_LINE
        starts = sorted({segment.find("%|", k * step) for k in range(MAX_UPDATES_PER_LINE)} - {-1}
                        | {segment.rfind("%|")})
    found: list[re.Match[str]] = []
    for i in starts:
        j = i
        while j > i - 3 and j > 0 and segment[j - 1].isdigit():
            j -= 1
        m = _TQDM.match(segment, j) if j < i else None
        if m and (not found or m.start() >= found[-1].end()):
            found.append(m)
    return found, count if count > MAX_UPDATES_PER_LINE else 0


def _segments(line: str, line_no: int, notes: list[str]) -> list[str]:
    """The carriage-return segments of a line to read: all, or for a line of thousands of bar updates evenly
    spaced ones plus the last few (noted in ``notes``)."""
    if line.count("\r") < MAX_UPDATES_PER_LINE:
        return line.split("\r")
    parts = line.split("\r")
    step = -(-len(parts) // MAX_UPDATES_PER_LINE)
    keep = sorted(set(range(0, len(parts), step)) | set(range(max(0, len(parts) - 3), len(parts))))
    notes.append(f"line {line_no}: {len(parts):,} carriage-return updates, {len(keep):,} of them read "
                 f"(evenly spaced, the last ones included)")
    return [parts[i] for i in keep]


def _is_bar_piece(segment: str) -> bool:
    """A fragment of a tqdm bar: its numbers are not trustworthy."""
    return "/s]" in segment or "%|" in segment or ("[" in segment and _BAR_CLOCK.search(segment) is not None)


def _row(log_line: int, kind: str, **values: object) -> dict[str, object]:
    row: dict[str, object] = dict.fromkeys(COLUMNS)
    row.update(log_line=log_line, kind=kind, **values)
    return row


def _metrics(text: str) -> dict[str, float] | None:
    """A Hugging Face metrics dict: literal, all values numbers, and about training (a loss, epoch or runtime)."""
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    if not isinstance(value, dict) or not value:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value.values()):
        return None
    if not any("loss" in k or k == "epoch" or k.endswith("_runtime") for k in value):
        return None
    out: dict[str, float] = {}
    for k, v in value.items():  # a value past float's range (1e999, a 400-digit integer) is damage, not a metric
        try:
            f = float(v)
        except OverflowError:
            continue
        if math.isfinite(f):
            out[k] = f
    return out or None


def _merge_stray_names(table: pd.DataFrame) -> None:
    """Give bar updates whose description was garbled by another rank the name of their bar.

    Updates are grouped by unit and total; a description seen in fewer than 5 % of the updates of the
    group's most frequent description (seen at least 20 times) is a fragment of that one.
    """
    bars = table[table["kind"] == "progress"]
    for _, group in bars.groupby(["unit", "total"], sort=False):
        counts = group["series"].value_counts()
        main, main_count = counts.index[0], counts.iloc[0]
        for name, count in counts.items():
            if name != main and main_count >= 20 and count < 0.05 * main_count:
                table.loc[group.index[group["series"] == name], "series"] = main


def parse_progress(text: str, source: str = "<text>") -> pd.DataFrame:
    """The progress table of a training log given as text (see :func:`read_progress`)."""
    rows: list[dict[str, object]] = []
    epoch: float | None = None
    step: int | None = None           # latest step of an it/s bar, to place metrics dicts
    elapsed: float | None = None
    notes: list[str] = []
    for line_no, line in enumerate(text.split("\n"), start=1):
        for segment in _segments(line, line_no, notes):
            segment = clean(segment)
            if not segment:
                continue
            found = False
            previous_end = 0
            bars, seen = _bar_matches(segment)
            if seen:
                notes.append(f"line {line_no}: {seen:,} bar markers ('%|') in one segment; {len(bars):,} bar "
                             f"updates read at {MAX_UPDATES_PER_LINE:,} evenly spaced places (the last one included)")
            for m in bars:
                found = True
                prefix = segment[max(previous_end, m.start() - 256):m.start()]
                previous_end = m.end()
                n, total = int(m.group("n")), int(m.group("total"))
                if total and abs(int(m.group("pct")) - 100.0 * n / total) > 1.0:
                    continue  # two ranks' bars written over each other: the numbers do not belong together
                unit, rate = m.group("unit"), m.group("rate")
                value = float("nan") if rate == "?" else float(rate)
                if unit.startswith("s/"):  # slow steps are printed as seconds per step
                    unit = unit[2:] + "/s"
                    value = 1.0 / value if value else float("nan")
                secs = _seconds(m.group("elapsed"))
                if unit in ITERATION_UNITS:
                    step, elapsed = n, secs
                rows.append(_row(line_no, "progress", series=_series_name(prefix) or "progress",
                                 epoch=epoch, step=n, total=total, elapsed_s=secs, rate=value, unit=unit))
            for m in _DICT.finditer(segment) if "{'" in segment else ():
                metrics = _metrics(m.group(0))
                if metrics is None:
                    continue
                found = True
                split = "eval" if any(k.startswith("eval_") for k in metrics) else "train"
                loss = metrics.get("eval_loss") if split == "eval" else metrics.get("loss", metrics.get("train_loss"))
                accuracy = metrics.get("eval_accuracy") if split == "eval" else metrics.get("accuracy")
                rows.append(_row(line_no, "metrics", series="metrics", split=split, epoch=metrics.get("epoch", epoch),
                                 step=step, elapsed_s=elapsed, loss=loss, accuracy=accuracy, metrics=metrics))
            if found or _is_bar_piece(segment):
                continue
            has_epoch = _find(_EPOCH, segment, "poch")
            if has_epoch:
                epoch = float(has_epoch.group("epoch"))
            throughput = _throughput(segment) if "/" in segment else None
            if throughput:
                rate, what = throughput
                rank = _find(_RANK, segment, "ank")
                what = {"imgs": "images", "img": "images", "seqs": "sequences"}.get(what, what)
                unit = f"{what}/s" + (" per GPU" if re.search(r"per\s{1,20}(?:GPU|GCD|device)", segment, re.I)
                                      else "")
                series = f"rank {rank.group('rank')}" if rank else (
                    "total" if re.search(r"total|average|overall", segment, re.I) else "throughput")
                rows.append(_row(line_no, "throughput", series=series, rank=int(rank.group("rank")) if rank else None,
                                 epoch=epoch if has_epoch else None, rate=rate, unit=unit))
                continue
            loss = _find(_LOSS, segment, "oss")
            acc = _find(_ACCURACY, segment, "cc")
            if loss or acc:
                label = _before(segment, (loss or acc).start(), _LABEL_BEFORE)  # type: ignore[union-attr]
                value = None
                if acc:
                    value = float(acc.group("value"))
                    value = value / 100.0 if acc.group("pct") or value > 1.0 else value
                rows.append(_row(line_no, "epoch", series="epoch", split=_split_of(label), epoch=epoch,
                                 loss=float(loss.group("value")) if loss else None, accuracy=value))
    table = pd.DataFrame(rows, columns=COLUMNS)
    _merge_stray_names(table)
    for col in ("rank", "step", "total"):
        table[col] = table[col].astype("Int64")
    for col in ("epoch", "elapsed_s", "rate", "loss", "accuracy"):
        table[col] = table[col].astype("float64")
    table.attrs.update(source=source, notes=notes)
    return table


def read_progress(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a training log (``slurm-*.out``) into a time series of throughput and loss, one row per observation.

    ``kind`` says what a row is: ``progress`` (a tqdm update: ``series`` is its description, ``step``/``total``,
    ``elapsed_s``, ``rate`` in ``unit``; ``s/it`` is turned into ``it/s``), ``metrics`` (a Hugging Face dict:
    ``split`` train or eval, ``loss``, ``epoch``, all values in ``metrics``, placed at the latest training step),
    ``throughput`` (an ``images/sec`` style line, with ``rank`` and ``epoch`` when the line names them) or
    ``epoch`` (a loss / accuracy line; ``accuracy`` as a fraction, ``split`` train / validation / test / eval).
    """
    return parse_progress(read_log_text(path), source=str(path))


def training_series(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the main training bar: the iteration-counting series (``it/s``, ``step/s``...) with the largest
    total (ties: the one with most rows)."""
    bars = table[(table["kind"] == "progress") & table["unit"].isin(ITERATION_UNITS)]
    if bars.empty:
        return bars
    sizes = bars.groupby(["series", "total"]).size().reset_index(name="rows")
    best = sizes.sort_values(["total", "rows"], ascending=False).iloc[0]
    return bars[(bars["series"] == best["series"]) & (bars["total"] == best["total"])]


def progress_summary(table: pd.DataFrame) -> dict[str, object]:
    """What a learner asks first: how far the training got, how fast, and the last losses and accuracies."""
    train = training_series(table)
    summary: dict[str, object] = {"source": table.attrs.get("source"), "rows": int(len(table))}
    if table.attrs.get("notes"):
        summary["notes"] = list(table.attrs["notes"])
    if not train.empty:
        steady = train[train["step"] > 1]["rate"].dropna()
        summary["training"] = {
            "series": train["series"].iloc[0], "steps": int(train["step"].max()), "total": int(train["total"].max()),
            "elapsed_s": float(train["elapsed_s"].max()),
            "median_it_per_s": float(np.median(steady)) if len(steady) else None,
            "last_it_per_s": float(train["rate"].dropna().iloc[-1]) if train["rate"].notna().any() else None,
        }
    bars = table[table["kind"] == "progress"]
    summary["bars"] = [
        {"series": s, "total": int(t), "steps": int(g["step"].max()), "updates": int(len(g)),
         "unit": g["unit"].iloc[-1]}
        for (s, t), g in bars.groupby(["series", "total"], sort=False)
    ]
    for split in ("train", "eval", "validation", "test"):
        rows = table[(table["split"] == split) & table["loss"].notna()]
        if len(rows):
            summary[f"last_{split}_loss"] = float(rows["loss"].iloc[-1])
        rows = table[(table["split"] == split) & table["accuracy"].notna()]
        if len(rows):
            summary[f"last_{split}_accuracy"] = float(rows["accuracy"].iloc[-1])
    tp = table[table["kind"] == "throughput"]
    if len(tp):
        summary["throughput"] = [{"series": r["series"], "epoch": None if pd.isna(r["epoch"]) else float(r["epoch"]),
                                  "rate": float(r["rate"]), "unit": r["unit"]} for _, r in tp.iterrows()]
    return jsonable(summary)  # a loss of 1e999 in the log is no number in the summary: None, never inf or NaN
