"""When a job is due: every n seconds, daily at a time, weekly on a day at a time.

SMLserver's ``Web.schedule`` runs a script every n seconds, ``scheduleDaily`` at a time of
day and ``scheduleWeekly`` on a day of the week at a time (SMLserver §3). Here each is a
small value with two questions: :meth:`next_due` (the first due time after ``t``) and
:meth:`last_due` (the latest due time at or before ``t``), in seconds since the epoch.

Due times must be the same in every worker and on every host, without them talking to
each other: they are what the lease is taken on (:mod:`pyweb.jobs.store`). So ``every(n)``
is due at the multiples of ``n`` seconds since the epoch (not "n seconds after this process
started"), and daily and weekly times are read in the server's local time zone, as cron
does: hosts serving one site must share a time zone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["Every", "Daily", "Weekly", "When", "DAYS", "parse_day"]

DAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")


def _check_time(hour: object, minute: object) -> tuple[int, int]:
    if isinstance(hour, bool) or not isinstance(hour, int) or not 0 <= hour <= 23:
        raise ValueError(f"hour is a whole number from 0 to 23, got {hour!r}")
    if isinstance(minute, bool) or not isinstance(minute, int) or not 0 <= minute <= 59:
        raise ValueError(f"minute is a whole number from 0 to 59, got {minute!r}")
    return hour, minute


def parse_day(day: object) -> int:
    """``"monday"`` (any case, or its first three letters) or 0-6 (Monday is 0)."""
    if isinstance(day, int) and not isinstance(day, bool) and 0 <= day <= 6:
        return day
    if isinstance(day, str):
        text = day.strip().lower()
        for number, name in enumerate(DAYS):
            if text == name or (len(text) == 3 and name.startswith(text)):
                return number
    raise ValueError(f"day is a day of the week (\"monday\") or 0-6 (Monday is 0), got {day!r}")


@dataclass(frozen=True)
class Every:
    """Due at every multiple of ``seconds`` since the epoch."""

    seconds: float

    def __post_init__(self) -> None:
        s = self.seconds
        if isinstance(s, bool) or not isinstance(s, int | float) or not 0 < s < math.inf:
            raise ValueError(f"every(seconds) takes a positive number of seconds, got {s!r}")

    def next_due(self, t: float) -> float:
        return (math.floor(t / self.seconds) + 1) * self.seconds

    def last_due(self, t: float) -> float:
        return math.floor(t / self.seconds) * self.seconds

    @property
    def period(self) -> float:
        return float(self.seconds)

    def __str__(self) -> str:
        return f"every {self.seconds:g} s"


@dataclass(frozen=True)
class Daily:
    """Due every day at ``hour:minute``, local time."""

    hour: int
    minute: int = 0

    def __post_init__(self) -> None:
        _check_time(self.hour, self.minute)

    def _on(self, day: datetime) -> datetime:
        return day.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)

    def next_due(self, t: float) -> float:
        now = datetime.fromtimestamp(t)
        due = self._on(now)
        while due.timestamp() <= t:
            due = self._on(due + timedelta(days=1))
        return due.timestamp()

    def last_due(self, t: float) -> float:
        now = datetime.fromtimestamp(t)
        due = self._on(now)
        while due.timestamp() > t:
            due = self._on(due - timedelta(days=1))
        return due.timestamp()

    @property
    def period(self) -> float:
        return 86400.0

    def __str__(self) -> str:
        return f"daily at {self.hour:02d}:{self.minute:02d}"


@dataclass(frozen=True)
class Weekly:
    """Due every week on ``day`` (0 is Monday) at ``hour:minute``, local time."""

    day: int
    hour: int
    minute: int = 0

    def __post_init__(self) -> None:
        _check_time(self.hour, self.minute)
        if isinstance(self.day, bool) or not isinstance(self.day, int) or not 0 <= self.day <= 6:
            raise ValueError(f"day is 0-6 (Monday is 0), got {self.day!r}")

    def _on(self, day: datetime) -> datetime:
        shifted = day + timedelta(days=(self.day - day.weekday()) % 7)
        return shifted.replace(hour=self.hour, minute=self.minute, second=0, microsecond=0)

    def next_due(self, t: float) -> float:
        due = self._on(datetime.fromtimestamp(t))
        while due.timestamp() <= t:
            due = self._on(due + timedelta(days=1))
        return due.timestamp()

    def last_due(self, t: float) -> float:
        due = self._on(datetime.fromtimestamp(t))  # on or after today
        while due.timestamp() > t:
            due = self._on(due - timedelta(days=7))
        return due.timestamp()

    @property
    def period(self) -> float:
        return 7 * 86400.0

    def __str__(self) -> str:
        return f"weekly on {DAYS[self.day]} at {self.hour:02d}:{self.minute:02d}"


When = Every | Daily | Weekly
