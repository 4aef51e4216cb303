"""Uploaded files: kept in memory while small, written to a temporary file as they arrive
when they are not (the ``<input type=file>`` fields of a multipart form, RFC 7578).

A page reads an upload (``f.read()``, ``f.data``) or keeps it: ``f.move_to(path)`` moves
its temporary file into place (a rename when both are on one filesystem), ``f.save(path)``
writes a copy. Whatever was not moved is removed when the request ends (the site calls
:func:`close_all`; a finalizer removes the file of an upload dropped without closing).

Where the bytes go is decided piece by piece, as they arrive: in memory while the file is
at most ``max_memory`` bytes *and* the server's budget for bodies has room for them (the
``hold`` function: ``ctx.hold``, see ``pyweb/server/budget.py``), else on disk, the bytes
already in memory written out first and given back to the budget. A file is therefore
held once, in one place: 40 clients uploading 16 MB each cost the server a few MB of
memory, not 640 MB.

Where an upload may be kept, the part to read carefully. In pyweb a page is a file in the
site folder (SMLserver §2, as in PHP), so a file written there by a visitor could become
code, and a file served from there is served on the site's origin. So:

* :meth:`UploadedFile.keep` stores an upload in the site's upload folder,
  ``data/uploads/`` (:data:`UPLOAD_FOLDER`), under a random name with no suffix: the
  visitor chooses neither the name nor the type. ``data/`` is never served, and
  :func:`may_load` (the site's loader asks it about every script, at start-up, in
  ``--dev`` and after a reload) never loads a script from it;
* ``move_to`` and ``save`` refuse, inside a request, a target in the site folder outside
  ``data/``: an upload never lands where pages or static files are;
* :func:`send_upload` answers with a kept upload as an *attachment*
  (``Content-Disposition: attachment``, ``X-Content-Type-Options: nosniff`` and a
  ``sandbox`` content security policy), so an uploaded HTML or SVG file is never shown
  inline on the site's origin (stored XSS); raster images may be shown (``inline=True``).
"""

from __future__ import annotations

import io
import os
import re
import secrets
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO
from urllib.parse import quote

__all__ = [
    "UploadedFile", "MAX_FILE_MEMORY", "close_all", "UPLOAD_FOLDER", "upload_folder",
    "send_upload", "may_load", "UploadPlaceError",
]  # fmt: skip

UPLOAD_FOLDER = os.path.join("data", "uploads")
"""Where :meth:`UploadedFile.keep` stores uploads, relative to the site folder."""
_PRIVATE = "data"  # the one part of a site folder that is neither served nor loaded

_INLINE_TYPES = frozenset(("image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"))
"""Types :func:`send_upload` may show inline: images a browser only draws (no scripts)."""
_STORED_NAME = re.compile(r"[A-Za-z0-9_-]{16,64}")


class UploadPlaceError(ValueError):
    """An upload was to be written where it could be served or run as a page."""

MAX_FILE_MEMORY = 1024 * 1024
"""An upload larger than this (bytes) is written to a temporary file as it arrives."""

Hold = Callable[[int], bool]
"""``hold(n)``: count ``n`` more bytes against the server's memory budget (negative: give
them back); False when they do not fit. :meth:`pyweb.server.context.RequestContext.hold`."""


