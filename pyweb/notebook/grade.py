"""``pyweb grade``: run a class's hand-ins, each in a sandbox, against the teacher's checks.

A teacher collects the students' copies of an exercise notebook into a folder and runs::

    pyweb grade hand-ins/ --master 01_temperature.ipynb --out grades.csv --jobs 2

**The teacher's checks decide.** The check cells (code cells tagged ``check``) come from the
teacher's master notebook (``--master``), or else from the record made when the set was handed
out (:func:`mark_checks`: each check's cell id, name, source, SHA-256 and points, in
``metadata["pyweb"]["checks"]``). Whatever the hand-in's check cells say, the teacher's source
runs: an edited check cell is replaced and flagged, a deleted one is put back and flagged, and
a check tagged ``hidden`` in the master (kept out of the students' copies by ``release``) is
added only now. Before each check the grader binds the check helpers (``expect``, ...) again,
so a cell that redefined them changes nothing; cells that tamper with them are flagged.

**Each hand-in in a sandbox** (:mod:`pyweb.notebook.sandbox`): its kernel runs under
bubblewrap, with its own temporary folder, no other file of the machine writable, no other
hand-in readable, no network but loopback, limits on memory, processes, CPU time and output,
and its whole process tree ended with it. Without a sandbox ``pyweb grade`` refuses unless
``--unsafe`` is given.

Every hand-in is run on a fresh Jupyter kernel (nbclient), cell by cell, top to bottom, as a
student runs it; a failing cell does not stop the next ones. Each check gives one
:class:`Row` whose ``result`` is ``pass``, ``fail`` (the check raised
:class:`~pyweb.notebook.checks.CheckFailed`: ``message`` is its sentence) or ``error`` (another
exception, a timeout, a dead kernel), with the check's points. A cell past ``--timeout`` is
interrupted, as the student would press "Interrupt kernel", and named as a likely infinite
loop. The tables, the gradebook CSV and the students' feedback pages are written by
:mod:`pyweb.notebook.gradebook`.

In the spirit of nbgrader (protected and hidden checks, points, feedback) and otter-grader
(a container per hand-in), without a server or a database: notebooks are the only input.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import hashlib
import itertools
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pyweb.notebook import sandbox

__all__ = ["Row", "Report", "Check", "OUTPUT_LIMIT", "grade_notebook", "grade_report",
           "grade_folder", "grade_reports", "mark_checks", "checks_of", "release"]  # fmt: skip

OUTPUT_LIMIT = 1_000_000
"""Bytes of output kept per cell; the rest is dropped (a hand-in printing megabytes)."""

MESSAGE_LIMIT = 8 * 1024**2
"""The largest message the grader accepts from a kernel: a bigger one (a print of 200 MB) is
refused by ZeroMQ before it reaches the grader's memory."""

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_PROBE_TIMEOUT = 10  # at most this (and at most --timeout) for a kernel to answer an interrupt
# Bound again before each check, so that a student's cell cannot replace them (``expect = ...``).
_CHECK_PROLOGUE = "from pyweb.notebook.checks import *  # pyweb grade: the teacher's helpers\n"
_HELPERS = {"CheckFailed", "expect", "expect_form", "expect_table", "forms_on", "tables_on",
            "explain_error"}  # fmt: skip
