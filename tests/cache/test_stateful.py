"""Each kind of cache, on each backend, against a simple model (hypothesis stateful tests).

The model is the rule of docs/cache.md written as plainly as possible: a dict of entries
with their insertion number and time stamp, and integer milliseconds, like both backends.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from pyweb import cache
from pyweb.cache import Int, Size, String, TimeOut, WhileUsed

from .conftest import REDIS_URL, configure


class Model:
    def __init__(self, kind, clock):
        self.kind = kind
        self.clock = clock
        self.entries: dict[int, tuple[str, int, int]] = {}  # key -> (value, stamp ms, seq)
        self.seq = 0

    def now(self) -> int:
        return int(round(self.clock() * 1000))

    def alive(self, key) -> bool:
        if key not in self.entries:
            return False
        if isinstance(self.kind, Size):
            return True
        _, stamp, _ = self.entries[key]
        if self.now() < stamp + self.kind.milliseconds:
            return True
        del self.entries[key]
        return False

    @staticmethod
    def size(key, value) -> int:
        return len(Int.encode(key)) + len(String.encode(value))

    def insert(self, key, value) -> bool:
        self.entries.pop(key, None)
        if isinstance(self.kind, Size):
            size = self.size(key, value)
            if size > self.kind.bytes:
                return False
            while (
                sum(self.size(k, v) for k, (v, _, _) in self.entries.items()) + size
                > self.kind.bytes
            ):
                oldest = min(self.entries, key=lambda k: self.entries[k][2])
                del self.entries[oldest]
        self.seq += 1
        self.entries[key] = (value, self.now(), self.seq)
        return True

    def lookup(self, key):
        if not self.alive(key):
            return None
        value, _, seq = self.entries[key]
        if isinstance(self.kind, WhileUsed):
            self.entries[key] = (value, self.now(), seq)
        return value

    def delete(self, key) -> bool:
        present = self.alive(key)
        self.entries.pop(key, None)
        return present


keys = st.integers(0, 2)
values = st.text(alphabet="abcé", max_size=12)


def machine(url, kind):
    class CacheMachine(RuleBasedStateMachine):
        def __init__(self):
            super().__init__()
            self.clock = cache.FakeClock()
            configure(url, self.clock)
            self.cache = cache.get(Int, String, f"sm-{uuid.uuid4().hex[:10]}", kind)
            self.model = Model(kind, self.clock)

        @rule(key=keys, value=values)
        def insert(self, key, value):
            assert self.cache.insert(key, value) == self.model.insert(key, value)

        @rule(key=keys)
        def lookup(self, key):
            assert self.cache.lookup(key) == self.model.lookup(key)

        @rule()
        def lookup_every_key(self):
            for key in range(3):
                assert self.cache.lookup(key) == self.model.lookup(key), key

        @rule(key=keys)
        def delete(self, key):
            assert self.cache.delete(key) == self.model.delete(key)

        @rule(seconds=st.sampled_from([10, 20, 29.999, 30, 0.001]))
        def advance(self, seconds):
            self.clock.advance(seconds)

        @rule()
        def flush(self):
            self.cache.flush()
            self.model.entries.clear()

        @invariant()
        def size_budget_holds(self):
            if isinstance(kind, Size):
                used = sum(Model.size(k, v) for k, (v, _, _) in self.model.entries.items())
                assert used <= kind.bytes

    return CacheMachine


@pytest.mark.parametrize("kind", [Size(20), TimeOut(30), WhileUsed(30)], ids=str)
@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_kind_follows_the_model(backend, kind):
    url = "memory" if backend == "memory" else REDIS_URL
    try:
        run_state_machine_as_test(
            machine(url, kind),
            # A third of the profile's examples (each is up to 40 steps): 50 in make test,
            # thousands in make fuzz (HYPOTHESIS_PROFILE=fuzz).
            settings=settings(
                max_examples=settings.default.max_examples // 3,
                stateful_step_count=40,
                deadline=None,
            ),
        )
    finally:
        cache.configure("memory")
