# The broken counter: it keeps its count in a library module's global. It seems to work
# with one request in flight in a notebook, but pyweb restores the library's state after
# every request (SMLserver §2.1: state lives in the database, the cache, or the client),
# so the count is always 1. With --dev the page gets a banner naming the global, the error
# log gets a warning, and with --strict-regions the request fails with 500.
# The fixed twin is counter_fixed.py.
from pyweb.html import A, P

import _visits
from _layout import page

_visits.hits += 1
_visits.recent_peers.append(conn.peer)
conn.return_(
    page(
        "Counter (broken)",
        P(f"This page was visited {_visits.hits} time(s)."),
        P("Reload: the count stays at 1. See ", A("the fixed twin", href="/counter_fixed"), "."),
    )
)
