"""Load scenarios with locust: the papers' examples as a user plays them.

Each simulated user is one of the papers' visitors:

* ``GuessingGamePlayer`` plays SMLserver's guessing game (§2.3) to the end, halving the
  interval after each "too big"/"too small", as a person who knows binary search would;
* ``GuestBookVisitor`` reads the guest book and signs it (SMLserver §4), when the site has
  one (``/guest``);
* ``CurrencyConverter`` converts a dollar amount (SMLserver §3, the cache at work), when the
  site has ``/exchange``.

A scenario whose page the site does not have is skipped, with a note, rather than counted
as failures. The users are :class:`pyweb.testing.locust.PywebUser`s: they keep the session
cookie, send the CSRF token of the last form they saw with every POST, follow the redirect
after a POST, and count an error page as a failure. Run them with::

    pyweb loadtest pages --locustfile benchmarks/locustfile.py --users 20 --time 20s

or ``make bench-locust`` (the same, locust pinned to its own CPU).

Every response is checked for what the page must say, so a fast wrong answer is a failure.
Each user keeps its cookies (locust's session) and sends back the CSRF token its form
carried, as a browser does: a POST without it is refused with 403.
"""

from __future__ import annotations

import random
import re

from locust import between, events, task

from pyweb.testing.locust import PywebUser

NUMBER = re.compile(r'name="n" value="(\d+)"')
TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
PAGES: dict[str, bool] = {}


@events.test_start.add_listener
def _which_pages_exist(environment, **_):
    """Ask once which optional example pages the site has (a 404 skips that user)."""
    import urllib.error
    import urllib.request

    for path in ("/guess", "/guest", "/exchange"):
        try:
            with urllib.request.urlopen(environment.host + path, timeout=5) as reply:
                PAGES[path] = reply.status == 200
        except (urllib.error.URLError, OSError):
            PAGES[path] = False
        if not PAGES[path]:
            print(f"locustfile: {path} is not on this site; its user is skipped")


class GuessingGamePlayer(PywebUser):
    """SMLserver §2.3: play one game to "Congratulations!", then start another."""

    wait_time = between(0, 0.1)
    weight = 3

    @task
    def play_a_game(self) -> None:
        if not PAGES.get("/guess", True):
            return
        with self.client.get("/guess", name="/guess (new game)", catch_response=True) as r:
            found = NUMBER.search(r.text)
            if not found:
                r.failure("no hidden number in the new-game form")
                return
        n = found.group(1)
        token = TOKEN.search(r.text)
        low, high = 0, 100
        for _ in range(10):  # 7 guesses always suffice for 0..100
            guess = (low + high) // 2
            with self.client.post(
                "/guess", data={"n": n, "guess": str(guess), "csrf_token": token and token[1]},
                name="/guess (a guess)",
                catch_response=True,
            ) as r:  # fmt: skip
                if "Congratulations" in r.text:
                    return
                if "too big" in r.text:
                    high = guess - 1
                elif "too small" in r.text:
                    low = guess + 1
                else:
                    r.failure(f"unexpected answer to guess {guess}")
                    return
        raise AssertionError("binary search did not finish in 10 guesses")


class GuestBookVisitor(PywebUser):
    """SMLserver §4: read the guest book; one visit in four signs it."""

    wait_time = between(0, 0.2)
    weight = 2

    @task(3)
    def read(self) -> None:
        if PAGES.get("/guest", True):
            self.client.get("/guest", name="/guest (read)")

    @task(1)
    def sign(self) -> None:
        if not PAGES.get("/guest", True):
            return
        me = random.randrange(10**6)
        token = TOKEN.search(self.client.get("/guest", name="/guest (read)").text)
        with self.client.post(
            "/guest_add",
            data={
                "name": f"Visitor {me}",
                "email": f"v{me}@example.org",
                "comment": "Hello!",
                "csrf_token": token and token[1],
            },
            name="/guest_add (sign)",
            catch_response=True,
        ) as r:  # redirected back to the book, which now shows the entry
            if f"Visitor {me}" not in r.text:
                r.failure("the new entry is not in the guest book")


class CurrencyConverter(PywebUser):
    """SMLserver §3: convert an amount; the rate comes from the cache most of the time."""

    wait_time = between(0, 0.1)
    weight = 1

    @task
    def convert(self) -> None:
        if PAGES.get("/exchange", True):
            amount = random.choice(["1", "10", "99.5", "1000"])
            self.client.get(f"/exchange?a={amount}", name="/exchange")
