"""The supervisor (pyweb.server.workers) with tiny real worker processes on a real socket.

The workers here are a few lines of Python that answer each connection with their pid, so
these tests are about supervision alone: the shared socket, restart with back-off,
recycling, draining. ``tests/server/test_serve_workers.py`` runs real pyweb workers.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

import pytest
import trio

from pyweb.server.supervised import RECYCLE_EXIT, worker_table
from pyweb.server.workers import (
    FIRST_DELAY,
    START_FAILED_EXIT,
    START_FAILURES,
    Supervisor,
)

# A worker: accept on the inherited socket, answer with our pid; after `limit` answers exit
# with RECYCLE_EXIT; on SIGTERM finish the current answer and exit 0.
WORKER = f"""
import os, signal, socket, sys
sock = socket.socket(fileno=int(sys.argv[1]))
limit = int(sys.argv[2])
os.write(int(os.environ["PYWEB_READY_FD"]), b"1")  # listening: tell the supervisor
stop = False
def on_term(*_):
    global stop
    stop = True
    sock.close()
signal.signal(signal.SIGTERM, on_term)
served = 0
while not stop:
    try:
        conn, _ = sock.accept()
    except OSError:
        break
    body = str(os.getpid()).encode()
    conn.recv(65536)
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Length: %d\\r\\nConnection: close\\r\\n\\r\\n%s" % (len(body), body))
    conn.close()
    served += 1
    if limit and served >= limit:
        sys.exit({RECYCLE_EXIT})
