"""``pyweb grade`` on a class of hand-ins, each in the sandbox, on real Jupyter kernels.

The class (tests/notebook/handins.py) holds honest hand-ins of exercise 1 and the attacks a
review tried on the grader: edited checks, a cell replacing ``expect``, deleted checks,
reading another student's files, the teacher's folder via ``/proc/<ppid>/cwd``, a server
left running, 200 MB of output, a fork of 200 processes, ``os._exit``, an infinite loop, a
kernel that ignores interrupts. It is graded once, against a master with a hidden check, the
way a teacher runs it; each test then reads what the grading left behind. Every attack must
be harmless: the others' grades right, their files intact, nothing left running.
"""

from __future__ import annotations

import csv
import hashlib
import os
import re
import socket
import subprocess
import sys
import threading
import time
from html import unescape
from pathlib import Path

import nbformat
import pytest

from pyweb.notebook import grade, sandbox
from tests.notebook import handins

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ["Check 1: the form", "Check 2: the conversion", "Check 3: the form sends c",
          "Check 4: not a number", "Check 5: a body temperature"]  # fmt: skip
HEADER = ["notebook", "check", "result", "message", "points", "max_points", "flag"]

needs_sandbox = pytest.mark.skipif(
    sandbox.unavailable() is not None, reason=f"no sandbox here: {sandbox.unavailable()}"
)
pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in folder.rglob("*") if p.is_file()}  # fmt: skip


def _marked_processes() -> list[str]:
    """Processes whose command line carries the attacks' marker (left by hal and lou)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if handins.MARKER.encode() in cmdline and pid != str(os.getpid()):
            found.append(pid)
    return found


def _peak_rss_mb(process: subprocess.Popen[str]) -> int:
    """Poll the process's high-water mark of resident memory until it ends."""
    peak = 0
    while process.poll() is None:
        try:
            status = Path(f"/proc/{process.pid}/status").read_text()
            peak = max(peak, int(re.search(r"VmHWM:\s+(\d+)", status).group(1)))  # type: ignore[union-attr]
        except (OSError, AttributeError):
            pass
        time.sleep(0.1)
    return peak // 1024


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    top = tmp_path_factory.mktemp("course")
    folder = top / "hand-ins"
    handins.write_class(folder)
    (folder / ".ipynb_checkpoints").mkdir()
    nbformat.write(nbformat.read(handins.EXERCISE, as_version=4),
                   str(folder / ".ipynb_checkpoints" / "old-checkpoint.ipynb"))  # fmt: skip
    master = top / "master.ipynb"
    nbformat.write(handins.master(), str(master))
    honest = {k: v for k, v in _digest(folder).items() if k.startswith(("ada/", "zed/"))}
    out = top / "grades" / "grades.csv"
    out.parent.mkdir()
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "pyweb", "grade", str(folder), "--master", str(master),
         "--out", str(out), "--timeout", "10", "--jobs", "2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=top,
    )  # fmt: skip
    peak = _peak_rss_mb(process)
    stdout, stderr = process.communicate(timeout=30)
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return {
        "returncode": process.returncode, "stdout": stdout, "stderr": stderr, "rows": rows,
        "out": out, "folder": folder, "top": top, "honest": honest, "peak_mb": peak,
        "seconds": time.monotonic() - started, "leftovers": _marked_processes(),
    }  # fmt: skip


def _rows_of(graded, student):
    return [dict(zip(HEADER, row, strict=True)) for row in graded["rows"][1:]
            if row[0] == f"{student}/01_temperature.ipynb"]  # fmt: skip


def _feedback(graded, student) -> str:
    page = graded["out"].parent / "grades-feedback" / f"{student}_01_temperature.html"
    return unescape(re.sub(r"<[^>]+>", " ", page.read_text()))


def _results(graded, student):
    return [r["result"] for r in _rows_of(graded, student)]


# --- the grading as a whole ------------------------------------------------------------------


