"""Job states as lumikit reports them (Slurm's names), and how Slurm's many spellings map onto them."""
from __future__ import annotations

STATES = ("PENDING", "RUNNING", "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY")
FINAL = frozenset(STATES[2:])

_ALIASES = {
    "CONFIGURING": "PENDING", "REQUEUED": "PENDING", "RESV_DEL_HOLD": "PENDING", "SUSPENDED": "RUNNING",
    "COMPLETING": "RUNNING", "STAGE_OUT": "RUNNING", "SIGNALING": "RUNNING", "RESIZING": "RUNNING",
    "BOOT_FAIL": "NODE_FAIL", "DEADLINE": "TIMEOUT", "PREEMPTED": "CANCELLED", "REVOKED": "CANCELLED",
    "SPECIAL_EXIT": "FAILED", "OOM": "OUT_OF_MEMORY",
}


def normalise(state: str) -> str:
    """``CANCELLED by 0`` -> ``CANCELLED``, ``COMPLETING`` -> ``RUNNING``; unknown words pass through upper-cased."""
    word = state.strip().split()[0].rstrip("+").upper() if state.strip() else "PENDING"
    return _ALIASES.get(word, word)


def is_final(state: str) -> bool:
    """Whether a job in this state (any Slurm spelling) has ended."""
    return normalise(state) in FINAL
