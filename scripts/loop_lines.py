"""How much of a package is written for one event loop: the lines of the modules that import
trio (and not asyncio), those that import asyncio or uvloop (and not trio), and the rest.

A module counts for a loop when any of its imports (top level, in a function or under
``TYPE_CHECKING``) names that loop's package, or when it imports neither but only modules
of one loop import it (``asyncio/replies.py`` is asyncio's although it never names asyncio).
Lines are all the lines of the file, as ``wc -l`` counts them.

Usage::

    python scripts/loop_lines.py                  # pyweb/server
    python scripts/loop_lines.py pyweb/runtime -v # one line per module
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOOPS = {"trio": ("trio",), "asyncio": ("asyncio", "uvloop")}


def loops_of(path: Path) -> set[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.append(node.module)
    top = {name.split(".")[0] for name in names}
    return {loop for loop, packages in LOOPS.items() if top & set(packages)}


def classify(package: Path) -> dict[Path, set[str]]:
    """Each module's loops, the imports' first, then those of the only modules that use it."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from import_graph import graph, module_name

    paths = {module_name(p): p for p in sorted(package.rglob("*.py"))}
    arrows = graph(package)
    loops = {name: loops_of(path) for name, path in paths.items()}
    named = {name for name, found in loops.items() if found}
    changed = True
    while changed:
        changed = False
        for name in paths:
            if name in named:
                continue
            users = [a for a in arrows if name in arrows[a]]
            kinds = {frozenset(loops[u]) for u in users}
            if (
                len(kinds) == 1
                and len(found := set(next(iter(kinds)))) == 1
                and found != loops[name]
            ):
                loops[name] = found
                changed = True
    return {paths[name]: found for name, found in loops.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", nargs="?", default="pyweb/server")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    totals = {"trio only": 0, "asyncio only": 0, "both": 0, "neither": 0}
    for path, loops in sorted(classify(ROOT / args.package).items()):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        loops = set(loops)
        kind = "both" if len(loops) == 2 else f"{loops.pop()} only" if loops else "neither"
        totals[kind] += lines
        if args.verbose:
            print(f"  {kind:12} {lines:5}  {path.relative_to(ROOT)}")
    for kind, lines in totals.items():
        print(f"{kind:12} {lines:5}")
    print(f"{'loop-specific':12} {totals['trio only'] + totals['asyncio only']:5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
