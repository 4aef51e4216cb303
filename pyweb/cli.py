"""The command line: ``pyweb serve [DIR]`` (also ``python -m pyweb serve [DIR]``).

It turns arguments into a :class:`~pyweb.server.ServerConfig` (Marlow §6 reads the same
knobs from a configuration file; Hop §2.4.1 from command-line switches), starts the server,
prints where it listens, and turns SIGINT/SIGTERM into a graceful shutdown: stop
accepting, finish the requests in flight, close idle connections, exit 0. A second signal
during the shutdown stops at once (exit 1). A page that holds the loop (a CPU loop, a
blocking call) is interrupted past ``page_timeout`` or when a stop signal comes
(:mod:`pyweb.app.interrupt`, armed here: the loop runs in the main thread), so the
signals are always acted on. Reference: docs/cli.md.
"""

from __future__ import annotations

import argparse
import errno
import os
import signal
import site
import socket
import sys
from collections.abc import Callable, Sequence
from typing import Any

import trio

import pyweb_regions
from pyweb import heap, signing
from pyweb.app import interrupt
from pyweb.app.loader import Problem
from pyweb.app.sharing import workers_need_shared_cache
from pyweb.app.site import Site, SiteError, check_site
from pyweb.background import Background
from pyweb.server import Server, ServerConfig
from pyweb.server.base import BaseServer
from pyweb.server.config import setting_default, settings
from pyweb.server.configfile import ConfigFileError, find_config_file, read_config_file
from pyweb.server.supervised import RECYCLE_EXIT
from pyweb.server.workers import Supervisor

__all__ = ["main", "build_parser"]


