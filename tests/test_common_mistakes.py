"""docs/common-mistakes.md is true: each mistake's page, served by a real server in
development mode, answers with the status and the words the page quotes. On both loops: the
docs teach on trio, so on asyncio a page's ``trio.sleep`` is written ``asyncio.sleep``, and
the server's advice names ``asyncio.sleep`` where the quote says ``trio.sleep``."""

from __future__ import annotations

import html
import io
import re
from pathlib import Path

import pytest

import pyweb.testing
from pyweb.app.site import Site

pytestmark = pytest.mark.loops("trio", "asyncio")

DOC = (Path(__file__).resolve().parent.parent / "docs" / "common-mistakes.md").read_text()


PROCESS = "<!-- served by a real pyweb serve process"
"""Marks a section whose page only a ``pyweb serve`` process can stop (a loop that never
ends holds a server in a thread for good): its own test checks it."""


def sections() -> list[tuple[str, str, str, str]]:
    """(title, page name, URL, page source, quoted answer) for each section with a page."""
    found = []
    for part in re.split(r"^## ", DOC, flags=re.M)[1:]:
        title = part.splitlines()[0]
        code = re.search(r"```python\n(.*?)```", part, re.S)
        quote = re.findall(r"^> ?(.*)$", part, re.M)
        if code is None or not quote or PROCESS in part:
            continue
        head = re.match(r"# pages/(\w+)\.py(?:, opened as (\S+))?\n", code.group(1))
        assert head, f"{title}: the page's first line names it"
        found.append((title, head.group(1), head.group(2) or f"/{head.group(1)}",
                      code.group(1), " ".join(quote)))  # fmt: skip
    return found


def on_loop(text: str, loop: str) -> str:
    """``text`` (a page or a quote of the docs, written for trio) as it reads on ``loop``."""
    if loop == "trio":
        return text
    return text.replace("import trio", "import asyncio").replace("trio.sleep", "asyncio.sleep")


def words(text: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", text)))


@pytest.mark.parametrize("title, name, url, source, quote", sections())
def test_the_page_says_what_the_docs_say(tmp_path, title, name, url, source, quote, loop):
    source, quote = on_loop(source, loop), on_loop(quote, loop)
    site = tmp_path / "pages"
    site.mkdir()
    (site / f"{name}.py").write_text(source)
    log = io.StringIO()
    with pyweb.testing.serve(
        Site(site, dev=True, page_timeout=0.5), dev=True, error_log=log
    ) as client:
        r = client.get(url)
    status = re.match(r"\*\*(\d{3}) [^*]*\*\*", quote)
    if status:
        assert r.status == int(status.group(1)), (title, r.text)
        quote = quote[status.end() :]
    said = words(r.text) + " " + words(log.getvalue())
    for piece in quote.split("..."):
        piece = re.sub(r"\s+", " ", piece).strip()
        if piece:
            piece = re.sub(r"held the server for [\d.]+ s", "held the server for", piece)
            assert piece in re.sub(r"held the server for [\d.]+ s", "held the server for", said), (
                title,
                piece,
                said,
            )


def test_every_mistake_with_a_page_is_checked():
    assert len(sections()) >= 8
