"""``python -m lumikit`` is the ``lumikit`` command."""
import sys

from .cli import main

sys.exit(main())