"""

SERVERS_ELSEWHERE = "the servers are worker processes (one framer: C if built)"


def listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


async def ask(port: int) -> int:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    async with stream:
        await stream.send_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := await stream.receive_some():
            data += chunk
    return int(data.split(b"\r\n\r\n", 1)[1])


def make(sock: socket.socket, count: int, limit: int = 0, said: list[str] | None = None):
    return Supervisor(
        sock,
        count,
        lambda index, fd: [sys.executable, "-c", WORKER, str(fd), str(limit)],
        say=(said.append if said is not None else lambda _: None),
    )


@pytest.mark.timeout(30)
def test_workers_share_the_port_and_a_dead_one_is_replaced():
    sock = listener()
    port = sock.getsockname()[1]
    said: list[str] = []

    async def main():
        supervisor = make(sock, 2, said=said)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            await supervisor.wait_for_starts(2)
            pids = {slot.pid for slot in supervisor.slots}
            assert {row["pid"] for row in worker_table(supervisor.table_path)} == pids
            answered = {await ask(port) for _ in range(20)}
            assert answered <= pids
            victim = supervisor.slots[0]
            os.kill(victim.pid, signal.SIGKILL)
            await supervisor.wait_for_starts(3)
            assert victim.exits == [-signal.SIGKILL]
            assert victim.pid not in pids
            assert await ask(port) in {slot.pid for slot in supervisor.slots}
            supervisor.stop()
        return supervisor

    supervisor = trio.run(main)
    # Drained by SIGTERM, not killed (a worker still starting up dies of the SIGTERM itself).
    assert {slot.process.returncode for slot in supervisor.slots} <= {0, -signal.SIGTERM}
    assert not os.path.exists(supervisor.table_path)
    assert any("exited with signal 9; restarting in 0.1 s" in line for line in said)


@pytest.mark.timeout(30)
def test_a_worker_that_keeps_dying_backs_off():
    sock = listener()
    said: list[str] = []

    async def main():
        # It says it is ready, then dies: a crash after start, restarted with back-off.
        dies = "import os; os.write(int(os.environ['PYWEB_READY_FD']), b'1'); raise SystemExit(3)"
        supervisor = Supervisor(sock, 1, lambda i, fd: [sys.executable, "-c", dies], say=said.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            await supervisor.wait_for_starts(4)
            supervisor.stop()
        return supervisor

    supervisor = trio.run(main)
    delays = [line.rsplit("restarting in ", 1)[1] for line in said if "restarting" in line]
    assert delays[:3] == [f"{FIRST_DELAY:g} s", f"{FIRST_DELAY * 2:g} s", f"{FIRST_DELAY * 4:g} s"]
    assert supervisor.slots[0].exits[:3] == [3, 3, 3]


@pytest.mark.timeout(30)
def test_a_worker_that_never_becomes_ready_stops_the_supervisor_with_its_error():
    # Before: a worker that died at start-up (a missing module) was restarted forever while
    # the supervisor had printed "serving"; the port never answered and nothing said why.
    sock = listener()
    said: list[str] = []
    broken = "import sys; print('ImportError: no module named nowhere', file=sys.stderr); sys.exit(2)"

    async def main():
        supervisor = Supervisor(sock, 2, lambda i, fd: [sys.executable, "-c", broken], say=said.append)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
        return supervisor

    supervisor = trio.run(main)
    assert supervisor.failed
    gave_up = [line for line in said if "cannot start" in line]
    assert gave_up, said
    assert f"{START_FAILURES} times in a row" in gave_up[0]
    assert "ImportError: no module named nowhere" in gave_up[0]
    assert all(len(slot.exits) <= START_FAILURES for slot in supervisor.slots)


@pytest.mark.timeout(30)
def test_a_supervisor_that_gave_up_exits_non_zero():
    sock = listener()
    statuses: list[int] = []

    async def main():
        supervisor = Supervisor(
            sock, 1, lambda i, fd: [sys.executable, "-c", "raise SystemExit(2)"],
            say=lambda _: None, start_failures=2,
        )
        statuses.append(await supervisor.run())

    trio.run(main)
    assert statuses == [START_FAILED_EXIT]


@pytest.mark.timeout(30)
def test_max_requests_recycles_without_losing_a_request():
    sock = listener()
    port = sock.getsockname()[1]

    async def main():
        supervisor = make(sock, 2, limit=3)
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            answers = [await ask(port) for _ in range(30)]  # every one answered
            supervisor.stop()
        return supervisor, answers

    supervisor, answers = trio.run(main)
    assert len(answers) == 30
    assert len(set(answers)) >= 10  # 30 requests, 3 per worker life
    assert RECYCLE_EXIT in supervisor.slots[0].exits + supervisor.slots[1].exits


@pytest.mark.timeout(30)
def test_a_stop_while_a_worker_is_being_replaced_stops_the_replacement_too():
    """The race behind a rare hang of the test above: a worker recycles, and stop() comes
    while its replacement is being started. The replacement missed the SIGTERM the others
    got; it must be stopped all the same, and the drain must wait for it, not hang on it.
    Here stop() is called from inside the start (the command callback runs just before the
    process is spawned), which makes the race happen every time."""
    sock = listener()
    port = sock.getsockname()[1]
    supervisor: Supervisor
    starts: list[int] = []

    def command(index: int, fd: int) -> list[str]:
        starts.append(index)
        if len(starts) == 3:  # the first replacement (both first workers are starts 1, 2)
            supervisor.stop()
        return [sys.executable, "-c", WORKER, str(fd), "1"]

    async def main() -> list[int | None]:
        nonlocal supervisor
        supervisor = Supervisor(sock, 2, command, say=lambda _: None)
        with trio.fail_after(20):  # a failure, not a timeout, if the drain waits forever
            async with trio.open_nursery() as nursery:
                await nursery.start(supervisor.run)
                await ask(port)  # served by one worker, which then recycles
        # What each slot's last process exited with (read here: trio reaps it).
        return [slot.process.returncode for slot in supervisor.slots]  # type: ignore[union-attr]

    statuses = trio.run(main)
    assert len(starts) == 3
    # Every worker has exited, the replacement too, and by the SIGTERM of the drain (before
    # or after its handler was installed), not by the SIGKILL that ends a forced stop.
    assert all(status in (0, -signal.SIGTERM) for status in statuses), statuses


def test_worker_table_outside_a_supervisor(monkeypatch):
    monkeypatch.delenv("PYWEB_WORKERS_FILE", raising=False)
    assert worker_table() == []


def test_zero_workers_is_refused():
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        Supervisor(listener(), 0, lambda i, fd: [])
