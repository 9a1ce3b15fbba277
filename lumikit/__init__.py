"""lumikit: the helper package of the LUMI AI workbook."""
__version__ = "0.1.0"


def mark(name: str) -> dict | None:
    """Mark a phase of a launched run (``lumikit.mark("training")``): the report card gives its energy and mean
    power. Does nothing outside a launched run. See :func:`lumikit.record.mark`."""
    from .record import mark as _mark

    return _mark(name)
