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

A multipart body is parsed as it arrives (:func:`read_form`, with the incremental parser of
``multipart.py``): its text fields are kept in memory, bounded like an url-encoded form, and
its files become :class:`~pyweb.app.uploads.UploadedFile` objects, written to temporary
files as they arrive when they are big; the body is never held whole.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, unquote

from .multipart import MultipartError, MultipartParser
from .uploads import MAX_FILE_MEMORY, Hold, UploadedFile, close_all

if TYPE_CHECKING:
    from pyweb.handler import Context

__all__ = [
    "MultiDict",
    "UploadedFile",
    "FormLimits",
    "FormDataError",
    "parse_query",
    "parse_urlencoded",
    "parse_multipart",
    "read_form",
    "parse_content_type",
]


class FormDataError(ValueError):
    """A query string or form body that cannot be decoded: the client sent bad data (400).

    ``field``/``value``: the form field at fault when there is one (its 400 page names it).
    ``status``: 400, or 413 (text fields too large), 503 (no memory left for them now)."""

    def __init__(
        self, message: str, field: str | None = None, value: str = "", status: int = 400
    ) -> None:
        super().__init__(message)
        self.field = field
        self.value = value
        self.status = status


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
    that large, and its parsing costs several times its size in memory. The text fields of
    a multipart form together have the same bound."""
    max_file_memory: int = MAX_FILE_MEMORY
    """An uploaded file larger than this (1 MiB) is written to a temporary file as it
    arrives; smaller ones stay in memory while the server's body budget has room."""
    upload_dir: str | None = None
    """Where the temporary files of uploads go (``None``: the system's temporary folder;
    give a folder on the filesystem where pages move uploads to, and a move is a rename)."""
    allow_control_chars: bool = False
    """Keep C0 control characters (NUL, ESC, ...) in text fields. Off: a text field (query or
    body, not an uploaded file) holding one is a 400 naming the field. Tab, LF and CR are
    text (a ``<textarea>`` sends them) and always allowed. A browser never sends the others
    from a form; a NUL is refused by PostgreSQL's text type (it was a 500 there, and stored
    as is on SQLite and MariaDB), and terminal escapes in a value end up in logs."""


class FormVariableMissing(KeyError):
    """``conn.form["name"]`` for a variable the request did not send: a ``KeyError`` whose
    message names the variable, what was sent, and the fix (a beginner's slip)."""

    def __init__(self, name: str, sent: Iterable[str]) -> None:
        super().__init__(name)
        self.name = name
        have = ", ".join(repr(n) for n in sent) or "no variables at all"
        self.message = (
            f"form variable {name!r} was not sent (the request has {have}). "
            f"conn.form[{name!r}] needs it; conn.form.get({name!r}) gives None when it is "
            f"missing. Is the field's name attribute {name!r} (<input name={name!r}>)?"
        )

    def __str__(self) -> str:
        return self.message


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

    def __getitem__(self, name: str):
        values = self._lists.get(name)
        if not values:
            raise FormVariableMissing(name, self._lists)
        return values[-1]

    def get(self, name: str, default: Any = None) -> Any:
        # Mapping.get would go through __getitem__ and build the exception's message
        values = self._lists.get(name)
        return values[-1] if values else default

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
    if "%" not in text and "+" not in text:
        return _split_plain(text)
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


class _FormParts:
    """The sink of a :class:`~pyweb.app.multipart.MultipartParser`: text fields to memory
    (bounded by ``max_urlencoded`` in all, and counted by ``hold``), files to
    :class:`~pyweb.app.uploads.UploadedFile` (memory while small, else a temporary file)."""

    def __init__(self, limits: FormLimits, hold: Hold | None) -> None:
        self.limits = limits
        self.hold = hold
        self.fields: list[tuple[str, str]] = []
        self.files: list[tuple[str, UploadedFile]] = []
        self.name = ""
        self.upload: UploadedFile | None = None
        self.text = bytearray()
        self.charset = "utf-8"
        self.text_bytes = 0
        """Bytes of text fields so far (all of them: they stay in memory)."""

    def start_part(self, disposition: str, content_type: str) -> None:
        kind, params = _disposition_params(disposition)
        if kind != "form-data" or "name" not in params:
            raise FormDataError(
                f"a multipart part needs 'Content-Disposition: form-data; name=...', "
                f"got {disposition!r}"
            )
        _check_count(len(self.fields) + len(self.files) + 1, self.limits)
        self.name = params["name"]
        if "filename" in params:  # a file, even an empty one (an empty file input sends "")
            limits = self.limits
            self.upload = UploadedFile(
                params["filename"], content_type, max_memory=limits.max_file_memory,
                hold=self.hold, directory=limits.upload_dir,
            )  # fmt: skip
            self.files.append((self.name, self.upload))
        else:
            self.upload = None
            self.charset = parse_content_type(content_type)[1].get("charset", "utf-8")

    def part_data(self, data: bytes) -> None:
        if self.upload is not None:
            self.upload.write(data)
            return
        self.text_bytes += len(data)
        if self.text_bytes > self.limits.max_urlencoded:
            raise FormDataError(
                f"the text fields of a multipart form hold more than {self.limits.max_urlencoded} "
                "bytes (FormLimits.max_urlencoded); files have no such limit",
                status=413,
            )
        if self.hold is not None and not self.hold(len(data)):
            raise FormDataError(
                "the server holds as many request bodies in memory as it may; try again soon",
                status=503,
            )
        self.text += data

    def end_part(self) -> None:
        if self.upload is not None:
            self.upload.finish()
            return
        content, self.text = bytes(self.text), bytearray()
        try:
            self.fields.append((self.name, content.decode(self.charset)))
        except (LookupError, UnicodeDecodeError):
            raise FormDataError(
                f"form field {self.name!r} is not valid {self.charset}: {content[:40]!r}"
            ) from None


