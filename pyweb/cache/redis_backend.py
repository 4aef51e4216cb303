"""The Redis backend of :mod:`pyweb.cache`: one cache shared by every process that uses the
same Redis (SMLserver shared a cache between threads; this shares it between workers and
machines), with the same semantics as the in-process backend.

Keys, under a prefix (``pyweb:cache:`` by default) and the cache's name ``N``:

* ``N:meta``: the cache's signature (``String -> Option(Real), TimeOut(300)``). Every
  operation checks it in the same Lua script, so a process that asks for ``N`` with other
  types or another kind gets :class:`~pyweb.cache.CacheMismatchError`, not garbage.
* ``TimeOut``/``WhileUsed``: one Redis string per entry, ``N:k:<encoded key>``, holding a
  15-digit deadline in milliseconds followed by the encoded value. Expiry is decided against
  the deadline (so a fake clock drives it in tests: the script takes ``now`` as an argument,
  or reads the server's ``TIME``, one clock for every process); the Redis TTL (``PX``) is set
  too, so Redis reclaims the memory by itself. A ``WhileUsed`` hit rewrites the deadline
  (``SETRANGE``) and refreshes the TTL (``PEXPIRE``).
* ``Size``: a hash ``N:data`` (key → value), a sorted set ``N:order`` (key → insertion
  number from the counter ``N:seq``) and the byte count ``N:used``. The insert script evicts
  the lowest insertion numbers until the new entry fits; being one Lua script it is atomic,
  so two processes inserting at once never overshoot the budget.

Failure: if Redis cannot be reached, an operation is a miss (``lookup`` → absent, ``insert``
→ not stored) and ``pyweb.cache`` logs a warning once per outage; for one second after a
failure operations do not even try, so a page does not wait for a dead server on every call.

Every operation is written once, as a generator that yields Redis commands and receives the
replies (sans-IO); :meth:`RedisBackend._run` drives it blocking, :meth:`RedisBackend.run_steps`
drives it on trio or asyncio.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Generator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pyweb.outage import Outage

from .errors import CacheMismatchError
from .kinds import Size, WhileUsed
from .resp import Address, Connection, ReplyError

__all__ = ["RedisBackend"]

log = logging.getLogger("pyweb.cache")

Steps = Generator[tuple[Any, ...], Any, Any]


_PRELUDE = """
local m = redis.call('GET', KEYS[1])
if not m then redis.call('SET', KEYS[1], ARGV[1])
elseif m ~= ARGV[1] then return redis.error_reply('PYWEBMISMATCH ' .. m) end
local function now_ms(arg)
  local n = tonumber(arg)
  if n >= 0 then return n end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
"""

# KEYS: meta, entry. ARGV: signature, now, duration ms, "1" for WhileUsed.
_TTL_LOOKUP = (
    _PRELUDE
    + """
local raw = redis.call('GET', KEYS[2])
if not raw then return false end
local now = now_ms(ARGV[2])
if now >= tonumber(string.sub(raw, 1, 15)) then
  redis.call('DEL', KEYS[2])
  return false
end
if ARGV[4] == '1' then
  local dur = tonumber(ARGV[3])
  redis.call('SETRANGE', KEYS[2], 0, string.format('%015d', now + dur))
  redis.call('PEXPIRE', KEYS[2], dur)
end
return string.sub(raw, 16)
"""
)

# KEYS: meta, entry. ARGV: signature, now, duration ms, value.
_TTL_INSERT = (
    _PRELUDE
    + """
local now = now_ms(ARGV[2])
local dur = tonumber(ARGV[3])
redis.call('SET', KEYS[2], string.format('%015d', now + dur) .. ARGV[4], 'PX', dur)
return 1
"""
)

# KEYS: meta, entry. ARGV: signature, now.
_TTL_DELETE = (
    _PRELUDE
    + """
local raw = redis.call('GET', KEYS[2])
if not raw then return 0 end
redis.call('DEL', KEYS[2])
if now_ms(ARGV[2]) >= tonumber(string.sub(raw, 1, 15)) then return 0 end
return 1
"""
)

# KEYS: meta, data. ARGV: signature, key.
_SIZE_LOOKUP = (
    _PRELUDE
    + """
return redis.call('HGET', KEYS[2], ARGV[2])
"""
)

# KEYS: meta, data, order, used, seq. ARGV: signature, key, value, budget.
_SIZE_INSERT = (
    _PRELUDE
    + """
