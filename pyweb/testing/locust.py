"""Load-testing a pyweb site with locust: an ``HttpUser`` that speaks pyweb's conventions.

A locust user is a class whose ``@task`` methods play one visitor; locust runs many of
them at once and counts requests, response times and failures. :class:`PywebUser` is
locust's ``HttpUser`` with what a pyweb site expects from a browser:

* it keeps the session cookie (locust's client is a ``requests.Session``);
* it fills in CSRF tokens: the token of the last form it saw (a hidden
  ``<input name="csrf_token" value="...">``) goes with every POST, PUT, PATCH or DELETE,
  as the ``csrf_token`` form field (when the data is a dict without one) and as the
  ``X-CSRF-Token`` header;
* it follows the redirect after a POST (``303 See Other`` back to a page), as a browser does;
* it fails a request whose page is an error page: a status of 400 or more (locust's own
  rule), or a page that shows a traceback although its status says 200.

A locustfile for the guessing game::

    from locust import between, task
    from pyweb.testing.locust import PywebUser

    class Player(PywebUser):
        wait_time = between(0, 0.1)

        @task
        def guess(self):
            self.client.get("/guess")
            self.client.post("/guess", data={"n": "50", "guess": "25"})

Run it with ``pyweb loadtest DIR --locustfile players.py`` (which serves DIR and installs
locust on first use) or with locust itself against a running server. This module imports
nothing from pyweb but ``pyweb.testing.client`` (the standard library only), so that it
loads in locust's own environment.
"""

from __future__ import annotations

import re
from typing import Any

from locust import HttpUser
from locust.clients import HttpSession

from pyweb.testing.client import CSRF_FIELD, CSRF_HEADER, csrf_token_in

__all__ = ["PywebUser", "PywebSession", "CSRF_FIELD", "CSRF_HEADER", "ERROR_MARKERS"]

UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
ERROR_MARKERS = ("Traceback (most recent call last)",)
"""Text that shows a page is an error page whatever its status (a development-mode page)."""

_TITLE = re.compile(r"<title>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def error_page_problem(status: int, page: str) -> str | None:
    """Why this response is an error page, or None."""
    if status >= 400:
        title = _TITLE.search(page)
        return f"error page {status}" + (f": {title.group(1).strip()}" if title else "")
    for marker in ERROR_MARKERS:
        if marker in page:
            return f"error page with status {status}: it shows {marker!r}"
    return None


class PywebSession(HttpSession):
    """locust's HTTP session, plus CSRF tokens and error-page detection (see the module)."""

    csrf_token: str | None = None

    def request(
        self, method: str, url: str, *args: Any, catch_response: bool = False, **kwargs: Any
    ) -> Any:
        if method.upper() in UNSAFE_METHODS and self.csrf_token is not None:
            kwargs = self._with_token(self.csrf_token, kwargs)
        # Always ask locust for a response that is not reported yet, so that an error page
        # with status 200 can still be marked failed; report it at once unless the caller
        # asked to decide (catch_response=True and a with-block), as locust itself does.
        response = super().request(method, url, *args, catch_response=True, **kwargs)
        text = _text_of(response)
        token = csrf_token_in(text)
        if token is not None:
            self.csrf_token = token
        status = response.status_code or 0  # 0: no response at all (locust reports it)
        problem = error_page_problem(status, text) if status else None
        if problem is not None:
            response.__enter__()  # locust lets only a with-block mark a result
            response.failure(problem)
        if not catch_response:
            response.__exit__(None, None, None)
        return response

    @staticmethod
    def _with_token(token: str, kwargs: dict[str, Any]) -> dict[str, Any]:
        headers = dict(kwargs.get("headers") or {})
        headers.setdefault(CSRF_HEADER, token)
        kwargs = {**kwargs, "headers": headers}
        data = kwargs.get("data")
        if isinstance(data, dict) and CSRF_FIELD not in data:
            kwargs["data"] = {**data, CSRF_FIELD: token}
        return kwargs


def _text_of(response: Any) -> str:
    kind = response.headers.get("content-type", "") if response.headers else ""
    if not response.content or not ("html" in kind or "text" in kind):
        return ""
    return str(response.text)


class PywebUser(HttpUser):
    """A locust ``HttpUser`` for pyweb sites (see the module): subclass it, add ``@task``
    methods, and use ``self.client`` as locust's client."""

    abstract = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.client = PywebSession(
            base_url=self.host,
            request_event=self.environment.events.request,
            user=self,
            pool_manager=self.pool_manager,
        )
