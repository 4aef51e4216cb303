"""Static files: map a URL path to a file under the site directory, safely and cheaply.

``StaticFiles(root).respond(request)`` looks at one request and answers with a
:class:`~pyweb.protocol.response.Response` whose body is a
:class:`~pyweb.protocol.response.FileBody`; the server then sends the bytes with
``os.sendfile``. Nothing here reads a file: Hop §3.3.1 found that a memory cache does not
beat sendfile, which leaves the caching to the operating system. ``respond`` only stats.

What it implements, with the RFC sections:

* content type from the file extension (``mimetypes`` plus a fixed table for the types a
  browser cares about, so every machine answers the same), ``; charset=utf-8`` on text;
* validators (RFC 9110 §8.8): a strong ``ETag`` made of inode, size and modification time
  in nanoseconds (no read of the file), and ``Last-Modified``;
* conditional requests (RFC 9110 §13): ``If-None-Match`` (lists, ``*``, weak comparison)
  and, only when it is absent, ``If-Modified-Since`` give ``304 Not Modified``;
* ranges (RFC 9110 §14): one range ``bytes=a-b``, ``a-`` or ``-n`` gives ``206`` with
  ``Content-Range``; an unsatisfiable one gives ``416`` with ``Content-Range: bytes */size``;
  several ranges are ignored (a full ``200``, which §14.2 allows); ``If-Range`` that does
  not match also gives the full ``200``;
* directories: ``/dir/`` serves ``/dir/index.html``; ``/dir`` redirects (301) to ``/dir/``;
  a directory without an index answers ``None`` (the caller 404s): no listings;
* caching (RFC 9111 §5.2.2): every answer for a file carries ``Cache-Control`` (the
  ``static_cache_control`` setting; ``no-cache`` by default: kept, revalidated with the
  ETag on each use); an address made by :func:`pyweb.static_url` (``/style.css?v=HASH``,
  :mod:`pyweb.app.staticurl`) whose hash is the file's content's gets
  :data:`IMMUTABLE` instead: a changed file has a new address;
* precompressed files (RFC 9110 §8.4): for a client whose ``Accept-Encoding`` allows it, a
  ``style.css.br`` or ``style.css.gz`` beside ``style.css`` (a regular file, not a
  symlink, no older than the file) is sent instead, with ``Content-Encoding``, ``Vary``
  and an ETag of its coding (:mod:`pyweb.app.compression`); a ``304`` recognises those
  tags too. Ranges are always served on the file itself. Everything else is compressed,
  if at all, by the compression guard (:mod:`pyweb.app.guards.compress`).

Safety, the part to read carefully. The URL path is percent-decoded exactly once and then:

* ``400 Bad Request`` when it contains NUL, a backslash, a ``.`` or ``..`` segment (plain
  or encoded, ``%2e%2e``, ``..%2f``) or an empty segment (``//``, ``%2f%2f``: an absolute
  path in disguise, and a ``Location`` starting with ``//`` would be an open redirect);
* ``404 Not Found`` for hidden names (any segment starting with ``.``, such as ``.git`` or
  ``.env``; only ``/.well-known/`` is allowed, RFC 8615), for anything whose real path
  (symlinks resolved with ``os.path.realpath``) lies outside the real root, and for
  anything that is not a regular file (devices, fifos, sockets). A 404 rather than
  ``None`` so that no later handler serves what was refused here; the page is
  :func:`~pyweb.protocol.errorpage.error_response`'s, in production byte for byte the one
  for a missing file (with ``dev=True`` it says why);
* ``404 Not Found`` for a file whose type is not content: only the suffixes of
  :data:`CONTENT` (pages, styles, scripts, images, fonts, media, PDF, plain text) are
  served, by the name in the URL *and* by the name of the real file. An allow-list, not a
  deny-list, because a site folder collects files nobody predicts (``pyweb.toml.save``,
  ``app.log.1``, ``backup.sql.gz``, ``dump.rdb``, ``credentials.json``, ``id_rsa``): a
  suffix nobody listed is refused, not served;
* ``404 Not Found`` also for names that are never content whatever their suffix
  (:data:`NOT_CONTENT`: settings, editor backups and lock files, databases, logs,
  sources). That rule is applied to the name in the URL and, *after resolving the
  path*, to every segment of the real path below the root, so a symlink named
  ``notes.txt`` that points at ``pyweb.toml``, or ``public/`` pointing into ``.git/`` or
  into a directory the caller marks private (``hidden=``), is refused too;
* ``None`` when nothing is there, so the caller can try something else, then 404.

Cost per request: one ``stat``, plus ``realpath`` the first time a URL is seen; after that
a small table remembers the checked real path for as long as a ``stat`` through the URL's
path reaches the same inode (docs/static-files.md, "Speed").

Only GET and HEAD are handled; for any other method ``respond`` returns ``None``. The
query string is ignored, but for the ``v=`` of a :func:`pyweb.static_url` address.
"""