local k, v, budget = ARGV[2], ARGV[3], tonumber(ARGV[4])
local used = tonumber(redis.call('GET', KEYS[4]) or '0')
local old = redis.call('HGET', KEYS[2], k)
if old then
  redis.call('HDEL', KEYS[2], k)
  redis.call('ZREM', KEYS[3], k)
  used = used - (#k + #old)
end
local size = #k + #v
if size > budget then
  redis.call('SET', KEYS[4], used)
  return 0
end
while used + size > budget do
  local oldest = redis.call('ZPOPMIN', KEYS[3])
  if #oldest == 0 then break end
  local ov = redis.call('HGET', KEYS[2], oldest[1])
  redis.call('HDEL', KEYS[2], oldest[1])
  if ov then used = used - (#oldest[1] + #ov) end
end
local seq = redis.call('INCR', KEYS[5])
redis.call('HSET', KEYS[2], k, v)
redis.call('ZADD', KEYS[3], seq, k)
redis.call('SET', KEYS[4], used + size)
return 1
"""
)

# KEYS: meta, data, order, used. ARGV: signature, key.
_SIZE_DELETE = (
    _PRELUDE
    + """
local k = ARGV[2]
local old = redis.call('HGET', KEYS[2], k)
if not old then return 0 end
redis.call('HDEL', KEYS[2], k)
redis.call('ZREM', KEYS[3], k)
redis.call('DECRBY', KEYS[4], #k + #old)
return 1
"""
)

# KEYS: meta, data, order, used, seq. ARGV: signature.
_SIZE_FLUSH = (
    _PRELUDE
    + """
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5])
return 1
"""
)

_SHA = {
    script: hashlib.sha1(script.encode()).hexdigest()
    for script in (
        _TTL_LOOKUP,
        _TTL_INSERT,
        _TTL_DELETE,
        _SIZE_LOOKUP,
        _SIZE_INSERT,
        _SIZE_DELETE,
        _SIZE_FLUSH,
    )
}


def _glob_escape(data: bytes) -> bytes:
    out = bytearray()
    for byte in data:
        if byte in b"*?[]\\":
            out += b"\\"
        out.append(byte)
    return bytes(out)


class RedisBackend:
    """Entries in a Redis server, shared by every process configured with the same URL."""

    def __init__(
        self,
        url: str,
        *,
        clock: Callable[[], float] | None = None,
        prefix: str = "pyweb:cache:",
        timeout: float = 0.5,
        retry_after: float = 1.0,
        max_idle: int = 64,
    ) -> None:
        self.address = Address.from_url(url)
        # ?prefix=... in the URL, so `pyweb serve --cache URL` can set it too
        prefix = dict(parse_qsl(urlsplit(url).query)).get("prefix", prefix)
        self.clock = clock
        self.prefix = prefix.encode()
        self.timeout = timeout
        self.retry_after = retry_after
        self._idle: list[Connection] = []  # for blocking calls
        self._aidle: list[Connection] = []  # for async calls
        # Idle connections kept per form (blocking, async). Concurrent callers each take one
        # (a RESP connection carries one request at a time); beyond this many at once,
        # connections are opened and closed per call.
        self._max_idle = max_idle
        self._down_until = 0.0
        self.down = False
        """True from a failed call until one succeeds (calls meanwhile are not tried for
        ``retry_after`` seconds); the site's metrics report it."""
        self._state_lock = threading.Lock()
        self.outage = Outage(
            f"cache backend {self.address}",
            log,
            failed_what="cache operations (answered as misses)",
            consequence="caches act as misses until it is back",
        )
        """Logs an outage once when it starts (with the error) and once when it ends (with
        the count of operations it turned into misses): pyweb.outage."""

    def __str__(self) -> str:
        return str(self.address)

    # -- keys and the clock --------------------------------------------------------------

    def _base(self, spec: Any) -> bytes:
        return self.prefix + spec.name.encode()

    def _now(self) -> int:
        """Milliseconds on the configured clock, or -1: "the Redis server's clock"."""
        return -1 if self.clock is None else int(round(self.clock() * 1000))

    def _eval(self, spec: Any, script: str, keys: list[bytes], args: list[Any]) -> Steps:
        reply = yield ("EVALSHA", _SHA[script], len(keys), *keys, *args)
        if isinstance(reply, ReplyError) and str(reply).startswith("NOSCRIPT"):
            reply = yield ("EVAL", script, len(keys), *keys, *args)
        if isinstance(reply, ReplyError):
            text = str(reply)
            if text.startswith("PYWEBMISMATCH "):
                raise CacheMismatchError(
                    f"cache {spec.name!r} exists in {self.address} as "
                    f"{text.removeprefix('PYWEBMISMATCH ')}; it cannot also be {spec.signature}"
                )
            raise ReplyError(text)
        return reply

    # -- the operations, as command generators -------------------------------------------

    def _lookup(self, spec: Any, key: bytes) -> Steps:
        base = self._base(spec)
        if isinstance(spec.kind, Size):
            keys = [base + b":meta", base + b":data"]
            return (yield from self._eval(spec, _SIZE_LOOKUP, keys, [spec.signature, key]))
        ms = spec.kind.milliseconds
        whileused = "1" if isinstance(spec.kind, WhileUsed) else "0"
        keys = [base + b":meta", base + b":k:" + key]
        args = [spec.signature, self._now(), ms, whileused]
        return (yield from self._eval(spec, _TTL_LOOKUP, keys, args))

    def _insert(self, spec: Any, key: bytes, value: bytes) -> Steps:
        base = self._base(spec)
        if isinstance(spec.kind, Size):
            keys = [base + s for s in (b":meta", b":data", b":order", b":used", b":seq")]
            args = [spec.signature, key, value, spec.kind.bytes]
            return bool((yield from self._eval(spec, _SIZE_INSERT, keys, args)))
        ms = spec.kind.milliseconds
        keys = [base + b":meta", base + b":k:" + key]
        yield from self._eval(spec, _TTL_INSERT, keys, [spec.signature, self._now(), ms, value])
        return True

    def _delete(self, spec: Any, key: bytes) -> Steps:
        base = self._base(spec)
        if isinstance(spec.kind, Size):
            keys = [base + s for s in (b":meta", b":data", b":order", b":used")]
            return bool((yield from self._eval(spec, _SIZE_DELETE, keys, [spec.signature, key])))
        keys = [base + b":meta", base + b":k:" + key]
        return bool((yield from self._eval(spec, _TTL_DELETE, keys, [spec.signature, self._now()])))

    def _flush(self, spec: Any) -> Steps:
        base = self._base(spec)
        if isinstance(spec.kind, Size):
            keys = [base + s for s in (b":meta", b":data", b":order", b":used", b":seq")]
            yield from self._eval(spec, _SIZE_FLUSH, keys, [spec.signature])
            return None
        pattern = _glob_escape(base + b":k:") + b"*"
        cursor = b"0"
        while True:
            reply = yield ("SCAN", cursor, "MATCH", pattern, "COUNT", 1000)
            if isinstance(reply, ReplyError):
                raise reply
            cursor, found = reply
            if found:
                yield ("UNLINK", *found)
            if cursor == b"0":
                return None

    # -- drivers: blocking and async --------------------------------------------------------

    def _take(self, pool: list[Connection]) -> Connection:
        try:
            return pool.pop()  # atomic: two threads never get the same connection
        except IndexError:
            return Connection(self.address, self.timeout)

    def _skip(self) -> bool:
        if self.down and time.monotonic() < self._down_until:
            self.outage.failed("down")  # counted; logged only when the outage began
            return True
        return False

    def _failed(self, error: BaseException) -> None:
        with self._state_lock:
            self.down = True
            self._down_until = time.monotonic() + self.retry_after
        self.outage.failed(error)

    def _recovered(self) -> None:
        if self.down:
            with self._state_lock:
                self.down = False
        self.outage.recovered()

    def _run(self, steps: Steps, default: Any) -> Any:
        if self._skip():
            return default
        conn = self._take(self._idle)
        try:
            command = next(steps)
            while True:
                try:
                    reply = conn.call(*command)
                except (OSError, EOFError) as error:  # ConnectionError and TimeoutError too
                    conn.close()
                    self._failed(error)
                    steps.close()
                    return default
                command = steps.send(reply)
        except StopIteration as done:
            self._recovered()
            if len(self._idle) < self._max_idle:
                self._idle.append(conn)
            else:
                conn.close()
            return done.value
        except BaseException:
            conn.close()
            raise

    async def run_steps(self, steps: Steps, default: Any) -> Any:
        """Drive one operation's ``steps`` (a generator of commands, fed the replies) over an
        idle connection on trio or asyncio; ``default`` when Redis cannot be reached."""
        if self._skip():
            return default
        conn = self._take(self._aidle)
        try:
            command = next(steps)
            while True:
                try:
                    reply = await conn.acall(*command)
                except (OSError, EOFError) as error:
                    conn.close()
                    self._failed(error)
                    steps.close()
                    return default
                command = steps.send(reply)
        except StopIteration as done:
            self._recovered()
            if len(self._aidle) < self._max_idle:
                self._aidle.append(conn)
            else:
                conn.close()
            return done.value
        except BaseException:
            # cancelled half-way, or a mismatch: a half-read reply must never reach the next
            # caller, so the connection is not reused
            conn.close()
            raise

    def lookup(self, spec: Any, key: bytes) -> bytes | None:
        return self._run(self._lookup(spec, key), None)

    def insert(self, spec: Any, key: bytes, value: bytes) -> bool:
        return self._run(self._insert(spec, key, value), False)

    def delete(self, spec: Any, key: bytes) -> bool:
        return self._run(self._delete(spec, key), False)

    def flush(self, spec: Any) -> None:
        self._run(self._flush(spec), None)

    async def alookup(self, spec: Any, key: bytes) -> bytes | None:
        return await self.run_steps(self._lookup(spec, key), None)

    async def ainsert(self, spec: Any, key: bytes, value: bytes) -> bool:
        return await self.run_steps(self._insert(spec, key, value), False)

    async def adelete(self, spec: Any, key: bytes) -> bool:
        return await self.run_steps(self._delete(spec, key), False)

    async def aflush(self, spec: Any) -> None:
        await self.run_steps(self._flush(spec), None)

    def close(self) -> None:
        for pool in (self._idle, self._aidle):
            while pool:
                pool.pop().close()
