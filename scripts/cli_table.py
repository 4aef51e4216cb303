"""docs/cli.md's table of ``pyweb serve``'s options, made from the parser itself.

Every flag of ``pyweb serve`` but ``DIR`` and ``--config`` is a field of
``pyweb.server.config.ServerConfig`` (its help, default and reader written once), and the
parser is built from them. This script renders the parser's options as the Markdown table
of docs/cli.md, between the two marker comments, so the page cannot fall behind the
command: ``tests/test_cli_doc.py`` fails when they differ.

    .venv/bin/python scripts/cli_table.py          # print the table
    .venv/bin/python scripts/cli_table.py --write  # put it into docs/cli.md
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from pyweb.cli import build_parser

DOC = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BEGIN = "<!-- options: made by scripts/cli_table.py from `pyweb serve`'s parser -->"
END = "<!-- end of options -->"
_DEFAULT_WORDS = re.compile(r"\s*\(default: ((?:[^()]|\([^()]*\))*)\)")


def _flag(action: argparse.Action) -> str:
    if not action.option_strings:
        return str(action.metavar or action.dest).upper()
    if isinstance(action, argparse.BooleanOptionalAction):
        return " / ".join(action.option_strings)
    flag = action.option_strings[-1]
    if action.nargs == 0:
        return flag
    return f"{flag} {action.metavar or action.dest.upper()}"


def _default(action: argparse.Action) -> str:
    said = _DEFAULT_WORDS.search(action.help or "")
    if said:  # the help's own words: "(default: 16 MiB)", "(default: DIR/pyweb.toml ...)"
        return said.group(1).replace("|", "\\|")
    value = action.default
    if isinstance(action, argparse.BooleanOptionalAction):
        return "on" if value else "off"
    if action.nargs == 0:
        return "off"
    if value is None or value == ():
        return "none"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _meaning(action: argparse.Action) -> str:
    text = _DEFAULT_WORDS.sub("", action.help or "").strip()
    # A table cell is Markdown: a | would end it, and [word] would read as a link.
    return text.replace("|", "\\|").replace("[", "\\[").replace("]", "\\]")


def table() -> str:
    """The Markdown table of ``pyweb serve``'s options, in the parser's order."""
    serve = build_parser().subcommands["serve"]
    rows = ["| option | default | meaning |", "|---|---|---|"]
    for action in serve._actions:  # argparse keeps no public list of a parser's actions
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._HelpAction):
            continue
        flag = _flag(action).replace("|", "\\|")
        rows.append(f"| `{flag}` | {_default(action)} | {_meaning(action)} |")
    return "\n".join(rows) + "\n"


def in_doc(text: str) -> str:
    """The table between the markers of ``text`` (docs/cli.md)."""
    start = text.index(BEGIN) + len(BEGIN) + 1
    return text[start : text.index(END)]


def write() -> None:
    text = DOC.read_text("utf-8")
    start = text.index(BEGIN) + len(BEGIN) + 1
    DOC.write_text(text[:start] + table() + text[text.index(END) :], "utf-8")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write()
    else:
        print(table(), end="")
