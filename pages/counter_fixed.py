# The counter that works: the count travels in a cookie, so the browser keeps the state
# and the server keeps none (SMLserver §2.1 lists form variables and cookies beside the
# database and the cache). Each browser counts its own visits; a count shared by every
# visitor belongs in the cache (pyweb.cache) or the database.
from pyweb.html import A, P

from _layout import page

visits = conn.cookies.get("visits", "0")
count = int(visits) + 1 if visits.isdigit() and len(visits) < 10 else 1
conn.set_cookie("visits", str(count), max_age=3600)
conn.return_(
    page(
        "Counter",
        P(f"You visited this page {count} time(s)."),
        P("Reload: the count goes up. Compare ", A("the broken version", href="/counter"), "."),
    )
)
