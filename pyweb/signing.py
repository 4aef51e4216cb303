"""Signed values and the site's secret key: data a client may hold but cannot forge.

SMLserver's guessing game (§2.1) keeps its hidden number in a hidden form field, where any
user can change it. Signing fixes that without server state: the value travels with a
*signature* computed from it and the site's secret key, and a value whose signature does
not match is refused. Sessions (the cookie holds a signed id) and CSRF protection rest on
the same key. The cryptography is itsdangerous's (HMAC-SHA1 over a key derived per
``salt``); nothing here is written by hand::

    from pyweb import signing

    token = signing.sign(42, salt="guess")           # a URL-safe string
    signing.unsign(token, salt="guess")               # 42
    signing.unsign(token, salt="guess", max_age=600)  # 42, if signed in the last 10 minutes
    signing.unsign(token[:-1] + "x", salt="guess")    # raises signing.BadSignature

``salt`` keeps uses apart: a token signed for the guessing game is refused as a session id.

**The key.** ``secret_key`` in ``pyweb.toml`` (or ``pyweb serve --secret-key``), else the
environment variable ``PYWEB_SECRET_KEY``. Several keys, newest first (a list in
``pyweb.toml``, comma-separated in the variable), rotate the key: the first signs, every
one verifies. In development mode a site without a key gets a random one, created once in
its ``data/secret_key`` (``data/`` is never served). In production a site that needs a key
and has none refuses to start, saying how to set one (:func:`use_site_key`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from collections.abc import Sequence
from typing import Any

from itsdangerous import (
    BadSignature,
    SignatureExpired,
    Signer,
    TimestampSigner,
    URLSafeTimedSerializer,
)
from itsdangerous.encoding import base64_decode, bytes_to_int
from itsdangerous.signer import HMACAlgorithm

__all__ = [
    "sign",
    "unsign",
    "BadSignature",
    "SignatureExpired",
    "MissingSecretKey",
    "configure",
    "keys",
    "signer",
    "timed_signer",
    "use_site_key",
    "site_needs_key",
    "KEY_HELP",
]

KEY_HELP = (
    'set one with secret_key = "..." in the site\'s pyweb.toml or the environment variable '
    "PYWEB_SECRET_KEY (make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))')"
)
_MIN_LENGTH = 16

_keys: list[str] | None = None  # newest first; None: not configured (read the environment)
_env_keys: tuple[str, list[str]] | None = None  # PYWEB_SECRET_KEY's value and its keys


class MissingSecretKey(RuntimeError):
    """Signing was asked for, and the site has no secret key."""


def _as_list(value: str | Sequence[str]) -> list[str]:
    found = [value] if isinstance(value, str) else list(value)
    parts = [p.strip() for item in found for p in str(item).split(",")]
    parts = [p for p in parts if p]
    if not parts:
        raise ValueError("a secret key cannot be empty")
    for part in parts:
        if len(part) < _MIN_LENGTH:
            raise ValueError(
                f"a secret key has at least {_MIN_LENGTH} characters (got one of {len(part)}); "
                + KEY_HELP.split("(", 1)[1].rstrip(")")
            )
    return parts


def configure(key: str | Sequence[str] | None) -> None:
    """Use ``key`` (or several, newest first) from now on; ``None`` forgets the configured
    key, so the environment variable is read again."""
    global _keys
    _keys = None if key is None else _as_list(key)


def keys() -> list[str]:
    """The keys in use, newest first; :class:`MissingSecretKey` when there are none."""
    global _env_keys
    if _keys is not None:
        return _keys
    env = os.environ.get("PYWEB_SECRET_KEY")
    if env:
        # Parsed once per value of the variable, not at each signature (a session cookie is
        # checked on every request that sends one): about 12k instructions a call.
        if _env_keys is None or _env_keys[0] != env:
            _env_keys = (env, _as_list(env))
        return _env_keys[1]
    raise MissingSecretKey(f"this site has no secret key: {KEY_HELP}")


_serializers: dict[tuple[tuple[str, ...], str], URLSafeTimedSerializer] = {}


def _serializer(salt: str) -> URLSafeTimedSerializer:
    if not isinstance(salt, str) or not salt:
        raise ValueError(f"salt names what a token is for, a non-empty str; got {salt!r}")
    current = tuple(keys())
    found = _serializers.get((current, salt))
    if found is None:
        if len(_serializers) > 64:  # keys changed many times (tests): start again
            _serializers.clear()
        # itsdangerous wants the oldest key first and signs with the last one. Kept per
        # (keys, salt): building one derives its keys, work a request need not repeat.
        found = URLSafeTimedSerializer(list(reversed(current)), salt=salt)
        _serializers[(current, salt)] = found
    return found


class _KeyedHMAC(HMACAlgorithm):
    """itsdangerous's HMAC, computed from a copy of an ``hmac.HMAC`` object keyed once per
    key: the same bytes, without keying OpenSSL's HMAC (finding SHA-1, hashing the padded
    key) again for every signature and check.

    Keying is the dearer half when the server has just run other code (a database query),
    so the memory OpenSSL reads is no longer in the processor's caches: a signature after
    a query measured 8.7 µs with ``hmac.digest`` and 4.8 µs as a copy (docs/performance.md,
    "Signing: an HMAC keyed once per key")."""

    def __init__(self, digest_method: Any) -> None:
        super().__init__(digest_method)
        self._keyed: dict[bytes, hmac.HMAC] = {}  # derived key -> HMAC keyed with it

    def get_signature(self, key: bytes, value: bytes) -> bytes:
        keyed = self._keyed.get(key)
        if keyed is None:
            keyed = self._keyed[key] = hmac.new(key, digestmod=self.digest_method)
        mac = keyed.copy()  # (copy() is thread-safe: a page in a worker thread may sign)
        mac.update(value)
        return mac.digest()


class _KeyedSigner(Signer):
    """itsdangerous's Signer with its derived keys made once (it derives one, an HMAC of
    the key and the salt, for every signature and every check, the same each time) and an
    HMAC keyed once per key (:class:`_KeyedHMAC`). A session cookie is checked on every
    request that sends one (docs/performance.md)."""

    def __init__(self, secret_key: list[str], salt: str) -> None:
        super().__init__(secret_key, salt=salt, algorithm=_KeyedHMAC(hashlib.sha1))

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        derived = self.__dict__.setdefault("_derived", {})
        key = derived.get(secret_key)
        if key is None:
            key = derived[secret_key] = super().derive_key(secret_key)
        return key


class _KeyedTimestampSigner(TimestampSigner):
    """:class:`_KeyedSigner` with a timestamp in the value (itsdangerous's
    ``TimestampSigner``): what a session cookie is signed with, so its age can be checked
    without asking the store (an absolute session lifetime)."""

    def __init__(self, secret_key: list[str], salt: str) -> None:
        super().__init__(secret_key, salt=salt, algorithm=_KeyedHMAC(hashlib.sha1))

    def derive_key(self, secret_key: str | bytes | None = None) -> bytes:
        derived = self.__dict__.setdefault("_derived", {})
        key = derived.get(secret_key)
        if key is None:
            key = derived[secret_key] = super().derive_key(secret_key)
        return key

    def unsign(  # type: ignore[override]
        self, signed_value: str | bytes, max_age: int | None = None
    ) -> bytes:
        """The value, after the signature and the age are checked: itsdangerous's own
        steps without the ``datetime`` it builds for the caller (half the time of a
        check, on every request that sends a session cookie)."""
        value = Signer.unsign(self, signed_value)  # the signature covers "value.timestamp"
        rest, found, stamp = value.rpartition(self.sep)
        try:
            signed_at = bytes_to_int(base64_decode(stamp)) if found else None
        except Exception:
            signed_at = None
        if signed_at is None:
            raise BadSignature("the value has no valid timestamp", payload=value)
        if max_age is not None:
            age = self.get_timestamp() - signed_at
            if age > max_age or age < 0:
                raise SignatureExpired(f"signed {age} s ago, more than {max_age} s", payload=rest)
        return rest


_signers: dict[tuple[tuple[str, ...], str], Signer] = {}
# Per salt, the list keys() gave last time and its signer: the same list object means the
# same keys, found without making and hashing a tuple of them (every session cookie).
_last_signer: dict[str, tuple[list[str], Signer]] = {}


def signer(salt: str) -> Signer:
    """itsdangerous's plain :class:`~itsdangerous.Signer` for short strings (a session id):
    no JSON and no timestamp, half the work of :func:`sign` on every request."""
    listed = keys()
    last = _last_signer.get(salt)
    if last is not None and last[0] is listed:  # the keys of last time (the usual case)
        return last[1]
    current = tuple(listed)
    found = _signers.get((current, salt))
    if found is None:
        if len(_signers) > 64:
            _signers.clear()
        found = _signers[(current, salt)] = _KeyedSigner(list(reversed(current)), salt=salt)
    _last_signer[salt] = (listed, found)
    return found


def timed_signer(salt: str) -> TimestampSigner:
    """:func:`signer` with the time of signing in the value: ``unsign(value, max_age=s)``
    raises :class:`SignatureExpired` for a value signed more than ``s`` seconds ago."""
    listed = keys()
    tagged = "timed:" + salt  # (its own entries in the tables: never mixed with signer's)
    last = _last_signer.get(tagged)
    if last is not None and last[0] is listed:
        return last[1]  # type: ignore[return-value]
    current = tuple(listed)
    found = _signers.get((current, tagged))
    if found is None:
        if len(_signers) > 64:
            _signers.clear()
        found = _signers[(current, tagged)] = _KeyedTimestampSigner(
            list(reversed(current)), salt=salt
        )
    _last_signer[tagged] = (listed, found)
    return found  # type: ignore[return-value]


def sign(value: Any, *, salt: str) -> str:
    """A URL-safe token holding ``value`` (any JSON value) and its signature."""
    return _serializer(salt).dumps(value)


def unsign(token: str, *, salt: str, max_age: float | None = None) -> Any:
    """The value inside ``token``. Raises :class:`BadSignature` if it was not signed by
    this site's key for this ``salt`` (forged, changed, or signed for something else), and
    :class:`SignatureExpired` (a kind of BadSignature) if it is older than ``max_age``
    seconds."""
    if not isinstance(token, str | bytes):
        raise BadSignature(f"a signed token is a str, got {type(token).__name__}")
    age = None if max_age is None else int(max_age)  # itsdangerous counts whole seconds
    return _serializer(salt).loads(token, max_age=age)


# -- the site's key -------------------------------------------------------------------------

# What in a site's source shows that it signs something, at start-up: every public name
# whose use signs or checks a signature (sessions, login, CSRF tokens and fields, signed
# values), and what the CSRF check covers (forms that POST, services that take a method
# other than GET/HEAD). A false alarm costs a key the site should have anyway; a miss
# would start a site whose pages then answer 500.
_NEEDS_KEY = re.compile(
    rb"\bsession\b|\bauth\b|\bsigning\b|\bcsrf(?:_field|_token|_exempt)?\b|"
    rb"login_required|require_login|current_user|\blogin\s*\(|"
    rb"method\s*=\s*[\"']?post|methods\s*=\s*[\[\(][^\]\)]*[\"'](?:post|put|patch|delete)",
    re.IGNORECASE,
)


def site_needs_key(root: str) -> bool:
    """Whether the site's source (pages, services, templates) uses anything that signs."""
    return source_mentions(root, _NEEDS_KEY)


