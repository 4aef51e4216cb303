"""docs/request-path.md shows ``Connection.talk`` beside Marlow's ``talk``: it must show the
code as it is, or a student reads one loop and debugs another."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

from pyweb.server.trio.connection import Connection

DOC = Path(__file__).resolve().parents[2] / "docs" / "request-path.md"


def test_the_docs_show_talk_as_it_is():
    text = DOC.read_text(encoding="utf-8")
    shown = text.split("```python\n", 1)[1].split("```", 1)[0]
    assert shown.strip() == textwrap.dedent(inspect.getsource(Connection.talk)).strip()


def test_talk_reads_like_the_paper():
    """Marlow's talk is ten lines; pyweb's stays within forty."""
    assert len(inspect.getsource(Connection.talk).splitlines()) <= 40
