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
"""

from __future__ import annotations

import io
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

__all__ = ["UploadedFile", "MAX_FILE_MEMORY", "close_all"]

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

    def move_to(self, path: str | os.PathLike[str]) -> Path:
        """Move the upload to ``path`` (a file name, not a folder) and keep it there: it is no
        longer removed when the request ends. Returns the path. A rename when the
        temporary file is on the same filesystem, else a copy."""
        target = Path(path)
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
        """Write a copy of the upload to ``path``; the upload itself is unchanged."""
        target = Path(path)
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
