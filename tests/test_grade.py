"""``pyweb grade`` on a folder of hand-ins, on real Jupyter kernels (nbclient).

The hand-ins are made from the temperature exercise (``notebook/01_temperature.ipynb``):
one solved, one unsolved, one whose kernel exits, one that hangs ignoring interrupts, one
with a check cell deleted, one printing megabytes. Every check of every hand-in gets its
row, and the command exits 0.
"""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from pyweb.notebook import grade

ROOT = Path(__file__).resolve().parent.parent
EXERCISE = ROOT / "notebook" / "01_temperature.ipynb"
SOLUTION = ROOT / "notebook" / "solutions" / "01_temperature.ipynb"
CHECKS = ["Check 1: the form", "Check 2: the conversion", "Check 3: the form sends c",
          "Check 4: not a number"]  # fmt: skip

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


def _hand_in(folder: Path, name: str, source: Path, edit=None) -> None:
    nb = nbformat.read(source, as_version=4)
    if edit is not None:
        edit(nb)
    nbformat.write(nb, folder / name)


def _index_of_check(nb, number: int) -> int:
    checks = [i for i, c in enumerate(nb.cells) if "check" in c.metadata.get("tags", [])]
    return checks[number - 1]


def _insert_after_check_1(source: str):
    def edit(nb):
        nb.cells.insert(_index_of_check(nb, 1) + 1, nbformat.v4.new_code_cell(source))

    return edit


def _crash(nb):
    student = next(c for c in nb.cells if "student" in c.metadata.get("tags", []))
    student.source = "import os\nos._exit(1)"


def _delete_check_1(nb):
    del nb.cells[_index_of_check(nb, 1)]


