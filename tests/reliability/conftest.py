"""The reliability suite: real ``pyweb serve`` processes under attack, outages and worker
deaths, with a normal client beside them (benchmarks/attacks.py does the attacking).

Short versions run in ``make test``; ``make soak`` runs them longer and bigger
(``PYWEB_SOAK=1``: every scenario for 60 s); ``make soak`` prints the numbers.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("pyweb_attacks", ROOT / "benchmarks" / "attacks.py")
assert _spec is not None and _spec.loader is not None
attacks = importlib.util.module_from_spec(_spec)
sys.modules["pyweb_attacks"] = attacks  # (its dataclasses look their module up)
_spec.loader.exec_module(attacks)

SOAK = os.environ.get("PYWEB_SOAK") == "1"
SECONDS = 60.0 if SOAK else 2.5
"""How long each attack lasts once in place (opening the crowd takes a second or two more)."""

attacks.raise_fd_limit()  # thousands of sockets: the hard limit, for this process and its servers
