"""The checks of exercise notebooks: a response turned into a plain-English verdict.

:func:`expect`, :func:`expect_form` and :func:`expect_table` look at what a student's page
answered and say, in words a student understands, what is wrong: "Your page answered 500
...; the error was NameError: ... (line 3 of temperature.py)". A failed check is a
:class:`CheckFailed`, shown in a notebook as one red line without a traceback. This is the
check half of pyweb's exercise notebooks (``notebook/``), in the spirit of the SMLserver
book's exercises (chapters 3-9): a page is tried with a few inputs and its answer judged.
"""

from __future__ import annotations

import html
import os
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from pyweb.testing import TestResponse
from pyweb.testing.client import CSRF_FIELD

__all__ = [
    "CheckFailed",
    "explain_error",
    "expect",
    "expect_form",
    "expect_table",
    "forms_on",
    "tables_on",
    "list_items",
    "run_async",
]


class CheckFailed(AssertionError):
    """A check in an exercise notebook failed; the message says what to fix."""

    def _render_traceback_(self) -> list[str]:
        # IPython's hook for exceptions that format themselves: a failed check is a
        # message for a student, not a bug, so no traceback into this module. The cell
        # still fails (nbclient and nbmake see ename "CheckFailed").
        return [f"\x1b[1;31mCheck failed:\x1b[0m {self}"]


_TRACEBACK = re.compile(r"<strong>Traceback:</strong></p>\s*<pre>(.*?)</pre>", re.DOTALL)
_DETAIL = re.compile(r"<strong>Detail:</strong>\s*(.*?)</p>", re.DOTALL)
# pyweb's error pages (pyweb/protocol/errorhtml.py): the exceptions of the chain, the
# site's own frames (file and line), the detail sentence
_EXCEPTION = re.compile(r'<p class="exc">(.*?)</p>', re.DOTALL)
_OWN_FRAME = re.compile(r'<div class="where"><code>([^<]*)</code>, line (\d+)')
_DETAIL_BOX = re.compile(r'<p class="detail">(.*?)</p>', re.DOTALL)
_FOLDED = re.compile(r"<details[^>]*><summary>.*?</summary><pre>(.*?)</pre>", re.DOTALL)
_FILE_LINE = re.compile(r'File "([^"]+)", line (\d+)')


def _library_dirs() -> tuple[Path, ...]:
    """Where the code that is not the student's lives: the installed pyweb package (not any
    folder that happens to be called ``pyweb``: a clone of the repository is one), the
    standard library, and the installed packages (trio, jinja2, ...)."""
    import sysconfig

    import pyweb

    paths = sysconfig.get_paths()
    dirs = [Path(pyweb.__file__).resolve().parent]
    dirs += [Path(paths[key]).resolve() for key in ("stdlib", "purelib", "platlib") if key in paths]
    return tuple(dirs)


def _is_library_file(file: str) -> bool:
    if file.startswith("<"):  # <frozen ...>, <string>
        return True
    path = Path(file).resolve()
    return any(path.is_relative_to(d) for d in _library_dirs())


def explain_error(response: TestResponse) -> str:
    """What went wrong, in one or two sentences, from a (dev-mode) error page."""
    text = response.text
    exceptions = _EXCEPTION.findall(text)
    if exceptions:
        last = html.unescape(exceptions[-1]).strip()
        frames = _OWN_FRAME.findall(text)  # the site's own code only: the page's lines
        where = ""
        if frames:
            file, number = frames[-1]
            where = f" (line {number} of {os.path.basename(html.unescape(file))})"
        else:  # no site (a handler function): Python's traceback, folded, names the files
            for folded in _FOLDED.findall(text):
                for file, number in _FILE_LINE.findall(html.unescape(folded)):
                    if not _is_library_file(file):
                        where = f" (line {number} of {os.path.basename(file)})"
        return f"the error was {last}{where}"
    found = _TRACEBACK.search(text)
    if found:
        lines = [ln for ln in html.unescape(found.group(1)).splitlines() if ln.strip()]
        last = lines[-1].strip() if lines else ""
        where = ""
        for file, number in _FILE_LINE.findall(html.unescape(found.group(1))):
            if not _is_library_file(file):  # the last frame of the student's own code
                where = f" (line {number} of {os.path.basename(file)})"
        return f"the error was {last}{where}"
    detail = _DETAIL.search(text) or _DETAIL_BOX.search(text)
    if detail:
        return f"the server said: {html.unescape(detail.group(1)).strip()}"
    return "the page gave no further detail"


