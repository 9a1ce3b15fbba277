"""``python -m lumikit.record sample ...``: the job-side recorder (see :mod:`lumikit.record.recorder`)."""
import sys

from .recorder import main

sys.exit(main())
