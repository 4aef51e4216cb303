# The "foreign site" of SMLserver §3's currency exchange service: a page that shows today's
# dollar rate in Danish kroner, as the Yahoo finance page of 2002 did, for pages/exchange.py
# to fetch and read with a regular expression.
#
# The rate lives in a file (PYWEB_RATE_FILE, default: pyweb-rate.txt in the temp directory)
# so every worker process shows the same one. In development mode (pyweb serve --dev, and in
# the notebooks) /rate?set=7.1 changes it, and /rate?set=down makes the site "go down"
# (503), so a tutorial can watch the exchange page's cache at work.
import os
import tempfile

from pyweb.html import TABLE, TD, TR, P

from _layout import page

DEFAULT = "6.4321"
path = os.environ.get("PYWEB_RATE_FILE") or os.path.join(tempfile.gettempdir(), "pyweb-rate.txt")

new = conn.form.get("set")
if new is not None and not conn.dev:
    conn.return_(page("Forbidden", P("?set= works only in development mode.")), status=403)
else:
    if new is not None:
        if new != "down":
            new = f"{float(new):.4f}"  # a bad number is a 500 naming it, in dev mode
        with open(path, "w") as f:
            f.write(new)
    try:
        with open(path) as f:
            rate = f.read().strip() or DEFAULT
    except FileNotFoundError:
        rate = DEFAULT
    if rate == "down":
        conn.return_(page("Rates", P("Down for maintenance.")), status=503)
    else:
        conn.return_(page("Rates", TABLE(TR(TD("USDDKK"), TD(rate)))))
