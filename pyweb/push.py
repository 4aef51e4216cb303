"""Server push across processes: a multicast channel shared by every process of a site
(CML §3.1's multicast channel, Hop §2's server push).

:class:`~pyweb.events.Multicast` (CML §3.1) reaches the ports of one process. A site served
by ``pyweb serve --workers N``, or by several machines, is many processes: a chat message
posted to one worker must reach the waiters of every worker. :class:`SharedMulticast` is the
same channel stretched across processes through the engine the site already has for what is
shared, its cache (SMLserver §2.1: what outlives a request lives outside the process):

* with a Redis cache (``pyweb serve --cache redis://...``) messages travel on Redis
  pub/sub: ``send`` publishes, and one subscriber task per process (per event loop) hands
  each message to that process's ports;
* with the in-process cache the channel is in-process, with the same interface, so a site
  works unchanged on one process and on many.

The event interface is :class:`~pyweb.events.Multicast`'s: ``port = ch.port()`` subscribes,
and ``port.recv_evt()`` is an event to put in ``select``/``choose`` beside a timeout, a
client-gone event and the shutdown event::

    port = NEWS.port()                      # subscribe first, then read the history
    missed = await NEWS.since(last_seen)
    got = await select(port.recv_evt(), timeout(30), conn.client_gone_evt())

Messages are JSON objects (``dict``); ``await ch.send(message)`` returns the message with
``"seq"`` added: the channel's sequence number, which increases with every message (one
counter per channel, shared by every process). The channel also keeps its last ``history``
messages (``await ch.since(seq)``), so a late reader catches up.

Delivery guarantee (what a port sees):

* **Order.** Every port sees the channel's messages in ``seq`` order (Redis delivers the
  messages of one channel to every subscriber in the order it executed the publishes).
* **No silent gap.** A port receives every message sent after it was made, or else a
  :class:`Resync` before the next message it does receive. A process sends its ports a
  ``Resync`` when its subscription becomes live (ports made before that may have missed
  messages), when it comes back after losing Redis (a restart, a network cut), and when a
  sequence number was skipped. A ``Resync`` means: re-read ``await ch.since(last_seen)``.
* **At most once, not durable.** Nothing is stored beyond the ``history``. A Redis restart
  without persistence loses the history and the counter; the counter then restarts from the
  clock (microseconds since 1970), so sequence numbers keep increasing and a reader's
  ``last_seen`` stays meaningful.

``send`` and ``since`` raise :class:`MulticastUnavailable` (a 503 on a page) when Redis
cannot be reached: a message is either published or its sender is told it was not.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections import deque
from typing import Any

from pyweb.events import Mailbox, Multicast, Port, readable_evt, select, timeout, wrap

__all__ = ["MulticastUnavailable", "Resync", "SharedMulticast"]

log = logging.getLogger("pyweb.push")

PING_EVERY = 5.0
"""Seconds of silence after which the subscriber pings Redis; no answer by the next ping and
the connection is taken for dead (a network cut sends no FIN)."""

RETRY_FIRST, RETRY_MAX = 0.05, 2.0
"""Reconnection back-off of the subscriber, doubling from the first to the max."""


class Resync:
    """What a port receives when it may have missed messages: re-read the history."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Resync({self.reason!r})"


class MulticastUnavailable(ConnectionError):
    """Redis cannot be reached: the message was not sent (or the history not read)."""

    http_status = 503  # what a page that lets it escape answers


def _spawn_background(fn: Any) -> None:
    """Run ``fn()`` as a task of the running loop itself (trio's system nursery, or an
    asyncio task): the subscriber outlives the request that first needed it."""
    import sniffio

    if sniffio.current_async_library() == "trio":
        import trio

        trio.lowlevel.spawn_system_task(fn)
    else:
        import asyncio

        _tasks.add(task := asyncio.get_running_loop().create_task(fn()))
        task.add_done_callback(_tasks.discard)


_tasks: set[Any] = set()  # asyncio keeps only weak references to its tasks


def _check_message(value: Any) -> str:
    if not isinstance(value, dict):
        raise TypeError(f"a SharedMulticast message is a dict (a JSON object), got {value!r}")
    try:
        return json.dumps({k: v for k, v in value.items() if k != "seq"}, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"a SharedMulticast message must be JSON, got {value!r}: {exc}") from None


