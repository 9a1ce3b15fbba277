"""What every reader command says about a bad file: the table of messages (command, input, exit status, message).

Runs ``lumikit <reader> BADFILE`` in this process for each hand-made bad input of
:mod:`lumikit.testing.bad_inputs` (the same cases ``tests/test_bad_inputs.py`` checks) and saves the table as
``benchmarks/results/bad_inputs.md`` (temporary paths shown as ``BAD/``).

    .venv/bin/python benchmarks/bad_inputs_table.py
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from lumikit.testing.bad_inputs import bad_input_rows  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=REPO / "benchmarks" / "results")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory(prefix="lumikit-bad-") as tmp:
        rows = bad_input_rows(Path(tmp))
        lines = ["# `lumikit <reader> BADFILE`: exit status and the one line on stderr", "",
                 "| command | input | exit | message |", "|---|---|---|---|"]
        for r in rows:
            message = r.stderr.replace(tmp, "BAD").replace("|", "\\|")
            lines.append(f"| `{r.command}` | {r.input} | {r.status} | {message} |")
    text = "\n".join(lines) + "\n"
    print(text)
    args.results.mkdir(parents=True, exist_ok=True)
    (args.results / "bad_inputs.md").write_text(text)
    return 0 if all(r.status == 2 and r.stderr.count("\n") == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
