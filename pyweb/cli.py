"""The command line: ``pyweb serve [DIR]`` (also ``python -m pyweb serve [DIR]``).

It turns arguments into a :class:`~pyweb.server.ServerConfig` (Marlow §6 reads the same
knobs from a configuration file; Hop §2.4.1 from command-line switches), starts the server,
prints where it listens, and turns SIGINT/SIGTERM into a graceful shutdown: stop
accepting, finish the requests in flight, close idle connections, exit 0. A second signal
during the shutdown stops at once (exit 1). Reference: docs/cli.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
from collections.abc import Sequence

import trio

import pyweb_regions
from pyweb.app.site import Site, SiteError, check_site
from pyweb.protocol.parser import Limits
from pyweb.server import Server, ServerConfig
from pyweb.server.config import SCHEDULERS
from pyweb.server.configfile import ConfigFileError, find_config_file, read_config_file
from pyweb.server.logging import ACCESS_FORMATS
from pyweb.server.workers import RECYCLE_EXIT, Supervisor

__all__ = ["main", "build_parser"]


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text}")
    return value


def _log_target(text: str) -> str | None:
    return None if text == "none" else text


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pyweb", description="pyweb: web programming for learning, teaching and prototyping."
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    serve = commands.add_parser(
        "serve",
        help="serve a site directory over HTTP/1.1",
        description="Serve DIR over HTTP/1.1: its services, page scripts, templates and "
        "static files. Without --dev the site is checked first (as `pyweb check` does) and "
        "the server refuses to start on errors.",
    )
    d = ServerConfig()
    serve.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
    serve.add_argument("--host", default=d.host, help=f"address to listen on (default: {d.host})")
    serve.add_argument(
        "--port", type=_port, default=d.port, help=f"port, 0 for any free one (default: {d.port})"
    )
    serve.add_argument(
        "--scheduler",
        choices=SCHEDULERS,
        default=d.scheduler,
        help="how connections are scheduled, Hop §2.4 (default: one-to-one)",
    )
    serve.add_argument(
        "--pool-size",
        type=_positive_int,
        default=d.pool_size,
        help=f"tasks of the pool scheduler (default: {d.pool_size})",
    )
    serve.add_argument(
        "--dev",
        action="store_true",
        help="development mode: tracebacks and offending input on error pages, changed "
        "files reloaded on the next request, serve even if some pages have errors",
    )
    serve.add_argument(
        "--access-log",
        type=_log_target,
        default="-",
        metavar="PATH|-|none",
        help="access log file, - for stderr, none for nowhere (default: -)",
    )
    serve.add_argument(
        "--error-log",
        type=_log_target,
        default="-",
        metavar="PATH|-|none",
        help="error log file, - for stderr, none for nowhere (default: -)",
    )
    serve.add_argument(
        "--max-body",
        type=_positive_int,
        default=d.limits.max_body,
        metavar="BYTES",
        help=f"largest request body accepted, else 413 (default: {d.limits.max_body})",
    )
    serve.add_argument(
        "--header-timeout",
        type=_seconds,
        default=d.header_timeout,
        metavar="S",
        help=f"seconds for a request head to arrive (default: {d.header_timeout:g})",
    )
    serve.add_argument(
        "--keepalive-timeout",
        type=_seconds,
        default=d.keepalive_timeout,
        metavar="S",
        help=f"idle seconds between requests (default: {d.keepalive_timeout:g})",
    )
    serve.add_argument(
        "--body-timeout",
        type=_seconds,
        default=d.body_timeout,
        metavar="S",
        help=f"seconds to wait for more of a body (default: {d.body_timeout:g})",
    )
    serve.add_argument(
        "--send-timeout",
        type=_seconds,
        default=d.send_timeout,
        metavar="S",
        help=f"seconds to wait for a client to read (default: {d.send_timeout:g})",
    )
    serve.add_argument(
        "--page-timeout",
        type=_seconds,
        default=d.page_timeout,
        metavar="S",
        help=f"seconds a page or service may run before it is stopped with a 503 "
        f"(default: {d.page_timeout:g}; long polls and streams opt out)",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive_int,
        default=d.max_connections,
        metavar="N",
        help=f"connections served at once (default: {d.max_connections})",
    )
    serve.add_argument(
        "--access-log-format",
        choices=ACCESS_FORMATS,
        default=d.access_log_format,
        help="combined (Apache's Combined Log Format), timed (the same line, then "
        "rt=SECONDS worker=N) or alloc (the timed line, then alloc=BYTES/CALLS: what the "
        "page allocated, with --profile-alloc) (default: combined)",
    )
    serve.add_argument(
        "--config",
        metavar="PATH",
        help="settings file (default: DIR/pyweb.toml if it exists); its keys are these "
        "flags with underscores, flags given here override it; SIGHUP re-reads it",
    )
    serve.add_argument(
        "--workers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="serve with N processes sharing the port, under a supervisor that restarts a "
        "worker that dies (default: 1, no supervisor)",
    )
    serve.add_argument(
        "--max-requests",
        type=_positive_int,
        default=None,
        metavar="N",
        help="with --workers: a worker drains and is replaced after N requests",
    )
    serve.add_argument(
        "--status",
        action="store_true",
        help="answer /_pyweb/status (JSON: connections, requests, per-page latency, workers) "
        "to loopback clients",
    )
    serve.add_argument(
        "--status-token",
        default=None,
        metavar="SECRET",
        help="also answer /_pyweb/status to clients sending 'Authorization: Bearer SECRET'",
    )
    serve.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="the database of pyweb.db: sqlite:///PATH, postgresql://USER@HOST/DB or "
        "mysql://USER@HOST/DB (default: sqlite:///DIR/data/pyweb.sqlite3, created on first "
        "use); the site's schema.sql runs on first use",
    )
    serve.add_argument(
        "--cache",
        default=None,
        metavar="URL",
        help="where pyweb.cache keeps entries: memory (default, per process) or "
        "redis://HOST:PORT/DB (shared by every worker; also the PYWEB_CACHE variable)",
    )
    # Internal: how the supervisor hands its listening socket to a worker.
    serve.add_argument("--listen-fd", type=int, default=None, help=argparse.SUPPRESS)
    regions = serve.add_argument_group(
        "regions", "module snapshots and allocation accounting (docs/regions.md)"
    )
    regions.add_argument(
        "--strict-regions",
        action="store_true",
        help="a page that changes a library module's global fails with 500 (default: a "
        "warning in the error log, and a banner on the page in --dev)",
    )
    regions.add_argument(
        "--no-script-cache",
        action="store_true",
        help="compile the page script again on every request (SMLserver Table 1, column 5)",
    )
    regions.add_argument(
        "--exec-library",
        action="store_true",
        help="re-run the library's initialisation before every request instead of "
        "restoring its snapshot (SMLserver Table 1, column 6)",
    )
    regions.add_argument(
        "--profile-alloc",
        action="store_true",
        help="count the bytes each page allocates (C extension only); shown at "
        "/_pyweb/stats and, with --access-log-format alloc, in the access log",
    )
    check = commands.add_parser(
        "check",
        help="compile every page, library module and template of a site and list the errors",
        description="Load DIR as `pyweb serve` would (scripts compiled, service modules "
        "imported, templates parsed) and report every error with its file and line "
        "(SMLserver's compile step). Exit status 1 when there are errors.",
    )
    check.add_argument(
        "dir", nargs="?", default=".", metavar="DIR", help="site directory (default: .)"
    )
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
    from pyweb.notebook import grade  # the teacher's command: notebooks, not a site

    grade.add_parser(commands)
    return parser


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


def run_check(directory: str) -> int:
    """``pyweb check DIR``: print every problem, then a one-line summary."""
    site, problems = check_site(directory)
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
    base = Limits()
    limits = Limits(
        max_request_line=base.max_request_line,
        max_header_bytes=base.max_header_bytes,
        max_headers=base.max_headers,
        max_body=args.max_body,
        max_chunk_line=base.max_chunk_line,
    )
    return ServerConfig(
        host=args.host,
        port=args.port,
        site_dir=args.dir,
        scheduler=args.scheduler,
        pool_size=args.pool_size,
        dev=args.dev,
        limits=limits,
        header_timeout=args.header_timeout,
        keepalive_timeout=args.keepalive_timeout,
        body_timeout=args.body_timeout,
        send_timeout=args.send_timeout,
        page_timeout=args.page_timeout,
        max_connections=args.max_connections,
        access_log=args.access_log,
        error_log=args.error_log,
        access_log_format=args.access_log_format,
        status=args.status or args.status_token is not None,
        status_token=args.status_token,
        listen_fd=args.listen_fd,
        max_requests=args.max_requests if args.listen_fd is not None else None,
    )


def _subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    for action in parser._actions:  # argparse keeps its subparsers in a private action
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[name]
    raise LookupError(name)  # pragma: no cover


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
            serve = _subcommand(parser, "serve")
            serve.set_defaults(**read_config_file(path, serve))
            args = parser.parse_args(argv)
            args.config_path = path
    return args


def build_site(args: argparse.Namespace, config: ServerConfig) -> Site:
    """The site ``pyweb serve`` serves (raises SiteError for a broken one outside --dev)."""
    return Site(
        args.dir,
        dev=config.dev,
        strict_regions=args.strict_regions,
        no_script_cache=args.no_script_cache,
        exec_library=args.exec_library,
        profile_alloc=args.profile_alloc,
        page_timeout=config.page_timeout,
    )


def _say(text: str) -> None:
    print(f"pyweb: {text}", file=sys.stderr, flush=True)


def reload(
    server: Server, argv: Sequence[str] | None, started: dict[str, object] | None = None
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
) -> int:
    """Run ``server``; the first SIGINT/SIGTERM shuts it down gracefully (exit status 0, or
    :data:`~pyweb.server.workers.RECYCLE_EXIT` after ``--max-requests``), a second one
    cancels everything at once (exit status 1); SIGHUP reloads (:func:`reload`); SIGUSR1
    reopens the log files (the logrotate convention)."""
    forced = False
    watched = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1)
    with trio.open_signal_receiver(*watched) as signals:
        async with trio.open_nursery() as nursery:

            async def serve(
                task_status: trio.TaskStatus[Server] = trio.TASK_STATUS_IGNORED,
            ) -> None:
                await server.serve(task_status=task_status)
                nursery.cancel_scope.cancel()  # served and shut down: stop watching signals

            await nursery.start(serve)
            config = server.config
            worker = os.environ.get("PYWEB_WORKER_ID")
            if config.listen_fd is not None and worker is not None:
                print(f"pyweb worker {worker} (pid {os.getpid()}) ready", flush=True)
            else:
                print(
                    f"pyweb serving {config.site_dir} on {server.url} "
                    f"(scheduler {config.scheduler}, dev mode {'on' if config.dev else 'off'}, "
                    f"regions {pyweb_regions.IMPLEMENTATION})",
                    flush=True,
                )
            async for signum in signals:
                if signum == signal.SIGHUP:
                    if not server.closing:
                        reload(server, argv, started)
                elif signum == signal.SIGUSR1:  # logrotate moved the files: open new ones
                    if server.log is not None:
                        server.log.reopen()
                elif not server.closing:
                    _say(f"{signal.Signals(signum).name}, shutting down")
                    server.shutdown()
                else:
                    _say("second signal, stopping now")
                    forced = True
                    nursery.cancel_scope.cancel()
    if forced:
        return 1
    return RECYCLE_EXIT if server.recycled else 0


def supervise(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """``--workers N``: one listening socket, N worker processes (pyweb.server.workers)."""
    try:
        listener = socket.create_server((args.host, args.port), backlog=128)
    except OSError as exc:
        print(f"pyweb: error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    host, port = listener.getsockname()[:2]

    def command(index: int, fd: int) -> list[str]:
        # Later flags win in argparse: the worker serves the shared socket, alone.
        return [sys.executable, "-m", "pyweb", *argv, "--workers", "1", "--listen-fd", str(fd)]

    supervisor = Supervisor(listener, args.workers, command)
    shown = f"[{host}]" if ":" in host else host
    print(
        f"pyweb serving {args.dir} on http://{shown}:{port}/ with {args.workers} workers "
        f"(supervisor pid {os.getpid()}; SIGHUP reloads, SIGTERM drains)",
        flush=True,
    )
    try:
        return trio.run(supervisor.run)
    finally:
        listener.close()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parse_command_line(argv)
    except ConfigFileError as exc:
        print(f"pyweb: error: {exc}", file=sys.stderr)
        return 2
    if args.command == "grade":
        from pyweb.notebook import grade

        return grade.run(args)
    if not os.path.isdir(args.dir):
        print(f"pyweb: error: site directory {args.dir!r} does not exist", file=sys.stderr)
        return 2
    if args.command == "check":
        return run_check(args.dir)
    if args.command == "db":
        return run_db_init(args.dir, args.db)
    if args.command == "serve":
        if args.max_requests is not None and args.workers == 1 and args.listen_fd is None:
            print("pyweb: error: --max-requests needs --workers", file=sys.stderr)
            return 2
        try:
            config = config_from_args(args)
        except ValueError as exc:
            print(f"pyweb: error: {exc}", file=sys.stderr)
            return 2
        if args.cache is not None:
            from pyweb import cache

            try:
                cache.configure(args.cache)
            except ValueError as exc:
                print(f"pyweb: error: --cache: {exc}", file=sys.stderr)
                return 2
            os.environ["PYWEB_CACHE"] = args.cache  # worker processes configure from it
        if args.db is not None:  # else pages get the site's default on first use
            from pyweb import db

            try:
                db.configure(args.db, site=args.dir)
            except (ValueError, ImportError) as exc:
                print(f"pyweb: error: --db: {exc}", file=sys.stderr)
                return 2
        try:
            site = build_site(args, config)
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
        regions = site.regions
        if config.access_log_format == "alloc" and args.listen_fd is None:
            if regions is None or not regions.profile_alloc:
                # Say once why every line will end with alloc=- (not in each worker).
                why = (regions and regions.alloc_message) or "--profile-alloc was not given"
                _say(f"warning: the access log's alloc field will be '-': {why}")
        if args.workers > 1 and args.listen_fd is None:
            return supervise(args, argv)
        server = Server(config, site)
        started = {"db": args.db, "cache": args.cache}  # what a reload cannot change
        status = 1
        try:
            status = trio.run(serve_until_signalled, server, argv, started)
        except* OSError as group:  # typically: the port is in use, or the host is not ours
            exc = group.exceptions[0]
            print(f"pyweb: error: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return status
    print(f"pyweb: error: unknown command {args.command!r}", file=sys.stderr)  # pragma: no cover
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