HANG = """import time
while True:  # a hand-in that ignores "Interrupt kernel"
    try:
        time.sleep(100)
    except KeyboardInterrupt:
        pass"""


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hand-ins")
    (folder / "ada").mkdir()
    _hand_in(folder / "ada", "01_temperature.ipynb", SOLUTION)
    _hand_in(folder, "unsolved.ipynb", EXERCISE)
    _hand_in(folder, "crashing.ipynb", EXERCISE, _crash)
    _hand_in(folder, "hanging.ipynb", SOLUTION, _insert_after_check_1(HANG))
    _hand_in(folder, "deleted.ipynb", SOLUTION, _delete_check_1)
    _hand_in(folder, "loud.ipynb", SOLUTION, _insert_after_check_1("print('x' * 20_000_000)"))
    (folder / ".ipynb_checkpoints").mkdir()
    _hand_in(folder / ".ipynb_checkpoints", "old-checkpoint.ipynb", EXERCISE)
    out = tmp_path_factory.mktemp("grades") / "grades.csv"
    run = subprocess.run(
        [sys.executable, "-m", "pyweb", "grade", str(folder), "--out", str(out), "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=280,
    )
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return run, rows, out


def _rows_of(rows, notebook):
    return [(check, result, message) for nb, check, result, message in rows[1:] if nb == notebook]


def test_the_command_exits_0_and_writes_a_row_per_check(graded):
    run, rows, _ = graded
    assert run.returncode == 0, run.stderr
    assert rows[0] == ["notebook", "check", "result", "message"]
    notebooks = sorted({row[0] for row in rows[1:]})
    assert notebooks == ["ada/01_temperature.ipynb", "crashing.ipynb", "deleted.ipynb",
                         "hanging.ipynb", "loud.ipynb", "unsolved.ipynb"]  # fmt: skip
    for notebook in notebooks:
        assert [check for check, _, _ in _rows_of(rows, notebook)] == CHECKS, notebook
    assert "ada/01_temperature.ipynb: 4 pass, 0 fail, 0 error" in run.stdout
    assert "Kernel is running over TCP" not in run.stderr  # the kernels' noise is not shown


def test_solved_passes_with_what_the_checks_printed(graded):
    _, rows, _ = graded
    solved = _rows_of(rows, "ada/01_temperature.ipynb")
    assert [result for _, result, _ in solved] == ["pass"] * 4
    assert solved[0][2] == "Check 1 passed: the page has a form with a field named c."


def test_unsolved_fails_every_check_in_plain_words(graded):
    _, rows, _ = graded
    unsolved = _rows_of(rows, "unsolved.ipynb")
    assert [result for _, result, _ in unsolved] == ["fail"] * 4
    assert unsolved[0][2] == (
        "Asking for /temperature without c. We expected a form (a <form> element) with "
        "fields 'c'; the page has no form. The page says: 'TODO'"
    )
    assert unsolved[1][2].startswith("For c=100. We expected '212' somewhere on the page")


def test_a_kernel_that_exits_gets_an_error_row_per_check(graded):
    _, rows, _ = graded
    for _, result, message in _rows_of(rows, "crashing.ipynb"):
        assert result == "error"
        assert message == "not run: the kernel died in cell 5 (exit(), os._exit() or a crash)"


def test_a_hanging_hand_in_keeps_what_passed_and_the_rest_is_an_error(graded):
    _, rows, _ = graded
    hanging = _rows_of(rows, "hanging.ipynb")
    assert hanging[0][1] == "pass"
    for _, result, message in hanging[1:]:
        assert result == "error"
        assert message == (
            "not run: cell 8 did not finish within 3 s and the kernel did not answer an interrupt"
        )


def test_a_deleted_check_is_an_error_and_the_others_still_run(graded):
    _, rows, _ = graded
    deleted = _rows_of(rows, "deleted.ipynb")
    assert deleted[0][1:] == ("error", "missing cell: the check's cell was deleted")
    assert [result for _, result, _ in deleted[1:]] == ["pass"] * 3


def test_megabytes_of_output_are_dropped_and_graded_anyway(graded):
    _, rows, out = graded
    assert [result for _, result, _ in _rows_of(rows, "loud.ipynb")] == ["pass"] * 4
    assert out.stat().st_size < 20_000


def test_the_html_summary_is_students_by_checks(graded):
    _, _, out = graded
    page = out.with_suffix(".html").read_text()
    assert page.count("<tr>") == 1 + 6  # the header and one row per notebook
    for check in CHECKS:
        assert f"<th>{check}</th>" in page
    assert '<td class="name">ada/01_temperature.ipynb</td>' + '<td class="pass"' in page
    assert "<td>4 / 4</td>" in page and "<td>0 / 4</td>" in page
    assert "missing cell: the check&#x27;s cell was deleted" in page


def test_nothing_to_grade_is_a_usage_error(tmp_path, capsys):
    from pyweb.cli import main

    assert main(["grade", str(tmp_path), "--out", str(tmp_path / "g.csv")]) == 2
    assert "no notebooks (.ipynb)" in capsys.readouterr().err
    assert main(["grade", str(tmp_path / "nope"), "--out", str(tmp_path / "g.csv")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    assert not (tmp_path / "g.csv").exists()


def test_a_file_that_is_not_a_notebook_gets_a_row(tmp_path):
    (tmp_path / "broken.ipynb").write_text("{not json")
    [row] = grade.grade_notebook(tmp_path / "broken.ipynb")
    assert row.result == "error" and row.message.startswith("not a readable notebook")


def test_checks_are_named_by_their_headings_and_recorded_by_mark():
    nb = nbformat.read(EXERCISE, as_version=4)
    assert [name for _, name in grade.checks_of(nb)] == CHECKS
    nb.metadata.pop("pyweb")
    _delete_check_1(nb)
    assert [name for _, name in grade.checks_of(nb)] == CHECKS[1:]  # nothing recorded
    assert [name for _, name in grade.mark_checks(nb)] == CHECKS[1:]
    assert nb.metadata["pyweb"]["checks"][0]["name"] == CHECKS[1]
