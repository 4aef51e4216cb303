"""Checks that can fail: every typical wrong answer in ``wrong/`` fails, with a sentence that
names the mistake, and every right answer in ``right/`` that is written differently from
the solution passes.

Each file is the student cell of one exercise set (``wrong/01_temperature/not_rounded.cell``
answers ``notebook/01_temperature.ipynb``), headed by ``# mistake: ...`` (or
``# right: ...``) and ``# fails: ...``, a part of the sentence the failing check must say.
They are graded together, two at a time, with ``pyweb grade``'s own machinery (in the
sandbox where there is one), the way a teacher's class would be.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from pyweb.notebook import grade, sandbox

HERE = Path(__file__).resolve().parent
NOTEBOOKS = HERE.parents[1] / "notebook"
ANSWERS = sorted((HERE / "wrong").rglob("*.cell")) + sorted((HERE / "right").rglob("*.cell"))

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]


def _id(path: Path) -> str:
    return path.relative_to(HERE).with_suffix("").as_posix()


def _header(path: Path) -> tuple[dict[str, str], str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    fields = {}
    while lines and lines[0].startswith("# ") and ":" in lines[0]:
        key, _, value = lines.pop(0)[2:].partition(":")
        fields[key] = value.strip()
    return fields, "\n".join(lines)


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    folder = tmp_path_factory.mktemp("answers")
    for path in ANSWERS:
        _, source = _header(path)
        nb = nbformat.read(NOTEBOOKS / f"{path.parent.name}.ipynb", as_version=4)
        next(c for c in nb.cells if "student" in c.metadata.get("tags", [])).source = source
        target = folder / (_id(path).replace("/", "__") + ".ipynb")
        nbformat.write(nb, str(target))
    graded = grade.grade_reports(folder, jobs=2, timeout=15,
                                 sandboxed=sandbox.unavailable() is None)  # fmt: skip
    return {r.notebook.removesuffix(".ipynb").replace("__", "/"): r for r in graded}


def test_the_corpus_covers_the_sets_the_review_named():
    sets = {p.parent.name[:2] for p in (HERE / "wrong").rglob("*.cell")}
    assert {"01", "02", "03", "04", "07", "08", "11", "12"} <= sets
    for path in ANSWERS:
        fields, _ = _header(path)
        assert fields.get("mistake") or fields.get("right"), path
        assert path.parts[-3] == "right" or fields.get("fails"), path


@pytest.mark.parametrize("path", [p for p in ANSWERS if p.parts[-3] == "wrong"], ids=_id)
def test_a_wrong_answer_fails_with_a_sentence_naming_the_mistake(reports, path):
    fields, _ = _header(path)
    report = reports[_id(path)]
    assert any(r.result != "pass" for r in report.rows), f"{fields['mistake']}: all passed"
    failing = [r for r in report.rows if r.result == "fail"]
    assert failing, [(r.check, r.result, r.message) for r in report.rows]
    assert any(fields["fails"] in r.message for r in failing), [r.message for r in failing]


@pytest.mark.parametrize("path", [p for p in ANSWERS if p.parts[-3] == "right"], ids=_id)
def test_a_right_answer_written_differently_passes(reports, path):
    report = reports[_id(path)]
    assert [r.result for r in report.rows] == ["pass"] * len(report.rows), report.rows
