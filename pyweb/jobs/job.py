"""A scheduled job: a name, when it is due, what it runs, and how long it may take.

Two ways to write one, both SMLserver's (§3: ``Web.schedule``, ``scheduleDaily``,
``scheduleWeekly``):

* a function in a service module, decorated::

      import pyweb

      @pyweb.daily(hour=3, minute=30)
      async def clean_guest_book():
          await db.dml(qq("delete from guest where created < {cutoff}"))

  (``@pyweb.every(seconds)``, ``@pyweb.daily(hour=, minute=)``, ``@pyweb.weekly(day=,
  hour=, minute=)``); an ``async def`` runs on the server's loop, a plain function in a
  worker thread;
* a script named in ``pyweb.toml`` (:mod:`pyweb.jobs.schedule_file`)::

      [[schedule]]
      script = "_cleanup.py"
      every = 3600

The decorated function stays callable as it was (a test calls it directly).
"""

from __future__ import annotations

import ast
import inspect
import os
from collections.abc import Callable
from typing import Any

from .timing import Daily, Every, Weekly, When, parse_day

__all__ = ["Job", "every", "daily", "weekly", "script_job"]

SERVICE_PREFIX = "pyweb_site_services."
"""The prefix of the names service modules are imported under (``pyweb.app.site``)."""


class Job:
    """One scheduled job (``@every``/``@daily``/``@weekly`` make one, and so does a
    ``[[schedule]]`` entry)."""

    def __init__(
        self,
        name: str,
        when: When,
        target: Callable[..., Any],
        *,
        timeout: float | None = None,
        where: str = "",
    ) -> None:
        if timeout is not None and not (isinstance(timeout, int | float) and timeout > 0):
            raise ValueError(f"job {name}: timeout is a positive number of seconds, got {timeout!r}")
        self.name = name
        self.when = when
        self.target = target
        self.timeout = timeout
        """Seconds a run may take (None: the ``job_timeout`` setting)."""
        self.where = where
        """Where it is defined (``file:line``), for messages."""
        self.__wrapped__ = target
        self.__doc__ = target.__doc__

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.target(*args, **kwargs)

    async def run(self) -> None:
        """One run (no timeout here: the scheduler puts one around it)."""
        from pyweb import runtime

        if inspect.iscoroutinefunction(self.target):
            await self.target()
            return
        result = await runtime.to_thread(self.target, abandon_on_cancel=True)
        if inspect.isawaitable(result):
            await result

    def __repr__(self) -> str:
        return f"<job {self.name} {self.when}>"


def _decorated(when: When, timeout: float | None) -> Callable[[Callable[..., Any]], Job]:
    def bind(func: Callable[..., Any]) -> Job:
        if isinstance(func, Job) or not callable(func):
            raise TypeError(f"a schedule decorator goes on a function, got {func!r}")
        if inspect.signature(func).parameters:
            raise TypeError(
                f"scheduled function {func.__qualname__} takes no parameters (nobody passes any)"
            )
        module = getattr(func, "__module__", "") or ""
        name = f"{module.removeprefix(SERVICE_PREFIX)}.{func.__qualname__}"
        code = getattr(func, "__code__", None)
        where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else ""
        return Job(name, when, func, timeout=timeout, where=where)

    return bind


def every(seconds: float, *, timeout: float | None = None) -> Callable[[Callable[..., Any]], Job]:
    """Run the function every ``seconds`` (due at the multiples of ``seconds`` since the epoch)."""
    return _decorated(Every(seconds), timeout)


def daily(*, hour: int, minute: int = 0, timeout: float | None = None) -> Callable[[Callable[..., Any]], Job]:
    """Run the function every day at ``hour:minute``, the server's local time."""
    return _decorated(Daily(hour, minute), timeout)


def weekly(
    *, day: str | int, hour: int, minute: int = 0, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Job]:
    """Run the function every week on ``day`` (``"monday"`` or 0-6) at ``hour:minute``."""
    return _decorated(Weekly(parse_day(day), hour, minute), timeout)


def script_job(site_root: str, script: str, when: When, timeout: float | None, where: str) -> Job:
    """A job that runs a script of the site (top-level ``await`` allowed), in fresh globals."""
    path = os.path.realpath(os.path.join(site_root, script))
    if not path.startswith(os.path.realpath(site_root) + os.sep) or not os.path.isfile(path):
        raise ValueError(f"{where}: script {script!r} is not a file in the site directory")
    with open(path, "rb") as f:
        source = f.read()
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    try:
        code = compile(source, path, "exec", flags=flags, dont_inherit=True)
    except SyntaxError as exc:
        raise ValueError(f"{path}:{exc.lineno}: SyntaxError in scheduled script: {exc.msg}") from None
    awaits = bool(code.co_flags & inspect.CO_COROUTINE)

    def run_script() -> Any:
        scope: dict[str, Any] = {"__name__": "__pyweb_job__", "__file__": path}
        return eval(code, scope)  # noqa: S307 - the site's own scheduled script

    async def run_async_script() -> None:
        await run_script()

    target = run_async_script if awaits else run_script
    target.__qualname__ = target.__name__ = script
    return Job(f"script:{script}", when, target, timeout=timeout, where=where)