from __future__ import annotations

import hashlib
import mimetypes
import os
import re
import stat
from calendar import timegm
from collections.abc import Callable
from email.utils import formatdate, parsedate_tz
from urllib.parse import unquote

from pyweb.protocol.errorpage import error_response
from pyweb.protocol.messages import Request
from pyweb.protocol.response import FileBody, Response

from . import compression

__all__ = [
    "StaticFiles", "content_type_for", "content_hash", "CONTENT", "NOT_CONTENT",
    "IMMUTABLE", "is_content_name", "serving",
]  # fmt: skip

IMMUTABLE = "public, max-age=31536000, immutable"
"""``Cache-Control`` of an address whose hash names the content (RFC 8246): a year, and
no revalidation on reload: the content of that address never changes."""

_sites: dict[str, StaticFiles] = {}
"""Real root → the latest StaticFiles serving it (:func:`serving`)."""
_hashes: dict[tuple[str, int, int, int], str] = {}

CONTENT: frozenset[str] = frozenset((
    # pages, styles, scripts
    ".html", ".htm", ".css", ".js", ".mjs", ".wasm", ".webmanifest",
    # images
    ".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".svg", ".ico",
    # fonts
    ".woff", ".woff2", ".ttf", ".otf",
    # media and subtitles
    ".mp4", ".webm", ".mp3", ".ogg", ".wav", ".vtt",
    # documents
    ".pdf", ".txt",
))  # fmt: skip
"""The file suffixes (lower case) served as static files: the types a browser shows. A file
with any other suffix, or none, is not served; ``StaticFiles(content=...)`` replaces the
set (``CONTENT | {".json"}`` to publish JSON files: then no settings or credentials may be
kept as ``.json`` in the site folder). Left out on purpose: ``.json``, ``.xml``, ``.csv``,
``.md``, ``.zip``, ``.gz`` and ``.ipynb``, the suffixes of configs, dumps, archives and
notebooks as often as of content."""

NOT_CONTENT: tuple[str, ...] = (
    # settings (pyweb.toml holds the status token and the database URL)
    "*.toml", "*.ini", "*.cfg", "*.conf", "*.env", "*.yaml", "*.yml", "*.pem", "*.key",
    # editor backups, swap and lock files, patch leftovers
    "*~", "*.bak", "*.orig", "*.rej", "*.swp", "*.swo", "*.swx", ".#*", "#*#", "*.tmp",
    # databases and their journals
    "*.db", "*.sqlite", "*.sqlite3", "*.db-journal", "*.db-wal", "*.db-shm",
    "*.sqlite-journal", "*.sqlite-wal", "*.sqlite-shm", "*.sqlite3-journal",
    "*.sqlite3-wal", "*.sqlite3-shm",
    # logs and sources
    "*.log", "*.py", "*.pyc", "*.pyo", "*.pyi", "*.sql", "*.sh",
)  # fmt: skip
"""File-name patterns (``fnmatch`` syntax, case-insensitive) that are never served: the
files a site folder tends to hold beside its content. ``StaticFiles(not_content=...)``
replaces the list."""


def _name_matcher(patterns: tuple[str, ...]) -> Callable[[str], object]:
    """One compiled regular expression for every pattern (a name is checked once per new
    URL, not per request: the fast path remembers checked files)."""
    import fnmatch

    if not patterns:
        return lambda name: None
    joined = "|".join(f"(?:{fnmatch.translate(p)})" for p in patterns)
    return re.compile(joined, re.IGNORECASE | re.DOTALL).match


_default_matcher = _name_matcher(NOT_CONTENT)


