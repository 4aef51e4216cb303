"""The import graph of a package inside pyweb: its modules, its arrows, its circles and the
arrows that point back up.

Every import is counted: at the top of a module, inside a function, and under
``TYPE_CHECKING`` (a circle that only the type checker sees is still a circle a reader
has to follow). Only arrows between modules of the package are kept.

A *circle* is a strongly connected set of two or more modules. Layers are counted from the
bottom: a module that imports nothing of the package is on layer 0, any other module is
one layer above the highest one it imports (a circle is one layer). The arrows *back up*
are those a depth-first walk finds pointing to a module it is still inside (turn them
around and no circle is left); the count of all arrows inside circles is shown beside
them. A package without circles has neither.

Usage::

    python scripts/import_graph.py                 # pyweb/server, as text
    python scripts/import_graph.py pyweb/runtime   # another package
    python scripts/import_graph.py --dot > server.dot   # for Graphviz (dot -Tsvg)
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(path: Path) -> list[str]:
    """The absolute names ``path`` imports, ``from . import x`` giving ``pkg.x`` too."""
    module = module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1])
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            names.append(name)
            names += [f"{name}.{alias.name}" for alias in node.names]
    return names


def graph(package: Path) -> dict[str, set[str]]:
    """Each module of ``package`` and the modules of ``package`` it imports."""
    modules = {module_name(p): p for p in sorted(package.rglob("*.py"))}
    arrows: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for target in imported(path):
            # ``from . import Server`` names pyweb.server.Server: the longest module prefix.
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                arrows[name].add(target)
    return arrows


def circles(arrows: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(arrows[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(10_000)
    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return sorted(found)


def layers(arrows: dict[str, set[str]], groups: list[list[str]]) -> dict[str, int]:
    """Each module's layer (a circle counts as one node)."""
    group_of = {m: i for i, g in enumerate(groups) for m in g}
    key = {m: group_of.get(m, m) for m in arrows}
    layer: dict[object, int] = {}

    def depth(k: object, seen: frozenset[object]) -> int:
        if k in layer:
            return layer[k]
        members = [m for m in arrows if key[m] == k]
        below = [key[t] for m in members for t in arrows[m] if key[t] != k]
        layer[k] = 1 + max((depth(b, seen | {k}) for b in below), default=-1)
        return layer[k]

    return {m: depth(key[m], frozenset()) for m in arrows}


def back_up(arrows: dict[str, set[str]], layer: dict[str, int]) -> list[tuple[str, str]]:
    """Arrows between modules of one layer: every arrow inside a circle."""
    return sorted((a, b) for a in arrows for b in arrows[a] if layer[b] >= layer[a])


def cut(arrows: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The arrows a depth-first walk (in name order) finds pointing back to a module it is
    still inside: removing them leaves no circle, so they are the ones to turn around."""
    state: dict[str, int] = {}
    found: list[tuple[str, str]] = []

    def visit(node: str) -> None:
        state[node] = 1
        for nxt in sorted(arrows[node]):
            if state.get(nxt) == 1:
                found.append((node, nxt))
            elif nxt not in state:
                visit(nxt)
        state[node] = 2

    for node in sorted(arrows):
        if node not in state:
            visit(node)
    return sorted(found)


def short(name: str, prefix: str) -> str:
    return name[len(prefix) + 1 :] or "__init__" if name.startswith(prefix + ".") else name


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("package", nargs="?", default="pyweb/server")
    parser.add_argument("--dot", action="store_true", help="print Graphviz instead")
    args = parser.parse_args()
    package = (ROOT / args.package).resolve()
    prefix = module_name(package / "__init__.py")
    arrows = graph(package)
    groups = circles(arrows)
    layer = layers(arrows, groups)
    up = back_up(arrows, layer)
    s = lambda n: short(n, prefix)  # noqa: E731
    if args.dot:
        print(f'digraph "{prefix}" {{\n  rankdir=BT;')
        for a in sorted(arrows):
            for b in sorted(arrows[a]):
                style = " [color=red]" if (a, b) in up else ""
                print(f'  "{s(a)}" -> "{s(b)}"{style};')
        print("}")
        return 0
    count = sum(len(t) for t in arrows.values())
    print(f"{prefix}: {len(arrows)} modules, {max(layer.values()) + 1} layers, {count} arrows,")
    back = cut(arrows)
    print(f"  {len(back)} back up ({len(up)} inside circles), {len(groups)} circles")
    for n in sorted(arrows, key=lambda m: (-layer[m], m)):
        targets = ", ".join(s(t) for t in sorted(arrows[n])) or "-"
        print(f"  [{layer[n]:2}] {s(n)} -> {targets}")
    for i, g in enumerate(groups, 1):
        print(f"  circle {i} ({len(g)} modules): {' '.join(s(m) for m in g)}")
    for a, b in back:
        print(f"  back up: {s(a)} -> {s(b)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
