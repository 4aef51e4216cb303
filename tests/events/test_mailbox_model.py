"""Stateful test of Mailbox and Multicast against a model (lists), §2.2/§3.1.

Hypothesis drives random sends, new ports, closed ports and non-blocking
receives (``poll``); every port must see exactly the messages sent after it
was made (and before it was closed), in order, and a mailbox is a FIFO.
"""

from __future__ import annotations

from collections import deque

import pytest
import trio
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from pyweb import events as ev

pytestmark = pytest.mark.timeout(120)


def poll_now(evt):
    return trio.run(ev.poll, ev.wrap(evt, lambda v: (v,)))


class MailboxModel(RuleBasedStateMachine):
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
        got = poll_now(self.box.recv_evt())
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
        got = poll_now(port.recv_evt())
        assert got == ((model.popleft(),) if model else None)

    @precondition(lambda self: self.ports)
    @rule(i=st.integers(0, 10))
    def close_port(self, i: int) -> None:
        port, model = self.ports.pop(i % len(self.ports))
        port.close()
        self.mc.send(-1)  # not seen by the closed port
        for _, other in self.ports:
            other.append(-1)
        assert [poll_now(port.recv_evt()) for _ in model] == [(m,) for m in model]
        assert poll_now(port.recv_evt()) is None

    @invariant()
    def sizes(self) -> None:
        assert len(self.box) == len(self.box_model)


TestMailboxModel = MailboxModel.TestCase
TestMailboxModel.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)