def is_content_name(name: str) -> bool:
    """Whether a file called ``name`` may be served by default: its suffix is in
    :data:`CONTENT` and it matches none of :data:`NOT_CONTENT`."""
    return _has_content_suffix(name, CONTENT) and not _default_matcher(name)


def _has_content_suffix(name: str, content: frozenset[str]) -> bool:
    dot = name.rfind(".")
    return dot > 0 and name[dot:].lower() in content

# The types a browser is picky about, fixed here so the answer does not depend on the
# machine's /etc/mime.types (which ``mimetypes`` reads). Everything else asks mimetypes.
_FIXED_TYPES = {
    ".html": "text/html",
    ".htm": "text/html",
    ".css": "text/css",
    ".js": "application/javascript",
    ".mjs": "application/javascript",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".wasm": "application/wasm",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".xml": "application/xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".webp": "image/webp",
    ".avif": "image/avif",
    ".ico": "image/x-icon",
    ".pdf": "application/pdf",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".ttf": "font/ttf",
    ".otf": "font/otf",
    ".mp4": "video/mp4",
    ".webm": "video/webm",
    ".mp3": "audio/mpeg",
    ".ogg": "audio/ogg",
    ".wav": "audio/wav",
    ".zip": "application/zip",
    ".gz": "application/gzip",
    ".py": "text/x-python",
    ".ipynb": "application/x-ipynb+json",
}
_DEFAULT_TYPE = "application/octet-stream"
# Text types (and these two) are sent with an explicit charset: without one, browsers guess.
_CHARSET_TYPES = frozenset(("application/javascript", "image/svg+xml"))
_type_cache: dict[str, str] = {}


def content_type_for(filename: str) -> str:
    """The ``Content-Type`` for ``filename``, from its extension (case-insensitive)."""
    ext = os.path.splitext(filename)[1].lower()
    ctype = _type_cache.get(ext)
    if ctype is None:
        ctype = _FIXED_TYPES.get(ext)
        if ctype is None and ext:
            ctype = mimetypes.types_map.get(ext) or _DEFAULT_TYPE
        elif ctype is None:
            ctype = _DEFAULT_TYPE
        if ctype.startswith("text/") or ctype in _CHARSET_TYPES:
            ctype += "; charset=utf-8"
        if len(_type_cache) < 1024:  # bounded: the key is chosen by the client
            _type_cache[ext] = ctype
    return ctype


# Last-Modified strings by whole-second mtime; few distinct values on a site, bounded anyway.
_date_cache: dict[int, str] = {}


def _http_date(seconds: int) -> str:
    value = _date_cache.get(seconds)
    if value is None:
        value = formatdate(seconds, usegmt=True)
        if len(_date_cache) >= 4096:
            _date_cache.clear()
        _date_cache[seconds] = value
    return value


def _parse_http_date(value: str) -> int | None:
    """Seconds since the epoch for an HTTP-date (RFC 9110 §5.6.7), ``None`` if invalid."""
    parsed = parsedate_tz(value)
    if parsed is None:
        return None
    try:
        return timegm(parsed[:6]) - (parsed[9] or 0)
    except (ValueError, OverflowError):
        return None


def _etag_matches(header: str, etag: str) -> str | None:
    """Weak comparison of ``etag`` against an ``If-None-Match`` list (RFC 9110 §13.1.2):
    the matching tag, or None.

    Weak comparison ignores the ``W/`` prefix on both sides; ``*`` matches any current
    representation (the file exists, or we would not be here). A tag of one of the file's
    codings (``"...-br"``, :func:`~pyweb.app.compression.coded_etag`) matches too, and is
    the one returned: the client's copy is that coding's.
    """
    tag = etag[2:] if etag.startswith("W/") else etag
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*":
            return etag
        if candidate.startswith("W/"):
            candidate = candidate[2:]
        if candidate == tag:
            return etag
        if candidate.endswith('-br"') or candidate.endswith('-gzip"'):
            uncoded, coding = compression.uncoded_etag(candidate)
            if uncoded == tag and coding is not None:
                return compression.coded_etag(etag, coding)
    return None


