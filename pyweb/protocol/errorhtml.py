"""The HTML of error pages: a small styled page, and a traceback that starts with your code.

Marlow §3.2 answers an invalid request with "some automatically generated HTML describing
the error". A student reads that page more often than any other, so it is a real page: its
own inline stylesheet (it must work when the site's stylesheet is what is broken), the
status in words, one sentence, and a link home (:func:`page`).

In development mode the page also carries the traceback, written for the person who wrote
the page (:func:`traceback_html`): the frames of the site's own files come first, each with
the source lines around the failing one; the frames of pyweb, trio, outcome and other
libraries are folded away under one line; a ``SyntaxError`` shows its line with a caret
under the place Python stopped. Everything interpolated is escaped: a traceback repeats
whatever a client sent.

Pure functions of their arguments (no I/O but reading source lines through
:mod:`linecache`), so they render the same in the server, a notebook or a test.
"""

from __future__ import annotations

import html
import linecache
import traceback
from collections.abc import Callable, Iterable

__all__ = ["STYLE", "page", "traceback_html", "syntax_error_html"]

STYLE = """
body{margin:0;background:#f6f7f9;color:#1d2330;font:16px/1.5 system-ui,-apple-system,
"Segoe UI",Roboto,Helvetica,Arial,sans-serif}
main{max-width:52rem;margin:3rem auto;padding:2rem 2.5rem;background:#fff;
border:1px solid #dde1e7;border-radius:10px;box-shadow:0 2px 8px rgba(0,0,0,.05)}
h1{margin:.1rem 0 1rem;font-size:1.8rem;line-height:1.2}
p{margin:.6rem 0}
.detail{background:#fff4e5;border-left:4px solid #e0a030;padding:.6rem .9rem;
white-space:pre-wrap;overflow-wrap:anywhere}
.log{color:#555}
h2{font-size:1.05rem;margin:1.6rem 0 .5rem}
.exc{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-weight:600;
color:#b3261e;white-space:pre-wrap;overflow-wrap:anywhere}
.frame{margin:.8rem 0;border:1px solid #dde1e7;border-radius:6px;overflow:hidden}
.where{background:#eef1f5;padding:.3rem .7rem;font-size:.9rem}
.where code{font-weight:600}
pre{margin:0;padding:.5rem .7rem;overflow-x:auto;font:13px/1.45 ui-monospace,
SFMono-Regular,Menlo,Consolas,monospace}
pre .hit{display:block;background:#fde2e1;font-weight:600}
pre .caret{display:block;color:#b3261e;font-weight:700}
details{margin:.8rem 0}
summary{cursor:pointer;color:#445}
details pre{background:#f3f4f6;border-radius:6px;white-space:pre-wrap}
table{border-collapse:collapse;margin:1rem 0;width:100%}
th,td{border:1px solid #dde1e7;padding:.4rem .6rem;text-align:left;vertical-align:top}
th{background:#eef1f5}
a{color:#0b57d0}
.home{margin-top:1.8rem}
""".replace("\n", "")


def page(
    status: int,
    title: str,
    sentence: str,
    *,
    body_html: str = "",
) -> str:
    """A complete, styled error page: ``status`` and ``title`` (the reason phrase), one
    ``sentence``, then ``body_html`` (already escaped HTML), then a link home."""
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{status} {html.escape(title)}</title><style>{STYLE}</style></head>\n"
        "<body>\n<main>\n"
        f"<h1>{status} {html.escape(title)}</h1>\n"
        f"<p>{html.escape(sentence)}</p>\n"
        f"{body_html}"
        '<p class="home"><a href="/">Back to the home page</a></p>\n'
        "</main>\n</body>\n</html>\n"
    )


def _source(filename: str, line: int, around: int = 3) -> str:
    """Lines ``line - around`` .. ``line + around`` of ``filename``, the failing one marked."""
    rows = []
    for number in range(max(1, line - around), line + around + 1):
        text = linecache.getline(filename, number)
        if not text and number > line:
            break
        row = f"{number:>4}  {html.escape(text.rstrip())}"
        rows.append(f'<span class="hit">{row}</span>' if number == line else row + "\n")
    return "<pre>" + "".join(rows) + "</pre>"


