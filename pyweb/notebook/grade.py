"""``pyweb grade``: run a class's hand-ins on fresh kernels and write one row per check.

A teacher collects the students' copies of an exercise notebook into a folder and runs::

    pyweb grade hand-ins/ --out grades.csv --timeout 30

Every notebook under the folder is run on a fresh Jupyter kernel (nbclient), cell by cell,
top to bottom, as a student runs it; a failing cell does not stop the next ones (each check
says its own verdict). The check cells are the code cells tagged ``check``; each gives one
row ``notebook,check,result,message`` where ``result`` is

* ``pass`` -- the cell ran without an error (``message``: what it printed last, e.g.
  "Check 1 passed: the page has a form with a field named c.");
* ``fail`` -- the cell raised :class:`~pyweb.notebook.checks.CheckFailed`
  (``message``: the check's plain-words sentence);
* ``error`` -- anything else: another exception, a timeout, a kernel that died, a check cell
  the student deleted, a check never run because the notebook stopped responding.

Nothing a hand-in does stops the grading: a cell past ``--timeout`` is interrupted (as the
student would press "Interrupt kernel") and the next cells run; a kernel that does not come
back, or that exits, ends that notebook with a row for each check left; output beyond
:data:`OUTPUT_LIMIT` bytes per cell is dropped. Beside the CSV, an HTML page shows the table
students x checks.

Which checks a notebook should have is recorded in the notebook's metadata when it is handed
out (:func:`mark_checks`: ``metadata["pyweb"]["checks"]``, the cell ids and names of the
check cells), so a check whose cell was deleted still gets its row. Check names come from
the ``##`` heading above each check cell ("Check 1: the form").

In the spirit of nbgrader, without its server or database: the notebooks are the only input
and the checks speak in the words the student saw.
"""

from __future__ import annotations

import asyncio
import csv
import html
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Row", "OUTPUT_LIMIT", "grade_notebook", "grade_folder", "mark_checks", "checks_of"]

OUTPUT_LIMIT = 1_000_000
"""Bytes of output kept per cell; the rest is dropped (a hand-in printing megabytes)."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROBE_TIMEOUT = (
    10  # at most this (and at most --timeout) for a kernel to answer after an interrupt
)


@dataclass(frozen=True)
class Row:
    """One line of the grade table."""

    notebook: str
    check: str
    result: str  # "pass", "fail" or "error"
    message: str


@dataclass(frozen=True)
class _Check:
    id: str
    name: str


# --- which checks a notebook has ----------------------------------------------------------


def _heading(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return None


def _cells_checks(nb: Any) -> list[_Check]:
    """The check cells of ``nb`` in order, each named by the heading above it."""
    found: list[_Check] = []
    heading: str | None = None
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = _heading(cell.source) or heading
        elif "check" in cell.metadata.get("tags", []):
            name = heading if heading and heading not in [c.name for c in found] else None
            found.append(_Check(cell.get("id", ""), name or f"check {len(found) + 1}"))
    return found


def checks_of(nb: Any) -> list[tuple[str, str]]:
    """The checks a notebook should have, as ``(cell id, name)``: those recorded by
    :func:`mark_checks` when it was handed out, else its check cells as they are now."""
    recorded = nb.metadata.get("pyweb", {}).get("checks")
    if recorded:
        return [(c["id"], c["name"]) for c in recorded]
    return [(c.id, c.name) for c in _cells_checks(nb)]


def mark_checks(nb: Any) -> list[tuple[str, str]]:
    """Record the check cells of ``nb`` in its metadata (do it on the copy handed out), so
    ``pyweb grade`` knows a check whose cell a student deleted. Returns what it recorded."""
    checks = _cells_checks(nb)
    nb.metadata.setdefault("pyweb", {})["checks"] = [{"id": c.id, "name": c.name} for c in checks]
    return [(c.id, c.name) for c in checks]


# --- running one notebook -------------------------------------------------------------------


def _client_class() -> type:
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):  # type: ignore[misc]
        """nbclient's client keeping at most OUTPUT_LIMIT bytes of output per cell."""

        _kept: tuple[int, int] = (-1, 0)  # (cell index, bytes kept so far)

        def output(self, outs: list[Any], msg: dict[str, Any], display_id: Any, index: int) -> Any:
            cell, kept = self._kept
            kept = kept if cell == index else 0
            if kept > OUTPUT_LIMIT:
                return None  # dropped: a check's verdict does not depend on its output's tail
            content = msg.get("content", {})
            self._kept = (index, kept + len(str(content.get("text", content.get("data", "")))))
            return super().output(outs, msg, display_id, index)

    return CappedClient


def _error_of(cell: Any) -> tuple[str, str] | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            return output.get("ename", "Error"), _ANSI.sub("", str(output.get("evalue", "")))
    return None


def _last_printed(cell: Any) -> str:
    text = "".join(
        o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream"
    )
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return _shorten(lines[-1]) if lines else "the check ran without an error"


