"""pyweb: web programming for learning, teaching and prototyping.

Layers (see docs/request-path.md): ``pyweb.protocol`` (sans-IO HTTP/1.1), ``pyweb.server``
(the trio server: schedulers, connection loop, static files, logs), ``pyweb.app`` (what
answers a request: services, page scripts, templates, files), ``pyweb.testing`` (a
real-HTTP client for tests and notebooks).

What a page needs is importable from here::

    from pyweb import qq, safe, service, forms, html, to_thread

The names are loaded on first use, so ``import pyweb`` stays cheap for the server itself.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = ["qq", "Quot", "safe", "service", "current_conn", "to_thread", "forms", "html"]

_EXPORTS = {
    "qq": ("pyweb.quot", "qq"),
    "Quot": ("pyweb.quot", "Quot"),
    "safe": ("pyweb.quot", "safe"),
    "service": ("pyweb.app.services", "service"),
    "current_conn": ("pyweb.app.conn", "current_conn"),
    "to_thread": ("pyweb.app.blocking", "to_thread"),
}

if TYPE_CHECKING:
    from pyweb import forms, html
    from pyweb.app.blocking import to_thread
    from pyweb.app.conn import current_conn
    from pyweb.app.services import service
    from pyweb.quot import Quot, qq, safe


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        module, attr = _EXPORTS[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in ("forms", "html"):
        value = importlib.import_module(f"pyweb.{name}")
    else:
        raise AttributeError(f"module 'pyweb' has no attribute {name!r}")
    globals()[name] = value
    return value
