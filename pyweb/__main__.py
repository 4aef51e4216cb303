"""``python -m pyweb``: the same as the ``pyweb`` command (see :mod:`pyweb.cli`)."""

import sys

from pyweb.cli import main

sys.exit(main())
