"""Instructions per page of the render benchmark's pages (bench_render.py), alone.

Each scenario builds and renders one of bench_render.py's pages with one technique
(``hello-quot``, ``table-nodes``, ...), or makes the ``guest`` page's row
(``row``: a ``qq`` of three holes added to an accumulated Quot, as a fold of rows does).
Counted under ``valgrind --tool=callgrind`` (instructions do not move with the load of a
shared machine), as the difference of two runs of different lengths, so start-up and
imports cancel out. Run with

    PYTHONPATH=$PWD .venv/bin/python benchmarks/bench_render_callgrind.py [--baseline DIR]...

Each ``--baseline DIR`` measures another tree (its ``pyweb``) in the same run, for a
before/after table (docs/performance.md, "Fast paths behind a wall").
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile

RUNS = {"row": (1000, 3000), "table": (4, 12)}
"""The two run lengths per page (the others: ``(200, 600)``): (high - low) / difference."""


def child(scenario: str, n: int) -> None:
    """Run ``n`` pages of one scenario (in the process callgrind watches)."""
    import bench_render

    from pyweb.quot import Quot, qq

    if scenario == "row":
        acc, name, email, comment = Quot(), "Ada", "ada@example.com", "<hello> & bye"
        for _ in range(20 + n):  # 20 to warm qq's template cache
            acc = qq("<li>{name} ({email}): {comment}</li>", name=name, email=email,
                     comment=comment) + acc
            if len(acc) > 60:
                acc = Quot()
        return
    page, technique = scenario.split("-")
    build = getattr(bench_render, f"{page}_{technique}")
    args = {"hello": (), "guess": bench_render.GUESS_ARGS, "table": (bench_render.TABLE_ROWS,)}
    for _ in range(2 + n):
        build(*args[page])


def count(tree: str, scenario: str, n: int) -> int:
    """Instructions of one child run under callgrind."""
    with tempfile.TemporaryDirectory(prefix="pyweb-render-cg-") as tmp:
        out = os.path.join(tmp, "cg.out")
        command = [
            "valgrind", "--tool=callgrind", "--dump-instr=no", f"--callgrind-out-file={out}",
            sys.executable, os.path.abspath(__file__), "--child", scenario, "--n", str(n),
        ]  # fmt: skip
        env = {**os.environ, "PYTHONHASHSEED": "0", "PYTHONPATH": tree}
        subprocess.run(
            command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
        )
        with open(out) as f:
            m = re.search(r"^(?:summary|totals): (\d+)", f.read(), re.M)
        assert m is not None, "no totals in the callgrind output"
        return int(m[1])


def per_page(tree: str, scenario: str) -> float:
    low, high = RUNS.get(scenario.split("-")[0], (200, 600))
    return (count(tree, scenario, high) - count(tree, scenario, low)) / (high - low)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", action="append", default=[],
                        help="another tree to measure beside this one (repeatable)")  # fmt: skip
    parser.add_argument(
        "--scenarios", default="row,hello-quot,guess-quot,table-quot,hello-nodes,guess-nodes,table-nodes"
    )
    parser.add_argument("--child")
    parser.add_argument("--n", type=int, default=0)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.n)
        return
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trees = {os.path.abspath(tree): os.path.abspath(tree) for tree in args.baseline}
    trees["this tree"] = here
    print("| instructions per page | " + " | ".join(trees) + " |")
    print("|---|" + "---:|" * len(trees))
    for scenario in args.scenarios.split(","):
        cells = [f"{per_page(tree, scenario):,.0f}" for tree in trees.values()]
        print(f"| {scenario} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
