"""The notebooks, run on a real Jupyter kernel (nbclient, kernel ``python3``).

* every tutorial (``tutorials/``) and every exercise solution (``notebook/solutions/``)
  runs from top to bottom without an error;
* every unsolved exercise (``notebook/``) fails at its first check, with the check's
  plain-English :class:`pyweb.notebook.CheckFailed` message, not with some other error;
* the notebooks are stored clean (no outputs, no execution counts), a solution differs
  from its exercise only in the ``student`` cell, and each notebook has one ``#`` title;
* trio guest mode on the kernel's own event loop behaves as docs/notebooks.md says.

Each test starts its own kernel, in its own temporary directory and reached over Unix
sockets (:func:`over_unix_sockets`), and each notebook's servers listen on port 0, so the
tests share nothing and can run in parallel (``pytest -n auto`` with pytest-xdist).
"""

from __future__ import annotations

import copy
import os
import re
import tempfile
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from traitlets.config import Config

ROOT = Path(__file__).resolve().parent.parent
TUTORIALS = sorted((ROOT / "tutorials").glob("*.ipynb"))
EXERCISES = sorted((ROOT / "notebook").glob("*.ipynb"))
SOLUTIONS = sorted((ROOT / "notebook" / "solutions").glob("*.ipynb"))
ALL = TUTORIALS + EXERCISES + SOLUTIONS

CELL_TIMEOUT = 30  # seconds per cell: a hung server fails one cell, not the whole run

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _id(path: Path) -> str:
    return str(path.relative_to(ROOT))


def over_unix_sockets(folder: str) -> Config:
    """Kernels reached over Unix sockets in ``folder``, not TCP. Over TCP, jupyter_client
    picks a kernel's ports by binding port 0 and closing, and the kernel binds them a second
    or more later; a server another test starts on port 0 meanwhile can be given one, and
    the client then talks ZeroMQ to an HTTP server (CI failed so, on a loaded machine)."""
    return Config({"KernelManager": {"transport": "ipc", "ip": os.path.join(folder, "zmq")}})


def execute(nb: nbformat.NotebookNode, cwd: Path, *, allow_errors: bool = False) -> None:
    # (a folder of its own under /tmp: a socket's path must fit in 108 bytes)
    with tempfile.TemporaryDirectory(prefix="pyweb-kernel-") as sockets:
        client = NotebookClient(
            nb,
            kernel_name="python3",
            timeout=CELL_TIMEOUT,
            allow_errors=allow_errors,
            resources={"metadata": {"path": str(cwd)}},
            config=over_unix_sockets(sockets),
        )
        client.execute()


def errors_of(nb: nbformat.NotebookNode) -> list[tuple[int, nbformat.NotebookNode]]:
    """(cell index, error output) for every cell that failed."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append((index, output))
    return found


def test_the_tests_kernels_take_no_tcp_port(tmp_path):
    """The kernel's own app says which transport it was started on."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "from ipykernel.kernelapp import IPKernelApp\n"
        "print(IPKernelApp.instance().transport)"
    )])  # fmt: skip
    execute(nb, tmp_path)
    assert nb.cells[0].outputs[0].text.strip() == "ipc"


def test_notebooks_found():
    assert len(TUTORIALS) >= 10 and len(EXERCISES) >= 10
    assert [p.name for p in EXERCISES] == [p.name for p in SOLUTIONS]


# --- stored clean ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for index, cell in enumerate(nb.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [], f"cell {index} of {path.name} has outputs: clear them"
            assert cell.execution_count is None, f"cell {index} of {path.name} was executed"
    assert nb.metadata.kernelspec.name == "python3"


@pytest.mark.parametrize("path", ALL, ids=_id)
def test_one_title_and_h2_sections(path):
    # mkdocs-jupyter builds the table of contents from h2; the h1 is the page title.
    nb = nbformat.read(path, as_version=4)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    assert markdown[0].startswith("# ")
    lines = [line for text in markdown for line in text.splitlines()]
    assert sum(line.startswith("# ") for line in lines) == 1
    assert sum(line.startswith("## ") for line in lines) >= 3
    if path in TUTORIALS:
        assert 15 <= len(nb.cells) <= 35
        assert nb.cells[-1].source.strip() == "srv.stop()"


