"""Run the locust scenarios (benchmarks/locustfile.py) headless against pyweb.

Starts ``pyweb serve pages`` (pinned to CPU 0, access log off, the guest book in a
temporary SQLite file so the example site's own database is left alone), runs locust on CPU 1 for a
fixed time with a fixed number of users, prints locust's summary table and stops the
server. locust lives in its own venv, ``benchmarks/.venv-locust`` (it brings gevent, which
has no business in the project's venv), created on first use.

Usage: .venv/bin/python benchmarks/load.py [--users 20] [--time 20s] [--host URL]
       (--host: load an already running server instead of starting one)
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - free_port, pinned, RunningServer's way of waiting

HERE = Path(__file__).resolve().parent
VENV = HERE / ".venv-locust"
LOCUST = "locust==2.47.0"


def ensure_locust() -> Path:
    python = VENV / "bin" / "python"
    stamp = VENV / ".installed"
    if not (python.exists() and stamp.exists() and stamp.read_text() == LOCUST):
        print(f"installing {LOCUST} into {VENV.relative_to(peers.ROOT)} ...", flush=True)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", LOCUST],
            check=True,
        )
        stamp.write_text(LOCUST)
    return VENV / "bin" / "locust"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--time", default="20s", help="locust --run-time (default 20s)")
    p.add_argument("--host", default=None, help="an already running server to load")
    args = p.parse_args(argv)
    locust = ensure_locust()
    server = None
    host = args.host
    with tempfile.TemporaryDirectory(prefix="pyweb-load-") as tmp:
        if host is None:
            server = peers.RunningServer(
                "pyweb",
                "0",
                tmp,
                Path(tmp) / "server.log",
                command=[
                    sys.executable,
                    "-m",
                    "pyweb",
                    "serve",
                    str(peers.ROOT / "pages"),
                    "--host",
                    peers.HOST,
                    "--port",
                    "{port}",
                    "--access-log",
                    "none",
                    "--db",
                    f"sqlite:///{tmp}/load.sqlite3",
                ],  # fmt: skip
                cwd=peers.ROOT,
            )
            host = f"http://{peers.HOST}:{server.port}"
            server.wait_ready()
        try:
            done = subprocess.run(
                peers.pinned(
                    "1",
                    [
                        str(locust),
                        "-f",
                        str(HERE / "locustfile.py"),
                        "--headless",
                        "-H",
                        host,
                        "-u",
                        str(args.users),
                        "-r",
                        str(args.users),
                        "-t",
                        args.time,
                        "--only-summary",
                        "--exit-code-on-error",
                        "1",
                    ],
                ),  # fmt: skip
            )
        finally:
            if server is not None:
                server.stop()
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