class SharedMulticast:
    """A multicast channel named ``name`` reaching every process of the site (module doc).

    ``port()`` subscribes (as :meth:`Multicast.port`); ``await send(message)`` publishes and
    returns the message with its ``seq``; ``await since(seq)`` gives the kept messages after
    ``seq``. The backend (Redis or in-process) follows ``pyweb.cache``'s configuration.
    """

    def __init__(self, name: str, *, history: int = 100) -> None:
        if not isinstance(name, str) or not name or any(c.isspace() for c in name):
            raise ValueError(f"a channel name is a non-empty string without spaces, got {name!r}")
        if not isinstance(history, int) or history < 0:
            raise ValueError(f"history is a number of messages >= 0, got {history!r}")
        self.name = name
        self.history = history
        self._local = _LocalChannel(history)  # used when the cache is in-process

    def __repr__(self) -> str:
        return f"<SharedMulticast {self.name!r}>"

    def _hub(self) -> _RedisHub | None:
        from pyweb import cache
        from pyweb.cache.redis_backend import RedisBackend

        backend = cache.backend()
        if not isinstance(backend, RedisBackend):
            return None
        return _RedisHub.for_backend(backend)

    def port(self) -> Port[Any]:
        """Subscribe: a port that sees every later message (or a :class:`Resync`)."""
        hub = self._hub()
        if hub is None:
            return self._local.fanout.port()
        return hub.port(self.name)

    async def send(self, message: dict[str, Any]) -> dict[str, Any]:
        """Publish ``message`` to every port of every process; returns it with ``"seq"``."""
        payload = _check_message(message)
        hub = self._hub()
        if hub is None:
            return self._local.send(payload)
        seq = await hub.publish(self.name, payload, self.history)
        return _decode(seq, payload)

    async def since(self, after: int) -> list[dict[str, Any]]:
        """The kept messages whose ``seq`` is above ``after``, oldest first."""
        hub = self._hub()
        if hub is None:
            return [m for m in self._local.kept if m["seq"] > after]
        return [m for m in await hub.history(self.name) if m["seq"] > after]


def _decode(seq: int, payload: str) -> dict[str, Any]:
    return {"seq": seq, **json.loads(payload)}


class _LocalChannel:
    """The in-process channel: a :class:`Multicast`, a counter and the history."""

    def __init__(self, history: int) -> None:
        self.fanout: Multicast[Any] = Multicast()
        self.kept: deque[dict[str, Any]] = deque(maxlen=history)
        self.seq = 0

    def send(self, payload: str) -> dict[str, Any]:
        self.seq += 1
        message = _decode(self.seq, payload)
        if self.kept.maxlen:
            self.kept.append(message)
        self.fanout.send(message)
        return message


# -- Redis --------------------------------------------------------------------------------

# KEYS: counter, history list. ARGV: payload, history length, channel.
# One script, so the number, the history and the publish are one step for every process.
_PUBLISH = """
local seq = redis.call('INCR', KEYS[1])
if seq == 1 then
  local t = redis.call('TIME')
  seq = tonumber(t[1]) * 1000000 + tonumber(t[2])
  redis.call('SET', KEYS[1], string.format('%d', seq))
end
local message = string.format('%d', seq) .. ' ' .. ARGV[1]
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('RPUSH', KEYS[2], message)
  redis.call('LTRIM', KEYS[2], -keep, -1)
end
redis.call('PUBLISH', ARGV[3], message)
return seq
"""
_PUBLISH_SHA = hashlib.sha1(_PUBLISH.encode()).hexdigest()

_FAILED = object()


def _parse_wire(data: bytes) -> tuple[int, str]:
    seq, _, payload = data.partition(b" ")
    return int(seq), payload.decode()


class _Fanout:
    """One channel as one process's subscriber sees it."""

    __slots__ = ("fanout", "live", "last")

    def __init__(self) -> None:
        self.fanout: Multicast[Any] = Multicast()
        self.live = False
        self.last: int | None = None


