"""What ``pyweb grade`` runs is the hand-in's own cells with the teacher's checks, whatever
the hand-in did to its check cells: a property over every mix of edited, deleted, moved and
added cells (hypothesis), without a kernel."""

from __future__ import annotations

import nbformat
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pyweb.notebook import grade
from tests.notebook import handins

MASTER = handins.master()
CHECKS = grade._cells_checks(MASTER)
HANDED_OUT = grade.release(MASTER)

# what a student may do to one cell of the copy handed out
EDITS = st.sampled_from(["keep", "delete", "edit", "add-after"])


# Found by hypothesis: two checks deleted, the first with none of the cells above it left.
# It went back "above the next check present", below where the second was put back after.
TWO_DELETED = ["edit"] + ["delete"] * 6 + ["keep", "delete", "add-after", "keep", "delete",
                                           "keep", "edit", "keep", "delete"]  # fmt: skip


@settings(max_examples=200, deadline=None)
@given(st.lists(EDITS, min_size=len(HANDED_OUT.cells), max_size=len(HANDED_OUT.cells)))
@example(TWO_DELETED[: len(HANDED_OUT.cells)] + ["keep"] * (len(HANDED_OUT.cells) - 16))
def test_every_teacher_check_runs_once_in_order_with_the_teachers_source(edits):
    cells = []
    for cell, edit in zip(HANDED_OUT.cells, edits, strict=True):
        if edit == "delete":
            continue
        copy = nbformat.from_dict(dict(cell))
        if edit == "edit":
            copy.source = 'print("Check passed")'
        cells.append(copy)
        if edit == "add-after":
            cells.append(nbformat.v4.new_code_cell("expect = lambda r, **k: r"))
    hand_in = nbformat.v4.new_notebook(cells=cells)
    assembled, flags, _ = grade._assemble(hand_in, CHECKS)
    ids = [c.get("id") for c in assembled]
    # each check once, in the teacher's order, with the teacher's source after the prologue
    assert [i for i in ids if i in {c.id for c in CHECKS}] == [c.id for c in CHECKS]
    for check in CHECKS:
        cell = assembled[ids.index(check.id)]
        assert cell.source == grade._CHECK_PROLOGUE + check.source
    # the flags say what happened to each check
    for check, edit in ((c, e) for c in CHECKS if not c.hidden
                        for cell, e in zip(HANDED_OUT.cells, edits, strict=True)
                        if cell.get("id") == c.id):  # fmt: skip
        expected = {"delete": "deleted", "edit": "edited"}.get(edit)
        assert flags.get(check.id) == expected, (check.name, edit)
    assert all(flags[c.id] == "hidden" for c in CHECKS if c.hidden)
    # the student's own cells are all there, in their order
    own = [c.get("id") for c in cells if c.get("id") not in {k.id for k in CHECKS}]
    assert [i for i in ids if i in set(own)] == own
