"""Sessions: ``conn.session``, a browser's data kept on the server between its requests.

SMLserver §2.1 has no sessions in the server itself: every request starts from the same
state, and "sessions" are encoded with the cache (a ``WhileUsed`` cache keyed by something
the browser sends back). pyweb does exactly that, and adds what makes it safe:

* The data lives **server-side** in a typed cache (:mod:`pyweb.cache`), kind
  ``WhileUsed(idle)``: a session unused for ``idle`` seconds (the ``session_idle`` setting)
  is gone. With ``--cache redis://...`` the cache is Redis, so every worker and every host
  sees the same sessions.
* The browser holds only a random id, **signed** with the site's key
  (:mod:`pyweb.signing`), in a cookie that is ``HttpOnly`` (page scripts cannot read it),
  ``SameSite=Lax`` (not sent on cross-site POSTs) and ``Secure`` when the request came over
  https. A forged, changed or expired cookie is simply no session.
* The id is **replaced** on login (:meth:`Session.rotate`), so an id planted in a browser
  before login is worth nothing after it (session fixation).
* A session also has an **absolute lifetime** (the ``session_lifetime`` setting, 12 hours
  by default; OWASP ASVS 3.3.2): the cookie's signature carries the time the id was made
  (itsdangerous's ``TimestampSigner``), and an older cookie is no session, however busy
  it was. Logging in makes a new id, so the lifetime counts from the login.
* The in-memory store is **bounded** (the ``session_memory_max`` setting, 100,000
  sessions): beyond that the least recently used session is dropped, so a flood of new
  browsers costs bounded memory. (Redis bounds itself: ``maxmemory``.)

Values are JSON values (str, int, float, bool, None, lists and dicts of them): what can be
stored in the cache and read back the same in another process. A session nobody wrote to
costs nothing: no cache entry, no cookie.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, MutableMapping
from typing import Any

from pyweb import cache, signing

__all__ = [
    "Session", "SessionStore", "COOKIE_NAME", "DEFAULT_IDLE", "DEFAULT_LIFETIME", "DEFAULT_MEMORY_MAX",
]  # fmt: skip

COOKIE_NAME = "pyweb_session"
DEFAULT_IDLE = 3600.0
"""Seconds a session lasts without being used (one hour)."""
DEFAULT_LIFETIME = 12 * 3600.0
"""Seconds a session lasts at most, used or not (twelve hours)."""
DEFAULT_MEMORY_MAX = 100_000
"""Sessions the in-memory store holds at most (about 60 MB of small sessions)."""
_SALT = "pyweb.session"


_JSON = json.JSONEncoder(allow_nan=False)
"""One encoder for every session: ``json.dumps`` with an option makes a new one per call."""
_PLAIN = (str, int, bool, type(None))
"""Values that are JSON as they are (a float may be NaN, which JSON has not)."""


def _check_json(key: str, value: Any) -> None:
    if type(value) in _PLAIN:  # (the CSRF token, a user id: no dumps to check them)
        return
    try:
        _JSON.encode(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"conn.session[{key!r}]: a session holds JSON values (str, int, float, bool, "
            f"None, lists and dicts of them), not {type(value).__name__} {value!r:.60} ({exc})"
        ) from None


class Session(MutableMapping[str, Any]):
    """One browser's session data: a mutable mapping of ``str`` keys to JSON values."""

    def __init__(self, sid: str | None = None, data: dict[str, Any] | None = None) -> None:
        self.sid = sid
        """The id under which the data is stored (``None``: not stored yet)."""
        self._data: dict[str, Any] = data if data is not None else {}
        self.modified = False
        self._old_sid: str | None = None  # an id to delete when saving (rotated or cleared)

    cookie_token: str | None = None
    """A CSRF token made for a browser that has no stored session (:mod:`pyweb.app.csrf`):
    if the session is not stored after all, the token travels in its own signed cookie."""

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __setitem__(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError(f"session keys are str, got {key!r}")
        _check_json(key, value)
        self._data[key] = value
        self.modified = True

    def __delitem__(self, key: str) -> None:
        del self._data[key]
        self.modified = True

    def hold(self, key: str, value: str) -> None:
        """Set ``key`` without marking the session changed: the value is stored with the
        rest if the page changes the session, and is forgotten with the request if not
        (a first visit's CSRF token: no stored session only for it)."""
        self._data[key] = value

    # get and ``in`` ask the dict itself: the Mapping mixins' versions raise and catch a
    # KeyError for a missing key, which costs more than the lookup (csrf_token asks on
    # every page with a form).
    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        """Forget everything (log out): the stored entry is deleted and the cookie dropped;
        writing again starts a new session under a new id."""
        self._data.clear()
        self.rotate()

    def rotate(self) -> None:
        """Keep the data under a new id (on login: no session fixation)."""
        if self.sid is not None and self._old_sid is None:
            self._old_sid = self.sid
        self.sid = None
        self.modified = True

    def __repr__(self) -> str:
        return f"<Session {self._data!r}>"


class SessionStore:
    """Where one site's sessions live: the ``pyweb.sessions`` cache and the cookie."""

    def __init__(
        self,
        idle: float = DEFAULT_IDLE,
        lifetime: float = DEFAULT_LIFETIME,
        memory_max: int = DEFAULT_MEMORY_MAX,
    ) -> None:
        self.idle = float(idle)
        if not isinstance(lifetime, int | float) or not lifetime > 0:
            raise ValueError(f"session_lifetime is a positive number of seconds, got {lifetime!r}")
        self.lifetime = float(lifetime)
        # The kind is part of a cache's type, so the idle time is part of its name: a site
        # that changes the setting gets a fresh cache instead of a CacheMismatchError.
        self.cache = cache.get(
            cache.String, cache.String, f"pyweb.sessions.{self.idle:g}s", cache.WhileUsed(self.idle)
        )
        self.cache.limit_entries(memory_max)  # (the memory backend's; Redis evicts itself)

    async def load(self, cookie: str | None) -> Session:
        """The session a cookie value names; an empty one for a missing, forged or expired
        cookie (a lookup of a live entry also restarts its idle time: ``WhileUsed``)."""
        if not cookie:
            return Session()
        try:
            signed = signing.timed_signer(_SALT).unsign(cookie, max_age=int(self.lifetime))
            sid = signed.decode("ascii")
        except signing.SignatureExpired as exc:  # past its lifetime: gone from the store too
            if isinstance(exc.payload, bytes):
                await self.cache.adelete(exc.payload.decode("ascii", "replace"))
            return Session()
        except (signing.BadSignature, UnicodeDecodeError):
            return Session()
        stored = await self.cache.alookup(sid)
        if stored is None:
            return Session()
        try:
            data = json.loads(stored)
        except ValueError:
            return Session()
        return Session(sid, data if isinstance(data, dict) else {})

    async def save(self, session: Session) -> str | None:
        """Store a changed session. Returns the cookie value to send when the browser must
        learn a new id, ``""`` when its cookie must be dropped, ``None`` when nothing changes."""
        if not session.modified:
            return None
        old = session._old_sid
        if old is not None:
            await self.cache.adelete(old)
            session._old_sid = None
        if not session:
            dropped = session.sid is not None or old is not None
            if session.sid is not None:
                await self.cache.adelete(session.sid)
                session.sid = None
            return "" if dropped else None
        fresh = session.sid is None
        sid = session.sid = session.sid or secrets.token_urlsafe(24)
        await self.cache.ainsert(sid, _JSON.encode(session._data))
        session.modified = False
        return signing.timed_signer(_SALT).sign(sid).decode("ascii") if fresh else None