class _RedisHub:
    """One process's (one event loop's) side of Redis pub/sub: the subscriber task and its
    channels. Made on first use in a loop, for one cache backend."""

    _hubs: dict[tuple[int, object], _RedisHub] = {}

    @classmethod
    def for_backend(cls, backend: Any) -> _RedisHub:
        from pyweb.runtime import loop_id

        loop = loop_id()
        hub = cls._hubs.get((id(backend), loop))
        if hub is None or hub.backend is not backend:
            hub = cls._hubs[(id(backend), loop)] = cls(backend, loop)
        return hub

    def __init__(self, backend: Any, loop: object) -> None:
        self.backend = backend
        self.loop = loop
        self.prefix: bytes = backend.prefix + b"events:"
        self.channels: dict[str, _Fanout] = {}
        self.requests: Mailbox[str] = Mailbox()  # channels to subscribe to
        self.started = False
        self.down = False  # logged once per outage

    def _key(self, name: str) -> bytes:
        return self.prefix + name.encode()

    def port(self, name: str) -> Port[Any]:
        channel = self.channels.get(name)
        if channel is None:
            channel = self.channels[name] = _Fanout()
            self.requests.send(name)
        if not self.started:
            self.started = True
            _spawn_background(self._subscriber)
        return channel.fanout.port()

    # -- publishing and the history: ordinary commands on the cache's connections ------------

    async def publish(self, name: str, payload: str, history: int) -> int:
        key = self._key(name)
        args = (2, key + b":seq", key + b":log", payload, history, key)

        def steps() -> Any:
            reply = yield ("EVALSHA", _PUBLISH_SHA, *args)
            if "NOSCRIPT" in str(reply):
                reply = yield ("EVAL", _PUBLISH, *args)
            return reply

        reply = await self.backend.run_steps(steps(), _FAILED)
        if reply is _FAILED or not isinstance(reply, int):
            raise MulticastUnavailable(f"cannot publish on {name!r}: {self.backend} ({reply!r})")
        return reply

    async def history(self, name: str) -> list[dict[str, Any]]:
        def steps() -> Any:
            return (yield ("LRANGE", self._key(name) + b":log", 0, -1))

        reply = await self.backend.run_steps(steps(), _FAILED)
        if reply is _FAILED or not isinstance(reply, list):
            raise MulticastUnavailable(f"cannot read {name!r}: {self.backend} ({reply!r})")
        return [_decode(*_parse_wire(item)) for item in reply]

    # -- the subscriber task ---------------------------------------------------------------

    async def _subscriber(self) -> None:
        """Keep one SUBSCRIBE connection for this loop, forever, reconnecting with back-off.
        A system task: it must never raise (only trio's cancellation at the loop's end)."""
        delay = RETRY_FIRST
        while not self._stale():
            try:
                await self._session()
            except Exception as exc:  # OSError, TimeoutError, a protocol error: all "lost"
                if not self.down:
                    self.down = True
                    log.warning("multicast subscriber lost %s (%s); retrying", self.backend, exc)
            for channel in self.channels.values():
                if channel.live:
                    delay = RETRY_FIRST  # it had been working: retry soon
                channel.live = False
            await select(timeout(delay))
            delay = min(delay * 2, RETRY_MAX)

    async def _session(self) -> None:
        from pyweb.cache.resp import Connection, ReplyParser, encode_command

        conn = Connection(self.backend.address, self.backend.timeout)
        try:
            await conn.acall("PING")  # connects, authenticates, selects the database
            if self.down:
                self.down = False
                log.warning("multicast subscriber reconnected to %s", self.backend)
            sock = conn.sock
            assert sock is not None
            parser = ReplyParser()
            self.requests.drain()  # every channel is subscribed below
            if self.channels:
                await conn.send_all(
                    encode_command("SUBSCRIBE", *(self._key(n) for n in self.channels))
                )
            pinged = False
            while True:
                got = await select(
                    readable_evt(sock),
                    self.requests.recv_evt(),
                    wrap(timeout(PING_EVERY), lambda _: False),
                )
                if got is None:  # bytes from Redis
                    try:
                        data = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    if not data:
                        raise ConnectionError("Redis closed the subscriber connection")
                    pinged = False
                    parser.feed(data)
                    while (reply := parser.next_reply()) is not ReplyParser.NEED_MORE:
                        self._handle(reply)
                elif got is False:  # quiet for a while: is Redis still there?
                    if pinged:
                        raise TimeoutError(f"no answer to PING in {PING_EVERY:g} s")
                    await conn.send_all(encode_command("PING"))
                    pinged = True
                else:  # a channel made since the connection started
                    await conn.send_all(encode_command("SUBSCRIBE", self._key(got)))
                if self._stale():
                    return
        finally:
            conn.close()

    def _stale(self) -> bool:
        """The site moved to another cache backend (``pyweb.cache.configure``): this hub's
        ports get nothing more, and its task ends at its next wake-up."""
        from pyweb import cache

        if cache.backend() is self.backend:
            return False
        self._hubs.pop((id(self.backend), self.loop), None)
        return True

    def _handle(self, reply: Any) -> None:
        if not isinstance(reply, list) or len(reply) < 3:
            return  # a PONG (["pong", ""]) or anything else that carries no message
        kind, key = reply[0], reply[1]
        name = key[len(self.prefix) :].decode() if isinstance(key, bytes) else ""
        channel = self.channels.get(name)
        if channel is None:
            return
        if kind == b"subscribe":
            # From now on every message reaches us; ports made before may have missed some.
            channel.live = True
            channel.last = None
            channel.fanout.send(Resync("subscribed"))
        elif kind == b"message":
            seq, payload = _parse_wire(reply[2])
            if channel.last is not None and seq != channel.last + 1:
                channel.fanout.send(Resync(f"expected message {channel.last + 1}, got {seq}"))
            channel.last = seq
            channel.fanout.send(_decode(seq, payload))
