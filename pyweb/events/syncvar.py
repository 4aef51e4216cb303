"""Synchronizing variables: CML's ``SyncVar`` structure (Reppy, *Concurrent Programming in
ML*, §5.3; the I-structures and M-structures of Id).

* :class:`IVar`: an *I-variable*, written once. ``put`` fills it (a second ``put`` raises
  :class:`PutError`, CML's ``Put`` exception); ``get_evt()`` (``iGetEvt``) is enabled from
  then on, forever, and every reader sees the same value.
* :class:`MVar`: an *M-variable*, a one-place buffer. ``put`` fills an empty one (a full one
  raises :class:`PutError`); ``take_evt()`` (``mTakeEvt``) empties it, ``get_evt()``
  (``mGetEvt``) reads it and leaves it full; ``swap`` (``mSwap``) takes the value and puts a
  new one in one step.
* :class:`Latch`: an I-variable of nothing, a flag that is set once and stays set.
  ``Server.stopping`` is one: a handler that waits long puts ``ctx.shutdown_evt()`` (the
  latch's event) in its choice and answers at once when a graceful shutdown begins.
* :class:`ClientGoneEvt`: the event of a latch that somebody must look at to set (the client
  hanging up is seen only by looking at its socket): syncing on it first asks the
  :class:`Watcher` to look now, and, if the sync must wait, to keep watching until the
  latch is set or nobody waits any more.

All of them are base events (``docs/events.md``, "Writing a new base event"): usable in a
``choose``, under ``wrap``, with ``timeout``, like a channel's events.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Generic, Protocol, TypeVar

from ._core import BaseEvent, Event, Offer, _Sync, complete, sync

T = TypeVar("T")

__all__ = ["ClientGoneEvt", "IVar", "Latch", "MVar", "PutError", "Watcher"]


class PutError(RuntimeError):
    """``put`` on a full variable (CML's ``Put`` exception): an I-variable is written once,
    an M-variable must be emptied (``take``) before it is filled again."""


class _Readers(Generic[T]):
    """The readers parked on an empty variable, completed all at once when it fills."""

    __slots__ = ("offers",)

    def __init__(self) -> None:
        self.offers: deque[Offer] = deque()

    def wake(self, value: T) -> None:
        offers = self.offers
        while offers:  # complete() withdraws each sync's other offers (maybe from this deque)
            complete(offers.popleft(), value)

    def enqueue(self, sync: _Sync, leaf: int, payload: Any = None) -> None:
        offer = Offer(sync, leaf, self.offers, payload)
        self.offers.append(offer)
        sync.offers.append(offer)


class IVar(Generic[T]):
    """A write-once variable (``'a ivar``): ``put`` once, ``get`` as often as you like."""

    __slots__ = ("_full", "_value", "_readers")

    def __init__(self) -> None:
        self._full = False
        self._value: Any = None
        self._readers: _Readers[T] = _Readers()

    @property
    def is_full(self) -> bool:
        return self._full

    @property
    def waiting(self) -> int:
        """How many syncs wait for the variable to be filled."""
        return len(self._readers.offers)

    def put(self, value: T) -> None:
        """``val iPut : ('a ivar * 'a) -> unit``: fill the variable; every reader waiting
        wakes with ``value``. Raises :class:`PutError` when it is already full."""
        if self._full:
            raise PutError(f"put({value!r}) on an I-variable already holding {self._value!r}")
        self._full = True
        self._value = value
        self._readers.wake(value)

    def get_evt(self) -> Event[T]:
        """``val iGetEvt : 'a ivar -> 'a event``: enabled once the variable is full."""
        return _IGet(self)

    async def get(self) -> T:
        """``val iGet : 'a ivar -> 'a``"""
        return await sync(_IGet(self))

    def poll(self) -> T | None:
        """``val iGetPoll : 'a ivar -> 'a option``: the value, or ``None`` while empty."""
        return self._value if self._full else None

    def __repr__(self) -> str:
        state = f"full={self._value!r}" if self._full else f"empty, {self.waiting} waiting"
        return f"<{type(self).__name__} {state}>"


class _IGet(BaseEvent[Any]):
    """``iGetEvt`` and ``mGetEvt``: enabled while the variable is full; leaves it full."""

    __slots__ = ("var",)

    def __init__(self, var: IVar[Any] | MVar[Any]) -> None:
        self.var = var

    def ready(self) -> bool:
        return self.var._full

    def commit_now(self) -> Any:
        return self.var._value

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        self.var._readers.enqueue(sync, leaf)


class Latch(IVar[None]):
    """A flag that is set once and then stays set, as an event: ``evt()`` is enabled from
    :meth:`set` on, forever (an I-variable of nothing; setting it twice is harmless)."""

    __slots__ = ()

    @property
    def is_set(self) -> bool:
        return self._full

    def set(self) -> None:
        if not self._full:
            self.put(None)

    def evt(self) -> Event[None]:
        return _IGet(self)


_TAKE = object()
"""The payload of a parked ``take`` (a parked ``swap`` carries a one-tuple: the new value)."""


class MVar(Generic[T]):
    """A one-place buffer (``'a mvar``): ``put`` fills it, ``take`` empties it."""

    __slots__ = ("_full", "_value", "_readers", "_takers")

    def __init__(self, value: Any = _TAKE) -> None:
        """``mVar()`` makes an empty variable, ``MVar(v)`` (``mVarInit v``) a full one."""
        self._full = value is not _TAKE
        self._value: Any = None if value is _TAKE else value
        self._readers: _Readers[T] = _Readers()  # mGet: see the value, leave it there
        self._takers: deque[Offer] = deque()  # mTake and mSwap: take it

    @property
    def is_full(self) -> bool:
        return self._full

    def put(self, value: T) -> None:
        """``val mPut : ('a mvar * 'a) -> unit``: fill the empty variable. Readers waiting
        see ``value``; then the first taker waiting takes it (and a swapper puts its own
        value back, which the next reader and taker see). Raises :class:`PutError` when full."""
        if self._full:
            raise PutError(f"put({value!r}) on a full M-variable holding {self._value!r}")
        while True:
            self._readers.wake(value)
            if not self._takers:
                self._full = True
                self._value = value
                return
            offer = self._takers.popleft()
            payload = offer.payload
            complete(offer, value)
            if payload is _TAKE:
                return  # taken: empty again
            value = payload[0]  # swapped: full again with the swapper's value

    def take_evt(self) -> Event[T]:
        """``val mTakeEvt : 'a mvar -> 'a event``: enabled while full; empties it."""
        return _MTake(self, _TAKE)

    def get_evt(self) -> Event[T]:
        """``val mGetEvt : 'a mvar -> 'a event``: enabled while full; leaves it full."""
        return _IGet(self)

    def swap_evt(self, new: T) -> Event[T]:
        """``mSwapEvt``: take the value and put ``new`` in its place, in one commit."""
        return _MTake(self, (new,))

    async def take(self) -> T:
        return await sync(_MTake(self, _TAKE))

    async def get(self) -> T:
        return await sync(_IGet(self))

    async def swap(self, new: T) -> T:
        """``val mSwap : ('a mvar * 'a) -> 'a``"""
        return await sync(_MTake(self, (new,)))

    def peek(self) -> T | None:
        """``mGetPoll``: the value, left in place, or ``None`` while empty."""
        return self._value if self._full else None

    def poll(self) -> T | None:
        """``mTakePoll``: take the value now, or ``None`` while empty."""
        if not self._full:
            return None
        value = self._value
        self._full = False
        self._value = None
        return value

    def __repr__(self) -> str:
        state = f"full={self._value!r}" if self._full else "empty"
        return f"<MVar {state}>"


class _MTake(BaseEvent[Any]):
    __slots__ = ("var", "payload")

    def __init__(self, var: MVar[Any], payload: Any) -> None:
        self.var = var
        self.payload = payload  # _TAKE, or (new,) for a swap

    def ready(self) -> bool:
        return self.var._full

    def commit_now(self) -> Any:
        var = self.var
        value = var._value
        if self.payload is _TAKE:
            var._full = False
            var._value = None
        else:
            var._value = self.payload[0]
        return value

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        offer = Offer(sync, leaf, self.var._takers, self.payload)
        self.var._takers.append(offer)
        sync.offers.append(offer)


class Watcher(Protocol):
    """What :class:`ClientGoneEvt` needs of the one who watches: a latch it sets when it
    sees the thing happen, a look right now, and a way to keep looking in the background."""

    @property
    def latch(self) -> Latch: ...

    def check(self) -> bool:
        """Look now: set the latch if it happened; return whether the latch is set."""
        ...

    def start(self) -> None:
        """Keep watching (a background task) until the latch is set or nobody waits."""
        ...


class ClientGoneEvt(BaseEvent[None]):
    """Enabled (for good) once the watcher's latch is set: the client hung up. A sync first
    asks the watcher to look; if it has to wait, it parks on the latch and starts the
    watcher, so watching costs nothing until somebody waits for it."""

    __slots__ = ("watcher",)

    def __init__(self, watcher: Watcher) -> None:
        self.watcher = watcher

    def ready(self) -> bool:
        return self.watcher.check()

    def commit_now(self) -> None:
        return None

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        self.watcher.latch._readers.enqueue(sync, leaf)
        self.watcher.start()
