"""The users ``pyweb loadtest`` runs when the site has no locustfile of its own.

A visitor opens ``/`` and then follows, at random, links to the same site that the page it
is on shows (a few clicks, then back to ``/``), as someone looking around would. Links to
other sites, ``mailto:`` and fragments are not followed, nor are links marked as
deliberate errors (``<a href="/svc/mul?n=abc" data-expect-status="400">``: the example site
shows what a bad form variable looks like), which would count as failures.
"""

from __future__ import annotations

import random
import re
from urllib.parse import urljoin, urlsplit

from locust import between, task

from pyweb.testing.locust import PywebUser

ANCHOR = re.compile(r"<a\b[^>]*>", re.IGNORECASE)
HREF = re.compile(r"""\bhref\s*=\s*["']([^"'#]+)""", re.IGNORECASE)
DELIBERATE = re.compile(r"\bdata-expect-status\s*=", re.IGNORECASE)


def links(html: str) -> list[str]:
    """The links of ``html`` a visitor may follow: same site, not a deliberate error."""
    found = []
    for anchor in ANCHOR.findall(html):
        href = HREF.search(anchor)
        if href and not DELIBERATE.search(anchor) and _same_site(href.group(1)):
            found.append(href.group(1))
    return found


class Visitor(PywebUser):
    wait_time = between(0, 0.2)

    @task
    def look_around(self) -> None:
        path = "/"
        for _ in range(4):
            response = self.client.get(path)
            found = links(response.text or "")
            if not found:
                return
            target = urlsplit(urljoin(path, random.choice(found)))
            path = target.path + ("?" + target.query if target.query else "")


def _same_site(link: str) -> bool:
    parts = urlsplit(link)
    return not parts.scheme and not parts.netloc