@pytest.mark.parametrize("exercise", EXERCISES, ids=_id)
def test_solution_differs_only_in_the_student_cell(exercise):
    solution = nbformat.read(exercise.parent / "solutions" / exercise.name, as_version=4)
    task = nbformat.read(exercise, as_version=4)
    assert [c.id for c in task.cells] == [c.id for c in solution.cells]
    student = [c for c in task.cells if "student" in c.metadata.get("tags", [])]
    assert len(student) == 1 and "TODO" in student[0].source
    for mine, theirs in zip(task.cells, solution.cells, strict=True):
        if "student" in mine.metadata.get("tags", []):
            assert mine.source != theirs.source
        elif mine.source.startswith("# "):
            assert theirs.source.startswith(mine.source.splitlines()[0])  # "(solution)"
        else:
            assert mine.source == theirs.source, f"cell {mine.id} differs"
    assert any("check" in c.metadata.get("tags", []) for c in task.cells)


@pytest.mark.parametrize("path", EXERCISES + SOLUTIONS, ids=_id)
def test_checks_are_recorded_for_pyweb_grade(path):
    # pyweb grade knows a deleted check from this record (python -m pyweb.notebook.grade mark)
    from pyweb.notebook.grade import mark_checks

    nb = nbformat.read(path, as_version=4)
    recorded = copy.deepcopy(nb.metadata["pyweb"]["checks"])
    assert mark_checks(nb) == [(c["id"], c["name"]) for c in recorded]
    assert all(name.startswith("Check ") for _, name in mark_checks(nb))
    # the grader runs the recorded source, not the cell's: a check edited without
    # `mark` again would be graded as it was
    assert nb.metadata["pyweb"]["checks"] == recorded, "run: python -m pyweb.notebook.grade mark"


# What a cell makes: a page (%%page NAME, or a NAME.py written into the site), a service's URL,
# a function. (Module file names are not counted: exercise.py serves different services.)
MADE = re.compile(
    r'^%%(?:page|template) (\w+)|root / "(\w+)\.py"|@service\("/(\w+)"|^(?:async )?def (\w+)',
    re.M,
)


def _made(nb: nbformat.NotebookNode, *, student_only: bool) -> set[str]:
    cells = [c for c in nb.cells if c.cell_type == "code"]
    if student_only:
        cells = [c for c in cells if "student" in c.metadata.get("tags", [])]
    return {name for c in cells for m in MADE.finditer(c.source) for name in m.groups() if name}


def test_no_exercise_set_asks_for_what_a_tutorial_makes():
    # A student who did a tutorial, its worked examples and its Your-turn task, has not done
    # an exercise set (docs/course.md): no set's answer is a page, service or function that
    # a tutorial already makes.
    tutorials = {p.name: _made(nbformat.read(p, as_version=4), student_only=False)
                 for p in TUTORIALS}  # fmt: skip
    for path in SOLUTIONS:
        answer = _made(nbformat.read(path, as_version=4), student_only=True)
        assert answer, f"{path.name}: its student cell makes nothing this test recognises"
        for name, made in tutorials.items():
            assert not answer & made, f"{path.name} asks for {answer & made}, which {name} makes"


# --- executed -------------------------------------------------------------------------------


def _on_both_loops(path: Path) -> object:
    """A notebook for the run on each loop, marked where its asyncio run cannot be. The
    tutorials teach on trio; their pages wait with ``pyweb.runtime.sleep`` and start tasks
    with anyio's task group, so that they run on the loop the kernel's servers use."""
    # a tutorial that cannot run on asyncio: its name -> tests.loops.asyncio_lacks(...)
    marks: dict[str, pytest.MarkDecorator] = {}  # none now
    mark = marks.get(path.name) if path.parent.name == "tutorials" else None
    return pytest.param(path, id=_id(path), marks=[mark] if mark else [])


@pytest.mark.loops("trio", "asyncio")
@pytest.mark.parametrize("path", [_on_both_loops(p) for p in TUTORIALS + SOLUTIONS])
def test_runs_without_errors(path, tmp_path, loop, monkeypatch):
    # The kernel is a new process: it learns the loop of its pyweb servers from the environment.
    monkeypatch.setenv("PYWEB_TESTING_LOOP", loop)
    nb = nbformat.read(path, as_version=4)
    try:
        execute(nb, tmp_path)
    except CellExecutionError as exc:
        pytest.fail(f"{_id(path)} failed:\n{exc}")
    if path in SOLUTIONS:
        assert not errors_of(nb)
        text = "".join(
            o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
        )
        checks = sum("check" in c.metadata.get("tags", []) for c in nb.cells)
        assert text.count("passed") == checks
        return
    # A tutorial's exercises are handed out unsolved: their checks fail, in plain words,
    # and nothing else does.
    for index, error in errors_of(nb):
        tags = nb.cells[index].metadata.get("tags", [])
        assert "check" in tags, f"cell {index} failed: {error.ename}: {error.evalue}"
        assert error.ename == "CheckFailed", f"cell {index}: {error.ename}: {error.evalue}"
        assert len(error.traceback) == 1 and "Check failed:" in error.traceback[0]


