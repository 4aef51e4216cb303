"""An incremental ``multipart/form-data`` parser: body pieces in, parts out (RFC 7578,
RFC 2046 §5.1.1).

A multipart body is a sequence of parts, each introduced by a delimiter line
(``--boundary``), a block of header fields, an empty line, then the part's bytes up to the
next ``CRLF--boundary``; ``--boundary--`` closes the body. Parsing it whole needs the whole
body in memory, and a form with a 16 MB file then costs the server 16 MB or more, per
upload. :class:`MultipartParser` is fed the body as it arrives (``feed(piece)``, then
``close()``) and hands what it finds to a *sink*: ``start_part(disposition,
content_type)``, ``part_data(bytes)`` (any number of times), ``end_part()``. It keeps at most
one piece plus a delimiter's length buffered (and a part's header block, bounded by
``max_part_header``), so what it holds does not grow with the body: the sink decides where
the bytes go (``formdata.py`` keeps text fields in memory and writes files to disk).

The same bytes split anywhere give the same parts (a property test feeds one body in
random pieces); every malformation is a :class:`~pyweb.app.formdata.FormDataError` raised
by ``feed`` or ``close``.
"""

from __future__ import annotations

from typing import Protocol

__all__ = ["MultipartParser", "PartSink", "MultipartError"]


class MultipartError(ValueError):
    """The body is not well-formed multipart (``formdata.py`` turns it into a 400)."""


class PartSink(Protocol):
    """Where a :class:`MultipartParser` delivers the parts it finds."""

    def start_part(self, disposition: str, content_type: str) -> None: ...
    def part_data(self, data: bytes) -> None: ...
    def end_part(self) -> None: ...


# States: where in the body the next byte is.
PREAMBLE, AFTER_DELIMITER, HEADERS, CONTENT, DONE = range(5)


class MultipartParser:
    """Feed it a multipart body in pieces of any size; it calls its sink part by part."""

    def __init__(self, boundary: str, sink: PartSink, max_part_header: int = 8 * 1024) -> None:
        if not boundary or len(boundary) > 70:
            raise MultipartError(f"a multipart boundary has 1 to 70 characters, got {boundary!r}")
        self.boundary = boundary
        self.delimiter = b"--" + boundary.encode("latin-1")
        self.separator = b"\r\n" + self.delimiter  # every delimiter but the first follows a CRLF
        self.sink = sink
        self.max_part_header = max_part_header
        self.state = PREAMBLE
        self.at_start = True
        """Nothing consumed yet: the first delimiter may open the body without a CRLF."""
        self.buffer = bytearray()

    def feed(self, data: bytes) -> None:
        """The next piece of the body."""
        if self.state == DONE:
            return  # the epilogue: ignored
        self.buffer += data
        step = self._STEPS
        while step[self.state](self):
            pass

    def close(self) -> None:
        """The body has ended: it must have ended with its close delimiter."""
        if self.state == DONE:
            return
        if self.state == PREAMBLE:
            raise MultipartError(
                f"the multipart body never contains its boundary {self.boundary!r}"
            )
        if self.state == HEADERS:
            raise MultipartError("a multipart part has no end to its header block")
        raise MultipartError("the multipart body ends without its closing boundary")

    # Each step consumes what it can and says whether another step may make progress.

    def _preamble(self) -> bool:
        buffer = self.buffer
        if self.at_start:
            if len(buffer) < len(self.delimiter) and self.delimiter.startswith(buffer):
                return False  # maybe the first delimiter: wait for the rest of it
            self.at_start = False
            if buffer.startswith(self.delimiter):
                del buffer[: len(self.delimiter)]
                self.state = AFTER_DELIMITER
                return True
        found = buffer.find(self.separator)
        if found < 0:  # drop the preamble as it comes, keep what may be half a delimiter
            keep = len(self.separator) - 1
            if len(buffer) > keep:
                del buffer[:-keep]
            return False
        del buffer[: found + len(self.separator)]
        self.state = AFTER_DELIMITER
        return True

    def _after_delimiter(self) -> bool:
        buffer = self.buffer
        # Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
        padding = 0
        while padding < len(buffer) and buffer[padding] in b" \t":
            padding += 1
        if padding:
            del buffer[:padding]
        if not buffer:
            return False
        if buffer[:1] not in (b"-", b"\r"):
            raise MultipartError("a multipart boundary is not followed by CRLF")
        if len(buffer) < 2:
            return False
        if buffer.startswith(b"--"):  # the close delimiter; anything after is the epilogue
            self.state = DONE
            del buffer[:]
            return False
        if not buffer.startswith(b"\r\n"):
            raise MultipartError("a multipart boundary is not followed by CRLF")
        del buffer[:2]
        self.state = HEADERS
        return True

    def _headers(self) -> bool:
        buffer = self.buffer
        if buffer.startswith(b"\r\n"):  # a part with no header fields at all
            end, skip = 0, 2
        else:
            end, skip = buffer.find(b"\r\n\r\n"), 4
        if end < 0 or end > self.max_part_header:
            if end < 0 and len(buffer) <= self.max_part_header + 3:
                return False  # the header block is still arriving
            raise MultipartError("a multipart part has no end to its header block")
        head = buffer[:end].decode("utf-8", "replace")
        del buffer[: end + skip]
        disposition, content_type = _part_headers(head)
        self.sink.start_part(disposition, content_type)
        self.state = CONTENT
        return True

    def _content(self) -> bool:
        buffer = self.buffer
        found = buffer.find(self.separator)
        if found < 0:  # hand over all but what may be the start of the next delimiter
            keep = len(self.separator) - 1
            if len(buffer) > keep:
                self.sink.part_data(bytes(buffer[:-keep]))
                del buffer[:-keep]
            return False
        if found:
            self.sink.part_data(bytes(buffer[:found]))
        del buffer[: found + len(self.separator)]
        self.sink.end_part()
        self.state = AFTER_DELIMITER
        return True

    def _done(self) -> bool:
        return False

    _STEPS = (_preamble, _after_delimiter, _headers, _content, _done)


def _part_headers(head: str) -> tuple[str, str]:
    """A part's ``Content-Disposition`` and ``Content-Type`` (``text/plain`` when absent,
    RFC 7578 §4.4); other fields are ignored."""
    disposition = ""
    content_type = "text/plain"
    for line in head.split("\r\n") if head else ():
        name, colon, value = line.partition(":")
        if not colon:
            raise MultipartError(f"a multipart part has a malformed header line {line!r}")
        name = name.strip().lower()
        if name == "content-disposition":
            disposition = value.strip()
        elif name == "content-type":
            content_type = value.strip()
    return disposition, content_type