_TAMPERING = ("pyweb.notebook.checks", "input_transformers", "sys.modules", "_render_traceback_",
              "register_magic_function", "events.register", "sys.excepthook")  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One line of the grade table: a check of a hand-in, its verdict and its points."""

    notebook: str
    check: str
    result: str  # "pass", "fail" or "error"
    message: str
    points: float = 0.0
    max_points: float = 1.0
    flag: str = ""  # what the grader restored or added: "edited", "deleted", "hidden"


@dataclass(frozen=True)
class Check:
    """A check as the teacher wrote it."""

    id: str
    name: str
    source: str
    points: float = 1.0
    hidden: bool = False
    # the ids of the cells above it as handed out, nearest first: where a deleted check goes back
    after: tuple[str, ...] = ()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.source.encode()).hexdigest()


@dataclass
class Report:
    """Everything the grading of one hand-in found: a row per check, the errors the
    student's own cells raised, and the grader's notes (restored checks, tampering)."""

    notebook: str
    rows: list[Row]
    cell_errors: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def total(self) -> float:
        return sum(row.points for row in self.rows)

    @property
    def max_total(self) -> float:
        return sum(row.max_points for row in self.rows)


# --- which checks a notebook has ----------------------------------------------------------


def _heading(text: str) -> str | None:
    for line in text.splitlines():
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return None


def _is_check(cell: Any) -> bool:
    return cell.cell_type == "code" and "check" in cell.metadata.get("tags", [])


def _points_of(cell: Any) -> float:
    points = cell.metadata.get("pyweb", {}).get("points", 1)
    if not isinstance(points, (int, float)) or isinstance(points, bool) or points < 0:
        raise ValueError(f"a check's points must be a number >= 0, not {points!r}")
    return float(points)


def _cells_checks(nb: Any) -> list[Check]:
    """The check cells of ``nb`` in order, each named by the heading above it."""
    found: list[Check] = []
    heading: str | None = None
    above: list[str] = []
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            heading = _heading(cell.source) or heading
        elif _is_check(cell):
            name = heading if heading and heading not in [c.name for c in found] else None
            hidden = "hidden" in cell.metadata.get("tags", [])
            found.append(Check(cell.get("id", ""), name or f"check {len(found) + 1}",
                               cell.source, _points_of(cell), hidden, tuple(above[:-6:-1])))  # fmt: skip
        above.append(cell.get("id", ""))
    return found


def _recorded(nb: Any) -> list[Check]:
    recorded = nb.metadata.get("pyweb", {}).get("checks") or []
    return [Check(c["id"], c["name"], c.get("source", ""), float(c.get("points", 1)),
                  after=tuple(c.get("after", ()))) for c in recorded]  # fmt: skip


def checks_of(nb: Any) -> list[tuple[str, str]]:
    """The checks a notebook should have, as ``(cell id, name)``: those recorded by
    :func:`mark_checks` when it was handed out, else its check cells as they are now."""
    return [(c.id, c.name) for c in (_recorded(nb) or _cells_checks(nb))]


def mark_checks(nb: Any) -> list[tuple[str, str]]:
    """Record the visible check cells of ``nb`` in its metadata (id, name, source, SHA-256,
    points), so ``pyweb grade`` can put back a check a student edited or deleted. Hidden
    checks are not recorded: a student's copy must not show them. Returns ``(id, name)``."""
    checks = [c for c in _cells_checks(nb) if not c.hidden]
    nb.metadata.setdefault("pyweb", {})["checks"] = [
        {"id": c.id, "name": c.name, "points": c.points, "after": list(c.after), "sha256": c.sha256,
         "source": c.source}
        for c in checks
    ]
    return [(c.id, c.name) for c in checks]


def release(master: Any) -> Any:
    """The students' copy of a master notebook: hidden checks removed, outputs cleared, the
    visible checks recorded (:func:`mark_checks`)."""
    import copy

    student = copy.deepcopy(master)
    student.cells = [c for c in student.cells
                     if not (_is_check(c) and "hidden" in c.metadata.get("tags", []))]  # fmt: skip
    for cell in student.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    mark_checks(student)
    return student


# --- the notebook that is run: the student's cells, the teacher's checks -------------------


def _assemble(hand_in: Any, checks: list[Check]) -> tuple[list[Any], dict[str, str], list[str]]:
    """The cells to run: the hand-in's own cells, with each check cell replaced by the
    teacher's source (put back where it was deleted, added where it is hidden). Returns the
    cells, a flag per check that was not as handed out, and notes for the teacher."""
    import nbformat

    by_id = {c.id: c for c in checks}
    flags: dict[str, str] = {}
    notes: list[str] = []
    cells: list[Any] = []
    for cell in hand_in.cells:
        check = by_id.get(cell.get("id", ""))
        if check is not None and cell.cell_type == "code":
            if check.source and cell.source != check.source:
                flags[check.id] = "edited"
                notes.append(f"{check.name}: the check cell was edited; the teacher's check ran")
            cells.append(_check_cell(check.source or cell.source, check.id))
        elif _is_check(cell):
            notes.append("a cell tagged check that is not one of the teacher's checks ran as "
                          "the student's own code")  # fmt: skip
            cells.append(nbformat.v4.new_code_cell(cell.source))
        else:
            cells.append(cell)
    present = {c.get("id") for c in cells}
    # The last first: a check that goes back "above the next check" then finds the next one
    # in place even when it was deleted too.
    for number in reversed(range(len(checks))):
        check = checks[number]
        if check.id not in present and check.source:
            where = _place(cells, check, checks[:number], checks[number + 1:])
            cells.insert(where, _check_cell(check.source, check.id))
            flags[check.id] = "hidden" if check.hidden else "deleted"
            if not check.hidden:
                notes.append(f"{check.name}: the check cell was deleted; the teacher's check ran")
            present.add(check.id)
    return cells, flags, notes + _tampering(cells, set(by_id))


