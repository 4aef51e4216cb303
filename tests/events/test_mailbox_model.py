"""Stateful test of Mailbox and Multicast against a model (lists), §2.2/§3.1.

Hypothesis drives random sends, new ports, closed ports and non-blocking
receives (``poll``); every port must see exactly the messages sent after it
was made (and before it was closed), in order, and a mailbox is a FIFO.
"""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyweb import events as ev
from pyweb.runtime.testing import RUNTIMES, run

pytestmark = pytest.mark.timeout(120)


def poll_now(evt, runtime):
    return run(lambda: ev.poll(ev.wrap(evt, lambda v: (v,))), runtime)


class MailboxModel(RuleBasedStateMachine):
    runtime = "trio"

    def __init__(self) -> None:
        super().__init__()
        self.box = ev.Mailbox()
        self.box_model: deque[int] = deque()
        self.mc = ev.Multicast()
        self.ports: list[tuple[ev.Port, deque[int]]] = []
        self.next = 0

    @rule()
    def send_mailbox(self) -> None:
        self.box.send(self.next)
        self.box_model.append(self.next)
        self.next += 1

    @rule()
    def recv_mailbox(self) -> None:
        got = poll_now(self.box.recv_evt(), self.runtime)
        expected = (self.box_model.popleft(),) if self.box_model else None
        assert got == expected

    @rule()
    def new_port(self) -> None:
        self.ports.append((self.mc.port(), deque()))

    @rule()
    def multicast(self) -> None:
        self.mc.send(self.next)
        for _, model in self.ports:
            model.append(self.next)
        self.next += 1

    @precondition(lambda self: self.ports)
    @rule(i=st.integers(0, 10))
    def recv_port(self, i: int) -> None:
        port, model = self.ports[i % len(self.ports)]
        got = poll_now(port.recv_evt(), self.runtime)
        assert got == ((model.popleft(),) if model else None)

    @precondition(lambda self: self.ports)
    @rule(i=st.integers(0, 10))
    def close_port(self, i: int) -> None:
        port, model = self.ports.pop(i % len(self.ports))
        port.close()
        self.mc.send(-1)  # not seen by the closed port
        for _, other in self.ports:
            other.append(-1)
        assert [poll_now(port.recv_evt(), self.runtime) for _ in model] == [(m,) for m in model]
        assert poll_now(port.recv_evt(), self.runtime) is None

    @invariant()
    def sizes(self) -> None:
        assert len(self.box) == len(self.box_model)


class AsyncioMailboxModel(MailboxModel):
    runtime = "asyncio"


assert RUNTIMES == ("trio", "asyncio")
TestMailboxModel = MailboxModel.TestCase
# A fifth of the profile's examples (each is up to 30 steps): 30 in make test, thousands in
# make fuzz (HYPOTHESIS_PROFILE=fuzz).
_EXAMPLES = settings.default.max_examples // 5
TestMailboxModel.settings = settings(max_examples=_EXAMPLES, stateful_step_count=30, deadline=None)
TestMailboxModelAsyncio = AsyncioMailboxModel.TestCase
TestMailboxModelAsyncio.settings = settings(
    max_examples=_EXAMPLES, stateful_step_count=30, deadline=None
)
