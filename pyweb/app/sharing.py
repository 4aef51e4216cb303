"""What a site keeps in :mod:`pyweb.cache` that every worker must see.

With ``--workers N`` each worker is a process of its own. The default cache lives in a
process's memory, so every worker has its own: a session made by one worker is unknown to
the next, its CSRF token fails there (403), a login limit counts per worker, and a push
message reaches only the clients of the worker that sent it. A site that relies on any of
them needs the shared cache (``cache = "redis://..."``). :func:`shared_state_uses` reads
the site's source, as :func:`pyweb.signing.site_needs_key` does, and names what it found,
so that ``pyweb serve --workers N`` can refuse to start instead of failing one request in
two (Marlow §1: fail at once, with the reason, rather than misbehave).
"""

from __future__ import annotations

import re

from pyweb import signing

__all__ = ["shared_state_uses", "workers_need_shared_cache"]

_PUSH = re.compile(rb"pyweb\.push\b|from\s+pyweb\s+import\s[^\n]*\bpush\b|SharedMulticast")


def shared_state_uses(root: str) -> list[str]:
    """What in the site at ``root`` keeps state in the cache: empty when nothing does."""
    uses = []
    if signing.site_needs_key(root):
        uses.append("sessions, login, CSRF-protected forms or login limits")
    if signing.source_mentions(root, _PUSH):
        uses.append("server push (pyweb.push)")
    return uses


def workers_need_shared_cache(root: str, workers: int, cache: str | None) -> str | None:
    """Why ``workers`` processes with ``cache`` would split the site's state, or None when
    they would not (one worker, a shared cache, or a site that keeps nothing there)."""
    if workers <= 1 or (cache not in (None, "memory")):
        return None
    uses = shared_state_uses(root)
    if not uses:
        return None
    return (
        f"site {root} uses {' and '.join(uses)}, kept in pyweb.cache; with {workers} "
        f"workers and the per-process memory cache each worker would have its own, and "
        f"requests would fail whenever they reach another worker (a lost session, a 403 on "
        f"a form). Set cache = \"redis://127.0.0.1:6379/0\" in pyweb.toml (or --cache "
        f"redis://...) so that every worker shares it, or per_process_cache = true to run "
        f"anyway"
    )
