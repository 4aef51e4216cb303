"""Run every tutorial and every exercise solution on a real Jupyter kernel, needing only
what ``pip install -e '.[notebooks]'`` installs (no pytest): ``make test-notebooks-extra``.

This is the proof that the ``notebooks`` extra is enough for a student's machine or a
JupyterHub image: ``make test`` runs the same notebooks, but in the ``dev`` environment,
which has many more packages and could hide one the extra forgot.

A solution must run without any error. A tutorial ends with exercises handed out
unsolved, so its checks (cells tagged ``check``) may fail, but only with a
:class:`pyweb.notebook.CheckFailed`; any other error fails the run. The last line is
``N passed, N failed``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parent.parent
CELL_TIMEOUT = 60  # seconds a cell may take: a hung server fails its notebook, not the run


def notebooks() -> list[Path]:
    """The tutorials, then the exercises' solutions."""
    return sorted((ROOT / "tutorials").glob("*.ipynb")) + sorted(
        (ROOT / "notebook" / "solutions").glob("*.ipynb")
    )


def problems_of(path: Path) -> list[str]:
    """What went wrong running ``path`` on a fresh kernel in a fresh folder (empty: fine)."""
    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="pyweb-nb-") as cwd:
        client = NotebookClient(
            nb, kernel_name="python3", timeout=CELL_TIMEOUT,
            resources={"metadata": {"path": cwd}},
        )  # fmt: skip
        try:
            client.execute()
        except CellExecutionError as exc:
            return [str(exc).splitlines()[-1] if str(exc) else type(exc).__name__]
        except Exception as exc:  # a dead kernel, a timeout: say which, go on to the next
            return [f"{type(exc).__name__}: {exc}"]
    found = []
    is_tutorial = path.parent.name == "tutorials"
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type != "error":
                continue
            allowed = is_tutorial and "check" in cell.metadata.get("tags", [])
            if not (allowed and output.ename == "CheckFailed"):
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=2, help="notebooks run at once")
    parser.add_argument("--loop", choices=("trio", "asyncio"), default="trio",
                        help="the loop of the notebooks' pyweb servers")  # fmt: skip
    parser.add_argument("names", nargs="*", help="only notebooks whose path has one of these")
    args = parser.parse_args(argv)
    os.environ["PYWEB_TESTING_LOOP"] = args.loop  # the kernels inherit it
    chosen = [p for p in notebooks() if not args.names or any(n in str(p) for n in args.names)]
    if not chosen:
        print(f"no notebook matches {args.names}", file=sys.stderr)
        return 2

    def run(path: Path) -> tuple[Path, list[str], float]:
        started = time.monotonic()
        return path, problems_of(path), time.monotonic() - started

    failed = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for path, problems, seconds in pool.map(run, chosen):
            name = path.relative_to(ROOT)
            print(f"{'FAILED' if problems else 'ok':6} {name} ({seconds:.1f} s)", flush=True)
            for problem in problems:
                print(f"       {problem}")
            failed += bool(problems)
    print(f"{len(chosen) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