def _place(cells: list[Any], check: Check, earlier: list[Check], later: list[Check]) -> int:
    """Where a missing check goes back: below the nearest cell that was above it, else above
    the next check, else at the end; never above an earlier check nor below a later one
    (the nearest cell above may have been one that is now below them)."""
    ids = [c.get("id") for c in cells]
    before = next((ids.index(c.id) for c in later if c.id in ids), len(cells))
    after = max((ids.index(c.id) + 1 for c in earlier if c.id in ids), default=0)
    where = next((ids.index(above) + 1 for above in check.after if above in ids), before)
    return min(max(where, after), before)


def _check_cell(source: str, cell_id: str) -> Any:
    import nbformat

    cell = nbformat.v4.new_code_cell(_CHECK_PROLOGUE + source)
    cell["id"] = cell_id
    cell.metadata["tags"] = ["check"]
    return cell


def _tampering(cells: list[Any], check_ids: set[str]) -> list[str]:
    """Notes on student cells that redefine the check helpers or reach into the kernel."""
    notes = []
    for number, cell in enumerate(cells, 1):
        if cell.cell_type != "code" or cell.get("id") in check_ids:
            continue
        code = "\n".join(ln for ln in cell.source.splitlines() if not ln.lstrip().startswith("%"))
        names: set[str] = set()
        try:
            for node in ast.walk(ast.parse(code)):
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                    names.add(node.id)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    names.add(node.name)
        except SyntaxError:
            pass
        touched = sorted(names & _HELPERS) + [t for t in _TAMPERING if t in code]
        if touched:
            notes.append(f"cell {number} touches the checks' machinery ({', '.join(touched)}): "
                         "look at it; the grader bound the helpers again before each check")
    return notes


# --- running one notebook -------------------------------------------------------------------


def _client_class() -> type:
    from nbclient import NotebookClient

    class CappedClient(NotebookClient):
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


_uids = itertools.count()
_shared: list[Any] = []
_shared_lock = threading.Lock()


def _context() -> Any:
    """The ZeroMQ context of every kernel client of this process (one I/O thread, not one
    per hand-in), refusing messages over MESSAGE_LIMIT."""
    import zmq
    import zmq.asyncio

    with _shared_lock:
        if not _shared:
            context = zmq.asyncio.Context()
            context.setsockopt(zmq.MAXMSGSIZE, MESSAGE_LIMIT)  # every socket made after
            _shared.append(context)
        return _shared[0]


