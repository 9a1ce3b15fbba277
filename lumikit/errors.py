"""One exception hierarchy for the workbook: every message names the offending input and the fix."""
from __future__ import annotations


class LumikitError(Exception):
    """Base class of every error lumikit raises on purpose."""


class SiteError(LumikitError):
    """A site profile or the user's configuration is missing or malformed."""


class SpecError(LumikitError, ValueError):
    """A job spec that the site (or Slurm) would reject.

    ``field`` is the spec field at fault, ``limit`` the rule it broke and ``fix`` what to change.
    """

    def __init__(self, field: str, problem: str, fix: str, limit: str | None = None) -> None:
        self.field = field
        self.problem = problem
        self.fix = fix
        self.limit = limit
        text = f"{field}: {problem}"
        if limit:
            text += f" (limit: {limit})"
        text += f". Fix: {fix}"
        super().__init__(text)


class ParseError(LumikitError, ValueError):
    """Text that a parser does not recognise; names the source and the line."""

    def __init__(self, message: str, *, source: str = "<text>", line_no: int | None = None,
                 line: str | None = None) -> None:
        self.message = message
        self.source = source
        self.line_no = line_no
        self.line = line
        where = source if line_no is None else f"{source}, line {line_no}"
        text = f"{where}: {message}"
        if line is not None:
            text += f": {line[:120]!r}"
        super().__init__(text)

    def at(self, source: str) -> "ParseError":
        """The same error naming ``source`` as the input (its location said once, never repeated)."""
        if self.source == source:
            return self
        return ParseError(self.message, source=source, line_no=self.line_no, line=self.line)


class LaunchError(LumikitError):
    """A job could not be submitted, followed or cancelled; carries the backend's own words."""


class SlurmUnreachable(LaunchError):
    """Slurm's controller (and its accounting) did not answer: the job's state is unknown, not gone. Waiting goes
    on with back-off; only an answer that does not know the job means it is gone."""


class TraceError(LumikitError):
    """A profiler trace that cannot be read (truncated, not a trace, ambiguous rank)."""
