"""The optimisation ladder: one job on one GCD (or this CPU) runs the course workload rung by rung, each rung adding
one speed knob (bf16, channels-last, a fused optimizer, torch.compile, TunableOp) to the rungs before it, and
writes ``ladder.json``: samples/s with its spread, speed-up over the first rung, MFU against the site's peak for
the rung's precision, peak memory, and a short profiler trace per rung.

``lumikit ladder`` launches it (:mod:`.cli`); :mod:`.run` is what runs inside the job; :mod:`.table` reads
``ladder.json`` back and prints the table.
"""
from .rungs import DEFAULT_RUNGS, RUNGS, cumulative_options, parse_rungs
from .table import LADDER_FILE, ladder_table, read_ladder, shipped_ladder

__all__ = ["DEFAULT_RUNGS", "LADDER_FILE", "RUNGS", "cumulative_options", "ladder_table", "parse_rungs", "read_ladder",
           "shipped_ladder"]