def content_hash(real: str, st: os.stat_result) -> str:
    """The first 12 hex digits of the SHA-256 of the file at ``real`` (``st``: its stat),
    computed once per version of the file."""
    key = (real, st.st_ino, st.st_size, st.st_mtime_ns)
    found = _hashes.get(key)
    if found is None:
        digest = hashlib.sha256()
        with open(real, "rb") as f:
            for block in iter(lambda: f.read(1 << 16), b""):
                digest.update(block)
        found = digest.hexdigest()[:12]
        if len(_hashes) >= 4096:
            _hashes.clear()
        _hashes[key] = found
    return found


def _parse_range(header: str, size: int) -> tuple[int, int] | None | bool:
    """One byte range from a ``Range`` value (RFC 9110 §14.1.2).

    Returns ``(first, last)`` inclusive for a satisfiable single range, ``False`` when the
    range is unsatisfiable (416), and ``None`` when the header is to be ignored: another
    unit, bad syntax, several ranges, or an empty file.
    """
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec or size == 0:
        return None
    first_s, dash, last_s = spec.strip().partition("-")
    if not dash:
        return None
    first_s = first_s.strip()
    last_s = last_s.strip()
    if first_s and not first_s.isdigit() or last_s and not last_s.isdigit():
        return None  # isdigit also refuses signs and spaces inside the number
    if not first_s:  # suffix range: the last n bytes
        if not last_s:
            return None
        suffix = int(last_s)
        if suffix == 0:
            return False
        return (max(0, size - suffix), size - 1)
    first = int(first_s)
    last = int(last_s) if last_s else size - 1
    if last_s and last < first:
        return None  # invalid, so ignored (§14.1.1)
    if first >= size:
        return False
    return (first, min(last, size - 1))


def _suffix(text: str) -> str:
    suffix = text.lower() if text.startswith(".") else "." + text.lower()
    if "/" in suffix or len(suffix) < 2 or "." in suffix[1:]:
        raise ValueError(f"StaticFiles(content=...): {text!r} is not a file suffix such as '.png'")
    return suffix


