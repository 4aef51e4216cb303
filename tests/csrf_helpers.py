"""Getting a CSRF token in a test the way a browser does: from the page with the form.

POSTs need the session's CSRF token (pyweb.app.csrf); a test client first GETs a page whose
form carries the hidden ``csrf_token`` field (which also gives it the session cookie), then
sends the token back with its POST.
"""

from __future__ import annotations

import re
from typing import Any

_FIELD = re.compile(r'<input type="hidden" name="csrf_token" value="([^"]+)">')


def token_from(html: str) -> str:
    """The token in a page's hidden ``csrf_token`` field (AssertionError if none)."""
    found = _FIELD.search(html)
    assert found, f"no csrf_token field in the page: {html[:300]!r}"
    return found.group(1)


def csrf_token(client: Any, page: str) -> str:
    """GET ``page`` with ``client`` (keeping its cookies) and return its form's token."""
    response = client.get(page)
    assert response.status == 200, (page, response.status, response.text[:300])
    return token_from(response.text)


def post_form(client: Any, path: str, data: dict[str, Any], *, page: str | None = None) -> Any:
    """POST ``data`` to ``path`` with the token of the form on ``page`` (default: ``path``)."""
    token = csrf_token(client, page or path)
    return client.post(path, {**data, "csrf_token": token})


TOKEN_PAGE = {
    "csrf.py": (
        "from pyweb import csrf_token\nconn.return_(csrf_token(), content_type='text/plain')\n"
    )
}
"""A page a test site can include: it answers the session's token as text (what a page's
JavaScript would read to send the ``X-CSRF-Token`` header)."""


def token_header(client: Any, page: str = "/csrf") -> dict[str, str]:
    """``{"X-CSRF-Token": token}`` for ``client``'s session, read from :data:`TOKEN_PAGE`."""
    response = client.get(page)
    assert response.status == 200, (page, response.status, response.text[:300])
    return {"X-CSRF-Token": response.text}


def raw_session(host: str, port: int, page: str = "/chat", timeout: float = 10) -> tuple[str, str]:
    """For clients on raw sockets (subprocess servers, the cluster): GET ``page`` and return
    ``(cookie, token)``: the ``Cookie`` header value to send back (the session) and the
    form's CSRF token. With a Redis cache the session, hence the token, is valid in every
    worker and on every host."""
    import socket

    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall(f"GET {page} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    cookies = [
        line.split(":", 1)[1].strip().split(";", 1)[0]
        for line in head.decode("latin-1").split("\r\n")[1:]
        if line.lower().startswith("set-cookie:")
    ]
    return "; ".join(cookies), token_from(body.decode("utf-8", "replace"))