def no_token_sentence(what: str) -> str:
    """Why a POST form without the CSRF field fails, and what to write (shared by
    :func:`expect_form` and :meth:`NotebookServer.submit`)."""
    return (
        f"{what[:1].upper()}{what[1:]} is sent with method=post but carries no CSRF token, so "
        f"the server refuses it (403 Forbidden), here as under `make run`: another site "
        f"could post it in the visitor's name. Put the hidden field inside the <form>: "
        f"{{csrf_field()}} in the quotation (from pyweb import csrf_field)."
    )


def _visible_text(page: str) -> str:
    """The page without its tags, the way a reader sees it (for 'we expected ... on the page')."""
    without = re.sub(r"(?is)<(script|style)\b.*?</\1>", " ", page)
    without = re.sub(r"<[^>]+>", " ", without)
    return re.sub(r"\s+", " ", html.unescape(without)).strip()


def expect(
    response: TestResponse,
    *,
    status: int | None = 200,
    contains: str | list[str] | None = None,
    not_contains: str | list[str] | None = None,
    matches: str | None = None,
    content_type: str | None = None,
    message: str = "",
    says: str | list[str] | None = None,
    number: float | None = None,
) -> TestResponse:
    """Check a response; raise :class:`CheckFailed` with a plain-English message.

    ``contains``/``not_contains`` look at the text of the page (tags removed, entities
    decoded) and at its source; ``matches`` is a regular expression searched in the text.
    ``says`` looks at the text a reader sees only, never the source (a form's field names
    do not count), as whole words and numbers: ``"98.6"`` is not found in ``98.60000001``
    nor ``"2 entries"`` in ``12 entries``. ``number`` is a number the text must show, however
    it is written (``5``, ``5.0``). ``message`` says what was being tried ("For c=100 ...")
    and starts the failure text. Returns the response, so checks can be chained."""
    __tracebackhide__ = True  # pytest shows the message, not this function
    lead = (message.rstrip(".") + ". ") if message else ""
    if status is not None and response.status != status:
        why = ""
        if response.status >= 500:
            why = "; " + explain_error(response)
        elif response.status == 404:
            why = "; is the page written (run the cell with your page) and is its name right?"
        elif response.status >= 400:
            why = "; " + explain_error(response)
        sentence = (
            f"{lead}Your page answered {response.status} {response.reason} instead of {status}{why}"
        )
        raise CheckFailed(sentence if sentence.endswith((".", "?")) else sentence + ".")
    if content_type is not None and response.content_type != content_type:
        raise CheckFailed(
            f"{lead}We expected content type {content_type}, "
            f"the page said {response.content_type or 'nothing'}."
        )
    text = _visible_text(response.text)
    for wanted in [contains] if isinstance(contains, str) else contains or []:
        if wanted not in text and wanted not in response.text:
            raise CheckFailed(
                f"{lead}We expected {wanted!r} somewhere on the page; it was not there. "
                f"The page says: {_shorten(text)}"
            )
    for unwanted in [not_contains] if isinstance(not_contains, str) else not_contains or []:
        if unwanted in text:
            raise CheckFailed(
                f"{lead}{unwanted!r} should not be on the page, but it is. "
                f"The page says: {_shorten(text)}"
            )
    for wanted in [says] if isinstance(says, str) else says or []:
        if not _says(text, wanted):
            raise CheckFailed(
                f"{lead}We expected the page to say {wanted!r}; it does not"
                f"{_near_miss(text, wanted)}. The page says: {_shorten(text)}"
            )
    if number is not None and not any(
        abs(float(found) - number) < 1e-9 for found in _NUMBER.findall(text)
    ):
        raise CheckFailed(
            f"{lead}We expected the number {number:g} on the page; it is not there. "
            f"The page says: {_shorten(text)}"
        )
    if matches is not None and not re.search(matches, text):
        raise CheckFailed(
            f"{lead}Nothing on the page looks like {matches!r}. The page says: {_shorten(text)}"
        )
    return response


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")


