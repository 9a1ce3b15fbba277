"""What is installed in this Python: the versions a run folder records and a constraints file pins."""
from __future__ import annotations

from importlib import metadata
from typing import Iterable


def installed_versions(names: Iterable[str]) -> dict[str, str]:
    """The installed version of each named distribution, in the order given; absent ones are left out."""
    found = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return found