def _shorten(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _verdict(cell: Any, reply: dict[str, Any] | None) -> tuple[str, str]:
    """(result, message) of a check cell that has run."""
    content = (reply or {}).get("content", {})
    if content.get("ename") == "Timeout":
        return "error", str(content.get("evalue"))
    error = _error_of(cell)
    if error is None and content.get("status") == "error":
        error = (content.get("ename", "Error"), _ANSI.sub("", str(content.get("evalue", ""))))
    if error is None:
        return "pass", _last_printed(cell)
    ename, evalue = error
    if ename == "CheckFailed":
        return "fail", _shorten(evalue)
    return "error", _shorten(f"{ename}: {evalue}" if evalue else ename)


async def _grade(nb: Any, name: str, timeout: float, kernel: str) -> list[Row]:
    from nbclient.exceptions import DeadKernelError

    expected = checks_of(nb)
    by_id = {cell.get("id"): index for index, cell in enumerate(nb.cells)}
    results: dict[str, tuple[str, str]] = {}
    for cell_id, _ in expected:
        if cell_id not in by_id:
            results[cell_id] = ("error", "missing cell: the check's cell was deleted")
    replies: dict[int, dict[str, Any]] = {}

    def keep_reply(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        replies[cell_index] = execute_reply

    workdir = tempfile.mkdtemp(prefix="pyweb-grade-")
    client = _client_class()(
        nb,
        kernel_name=kernel,
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={
            "ename": "Timeout",
            "evalue": f"the cell did not finish within {timeout:g} s and was interrupted",
        },
        shutdown_kernel="immediate",
        on_cell_executed=keep_reply,
        resources={"metadata": {"path": workdir}},
    )
    stopped: str | None = None
    try:
        # The kernel's own warnings (stderr) are not the teacher's business.
        async with client.async_setup_kernel(stderr=subprocess.DEVNULL):
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                try:
                    await client.async_execute_cell(cell, index)
                except DeadKernelError:
                    stopped = f"the kernel died in cell {index + 1} (exit(), os._exit() or a crash)"
                    results[cell.get("id")] = ("error", stopped)
                    break
                reply = replies.get(index)
                if reply and reply.get("content", {}).get("ename") == "Timeout":
                    if not await _answers(client, replies):
                        stopped = (
                            f"cell {index + 1} did not finish within {timeout:g} s and the "
                            "kernel did not answer an interrupt"
                        )
                        results.setdefault(cell.get("id"), ("error", stopped))
                        break
                results.setdefault(cell.get("id"), _verdict(cell, reply))
    except Exception as exc:  # a kernel that would not start, a broken notebook
        stopped = stopped or f"the notebook could not be run: {type(exc).__name__}: {exc}"
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    rows = []
    for cell_id, check in expected:
        result, message = results.get(cell_id) or ("error", f"not run: {stopped}")
        rows.append(Row(name, check, result, message))
    return rows


async def _answers(client: Any, replies: dict[int, dict[str, Any]]) -> bool:
    """Whether the kernel runs a trivial cell again after an interrupt."""
    import nbformat

    probe = nbformat.v4.new_code_cell("pass")
    saved = client.timeout
    client.timeout = max(2, min(_PROBE_TIMEOUT, saved))
    try:
        await client.async_execute_cell(probe, -1, store_history=False)
    except Exception:
        return False
    finally:
        client.timeout = saved
    return replies.get(-1, {}).get("content", {}).get("status") == "ok"


def grade_notebook(path: str | Path, *, name: str | None = None, timeout: float = 30,
                   kernel: str = "python3") -> list[Row]:  # fmt: skip
    """Run one notebook on a fresh kernel and return a row per check (never raises for
    what the notebook does; a file that is not a notebook gets one ``error`` row)."""
    import nbformat

    label = name or Path(path).name
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:
        return [Row(label, "(notebook)", "error", f"not a readable notebook: {exc}")]
    if not checks_of(nb):
        return [Row(label, "(notebook)", "error", "the notebook has no check cells")]
    return asyncio.run(_grade(nb, label, timeout, kernel))


def notebooks_in(folder: Path) -> list[Path]:
    """Every ``.ipynb`` under ``folder``, sorted, without Jupyter's checkpoint copies."""
    return sorted(
        p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and p.is_file()
    )


def grade_folder(
    folder: str | Path, *, timeout: float = 30, kernel: str = "python3", progress: Any = None
) -> list[Row]:
    """:func:`grade_notebook` on every notebook under ``folder`` (named by their path
    relative to it); ``progress(path, rows)`` is called after each."""
    root = Path(folder)
    rows: list[Row] = []
    for path in notebooks_in(root):
        graded = grade_notebook(
            path, name=path.relative_to(root).as_posix(), timeout=timeout, kernel=kernel
        )
        rows += graded
        if progress is not None:
            progress(path, graded)
    return rows


# --- writing the table ---------------------------------------------------------------------


def write_csv(rows: Iterable[Row], out: Path) -> None:
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["notebook", "check", "result", "message"])
        for row in rows:
            writer.writerow([row.notebook, row.check, row.result, row.message])


_SYMBOL = {"pass": "✓", "fail": "✗", "error": "!"}
_STYLE = """body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}
th,td{border:1px solid #bbb;padding:.3em .6em;text-align:center}th{background:#eee}
td.name{text-align:left;font-family:monospace}.pass{background:#d9f2d9}
.fail{background:#f8d7d7}.error{background:#fde9c4}.missing{background:#f4f4f4}
dt{font-family:monospace;margin-top:.6em}"""


def write_html(rows: Sequence[Row], out: Path, *, title: str = "Grades") -> None:
    """The table students x checks: one row per notebook, a column per check, each cell
    ✓ pass, ✗ fail, ! error (its message on hover and listed below), and the totals."""
    notebooks = list(dict.fromkeys(r.notebook for r in rows))
    checks = list(dict.fromkeys(r.check for r in rows))
    cells = {(r.notebook, r.check): r for r in rows}
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in checks)
    body = []
    for nb in notebooks:
        tds = []
        for check in checks:
            row = cells.get((nb, check))
            if row is None:
                tds.append('<td class="missing"></td>')
            else:
                tds.append(
                    f'<td class="{row.result}" title="{e(row.message)}">{_SYMBOL[row.result]}</td>'
                )
        passed = sum(1 for c in checks if (r := cells.get((nb, c))) and r.result == "pass")
        mine = sum(1 for c in checks if (nb, c) in cells)
        body.append(
            f'<tr><td class="name">{e(nb)}</td>{"".join(tds)}<td>{passed} / {mine}</td></tr>'
        )
    notes = "".join(
        f"<dt>{e(r.notebook)} · {e(r.check)} · {r.result}</dt><dd>{e(r.message)}</dd>"
        for r in rows
        if r.result != "pass"
    )
    document = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        f"<p>✓ pass, ✗ fail, ! error (a crash, a timeout, a missing cell). "
        f"Hover over a cell for its message.</p>"
        f"<table><tr><th>notebook</th>{head}<th>passed</th></tr>{''.join(body)}</table>"
        f"<h2>What failed, in the checks' words</h2><dl>{notes or '<dd>nothing</dd>'}</dl>"
        "</body></html>"
    )
    out.write_text(document, encoding="utf-8")