def _bounded(wanted: str) -> re.Pattern[str]:
    # a word or number is not found inside a longer one: "98.6" not in "98.60000000000001"
    before = r"(?<![\w.])" if wanted[:1].isalnum() else ""
    after = r"(?![\w]|\.\d)" if wanted[-1:].isalnum() else ""
    return re.compile(before + re.escape(wanted) + after)


def _says(text: str, wanted: str) -> bool:
    return bool(wanted) and _bounded(wanted).search(text) is not None


def _near_miss(text: str, wanted: str) -> str:
    """", only inside '98.60000000000001'" when the words are there inside a longer one."""
    at = text.find(wanted)
    if at < 0:
        return ""
    start, end = at, at + len(wanted)
    while start > 0 and (text[start - 1].isalnum() or text[start - 1] == "."):
        start -= 1
    while end < len(text) and (text[end].isalnum() or text[end] == "."):
        end += 1
    return f", only inside {text[start:end].rstrip('.')!r}"


class _ListFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.items: list[list[str]] = []
        self._depth = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "li":
            self.items.append([])
            self._depth += 1

    def handle_data(self, data: str) -> None:
        if self._depth and self.items:
            self.items[-1].append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "li" and self._depth:
            self._depth -= 1


def list_items(response: TestResponse | str) -> list[str]:
    """The text of each ``<li>`` element of a page, whatever its attributes
    (``<li class="s">`` counts as an item)."""
    finder = _ListFinder()
    finder.feed(response if isinstance(response, str) else response.text)
    finder.close()
    return [" ".join("".join(parts).split()) for parts in finder.items]


class _Stuck(BaseException):
    """Raised inside a function that ran past its time (see :func:`run_async`)."""


def _forgotten_await(value: Any) -> bool:
    import inspect

    values = value if isinstance(value, (tuple, list)) else [value]
    return any(inspect.isawaitable(v) for v in values)


def run_async(function: Any, *args: Any, seconds: float = 2.0, what: str = "") -> Any:
    """``function(*args)`` (an async function) run with trio and its result, with a time
    guard: :class:`CheckFailed` when it has not returned after ``seconds`` (a loop that never
    awaits is stopped too, which ``trio.move_on_after`` cannot do), and when it returns a
    coroutine or an event instead of a value (a forgotten ``await``). ``what`` names the call
    in the sentence ("first_of(a, b)")."""
    import ctypes
    import threading

    import trio

    name = what or f"{getattr(function, '__name__', 'the function')}(...)"
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = trio.run(function, *args)
        except _Stuck:
            pass
        except BaseException as exc:  # the student's error, shown as it is
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True, name=f"check {name}")
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        # stop it: an exception raised in the thread at its next bytecode, even in a busy loop
        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident or 0),
                                                   ctypes.py_object(_Stuck))  # fmt: skip
        thread.join(1.0)
        raise CheckFailed(
            f"{name} did not return within {seconds:g} s. Is there a loop that never awaits "
            "(a while loop without await inside never lets another task run), a receive that "
            "waits for a value nobody sends, or two tasks racing for one value?"
        )
    if "error" in outcome:
        raise outcome["error"]
    value = outcome.get("value")
    if _forgotten_await(value):
        shown = repr(value)
        import inspect

        for item in value if isinstance(value, (tuple, list)) else [value]:
            if inspect.iscoroutine(item):
                item.close()  # a coroutine never run: no "never awaited" warning on top
        raise CheckFailed(
            f"{name} gave {shown} instead of a value: a forgotten await? An async call "
            "gives a coroutine (or an event) until you await it: write await select(...)."
        )
    return value


class _FormFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, Any]] = []
        self._open: dict[str, Any] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {k: v or "" for k, v in attrs}
        if tag == "form":
            self._open = {
                "action": attributes.get("action", ""),
                "method": (attributes.get("method") or "get").lower(),
                "fields": [],
                "values": {},
            }
            self.forms.append(self._open)
        elif tag in ("input", "select", "textarea", "button") and self._open is not None:
            name = attributes.get("name")
            if name:
                self._open["fields"].append(name)
                kind = attributes.get("type", "text").lower()
                if tag == "input" and kind not in ("submit", "button", "checkbox", "radio"):
                    self._open["values"][name] = attributes.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._open = None


