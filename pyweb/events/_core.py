"""First-class synchronous events: the commit protocol (Reppy, CML, §2.1, §2.4, §4).

An *event* describes a synchronous operation that has not happened yet; ``sync``
makes it happen.  This module holds the part of CML that is plain bookkeeping:

* **forcing** an event at sync time: guards run (once), ``with_nack`` creates
  its negative-acknowledgement events, and the tree of ``choose``/``wrap``
  flattens into a list of *leaves*: (base event, wrapper chain, nacks);
* the **commit**: if some leaves can commit at once, one of them (uniformly at
  random) does; otherwise the sync puts one *offer* on every leaf's queue and
  parks.  The first partner that takes one of the offers commits the whole
  sync: it records which leaf won, withdraws every other offer (eagerly, so
  queues never fill with dead offers) and unparks the task;
* after the commit, the nacks of every losing branch fire and the winner's
  wrappers run (in the syncing task).

Single-threaded trio makes atomicity easy: there is no ``await`` between the
scan for a ready leaf and the commit, nor between enqueueing the offers and
parking, so nothing can interleave (on asyncio just as on trio: a task runs until
its next ``await``).  The only calls into the event loop go through
:mod:`pyweb.runtime` (park, unpark, the clock, checkpoints, deadlines), looked up
once per sync, so the same code runs on trio and on asyncio.
"""

from __future__ import annotations

import inspect
import random
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pyweb.runtime import current

T = TypeVar("T")
U = TypeVar("U")

__all__ = [
    "BaseEvent",
    "Event",
    "always",
    "at_time",
    "choose",
    "guard",
    "never",
    "poll",
    "seed",
    "select",
    "sync",
    "timeout",
    "with_nack",
    "wrap",
    "wrap_abort",
    "wrap_handler",
]

# One generator for all choices; ``seed`` makes a test run reproducible.
_rng = random.Random()
_INF = float("inf")  # made once: float("inf") in _sync made a new float at every wait


def seed(value: int | None) -> None:
    """Seed the generator that picks among several enabled branches."""
    _rng.seed(value)


# --------------------------------------------------------------------------
# Sync state and offers


class _Sync:
    """The state of one ``sync`` in progress: waiting until ``done``."""

    __slots__ = ("rt", "task", "offers", "done", "chosen", "value", "scope")

    def __init__(self, rt: Any) -> None:
        self.rt = rt  # the runtime (pyweb.runtime) of the loop this sync runs on
        self.task = rt.waiter()  # what unpark() wakes
        self.scope: Any = None  # set while the task waits in _wait_alone
        self.offers: list[Offer] = []
        self.done = False
        self.chosen = 0  # index of the winning leaf
        self.value: Any = None

    def withdraw_all(self) -> None:
        # Called by the runtime when the parked task is cancelled (abort callback),
        # and by a deadline: no partner may take an offer after this.
        self.done = True
        for offer in self.offers:
            offer.withdraw()
        self.offers = []


class Offer:
    """One leaf of a parked sync, waiting in a queue (a ``deque``)."""

    __slots__ = ("sync", "leaf", "queue", "payload")

    def __init__(self, sync: _Sync, leaf: int, queue: deque[Offer], payload: Any = None) -> None:
        self.sync = sync
        self.leaf = leaf
        self.queue = queue
        self.payload = payload

    def withdraw(self) -> None:
        self.queue.remove(self)


def complete(offer: Offer, value: Any) -> None:
    """Commit ``offer``'s sync with ``value``: the partner side of a rendezvous.

    The caller has already taken ``offer`` out of its queue.  Every other offer
    of the same sync is withdrawn now, so that no second partner can see it.
    """
    s = offer.sync
    s.done = True
    s.chosen = offer.leaf
    s.value = value
    for other in s.offers:
        if other is not offer:
            other.withdraw()
    s.offers = []
    if s.scope is not None:
        s.scope.cancel()  # the task waits on a socket in _wait_alone, not parked
    else:
        s.rt.unpark(s.task)


class _Failure:
    """A base event's result that is an exception (e.g. a task that raised).

    It flows through the wrapper chain so that ``wrap_handler`` can catch it.
    """

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


# --------------------------------------------------------------------------
# Event values


