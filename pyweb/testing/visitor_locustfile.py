"""The users ``pyweb loadtest`` runs when the site has no locustfile of its own.

A visitor opens ``/`` and then follows, at random, links to the same site that the page it
is on shows (a few clicks, then back to ``/``), as someone looking around would. Links to
other sites, ``mailto:`` and fragments are not followed.
"""

from __future__ import annotations

import random
import re
from urllib.parse import urljoin, urlsplit

from locust import between, task

from pyweb.testing.locust import PywebUser

HREF = re.compile(r"""<a\b[^>]*\bhref\s*=\s*["']([^"'#]+)""", re.IGNORECASE)


class Visitor(PywebUser):
    wait_time = between(0, 0.2)

    @task
    def look_around(self) -> None:
        path = "/"
        for _ in range(4):
            response = self.client.get(path)
            links = [link for link in HREF.findall(response.text or "") if _same_site(link)]
            if not links:
                return
            target = urlsplit(urljoin(path, random.choice(links)))
            path = target.path + ("?" + target.query if target.query else "")


def _same_site(link: str) -> bool:
    parts = urlsplit(link)
    return not parts.scheme and not parts.netloc
