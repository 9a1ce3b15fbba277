"""``advise``: a ranked prescription from everything a run measured (see :mod:`lumikit.advise.rules`)."""
from __future__ import annotations

from .rules import Advice, Finding, advise

__all__ = ["Advice", "Finding", "advise"]
