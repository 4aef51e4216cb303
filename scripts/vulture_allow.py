"""Names vulture reports as unused that are kept on purpose, each with its reason.

Run: ``.venv/bin/python -m vulture pyweb pyweb_regions tests benchmarks pages fuzz scripts
--min-confidence 60`` (this file is under scripts/, so vulture reads it as a use). The
modules under the fast-path wall (``quot``, ``html``, ``protocol``, ``events``,
``pyweb_regions``) report nothing else.
"""

from pyweb.events.library import RPC
from pyweb.events.syncvar import MVar

# CML's mSwapEvt (Reppy's SyncVar structure): part of the public MVar interface that
# docs/events.md lists beside the paper's names; no code in the tree swaps as an event.
MVar.swap_evt  # noqa: B018

# The server side of CML's RPC as an event (to select over requests and other events);
# the paper's server loop is written with it; accept() is its blocking form.
RPC.request_evt  # noqa: B018