# --- the command ----------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    """Add ``grade`` to the ``pyweb`` command's subcommands."""
    grade = commands.add_parser(
        "grade",
        help="run every notebook in DIR on a fresh kernel and write a grade table (CSV + HTML)",
        description="Run every notebook under DIR (the students' hand-ins) on a fresh Jupyter "
        "kernel, cell by cell, and write one row per check cell to FILE.csv (columns "
        "notebook,check,result,message; result pass, fail or error) and a table students x "
        "checks to FILE.html. A crash, a timeout or a deleted check gets its row; grading "
        "never stops. Exit status 0 when the grading ran, whatever the grades.",
    )
    grade.add_argument("dir", metavar="DIR", help="folder of notebooks (searched recursively)")
    grade.add_argument("--out", required=True, metavar="FILE.csv", help="the CSV to write")
    grade.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="seconds a cell may run before it is interrupted (default: 30)",
    )
    grade.add_argument(
        "--kernel", default="python3", metavar="NAME", help="Jupyter kernel (default: python3)"
    )


def run(args: Any) -> int:
    """``pyweb grade DIR --out FILE.csv [--timeout S]``."""
    import sys

    folder = Path(args.dir)
    if not folder.is_dir():
        print(f"pyweb grade: error: {args.dir!r} is not a folder", file=sys.stderr)
        return 2
    if args.timeout <= 0:
        print("pyweb grade: error: --timeout must be more than 0 seconds", file=sys.stderr)
        return 2
    out = Path(args.out)
    if not notebooks_in(folder):
        print(f"pyweb grade: error: no notebooks (.ipynb) under {args.dir!r}", file=sys.stderr)
        return 2
    try:
        import nbclient  # noqa: F401
    except ImportError:
        print(
            "pyweb grade: error: grading needs nbclient and ipykernel: "
            "pip install 'pyweb[notebooks]'",
            file=sys.stderr,
        )
        return 2

    def progress(path: Path, rows: list[Row]) -> None:
        counts = {k: sum(r.result == k for r in rows) for k in ("pass", "fail", "error")}
        print(
            f"{path.relative_to(folder).as_posix()}: {counts['pass']} pass, "
            f"{counts['fail']} fail, {counts['error']} error",
            flush=True,
        )

    rows = grade_folder(folder, timeout=args.timeout, kernel=args.kernel, progress=progress)
    write_csv(rows, out)
    page = out.with_suffix(".html")
    write_html(rows, page, title=f"Grades: {folder.name or folder}")
    print(f"wrote {out} ({len(rows)} rows) and {page}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pyweb.notebook.grade mark NOTEBOOK...``: record the check cells of each
    notebook in its metadata (before handing it out)."""
    import sys

    import nbformat

    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) < 2 or words[0] != "mark":
        print("usage: python -m pyweb.notebook.grade mark NOTEBOOK.ipynb...", file=sys.stderr)
        return 2
    for path in words[1:]:
        nb = nbformat.read(path, as_version=4)
        marked = mark_checks(nb)
        nbformat.write(nb, path)
        print(f"{path}: {len(marked)} checks: " + "; ".join(name for _, name in marked))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
