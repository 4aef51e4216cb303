"""The exceptions of :mod:`pyweb.db` (SMLserver §4: "On error, the function raises ... Fail").

SMLserver raises one exception, ``Fail``, for every database error. pyweb keeps one base
class, :class:`DbError`, and splits it where the *page* should react differently:

* :class:`SqlError`: the database refused a statement (syntax, constraint, type). It is the
  page's bug or bad data, so the site answers 500, and the message carries the SQL and the
  database's own words.
* :class:`DbUnavailable`: the database cannot be reached, a connection was lost, or no
  handle became free in time (:class:`PoolTimeout`). Not the page's fault: its
  ``http_status`` is 503, which :mod:`pyweb.app.site` turns into a "Service Unavailable"
  page, and the next request tries again (a lost connection is replaced on next use).
* :class:`NestingError`: a request nested more database calls than there are pools.
* :class:`RowCountError`: ``one_row``/``one_field``/``zero_or_one_row`` got the wrong number
  of rows.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "DbError",
    "SqlError",
    "DbUnavailable",
    "PoolTimeout",
    "NestingError",
    "RowCountError",
]


def _show_sql(sql: str, limit: int = 500) -> str:
    return sql if len(sql) <= limit else sql[:limit] + f"... ({len(sql)} characters)"


class DbError(Exception):
    """Every error of :mod:`pyweb.db`. ``sql`` is the statement involved, if any."""

    def __init__(self, message: str, *, sql: str | None = None) -> None:
        self.message = message
        self.sql = sql
        text = message if sql is None else f"{message}\n    in SQL: {_show_sql(sql)}"
        super().__init__(text)


class SqlError(DbError):
    """The database refused the statement: ``sql`` and the database's ``db_message``.

    ``params`` are the bound parameters (shown in development error pages, which are only
    for the developer's eyes), ``driver_error`` the driver's own exception (also the
    ``__cause__``).
    """

    def __init__(
        self,
        db_message: str,
        *,
        sql: str,
        params: Any = None,
        database: str = "",
        driver_error: BaseException | None = None,
    ) -> None:
        self.db_message = db_message
        self.params = params
        self.database = database
        self.driver_error = driver_error
        prefix = f"{database}: " if database else ""
        super().__init__(f"{prefix}{db_message}", sql=sql)


class DbUnavailable(DbError):
    """The database cannot serve this request now; pages answer 503 and may retry later."""

    http_status = 503
    outage = True
    """The database is unreachable: logged once per outage (:mod:`pyweb.outage`), not with a
    traceback per request."""


class PoolTimeout(DbUnavailable):
    """No handle of the pool became free within the timeout (the site is overloaded)."""

    outage = False  # load, not an outage: the database answers, just not soon enough


class NestingError(DbError):
    """A task asked for a handle while holding one from every pool (SMLserver §4)."""


class RowCountError(DbError):
    """A query expected to give one row (or at most one) gave another number of rows."""
