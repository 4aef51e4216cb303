"""How soon a page that holds the server is stopped, and how soon the server stops, on each
loop (pyweb.app.interrupt): real ``pyweb serve`` processes, a page with a CPU loop.

For each loop, ``--rounds`` times:

* **past the timeout**: the seconds from ``page_timeout`` (``--page-timeout``) to the 503
  of a page that never ends (the watchdog looks every 50 ms and confirms a hold before it
  acts);
* **next answer**: the seconds from that 503 to the answer of a request that arrived while
  the page held the server;
* **SIGINT to exit**: the seconds from Ctrl-C's signal, sent while the page holds the
  server (timeout 30 s: the signal stops it), to the process's exit.

Prints the median and the worst of each. These are not part of any request's cost: a page
pays nothing for the interrupt until it is interrupted (the ``except`` clause in
``Site.run_in_guards`` costs no instruction when nothing is raised; see
``bench_page_stages.py --callgrind``).

Usage: .venv/bin/python benchmarks/bench_interrupt.py [--rounds 5] [--timeout 1]
"""

from __future__ import annotations

import argparse
import http.client
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SPIN = "n = 0\nwhile n >= 0:\n    n += 1\n"
BANNER = re.compile(r"pyweb serving .+ on http://127\.0\.0\.1:(\d+)/")


def start(site: Path, loop: str, *flags: str) -> tuple[subprocess.Popen[str], int]:
    command = [sys.executable, "-m", "pyweb", "serve", str(site), "--port", "0",
               "--loop", loop, "--access-log", "none", *flags]  # fmt: skip
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    found = BANNER.match(proc.stdout.readline())  # type: ignore[union-attr]
    if found is None:
        proc.kill()
        raise SystemExit("pyweb serve did not start")
    return proc, int(found.group(1))


def get(port: int, path: str) -> tuple[int, float]:
    """The status and the time.monotonic() when the answer was read."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        response.read()
        return response.status, time.monotonic()
    finally:
        conn.close()


def one_timeout(site: Path, loop: str, timeout: float) -> tuple[float, float]:
    proc, port = start(site, loop, "--page-timeout", str(timeout))
    try:
        get(port, "/hello")  # the first page starts the watchdog
        waiting: list[tuple[int, float]] = []
        spin = threading.Thread(target=lambda: waiting.append(get(port, "/spin")))
        spin.start()
        while not (site / "spin.running").exists():
            time.sleep(0.001)
        began = time.monotonic()  # the page runs (to within a millisecond)
        status, answered = get(port, "/hello")  # waits while the page holds the server
        spin.join()
        ((stopped_status, stopped),) = waiting
        assert (stopped_status, status) == (503, 200), (stopped_status, status)
        return stopped - began - timeout, answered - stopped
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        (site / "spin.running").unlink(missing_ok=True)


def one_sigint(site: Path, loop: str) -> float:
    proc, port = start(site, loop)
    threading.Thread(target=get, args=(port, "/spin"), daemon=True).start()
    while not (site / "spin.running").exists():
        time.sleep(0.001)
    began = time.monotonic()
    proc.send_signal(signal.SIGINT)
    proc.wait(60)
    (site / "spin.running").unlink(missing_ok=True)
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=1.0, help="--page-timeout (s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        site = Path(directory)
        (site / "hello.py").write_text('conn.return_("hello")\n')
        (site / "spin.py").write_text(
            'from pathlib import Path\nPath(__file__).with_name("spin.running").touch()\n' + SPIN
        )
        print(f"{'loop':8} {'measure':18} {'median s':>9} {'worst s':>8}  ({args.rounds} rounds)")
        for loop in ("trio", "asyncio"):
            rows: dict[str, list[float]] = {"past the timeout": [], "next answer": [],
                                            "SIGINT to exit": []}  # fmt: skip
            for _ in range(args.rounds):
                late, next_answer = one_timeout(site, loop, args.timeout)
                rows["past the timeout"].append(late)
                rows["next answer"].append(next_answer)
                rows["SIGINT to exit"].append(one_sigint(site, loop))
            for name, values in rows.items():
                print(f"{loop:8} {name:18} {statistics.median(values):9.3f} {max(values):8.3f}")


if __name__ == "__main__":
    main()
