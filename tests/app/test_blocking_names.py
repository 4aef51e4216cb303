"""Which line a hold of the loop is named by (``pyweb.app.blocking.Blocked.saw``).

The watchdog looks at the loop's stack every 50 ms while a page holds it; each look counts
one for the line it found. The hold is named by the line seen most, the site's own code
before a library's; on a tie, the line that got there first. The end-to-end test (a second of
``time.sleep`` then 0.15 s of computing, named by the sleep) is in test_page_mistakes.py.
"""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from pyweb.app.blocking import Blocked


def hold(looks: list[tuple[str, int, bool]]) -> Blocked:
    """A hold as the watchdog makes it: from its first look, then every look counted."""
    filename, line, own = looks[0]
    blocked = Blocked(filename, line, "", 1.0, step=1, own=own)
    for look in looks:
        blocked.saw(*look)
    return blocked


def test_one_late_look_past_the_sleep_does_not_rename_the_hold():
    # the look that raised the suspicion found line 3 (time.sleep(1)); the one look after
    # that came late, on a busy machine, when line 4 ran: a tie, and line 3 got there first
    blocked = hold([("page.py", 3, True), ("page.py", 4, True)])
    assert (blocked.filename, blocked.line) == ("page.py", 3)


def test_the_site_own_line_beats_a_library_frame_seen_more():
    blocked = hold([("/lib/socket.py", 700, False)] * 5 + [("page.py", 9, True)])
    assert (blocked.filename, blocked.line, blocked.own) == ("page.py", 9, True)


LOOKS = st.lists(
    st.tuples(st.sampled_from(["page.py", "/lib/x.py"]), st.integers(1, 3)), min_size=1
).map(lambda looks: [(f, line, f == "page.py") for f, line in looks])

A, B = ("page.py", 1, True), ("page.py", 2, True)


@given(LOOKS)
@example([A, B, B, A])  # B got to two looks first: B
@example([A, B])  # A got to one look first: A
def test_a_hold_is_named_by_the_line_seen_most_own_code_first(looks):
    blocked = hold(looks)
    any_own = any(own for _, _, own in looks)
    counts: dict[tuple[str, int, bool], int] = {}
    reached: dict[int, tuple[str, int, bool]] = {}  # a count -> the first line to reach it
    for look in looks:
        if look[2] == any_own:  # own code, if any was seen
            counts[look] = counts.get(look, 0) + 1
            reached.setdefault(counts[look], look)
    assert (blocked.filename, blocked.line, blocked.own) == reached[max(reached)]