def forms_on(response: TestResponse | str) -> list[dict[str, Any]]:
    """The forms of a page: ``[{"action": ..., "method": "get"|"post", "fields": [names],
    "values": {name: value of its input element}}]``."""
    finder = _FormFinder()
    finder.feed(response if isinstance(response, str) else response.text)
    finder.close()
    return finder.forms


def expect_form(response: TestResponse, fields: list[str], *, message: str = "") -> dict[str, Any]:
    """Check that the page has a form with (at least) the named ``fields``; return it.
    Raise :class:`CheckFailed` saying what the page has instead."""
    __tracebackhide__ = True  # pytest shows the message, not this function
    lead = (message.rstrip(".") + ". ") if message else ""
    expect(response, message=message)
    forms = forms_on(response)
    wanted = ", ".join(repr(f) for f in fields)
    if not forms:
        raise CheckFailed(
            f"{lead}We expected a form (a <form> element) with fields {wanted}; the page has "
            f"no form. The page says: {_shorten(_visible_text(response.text))}"
        )
    for form in forms:
        if all(f in form["fields"] for f in fields):
            if form["method"] == "post" and CSRF_FIELD not in form["fields"]:
                raise CheckFailed(lead + no_token_sentence("the form"))
            return form
    have = "; ".join(
        ", ".join(repr(f) for f in form["fields"] if f != CSRF_FIELD) or "no named fields"
        for form in forms
    )
    raise CheckFailed(
        f"{lead}We expected a form with fields {wanted}; the page's form has {have}. "
        'A field gets its name from the name attribute: <input name="...">.'
    )


class _TableFinder(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.tables.append([])
        elif tag == "tr" and self.tables:
            self.tables[-1].append([])
        elif tag in ("td", "th") and self.tables:
            if not self.tables[-1]:  # a cell before any <tr>: browsers open a row
                self.tables[-1].append([])
            self._cell = []

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None and self.tables:
            self.tables[-1][-1].append(" ".join("".join(self._cell).split()))
            self._cell = None


def expect_table(
    response: TestResponse, rows: list[list[Any]], *, message: str = "", header: bool = False
) -> list[list[str]]:
    """Check that the first table of the page has exactly ``rows`` (cells compared as
    text, ``str(value)``); return the table. :class:`CheckFailed` says where it differs.
    With ``header=True`` a first row of headings above those rows is allowed (and skipped)."""
    __tracebackhide__ = True  # pytest shows the message, not this function
    lead = (message.rstrip(".") + ". ") if message else ""
    expect(response, message=message)
    wanted = [[str(cell) for cell in row] for row in rows]
    tables = tables_on(response)
    width = len(wanted[0]) if wanted else 0
    shape = f"{_count_of(len(wanted), 'row')} of {_count_of(width, 'cell')}"
    if not tables:
        raise CheckFailed(
            f"{lead}We expected a table (a <table> element) with {shape}; the page has no "
            f"table. The page says: {_shorten(_visible_text(response.text))}"
        )
    table = tables[0]
    if header and len(table) == len(wanted) + 1 and table[:1] != wanted[:1]:
        table = table[1:]  # the headings the task allows
    if len(table) != len(wanted):
        raise CheckFailed(
            f"{lead}We expected a table with {shape}; yours has {_count_of(len(table), 'row')}"
            + (f" (the first is {table[0]})." if table else ".")
        )
    for i, (got_row, want_row) in enumerate(zip(table, wanted, strict=True), 1):
        if len(got_row) != len(want_row):
            raise CheckFailed(
                f"{lead}Row {i} should have {_count_of(len(want_row), 'cell')}, {want_row}; "
                f"it has {len(got_row)}: {got_row}."
            )
        for j, (got, want) in enumerate(zip(got_row, want_row, strict=True), 1):
            if got != want:
                raise CheckFailed(f"{lead}Row {i}, column {j} should be {want!r}; it is {got!r}.")
    return table


def tables_on(response: TestResponse | str) -> list[list[list[str]]]:
    """The tables of a page, each a list of rows, each row a list of cell texts."""
    finder = _TableFinder()
    finder.feed(response if isinstance(response, str) else response.text)
    finder.close()
    return [[row for row in table if row] for table in finder.tables]


def _count_of(number: int, thing: str) -> str:
    return f"{number} {thing}" + ("" if number == 1 else "s")


def _shorten(text: str, limit: int = 200) -> str:
    text = text or "(nothing)"
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")