def _flag_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """A setting's reader as an argparse ``type``: its ValueError words become the error."""

    def read(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    read.__name__ = parse.__name__
    return read


def _add_settings(serve: argparse.ArgumentParser) -> None:
    """One flag per :class:`ServerConfig` setting (``pyweb/server/config.py``): the table
    written once, from which ``pyweb.toml``'s keys come too."""
    groups: dict[str | None, Any] = {None: serve}
    for f, how in settings():
        default = setting_default(f)
        target = groups.get(how.group)
        if target is None:
            title = SETTING_GROUPS.get(how.group or "", None)
            target = groups[how.group] = serve.add_argument_group(how.group, title)
        flag = "--" + f.name.replace("_", "-")
        help_text = how.help.format(default=default) if how.in_file else argparse.SUPPRESS
        if how.switch:
            if default:  # on by default: --no-NAME turns it off (--proxy-headers)
                target.add_argument(
                    flag, action=argparse.BooleanOptionalAction, default=True, help=help_text
                )
            else:
                target.add_argument(flag, action="store_true", help=help_text)
            continue
        options: dict[str, Any] = {"default": default, "help": help_text}
        if how.parse is not None:
            options["type"] = _flag_type(how.parse)
        target.add_argument(flag, choices=how.choices, metavar=how.metavar, **options)


SETTING_GROUPS = {
    "site": "sessions, login, CSRF and security headers (docs/sessions.md, docs/csrf.md)","regions": "module snapshots and allocation accounting (docs/regions.md)",
    "background": "scheduled jobs, work after the reply and mail (docs/scheduling.md, "
    "docs/mail.md)"}
"""The titles of the sections of ``pyweb serve --help`` that settings name."""


def version_line() -> str:
    """What ``pyweb --version`` prints: pyweb's version, the Python and the C extension."""
    from pyweb import __version__

    python = ".".join(map(str, sys.version_info[:3]))
    return f"pyweb {__version__} (Python {python}, regions {pyweb_regions.IMPLEMENTATION})"


class CommandLine(argparse.ArgumentParser):
    """pyweb's command line: an ``ArgumentParser`` that also keeps its subcommands' own
    parsers by name (argparse holds them in an action of its own, with no public lookup)."""

    subcommands: dict[str, argparse.ArgumentParser]
    """The parser of each subcommand (``"serve"``, ``"check"``...), as ``add_parser`` made it."""


def build_parser() -> CommandLine:
    parser = CommandLine(
        prog="pyweb", description="pyweb: web programming for learning, teaching and prototyping."
    )
    parser.add_argument("--version", action="version", version=version_line())
    commands = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=argparse.ArgumentParser
    )
    parser.subcommands = commands.choices
    serve = commands.add_parser(
        "serve",
        help="serve a site directory over HTTP/1.1",
        description="Serve DIR over HTTP/1.1: its services, page scripts, templates and "
        "static files. Without --dev the site is checked first (as `pyweb check` does) and "
        "the server refuses to start on errors.",
    )
    serve.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
    serve.add_argument(
        "--config",
        metavar="PATH",
        help="settings file (default: DIR/pyweb.toml if it exists); its keys are these "
        "flags with underscores, flags given here override it; SIGHUP re-reads it",
    )
    _add_settings(serve)
    check = commands.add_parser(
        "check",
        help="compile every page, library module and template of a site and list the errors",
        description="Load DIR as `pyweb serve` would (scripts compiled, service modules "
        "imported, templates parsed, the settings file and its [[schedule]] entries read) "
        "and report every error with its file and line (SMLserver's compile step). Exit "
        "status 1 when there are errors.",
    )
    check.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
    check.add_argument("--config", metavar="PATH", help="settings file (default: DIR/pyweb.toml)")
    from pyweb.testing import loadtest

    new = commands.add_parser(
        "new",
        help="make a new site that runs: a page, a service, a template, settings and a test",
        description="Make the folder NAME holding a site that runs: site/ (a page script, a "
        "service module, a template page, a style sheet), pyweb.toml outside it, a README "
        "and tests/test_site.py. Nothing is written over.",
    )
    new.add_argument("name", metavar="NAME", help="the folder to make (a new one)")
    loadtest.add_parser(commands)
    database = commands.add_parser(
        "db",
        help="database commands (pyweb.db): `pyweb db init [DIR]` runs the site's schema.sql",
        description="`pyweb db init [DIR] [--db URL]` runs DIR/schema.sql (or "
        "schema.DIALECT.sql) on the database; schema files are written to be run again "
        "safely (CREATE TABLE IF NOT EXISTS).",
    )
    database.add_argument("action", choices=["init"], help="init: run the site's schema")
    database.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
    database.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="database URL (default: sqlite:///DIR/data/pyweb.sqlite3)",
    )
    jobs = commands.add_parser(
        "jobs",
        help="list the site's scheduled jobs with their next and last run and its outcome",
        description="Load DIR as `pyweb check` does and list every scheduled job (@every, "
        "@daily, @weekly and pyweb.toml's [[schedule]]) with its next run, its last run and "
        "that run's outcome, as recorded in the shared cache (--cache, PYWEB_CACHE or the "
        "file's cache) or in DIR/data/jobs.json.",
    )
    jobs.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
    jobs.add_argument("--config", metavar="PATH", help="settings file (default: DIR/pyweb.toml)")
    jobs.add_argument("--cache", metavar="URL", help="the cache the server uses (redis://...)")
    from pyweb.notebook import grade  # the teacher's command: notebooks, not a site

    grade.add_parser(commands)
    return parser


def settings_problems(directory: str, config: str | None) -> list[Problem]:
    """The problems of the site's settings file (``--config``, else ``DIR/pyweb.toml``): a
    bad setting, and every bad ``[[schedule]]`` entry, read by the readers ``pyweb
    serve`` uses (:func:`~pyweb.server.configfile.read_config_file`,
    :func:`~pyweb.jobs.schedule_file.schedule_problems`)."""
    from pyweb.jobs.schedule_file import schedule_problems

    base = os.path.dirname(os.path.realpath(directory))  # (as the site's own problems)
    try:
        path = find_config_file(directory, config)
    except ConfigFileError as err:
        return [Problem(err.path, 0, err.reason)]
    if path is None:
        return []
    shown = os.path.relpath(os.path.realpath(path), base)
    try:
        read_config_file(path)
    except ConfigFileError as err:
        if err.reason.startswith("not valid TOML"):  # the schedule cannot be read either
            return [Problem(shown, err.line or 0, err.reason)]
        found = [Problem(shown, err.line or 0, err.reason)]
    else:
        found = []
    return found + [Problem(shown, n, why) for n, why in schedule_problems(path, directory)]