def syntax_error_html(err: SyntaxError, display: Callable[[str], str] = str) -> str:
    """Where Python stopped reading: the file and line, the line itself, a caret under the
    place (and the lines just before it, where an unclosed bracket usually starts)."""
    filename = err.filename or "<unknown>"
    line = err.lineno or 1
    text = err.text if err.text is not None else linecache.getline(filename, line)
    rows = []
    for number in range(max(1, line - 2), line):
        before = linecache.getline(filename, number)
        rows.append(f"{number:>4}  {html.escape(before.rstrip())}\n")
    rows.append(f'<span class="hit">{line:>4}  {html.escape((text or "").rstrip())}</span>')
    offset = err.offset or 0
    if offset > 0:
        width = max(1, (err.end_offset or offset + 1) - offset) if err.end_lineno == line else 1
        rows.append(f'<span class="caret">      {" " * (offset - 1)}{"^" * width}</span>')
    return (
        f'<div class="frame"><div class="where"><code>{html.escape(display(filename))}</code>, '
        f"line {line}</div><pre>{''.join(rows)}</pre></div>\n"
    )


def _chain(exc: BaseException) -> list[BaseException]:
    """The exceptions of a chain, the cause first (as Python prints them)."""
    chain: list[BaseException] = []
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        chain.append(current)
        if current.__cause__ is not None:
            current = current.__cause__
        elif current.__context__ is not None and not current.__suppress_context__:
            current = current.__context__
        else:
            current = None
    return chain[::-1]


def _frames_html(
    frames: Iterable[traceback.FrameSummary],
    own: Callable[[str], bool],
    display: Callable[[str], str],
) -> tuple[str, int]:
    """The site's own frames with their source, and how many others were folded."""
    parts = []
    folded = 0
    for frame in frames:
        if not own(frame.filename):
            folded += 1
            continue
        line = frame.lineno or 1
        parts.append(
            f'<div class="frame"><div class="where"><code>{html.escape(display(frame.filename))}'
            f"</code>, line {line}, in <code>{html.escape(frame.name)}</code></div>"
            f"{_source(frame.filename, line)}</div>\n"
        )
    return "".join(parts), folded


def traceback_html(
    exc: BaseException,
    own: Callable[[str], bool] = lambda filename: False,
    display: Callable[[str], str] = str,
) -> str:
    """The development-mode traceback of ``exc``: for each exception of its chain, its
    type and message, then the frames in files for which ``own(filename)`` is true (the
    site's), each with source lines around the failing line; every other frame (pyweb,
    trio, outcome, the standard library) is folded into a ``<details>`` holding Python's
    own traceback text. A ``SyntaxError`` adds its line with a caret."""
    out = ["<h2>What went wrong, your code first</h2>\n"]
    for item in _chain(exc):
        message = "".join(traceback.format_exception_only(type(item), item)).strip()
        if isinstance(item, SyntaxError):
            message = f"{type(item).__name__}: {item.msg}"
        out.append(f'<p class="exc">{html.escape(message)}</p>\n')
        frames = traceback.extract_tb(item.__traceback__)
        mine, folded = _frames_html(frames, own, display)
        out.append(mine)
        if isinstance(item, SyntaxError) and item.filename:
            out.append(syntax_error_html(item, display))
        if folded:
            text = "".join(
                traceback.format_exception(type(item), item, item.__traceback__, chain=False)
            )
            label = "frame" if folded == 1 else "frames"
            opened = "" if mine else " open"  # nothing of the site's: show it all
            out.append(
                f"<details{opened}><summary>{folded} {label} in pyweb, trio and other libraries "
                f"(Python's full traceback)</summary><pre>{html.escape(text)}</pre></details>\n"
            )
    return "".join(out)