def _kernel_manager(kernel: str, workdir: Path, limits: sandbox.Limits, sandboxed: bool) -> Any:
    """A kernel manager whose clients refuse messages over MESSAGE_LIMIT, whose kernel is
    reached over Unix sockets in ``workdir`` and, if ``sandboxed``, runs in a sandbox there.

    Why Unix sockets even without a sandbox: over TCP, jupyter_client picks the kernel's five
    ports by binding port 0 and closing, and the kernel binds them a second or more later.
    Any server started meanwhile on port 0 (another hand-in's, with ``--jobs``) can be given
    one of them, and the grader then talks ZeroMQ to an HTTP server. A socket file in the
    hand-in's own folder cannot be taken by anyone else."""
    from jupyter_client.manager import AsyncKernelManager

    context = _context()
    uid = None
    if sandboxed and os.geteuid() == 0:  # a user of its own, for the process limit
        uid = sandbox.SANDBOX_UID + (os.getpid() % 500) * 64 + next(_uids) % 64

    class GradingKernelManager(AsyncKernelManager):
        def client(self, **kwargs: Any) -> Any:
            return super().client(context=context, **kwargs)  # nbclient's, with the cap

        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            argv = super().format_kernel_cmd(extra_arguments)
            if not sandboxed:
                return list(argv)
            return sandbox.wrap(argv, workdir=workdir, uid=uid, limits=limits)

        def write_connection_file(self, **kwargs: Any) -> Any:
            written = super().write_connection_file(**kwargs)
            if uid is not None:  # the kernel runs as the hand-in's user and must read it
                os.chown(self.connection_file, uid, uid)
            return written

    ipc = workdir / ".kernel"
    ipc.mkdir()
    if uid is not None:
        for path in (workdir, *workdir.iterdir()):
            os.chown(path, uid, uid)
    km = GradingKernelManager(kernel_name=kernel, context=context, transport="ipc",
                              ip=str(ipc / "zmq"), connection_file=str(ipc / "kernel.json"))  # fmt: skip
    # A signal would reach bwrap, not the kernel: interrupt with a message on the control channel.
    spec = km.kernel_spec
    if spec is not None and sandboxed:
        spec.interrupt_mode = "message"
    return km


class _IopubGuard:
    """ZeroMQ drops the connection that brought a message over MESSAGE_LIMIT (a print of
    200 MB) and does not make it again; this notices and connects the output channel anew,
    so that the next cells' output is seen."""

    def __init__(self, kc: Any) -> None:
        self.kc = kc
        self.monitor = self._watch()

    def _watch(self) -> Any:
        import zmq

        return self.kc.iopub_channel.socket.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    async def dropped(self) -> bool:
        """Whether the channel was dropped since the last call (and is now connected anew)."""
        if not await self.monitor.poll(0):
            return False
        self.kc.iopub_channel.socket.disable_monitor()
        self.monitor.close(linger=0)
        self.kc.iopub_channel.close()
        self.kc._iopub_channel = None  # jupyter_client's property connects a new one
        self.monitor = self._watch()
        return True


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


def _loop_sentence(number: int, timeout: float) -> str:
    return (f"cell {number} did not finish within {timeout:g} s and was interrupted: an "
            "infinite loop? (a while loop whose condition never becomes false, a page that "
            "never answers, or megabytes of output)")  # fmt: skip


def _verdict(cell: Any, reply: dict[str, Any] | None, number: int, timeout: float) -> tuple[str, str]:
    """(result, message) of a check cell that has run."""
    content = (reply or {}).get("content", {})
    if content.get("ename") == "Timeout":
        return "error", _loop_sentence(number, timeout)
    error = _error_of(cell)
    if error is None and content.get("status") == "error":
        error = (content.get("ename", "Error"), _ANSI.sub("", str(content.get("evalue", ""))))
    if error is None:
        return "pass", _last_printed(cell)
    ename, evalue = error
    if ename == "CheckFailed":
        return "fail", _shorten(evalue)
    return "error", _shorten(f"{ename}: {evalue}" if evalue else ename)


_SYNTAX = {"SyntaxError", "IndentationError", "TabError", "PageSyntaxError"}


def _own_error(cell: Any, number: int, reply: dict[str, Any] | None, timeout: float) -> str | None:
    """The error a student's own cell raised, in a sentence; syntax errors named as such."""
    content = (reply or {}).get("content", {})
    if content.get("ename") == "Timeout":
        return _loop_sentence(number, timeout)
    error = _error_of(cell)
    if error is None:
        return None
    ename, evalue = error
    if ename in _SYNTAX:
        return (f"cell {number}: a syntax error, so none of the cell ran: {_shorten(evalue)}. "
                "Fix the line it names (a missing colon, bracket or quote is the usual cause).")  # fmt: skip
    return f"cell {number} raised {ename}: {_shorten(evalue)}"


