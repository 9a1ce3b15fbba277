"""A stand-in for ``rocm-smi --json`` on nodes without a GPU (lumi-sim's): one generated reading in the real format.

lumi-sim's site profile names it as the command a job watch streams (``[slurm] watch_command``), so the watch path
(one long-lived ``srun --overlap`` step per node) runs end to end there. The values are generated, not recorded:
an idle LUMI-G node (8 GCDs, ~800 MHz, package power on the even GCD) in the layout of
:func:`lumikit.smi.synth.rocm_json`. It prints the file next to it (written by :func:`reading`, which a test
compares with it), so each call starts in a few milliseconds without importing the GPU views.
``python -m lumikit.testing.fake_rocm_smi [--write]``
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Sequence

READING = Path(__file__).with_name("fake_rocm_smi.json")


def reading(gcds: int = 8) -> str:
    """One generated ``rocm-smi --json`` line for an idle node with ``gcds`` GCDs."""
    from ..smi.synth import IDLE_SCLK, Gcd, rocm_json

    return rocm_json([Gcd(index=i, temp_c=40.0 + i % 3, power_w=None if i % 2 else 90.0,
                          cap_w=0.0 if i % 2 else 500.0, sclk=IDLE_SCLK, busy=0, vram_pct=0) for i in range(gcds)])


def main(argv: Sequence[str] | None = None) -> int:
    """Print the reading (rocm-smi's own options are accepted and ignored); ``--write`` regenerates the file."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--write" in args:
        READING.write_text(reading())
        return 0
    sys.stdout.write(READING.read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
