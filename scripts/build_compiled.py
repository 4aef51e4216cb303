"""Build the optional compiled copy of pyweb: its hot plain modules compiled by mypyc.

The plain modules stay the reference: ``make dev`` never runs this, and the tree under
``pyweb/`` is never touched. This copies ``pyweb/`` to ``build/mypyc/pyweb/`` and compiles
the modules of :data:`COMPILED` there into extension modules beside their ``.py`` files
(an extension module wins over a ``.py`` of the same name on import). Running anything with
``PYTHONPATH=build/mypyc`` then uses the compiled modules (``make test-compiled`` runs the
protocol and server tests that way; ``benchmarks/peers.py --servers pyweb-compiled`` serves
with them).

mypyc compiles a module from its type hints, the way black and mypy ship themselves; a
module it cannot compile, or that behaves differently compiled, is left out of
:data:`COMPILED` with the reason beside it in :data:`LEFT_OUT`.

Usage: .venv/bin/python scripts/build_compiled.py   (``make compiled``)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "build" / "mypyc"

COMPILED = [
    "pyweb/protocol/grammar.py",
    "pyweb/protocol/headers.py",
]
"""The modules compiled, relative to the project's root."""

LEFT_OUT: dict[str, str] = {
    "pyweb/protocol/parser.py": "the C request head (pyweb_regions._head) reads RequestParser's "
    "fields through their slot descriptors, which a mypyc class does not have (TypeError: "
    "RequestParser.limits is not a slot); on the hot path the C head parses, not this module",
    "pyweb/server/asyncio/connection.py": "HttpProtocol narrows the type of ConnectionCore's "
    "`server` attribute, which a native class may not do (an attribute's type is its C layout)",
    "pyweb/app/conn.py": "ResponseAlreadySent subclasses RuntimeError and Flash subclasses str: "
    "mypyc compiles neither without a mypyc_attr(native_class=False) in the plain module",
    "pyweb/quot.py": "Safe subclasses str (as above)",
    "pyweb/server/core.py": "compiled, ConnectionCore is a native class, and HttpProtocol (which "
    "subclasses it beside AioReplies) fails at import: multiple bases have instance lay-out "
    "conflict",
    "pyweb/server/asyncio/replies.py": "AioReplies, the other base of HttpProtocol (as above)",
    "pyweb/protocol/response.py": "compiles, but pyweb.app.conn makes its Response with "
    "object.__new__ (a constructor bypass), which a native class refuses: object.__new__"
    "(Response) is not safe",
    "pyweb/app/runner.py": "compiles, but Site (interpreted) subclasses its Runner: "
    "interpreted classes cannot inherit from compiled",
}
"""Modules of the hot path that are not compiled, and why."""


def copy_tree() -> None:
    """A fresh copy of the plain package: the compiled build never sees stale modules."""
    if (BUILD / "pyweb").exists():
        shutil.rmtree(BUILD / "pyweb")
    BUILD.mkdir(parents=True, exist_ok=True)  # (mypy's cache there is kept: a rebuild is quicker)
    shutil.copytree(
        ROOT / "pyweb", BUILD / "pyweb", ignore=shutil.ignore_patterns("__pycache__", "*.so")
    )
    # The C extension is not compiled again: the copy sees the tree's (for mypy, and at run
    # time when build/mypyc comes first on the path).
    regions = BUILD / "pyweb_regions"
    if not regions.is_symlink():
        regions.symlink_to(ROOT / "pyweb_regions")


def compile_modules() -> None:
    """mypyc, run in the copy, writes each extension module beside its ``.py`` file."""
    command = [sys.executable, "-m", "mypyc", "--python-version", "3.11", *COMPILED]
    print(" ".join(command[1:]), flush=True)
    subprocess.run(command, cwd=BUILD, check=True)


def check() -> None:
    """Every module of :data:`COMPILED` imports as an extension module from the copy."""
    names = [path.removesuffix(".py").replace("/", ".") for path in COMPILED]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}:\n"
        "    module = importlib.import_module(name)\n"
        "    if not module.__file__.endswith('.so'):\n"
        "        sys.exit(f'{name} is not compiled: {module.__file__}')\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=BUILD, check=True)


def main() -> int:
    copy_tree()
    compile_modules()
    check()
    print(f"compiled: {len(COMPILED)} modules in {BUILD.relative_to(ROOT)}; "
          f"run with PYTHONPATH={BUILD.relative_to(ROOT)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