@needs_sandbox
def test_every_hand_in_gets_a_row_per_check_with_points(graded):
    assert graded["returncode"] == 0, graded["stderr"]
    assert graded["rows"][0] == HEADER
    students = sorted({row[0].split("/")[0] for row in graded["rows"][1:]})
    assert students == sorted(handins.CLASS)  # not the checkpoint copy
    for student in students:
        assert [r["check"] for r in _rows_of(graded, student)] == CHECKS, student
    assert [r["max_points"] for r in _rows_of(graded, "ada")] == ["1", "1", "1", "1", "2"]
    assert "ada/01_temperature.ipynb: 5 pass, 0 fail, 0 error, 6/6 points" in graded["stdout"]
    assert "Kernel is running" not in graded["stderr"] + graded["stdout"]


@needs_sandbox
def test_the_gradebook_has_a_row_per_student_with_total_and_points(graded):
    book = graded["out"].with_suffix(".gradebook.csv")
    with open(book, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    assert table[0] == ["student", "total", "max", *CHECKS]
    by_student = {row[0]: row for row in table[1:]}
    assert by_student["ada"] == ["ada", "6", "6", "1", "1", "1", "1", "2"]
    assert by_student["cy"] == ["cy", "0", "6", "0", "0", "0", "0", "0"]
    assert len(by_student) == len(handins.CLASS)


@needs_sandbox
def test_the_honest_hand_ins_are_graded_right_and_left_intact(graded):
    for student in ("ada", "zed"):
        assert _results(graded, student) == ["pass"] * 5, _rows_of(graded, student)
    now = _digest(graded["folder"])
    assert {k: now[k] for k in graded["honest"]} == graded["honest"]
    assert "None: every cell of yours ran." in _feedback(graded, "ada")


@needs_sandbox
def test_the_teachers_html_table_totals_points_and_shows_the_flags(graded):
    page = graded["out"].with_suffix(".html").read_text()
    assert page.count("<tr>") == 1 + len(handins.CLASS)
    assert "<td>6 / 6</td>" in page and "<td>0 / 6</td>" in page
    assert "✗ (edited)" in page and "(deleted)" in page
    assert "For the teacher's eye</h2><dl><dt>" in page


# --- item 1: the teacher's checks decide -------------------------------------------------------


@needs_sandbox
def test_edited_check_cells_are_replaced_by_the_teachers_and_flagged(graded):
    jon = _rows_of(graded, "jon")
    assert [r["result"] for r in jon] == ["fail"] * 5
    assert [r["flag"] for r in jon[:4]] == ["edited"] * 4
    assert jon[0]["message"].startswith("Asking for /temperature without c. We expected a form")
    assert "your copy of this check was changed or removed" in _feedback(graded, "jon")


@needs_sandbox
def test_a_cell_replacing_expect_changes_nothing_and_is_flagged(graded):
    assert _results(graded, "kim") == ["fail"] * 5
    page = unescape(graded["out"].with_suffix(".html").read_text())
    assert re.search(r"kim/01_temperature.ipynb</dt><dd>cell \d+ touches the checks' machinery "
                     r"\(expect, expect_form\)", page)  # fmt: skip


@needs_sandbox
def test_deleted_checks_are_put_back_where_they_were(graded):
    rows = _rows_of(graded, "max")
    assert [r["flag"] for r in rows] == ["deleted", "deleted", "", "", "hidden"]
    assert [r["result"] for r in rows] == ["fail"] * 5  # run on a live server, in order
    assert "The page says: 'TODO'" in rows[0]["message"]


@needs_sandbox
def test_a_hidden_check_is_added_at_grading_with_its_points(graded):
    [ada5] = [r for r in _rows_of(graded, "ada") if r["check"] == CHECKS[4]]
    assert (ada5["result"], ada5["points"], ada5["flag"]) == ("pass", "2", "hidden")
    assert ada5["message"] == "Check 5 passed: 36.6 °C is 97.9 °F."
    [cy5] = [r for r in _rows_of(graded, "cy") if r["check"] == CHECKS[4]]
    assert cy5["result"] == "fail" and cy5["message"].startswith("For c=36.6.")


# --- item 2: the attacks, each harmless ------------------------------------------------------


@needs_sandbox
def test_another_students_files_are_not_there(graded):
    assert "blocked: nothing of the class" in _feedback(graded, "gus")
    assert _results(graded, "gus") == ["pass"] * 5  # its own page still works


@needs_sandbox
def test_the_teachers_folder_is_not_reachable_through_proc(graded):
    feedback = _feedback(graded, "gus")
    assert "blocked: /proc/<ppid>/cwd is" in feedback and "LEAKED" not in feedback
    assert not list(graded["top"].rglob("left-by-a-student.txt"))


@needs_sandbox
def test_a_server_left_running_is_gone_and_had_no_network(graded):
    assert "blocked: no network" in _feedback(graded, "hal")
    assert graded["leftovers"] == []
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", 18551), timeout=1).close()
    assert _results(graded, "hal") == ["pass"] * 5


@needs_sandbox
def test_200_mb_of_output_is_dropped_and_the_grader_stays_small(graded):
    assert _results(graded, "ivy") == ["pass"] * 5
    assert "printed more than 8 MB at once; that output was dropped" in _feedback(graded, "ivy")
    assert graded["peak_mb"] < 250, graded["peak_mb"]  # 629 MB before the cap
    assert graded["out"].stat().st_size < 50_000


@needs_sandbox
def test_a_fork_of_200_processes_is_stopped_by_the_process_limit(graded):
    found = re.search(r"blocked: (\d+) processes, then BlockingIOError", _feedback(graded, "lou"))
    assert found and int(found.group(1)) < 200
    assert graded["leftovers"] == []


@needs_sandbox
def test_os_exit_ends_only_that_hand_in(graded):
    for row in _rows_of(graded, "fay"):
        assert row["result"] == "error"
        assert row["message"].startswith("not run: the kernel died in cell 6 (exit(), os._exit()")


@needs_sandbox
def test_an_infinite_loop_is_named_as_one_and_the_checks_still_run(graded):
    assert re.search(r"cell 6 did not finish within 10 s and was interrupted: an infinite loop\?",
                     _feedback(graded, "eve"))  # fmt: skip
    assert _results(graded, "eve") == ["pass"] * 5


@needs_sandbox
def test_a_kernel_ignoring_interrupts_is_given_up_on(graded):
    for row in _rows_of(graded, "ned"):
        assert row["result"] == "error"
        assert "the kernel did not answer the interrupt" in row["message"]


# --- item 3: feedback a student can act on ---------------------------------------------------


@needs_sandbox
def test_a_syntax_error_is_named_as_such_in_the_feedback(graded):
    feedback = _feedback(graded, "dee")
    assert "cell 5: a syntax error, so none of the cell ran: expected ':'" in feedback
    assert "6 points" in feedback and "0 of" in feedback


@needs_sandbox
def test_grading_two_at_a_time_took_less_than_serially_would_allow(graded):
    # a generous reliability bound, not a speed claim: 14 hand-ins, 2 jobs, a loaded machine
    assert graded["seconds"] < 500


# --- without a kernel ---------------------------------------------------------------------------


def test_without_a_sandbox_grade_refuses_unless_unsafe(tmp_path):
    nbformat.write(nbformat.read(handins.SOLUTION, as_version=4), str(tmp_path / "a.ipynb"))
    env = {**os.environ, "PATH": str(tmp_path / "no-tools-here")}  # no bwrap to be found
    run = subprocess.run([sys.executable, "-m", "pyweb", "grade", str(tmp_path), "--out",
                          str(tmp_path / "g.csv")], capture_output=True, text=True, env=env)  # fmt: skip
    assert run.returncode == 2
    assert "no sandbox for the hand-ins: bwrap is not installed" in run.stderr
    assert "give --unsafe" in run.stderr and not (tmp_path / "g.csv").exists()
    library = subprocess.run(
        [sys.executable, "-c", "from pyweb.notebook import grade; import sys; "
         "grade.grade_report(sys.argv[1])", str(tmp_path / "a.ipynb")],
        capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert library.returncode == 1
    assert f"RuntimeError: no sandbox to grade {tmp_path / 'a.ipynb'} in: bwrap is not installed" in library.stderr


def test_unsafe_grades_without_a_sandbox(tmp_path):
    nb = nbformat.read(handins.SOLUTION, as_version=4)
    # over Unix sockets even so: a TCP port picked for the kernel could be taken meanwhile by
    # a server another hand-in starts on port 0
    nb.cells.append(nbformat.v4.new_code_cell(
        "from ipykernel.kernelapp import IPKernelApp\n"
        "assert IPKernelApp.instance().transport == 'ipc', IPKernelApp.instance().transport"
    ))  # fmt: skip
    nbformat.write(nb, str(tmp_path / "a.ipynb"))
    report = grade.grade_report(tmp_path / "a.ipynb", sandboxed=False, timeout=30)
    assert [r.result for r in report.rows] == ["pass"] * 4
    assert report.cell_errors == []
    # the kernel is ended with its hand-in, not when the grader exits, and no thread stays
    assert _children() == []
    assert [t.name for t in threading.enumerate() if type(t).__name__ == "HBChannel"] == []


def _children() -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        if re.search(rf"^PPid:\s+{os.getpid()}$", status, re.M) and "State:\tZ" not in status:
            found.append(pid)
    return found


def test_nothing_to_grade_is_a_usage_error(tmp_path, capsys):
    from pyweb.cli import main

    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    assert "no notebooks (.ipynb)" in capsys.readouterr().err
    assert main(["grade", str(tmp_path / "nope"), "--out", str(tmp_path / "g.csv")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert main(["grade", str(tmp_path), "--out", "g.csv", "--jobs", "0"]) == 2
    assert "--jobs must be 1 or more, not 0" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


def test_a_file_that_is_not_a_notebook_gets_a_row(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json")
    [row] = grade.grade_notebook(tmp_path / "broken.ipynb")
    assert row.result == "error" and row.message.startswith("not a readable notebook")


def test_checks_are_named_by_their_headings_and_recorded_with_their_source():
    nb = nbformat.read(handins.EXERCISE, as_version=4)
    assert [name for _, name in grade.checks_of(nb)] == CHECKS[:4]
    recorded = nb.metadata["pyweb"]["checks"]
    cells = {c.get("id"): c for c in nb.cells}
    for check in recorded:  # what was handed out is what is recorded
        assert check["source"] == cells[check["id"]].source
        assert check["sha256"] == hashlib.sha256(check["source"].encode()).hexdigest()
        assert check["after"][0] in cells and len(check["after"]) == 5
    nb.metadata.pop("pyweb")
    del nb.cells[[c.get("id") for c in nb.cells].index(recorded[0]["id"])]
    assert [name for _, name in grade.checks_of(nb)] == CHECKS[1:4]  # nothing recorded
    assert [name for _, name in grade.mark_checks(nb)] == CHECKS[1:4]


def test_release_leaves_the_hidden_check_out_and_grading_puts_it_back():
    master = handins.master()
    student = grade.release(master)
    assert "temp-hidden" not in [c.get("id") for c in student.cells]
    assert [c["name"] for c in student.metadata["pyweb"]["checks"]] == CHECKS[:4]
    checks = grade._cells_checks(master)
    assert [(c.name, c.points, c.hidden) for c in checks][-1] == (CHECKS[4], 2.0, True)
    cells, flags, _ = grade._assemble(student, checks)
    ids = [c.get("id") for c in cells]
    assert ids.index("temp-hidden") == ids.index(checks[-1].after[0]) + 1  # below its heading
    # a copy without that heading (a student deleted it): below the cell above the heading
    bare = [c for c in cells if c.get("id") not in ("temp-hidden", checks[-1].after[0])]
    cells, _, _ = grade._assemble(nbformat.v4.new_notebook(cells=bare), checks)
    ids = [c.get("id") for c in cells]
    assert ids.index("temp-hidden") == ids.index("temp-13") + 1
    assert flags == {"temp-hidden": "hidden"}


def test_points_must_be_a_number():
    nb = handins.master()
    nb.cells[-3].metadata["pyweb"] = {"points": "two"}
    with pytest.raises(ValueError, match="a check's points must be a number >= 0, not 'two'"):
        grade._cells_checks(nb)
