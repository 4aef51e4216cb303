"""docs/cli.md lists every option of ``pyweb serve`` as the parser has it.

Before: the page's table was written by hand and lacked 13 of ``serve --help``'s flags,
although the getting-started page says every option is listed there. Now
scripts/cli_table.py makes the table from the parser, and this test fails when the page
differs (run ``.venv/bin/python scripts/cli_table.py --write``).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pyweb.cli import build_parser

ROOT = Path(__file__).resolve().parents[1]


def cli_table():
    spec = importlib.util.spec_from_file_location("cli_table", ROOT / "scripts" / "cli_table.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_options_table_is_the_parsers():
    tool = cli_table()
    written = tool.in_doc((ROOT / "docs" / "cli.md").read_text("utf-8"))
    assert written == tool.table(), (
        "docs/cli.md's options table differs from pyweb serve's parser: run "
        ".venv/bin/python scripts/cli_table.py --write"
    )


def test_every_flag_of_serve_help_is_in_the_page():
    page = (ROOT / "docs" / "cli.md").read_text("utf-8")
    serve = build_parser().subcommands["serve"]
    shown = [
        flag
        for action in serve._actions
        if action.help != "==SUPPRESS=="
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    ]
    assert len(shown) > 40
    missing = [flag for flag in shown if f"`{flag}" not in page and f"/ {flag}" not in page]
    assert missing == []
