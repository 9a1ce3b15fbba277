"""Training output -> a time series of throughput and loss.

Reads what training scripts print into ``slurm-*.out``: tqdm bars (updates joined by carriage returns, often
interleaved from several ranks), ``it/s`` or ``s/it`` rates, Hugging Face metric dicts
(``{'loss': ..., 'epoch': ...}``, ``{'eval_loss': ...}``), ``images/sec`` lines and ``Epoch N, Training Loss: x`` /
``Validation Accuracy: y%`` lines. Fragments that ranks wrote over each other are skipped, never guessed.
"""
from __future__ import annotations

import ast
import os
import re

import numpy as np
import pandas as pd

from .text import clean, read_log_text

_NUM = r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_TQDM = re.compile(
    r"(?P<pct>\d{1,3})%\|(?P<bar>[^|]*)\|\s*(?P<n>\d+)/(?P<total>\d+)\s*"
    r"\[(?P<elapsed>(?:\d+:)?\d+:\d+)<(?P<remaining>(?:\d+:)?\d+:\d+|\?)?,\s*"
    r"(?P<rate>\?|\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z_]+/s|s/[A-Za-z_]+)(?P<postfix>,[^\]]*)?\]")
#: Units of a bar that counts training iterations (tqdm's default, and the course workloads' own bar).
ITERATION_UNITS = ("it/s", "step/s", "steps/s", "batch/s", "batches/s")
_DICT = re.compile(r"\{'[A-Za-z_][\w]*':[^{}]*\}")
_THROUGHPUT = re.compile(
    rf"(?P<rate>{_NUM})\s*(?P<what>images|imgs|img|samples|tokens|examples|sequences|seqs)\s*/\s*s(?:ec(?:ond)?)?\b",
    re.IGNORECASE)
_EPOCH = re.compile(r"\b[Ee]poch\s*[:=]?\s*(?P<epoch>\d+)")
_RANK = re.compile(r"\b[Rr]ank\s*[:=]?\s*(?P<rank>\d+)")
_LOSS = re.compile(rf"(?P<label>(?:[A-Za-z]+[ _])?)[Ll]oss\s*[:=]\s*(?P<value>{_NUM})")
_ACCURACY = re.compile(rf"(?P<label>(?:[A-Za-z]+[ _])?)[Aa]cc(?:uracy)?\s*[:=]\s*(?P<value>{_NUM})\s*(?P<pct>%)?")

_BAR_PIECE = re.compile(r"/s\]|%\||\[\d+:\d\d")  # a fragment of a tqdm bar: its numbers are not trustworthy

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
    text = re.split(r"[\]|]", prefix)[-1].strip().rstrip(":").strip()
    return text if re.match(r"^[A-Za-z]", text) else None


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
    return {k: float(v) for k, v in value.items()}


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
    for line_no, line in enumerate(text.split("\n"), start=1):
        for segment in line.split("\r"):
            segment = clean(segment)
            if not segment:
                continue
            found = False
            for m in _TQDM.finditer(segment):
                found = True
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
                rows.append(_row(line_no, "progress", series=_series_name(segment[:m.start()]) or "progress",
                                 epoch=epoch, step=n, total=total, elapsed_s=secs, rate=value, unit=unit))
            for m in _DICT.finditer(segment):
                metrics = _metrics(m.group(0))
                if metrics is None:
                    continue
                found = True
                split = "eval" if any(k.startswith("eval_") for k in metrics) else "train"
                loss = metrics.get("eval_loss") if split == "eval" else metrics.get("loss", metrics.get("train_loss"))
                accuracy = metrics.get("eval_accuracy") if split == "eval" else metrics.get("accuracy")
                rows.append(_row(line_no, "metrics", series="metrics", split=split, epoch=metrics.get("epoch", epoch),
                                 step=step, elapsed_s=elapsed, loss=loss, accuracy=accuracy, metrics=metrics))
            if found or _BAR_PIECE.search(segment):
                continue
            if m := _EPOCH.search(segment):
                epoch = float(m.group("epoch"))
            if m := _THROUGHPUT.search(segment):
                rank = _RANK.search(segment)
                what = m.group("what").lower()
                what = {"imgs": "images", "img": "images", "seqs": "sequences"}.get(what, what)
                unit = f"{what}/s" + (" per GPU" if re.search(r"per\s+(?:GPU|GCD|device)", segment, re.I) else "")
                series = f"rank {rank.group('rank')}" if rank else (
                    "total" if re.search(r"total|average|overall", segment, re.I) else "throughput")
                rows.append(_row(line_no, "throughput", series=series, rank=int(rank.group("rank")) if rank else None,
                                 epoch=epoch if _EPOCH.search(segment) else None, rate=float(m.group("rate")),
                                 unit=unit))
                continue
            loss = _LOSS.search(segment)
            acc = _ACCURACY.search(segment)
            if loss or acc:
                label = (loss or acc).group("label")
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
    table.attrs.update(source=source)
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
    return summary