# Every numbered tutorial ends with exercises and their checks.
PAPER_TUTORIALS = [p for p in TUTORIALS if p.name[:2].isdigit()]


@pytest.mark.parametrize("path", PAPER_TUTORIALS, ids=_id)
def test_tutorials_end_with_exercises_and_their_checks(path):
    nb = nbformat.read(path, as_version=4)
    headings = [c.source.splitlines()[0] for c in nb.cells if c.cell_type == "markdown"]
    assert any("## Exercises" in c.source for c in nb.cells if c.cell_type == "markdown")
    after = next(i for i, c in enumerate(nb.cells) if "## Exercises" in c.source)
    tags = [c.metadata.get("tags", []) for c in nb.cells[after:]]
    assert sum("student" in t for t in tags) >= 1, "a cell tagged student for the answer"
    checks = [t for t in tags if "check" in t]
    assert checks, "checks (cells tagged check) a student runs"
    # Checks fail until solved: nbclient and the docs build go on past them.
    assert all("raises-exception" in t for t in checks)
    assert headings[0].startswith("# ")


FIRST_FAILURE = {
    "01_temperature.ipynb": "Asking for /temperature without c. We expected a form (a <form> "
    "element) with fields 'c'; the page has no form. The page says: 'TODO'",
    "02_form_validation.ipynb": "Asking for /register without fields. We expected a form "
    "(a <form> element) with fields 'name', 'email', 'age'; the page has no form.",
    "03_multiplication_service.ipynb": "For n=3. We expected a table (a <table> element) "
    "with 3 rows of 3 cells; the page has no table.",
    "04_double_amount.ipynb": "For amount=2.5. We expected the number 5 on the page; it is not there. The page says: 'TODO'",
    "05_guest_count.ipynb": "With the two entries of the set-up. We expected the page to say '2 entries'; it does not. The page says: 'TODO'",
    "06_seen_cookie.ipynb": "Visit 1 of the same client. We expected 'seen 1 time(s)' somewhere on the page; it was not there. The page says: 'TODO'",
    "07_first_of.ipynb": "first_of(a, b) with only b sending did not return within 2 s. Is there a loop that never awaits",
    "08_hop_services.ipynb": "For a=6, b=7. We expected '6 × 7 = 42' somewhere on the page; it was not there. The page says: 'TODO'",
    "09_marlow_log.ipynb": "For the line '127.0.0.1 - - [24/Nov/2026:10:00:00 +0000] \"GET /hello HTTP/1.1\" 200 24 \"-\" \"notebook/1.0\"', parse_clf(line)['host'] should be '127.0.0.1'; it is None.",
    "10_cml_rpc.ipynb": "cell_calls([1, 2, 3]) should be [0, 1, 2] (each call gets the value before it); it is [].",
    "11_squares_table.ipynb": "For n=3. We expected a table (a <table> element) with 3 rows of 2 cells; the page has no table. The page says: 'TODO'",
    "12_response_reader.ipynb": "parse_status_line('HTTP/1.1 404 Not Found') should be "
    "('HTTP/1.1', 404, 'Not Found') (the reason phrase may hold spaces); it raised "
    "NotImplementedError('TODO').",
    "13_form_class.ipynb": "Asking for /signup. We expected a form (a <form> element) with "
    "fields 'name', 'email', 'age', 'newsletter'; the page has no form.",
}


