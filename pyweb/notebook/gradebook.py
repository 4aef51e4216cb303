"""What ``pyweb grade`` writes: the teacher's tables, a gradebook CSV and a page per student.

From the :class:`~pyweb.notebook.grade.Report` of each hand-in:

* ``FILE.csv``: one row per check (``notebook,check,result,message,points,max_points,flag``);
* ``FILE.html``: the table students x checks, with points and totals, and what failed;
* ``FILE.gradebook.csv``: one row per student (``student,total,max`` and the points of each
  check), the shape a course's gradebook (Moodle, Canvas, a spreadsheet) imports;
* ``FILE-feedback/STUDENT.html``: a page a student can act on: each check's sentence, the
  errors their own cells raised (syntax errors as such), and what the grader put back.

In the spirit of nbgrader's ``generate_feedback``, as plain files a teacher mails or uploads.
"""

from __future__ import annotations

import csv
import html
import re
from collections.abc import Sequence
from pathlib import Path

from pyweb.notebook.grade import Report, Row

__all__ = ["student_of", "write_csv", "write_gradebook", "write_html", "write_feedback",
           "write_all"]  # fmt: skip

_SYMBOL = {"pass": "✓", "fail": "✗", "error": "!"}
_STYLE = """body{font-family:sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}
th,td{border:1px solid #bbb;padding:.3em .6em;text-align:center}th{background:#eee}
td.name{text-align:left;font-family:monospace}.pass{background:#d9f2d9}
.fail{background:#f8d7d7}.error{background:#fde9c4}.missing{background:#f4f4f4}
dt{font-family:monospace;margin-top:.6em}td.msg{text-align:left}"""


def student_of(notebook: str) -> str:
    """The student a hand-in belongs to: its folder (``ada/01.ipynb`` → ``ada``), or the
    file's name without ``.ipynb`` when hand-ins lie side by side."""
    parts = notebook.split("/")
    return parts[0] if len(parts) > 1 else re.sub(r"\.ipynb$", "", notebook)


def _points(value: float) -> str:
    return f"{value:g}"


def write_csv(rows: Sequence[Row], out: Path) -> None:
    """One row per check of every hand-in."""
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["notebook", "check", "result", "message", "points", "max_points", "flag"])
        for r in rows:
            writer.writerow([r.notebook, r.check, r.result, r.message, _points(r.points),
                             _points(r.max_points), r.flag])  # fmt: skip


def write_gradebook(reports: Sequence[Report], out: Path) -> None:
    """One row per student: total, the most they could get, and the points of each check."""
    checks = list(dict.fromkeys(r.check for report in reports for r in report.rows))
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "total", "max", *checks])
        for report in reports:
            earned = {r.check: _points(r.points) for r in report.rows}
            writer.writerow([student_of(report.notebook), _points(report.total),
                             _points(report.max_total), *(earned.get(c, "") for c in checks)])  # fmt: skip


def write_html(reports: Sequence[Report], out: Path, *, title: str = "Grades") -> None:
    """The table students x checks: a cell per check (✓ pass, ✗ fail, ! error; its message on
    hover and listed below), the points, and the grader's notes on each hand-in."""
    rows = [r for report in reports for r in report.rows]
    checks = list(dict.fromkeys(r.check for r in rows))
    e = html.escape
    head = "".join(f"<th>{e(c)}</th>" for c in checks)
    body = []
    for report in reports:
        cells = {r.check: r for r in report.rows}
        tds = []
        for check in checks:
            row = cells.get(check)
            if row is None:
                tds.append('<td class="missing"></td>')
            else:
                flag = f" ({e(row.flag)})" if row.flag else ""
                tds.append(f'<td class="{row.result}" title="{e(row.message)}">'
                           f"{_SYMBOL[row.result]}{flag}</td>")  # fmt: skip
        passed = sum(r.result == "pass" for r in report.rows)
        body.append(f'<tr><td class="name">{e(report.notebook)}</td>{"".join(tds)}'
                    f"<td>{passed} / {len(report.rows)}</td>"
                    f"<td>{_points(report.total)} / {_points(report.max_total)}</td></tr>")  # fmt: skip
    notes = "".join(f"<dt>{e(r.notebook)} · {e(r.check)} · {r.result}</dt><dd>{e(r.message)}</dd>"
                    for r in rows if r.result != "pass")  # fmt: skip
    flagged = "".join(f"<dt>{e(report.notebook)}</dt>" + "".join(f"<dd>{e(n)}</dd>" for n in report.notes)
                      for report in reports if report.notes)  # fmt: skip
    document = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        f"<p>✓ pass, ✗ fail, ! error (a crash, a timeout). (edited), (deleted): the student's "
        f"check cell was changed or removed and the teacher's check ran. "
        f"Hover over a cell for its message.</p>"
        f"<table><tr><th>notebook</th>{head}<th>passed</th><th>points</th></tr>{''.join(body)}"
        f"</table><h2>What failed, in the checks' words</h2><dl>{notes or '<dd>nothing</dd>'}</dl>"
        f"<h2>For the teacher's eye</h2><dl>{flagged or '<dd>nothing</dd>'}</dl></body></html>"
    )
    out.write_text(document, encoding="utf-8")


def write_feedback(report: Report, out: Path, *, title: str = "Feedback") -> None:
    """A student's page: the points, each check's verdict in its own words, and the errors
    their own cells raised."""
    e = html.escape
    rows = "".join(
        f'<tr><td class="msg">{e(r.check)}</td><td class="{r.result}">{_SYMBOL[r.result]}</td>'
        f"<td>{_points(r.points)} / {_points(r.max_points)}</td>"
        f'<td class="msg">{e(r.message)}'
        + (" <em>(your copy of this check was changed or removed; the original ran)</em>"
           if r.flag in ("edited", "deleted") else "")
        + "</td></tr>"
        for r in report.rows
    )  # fmt: skip
    errors = "".join(f"<li>{e(text)}</li>" for text in report.cell_errors)
    document = (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{e(title)}</title>'
        f"<style>{_STYLE}</style></head><body><h1>{e(title)}</h1>"
        f"<p>{e(report.notebook)}: <strong>{_points(report.total)} of "
        f"{_points(report.max_total)} points</strong>.</p>"
        f"<table><tr><th>check</th><th></th><th>points</th><th>what the check says</th></tr>"
        f"{rows}</table><h2>Errors your own cells raised</h2>"
        f"{f'<ul>{errors}</ul>' if errors else '<p>None: every cell of yours ran.</p>'}"
        "</body></html>"
    )
    out.write_text(document, encoding="utf-8")


def write_all(reports: Sequence[Report], out: Path, *, title: str = "Grades") -> list[Path]:
    """Every file ``pyweb grade`` writes beside ``out`` (the CSV); returns their paths."""
    write_csv([r for report in reports for r in report.rows], out)
    page, book = out.with_suffix(".html"), out.with_suffix(".gradebook.csv")
    write_html(reports, page, title=title)
    write_gradebook(reports, book)
    folder = out.with_name(out.stem + "-feedback")
    folder.mkdir(exist_ok=True)
    for report in reports:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", report.notebook.removesuffix(".ipynb"))
        write_feedback(report, folder / f"{name}.html",
                       title=f"Feedback: {student_of(report.notebook)}")  # fmt: skip
    return [out, page, book, folder]
