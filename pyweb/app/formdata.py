"""Form data: the query string and request bodies turned into name → values (SMLserver §2.3).

SMLserver's ``FormVar`` reads "the query data": the variables of the URL's query string and,
for a POST, of the body. Browsers send a body in one of two encodings (HTML Living Standard,
"Form submission"):

* ``application/x-www-form-urlencoded``: ``name=value&name=value``, the same syntax as a
  query string (WHATWG URL §5, "application/x-www-form-urlencoded parsing");
* ``multipart/form-data`` (RFC 7578): one MIME part per field, each with a
  ``Content-Disposition: form-data; name="..."`` header; a file input adds ``filename=``.

Both end in a :class:`MultiDict`, because a name may repeat (``<select multiple>``, several
checkboxes with one name). ``form["n"]`` is the *last* value, the rule ``pyweb.forms`` uses
too; ``form.getall("n")`` is every value, in order.

Bad input is the client's fault and ends in a :class:`FormDataError` (a 400 page naming what
was wrong): text that is not UTF-8, a multipart body without its boundary or with a broken
part, more fields than :class:`FormLimits` allows. The body's total size is bounded earlier,
by the server's ``max_body`` (413).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote

__all__ = [
    "MultiDict",
    "UploadedFile",
    "FormLimits",
    "FormDataError",
    "parse_query",
    "parse_urlencoded",
    "parse_multipart",
    "parse_content_type",
]


class FormDataError(ValueError):
    """A query string or form body that cannot be decoded: the client sent bad data (400).

    ``field``/``value``: the form field at fault when there is one (its 400 page names it)."""

    def __init__(self, message: str, field: str | None = None, value: str = "") -> None:
        super().__init__(message)
        self.field = field
        self.value = value


@dataclass(frozen=True, slots=True)
class FormLimits:
    """Bounds on what one request's form may hold (the body's bytes are bounded by ``max_body``)."""

    max_fields: int = 1000
    """Fields in the query string plus the body; more is a 400 (a cheap denial of service)."""
    max_part_header: int = 8 * 1024
    """Bytes of the header block of one multipart part."""
    max_urlencoded: int = 1024 * 1024
    """Largest ``application/x-www-form-urlencoded`` body (→ 413). Smaller than the
    server's ``max_body`` (16 MiB), which bounds uploads (multipart): a text form is never
    that large, and its parsing costs several times its size in memory."""
    allow_control_chars: bool = False
    """Keep C0 control characters (NUL, ESC, ...) in text fields. Off: a text field (query or
    body, not an uploaded file) holding one is a 400 naming the field. Tab, LF and CR are
    text (a ``<textarea>`` sends them) and always allowed. A browser never sends the others
    from a form; a NUL is refused by PostgreSQL's text type (it was a 500 there, and stored
    as is on SQLite and MariaDB), and terminal escapes in a value end up in logs."""


@dataclass(frozen=True, slots=True)
class UploadedFile:
    """A file from a ``<input type=file>`` field of a multipart form."""

    filename: str
    """The name the browser gave (never trust it as a path: it is the user's input)."""
    content_type: str
    data: bytes

    def __repr__(self) -> str:
        return f"UploadedFile({self.filename!r}, {self.content_type!r}, {len(self.data)} bytes)"


class MultiDict(Mapping[str, str]):
    """Names mapped to one or more values; ``d[name]`` is the last value, ``getall`` all of them.

    >>> d = MultiDict([("a", "1"), ("b", "2"), ("a", "3")])
    >>> d["a"], d.getall("a"), list(d)
    ('3', ['1', '3'], ['a', 'b'])
    """

    __slots__ = ("_lists", "_pairs")

    def __init__(self, pairs: Iterable[tuple[str, object]] = ()) -> None:
        self._pairs: list[tuple[str, object]] = []
        self._lists: dict[str, list] = {}
        for name, value in pairs:
            self.add(name, value)

    def add(self, name: str, value: object) -> None:
        self._pairs.append((name, value))
        self._lists.setdefault(name, []).append(value)

    def __getitem__(self, name: str):  # type: ignore[override]
        return self._lists[name][-1]

    def getall(self, name: str) -> list:
        """Every value given for ``name``, in the order sent; ``[]`` when there is none."""
        return list(self._lists.get(name, ()))

    def multi_items(self) -> list[tuple[str, object]]:
        """Every (name, value) pair, repeats included, in the order sent."""
        return list(self._pairs)

    def __iter__(self) -> Iterator[str]:
        return iter(self._lists)

    def __len__(self) -> int:
        return len(self._lists)

    def __contains__(self, name: object) -> bool:
        return name in self._lists

    def __repr__(self) -> str:
        return f"MultiDict({self._pairs!r})"


# C0 controls but HTAB, LF, CR (what a <textarea> sends).
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _check_controls(pairs: list[tuple[str, object]]) -> None:
    """A :class:`FormDataError` naming the first text field (name or value) that holds a
    control character (see :attr:`FormLimits.allow_control_chars`)."""
    search = _CONTROL.search
    for name, value in pairs:
        for text in (name, value):
            if type(text) is str and (found := search(text)):
                char = found.group()
                raise FormDataError(
                    f"form field {name!r} contains the control character U+{ord(char):04X}; "
                    "a form's text never does (a site that needs them sets "
                    "FormLimits(allow_control_chars=True))",
                    field=name,
                    value=value if type(value) is str else "",
                )


def _check_count(count: int, limits: FormLimits) -> None:
    if count > limits.max_fields:
        raise FormDataError(
            f"too many form fields: {count} (at most {limits.max_fields} are accepted)"
        )


def parse_urlencoded(text: str, limits: FormLimits = FormLimits()) -> list[tuple[str, str]]:
    """``a=1&b=two+words`` → ``[("a", "1"), ("b", "two words")]``; keeps empty values.

    Percent-escapes must decode to UTF-8: anything else is a :class:`FormDataError` naming
    the offending text (the browser always sends UTF-8 for a UTF-8 page).
    """
    if not text:
        return []
    _check_count(text.count("&") + 1, limits)
    try:
        return parse_qsl(text, keep_blank_values=True, encoding="utf-8", errors="strict")
    except UnicodeDecodeError:
        shown = text if len(text) <= 80 else text[:77] + "..."
        raise FormDataError(
            f"form data is not valid UTF-8 after decoding %-escapes: {shown!r}"
        ) from None


def parse_query(query: str, limits: FormLimits = FormLimits()) -> MultiDict:
    """The variables of a URL's query string (the part after ``?``)."""
    return MultiDict(parse_urlencoded(query, limits))


# RFC 9110 §5.6.6 parameters: ; name=token or ; name="quoted string"
_PARAM = re.compile(r';\s*([^\s=;]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^;]*)')


def parse_content_type(value: str) -> tuple[str, dict[str, str]]:
    """``'multipart/form-data; boundary="x y"'`` → ``('multipart/form-data', {'boundary': 'x y'})``.

    The media type is lower-cased; parameter names are lower-cased; quoted values lose their
    quotes and backslash escapes (RFC 9110 §5.6.4).
    """
    media, _, rest = value.partition(";")
    params: dict[str, str] = {}
    for match in _PARAM.finditer(";" + rest):
        name, raw = match.group(1).lower(), match.group(2).strip()
        if raw.startswith('"') and raw.endswith('"') and len(raw) >= 2:
            raw = re.sub(r"\\(.)", r"\1", raw[1:-1])
        params[name] = raw
    return media.strip().lower(), params


def _disposition_params(value: str) -> tuple[str, dict[str, str]]:
    kind, params = parse_content_type(value)
    # RFC 5987 / RFC 7578 §4.2: filename*=UTF-8''%e2%82%ac.txt takes precedence over filename=
    star = params.get("filename*")
    if star is not None:
        charset, _, encoded = star.partition("''")
        try:
            params["filename"] = unquote(encoded, encoding=charset or "utf-8", errors="strict")
        except (LookupError, UnicodeDecodeError):
            raise FormDataError(f"cannot decode the file name {star!r}") from None
    return kind, params


def parse_multipart(
    body: bytes, boundary: str, limits: FormLimits = FormLimits()
) -> tuple[list[tuple[str, str]], list[tuple[str, UploadedFile]]]:
    """Split a ``multipart/form-data`` body (RFC 7578, RFC 2046 §5.1.1) into fields and files.

    Returns ``(fields, files)``: text fields as ``(name, str)``, file fields as
    ``(name, UploadedFile)``. A part with a ``filename`` parameter is a file, even an empty
    one (a file input left empty sends ``filename=""``).
    """
    if not boundary or len(boundary) > 70:
        raise FormDataError(f"a multipart boundary has 1 to 70 characters, got {boundary!r}")
    delimiter = b"--" + boundary.encode("latin-1")
    # The first delimiter may follow a preamble; every later one follows a CRLF.
    if body.startswith(delimiter):
        pos = len(delimiter)
    else:
        found = body.find(b"\r\n" + delimiter)
        if found < 0:
            raise FormDataError(f"the multipart body never contains its boundary {boundary!r}")
        pos = found + 2 + len(delimiter)
    separator = b"\r\n" + delimiter
    fields: list[tuple[str, str]] = []
    files: list[tuple[str, UploadedFile]] = []
    while True:
        if body.startswith(b"--", pos):
            return fields, files  # the close delimiter; anything after is the epilogue
        # Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
        while pos < len(body) and body[pos] in b" \t":
            pos += 1
        if not body.startswith(b"\r\n", pos):
            raise FormDataError("a multipart boundary is not followed by CRLF")
        pos += 2
        head_end = body.find(b"\r\n\r\n", pos)
        if head_end < 0 or head_end - pos > limits.max_part_header:
            if head_end < 0 and body.startswith(b"\r\n", pos):
                head_end = pos - 2  # a part with no header fields at all
            else:
                raise FormDataError("a multipart part has no end to its header block")
        head = body[pos:head_end].decode("utf-8", "replace")
        pos = head_end + 4
        end = body.find(separator, pos)
        if end < 0:
            raise FormDataError("the multipart body ends without its closing boundary")
        content = body[pos:end]
        pos = end + len(separator)

        disposition = ""
        content_type = "text/plain"
        for line in head.split("\r\n") if head else ():
            name, colon, value = line.partition(":")
            if not colon:
                raise FormDataError(f"a multipart part has a malformed header line {line!r}")
            name = name.strip().lower()
            if name == "content-disposition":
                disposition = value.strip()
            elif name == "content-type":
                content_type = value.strip()
        kind, params = _disposition_params(disposition)
        if kind != "form-data" or "name" not in params:
            raise FormDataError(
                f"a multipart part needs 'Content-Disposition: form-data; name=...', "
                f"got {disposition!r}"
            )
        _check_count(len(fields) + len(files) + 1, limits)
        field_name = params["name"]
        if "filename" in params:
            files.append((field_name, UploadedFile(params["filename"], content_type, content)))
        else:
            charset = parse_content_type(content_type)[1].get("charset", "utf-8")
            try:
                fields.append((field_name, content.decode(charset)))
            except (LookupError, UnicodeDecodeError):
                raise FormDataError(
                    f"form field {field_name!r} is not valid {charset}: {content[:40]!r}"
                ) from None


def form_from(
    query: str,
    body: bytes | None,
    content_type: str | None,
    limits: FormLimits = FormLimits(),
) -> tuple[MultiDict, MultiDict]:
    """The form of one request: query variables then body variables, and the uploaded files.

    Body variables come after the query's, so for a name given in both ``form[name]``
    (the last value) is the body's: what the user typed wins over the action URL.
    """
    pairs: list[tuple[str, object]] = list(parse_urlencoded(query, limits)) if query else []
    files: list[tuple[str, UploadedFile]] = []
    if body and content_type:
        media, params = parse_content_type(content_type)
        if media == "application/x-www-form-urlencoded":
            try:
                text = body.decode("ascii")
            except UnicodeDecodeError:
                raise FormDataError(
                    f"an urlencoded body must be ASCII (non-ASCII is %-escaped): {body[:40]!r}"
                ) from None
            pairs.extend(parse_urlencoded(text, limits))
        elif media == "multipart/form-data":
            if "boundary" not in params:
                raise FormDataError(f"multipart/form-data without a boundary: {content_type!r}")
            fields, files = parse_multipart(body, params["boundary"], limits)
            pairs.extend(fields)
    _check_count(len(pairs) + len(files), limits)
    if not limits.allow_control_chars:
        _check_controls(pairs)
    return MultiDict(pairs), MultiDict(files)


def is_form_body(content_type: str | None) -> bool:
    """Whether a body with this Content-Type holds form variables (read before the page runs)."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/x-www-form-urlencoded" or media == "multipart/form-data"


def as_mapping(d: Mapping[str, object]) -> MultiDict:
    """A plain dict (values str or list) as a :class:`MultiDict` (for tests and notebooks)."""
    pairs: list[tuple[str, object]] = []
    for name, value in d.items():
        if isinstance(value, list | tuple):
            pairs.extend((name, v) for v in value)
        else:
            pairs.append((name, value))
    return MultiDict(pairs)
