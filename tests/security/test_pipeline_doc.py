"""docs/request-path.md shows the guards' list beside the code: it must show it as it is
(as tests/server/test_request_path_doc.py does for ``talk``)."""

from __future__ import annotations

import inspect
from pathlib import Path

from pyweb.app import guards

DOC = Path(__file__).resolve().parents[2] / "docs" / "request-path.md"


def test_the_docs_show_the_guards_as_they_are() -> None:
    text = DOC.read_text(encoding="utf-8")
    shown = text.split("<!-- guards -->\n```python\n", 1)[1].split("```", 1)[0]
    source = inspect.getsource(guards)
    code = source[source.index("GUARDS = (") :]
    code = code[: code.index("\n)\n") + 3]
    assert shown.strip() == code.strip()