def source_mentions(root: str, pattern: re.Pattern[bytes]) -> bool:
    """Whether a page, service module or template of the site at ``root`` matches
    ``pattern`` (its own data/ folder and hidden folders are not read)."""
    for directory, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".") and d not in ("__pycache__", "data")]
        for name in files:
            if not name.endswith((".py", ".html")):
                continue
            try:
                with open(os.path.join(directory, name), "rb") as f:
                    if pattern.search(f.read()):
                        return True
            except OSError:
                continue
    return False


def _dev_key(root: str) -> str:
    """The development key kept in ``ROOT/data/secret_key``, created on first use."""
    directory = os.path.join(root, "data")
    path = os.path.join(directory, "secret_key")
    try:
        with open(path, encoding="utf-8") as f:
            key = f.read().strip()
        if len(key) >= _MIN_LENGTH:
            return key
    except FileNotFoundError:
        pass
    os.makedirs(directory, exist_ok=True)
    key = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(key + "\n")
    return key


def use_site_key(root: str, key: str | Sequence[str] | None, *, dev: bool) -> str:
    """Choose the key a site signs with and say where it came from.

    ``key`` (the ``secret_key`` setting) wins, then ``PYWEB_SECRET_KEY``; in development
    mode the key in ``data/secret_key`` (created now if missing). In production a site that
    needs a key (:func:`site_needs_key`) and has none raises :class:`MissingSecretKey`,
    whose message says how to set one.
    """
    if key:
        configure(key)
        return "the secret_key setting"
    env = os.environ.get("PYWEB_SECRET_KEY")
    if env:
        # Read now, as the setting is (a bad value is an error now, not on the first
        # request), and not at each signature: os.environ costs about 5k instructions a read.
        configure(env)
        return "PYWEB_SECRET_KEY"
    if dev:
        configure(_dev_key(root))
        return os.path.join(root, "data", "secret_key")
    configure(None)
    if site_needs_key(root):
        raise MissingSecretKey(
            f"site {root} uses sessions, login, signed values or POST forms and has no "
            f"secret key: {KEY_HELP}"
        )
    return "none"
