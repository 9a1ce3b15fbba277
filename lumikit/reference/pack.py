"""What ``reference add`` may copy out of a run folder: regular files inside it only (a link that leads out is
named and refused, never followed), each scanned for the run's secrets and for common token patterns.

A run's secret names are those its manifest keeps as ``<redacted>`` (``environment`` and the spec's ``env``);
their values never reach the manifest, but a job may print them (``env``, a config dump, a traceback). A line
that assigns one of those names a value (``HF_TOKEN=hf_...``, ``"WANDB_API_KEY": "..."``), holds a value from the
run's secrets file while it still exists, or matches a well-known token shape (Hugging Face, GitHub, AWS, Slack,
OpenAI-style keys, JWTs, private key blocks) is a finding: the pack is refused with each file and line named, or
with ``redact`` the value is replaced by ``<redacted>`` in the packed copy (text files only). Values are never
printed.
"""
from __future__ import annotations

import gzip
import os
import re
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..errors import LumikitError
from ..files import gunzip_bounded, max_read_bytes
from ..jobs.spec import REDACTED
from ..text import printable

#: Token shapes that are secrets wherever they appear (label, pattern; the whole match is the value).
TOKEN_PATTERNS: tuple[tuple[str, re.Pattern[bytes]], ...] = tuple((label, re.compile(p)) for label, p in (
    ("a Hugging Face token", rb"\bhf_[A-Za-z0-9]{30,}"),
    ("a GitHub token", rb"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})"),
    ("an AWS access key id", rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("a Slack token", rb"\bxox[abposr]-[A-Za-z0-9-]{10,}"),
    ("an API key (sk-...)", rb"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{32,}"),
    ("a JSON web token", rb"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("a private key", rb"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----"),
))
_REPLACEMENT = REDACTED.encode()


@dataclass(frozen=True)
class Finding:
    """A secret in a file to pack: the file (relative to the run folder), its line and what it is (never the value)."""

    file: str
    line: int
    what: str

    def text(self) -> str:
        return f"{printable(self.file)}:{self.line}: {self.what}"


def secret_names(manifest: Mapping[str, Any]) -> set[str]:
    """The names whose values the manifest keeps as ``<redacted>`` (its environment and the spec's env)."""
    names = set()
    env = manifest.get("environment")
    if isinstance(env, dict):
        names |= {str(k) for k, v in env.items() if v == REDACTED}
    spec = manifest.get("spec")
    for pair in (spec.get("env") if isinstance(spec, dict) and isinstance(spec.get("env"), list) else ()):
        if isinstance(pair, (list, tuple)) and len(pair) == 2 and pair[1] == REDACTED:
            names.add(str(pair[0]))
    return {n for n in names if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,100}", n)}


def secret_values(secrets_file: Path) -> dict[str, bytes]:
    """Name -> value of a run's secrets file (``export NAME=value`` lines) while it still exists; values shorter
    than 6 characters are left out (they would match everywhere)."""
    try:
        if not stat.S_ISREG(os.lstat(secrets_file).st_mode):
            return {}
        text = secrets_file.read_text(errors="replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines()[:10_000]:
        try:
            words = shlex.split(line)
        except ValueError:
            continue
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            name, value = words[1].split("=", 1)
            if len(value) >= 6:
                out[name] = value.encode()
    return out


def _assignment(names: Iterable[str]) -> re.Pattern[bytes] | None:
    """``NAME=value``, ``NAME: value``, ``"NAME": "value"`` for the given names (the value is group ``value``)."""
    names = sorted(names)
    if not names:
        return None
    alternatives = b"|".join(re.escape(n.encode()) for n in names)
    return re.compile(rb"(?<![A-Za-z0-9_])(?P<name>" + alternatives + rb")[\"']?\s{0,10}[=:]\s{0,10}[\"']?"
                      rb"(?P<value>(?!" + re.escape(_REPLACEMENT) + rb")[^\s\"',;}]{4,})")


def scan(data: bytes, rel: str, names: set[str], values: Mapping[str, bytes],
         redact: bool) -> tuple[bytes, list[Finding]]:
    """The findings in one file's bytes, and the bytes with every finding's value replaced when ``redact``."""
    spans: list[tuple[int, int, str]] = []
    pattern = _assignment(names)
    if pattern is not None:
        spans += [(m.start("value"), m.end("value"), f"a value of {m.group('name').decode()}, a secret of the run")
                  for m in pattern.finditer(data)]
    for name, value in values.items():
        start = data.find(value)
        while start >= 0:
            spans.append((start, start + len(value), f"the value of {name} (from the run's secrets file)"))
            start = data.find(value, start + 1)
    for label, token in TOKEN_PATTERNS:
        spans += [(m.start(), m.end(), label) for m in token.finditer(data)]
    spans.sort(key=lambda span: (span[0], -span[1]))
    findings, out, last = [], [], 0
    for start, end, what in spans:
        if start < last:  # inside a value already found (a token shape in a NAME=value): one finding
            last = max(last, end)
            continue
        findings.append(Finding(rel, data.count(b"\n", 0, start) + 1, what))
        out += [data[last:start], _REPLACEMENT]
        last = end
    out.append(data[last:])
    return (b"".join(out) if redact else data), findings


def _read_inside(path: Path) -> bytes:
    """A regular file's bytes, opened without following a link (O_NOFOLLOW) and bounded in size."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise LumikitError(f"{printable(path)}: not a regular file; it cannot be packed")
        limit = max_read_bytes()
        if st.st_size > limit:  # a 3 GB file is refused from its size, never read
            raise LumikitError(f"{printable(path)}: {st.st_size >> 20} MB, larger than {limit >> 20} MB; too big to "
                               "pack as course data")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise LumikitError(f"{printable(path)}: larger than {limit >> 20} MB; too big to pack as course data")
    return data


@dataclass
class PackPlan:
    """What of a run folder would be packed (relative path -> bytes to write), and why it may not be."""

    files: dict[str, bytes]
    links_out: list[str]  # "rel -> target" of links that lead out of the run folder
    findings: list[Finding]
    redacted: list[Finding]
    left_out: list[str]  # links inside the folder, FIFOs, sockets, devices: not packed

    def refusal(self, run: Path) -> str | None:
        """The one-line refusal naming each link out and each secret found (None when the pack may go ahead)."""
        problems = [f"{printable(link)}: a link to a file outside the run folder (never followed)"
                    for link in self.links_out] + [f.text() for f in self.findings]
        if not problems:
            return None
        shown = "; ".join(problems[:12]) + (f"; and {len(problems) - 12} more" if len(problems) > 12 else "")
        fix = ("remove the links (a pack holds the run's own files only)" if self.links_out else "") + \
            (" and " if self.links_out and self.findings else "") + \
            ("delete the secrets from those files, or pass --redact to replace them with <redacted> in the pack"
             if self.findings else "")
        return f"{printable(run)}: not packed: {shown}. Fix: {fix}"


def _candidates(run: Path, patterns: Iterable[str]) -> Iterable[tuple[Path, str]]:
    """(path, path relative to the run) of what a pack takes: the top-level files matching ``patterns`` (``gpu/``
    and ``profile/`` walked without following links)."""
    for pattern in patterns:
        for p in sorted(run.glob(pattern)):
            yield p, p.relative_to(run).as_posix()
    for folder in ("gpu", "profile"):
        top = run / folder
        if top.is_symlink() or not top.is_dir():
            if top.is_symlink():
                yield top, folder
            continue
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            base = Path(dirpath)
            if folder == "gpu":  # the record: gpu/<node>.jsonl, as lumikit.record reads it
                dirnames.clear()
                filenames = [n for n in filenames if n.endswith(".jsonl")]
            for n in sorted(dirnames):
                if (base / n).is_symlink():
                    yield base / n, (base / n).relative_to(run).as_posix()
            for n in sorted(filenames):
                yield base / n, (base / n).relative_to(run).as_posix()


def plan_pack(run: Path, manifest: Mapping[str, Any], *, patterns: Iterable[str], secrets_file: Path | None,
              redact: bool) -> PackPlan:
    """Read every file a pack would take, refusing none yet: links out and secrets are collected for
    :meth:`PackPlan.refusal`."""
    root = run.resolve()
    names = secret_names(manifest)
    values = secret_values(secrets_file) if secrets_file is not None else {}
    plan = PackPlan(files={}, links_out=[], findings=[], redacted=[], left_out=[])
    for path, rel in _candidates(run, patterns):
        if path.is_symlink():
            target = path.resolve()
            if not target.is_relative_to(root):
                plan.links_out.append(f"{rel} -> {os.readlink(path)}")
            else:
                plan.left_out.append(f"{rel} (a link inside the run folder)")
            continue
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            continue
        if not stat.S_ISREG(mode):
            if not stat.S_ISDIR(mode):
                plan.left_out.append(f"{rel} (not a regular file)")
            continue
        data = _read_inside(path)
        text, compressed = data, rel.endswith(".gz")
        if compressed:
            try:
                text = gunzip_bounded(data, rel)
            except (OSError, EOFError, ValueError):
                compressed = False  # not gzip after all: scanned as it is
        cleaned, found = scan(text, rel, names, values, redact)
        binary = b"\0" in text[:8192]
        if found and redact and not binary:
            plan.redacted += found
            data = gzip.compress(cleaned, mtime=0) if compressed else cleaned
        elif found:
            plan.findings += [Finding(f.file, f.line, f"{f.what} (in binary data: --redact cannot edit it)")
                              for f in found] if binary and redact else found
        plan.files[rel] = data
    return plan
