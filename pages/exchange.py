# SMLserver §3: the currency exchange service. The dollar rate is read from a foreign page
# with fetch_url (Ns.fetchUrl) and a regular expression, and kept in a typed cache with
# TimeOut(300): the foreign site is asked at most once every five minutes, and the rate is
# never older than that. If the site is down, the page says so.
#
# The foreign page is PYWEB_RATE_URL, by default this site's own /rate (pages/rate.py)
# on 127.0.0.1.
import math
import os
import re

from pyweb import csrf_field, qq
from pyweb.cache import Option, Real, String, TimeOut, get, memoize
from pyweb.fetch import fetch_url
from pyweb.forms import FormError, get_real

from _layout import page

c = get(String, Option(Real), "currency", TimeOut(300))

token = csrf_field()  # the hidden field every POST form carries (CSRF protection)
form = qq("""<form method="post" action="/exchange">{token}
  <b>Dollar amount</b><br><input type="text" name="a">
  <input type="submit" value="Value in Danish Kroner">
</form>""")


async def fetch_rate(url):
    pg = await fetch_url(url, timeout=5)
    if pg is None:
        return None
    m = re.search(r"USDDKK\D+([0-9]+)\.([0-9]+)", pg)
    return float(f"{m[1]}.{m[2]}") if m else None


fetch = memoize(c, fetch_rate)


def own_rate_url():
    # This server's own /rate over the loopback interface, on the port the server listens
    # on. Nothing is taken from the Host header: a client chooses it, and a URL built from
    # it would make the server fetch from wherever the client says (Redis on 6379, say).
    return f"http://127.0.0.1:{conn.server_port}/rate"


url = os.environ.get("PYWEB_RATE_URL") or own_rate_url()

LARGEST = 1_000_000_000


def refused(typed):
    """Why an amount is refused, in words (None: it is fine)."""
    try:
        get_real("a", min=0, max=LARGEST)
        return None
    except FormError:
        pass
    try:
        value = float(typed)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or 0 <= value <= LARGEST:  # (" 1_000" is a float to Python)
        return qq("<p class='message'>{typed} is not a number: type an amount like 100 or 12.50.</p>")
    if value < 0:
        return qq("<p class='message'>{typed} is negative: type an amount of 0 or more.</p>")
    return qq("<p class='message'>{typed} is too large: type at most {LARGEST} dollars.</p>")


typed = conn.form.get("a", "")[:40]
why = refused(typed) if typed else None
if not typed.strip():
    body = form
elif why is not None:
    body = why + form
else:
    a = get_real("a", min=0, max=LARGEST)
    rate = await fetch(url)  # noqa: F704 - a page may await at top level
    if rate is None:
        body = qq("<p>The service is currently not available</p>")
    else:
        dkk = f"{a * rate:.2f}"
        body = qq("<p>{a} USD gives {dkk} DKK.</p>") + form
conn.return_(page("Currency Exchange Service", body))
