"""The layering rules of docs/request-path.md ("Who may import whom"), checked on the source:
every import of every module under pyweb/ (top-level, inside functions, under
TYPE_CHECKING) is read from its AST, and a rule that is broken names the file and line.

The table below is the one the docs show; a test checks that the docs show it unchanged.
"""

from __future__ import annotations

import ast
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "pyweb"
DOC = ROOT / "docs" / "request-path.md"


@dataclass(frozen=True)
class Rule:
    layer: str
    """Modules the rule is about: a package (``pyweb.server``) or a module."""
    may: tuple[str, ...] | None = None
    """Everything in pyweb (or pyweb_regions) it may import besides itself; None: no limit."""
    never: tuple[str, ...] = ()
    """What it must not import, even where ``may`` is None."""
    why: str = ""

    def row(self) -> str:
        may = "anything" if self.may is None else ", ".join(f"`{m}`" for m in self.may) or "nothing"
        never = ", ".join(f"`{m}`" for m in self.never) or "-"
        return f"| `{self.layer}` | {may} | {never} | {self.why} |"


RULES = [
    Rule(
        "pyweb.protocol",
        may=("pyweb_regions",),
        why="sans-IO HTTP: bytes in, events out (C fast paths from pyweb_regions)",
    ),
    Rule("pyweb.runtime", may=(), why="the one seam to the event loop (trio, asyncio)"),
    Rule("pyweb.events", may=("pyweb.runtime",), why="CML, usable on its own"),
    Rule(
        "pyweb.handler",
        may=("pyweb.protocol", "pyweb.events"),
        why="the contract between server and app",
    ),
    Rule(
        "pyweb.server",
        may=("pyweb.protocol", "pyweb.runtime", "pyweb.events", "pyweb.handler", "pyweb_regions"),
        never=("pyweb.events._",),
        why="knows the protocol and the public events, not pages",
    ),
    Rule(
        "pyweb.app",
        never=("pyweb.server",),
        why="types against the handler contract only",
    ),
    Rule("pyweb.regions", never=("pyweb.server", "pyweb.app"), why="wraps a page, serves none"),
    Rule("pyweb.db", never=("pyweb.server", "pyweb.app"), why="usable without the server"),
    Rule("pyweb.cache", never=("pyweb.server", "pyweb.app"), why="usable without the server"),
    Rule("pyweb.quot", may=("pyweb._quot_fast",), why="usable without the server"),
    Rule("pyweb.html", may=("pyweb.quot", "pyweb._html_fast"), why="usable without the server"),
    Rule("pyweb.forms", may=("pyweb.formclass",), why="usable without the server"),
    Rule(
        "pyweb.formclass",
        may=("pyweb.forms", "pyweb.html"),
        why="usable without the server",
    ),
]

RUNTIME_USERS = ("pyweb.events", "pyweb.cache", "pyweb.db", "pyweb.app")
"""They reach the event loop only through ``pyweb.runtime``: no ``import trio``."""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every import in ``path``."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            found.append((node.lineno, name))
    return found


def inside(name: str, prefix: str) -> bool:
    if prefix.endswith("_"):  # a private prefix: pyweb.events._core, pyweb.events._runtime
        return name.startswith(prefix)
    return name == prefix or name.startswith(prefix + ".")


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def broken(rule: Rule) -> list[str]:
    problems = []
    for path in sources():
        module = module_name(path)
        if not inside(module, rule.layer):
            continue
        for line, name in imports(path):
            ours = inside(name, "pyweb") or inside(name, "pyweb_regions")
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            if any(inside(name, bad) for bad in rule.never):
                problems.append(where)
            elif rule.may is not None and ours and not inside(name, rule.layer):
                if not any(inside(name, ok) for ok in rule.may):
                    problems.append(where)
    return problems


@pytest.mark.parametrize("rule", RULES, ids=[r.layer for r in RULES])
def test_the_import_rule_holds(rule):
    assert broken(rule) == []


def test_a_broken_rule_is_caught(tmp_path, monkeypatch):
    """The checker itself: an app module that imports the server is reported."""
    fake = tmp_path / "pyweb" / "app"
    fake.mkdir(parents=True)
    (fake / "bad.py").write_text("def f():\n    from pyweb.server.connection import Connection\n")
    (fake / "good.py").write_text("from ..protocol import Request\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", tmp_path / "pyweb")
    assert broken(Rule("pyweb.app", never=("pyweb.server",))) == [
        "pyweb/app/bad.py:2 imports pyweb.server.connection"
    ]
    assert broken(Rule("pyweb.app", may=("pyweb.protocol",))) == [
        "pyweb/app/bad.py:2 imports pyweb.server.connection"
    ]


