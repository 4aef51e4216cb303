"""``pyweb loadtest DIR``: serve a site and run locust against it, in one command.

The site is served in this process (a :class:`~pyweb.testing.ServerThread` on 127.0.0.1
and a free port, on trio or on ``$PYWEB_TESTING_LOOP``, access log off, its database a temporary SQLite file unless ``--db``
says otherwise, so a load test does not fill the site's own database). locust runs
headless in a subprocess for ``--time`` with ``--users`` simulated users, then prints its
table: requests, failures, response-time percentiles, requests per second. The exit
status is locust's: 1 if any request failed.

locust brings gevent, which has no business in pyweb's environment, so it lives in an
environment of its own, created on first use: ``$PYWEB_LOCUST_VENV``, or
``~/.cache/pyweb/venv-locust``. Only the ``pyweb`` package is put on its path, so that
locustfiles can use :mod:`pyweb.testing.locust`.

The users come from ``--locustfile F``; without it, ``DIR/locustfile.py`` if the site has
one, else a visitor that opens ``/`` and follows the site's own links at random.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

LOCUST = "locust==2.47.0"
DEFAULT_LOCUSTFILE = Path(__file__).with_name("visitor_locustfile.py")


class Subcommands(Protocol):
    """What ``ArgumentParser.add_subparsers()`` returns, as far as a subcommand needs it."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser: ...


def default_venv() -> Path:
    if os.environ.get("PYWEB_LOCUST_VENV"):
        return Path(os.environ["PYWEB_LOCUST_VENV"])
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "pyweb" / "venv-locust"


def ensure_locust(venv: Path | None = None) -> Path:
    """The ``locust`` program of ``venv``, installing locust there first if needed."""
    venv = venv or default_venv()
    python, stamp = venv / "bin" / "python", venv / ".installed"
    if not (python.exists() and stamp.exists() and stamp.read_text() == LOCUST):
        print(f"pyweb loadtest: installing {LOCUST} into {venv} (once) ...", flush=True)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             LOCUST],
            check=True,
        )
        stamp.write_text(LOCUST)
    return venv / "bin" / "locust"


def add_parser(commands: Subcommands) -> argparse.ArgumentParser:
    """Add the ``loadtest`` subcommand to pyweb's command line."""
    loadtest = commands.add_parser(
        "loadtest",
        help="serve a site and load-test it with locust (installed on first use)",
        description="Serve DIR on 127.0.0.1 (a free port; its database a temporary SQLite "
        "file unless --db), run locust headless against it with N users for T, and print "
        "locust's table. Exit status 1 if any request failed. locust is installed on first "
        "use into its own environment ($PYWEB_LOCUST_VENV or ~/.cache/pyweb/venv-locust).",
    )
    loadtest.add_argument("dir", nargs="?", default=".", metavar="DIR",
                          help="site directory (default: .)")
    loadtest.add_argument("--users", type=int, default=10, metavar="N",
                          help="simulated users, all started at once (default: 10)")
    loadtest.add_argument("--time", default="10s", metavar="T",
                          help="how long to run, as locust reads it: 30s, 2m (default: 10s)")
    loadtest.add_argument("--locustfile", default=None, metavar="F",
                          help="the users (default: DIR/locustfile.py, else a link-following "
                          "visitor)")
    loadtest.add_argument("--db", default=None, metavar="URL",
                          help="database for the site (default: a temporary SQLite file)")
    return loadtest


def locust_command(locust: Path, locustfile: Path, url: str, users: int, time: str) -> list[str]:
    return [
        str(locust), "-f", str(locustfile), "--headless", "-H", url.rstrip("/"),
        "-u", str(users), "-r", str(users), "-t", time,
        "--only-summary", "--exit-code-on-error", "1",
    ]


def run(
    site_dir: str,
    *,
    users: int = 10,
    time: str = "10s",
    locustfile: str | None = None,
    db: str | None = None,
    venv: Path | None = None,
    wrap: Callable[[list[str]], list[str]] = lambda command: command,
) -> int:
    """Serve ``site_dir``, run locust against it, return locust's exit status.

    ``wrap`` may change the locust command line (benchmarks pin it to a CPU)."""
    users_file = Path(locustfile) if locustfile else Path(site_dir) / "locustfile.py"
    if not users_file.exists():
        if locustfile:
            print(f"pyweb: error: no locustfile {locustfile!r}", file=sys.stderr)
            return 2
        users_file = DEFAULT_LOCUSTFILE
    locust = ensure_locust(venv)
    with tempfile.TemporaryDirectory(prefix="pyweb-loadtest-") as tmp:
        from pyweb import db as database
        from pyweb.testing.server import ServerThread, build_server

        database.configure(db or f"sqlite:///{tmp}/loadtest.sqlite3", site=site_dir)
        runner = ServerThread(build_server(site_dir, error_log=None, **_signing())).start()
        try:
            url = f"http://127.0.0.1:{runner.port}"
            print(f"pyweb loadtest: serving {site_dir} at {url} on {runner.loop}; {users} users "
                  f"for {time} ({users_file})", flush=True)
            return run_locust(url, users_file, users=users, time=time, locust=locust,
                              wrap=wrap).returncode
        finally:
            runner.stop()


def _signing() -> dict[str, object]:
    """A signing key for this run when none is configured: sessions and CSRF tokens need one
    outside --dev, and a load test's sessions end with it."""
    if os.environ.get("PYWEB_SECRET_KEY"):
        return {}
    import secrets

    return {"secret_key": (secrets.token_urlsafe(32),)}


def run_locust(
    url: str,
    locustfile: str | os.PathLike[str],
    *,
    users: int = 10,
    time: str = "10s",
    csv: str | os.PathLike[str] | None = None,
    capture: bool = False,
    locust: Path | None = None,
    wrap: Callable[[list[str]], list[str]] = lambda command: command,
) -> subprocess.CompletedProcess[str]:
    """Run locust headless against ``url`` (a running server) and wait for it to finish.

    ``csv``: also write locust's statistics as CSV files starting with that path
    (``PREFIX_stats.csv``: one row per request name and an ``Aggregated`` row, with the
    request and failure counts, ``Requests/s`` and the percentiles ``50%`` ... ``100%``).
    ``capture``: keep locust's output in the result instead of printing it."""
    command = locust_command(locust or ensure_locust(), Path(locustfile).resolve(), url,
                             users, time)
    if csv is not None:
        command += ["--csv", str(csv)]
    with tempfile.TemporaryDirectory(prefix="pyweb-locust-") as tmp:
        return subprocess.run(wrap(command), env=_locust_env(Path(tmp)), text=True,
                              capture_output=capture)


def _locust_env(tmp: Path) -> dict[str, str]:
    """The environment for locust: only the ``pyweb`` package added to its path (the rest of
    pyweb's environment would shadow locust's own packages)."""
    import pyweb

    only = tmp / "path"
    only.mkdir()
    (only / "pyweb").symlink_to(Path(pyweb.__file__).resolve().parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(only), env.get("PYTHONPATH")]))
    return env


def main(args: argparse.Namespace) -> int:
    return run(args.dir, users=args.users, time=args.time, locustfile=args.locustfile,
               db=args.db)
