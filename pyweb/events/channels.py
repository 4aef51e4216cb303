"""Synchronous channels (Reppy, CML, §2 Figure 1 and §2.1 Figure 2).

A :class:`Channel` has no buffer: a send and a receive meet (a *rendezvous*)
and both happen at once, or neither does.  ``ch.send_evt(v)`` and
``ch.recv_evt()`` are the paper's ``transmit`` and ``receive`` base events;
``await ch.send(v)`` and ``await ch.recv()`` are ``send`` and ``accept``
(``sync o transmit``, ``sync o receive``), written directly for speed.

Each side keeps a FIFO of parked offers.  A queued offer always belongs to a
sync that is still waiting: whoever commits a sync withdraws its other offers
at once, so queues never hold dead entries.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Generic, TypeVar

from pyweb.runtime import current

from ._core import BaseEvent, Event, Offer, _Sync, complete

T = TypeVar("T")

__all__ = ["Channel"]


class Channel(Generic[T]):
    """``val channel : unit -> 'a chan``: an unbuffered rendezvous channel."""

    __slots__ = ("_senders", "_receivers", "__weakref__")

    def __init__(self) -> None:
        self._senders: deque[Offer] = deque()  # offers carry the value
        self._receivers: deque[Offer] = deque()

    def __repr__(self) -> str:
        return f"<Channel senders={len(self._senders)} receivers={len(self._receivers)}>"

    def send_evt(self, value: T) -> Event[None]:
        """``val transmit : ('a chan * 'a) -> unit event``"""
        return _SendEvt(self, value)

    def recv_evt(self) -> Event[T]:
        """``val receive : 'a chan -> 'a event``"""
        return _RecvEvt(self)

    async def send(self, value: T) -> None:
        """``val send : ('a chan * 'a) -> unit``: block until a receiver takes it."""
        rt = current()
        await rt.checkpoint_if_cancelled()
        receivers = self._receivers
        if receivers:
            complete(receivers.popleft(), value)
            await rt.cancel_shielded_checkpoint()
            return
        s = _Sync(rt)
        offer = Offer(s, 0, self._senders, value)
        self._senders.append(offer)
        s.offers.append(offer)
        await rt.park(s.task, s.withdraw_all)

    async def recv(self) -> T:
        """``val accept : 'a chan -> 'a``: block until a sender offers a value."""
        rt = current()
        await rt.checkpoint_if_cancelled()
        senders = self._senders
        if senders:
            offer = senders.popleft()
            complete(offer, None)
            await rt.cancel_shielded_checkpoint()
            return offer.payload
        s = _Sync(rt)
        offer = Offer(s, 0, self._receivers)
        self._receivers.append(offer)
        s.offers.append(offer)
        await rt.park(s.task, s.withdraw_all)
        return s.value


class _SendEvt(BaseEvent[None]):
    __slots__ = ("channel", "value")

    def __init__(self, channel: Channel[Any], value: Any) -> None:
        self.channel = channel
        self.value = value

    def ready(self) -> bool:
        return bool(self.channel._receivers)

    def commit_now(self) -> None:
        complete(self.channel._receivers.popleft(), self.value)

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        queue = self.channel._senders
        offer = Offer(sync, leaf, queue, self.value)
        queue.append(offer)
        sync.offers.append(offer)


class _RecvEvt(BaseEvent[Any]):
    __slots__ = ("channel",)

    def __init__(self, channel: Channel[Any]) -> None:
        self.channel = channel

    def ready(self) -> bool:
        return bool(self.channel._senders)

    def commit_now(self) -> Any:
        offer = self.channel._senders.popleft()
        complete(offer, None)
        return offer.payload

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        queue = self.channel._receivers
        offer = Offer(sync, leaf, queue)
        queue.append(offer)
        sync.offers.append(offer)
