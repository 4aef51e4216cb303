"""Outages of a backing service (the database, Redis), logged in proportion.

When PostgreSQL is down for ten seconds, a busy site fails thousands of requests, each for
the same reason. Logging each with its traceback (21,829 tracebacks, 40 MB, for a 10 s
outage, before this module) buries the one line an operator needs: *when* it went down,
*when* it came back, and *how much* it cost. Marlow §5.1 logs errors so an operator can act
on them; a log that grows with the load instead of with the number of events is no help.

:class:`Outage` is that record, one per service. The service's code calls
:meth:`Outage.failed` each time an operation fails because the service is unreachable, and
:meth:`Outage.recovered` after an operation succeeds. The log gets::

    [warning] pyweb.db: postgresql (127.0.0.1:5432) is unreachable: connection refused;
              pages that use it answer 503 until it is back
    [warning] pyweb.db: postgresql (127.0.0.1:5432) is still unreachable after 60 s:
              1,204 requests failed so far            (once a minute while it lasts)
    [warning] pyweb.db: postgresql (127.0.0.1:5432) is back after 72.3 s: 1,311 requests
              failed during the outage

The first message carries the error's text (not a traceback: the cause is outside the
program). Thread-safe: Redis's synchronous calls come from any thread.
"""

from __future__ import annotations

import logging
import threading
import time

__all__ = ["Outage", "REMIND_EVERY"]

REMIND_EVERY = 60.0
"""Seconds between the "still unavailable" reminders of a long outage."""


class Outage:
    """The availability of one service: ``Outage("postgresql (host:5432)", log)``."""

    def __init__(
        self,
        service: str,
        log: logging.Logger,
        *,
        failed_what: str = "requests",
        consequence: str = "pages that use it answer 503 until it is back",
    ) -> None:
        self.service = service
        self.log = log
        self.failed_what = failed_what
        self.consequence = consequence
        self.down = False
        """True from the first failure until the next success (read without the lock: a
        plain attribute, so ``recovered`` costs nothing while all is well)."""
        self.failures = 0
        """Failed operations in the current outage."""
        self.started = 0.0
        self._reminded = 0.0
        self._lock = threading.Lock()

    def failed(self, error: BaseException | str) -> None:
        """One operation failed because the service is unreachable."""
        with self._lock:
            now = time.monotonic()
            self.failures += 1
            if not self.down:
                self.down = True
                self.started = self._reminded = now
                self.log.warning(
                    "%s is unreachable: %s; %s",
                    self.service,
                    _describe(error),
                    self.consequence,
                )
            elif now - self._reminded >= REMIND_EVERY:
                self._reminded = now
                self.log.warning(
                    "%s is still unreachable after %.0f s: %s %s failed so far",
                    self.service,
                    now - self.started,
                    f"{self.failures:,}",
                    self.failed_what,
                )

    def recovered(self) -> None:
        """An operation succeeded: if the service was down, the outage is over."""
        if not self.down:
            return
        with self._lock:
            if not self.down:
                return
            self.down = False
            self.log.warning(
                "%s is back after %.1f s: %s %s failed during the outage",
                self.service,
                time.monotonic() - self.started,
                f"{self.failures:,}",
                self.failed_what,
            )
            self.failures = 0


def _describe(error: BaseException | str) -> str:
    if isinstance(error, str):
        return error
    text = str(error).strip().splitlines()
    return text[0] if text else type(error).__name__
