"""``lumikit reference add | list``: turn a real run into course data, and list what the workbook ships."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from ..text import printable
from . import REFERENCE_DIR, add_run, catalogue


def register(subparsers: Any) -> None:
    ref = subparsers.add_parser("reference", help="the real outputs shipped as course data; add a real run to them")
    sub = ref.add_subparsers(dest="reference_command", required=True, metavar="ACTION")

    a = sub.add_parser("add", help="pack a run's GPU record (and its profile/ folder and logs) into the reference "
                                   "data with a SOURCES.toml entry")
    a.add_argument("run", help="a run folder (as `lumikit run` prints it) with a GPU record (gpu/<node>.jsonl)")
    a.add_argument("--source", required=True, help="who ran it where and when, e.g. 'LUMI course 2026-05, J. Doe'")
    a.add_argument("--licence", required=True, help="the licence it is shared under, e.g. 'CC BY 4.0'")
    a.add_argument("--name", help="the entry's name (default: run-<run folder name>)")
    a.add_argument("--machine", help="where it ran (default: from the run's site, e.g. 'LUMI-G (MI250X)')")
    a.add_argument("--what", help="one sentence on what it shows (default: from the manifest)")
    a.add_argument("--reference-dir", default=str(REFERENCE_DIR),
                   help="the reference folder to add to (default: the workbook's lumikit/data/reference)")
    a.add_argument("--allow-generated", action="store_true",
                   help="also pack a record that is not from a real tool (its entry then says generated)")
    a.add_argument("--redact", action="store_true",
                   help="replace the run's secrets and token-like values found in its files with <redacted> in the "
                        "pack, instead of refusing")
    a.set_defaults(func=cmd_add)

    ls = sub.add_parser("list", help="list the reference outputs with their source line")
    ls.add_argument("--reference-dir", default=str(REFERENCE_DIR), help="the reference folder to list")
    ls.set_defaults(func=cmd_list)


def cmd_add(args: argparse.Namespace) -> int:
    ref = add_run(args.run, source=args.source, licence=args.licence, name=args.name, machine=args.machine,
                  what=args.what, folder=Path(args.reference_dir), allow_generated=args.allow_generated,
                  redact=args.redact)
    files = ref.text.splitlines()
    print(f"added [{ref.name}] to {Path(args.reference_dir) / 'SOURCES.toml'}: {len(files)} files in "
          f"{ref.file_path}")
    print(f"-- {ref.source_line}")
    if "<redacted>" in ref.note:
        print(f"note: {printable(ref.note)}")
    print(f"read it back with: lumikit.reference.load({ref.name!r}).parsed()")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    for ref in catalogue(folder=Path(args.reference_dir)):
        print(f"{ref.name:<34} {ref.kind:<12} {ref.what}")
        print(f"{'':<34} -- {ref.source_line}")
    return 0