class StaticFiles:
    """Serve the files under ``root``.

    >>> files = StaticFiles("pages")                       # doctest: +SKIP
    >>> response = files.respond(request)                  # doctest: +SKIP
    >>> response.status, response.body                     # doctest: +SKIP
    (200, FileBody(path='/.../pages/index.html', offset=0, length=984))

    ``respond`` returns ``None`` when no file matches (the caller 404s or tries another
    handler), else a :class:`Response`. See the module docstring for the rules.
    """

    __slots__ = (
        "root", "index_files", "dev", "_prefix", "_resolved", "_validators", "_not_content",
        "_content", "_hidden", "_html_extra", "_other_extra", "_precompressed", "_cache_control",
    )  # fmt: skip

    def __init__(
        self,
        root: str | os.PathLike[str],
        *,
        index_files: tuple[str, ...] = ("index.html",),
        dev: bool = False,
        not_content: tuple[str, ...] = NOT_CONTENT,
        content: frozenset[str] | set[str] = CONTENT,
        hidden: Callable[[str], bool] | None = None,
        extra_headers: tuple[list[tuple[str, str]], list[tuple[str, str]]] = ([], []),
        precompressed: bool = True,
        cache_control: str | None = None,
    ):
        """``content``: the suffixes served (:data:`CONTENT`, lower case, with the dot).
        ``not_content``: file-name patterns never served (:data:`NOT_CONTENT`).
        ``hidden``: a test of the *real* path below the root (``"/data/x.db"``) for the
        places a caller keeps private (a site's ``templates/`` and ``data/``).
        ``extra_headers``: fields every answer for a file ends with, ``(for an HTML file,
        for any other answer)``: a site's security headers, added here to the list the
        answer is built in rather than to a copy of it afterwards.
        ``precompressed``: serve ``NAME.br``/``NAME.gz`` beside ``NAME`` to a client that
        accepts the coding. ``cache_control``: the ``Cache-Control`` of every file's answer
        (None: none; a :func:`pyweb.static_url` address gets :data:`IMMUTABLE`)."""
        # Resolved once: every served path is compared against the real root.
        self.root = os.path.realpath(os.fspath(root))
        if not os.path.isdir(self.root):
            raise NotADirectoryError(f"static root is not a directory: {self.root!r}")
        self.index_files = tuple(index_files)
        self.dev = dev  # refusal pages say why only in development mode
        self._not_content = (
            _default_matcher if not_content == NOT_CONTENT else _name_matcher(not_content)
        )
        self._content = frozenset(_suffix(s) for s in content)
        self._hidden = hidden
        self._html_extra, self._other_extra = extra_headers
        self._precompressed = precompressed
        if cache_control is not None and any(c in cache_control for c in "\r\n\x00"):
            raise ValueError(f"cache_control cannot hold CR, LF or NUL: {cache_control!r}")
        self._cache_control = cache_control
        self._prefix = self.root if self.root.endswith(os.sep) else self.root + os.sep
        # URL path on disk -> (path to stat, st_dev, st_ino, checked real path); see respond.
        self._resolved: dict[str, tuple[str, int, int, str]] = {}
        # (real path, inode, size, mtime_ns) -> (ETag, mtime, Last-Modified, Content-Type):
        # the strings that describe one version of a file, formatted once per version
        # instead of once per request (a changed file has a new key).
        self._validators: dict[tuple[str, int, int, int], tuple[str, int, str, str]] = {}
        _sites[self.root] = self

    def respond(self, request: Request) -> Response | None:
        method = request.method
        if method != "GET" and method != "HEAD":
            return None
        path = request.path
        if not path.startswith("/"):
            return None  # "*" (OPTIONS) or something no file can answer

        # Decode once. surrogateescape keeps non-UTF-8 bytes as the same bytes on disk.
        decoded = unquote(path, errors="surrogateescape") if "%" in path else path
        candidate = self.root + decoded if decoded != "/" else self.root
        # Fast path: realpath costs one lstat per path component, and the checks of the
        # path's segments a regular expression each, so remember which URL resolved to
        # which checked file (only paths that passed every check below get in, and the
        # checks give the same answer for the same path). The entry is trusted only
        # while a stat through the unresolved path still reaches the same inode: a moved
        # symlink or a replaced file changes the inode and sends us down the slow path.
        entry = self._resolved.get(candidate)
        if entry is not None:
            check_path, dev, ino, real = entry
            try:
                st = os.stat(check_path)
            except OSError:
                st = None
            if (
                st is not None
                and st.st_ino == ino
                and st.st_dev == dev
                and stat.S_ISREG(st.st_mode)
            ):
                return self._file_response(request, real, st)
            del self._resolved[candidate]

        refused = self._refused_path(decoded)
        if refused is not None:
            return refused

        try:
            real = os.path.realpath(candidate)
        except (OSError, ValueError):
            return None
        if real != self.root and not real.startswith(self._prefix):
            return self._refuse(404, "the path leads out of the site directory (symlink)")
        why = self._private(real)
        if why:
            return self._refuse(404, why)
        try:
            st = os.stat(real)
        except (OSError, ValueError):
            return None

        if stat.S_ISDIR(st.st_mode):
            if not decoded.endswith("/"):
                # Relative links inside an index page only work under the slashed URL.
                location = path + "/" + ("?" + request.query if request.query else "")
                return Response(
                    301,
                    [("Location", location), ("Content-Type", "text/plain; charset=utf-8")],
                    b"Moved Permanently\n",
                )
            for index in self.index_files:
                index_path = os.path.join(candidate, index)
                try:
                    index_real = os.path.realpath(index_path)
                    index_st = os.stat(index_real)
                except (OSError, ValueError):
                    continue
                if not index_real.startswith(self._prefix) or not stat.S_ISREG(index_st.st_mode):
                    continue
                if self._private(index_real) or self._not_a_content_type(index, index_real):
                    continue
                self._remember(candidate, index_path, index_st, index_real)
                return self._file_response(request, index_real, index_st)
            return None  # no listings
        if not stat.S_ISREG(st.st_mode):
            return self._refuse(404, "not a regular file")  # devices, fifos, sockets
        if decoded.endswith("/"):
            return None  # "/file.txt/" names a directory that is not there
        why = self._not_a_content_type(decoded, real)
        if why:
            return self._refuse(404, why)
        self._remember(candidate, candidate, st, real)
        return self._file_response(request, real, st)

    def _refused_path(self, decoded: str) -> Response | None:
        """The refusal of a URL path no file may answer (``..``, ``//``, a hidden or
        non-content name), or None."""
        if "\x00" in decoded or "\\" in decoded:
            return self._refuse(400, "NUL or backslash in the path")
        segments = decoded.split("/")
        # segments[0] is "" (the leading slash); the last is "" for a trailing slash.
        for i in range(1, len(segments)):
            segment = segments[i]
            if not segment:
                if i == len(segments) - 1:
                    break
                return self._refuse(400, "empty segment (//) in the path")
            if segment[0] == ".":
                if segment == "." or segment == "..":
                    return self._refuse(400, "'.' or '..' segment in the path")
                if not (i == 1 and segment == ".well-known"):
                    return self._refuse(
                        404, "hidden files (names starting with '.') are not served"
                    )
            elif self._not_content(segment):
                return self._refuse(404, f"{segment!r} is not content (settings, backup, "
                                    "database, log or source)")
        return None

    def _private(self, real: str) -> str:
        """Why the resolved path ``real`` (inside the root) must not be served, or "": it is
        decided on where the bytes are, not on the URL, so a symlink cannot launder a
        hidden directory, a settings file or a database into content."""
        relative = real[len(self.root) :]  # "" for the root, else "/a/b"
        segments = relative.split("/")[1:]
        for i, segment in enumerate(segments):
            if segment.startswith(".") and not (i == 0 and segment == ".well-known"):
                return "the path resolves into a hidden place (symlink)"
            if self._not_content(segment):
                return f"the path resolves to {segment!r}, which is not content"
        if relative and self._hidden is not None and self._hidden(relative):
            return "the path resolves into a private part of the site"
        return ""

    def _not_a_content_type(self, url_path: str, real: str) -> str:
        """Why a file is not served by its type, or "": the suffix of its name in the URL
        and of its real name must both be content (a symlink ``cat.png`` to ``id_rsa`` is
        not, nor is ``notes`` pointing at ``notes.txt``)."""
        for name in (url_path.rsplit("/", 1)[-1], os.path.basename(real)):
            if not _has_content_suffix(name, self._content):
                return (f"{name!r} is not a content type: only {', '.join(sorted(self._content))} "
                        "files are served")
        return ""

    def _refuse(self, status: int, why: str) -> Response:
        # The production 404 is the same page as for a missing file: a refusal must not
        # tell a prober that something is there.
        return error_response(status, dev=self.dev, detail=why)

    def _remember(self, candidate: str, check_path: str, st: os.stat_result, real: str) -> None:
        # Only files that exist get in, so a client cannot grow the cache with random
        # URLs; the bound is for very large sites.
        if len(self._resolved) >= 4096:
            self._resolved.clear()
        self._resolved[candidate] = (check_path, st.st_dev, st.st_ino, real)

    def _file_response(self, request: Request, real: str, st: os.stat_result) -> Response:
        size = st.st_size
        key = (real, st.st_ino, size, st.st_mtime_ns)
        cached = self._validators.get(key)
        if cached is None:
            # Strong: with the nanosecond mtime and the inode, two different contents get
            # the same tag only if a file is rewritten to the same size within the clock's
            # resolution; nginx and Apache make the same bet. Strong is needed for If-Range.
            etag = f'"{st.st_ino:x}-{size:x}-{st.st_mtime_ns:x}"'
            mtime = int(st.st_mtime)
            cached = (etag, mtime, _http_date(mtime), content_type_for(real))
            if len(self._validators) >= 4096:
                self._validators.clear()
            self._validators[key] = cached
        etag, mtime, last_modified, content_type = cached
        headers = [("ETag", etag), ("Last-Modified", last_modified)]
        cache_control = self._cache_control
        if request.query and _names_content(request.query, real, st):  # a static_url address
            cache_control = IMMUTABLE
        if cache_control is not None:
            headers.append(("Cache-Control", cache_control))

        # One pass over the header list instead of six request.header() scans.
        if_none_match = if_modified_since = range_value = if_range = accept_encoding = None
        for name, value in request.headers:
            if name == "if-none-match":
                if_none_match = value
            elif name == "if-modified-since":
                if_modified_since = value
            elif name == "range":
                range_value = value
            elif name == "if-range":
                if_range = value
            elif name == "accept-encoding":
                accept_encoding = value

        # RFC 9110 §13.2.2: If-None-Match first; If-Modified-Since only without it.
        if if_none_match is not None:
            matched = _etag_matches(if_none_match, etag)
            if matched is not None:
                if matched != etag:  # the client holds one of the file's codings
                    headers[0] = ("ETag", matched)
                    headers.append(("Vary", "Accept-Encoding"))
                return Response(304, [*headers, *self._other_extra], b"")  # (no type: not HTML)
        elif if_modified_since is not None:
            since = _parse_http_date(if_modified_since)
            if since is not None and mtime <= since:
                return Response(304, [*headers, *self._other_extra], b"")

        headers.append(("Content-Type", content_type))
        headers.append(("Accept-Ranges", "bytes"))
        extra = self._html_extra if content_type.startswith("text/html") else self._other_extra
        # §14.2: Range is defined for GET only; a HEAD gets the plain 200 head.
        if (
            range_value is not None
            and request.method == "GET"
            and self._if_range_ok(if_range, etag, mtime)
        ):
            byte_range = _parse_range(range_value, size)
            if byte_range is False:
                headers.append(("Content-Range", f"bytes */{size}"))
                headers.extend(extra)
                return Response(416, headers, b"")
            if byte_range is not None:
                first, last = byte_range  # type: ignore[misc]
                headers.append(("Content-Range", f"bytes {first}-{last}/{size}"))
                headers.extend(extra)
                return Response(206, headers, FileBody(real, first, last - first + 1))
        if accept_encoding and self._precompressed and compression.compressible(content_type):
            coded = _precompressed(real, st, accept_encoding)
            if coded is not None:
                path, length, coding = coded
                headers[0] = ("ETag", compression.coded_etag(etag, coding))
                headers[-1] = ("Content-Encoding", coding)  # (in place of Accept-Ranges)
                headers.append(("Vary", "Accept-Encoding"))
                headers.extend(extra)
                return Response(200, headers, FileBody(path, 0, length))
        headers.extend(extra)
        return Response(200, headers, FileBody(real, 0, size))

    def url_version(self, url_path: str) -> str:
        """The content hash of the file a GET of ``url_path`` would serve (for
        :func:`pyweb.static_url`); ValueError naming the path when none would be."""
        request = Request("HEAD", url_path, "1.1", [], path=url_path)
        response = self.respond(request)
        body = response.body if response is not None else None
        if response is None or response.status != 200 or not isinstance(body, FileBody):
            raise ValueError(
                f"static_url({url_path!r}): no static file is served at that address "
                f"(from {self.root!r})"
            )
        real = os.path.realpath(body.path)
        return content_hash(real, os.stat(real))

    @staticmethod
    def _if_range_ok(if_range: str | None, etag: str, mtime: int) -> bool:
        """Whether a Range may be honoured given ``If-Range`` (RFC 9110 §13.1.5)."""
        if if_range is None:
            return True
        if_range = if_range.strip()
        if if_range.startswith('"') or if_range.startswith("W/"):
            return if_range == etag  # strong comparison: a weak tag never matches
        return _parse_http_date(if_range) == mtime


def serving(root: str) -> StaticFiles | None:
    """The latest :class:`StaticFiles` serving the site directory ``root`` (its real path),
    or None: what :func:`pyweb.static_url` asks of a page's site."""
    return _sites.get(root)


def _names_content(query: str, real: str, st: os.stat_result) -> bool:
    """Whether the query is a :func:`pyweb.static_url` address's ``v=HASH`` of this version
    of the file (another hash is an old address: the file is served, but not immutable)."""
    for item in query.split("&"):
        if item.startswith("v="):
            return item[2:] == content_hash(real, st)
    return False


def _precompressed(real: str, st: os.stat_result, accept_encoding: str) -> tuple[str, int, str] | None:
    """``(path, size, coding)`` of a precompressed twin of the file at ``real`` in a coding
    ``accept_encoding`` allows, best first, or None. A twin counts if it is a regular file
    (``lstat``: a symlink could lead out of the site) no older than the file itself (an
    older one is stale: the file was edited after it was compressed)."""
    for coding in compression.accepted(accept_encoding):
        path = real + compression.SUFFIXES[coding]
        try:
            twin = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(twin.st_mode) and twin.st_mtime_ns >= st.st_mtime_ns and twin.st_size:
            return path, twin.st_size, coding
    return None
