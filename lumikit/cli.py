"""The ``lumikit`` command: a thin edge over the public API.

Each wing of the package contributes its sub-commands through a ``register(subparsers)`` function in its own
``cli`` module; every sub-command's handler takes the parsed arguments and returns the exit status.
A :class:`~lumikit.errors.LumikitError` (or a file that cannot be opened) becomes one line on stderr and exit
status 2, never a traceback.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import warnings
from typing import Sequence

from . import __version__
from .errors import LumikitError
from .text import printable

WINGS = (
    "lumikit.jobs.cli",
    "lumikit.launch.cli",
    "lumikit.smi.cli",
    "lumikit.trace.cli",
    "lumikit.rocprof.cli",
    "lumikit.logs.cli",
    "lumikit.checks.cli",
    "lumikit.checks.instructor.class_cli",
    "lumikit.record.cli",
    "lumikit.rehearse.cli",
    "lumikit.reference.cli",
    "lumikit.ladder.cli",
    "lumikit.advise.cli",
)


class Parser(argparse.ArgumentParser):
    """argparse without prefix abbreviations: ``--gpus`` must never silently become ``--gpus-per-node``.

    Sub-commands get the same class (argparse makes subparsers of the parser's own type)."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 - argparse's own signature
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only the wing named ``command`` when it is one (``trace`` imports only
    ``lumikit.trace.cli``: a quick command starts without loading every other wing's libraries)."""
    parser = Parser(prog="lumikit", description="Helpers for the LUMI AI workbook.")
    parser.add_argument("--version", action="version", version=f"lumikit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    wings = [w for w in WINGS if w == f"lumikit.{command}.cli"] or WINGS
    for name in wings:
        try:
            found = importlib.util.find_spec(name) is not None
        except ModuleNotFoundError:  # the wing's package is not there at all
            found = False
        if found:
            importlib.import_module(name).register(sub)
    return parser


def one_line(text: str) -> str:
    """A message on one line (a quoted input line may carry line breaks), its other control characters escaped
    (a file or kernel name in it may hold terminal escapes)."""
    return printable(" ".join(text.split("\n")).strip())


def _refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]) -> None:
    """Unknown options are reported by the sub-command that got them, with the nearest real option names."""
    import difflib

    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[args.command]
    known = [o for a in sub._actions for o in a.option_strings]
    hints = []
    for word in extra:
        close = difflib.get_close_matches(word.split("=", 1)[0], known, n=3, cutoff=0.7)
        if word.startswith("-") and close:
            hints.append(f"{word}: did you mean {' or '.join(close)}?")
    sub.error(f"unrecognized arguments: {' '.join(extra)}" + (" (" + "; ".join(hints) + ")" if hints else ""))


def main(argv: Sequence[str] | None = None, *, parser: argparse.ArgumentParser | None = None) -> int:
    """Run the command line; ``parser`` reuses one :func:`build_parser` made already (the fuzz tests run
    thousands of commands). Without it, only the wing of the command asked for is imported."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = parser or build_parser(argv[0] if argv else None)
    args, extra = parser.parse_known_args(argv)
    if extra:
        _refuse_unknown(parser, args, extra)
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        return _run(args)


def _show_warning(message, category, filename, lineno, file=None, line=None) -> None:  # noqa: ANN001
    """Warnings (a salvaged trace, a torn recording) as one line each, like the errors."""
    print(f"lumikit: warning: {one_line(str(message))}", file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args) or 0)
    except LumikitError as exc:
        print(f"lumikit: error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except OSError as exc:  # a file that exists but cannot be read (permissions, a folder, a broken disk)
        where = f"{printable(exc.filename)}: " if exc.filename else ""
        print(f"lumikit: error: {where}{one_line(str(exc.strerror or exc))}; check the path and its permissions",
              file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