def run_db_init(directory: str, url: str | None) -> int:
    """``pyweb db init DIR``: run the site's schema file on its database."""
    from pyweb import db

    url = url or db.default_url(directory)
    try:
        database = db.Database(url)
    except (ValueError, ImportError) as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 2
    schema = db.schema_file(directory, database.dialect)
    if schema is None:
        print(f"pyweb: error: no schema.sql in {directory}", file=sys.stderr)
        return 1
    with open(schema, encoding="utf-8") as f:
        text = f.read()
    try:
        trio.run(database.script, text)
    except db.DbError as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 1
    finally:
        database.close()
    print(f"pyweb db init: ran {schema} on {database.url}")
    return 0


def run_new(name: str) -> int:
    """``pyweb new NAME``: copy the skeleton, then say what to do next."""
    from pyweb.new import SiteExists, create_site

    try:
        written = create_site(name)
    except (ValueError, SiteExists) as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 2
    for path in written:
        print(f"  made {path}")
    print(
        f"\nNext:\n  cd {name}\n  pyweb serve site --config pyweb.toml --dev   # then open "
        f"http://127.0.0.1:8000/\n  python -m pytest tests"
    )
    return 0


def run_check(directory: str, config: str | None = None) -> int:
    """``pyweb check DIR``: print every problem, then a one-line summary."""
    site, problems = check_site(directory)
    problems += settings_problems(directory, config)
    for problem in problems:
        print(problem)
    summary = (
        f"{len(site.scripts)} scripts, {len(site.services)} services, "
        f"{len(site.templates.env.list_templates()) if site.templates else 0} templates"
    )
    if problems:
        print(f"pyweb check {directory}: {len(problems)} error(s) ({summary})", file=sys.stderr)
        return 1
    print(f"pyweb check {directory}: no errors ({summary})")
    return 0


def config_from_args(args: argparse.Namespace) -> ServerConfig:
    values = {f.name: getattr(args, f.name) for f, _ in settings()}
    if args.listen_fd is None:
        values["max_requests"] = None  # counted by each worker, not by the supervisor
    return ServerConfig(site_dir=args.dir, **values)