class UploadedFile:
    """A file from a ``<input type=file>`` field of a multipart form."""

    __slots__ = (
        "filename", "content_type", "size", "path", "file", "max_memory", "directory",
        "_hold", "_held", "_moved", "_finalizer", "__weakref__",
    )  # fmt: skip

    def __init__(
        self,
        filename: str,
        content_type: str,
        data: bytes = b"",
        *,
        max_memory: int = MAX_FILE_MEMORY,
        hold: Hold | None = None,
        directory: str | None = None,
    ) -> None:
        self.filename = filename
        """The name the browser gave (never trust it as a path: it is the user's input)."""
        self.content_type = content_type
        self.size = 0
        """Bytes received."""
        self.path: Path | None = None
        """The file on disk holding the upload (a temporary file, or where :meth:`move_to`
        put it); ``None`` while it is held in memory."""
        self.file: BinaryIO = io.BytesIO()
        """The content as a binary file object (in memory, or the file on disk)."""
        self.max_memory = max_memory
        self.directory = directory
        """Where temporary files go (``None``: the system's, see :mod:`tempfile`)."""
        self._hold = hold
        self._held = 0
        self._moved = False
        self._finalizer: weakref.finalize | None = None
        if data:
            self.write(data)
            self.finish()

    # ------------------------------------------------------------- while it arrives

    def write(self, data: bytes) -> None:
        """The next piece of the upload."""
        self.size += len(data)
        if self.path is None and (
            self.size > self.max_memory or (self._hold is not None and not self._hold(len(data)))
        ):
            self._spool()
        elif self.path is None:
            self._held += len(data)
        self.file.write(data)

    def _spool(self) -> None:
        """From memory to a temporary file: the bytes so far first, then the rest."""
        fd, name = tempfile.mkstemp(prefix="pyweb-upload-", dir=self.directory)
        disk = open(fd, "w+b")  # noqa: SIM115 - it lives as long as the upload
        self._finalizer = weakref.finalize(self, _remove, disk, name)
        memory = self.file
        assert isinstance(memory, io.BytesIO)
        disk.write(memory.getbuffer())
        self.file, self.path = disk, Path(name)
        memory.close()
        if self._held and self._hold is not None:
            self._hold(-self._held)  # out of memory: out of the budget
        self._held = 0

    def finish(self) -> None:
        """The upload has arrived whole: ready to be read from its start."""
        self.file.flush()
        self.file.seek(0)

    # ----------------------------------------------------------------- for the page

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes (all that is left by default), as from a file."""
        return self.file.read(size)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)

    @property
    def data(self) -> bytes:
        """The whole content, in memory (for a big upload prefer :meth:`read` in pieces,
        or :meth:`move_to`)."""
        file = self.file
        if isinstance(file, io.BytesIO):
            return file.getvalue()
        position = file.tell()
        file.seek(0)
        try:
            return file.read()
        finally:
            file.seek(position)

    def keep(self, folder: str | os.PathLike[str] | None = None) -> str:
        """Keep the upload in ``folder`` (default: the site's ``data/uploads/``) under a new
        random name, and return that name (store it with the upload's ``filename`` and
        ``content_type``; :func:`send_upload` serves it back). The name has no suffix and
        is not the visitor's: nothing kept can run, be served, or overwrite a file."""
        directory = Path(folder) if folder is not None else upload_folder()
        _check_place(directory, is_folder=True)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        name = secrets.token_urlsafe(18)
        self.move_to(directory / name)
        return name

    def move_to(self, path: str | os.PathLike[str]) -> Path:
        """Move the upload to ``path`` (a file name, not a folder) and keep it there: it is no
        longer removed when the request ends. Returns the path. A rename when the
        temporary file is on the same filesystem, else a copy. Inside a request, a path in
        the site folder outside ``data/`` raises :class:`UploadPlaceError` (it could be
        served, or run as a page)."""
        target = Path(path)
        _check_place(target)
        if self.path is None:
            self.save(target)
        else:
            shutil.move(self.path, target)
            if self._finalizer is not None:
                self._finalizer.detach()  # (the file stays open until close())
        self.path = target
        self._moved = True
        return target

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write a copy of the upload to ``path``; the upload itself is unchanged. The same
        places are refused as by :meth:`move_to`."""
        target = Path(path)
        _check_place(target)
        with open(target, "wb") as out:
            if isinstance(self.file, io.BytesIO):
                out.write(self.file.getbuffer())
            else:
                position = self.file.tell()
                self.file.seek(0)
                shutil.copyfileobj(self.file, out, 1024 * 1024)
                self.file.seek(position)
        return target

    def close(self) -> None:
        """The request is over: close the file and remove the temporary file (unless it
        was moved)."""
        if self._finalizer is not None and not self._moved:
            self._finalizer()  # closes and removes, once
        else:
            self.file.close()
        if self._held and self._hold is not None:
            self._hold(-self._held)
            self._held = 0

    def __repr__(self) -> str:
        return f"UploadedFile({self.filename!r}, {self.content_type!r}, {self.size} bytes)"


def _remove(file: BinaryIO, name: str) -> None:
    file.close()
    try:
        os.unlink(name)
    except FileNotFoundError:
        pass


def close_all(files: Iterable[tuple[str, object]]) -> None:
    """Close every upload of a request (``conn.files.multi_items()``): temporary files go."""
    for _, upload in files:
        if isinstance(upload, UploadedFile):
            upload.close()


# ------------------------------------------------------------------ where uploads live


def _site_root() -> str | None:
    """The site folder of the request being served, or None outside a request."""
    from pyweb.app.conn import current_conn  # (conn imports this module)

    try:
        return current_conn().site_root
    except RuntimeError:
        return None


def upload_folder(root: str | os.PathLike[str] | None = None) -> Path:
    """The upload folder of the site ``root`` (default: the site serving this request)."""
    if root is None:
        root = _site_root()
        if root is None:
            raise RuntimeError("upload_folder() without a site: call it in a page, or name the site")
    return Path(os.path.realpath(root)) / UPLOAD_FOLDER


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _check_place(target: Path, *, is_folder: bool = False) -> None:
    """Refuse, inside a request, a place in the site folder outside ``data/``."""
    root = _site_root()
    if root is None:
        return
    root = os.path.realpath(root)
    # The folder's real path decides (a symlink in data/ cannot point into the pages).
    real = os.path.realpath(target if is_folder else target.parent)
    if _inside(real, root) and not _inside(real, os.path.join(root, _PRIVATE)):
        raise UploadPlaceError(
            f"{os.fspath(target)!r} is in the site folder, where an upload could be served "
            f"or run as a page; keep uploads with f.keep() (in {UPLOAD_FOLDER}/) or outside "
            f"the site folder"
        )


def may_load(root: str, path: str) -> bool:
    """Whether the site's loader may compile ``path`` as a script: not when it lies in the
    site's private ``data/`` folder, where uploads are kept (after resolving symlinks)."""
    real_root = os.path.realpath(root)
    return not _inside(os.path.realpath(path), os.path.join(real_root, _PRIVATE))


def send_upload(
    name: str,
    *,
    filename: str = "download",
    content_type: str = "application/octet-stream",
    inline: bool = False,
    folder: str | os.PathLike[str] | None = None,
) -> None:
    """Answer this request with the upload :meth:`UploadedFile.keep` stored as ``name``.

    It is sent as an attachment named ``filename`` (the browser saves it), with
    ``nosniff`` and a ``sandbox`` policy: whatever it holds (HTML, SVG with scripts) is
    never shown as a page of this site. ``inline=True`` shows PNG, JPEG, GIF, WebP and
    AVIF images in the page instead; other types stay attachments."""
    from pyweb.app.conn import current_conn
    from pyweb.protocol.response import FileBody, Response

    if not isinstance(name, str) or not _STORED_NAME.fullmatch(name):
        raise ValueError(f"send_upload: {name!r} is not a name that keep() gave")
    directory = Path(folder) if folder is not None else upload_folder()
    path = directory / name
    size = os.stat(path).st_size  # FileNotFoundError names the path
    media = content_type.split(";", 1)[0].strip().lower()
    if not re.fullmatch(r"[a-z0-9!#$&^_.+-]+/[a-z0-9!#$&^_.+-]+", media):
        media = "application/octet-stream"  # the visitor's Content-Type: only a clean one
    shown = inline and media in _INLINE_TYPES
    disposition = "inline" if shown else "attachment"
    ascii_name = re.sub(r"[^A-Za-z0-9._-]", "_", os.path.basename(filename)) or "download"
    headers = [
        ("Content-Type", media),
        (
            "Content-Disposition",
            f"{disposition}; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(filename, safe='')}",
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Security-Policy", "sandbox; default-src 'none'"),
        ("Cache-Control", "private"),
    ]
    current_conn().return_(Response(200, headers, FileBody(str(path), 0, size)))
