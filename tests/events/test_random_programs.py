"""Property-based tests: random programs of senders, receivers, choices,
guards, nacks and cancellations.

Hypothesis generates a handful of tasks; each runs a few syncs on a choice of
branches (send a unique message, receive, a timeout, each maybe guarded and
maybe with a nack), some inside a cancel scope with a deadline, on trio and on asyncio.  After
the tasks have run as far as they can (virtual time: trio's MockClock, pyweb's VirtualClockLoop), we check:

(Some syncs are ``poll``s instead, which must never block.)

* every message was received at most once, and received iff its sender's
  sync chose that send branch (so the sender knows whether it was taken);
* every nack fired iff its branch lost (another branch won, or the sync was
  cancelled), and guards ran at most once per sync (once if it committed);
* nothing is stuck on a missed rendezvous: when every task is blocked, no
  channel has both a waiting sender and a waiting receiver; after the final
  cancellation, every task ended and every queue is empty (no dead offers).
"""

from __future__ import annotations

import itertools

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyweb import events as ev
from pyweb.runtime.testing import run as run_on
from pyweb.runtime.testing import wait_all_tasks_blocked

pytestmark = pytest.mark.timeout(120)

N_CHANNELS = 3

branch_st = st.tuples(
    st.sampled_from(["send", "recv", "recv", "timeout"]),
    st.integers(0, N_CHANNELS - 1),  # channel
    st.booleans(),  # guarded
    st.booleans(),  # with a nack
)
sync_st = st.tuples(
    st.integers(0, 3),  # sleep before
    st.lists(branch_st, min_size=1, max_size=3),
    st.sampled_from([None, None, 1, 2, 3]),  # cancel deadline
    st.sampled_from(["sync", "sync", "sync", "poll"]),
)
program_st = st.lists(st.lists(sync_st, min_size=1, max_size=4), min_size=2, max_size=5)


def run_program(program, seed, runtime):
    ev.seed(seed)
    channels = [ev.Channel() for _ in range(N_CHANNELS)]
    ids = itertools.count()
    sent_taken: dict[int, bool] = {}  # message -> its sender's sync chose it
    received: list[int] = []
    records = []  # (chosen branch or None if cancelled, [(nack, idx)], guard counts)
    finished = []

    def build(branch, idx, rec):
        kind, c, guarded, nacked = branch
        ch = channels[c]

        def base():
            if kind == "send":
                msg = next(ids)
                sent_taken[msg] = False
                return ev.wrap(ch.send_evt(msg), lambda _: (idx, "sent", msg))
            if kind == "recv":
                return ev.wrap(ch.recv_evt(), lambda m: (idx, "recv", m))
            return ev.wrap(ev.timeout(1.5), lambda _: (idx, "timeout", None))

        def make_guarded():
            if not guarded:
                return base()

            rec["guards"].setdefault(idx, 0)

            def thunk():
                rec["guards"][idx] += 1
                return base()

            return ev.guard(thunk)

        if nacked:

            def with_nack(nack):
                rec["nacks"].append((nack, idx))
                return make_guarded()

            return ev.with_nack(with_nack)
        return make_guarded()

    async def task(tid, syncs):
        for sleep_before, branches, deadline, mode in syncs:
            await anyio.sleep(sleep_before)
            rec = {"chosen": None, "nacks": [], "guards": {}, "done": False}
            records.append(rec)
            evt = ev.choose(*[build(b, i, rec) for i, b in enumerate(branches)])
            with anyio.CancelScope(deadline=anyio.current_time() + (deadline or 1e9)):
                if mode == "poll":
                    before = anyio.current_time()
                    result = await ev.poll(evt)
                    assert anyio.current_time() == before  # never blocks
                    if result is None:  # nothing could commit: every nack fired
                        rec["done"] = True
                        continue
                else:
                    result = await ev.sync(evt)
                idx, what, msg = result
                rec["chosen"] = idx
                rec["done"] = True
                if what == "sent":
                    sent_taken[msg] = True
                elif what == "recv":
                    received.append(msg)
        finished.append(tid)

    async def main():
        async with anyio.create_task_group() as n:
            for tid, syncs in enumerate(program):
                n.start_soon(task, tid, syncs)
            # Let virtual time run until every task is blocked for good.
            await anyio.sleep(100)
            await wait_all_tasks_blocked()
            for ch in channels:
                # A sync may offer both sides of one channel: not a partner.
                pairs = [(s, r) for s in ch._senders for r in ch._receivers if s.sync is not r.sync]
                assert not pairs, "missed rendezvous"
            n.cancel_scope.cancel()

    run_on(main, runtime)

    # Messages: exactly once, or the sender knows it was not taken.
    assert len(received) == len(set(received)), received
    assert set(received) == {m for m, taken in sent_taken.items() if taken}
    # Nacks and guards.
    for rec in records:
        for nack, idx in rec["nacks"]:
            lost = rec["chosen"] != idx
            assert nack.fired == lost, (rec, idx)
        for count in rec["guards"].values():
            assert count <= 1
            if rec["done"]:
                assert count == 1
    # No dead offers left behind.
    for ch in channels:
        assert not ch._senders and not ch._receivers


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(program=program_st, seed=st.integers(0, 2**16))
def test_random_programs(program, seed, runtime):
    run_program(program, seed, runtime)


def test_a_known_program(runtime):
    # Two choosers and a sender, with a nack and a cancellation, spelled out.
    program = [
        [(0, [("send", 0, False, True), ("recv", 1, True, True)], 2, "sync")],
        [(1, [("recv", 0, False, True), ("send", 1, True, False)], None, "sync")],
        [(3, [("recv", 0, False, False)], 1, "sync"), (0, [("recv", 1, True, True)], None, "poll")],
    ]
    run_program(program, 0, runtime)
