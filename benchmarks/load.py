"""Run the locust scenarios (benchmarks/locustfile.py) headless against the example site.

``pyweb loadtest pages --locustfile benchmarks/locustfile.py`` with the benchmark's
conditions: the server pinned to CPU 0, locust to CPU 1 (so they do not compete). locust is
the one ``pyweb loadtest`` installs on first use. Prints locust's summary table; the exit
status is 1 if any request failed.

Usage: .venv/bin/python benchmarks/load.py [--users 20] [--time 20s]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402 - pinned

from pyweb.testing import loadtest  # noqa: E402

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--users", type=int, default=20)
    p.add_argument("--time", default="20s", help="locust --run-time (default 20s)")
    args = p.parse_args(argv)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})  # the server runs in this process
    return loadtest.run(
        str(peers.ROOT / "pages"),
        users=args.users,
        time=args.time,
        locustfile=str(HERE / "locustfile.py"),
        wrap=lambda command: peers.pinned("1", command),
    )


if __name__ == "__main__":
    sys.exit(main())
