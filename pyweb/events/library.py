"""Communication abstractions built from events (Reppy, CML, §2.2, §2.4, §3.1).

* :class:`Mailbox`: the buffered channel of Figure 3.  ``send`` never blocks;
  ``recv_evt()`` is an event usable anywhere ``Channel.recv_evt()`` is (in a
  ``choose``, under ``wrap``...).  The paper keeps the buffer in a thread
  that selects between ``receive inCh`` and ``transmit (outCh, x)``; here the
  buffer is a base event of its own, which behaves the same (FIFO, no loss)
  without needing a nursery to run a thread in.
* :class:`Multicast`: the buffered multicast channel of §3.1: every port sees
  every message sent after the port was made, in order.
* :class:`RPC`: a request/reply service whose client event commits *at the
  reply* (``clientCallEvt5``, with ``with_nack`` in place of the abort
  channel): if the client chose another branch, the server learns it and can
  abort the transaction.
"""

from __future__ import annotations

import inspect
import weakref
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from ._core import BaseEvent, Event, Offer, _Sync, choose, complete, sync, with_nack, wrap
from .channels import Channel

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["RPC", "Mailbox", "Multicast", "Port", "Request"]


class Mailbox(Generic[T]):
    """A buffered channel (Figure 3): ``bufferSend`` never blocks,
    ``bufferReceive`` is an event.  Unbounded; messages come out in order."""

    __slots__ = ("_items", "_receivers", "__weakref__")

    def __init__(self) -> None:
        self._items: deque[T] = deque()
        self._receivers: deque[Offer] = deque()

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"<Mailbox items={len(self._items)} receivers={len(self._receivers)}>"

    def send(self, value: T) -> None:
        """``val bufferSend : ('a buffer_chan * 'a) -> unit``: never blocks."""
        # Invariant: items waiting means no receiver waiting, and vice versa.
        if self._receivers:
            complete(self._receivers.popleft(), value)
        else:
            self._items.append(value)

    def recv_evt(self) -> Event[T]:
        """``val bufferReceive : 'a buffer_chan -> 'a event``"""
        return _MailboxRecv(self)

    async def recv(self) -> T:
        return await sync(_MailboxRecv(self))

    def drain(self) -> list[T]:
        """Take every buffered message at once, without blocking (``[]`` when empty):
        for a consumer that works in batches, like the server's logging task, which
        syncs on ``recv_evt()`` for the first message and drains the rest (Marlow §5)."""
        items = list(self._items)
        self._items.clear()
        return items


class _MailboxRecv(BaseEvent[Any]):
    __slots__ = ("box",)

    def __init__(self, box: Mailbox[Any]) -> None:
        self.box = box

    def ready(self) -> bool:
        return bool(self.box._items)

    def commit_now(self) -> Any:
        return self.box._items.popleft()

    def enqueue(self, sync: _Sync, leaf: int) -> None:
        queue = self.box._receivers
        offer = Offer(sync, leaf, queue)
        queue.append(offer)
        sync.offers.append(offer)


class Port(Generic[T]):
    """One reader's view of a :class:`Multicast`: its own FIFO of messages."""

    __slots__ = ("_box", "_owner", "__weakref__")

    def __init__(self, owner: Multicast[T]) -> None:
        self._box: Mailbox[T] = Mailbox()
        self._owner = owner

    def recv_evt(self) -> Event[T]:
        return self._box.recv_evt()

    async def recv(self) -> T:
        return await self._box.recv()

    def close(self) -> None:
        """Stop receiving (a dropped port is also forgotten when collected)."""
        self._owner._ports.discard(self)


class Multicast(Generic[T]):
    """A buffered multicast channel: ``port()`` subscribes, ``send`` never blocks."""

    __slots__ = ("_ports",)

    def __init__(self) -> None:
        # Weak references: a port nobody holds any more stops buffering.
        self._ports: weakref.WeakSet[Port[T]] = weakref.WeakSet()

    def port(self) -> Port[T]:
        port: Port[T] = Port(self)
        self._ports.add(port)
        return port

    def send(self, value: T) -> None:
        for port in list(self._ports):
            port._box.send(value)


class Request(Generic[T, R]):
    """A request as the server sees it: ``arg`` and a way to reply."""

    __slots__ = ("arg", "_reply", "_nack")

    def __init__(self, arg: T, reply: Channel[R], nack: Event[None]) -> None:
        self.arg = arg
        self._reply = reply
        self._nack = nack

    def reply_evt(self, value: R) -> Event[bool]:
        """The server's commit point: ``True`` once the client took ``value``,
        ``False`` if the client chose something else (abort the transaction)."""
        return choose(
            wrap(self._reply.send_evt(value), lambda _: True),
            wrap(self._nack, lambda _: False),
        )

    async def reply(self, value: R) -> bool:
        return await sync(self.reply_evt(value))


class RPC(Generic[T, R]):
    """A request/reply service with the reply as the client's commit point.

    Client: ``await rpc.call(x)`` or ``rpc.call_evt(x)`` inside a choice.
    Server: ``req = await rpc.accept()`` then ``await req.reply(result)``, or
    ``await rpc.serve(fn)`` to loop forever.
    """

    __slots__ = ("_requests",)

    def __init__(self) -> None:
        # A mailbox, so that issuing a request inside the guard never blocks
        # (the paper spawns a thread to send it, clientCallEvt3-5).
        self._requests: Mailbox[Request[T, R]] = Mailbox()

    def call_evt(self, arg: T) -> Event[R]:
        """``clientCallEvt5``: enabled when the server's reply is ready."""

        def make(nack: Event[None]) -> Event[R]:
            reply: Channel[R] = Channel()
            self._requests.send(Request(arg, reply, nack))
            return reply.recv_evt()

        return with_nack(make)

    async def call(self, arg: T) -> R:
        return await sync(self.call_evt(arg))

    def request_evt(self) -> Event[Request[T, R]]:
        return self._requests.recv_evt()

    async def accept(self) -> Request[T, R]:
        return await self._requests.recv()

    async def serve(self, fn: Callable[[T], R | Awaitable[R]]) -> None:
        """Answer requests forever with ``fn`` (plain or async)."""
        while True:
            req = await self.accept()
            result = fn(req.arg)
            if inspect.isawaitable(result):
                result = await result
            await req.reply(result)
