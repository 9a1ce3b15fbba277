"""``advise``: a ranked prescription from everything a run measured (rules in :mod:`lumikit.advise.rules`)."""
from __future__ import annotations

from .findings import Advice, Finding
from .prescribe import advise

__all__ = ["Advice", "Finding", "advise"]
