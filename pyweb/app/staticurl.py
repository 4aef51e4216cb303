"""Content-hashed addresses of static files: ``static_url("style.css")`` gives
``/style.css?v=3f2a9c1e0b7d``, which the static files answer with ``Cache-Control:
public, max-age=31536000, immutable`` (:data:`pyweb.app.static.IMMUTABLE`).

A browser keeps such a file for a year without asking again; when the file changes, its
hash changes, so the pages that link it (built with ``static_url``) name a new address and
the browser fetches the new file. An address with an old hash still serves the file (as it
is now), but with the site's ordinary ``Cache-Control``: it is never promised immutable.

Usable from a page, a service, a quotation (``qq(f'<link rel="stylesheet"
href="{static_url("style.css")}">')``) and a template (``{{ static_url("style.css") }}``).
The hash is the file's content's (SHA-256), computed once per version of the file, so the
same file has the same address on every worker and every machine.
"""

from __future__ import annotations

from urllib.parse import quote

from . import static
from .conn import Conn, current_conn

__all__ = ["static_url"]


def static_url(path: str, conn: Conn | None = None) -> str:
    """The content-hashed address of the static file at ``path`` (``"style.css"`` or
    ``"/css/style.css"``: from the site's root). ValueError naming ``path`` when no static
    file is served there (a missing, hidden or non-content file); LookupError outside a
    request of a served site."""
    if not isinstance(path, str) or not path or "?" in path or "#" in path:
        raise ValueError(
            f"static_url() takes the path of a file, such as 'style.css', got {path!r}"
        )
    conn = conn or current_conn()
    files = static.serving(conn.site_root or "")
    if files is None:
        raise LookupError(f"static_url({path!r}): no site serves {conn.site_root!r}")
    address = quote(path if path.startswith("/") else "/" + path, safe="/")
    return f"{address}?v={files.url_version(address)}"
