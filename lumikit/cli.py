"""The ``lumikit`` command: a thin edge over the public API.

Each wing of the package contributes its sub-commands through a ``register(subparsers)`` function in its own
``cli`` module; every sub-command's handler takes the parsed arguments and returns the exit status.
A :class:`~lumikit.errors.LumikitError` becomes its message on stderr and exit status 2.
"""
from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from typing import Sequence

from . import __version__
from .errors import LumikitError

WINGS = (
    "lumikit.jobs.cli",
    "lumikit.launch.cli",
    "lumikit.smi.cli",
    "lumikit.trace.cli",
    "lumikit.rocprof.cli",
    "lumikit.logs.cli",
    "lumikit.checks.cli",
)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or only the wing named ``command`` when it is one (``trace`` imports only
    ``lumikit.trace.cli``: a quick command starts without loading every other wing's libraries)."""
    parser = argparse.ArgumentParser(prog="lumikit", description="Helpers for the LUMI AI workbook.")
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


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except LumikitError as exc:
        print(f"lumikit: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