def test_only_the_runtime_seam_imports_trio():
    users = [
        f"{path.relative_to(ROOT)}:{line}"
        for path in sources()
        if any(inside(module_name(path), layer) for layer in RUNTIME_USERS)
        for line, name in imports(path)
        if inside(name, "trio")
    ]
    assert users == []


# -- inside pyweb/server: arrows point down, and the shared code knows no loop's driver ---------

SERVER = "pyweb.server"
DRIVERS = ("pyweb.server.asyncio", "pyweb.server.trio")
"""Each loop's own code, a folder each: its server, connection, replies and schedulers."""

SHARED = (
    "pyweb.server.accepting", "pyweb.server.body", "pyweb.server.context",
    "pyweb.server.contract", "pyweb.server.core", "pyweb.server.host", "pyweb.server.reply",
    "pyweb.server.scheduling",
    "pyweb.server.slots", "pyweb.server.websocket",
)  # fmt: skip
"""What a connection does, written once for both loops (docs/request-path.md)."""


def server_arrows(package: Path | None = None) -> dict[str, set[str]]:
    """Each module of pyweb/server and the modules of pyweb/server it imports, by any
    import (a ``TYPE_CHECKING`` circle is a circle a reader follows too)."""
    package = package or PACKAGE / "server"
    modules = {module_name(p): p for p in sorted(package.rglob("*.py"))}
    arrows: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target in [n for _, n in imports(path)] + _imported_names(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                arrows[name].add(target)
    return arrows


def _imported_names(path: Path) -> list[str]:
    """``from . import Server`` in pyweb/server/x.py: ``pyweb.server.Server`` (whose longest
    module prefix is the package), as ``imports`` gives ``pyweb.server``; and
    ``from .asyncio import server``: ``pyweb.server.asyncio.server``, a module."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            else:
                base = node.module or ""
            names += [f"{base}.{alias.name}" for alias in node.names]
    return names


def circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """Modules that reach themselves through their imports (each circle once)."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(arrows[node]):
            if state.get(nxt) == 1:
                found.append(path[path.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(arrows):
        if node not in state:
            visit(node)
    return found


def test_the_server_has_no_import_circle():
    """No module of pyweb/server reaches itself through its imports: every arrow of the
    import graph points down (``python scripts/import_graph.py`` draws it)."""
    assert [" -> ".join(c) for c in circles(server_arrows())] == []


def test_the_shared_connection_code_imports_no_loops_driver():
    """body, context, websocket, slots and the contracts are written once: they import
    neither loop's driver (they ask a connection only what contract.py promises)."""
    arrows = server_arrows()
    wrong = [
        f"{module} imports {target}"
        for module in SHARED
        for target in sorted(arrows[module])
        if any(inside(target, driver) for driver in DRIVERS) or target == SERVER
    ]
    assert wrong == []


def test_the_shared_connection_code_imports_no_loop():
    """What is written once runs on both loops: no shared module imports trio, asyncio or
    uvloop (a wait it needs goes through ``pyweb.runtime``), so ``scripts/loop_lines.py``
    counts none of them as one loop's."""
    modules = {module_name(p): p for p in (PACKAGE / "server").rglob("*.py")}
    wrong = [
        f"{module} imports {name}"
        for module in SHARED
        for _, name in imports(modules[module])
        if any(inside(name, loop) for loop in ("trio", "asyncio", "uvloop"))
    ]
    assert wrong == []


def test_a_circle_is_caught(tmp_path, monkeypatch):
    """The checker itself: a TYPE_CHECKING import back to the importer is a circle."""
    fake = tmp_path / "pyweb" / "server"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "a.py").write_text("from .b import B\n")
    (fake / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import A\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    arrows = server_arrows(fake)
    assert circles(arrows) == [["pyweb.server.a", "pyweb.server.b", "pyweb.server.a"]]


def test_the_docs_show_this_table():
    text = DOC.read_text(encoding="utf-8")
    for rule in RULES:
        assert rule.row() in text, f"docs/request-path.md lacks the row:\n{rule.row()}"
