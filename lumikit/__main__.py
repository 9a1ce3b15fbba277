"""``python -m lumikit`` is the ``lumikit`` command.

``-m`` puts the current folder first on ``sys.path``: it is dropped before anything else is imported, so a folder
named ``pandas/`` (or ``numpy/``) where the command is started, such as a learner's in a class folder, is never
imported in place of the library (``python -P -m lumikit`` does the same; the ``lumikit`` script never had it).
"""
import sys

from .importpath import drop_cwd

drop_cwd()

from .cli import main  # noqa: E402 - after the current folder left sys.path

sys.exit(main())
