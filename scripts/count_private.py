"""Count two kinds of debt that make code harder to read or tests flaky.

* **Private attributes used across modules**: ``obj._name`` in a file of ``pyweb/`` where
  ``obj`` is not ``self``/``cls`` and no class, function or attribute named ``_name`` is
  defined in that same file. Such a use reaches into another module's internals; a student
  reading one module cannot see what it depends on. A few names of the standard library
  start with an underscore and are yet its documented way to do something (``os._exit``):
  they are listed in :data:`DOCUMENTED` with the reason for each, and counted apart.
* **Bare sleeps in tests**: a call of ``sleep`` (``time.sleep``, ``trio.sleep``,
  ``asyncio.sleep``, ``anyio.sleep``, ``runtime.sleep``...) with a non-zero argument, made
  as a statement of its own and not inside a loop, in a file of ``tests/``. Such a call is a
  fixed wait on the wall clock: too short on a loaded machine, too long everywhere else.
  A sleep inside a ``while``/``for`` loop is a poll step (the loop has its own exit), and
  ``sleep(0)`` is a checkpoint, so neither is counted.

``tests/test_no_sleeps.py`` uses :func:`bare_sleeps` to refuse new fixed waits, and
``tests/test_no_private_reaches.py`` uses :func:`private_uses` to refuse new reaches.

Usage: ``python scripts/count_private.py [--list]`` from the repository's root.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Finding:
    """One use found: where, and what."""

    path: str
    line: int
    function: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line} ({self.function}) {self.text}"


DOCUMENTED: dict[str, str] = {
    "sys._getframe": "documented in the sys module (a CPython detail, as frames are): the "
    "frame N calls up, in one call; inspect.currentframe() gives only the current frame "
    "(then .f_back, and a None check), a call more where quotations look up their caller's "
    "names on every use",
    "sys._current_frames": "documented in the sys module: the frame each thread runs now, "
    "which the watchdog samples to find a page that holds the loop; no public equivalent",
    "os._exit": "documented in the os module as the way to end a process at once, without "
    "cleanup (a second Ctrl-C, a stop that does not come): sys.exit would run the handlers "
    "that hang",
}
"""The standard library's names that begin with an underscore and are nonetheless its
documented way to do something, with the reason pyweb uses each: a use of one is counted
apart from the private reaches, never silently dropped."""


def _files(folder: Path) -> Iterator[Path]:
    # (not installed packages: .venv, and tests/autobahn/py27, the Autobahn suite's Python 2)
    yield from sorted(p for p in folder.rglob("*.py") if not {".venv", "py27"} & set(p.parts))


def _defined_privates(tree: ast.AST) -> set[str]:
    """Names starting with one underscore that this file defines itself."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.AnnAssign,)) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.alias):
            names.add(node.asname or node.name.split(".")[-1])
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def _enclosing(tree: ast.AST) -> dict[ast.AST, str]:
    """Map every node to the name of the function that holds it ('<module>' outside any)."""
    owner: dict[ast.AST, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = (
                child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else name
            )
            owner[child] = inner
            visit(child, inner)

    visit(tree, "<module>")
    return owner


def private_uses(folder: Path = ROOT / "pyweb") -> list[Finding]:
    """Every ``obj._x`` in ``folder`` that reaches a private name defined in another file."""
    found = []
    for path in _files(folder):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        own = _defined_privates(tree)
        owner = _enclosing(tree)
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Attribute) and _is_private(node.attr)):
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr in own:
                continue
            found.append(Finding(str(path.relative_to(ROOT)), node.lineno, owner.get(node, "?"),
                                 ast.unparse(node)))  # fmt: skip
    return found


def is_documented(finding: Finding) -> bool:
    """Whether ``finding`` is a documented name of the standard library (:data:`DOCUMENTED`)."""
    return finding.text in DOCUMENTED


def _sleep_call(node: ast.AST) -> ast.Call | None:
    """The call if ``node`` is a statement ``[await] <something>.sleep(x)`` or ``sleep(x)``."""
    if not isinstance(node, ast.Expr):
        return None
    value = node.value.value if isinstance(node.value, ast.Await) else node.value
    if not isinstance(value, ast.Call):
        return None
    func = value.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "sleep" or not value.args:
        return None
    arg = value.args[0]
    if isinstance(arg, ast.Constant) and arg.value == 0:
        return None  # a checkpoint, not a wait
    return value


def _sleeps_outside_loops(node: ast.AST, in_loop: bool, found: list[ast.Call]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            _sleeps_outside_loops(child, False, found)  # a new function starts outside loops
            continue
        call = _sleep_call(child)
        if call is not None and not in_loop:
            found.append(call)
        loop = isinstance(child, (ast.While, ast.For, ast.AsyncFor))
        _sleeps_outside_loops(child, in_loop or loop, found)


def bare_sleeps(folder: Path = ROOT / "tests") -> list[Finding]:
    """Every fixed wait (a sleep statement outside a loop) in the test files of ``folder``."""
    found = []
    for path in _files(folder):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        owner = _enclosing(tree)
        calls: list[ast.Call] = []
        _sleeps_outside_loops(tree, False, calls)
        for call in calls:
            found.append(Finding(str(path.relative_to(ROOT)), call.lineno,
                                 owner.get(call, "?"), ast.unparse(call)))  # fmt: skip
    return found


def main(argv: list[str]) -> int:
    found = private_uses()
    privates = [finding for finding in found if not is_documented(finding)]
    documented = [finding for finding in found if is_documented(finding)]
    sleeps = bare_sleeps()
    if "--list" in argv:
        for finding in privates:
            print("private", finding)
        for finding in documented:
            print("stdlib ", finding, "(documented: see DOCUMENTED)")
        for finding in sleeps:
            print("sleep  ", finding)
    files = len({finding.path for finding in privates})
    print(f"private attributes used across modules in pyweb/: {len(privates)} in {files} files")
    print(f"the standard library's documented underscore names (DOCUMENTED), apart: "
          f"{len(documented)}")  # fmt: skip
    if "--list" in argv:
        for name, reason in DOCUMENTED.items():
            print(f"  {name}: {reason}")
    print(f"bare sleeps (fixed waits outside a loop) in tests/: {len(sleeps)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
