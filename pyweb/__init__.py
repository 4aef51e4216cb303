"""pyweb: web programming for learning, teaching and prototyping.

Layers (see docs/request-path.md): ``pyweb.protocol`` (sans-IO HTTP/1.1), ``pyweb.server``
(the trio server: schedulers, connection loop, static files, logs), ``pyweb.app`` (what
answers a request: services, page scripts, templates, files), ``pyweb.testing`` (a
real-HTTP client for tests and notebooks).

What a page needs is importable from here::

    from pyweb import qq, safe, service, websocket, trap, forms, html, auth, csrf_field, to_thread
    from pyweb import HTTPError, CORS, WebSocketClosed

The names are loaded on first use, so ``import pyweb`` stays cheap for the server itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    "qq",
    "Quot",
    "safe",
    "service",
    "websocket",
    "WebSocketClosed",
    "trap",
    "current_conn",
    "to_thread",
    "csrf_field",
    "csrf_token",
    "static_url",
    "forms",
    "html",
    "auth",
    "signing",
    "every",
    "daily",
    "weekly",
    "mail",
    "HTTPError",
    "CORS",
]

_EXPORTS = {
    "qq": ("pyweb.quot", "qq"),
    "Quot": ("pyweb.quot", "Quot"),
    "safe": ("pyweb.quot", "safe"),
    "service": ("pyweb.app.services", "service"),
    "websocket": ("pyweb.app.websockets", "websocket"),
    "WebSocketClosed": ("pyweb.protocol.websocket", "WebSocketClosed"),
    "current_conn": ("pyweb.app.conn", "current_conn"),
    "trap": ("pyweb.app.traps", "trap"),
    "csrf_field": ("pyweb.app.csrf", "csrf_field"),
    "csrf_token": ("pyweb.app.csrf", "csrf_token"),
    "static_url": ("pyweb.app.staticurl", "static_url"),
    "to_thread": ("pyweb.app.blocking", "to_thread"),
    "every": ("pyweb.jobs.job", "every"),
    "daily": ("pyweb.jobs.job", "daily"),
    "weekly": ("pyweb.jobs.job", "weekly"),
    "HTTPError": ("pyweb.app.apierrors", "HTTPError"),
    "CORS": ("pyweb.app.cors", "CORS"),
}
_MODULES = ("forms", "html", "auth", "signing", "mail")

if TYPE_CHECKING:
    from pyweb import auth, forms, html, mail, signing
    from pyweb.app.apierrors import HTTPError
    from pyweb.app.blocking import to_thread
    from pyweb.app.conn import current_conn
    from pyweb.app.cors import CORS
    from pyweb.app.csrf import csrf_field, csrf_token
    from pyweb.app.services import service
    from pyweb.app.staticurl import static_url
    from pyweb.app.traps import trap
    from pyweb.app.websockets import websocket
    from pyweb.jobs.job import daily, every, weekly
    from pyweb.protocol.websocket import WebSocketClosed
    from pyweb.quot import Quot, qq, safe


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _MODULES:
        value = importlib.import_module(f"pyweb.{name}")
    else:
        raise AttributeError(f"module 'pyweb' has no attribute {name!r}")
    globals()[name] = value
    return value
