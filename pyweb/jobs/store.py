"""Where the jobs' leases and records live: the shared cache (Redis) or the site's data/.

**Exactly once.** Every worker of every host runs the same scheduler and computes the same
due times (:mod:`pyweb.jobs.timing`). When a job is due, each asks for the lease on
``(job, due time)`` and only the one that gets it runs the job:

* with the Redis cache (``--cache redis://...``): ``SET key owner NX PX ttl``. Redis does
  the one atomic "set if absent", so among any number of processes exactly one gets it;
  the key expires after ``ttl`` (longer than the job's period: a straggler that asks late
  still finds it taken);
* with the in-memory cache there is nothing shared between processes, so the jobs run in
  one worker only (worker 0, or the single process: :mod:`pyweb.jobs.scheduler`), and
  its leases and records are kept in ``DIR/data/jobs.json`` under an ``flock``
  (which also keeps two servers started by mistake on one site directory from both
  running a job).

**Records.** After each run, the process that ran it records its outcome (``ok``,
``failed: ...``, ``timed out``), when it started and ended, and who ran it: ``pyweb jobs DIR``
and the status page read them, and the scheduler reads the last due time run to catch up
on a run missed while the site was down.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["RedisStore", "FileStore", "open_store"]

log = logging.getLogger("pyweb.jobs")


class RedisStore:
    """Leases and records in Redis (shared by every worker and host using it)."""

    def __init__(self, url: str, site_name: str, *, timeout: float = 2.0) -> None:
        from pyweb.cache.resp import Address

        self.url = url
        self.address = Address.from_url(url)
        prefix = dict(parse_qsl(urlsplit(url).query)).get("prefix", "pyweb:")
        self.base = f"{prefix}jobs:{site_name}:"
        self.timeout = timeout
        self._conn: Any = None
        self._lock: Any = None

    def __str__(self) -> str:
        return f"redis {self.address} ({self.base}*)"

    async def _call(self, *args: Any) -> Any:
        from pyweb import runtime
        from pyweb.cache.resp import Connection

        if self._lock is None:
            self._lock = runtime.current().Lock()
        async with self._lock:  # one connection carries one command at a time
            conn = self._conn
            if conn is None:
                conn = self._conn = Connection(self.address, self.timeout)
            try:
                return await conn.acall(*args)
            except BaseException:
                conn.close()  # half a reply must never reach the next call
                self._conn = None
                raise

    async def claim(self, job: str, due: float, ttl: float, owner: str) -> bool:
        key = f"{self.base}lease:{job}:{due:.3f}"
        reply = await self._call("SET", key, owner, "NX", "PX", max(1000, int(ttl * 1000)))
        return reply is not None

    async def record(self, job: str, record: dict[str, Any]) -> None:
        await self._call("HSET", f"{self.base}records", job, json.dumps(record))

    async def records(self) -> dict[str, dict[str, Any]]:
        reply = await self._call("HGETALL", f"{self.base}records")
        pairs = iter(reply or [])
        return {k.decode(): json.loads(v) for k, v in zip(pairs, pairs, strict=True)}

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


class FileStore:
    """Leases and records in ``DIR/data/jobs.json``, under an ``flock`` of ``jobs.lock``."""

    def __init__(self, site_root: str) -> None:
        self.directory = os.path.join(site_root, "data")
        self.path = os.path.join(self.directory, "jobs.json")

    def __str__(self) -> str:
        return self.path

    def _update(self, change: Any) -> Any:
        os.makedirs(self.directory, exist_ok=True)
        with open(os.path.join(self.directory, "jobs.lock"), "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # the OS's lock, released when the file closes
            state = self._load()
            answer = change(state)
            temporary = self.path + ".tmp"
            with open(temporary, "w", encoding="utf-8") as f:
                json.dump(state, f, indent=1)
            os.replace(temporary, self.path)  # readers see the old file or the new one
            return answer

    def _load(self) -> dict[str, Any]:
        try:
            with open(self.path, encoding="utf-8") as f:
                state = json.load(f)
        except FileNotFoundError:
            return {"claims": {}, "records": {}}
        except (OSError, ValueError) as exc:
            log.error("cannot read %s (%s); starting from an empty record", self.path, exc)
            return {"claims": {}, "records": {}}
        return state if isinstance(state, dict) else {"claims": {}, "records": {}}

    async def claim(self, job: str, due: float, ttl: float, owner: str) -> bool:
        def take(state: dict[str, Any]) -> bool:
            claims = state.setdefault("claims", {})
            if claims.get(job, float("-inf")) >= due:
                return False
            claims[job] = due
            return True

        return bool(self._update(take))

    async def record(self, job: str, record: dict[str, Any]) -> None:
        self._update(lambda state: state.setdefault("records", {}).__setitem__(job, record))

    async def records(self) -> dict[str, dict[str, Any]]:
        records = self._load().get("records", {})
        return records if isinstance(records, dict) else {}

    def close(self) -> None:
        pass


def open_store(site_root: str, cache_url: str | None) -> RedisStore | FileStore:
    """The store for a site: Redis when the cache is Redis, else the site's data/ file."""
    if cache_url and cache_url.startswith("redis://"):
        return RedisStore(cache_url, os.path.basename(os.path.realpath(site_root)))
    return FileStore(site_root)