class Event(Generic[T]):
    """An event value: a synchronous operation that ``sync`` can perform.

    ``'a event`` in the paper.  Events are immutable descriptions; the same
    event may be synchronized on many times.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


class BaseEvent(Event[T]):
    """A primitive event (channel send/receive, a timer, a nack, ...).

    A base event answers three questions for the commit protocol:

    * ``ready()``: could it commit right now?  (no side effects)
    * ``commit_now()``: commit now (it was ready) and return the value,
      completing the partner's sync if there is one;
    * ``enqueue(sync, leaf)``: leave an :class:`Offer` where a partner will
      find it, and append it to ``sync.offers`` so it can be withdrawn.

    Timers instead set ``deadline`` (the loop's clock) and never enqueue.

    An event that no partner can complete (socket readiness) may also define
    ``async wait_alone()``: when it is the only such branch of a sync, the
    sync awaits it directly instead of enqueueing an offer (the other
    branches still get offers; a partner taking one interrupts the wait).
    Its result must not consume anything: a partner's commit that races with
    it wins and the ``wait_alone`` result is dropped.
    """

    __slots__ = ()
    deadline: float | None = None
    wait_alone: Callable[[], Awaitable[Any]] | None = None

    def ready(self) -> bool:
        raise NotImplementedError

    def commit_now(self) -> Any:
        raise NotImplementedError

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        raise NotImplementedError


class _Always(BaseEvent[T]):
    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def ready(self) -> bool:
        return True

    def commit_now(self) -> T:
        return self.value

    def enqueue(self, sync: _Sync, leaf: int) -> None:  # never called: always ready
        pass


class _Never(BaseEvent[Any]):
    __slots__ = ()

    def ready(self) -> bool:
        return False

    def commit_now(self) -> Any:  # pragma: no cover - never ready
        raise AssertionError("never() cannot commit")

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        pass


class _AtTime(BaseEvent[None]):
    __slots__ = ("deadline",)
    deadline: float  # always set: a timer is its deadline (BaseEvent's may be None)

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline

    def ready(self) -> bool:
        return current().now() >= self.deadline

    def commit_now(self) -> None:
        return None

    def enqueue(self, sync: _Sync, leaf: int) -> None:  # handled by sync's deadline
        pass


class Nack(BaseEvent[None]):
    """The negative acknowledgement created by ``with_nack`` for one sync.

    Enabled (forever) once it has fired, i.e. once its branch has lost.
    """

    __slots__ = ("fired", "waiters", "callbacks")

    def __init__(self) -> None:
        self.fired = False
        self.waiters: deque[Offer] = deque()
        self.callbacks: list[Callable[[], Any]] = []

    def ready(self) -> bool:
        return self.fired

    def commit_now(self) -> None:
        return None

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        offer = Offer(sync, leaf, self.waiters)
        self.waiters.append(offer)
        sync.offers.append(offer)

    def fire(self) -> None:
        if self.fired:
            return
        self.fired = True
        waiters = self.waiters
        while waiters:
            # complete() withdraws the sync's other offers, including any
            # other offer it has on this same nack, so the loop ends.
            complete(waiters.popleft(), None)
        for callback in self.callbacks:
            callback()


class _Choose(Event[T]):
    __slots__ = ("events",)

    def __init__(self, events: tuple[Event[Any], ...]) -> None:
        self.events = events


class _Wrap(Event[T]):
    __slots__ = ("event", "fn", "is_handler")

    def __init__(self, event: Event[Any], fn: Callable[..., Any], is_handler: bool) -> None:
        self.event = event
        self.fn = fn
        self.is_handler = is_handler


class _Guard(Event[T]):
    __slots__ = ("thunk",)

    def __init__(self, thunk: Callable[[], Event[T] | Awaitable[Event[T]]]) -> None:
        self.thunk = thunk


class _WithNack(Event[T]):
    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Event[None]], Event[T] | Awaitable[Event[T]]]) -> None:
        self.fn = fn


# --------------------------------------------------------------------------
# Combinators (Figure 2 and §2.3-§2.4)


def _check(evt: Any, what: str) -> Event[Any]:
    if not isinstance(evt, Event):
        raise TypeError(f"{what} expects an Event, got {evt!r}")
    return evt


def choose(*events: Event[Any]) -> Event[Any]:
    """``val choose : 'a event list -> 'a event``

    The choice of the events: when synchronized, exactly one of them commits
    (uniformly at random among those enabled at once).  ``choose()`` with no
    event never commits.
    """
    flat: list[Event[Any]] = []
    for e in events:
        _check(e, "choose")
        if type(e) is _Choose:
            flat.extend(e.events)
        else:
            flat.append(e)
    if len(flat) == 1:
        return flat[0]
    return _Choose(tuple(flat))


def wrap(evt: Event[T], fn: Callable[[T], U | Awaitable[U]]) -> Event[U]:
    """``val wrap : ('a event * ('a -> 'b)) -> 'b event``

    ``fn`` (plain or async) is applied to the result after ``evt`` commits,
    only if ``evt``'s branch was chosen.  Its exceptions propagate out of sync.
    """
    _check(evt, "wrap")
    if not callable(fn):
        raise TypeError(f"wrap expects a callable, got {fn!r}")
    return _Wrap(evt, fn, False)


def wrap_handler(evt: Event[T], handler: Callable[[Exception], U | Awaitable[U]]) -> Event[T | U]:
    """``val wrapHandler : ('a event * (exn -> 'a)) -> 'a event``

    If ``evt`` (its base event or one of its wrappers) raises an
    ``Exception`` after commit, ``handler(exc)`` gives the result instead.
    """
    _check(evt, "wrap_handler")
    if not callable(handler):
        raise TypeError(f"wrap_handler expects a callable, got {handler!r}")
    return _Wrap(evt, handler, True)


def guard(thunk: Callable[[], Event[T] | Awaitable[Event[T]]]) -> Event[T]:
    """``val guard : (unit -> 'a event) -> 'a event``

    ``thunk()`` runs once at each sync, before anything commits, and returns
    the event to synchronize on.  It may be an async function (a guard that
    communicates, as in the paper's ``clientCallEvt2``).
    """
    if not callable(thunk):
        raise TypeError(f"guard expects a callable, got {thunk!r}")
    return _Guard(thunk)


def with_nack(fn: Callable[[Event[None]], Event[T] | Awaitable[Event[T]]]) -> Event[T]:
    """``val withNack : (unit event -> 'a event) -> 'a event`` (CML's later form)

    Like ``guard``, but ``fn`` receives a fresh *nack* event that becomes
    enabled exactly when the event ``fn`` returns is not the branch chosen by
    this sync, including when the sync is cancelled or raises before commit.
    """
    if not callable(fn):
        raise TypeError(f"with_nack expects a callable, got {fn!r}")
    return _WithNack(fn)


def wrap_abort(evt: Event[T], abort: Callable[[], Any]) -> Event[T]:
    """``val wrapAbort : ('a event * (unit -> unit)) -> 'a event``

    ``abort`` runs when ``evt``'s branch is not chosen.  Built on
    :func:`with_nack`: when the nack fires, a plain function is called at once
    (in the task that ran the sync, right after its commit or cancellation; it
    should not block or raise); an async function is spawned as a
    background task of the loop (as the paper spawns a thread).
    """
    _check(evt, "wrap_abort")
    if inspect.iscoroutinefunction(abort):

        def action() -> None:
            current().spawn_background(abort)
    else:
        action = abort

    def make(nack: Event[None]) -> Event[T]:
        nack.callbacks.append(action)  # type: ignore[attr-defined]
        return evt

    return _WithNack(make)


def always(value: T = None) -> Event[T]:  # type: ignore[assignment]
    """``val alwaysEvt : 'a -> 'a event``: always enabled, returns ``value``."""
    return _Always(value)


_NEVER = _Never()


def never() -> Event[Any]:
    """``val never : 'a event``: never enabled (``choose()`` of nothing)."""
    return _NEVER


def at_time(deadline: float) -> Event[None]:
    """``val waitUntil : time -> unit event``: enabled once the loop's clock
    (``pyweb.runtime.now()``, ``trio.current_time()`` on trio) reaches ``deadline``."""
    deadline = float(deadline)
    if deadline != deadline:
        raise ValueError(f"at_time: deadline is NaN: {deadline!r}")
    return _AtTime(deadline)


def timeout(seconds: float) -> Event[None]:
    """``val timeout : time -> unit event``: enabled ``seconds`` after the sync
    starts.  As in the paper, ``guard(lambda: at_time(now + seconds))``."""
    seconds = float(seconds)
    if seconds != seconds:
        raise ValueError(f"timeout: seconds is NaN: {seconds!r}")
    return _Guard(lambda: _AtTime(current().now() + seconds))


# --------------------------------------------------------------------------
# sync


def _force(
    evt: Event[Any],
    chain: tuple[tuple[bool, Callable[..., Any]], ...],
    nacks: tuple[Nack, ...],
    leaves: list[tuple[BaseEvent[Any], tuple[Any, ...], tuple[Nack, ...]]],
    created: list[Nack],
    pending: list[tuple[Awaitable[Any], tuple[Any, ...], tuple[Nack, ...]]],
) -> None:
    if isinstance(evt, BaseEvent):
        leaves.append((evt, chain, nacks))
        return
    kind = type(evt)
    if kind is _Choose:
        for e in evt.events:  # type: ignore[attr-defined]
            _force(e, chain, nacks, leaves, created, pending)
    elif kind is _Wrap:
        # The inner wrapper runs first, so it goes in front of the chain.
        _force(evt.event, ((evt.is_handler, evt.fn),) + chain, nacks, leaves, created, pending)  # type: ignore[attr-defined]
    elif kind is _Guard:
        _forced(evt.thunk(), chain, nacks, leaves, created, pending)  # type: ignore[attr-defined]
    elif kind is _WithNack:
        nack = Nack()
        created.append(nack)
        _forced(evt.fn(nack), chain, nacks + (nack,), leaves, created, pending)  # type: ignore[attr-defined]
    else:
        raise TypeError(f"sync expects an Event, got {evt!r}")


def _forced(result: Any, chain: Any, nacks: Any, leaves: Any, created: Any, pending: Any) -> None:
    if isinstance(result, Event):
        _force(result, chain, nacks, leaves, created, pending)
    elif inspect.isawaitable(result):
        pending.append((result, chain, nacks))
    else:
        raise TypeError(f"a guard must return an Event, got {result!r}")


def _fire(created: list[Nack], keep: tuple[Nack, ...]) -> None:
    """Fire every nack of this sync except the winner's; all of them fire
    even if an abort action raises (the first error is re-raised after)."""
    error: BaseException | None = None
    for nack in created:
        if nack not in keep:
            try:
                nack.fire()
            except Exception as exc:  # noqa: PERF203 - keep firing the rest
                if error is None:
                    error = exc
    if error is not None:
        raise error


async def _apply(value: Any, chain: tuple[tuple[bool, Callable[..., Any]], ...]) -> Any:
    exc: BaseException | None = None
    if type(value) is _Failure:
        exc, value = value.exc, None
    for is_handler, fn in chain:
        if is_handler:
            if exc is None or not isinstance(exc, Exception):
                continue
            arg, exc = exc, None
        elif exc is not None:
            continue
        else:
            arg = value
        try:
            value = fn(arg)
            if inspect.isawaitable(value):
                value = await value
        except Exception as e:
            exc = e
    if exc is not None:
        raise exc
    return value


async def sync(evt: Event[T]) -> T:
    """``val sync : 'a event -> 'a``

    Block until the event commits and return its (wrapped) value.  A
    cancellation while blocked withdraws every offer and fires every nack;
    nothing was committed.  Like every trio primitive it is a checkpoint.
    """
    if isinstance(evt, BaseEvent) and evt.deadline is None:
        # The common case, kept lean: one base event, no wrappers, no nacks.
        rt = current()
        await rt.checkpoint_if_cancelled()
        if evt.ready():
            value = evt.commit_now()
            await rt.cancel_shielded_checkpoint()
        elif evt.wait_alone is not None:
            value = await evt.wait_alone()
        else:
            s = _Sync(rt)
            evt.enqueue(s, 0)
            await rt.park(s.task, s.withdraw_all)
            value = s.value
        if type(value) is _Failure:
            raise value.exc
        return value
    return await _sync(evt, True)


async def select(*events: Event[Any]) -> Any:
    """``select(e1, e2, ...)`` is ``sync(choose(e1, e2, ...))``."""
    return await _sync(choose(*events), True)


async def poll(evt: Event[T]) -> T | None:
    """``val poll : 'a event -> 'a option event``, used at once.

    Commit ``evt`` if one of its branches can commit now and return its
    value; otherwise return ``None`` without blocking (nacks fire, guards have
    run once).  ``None`` is ambiguous when the event itself may yield
    ``None``: ``poll(always(None))`` and ``poll(never())`` both return
    ``None``; wrap the event (``wrap(e, lambda v: (v,))``) to tell them apart.
    """
    return await _sync(evt, False)


async def _wait_alone(
    s: _Sync,
    leaves: list[tuple[BaseEvent[Any], tuple[Any, ...], tuple[Nack, ...]]],
    waiting: list[int],
    alone: int,
    deadline: float,
    timer: int,
    created: list[Nack],
) -> None:
    """Block on a sync one of whose leaves only this task can wait for (socket
    readiness, ``wait_alone``): await that leaf directly, with no helper task.

    The other waiting leaves get offers as usual.  The wait runs in a cancel
    scope that carries the earliest timer, and a partner that takes one of the
    offers cancels that scope (``complete`` sees ``s.scope``) instead of
    unparking the task.  Since readiness is not consumed by waiting for it, a
    partner's commit always wins over a readiness that arrived at the same time.
    This is what lets the server wait for "bytes, the keep-alive deadline or
    the shutdown message" at the cost of one cancel scope.
    """
    rt = s.rt
    others = [i for i in waiting if i != alone]
    if not others and timer < 0:
        s.chosen = alone
        try:
            s.value = await leaves[alone][0].wait_alone()  # type: ignore[misc]
        except BaseException:
            _fire(created, ())
            raise
        return
    for i in others:
        leaves[i][0].enqueue(s, i)
    result = None
    try:
        with rt.CancelScope(deadline=deadline) as scope:
            if others:
                s.scope = scope
            result = await leaves[alone][0].wait_alone()  # type: ignore[misc]
    except BaseException as exc:
        s.scope = None
        if not (s.done and isinstance(exc, rt.Cancelled)):
            s.withdraw_all()
            _fire(created, ())
            raise
        # A partner committed (its value is in s) just as an outer scope was
        # cancelled: keep the value, nothing may be lost; the runtime raises the
        # cancellation again at this task's next checkpoint.
        return
    s.scope = None
    if s.done:
        return  # a partner took one of the offers: s.chosen and s.value are set
    s.withdraw_all()
    if scope.cancelled_caught:
        s.chosen, s.value = timer, None
    else:
        s.chosen, s.value = alone, result


async def _sync(evt: Event[Any], block: bool) -> Any:
    rt = current()
    await rt.checkpoint_if_cancelled()
    leaves: list[tuple[BaseEvent[Any], tuple[Any, ...], tuple[Nack, ...]]] = []
    created: list[Nack] = []
    pending: list[tuple[Awaitable[Any], tuple[Any, ...], tuple[Nack, ...]]] = []
    try:
        _force(evt, (), (), leaves, created, pending)
        while pending:
            awaitable, chain, nacks = pending.pop(0)
            _forced(await awaitable, chain, nacks, leaves, created, pending)
    except BaseException:
        # A guard failed or we were cancelled during an async guard: no branch
        # was chosen, so every nack made so far fires.
        for awaitable, _, _ in pending:
            close = getattr(awaitable, "close", None)
            if close is not None:
                close()
        _fire(created, ())
        raise

    # Commit at once if some leaf can: uniformly at random among the ready.
    if len(leaves) == 1:
        idx = 0 if leaves[0][0].ready() else -1
    else:
        ready = [i for i, leaf in enumerate(leaves) if leaf[0].ready()]
        if not ready:
            idx = -1
        elif len(ready) == 1:
            idx = ready[0]
        else:
            idx = ready[_rng.randrange(len(ready))]

    if idx >= 0:
        value = leaves[idx][0].commit_now()
        _fire(created, leaves[idx][2])
        await rt.cancel_shielded_checkpoint()
    elif not block:
        _fire(created, ())
        await rt.cancel_shielded_checkpoint()
        return None
    else:
        s = _Sync(rt)
        deadline = _INF
        timer = -1
        waiting = []
        alone_leaf = -1
        for i, leaf in enumerate(leaves):
            d = leaf[0].deadline
            if d is None:
                waiting.append(i)
                if leaf[0].wait_alone is not None:
                    # Two such leaves: neither can be awaited directly (helper tasks).
                    alone_leaf = i if alone_leaf == -1 else -2
            elif d < deadline:
                deadline, timer = d, i
        if alone_leaf < 0:
            for i in waiting:
                leaves[i][0].enqueue(s, i)
            try:
                if timer < 0:
                    await rt.park(s.task, s.withdraw_all)
                else:
                    # The earliest timer is a trio deadline on the wait itself;
                    # expiry goes through the same withdrawal as a cancellation.
                    with rt.CancelScope(deadline=deadline) as scope:
                        await rt.park(s.task, s.withdraw_all)
                    if scope.cancelled_caught:
                        s.chosen, s.value = timer, None
            except BaseException:
                _fire(created, ())
                raise
        else:
            await _wait_alone(s, leaves, waiting, alone_leaf, deadline, timer, created)
        idx = s.chosen
        value = s.value
        _fire(created, leaves[idx][2])

    chain = leaves[idx][1]
    if chain:
        return await _apply(value, chain)
    if type(value) is _Failure:
        raise value.exc
    return value