async def _run(nb: Any, report: Report, checks: list[Check], timeout: float, kernel: str,
               sandboxed: bool, limits: sandbox.Limits) -> None:  # fmt: skip
    from nbclient.exceptions import DeadKernelError

    cells, flags, notes = _assemble(nb, checks)
    report.notes += notes
    nb.cells = cells
    ids = {c.id for c in checks}
    results: dict[str, tuple[str, str]] = {}
    replies: dict[int, dict[str, Any]] = {}

    def keep_reply(cell: Any, cell_index: int, execute_reply: dict[str, Any]) -> None:
        replies[cell_index] = execute_reply

    workdir = Path(tempfile.mkdtemp(prefix="pyweb-grade-"))
    _write_copy(nb, workdir / "hand-in.ipynb")
    km = _kernel_manager(kernel, workdir, limits, sandboxed)
    client = _client_class()(
        nb,
        km=km,
        timeout=timeout,
        allow_errors=True,
        interrupt_on_timeout=True,
        error_on_timeout={"ename": "Timeout", "evalue": f"past {timeout:g} s"},
        shutdown_kernel="immediate",
        on_cell_executed=keep_reply,
        resources={"metadata": {"path": str(workdir)}},
    )
    stopped: str | None = None
    kc: Any = None
    try:
        # The kernel's own warnings (stderr) are not the teacher's business.
        async with client.async_setup_kernel(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
            guard = _IopubGuard(client.kc)
            kc = client.kc
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                try:
                    await client.async_execute_cell(cell, index)
                except DeadKernelError:
                    stopped = (f"the kernel died in cell {index + 1} (exit(), os._exit(), a "
                               "crash, or past its limit of memory or CPU time)")  # fmt: skip
                    results[cell.get("id")] = ("error", stopped)
                    report.cell_errors.append(stopped)
                    break
                if await guard.dropped():
                    report.cell_errors.append(f"cell {index + 1} printed more than "
                                              f"{MESSAGE_LIMIT // 1024**2} MB at once; that "
                                              "output was dropped")  # fmt: skip
                reply = replies.get(index)
                if reply and reply.get("content", {}).get("ename") == "Timeout":
                    if not await _answers(client, replies):
                        stopped = (f"{_loop_sentence(index + 1, timeout)}; the kernel did not "
                                   "answer the interrupt")  # fmt: skip
                        results.setdefault(cell.get("id"), ("error", stopped))
                        report.cell_errors.append(stopped)
                        break
                if cell.get("id") in ids:
                    results.setdefault(cell.get("id"), _verdict(cell, reply, index + 1, timeout))
                elif (own := _own_error(cell, index + 1, reply, timeout)) is not None:
                    report.cell_errors.append(own)
    except Exception as exc:  # a kernel that would not start, a broken notebook
        stopped = stopped or f"the notebook could not be run: {type(exc).__name__}: {exc}"
    finally:
        # nbclient shuts down only a kernel it made: this one is ours to end (and, with it,
        # the sandbox and every process the hand-in left)
        with contextlib.suppress(Exception):
            await km.shutdown_kernel(now=True)
        if kc is not None and kc.hb_channel.is_alive():  # nbclient leaves its thread running
            kc.hb_channel.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    for check in checks:
        result, message = results.get(check.id) or ("error", f"not run: {stopped}")
        if not check.source and check.id not in results and not stopped:
            message = "missing cell: the check's cell was deleted"
        earned = check.points if result == "pass" else 0.0
        report.rows.append(Row(report.notebook, check.name, result, message, earned,
                               check.points, flags.get(check.id, "")))  # fmt: skip


def _write_copy(nb: Any, path: Path) -> None:
    import nbformat

    nbformat.write(nb, str(path))


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


def grade_report(path: str | Path, *, name: str | None = None, master: Any = None,
                 timeout: float = 30, kernel: str = "python3", sandboxed: bool = True,
                 limits: sandbox.Limits | None = None) -> Report:  # fmt: skip
    """Grade one hand-in against ``master``'s checks (a notebook) or, without it, those
    recorded in the hand-in; never raises for what the hand-in does. ``RuntimeError`` when
    ``sandboxed`` and no sandbox can be made here (:func:`sandbox.unavailable` says why)."""
    import nbformat

    report = Report(name or Path(path).name, [])
    try:
        nb = nbformat.read(str(path), as_version=4)
    except Exception as exc:
        report.rows.append(Row(report.notebook, "(notebook)", "error",
                               f"not a readable notebook: {exc}"))  # fmt: skip
        return report
    checks = _cells_checks(master) if master is not None else _recorded(nb)
    if not checks:  # neither a master nor a record: the hand-in's own check cells, unverified
        checks = [Check(c.id, c.name, "", c.points) for c in _cells_checks(nb)]
    if not checks:
        report.rows.append(Row(report.notebook, "(notebook)", "error",
                               "the notebook has no check cells"))  # fmt: skip
        return report
    if sandboxed and (why := sandbox.unavailable()) is not None:
        raise RuntimeError(f"no sandbox to grade {path} in: {why}; sandboxed=False runs the "
                           "hand-in without one, with your rights")  # fmt: skip
    asyncio.run(_run(nb, report, checks, timeout, kernel, sandboxed, limits or sandbox.Limits()))
    return report


def grade_notebook(path: str | Path, *, name: str | None = None, timeout: float = 30,
                   kernel: str = "python3", master: Any = None,
                   sandboxed: bool = True) -> list[Row]:  # fmt: skip
    """The rows of :func:`grade_report`."""
    return grade_report(path, name=name, master=master, timeout=timeout, kernel=kernel,
                        sandboxed=sandboxed).rows  # fmt: skip


def notebooks_in(folder: Path) -> list[Path]:
    """Every ``.ipynb`` under ``folder``, sorted, without Jupyter's checkpoint copies."""
    return sorted(
        p for p in folder.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts and p.is_file()
    )


def grade_reports(folder: str | Path, *, jobs: int = 1, progress: Any = None,
                  **options: Any) -> list[Report]:  # fmt: skip
    """:func:`grade_report` on every notebook under ``folder`` (named by their path relative
    to it), ``jobs`` at a time; ``progress(path, report)`` is called after each."""
    root = Path(folder)

    def one(path: Path) -> Report:
        report = grade_report(path, name=path.relative_to(root).as_posix(), **options)
        if progress is not None:
            progress(path, report)
        return report

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        return list(pool.map(one, notebooks_in(root)))


def grade_folder(folder: str | Path, *, timeout: float = 30, kernel: str = "python3",
                 progress: Any = None, **options: Any) -> list[Row]:  # fmt: skip
    """The rows of :func:`grade_reports`; ``progress(path, rows)`` is called after each."""
    def rows_progress(path: Path, report: Report) -> None:
        if progress is not None:
            progress(path, report.rows)

    reports = grade_reports(folder, timeout=timeout, kernel=kernel, progress=rows_progress,
                            **options)  # fmt: skip
    return [row for report in reports for row in report.rows]


# --- the command ----------------------------------------------------------------------------


def add_parser(commands: Any) -> None:
    """Add ``grade`` to the ``pyweb`` command's subcommands."""
    grade = commands.add_parser(
        "grade",
        help="run every notebook in DIR, each in a sandbox, against the teacher's checks",
        description="Run every notebook under DIR (the students' hand-ins) on a fresh Jupyter "
        "kernel in a sandbox (bubblewrap), with the teacher's check cells (from --master, or "
        "as recorded when the set was handed out), and write one row per check to FILE.csv "
        "(notebook,check,result,message,points,max_points,flag), a table students x checks "
        "to FILE.html, a gradebook FILE.gradebook.csv (student,total,max,points per check) "
        "and a feedback page per student in FILE-feedback/. Exit status 0 when the grading "
        "ran, whatever the grades.",
    )
    grade.add_argument("dir", metavar="DIR", help="folder of notebooks (searched recursively)")
    grade.add_argument("--out", required=True, metavar="FILE.csv", help="the CSV to write")
    grade.add_argument("--master", metavar="NOTEBOOK",
                       help="the teacher's notebook whose check cells (hidden ones too) are run")  # fmt: skip
    grade.add_argument("--timeout", type=float, default=30.0, metavar="S",
                       help="seconds a cell may run before it is interrupted (default: 30)")  # fmt: skip
    grade.add_argument("--jobs", type=int, default=1, metavar="N",
                       help="hand-ins graded at the same time (default: 1)")  # fmt: skip
    grade.add_argument("--unsafe", action="store_true",
                       help="run the hand-ins without a sandbox, with your rights (only where "
                       "no sandbox can be made, for hand-ins you trust)")  # fmt: skip
    grade.add_argument("--kernel", default="python3", metavar="NAME",
                       help="Jupyter kernel (default: python3)")  # fmt: skip


def _usage_error(args: Any, folder: Path) -> str | None:
    if not folder.is_dir():
        return f"{args.dir!r} is not a folder"
    if args.timeout <= 0:
        return "--timeout must be more than 0 seconds"
    if args.jobs < 1:
        return f"--jobs must be 1 or more, not {args.jobs}"
    if args.master is not None and not Path(args.master).is_file():
        return f"--master {args.master!r} is not a file"
    if not notebooks_in(folder):
        return f"no notebooks (.ipynb) under {args.dir!r}"
    try:
        import nbclient  # noqa: F401
    except ImportError:
        return "grading needs nbclient and ipykernel: pip install 'pyweb[notebooks]'"
    if not args.unsafe and (why := sandbox.unavailable()) is not None:
        return (f"no sandbox for the hand-ins: {why}. Grading runs the students' code; "
                "install bubblewrap, or give --unsafe to run it with your own rights")  # fmt: skip
    return None


def run(args: Any) -> int:
    """``pyweb grade DIR --out FILE.csv [--master NB] [--jobs N] [--timeout S] [--unsafe]``."""
    import sys
    import time

    import nbformat

    from pyweb.notebook import gradebook

    folder = Path(args.dir)
    if (error := _usage_error(args, folder)) is not None:
        print(f"pyweb grade: error: {error}", file=sys.stderr)
        return 2
    master = nbformat.read(args.master, as_version=4) if args.master else None
    if master is None:
        print("pyweb grade: no --master: the checks recorded in each hand-in are run; a "
              "student could have edited that record too", file=sys.stderr)  # fmt: skip
    if args.unsafe:
        print("pyweb grade: --unsafe: the hand-ins run WITHOUT a sandbox, with your rights",
              file=sys.stderr)  # fmt: skip

    def progress(path: Path, report: Report) -> None:
        counts = {k: sum(r.result == k for r in report.rows) for k in ("pass", "fail", "error")}
        print(f"{path.relative_to(folder).as_posix()}: {counts['pass']} pass, "
              f"{counts['fail']} fail, {counts['error']} error, "
              f"{report.total:g}/{report.max_total:g} points", flush=True)  # fmt: skip

    started = time.monotonic()
    reports = grade_reports(folder, jobs=args.jobs, progress=progress, master=master,
                            timeout=args.timeout, kernel=args.kernel,
                            sandboxed=not args.unsafe)  # fmt: skip
    written = gradebook.write_all(reports, Path(args.out), title=f"Grades: {folder.name or folder}")
    print(f"graded {len(reports)} notebooks in {time.monotonic() - started:.0f} s; wrote "
          + ", ".join(str(p) for p in written))  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m pyweb.notebook.grade mark NOTEBOOK...``: record the check cells of each
    notebook in its metadata; ``release MASTER STUDENT``: write the students' copy of a
    master notebook (hidden checks removed, the visible ones recorded)."""
    import sys

    import nbformat

    words = list(sys.argv[1:] if argv is None else argv)
    if len(words) == 3 and words[0] == "release":
        master = nbformat.read(words[1], as_version=4)
        nbformat.write(release(master), words[2])
        hidden = [c.name for c in _cells_checks(master) if c.hidden]
        print(f"{words[2]}: the students' copy; hidden checks left out: {len(hidden)}")
        return 0
    if len(words) < 2 or words[0] != "mark":
        print("usage: python -m pyweb.notebook.grade mark NOTEBOOK.ipynb...\n"
              "       python -m pyweb.notebook.grade release MASTER.ipynb STUDENT.ipynb",
              file=sys.stderr)  # fmt: skip
        return 2
    for path in words[1:]:
        nb = nbformat.read(path, as_version=4)
        marked = mark_checks(nb)
        nbformat.write(nb, path)
        print(f"{path}: {len(marked)} checks: " + "; ".join(name for _, name in marked))
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