def _multipart(
    boundary: str, limits: FormLimits, hold: Hold | None
) -> tuple[MultipartParser, _FormParts]:
    parts = _FormParts(limits, hold)
    try:
        return MultipartParser(boundary, parts, limits.max_part_header), parts
    except MultipartError as err:
        raise FormDataError(str(err)) from None


def parse_multipart(
    body: bytes, boundary: str, limits: FormLimits = FormLimits()
) -> tuple[list[tuple[str, str]], list[tuple[str, UploadedFile]]]:
    """Split a whole ``multipart/form-data`` body (RFC 7578, RFC 2046 §5.1.1) into fields
    and files (:func:`read_form` does it as the body arrives).

    Returns ``(fields, files)``: text fields as ``(name, str)``, file fields as
    ``(name, UploadedFile)``. A part with a ``filename`` parameter is a file, even an empty
    one (a file input left empty sends ``filename=""``).
    """
    parser, parts = _multipart(boundary, limits, None)
    try:
        try:
            parser.feed(body)
            parser.close()
        except MultipartError as err:
            raise FormDataError(str(err)) from None
    except BaseException:
        close_all(parts.files)
        raise
    return parts.fields, parts.files


async def read_form(
    ctx: Context,
    content_type: str,
    limits: FormLimits = FormLimits(),
    query: str | None = None,
) -> tuple[MultiDict, MultiDict, bytes | None]:
    """The form of a request whose body is a form: ``(form, files, body)``.

    A multipart body is parsed as it arrives (``ctx.stream()``): text fields are kept,
    files go to :class:`~pyweb.app.uploads.UploadedFile` (on disk past
    ``max_file_memory`` or when the server's memory budget is spent), so the body is never
    held whole (``body`` is then ``None``). An url-encoded body is read whole (it is at most
    ``max_urlencoded``) and parsed with :func:`form_from`. On any error the temporary files
    made so far are removed. The caller closes the files when the request ends
    (:func:`~pyweb.app.uploads.close_all`). ``query``: the query text whose variables come
    first (None: the request's; the site passes ``""``, a POST's form being its body alone).
    """
    if query is None:
        query = ctx.request.query
    media, params = parse_content_type(content_type)
    if media != "multipart/form-data":
        body = await ctx.body()
        form, files = form_from(query, body, content_type, limits)
        return form, files, body
    if "boundary" not in params:
        raise FormDataError(f"multipart/form-data without a boundary: {content_type!r}")
    parser, parts = _multipart(params["boundary"], limits, getattr(ctx, "hold", None))
    try:
        try:
            async for piece in ctx.stream():
                parser.feed(piece)
            parser.close()
        except MultipartError as err:
            raise FormDataError(str(err)) from None
    except BaseException:
        close_all(parts.files)
        raise
    form, files = _form_of(query, parts.fields, parts.files, limits)
    return form, files, None


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
    fields: list[tuple[str, str]] = []
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
            fields = parse_urlencoded(text, limits)
        elif media == "multipart/form-data":
            if "boundary" not in params:
                raise FormDataError(f"multipart/form-data without a boundary: {content_type!r}")
            fields, files = parse_multipart(body, params["boundary"], limits)
    return _form_of(query, fields, files, limits)


def _split_plain(text: str) -> list[tuple[str, str]]:
    """What ``parse_qsl(text, keep_blank_values=True)`` gives for a query with nothing to
    decode (no ``%``, no ``+``: the everyday ``n=50&guess=25``), without its calls per field
    (its coercions and four ``unquote``): fields split at ``&``, empty ones skipped, each at
    its first ``=`` (a field without one has the value ``""``). For that query,
    ``parse_urlencoded`` 24,400 -> 7,500 instructions (callgrind), ``form_from`` 43,800 ->
    26,700; tests/app/test_formdata.py checks it against ``parse_qsl``."""
    pairs = []
    for field in text.split("&"):
        if field:
            name, _, value = field.partition("=")
            pairs.append((name, value))
    return pairs


def _form_of(
    query: str,
    fields: list[tuple[str, str]],
    files: list[tuple[str, UploadedFile]],
    limits: FormLimits,
) -> tuple[MultiDict, MultiDict]:
    """The query's variables then the body's, checked (count, control characters)."""
    try:
        pairs: list[tuple[str, object]] = list(parse_urlencoded(query, limits)) if query else []
        pairs.extend(fields)
        _check_count(len(pairs) + len(files), limits)
        if not limits.allow_control_chars:
            _check_controls(pairs)
    except BaseException:
        close_all(files)
        raise
    return MultiDict(pairs), MultiDict(files)


def is_form_body(content_type: str | None) -> bool:
    """Whether a body with this Content-Type holds form variables (read before the page runs)."""
    if not content_type:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/x-www-form-urlencoded" or media == "multipart/form-data"