def parse_command_line(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parse ``argv``; for ``serve``, the configuration file's values are the defaults that
    the flags override (``config_path`` says which file was read, or None). Raises
    :class:`~pyweb.server.configfile.ConfigFileError` for a bad file."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.config_path = None
    if args.command == "serve" and os.path.isdir(args.dir):
        path = find_config_file(args.dir, args.config)
        if path is not None:
            serve = parser.subcommands["serve"]
            serve.set_defaults(**read_config_file(path, serve))
            args = parser.parse_args(argv)
            args.config_path = path
    return args


def build_site(args: argparse.Namespace, config: ServerConfig) -> Site:
    """The site ``pyweb serve`` serves (raises SiteError for a broken one outside --dev)."""
    return Site.from_settings(args.dir, config)


def startup_error(exc: BaseException, host: str, port: int) -> str | None:
    """One line for an error that stops the server from starting (the port is taken, the
    address is not ours...), or None if ``exc`` is not such an error. trio wraps errors
    in exception groups; a student should never have to read one, so the group is opened
    and its first OSError described in words."""
    leaves = [exc]
    while leaves and isinstance(leaves[0], BaseExceptionGroup):
        leaves = list(leaves[0].exceptions) + leaves[1:]
    err = next((e for e in leaves if isinstance(e, OSError)), None)
    if err is None:
        return None
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    other = port + 1 if 0 < port < 65535 else 8001
    if err.errno == errno.EADDRINUSE:
        return (
            f"{where} is already in use (another pyweb or program); stop it or choose "
            f"another port: make run PORT={other} / --port {other}"
        )
    if err.errno == errno.EACCES:
        return (
            f"{where}: permission denied (ports below 1024 need administrator rights); "
            f"choose another port: make run PORT=8000 / --port 8000"
        )
    if err.errno == errno.EADDRNOTAVAIL:
        return f"cannot listen on {where}: {host} is not an address of this machine"
    if isinstance(err, socket.gaierror):
        return f"cannot listen on {where}: no such host {host!r} ({err.strerror})"
    return f"cannot listen on {where}: {err.strerror or err}"


def _first_leaf(exc: BaseException) -> BaseException:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def learning_banner(server: BaseServer) -> str:
    """What ``make run`` (``pyweb serve DIR --dev``) tells a student, after the status line."""
    directory = (server.config.site_dir or ".").rstrip("/")
    other = server.port + 1 if 0 < server.port < 65535 else 8001
    # under `make run` (the Makefile sets PYWEB_MAKE_RUN) the port is make's variable
    port_hint = f"make run PORT={other}" if os.environ.get("PYWEB_MAKE_RUN") else f"--port {other}"
    return (
        f"\n  Open {server.url} in your browser.\n"
        f"  Edit {directory}/NAME.py (or make a new one) and reload the browser: no restart "
        f"needed.\n"
        f"  Errors show on the page with the line that failed (development mode).\n"
        f"  Ctrl-C stops the server. Another port: {port_hint}\n"
    )


def _say(text: str) -> None:
    print(f"pyweb: {text}", file=sys.stderr, flush=True)


def reload(
    server: BaseServer, argv: Sequence[str] | None, started: dict[str, object] | None = None
) -> bool:
    """SIGHUP (Marlow §6): read the configuration file and the pages again. New connections
    get the new settings and pages, requests in progress finish with the old ones. A bad
    file or a broken site is refused, and the old settings stay."""
    try:
        args = parse_command_line(argv)
        config = config_from_args(args)
        site = build_site(args, config)
    except (ConfigFileError, ValueError) as exc:
        _say(f"SIGHUP: reload refused, keeping the old settings: {exc}")
        return False
    except SiteError as err:
        _say(f"SIGHUP: reload refused, keeping the old pages: {len(err.problems)} error(s)")
        for problem in err.problems:
            print(problem, file=sys.stderr)
        return False
    ignored = server.reconfigure(config, site)
    interrupt.set_limit(config.page_timeout)
    # The database and the cache are set up once per process (their pools and connections
    # outlive any one request): like the listening socket, they need a restart.
    started = started or {}
    ignored += [name for name in started if started[name] != getattr(args, name)]
    for name in ignored:
        _say(f"SIGHUP: {name} changed; it needs a restart and keeps its old value")
    _say(f"SIGHUP: reloaded {args.config_path or 'the command line'} and the pages")
    return True


async def serve_until_signalled(
    server: Server,
    argv: Sequence[str] | None = None,
    started: dict[str, object] | None = None,
    background: Background | None = None,
) -> int:
    """Run ``server``; the first SIGINT/SIGTERM shuts it down gracefully (exit status 0, or
    :data:`~pyweb.server.supervised.RECYCLE_EXIT` after ``--max-requests``), a second one
    cancels everything at once (exit status 1); SIGHUP reloads (:func:`reload`); SIGUSR1
    reopens the log files (the logrotate convention)."""
    forced = False
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
    with trio.open_signal_receiver(*watched) as signals:
        interrupt.guard_stop_signals()  # (in front of trio's: a page may hold the loop)
        async with trio.open_nursery() as nursery:

            async def serve(
                task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED,
            ) -> None:
                await server.serve(task_status=task_status)
                if background is not None:  # conn.after work: its grace, then cancelled
                    await background.drain()
                nursery.cancel_scope.cancel()  # served and shut down: stop watching signals

            await nursery.start(serve)
            if background is not None:  # the scheduled jobs (pyweb/background.py)
                nursery.start_soon(background.run)
            if server.announce(server.config.site_dir) and server.config.dev:
                print(learning_banner(server), flush=True)  # (not a worker's)
            async for signum in signals:
                if server.answer_signal(signum, lambda: reload(server, argv, started)):
                    forced = True  # a second stop signal: at once
                    nursery.cancel_scope.cancel()
    if forced:
        return 1
    return RECYCLE_EXIT if server.recycled else 0


def worker_path(pythonpath: str | None) -> str:
    """PYTHONPATH for a worker: the folder that holds the pyweb package this process
    imported (a clone, for an editable install), first, then what was there before. An
    installed pyweb's folder is site-packages, which every worker finds anyway: putting it
    first would let a package there shadow the standard library."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if here in {*site.getsitepackages(), site.getusersitepackages()}:
        return pythonpath or ""
    rest = [p for p in (pythonpath or "").split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *rest])


def _stop_with_parent() -> None:
    """Under ``make run``: if make goes (killed, or its terminal closed), this server gets
    SIGTERM, so no orphan keeps the port (Linux's ``PR_SET_PDEATHSIG``; elsewhere,
    nothing)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1  # <linux/prctl.h>
    parent = os.getppid()
    ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() != parent:  # make had already gone before the call
        os.kill(os.getpid(), signal.SIGTERM)


def supervise(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``--workers N``: one listening socket, N worker processes (pyweb.server.workers)."""
    try:
        listener = socket.create_server((args.host, args.port), backlog=128)
    except OSError as exc:
        print(f"pyweb: error: {startup_error(exc, args.host, args.port)}", file=sys.stderr)
        return 2
    host, port = listener.getsockname()[:2]

    def command(index: int, fd: int) -> list[str]:
        # Later flags win in argparse: the worker serves the shared socket, alone. `-P`:
        # `python -m` would put the current directory first on sys.path, and a folder
        # named `pyweb` there (the clone's own root, seen from its parent) would shadow
        # the installed package; the worker imports the pyweb this process runs instead
        # (worker_path puts its folder on PYTHONPATH).
        return [sys.executable, "-P", "-m", "pyweb", *argv, "--workers", "1", "--listen-fd", str(fd)]

    os.environ["PYTHONPATH"] = worker_path(os.environ.get("PYTHONPATH"))
    shown = f"[{host}]" if ":" in host else host
    banner = (
        f"pyweb serving {args.dir} on http://{shown}:{port}/ with {args.workers} workers "
        f"(supervisor pid {os.getpid()}; SIGHUP reloads, SIGTERM drains)"
    )
    # The supervisor prints the banner once its signal handlers are installed.
    supervisor = Supervisor(listener, args.workers, command, banner=banner)
    try:
        return supervisor.run()
    finally:
        listener.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_command_line(argv)
    except ConfigFileError as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "new":
        return run_new(args.name)
    if args.command == "grade":
        from pyweb.notebook import grade

        return grade.run(args)
    if not os.path.isdir(args.dir):
        print(f"pyweb: error: site directory {args.dir!r} does not exist", file=sys.stderr)
        return 2
    if args.command == "check":
        return run_check(args.dir, args.config)
    if args.command == "db":
        return run_db_init(args.dir, args.db)
    if args.command == "jobs":
        from pyweb.jobs.listing import run_jobs

        return run_jobs(args.dir, args.config, args.cache)
    if args.command == "loadtest":
        from pyweb.testing import loadtest

        return loadtest.main(args)
    if args.command == "serve":
        if args.max_requests is not None and args.workers == 1 and args.listen_fd is None:
            print("pyweb: error: --max-requests needs --workers", file=sys.stderr)
            return 2
        try:
            config = config_from_args(args)
        except ValueError as exc:
            print(f"pyweb: error: {exc}", file=sys.stderr)
            return 2
        shared = workers_need_shared_cache(args.dir, args.workers, args.cache)
        if shared and not args.per_process_cache and args.listen_fd is None:
            print(f"pyweb: error: {shared}", file=sys.stderr)
            return 2
        if args.cache is not None:
            from pyweb import cache

            try:
                cache.configure(args.cache)
            except ValueError as exc:
                print(f"pyweb: error: --cache: {exc}", file=sys.stderr)
                return 2
            os.environ["PYWEB_CACHE"] = args.cache  # worker processes configure from it
        try:  # pyweb.mail's server: the setting, else PYWEB_MAIL_URL, else the console
            from pyweb import mail

            mail.configure(args.mail_url or os.environ.get("PYWEB_MAIL_URL") or "console")
        except (ValueError, ImportError) as exc:  # ImportError: pyweb[mail] not installed
            print(f"pyweb: error: --mail-url: {exc}", file=sys.stderr)
            return 2
        if args.db is not None:  # else pages get the site's default on first use
            from pyweb import db

            try:
                db.configure(args.db, site=args.dir)
            except (ValueError, ImportError) as exc:
                print(f"pyweb: error: --db: {exc}", file=sys.stderr)
                return 2
        try:
            site = build_site(args, config)
        except (signing.MissingSecretKey, ValueError) as exc:
            print(f"pyweb: error: {exc}", file=sys.stderr)
            return 2
        except SiteError as err:
            for problem in err.problems:
                print(problem, file=sys.stderr)
            print(
                f"pyweb: {len(err.problems)} error(s) in {args.dir}; not serving it. Fix them "
                "(pyweb check lists them) or use --dev to serve the pages that work.",
                file=sys.stderr,
            )
            return 2
        for problem in site.problems:  # only in --dev: served anyway, shown on the page
            print(f"pyweb: warning: {problem}", file=sys.stderr)
        heap.settle()  # the garbage collector and what starting made (pyweb/heap.py)
        regions = site.regions
        if config.access_log_format == "alloc" and args.listen_fd is None:
            if regions is None or not regions.profile_alloc:
                # Say once why every line will end with alloc=- (not in each worker).
                why = (regions and regions.alloc_message) or "--profile-alloc was not given"
                _say(f"warning: the access log's alloc field will be '-': {why}")
        if args.workers > 1 and args.listen_fd is None:
            return supervise(args, argv)  # (the workers run on the loop the flags say)
        try:
            background = Background(args.dir, config, args.config_path)
        except ValueError as exc:  # a bad [[schedule]] entry, two jobs of one name
            print(f"pyweb: error: {exc}", file=sys.stderr)
            return 2
        if config.metrics:  # the caches and database pools on /_pyweb/metrics too
            from pyweb import sitemetrics

            sitemetrics.install()
        started = {"db": args.db, "cache": args.cache}  # what a reload cannot change
        interrupt.arm(config.page_timeout)  # this process runs the pages, in its main thread
        if os.environ.get("PYWEB_MAKE_RUN"):
            _stop_with_parent()
        if config.loop == "asyncio":
            from pyweb.server.asyncio import serve_asyncio

            try:
                return serve_asyncio(
                    config,
                    site,
                    args.dir,
                    reload=lambda server: reload(server, argv, started),
                    banner=learning_banner if config.dev else None,
                    guard_signals=interrupt.guard_stop_signals,
                    background=background,
                )
            except OSError as exc:  # the port is in use, the host is not ours: as on trio
                print(f"pyweb: error: {startup_error(exc, args.host, args.port)}", file=sys.stderr)
                return 2
        server = Server(config, site)
        try:
            return trio.run(serve_until_signalled, server, argv, started, background)
        except BaseException as exc:  # typically: the port is in use, or the host is not ours
            message = startup_error(exc, args.host, args.port)
            if message is None:
                raise _first_leaf(exc) from None  # a bug: its own traceback, not a group's
            print(f"pyweb: error: {message}", file=sys.stderr)
            return 2
    print(f"pyweb: error: unknown command {args.command!r}", file=sys.stderr)  # pragma: no cover
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
