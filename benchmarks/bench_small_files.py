"""Small static files: copied behind the head, or sent with sendfile?

Hop (§3.3.1) serves files with ``sendfile``: no copy through the server. For a small file
that is not the cheapest way on Linux: the head goes out with one system call and the
file with another (on trio the head is held back with ``MSG_MORE`` so both leave in one
TCP segment; an asyncio transport sends it at once, so there they make two segments),
while reading the file (one ``pread``) and writing head and bytes together costs the
same number of calls and one small copy. ``pyweb.server.asyncio.replies.SMALL_FILE`` is the
size up to which the asyncio server copies (the trio server always uses sendfile); this
measures both ways for files of several sizes, on both loops, so the choice rests on
numbers.

Each server is ``pyweb serve DIR`` (one process pinned to CPU 1, wrk ``-t1 -c32`` on
CPU 0) with a small-file limit set for the whole run: ``copy`` copies every file
measured, ``sendfile`` none. Rounds are interleaved; the table gives the median req/s of each and
the median of the same-round ratios copy / sendfile. Measured, never asserted.

Run:  .venv/bin/python benchmarks/bench_small_files.py [--rounds 3] [--duration 2]
          [--sizes 1024,4096,16384,65536] [--loops trio,asyncio]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402 - wrk, pinning, servers in their own process group

WAYS = {"copy": 1 << 30, "sendfile": 0}  # the small-file limit each way runs with
SERVER = HERE / "apps" / "small_files_server.py"  # pyweb serve, with the limit set


def make_files(folder: Path, sizes: list[int]) -> None:
    """One text file per size (printable bytes: nothing is compressed on the way)."""
    line = bytes(range(33, 127)) + b"\n"
    for size in sizes:
        (folder / f"f{size}.txt").write_bytes((line * (size // len(line) + 1))[:size])


def measure(args: argparse.Namespace, folder: Path, logs: Path) -> dict:
    """(loop, way, size) -> req/s per round."""
    results: dict[tuple[str, str, int], list[float]] = {}
    for rnd in range(args.rounds):
        order = list(WAYS) if rnd % 2 == 0 else list(reversed(WAYS))
        for loop in args.loops:
            for way in order:
                command = [sys.executable, str(SERVER), str(WAYS[way]), "serve", str(folder),
                           "--host", peers.HOST, "--port", "{port}", "--loop", loop,
                           "--access-log", "none"]  # fmt: skip
                server = peers.RunningServer(
                    f"{loop}-{way}", args.server_cpu, str(folder), logs / f"{loop}-{way}-{rnd}.log",
                    command=command, cwd=peers.ROOT,
                )  # fmt: skip
                try:
                    server.wait_ready()
                    for size in args.sizes:
                        sc = peers.Scenario(f"f{size}", "", f"/f{size}.txt", size)
                        peers.run_wrk(args.wrk_cpu, server.port, sc, 1)  # warm-up
                        numbers, output = peers.run_wrk(
                            args.wrk_cpu, server.port, sc, args.duration
                        )
                        if "rps" not in numbers or numbers["non2xx"]:
                            raise RuntimeError(f"{loop} {way} f{size}: {output[-400:]}")
                        results.setdefault((loop, way, size), []).append(float(numbers["rps"]))
                        print(f"round {rnd + 1} {loop:8} {way:8} {size:>7} B  "
                              f"{numbers['rps']:>10,.0f} req/s", flush=True)  # fmt: skip
                finally:
                    server.stop()
    return results


def table(args: argparse.Namespace, results: dict) -> str:
    lines = [
        "| loop | file | copy, req/s | sendfile, req/s | copy / sendfile (same round) |",
        "|---|---:|---:|---:|---:|",
    ]
    for loop in args.loops:
        for size in args.sizes:
            copy, send = results[(loop, "copy", size)], results[(loop, "sendfile", size)]
            ratio = statistics.median(c / s for c, s in zip(copy, send, strict=True))
            lines.append(
                f"| {loop} | {size:,} B | {statistics.median(copy):,.0f} | "
                f"{statistics.median(send):,.0f} | {ratio:.2f} |"
            )
    return "\n".join(lines)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=2, help="seconds of wrk per cell")
    parser.add_argument("--sizes", default="1024,4096,16384,65536",
                        help="file sizes in bytes, comma-separated")  # fmt: skip
    parser.add_argument("--loops", default="trio,asyncio")
    peers.add_core_arguments(parser)
    args = parser.parse_args()
    args.sizes = [int(s) for s in args.sizes.split(",")]
    args.loops = args.loops.split(",")
    peers.unpinned_on_one_core(args)
    return args


def main() -> int:
    args = parse_args()
    peers.ensure_wrk()
    with tempfile.TemporaryDirectory(prefix="pyweb-small-files-") as tmp:
        folder, logs = Path(tmp) / "site", Path(tmp) / "logs"
        folder.mkdir()
        logs.mkdir()
        make_files(folder, args.sizes)
        try:
            results = measure(args, folder, logs)
        except (peers.ServerFailed, RuntimeError, subprocess.SubprocessError) as exc:
            print(f"failed: {exc}", file=sys.stderr)
            return 1
    print()
    print(table(args, results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