@pytest.mark.loops("trio", "asyncio")
@pytest.mark.parametrize("path", EXERCISES, ids=_id)
def test_unsolved_exercise_fails_at_its_first_check_in_plain_words(path, tmp_path, loop, monkeypatch):
    monkeypatch.setenv("PYWEB_TESTING_LOOP", loop)  # the kernel's servers run on the test's loop
    nb = nbformat.read(path, as_version=4)
    with pytest.raises(CellExecutionError):
        execute(nb, tmp_path)
    [(index, error)] = errors_of(nb)  # execution stops at the first failing cell
    tags = [c.metadata.get("tags", []) for c in nb.cells]
    first_check = next(i for i, t in enumerate(tags) if "check" in t)
    assert index == first_check, f"cell {index} failed, not the first check ({first_check})"
    assert error.ename == "CheckFailed", f"{error.ename}: {error.evalue}"
    assert FIRST_FAILURE[path.name] in error.evalue
    # Shown as a message, not as a traceback into pyweb.notebook.
    assert len(error.traceback) == 1 and "Check failed:" in error.traceback[0]
    assert "notebook.py" not in error.traceback[0]
    student = next(i for i, t in enumerate(tags) if "student" in t)
    if nb.cells[student].source.startswith("%%"):  # a magic writes the page into the site
        assert nb.cells[student].outputs[0].text.startswith("wrote ")


# --- guest mode in a real kernel ------------------------------------------------------------

GUEST_CELLS = [
    # 1: start a server as a trio guest on the kernel's asyncio loop. The loop is busy
    # running this cell, so the server cannot have started listening yet.
    """
import asyncio, tempfile, pathlib
import pyweb.notebook
site = pathlib.Path(tempfile.mkdtemp())
(site / "hello.txt").write_text("hello from a guest")
srv = pyweb.notebook.serve(site, mode="guest")
assert asyncio.get_running_loop().is_running()
try:
    srv.port
except RuntimeError as exc:
    assert "still starting" in str(exc)
else:
    raise AssertionError("a guest server listened before the cell ended")
""",
    # 2: between cells the loop runs, and the server starts (on a busy machine it may need a
    # few more turns of the loop: started() waits for them); it survives across cells.
    """
await srv.started()
assert srv.port > 0 and srv.running
r = await srv.aget("/hello.txt")
assert r.status == 200 and r.text == "hello from a guest", r
""",
    # 3: a plain synchronous request would block the loop the server needs: refused.
    """
try:
    srv.get("/hello.txt")
except RuntimeError as exc:
    assert "await srv.aget" in str(exc)
else:
    raise AssertionError("a synchronous request in guest mode did not refuse")
""",
    # 4: a blocking cell freezes the server: a request from another thread times out.
    """
from pyweb.testing import Client
import threading
result = {}
def fetch():
    try:
        result["status"] = Client(srv.url, timeout=0.5).get("/hello.txt").status
    except OSError as exc:
        result["error"] = type(exc).__name__
worker = threading.Thread(target=fetch)
worker.start()
worker.join()   # blocks this cell, hence the loop, hence the server
assert result == {"error": "TimeoutError"}, result
""",
    # 5: %%page works the same, and the access log is collected.
    """
%load_ext pyweb.notebook
""",
    """
%%file_in_site note.txt
written by a cell
""",
    """
r = await srv.aget("/note.txt")
assert r.text == "written by a cell\\n"
await asyncio.sleep(0.2)  # the logging task runs on the loop too
assert any('"GET /note.txt HTTP/1.1" 200' in line for line in srv.log), srv.log
await srv.astop()
assert not srv.running
""",
]


# About trio itself (trio's guest mode on the kernel's asyncio loop): one run, not one per loop.
def test_guest_mode_in_a_real_kernel(tmp_path):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(src.strip()) for src in GUEST_CELLS]
    )
    try:
        execute(nb, tmp_path)
    except CellExecutionError as exc:
        pytest.fail(str(exc))


def test_the_docs_site_shows_every_tutorial_and_exercise_but_no_solution():
    # docs/tutorials -> ../tutorials and docs/exercises -> ../notebook (mkdocs-jupyter).
    config = (ROOT / "mkdocs.yml").read_text()
    assert (ROOT / "docs" / "tutorials").resolve() == ROOT / "tutorials"
    assert (ROOT / "docs" / "exercises").resolve() == ROOT / "notebook"
    for path in TUTORIALS:
        assert f"tutorials/{path.name}" in config, f"{path.name} is not in mkdocs.yml's nav"
    for path in EXERCISES:
        assert f"exercises/{path.name}" in config, f"{path.name} is not in mkdocs.yml's nav"
    assert "exercises/solutions/" in config.split("exclude_docs:")[1].split("\n\n")[0]
    assert 'execute_ignore: ["exercises/*.ipynb"]' in config  # shown unsolved, not run
