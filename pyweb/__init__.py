"""pyweb: web programming for learning, teaching and prototyping.

Layers (see docs/request-path.md): ``pyweb.protocol`` (sans-IO HTTP/1.1), ``pyweb.server``
(the trio server: schedulers, connection loop, static files, logs), ``pyweb.app`` (what
answers a request), ``pyweb.testing`` (a real-HTTP client for tests and notebooks).
"""

__version__ = "0.1.0"
