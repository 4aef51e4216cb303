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
import threading
import time
from collections.abc import Callable

import pytest

from pyweb.server.supervised import RECYCLE_EXIT, worker_table
from pyweb.server.workers import (
    FIRST_DELAY,
    PIPES_GRACE,
    START_FAILED_EXIT,
    START_FAILURES,
    WATCHED,
    Supervisor,
)
from tests.helpers import until

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


def with_last_words(on_term: str) -> str:
    """WORKER whose SIGTERM handler also runs ``on_term`` (lines indented for it), and
    which says it is ready only once that handler is in (a drain that starts the moment
    it is ready then runs the handler: it is not the default action that kills it)."""
    ready = next(line for line in WORKER.splitlines(True) if "PYWEB_READY_FD" in line)
    handler = "signal.signal(signal.SIGTERM, on_term)\n"
    worker = WORKER.replace(ready, "").replace(handler, handler + ready)
    return worker.replace("    sock.close()\n", "    sock.close()\n" + on_term)


SERVERS_ELSEWHERE = "the servers are worker processes (one framer: C if built)"


def listener() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    return sock


def ask(port: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as conn:
        conn.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        data = b""
        while chunk := conn.recv(65536):
            data += chunk
    return int(data.split(b"\r\n\r\n", 1)[1])


def make(sock: socket.socket, count: int, limit: int = 0, said: list[str] | None = None):
    return Supervisor(
        sock,
        count,
        lambda index, fd: [sys.executable, "-c", WORKER, str(fd), str(limit)],
        say=(said.append if said is not None else lambda _: None),
    )


def supervise(supervisor: Supervisor, drive: Callable[[], object], *, stop: bool = True,
              limit: float = 20.0) -> int:
    """Run ``supervisor`` here (its signal handlers need the main thread) while ``drive()``
    runs in a thread; then stop it (``stop``: the test may leave that to the supervisor).
    A drain still going ``limit`` seconds after ``drive`` is a failure, not a timeout: a
    SIGTERM (the second signal) kills the workers, and this raises."""
    failure: list[BaseException] = []
    finished = threading.Event()

    def driver() -> None:
        try:
            drive()
        except BaseException as exc:
            failure.append(exc)
            supervisor.stop()
        if stop:
            supervisor.stop()
        if not finished.wait(limit):
            failure.append(AssertionError(f"the drain did not end within {limit} s"))
            os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=driver)
    thread.start()
    try:
        status = supervisor.run()
    finally:
        finished.set()
        thread.join()
    if failure:
        raise failure[0]
    return status


@pytest.mark.timeout(30)
def test_workers_share_the_port_and_a_dead_one_is_replaced():
    sock = listener()
    port = sock.getsockname()[1]
    said: list[str] = []
    supervisor = make(sock, 2, said=said)

    def drive():
        supervisor.wait_for_starts(2)
        pids = {slot.pid for slot in supervisor.slots}
        assert {row["pid"] for row in worker_table(supervisor.table_path)} == pids
        answered = {ask(port) for _ in range(20)}
        assert answered <= pids
        victim = supervisor.slots[0]
        os.kill(victim.pid, signal.SIGKILL)
        supervisor.wait_for_starts(3)
        assert victim.exits == [-signal.SIGKILL]
        assert victim.pid not in pids
        assert ask(port) in {slot.pid for slot in supervisor.slots}

    supervise(supervisor, drive)
    # Drained by SIGTERM, not killed (a worker still starting up dies of the SIGTERM itself).
    assert {slot.process.returncode for slot in supervisor.slots} <= {0, -signal.SIGTERM}
    assert not os.path.exists(supervisor.table_path)
    assert any("exited with signal 9; restarting in 0.1 s" in line for line in said)


@pytest.mark.timeout(30)
def test_a_worker_that_keeps_dying_backs_off():
    sock = listener()
    said: list[str] = []
    # It says it is ready, then dies: a crash after start, restarted with back-off.
    dies = "import os; os.write(int(os.environ['PYWEB_READY_FD']), b'1'); raise SystemExit(3)"
    supervisor = Supervisor(sock, 1, lambda i, fd: [sys.executable, "-c", dies], say=said.append)
    supervise(supervisor, lambda: supervisor.wait_for_starts(4))
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
    supervisor = Supervisor(sock, 2, lambda i, fd: [sys.executable, "-c", broken], say=said.append)
    supervisor.run()
    assert supervisor.failed
    gave_up = [line for line in said if "cannot start" in line]
    assert gave_up, said
    assert f"{START_FAILURES} times in a row" in gave_up[0]
    assert "ImportError: no module named nowhere" in gave_up[0]
    assert all(len(slot.exits) <= START_FAILURES for slot in supervisor.slots)


@pytest.mark.timeout(30)
def test_a_supervisor_that_gave_up_exits_non_zero():
    sock = listener()
    supervisor = Supervisor(
        sock, 1, lambda i, fd: [sys.executable, "-c", "raise SystemExit(2)"],
        say=lambda _: None, start_failures=2,
    )  # fmt: skip
    statuses = [supervisor.run()]
    assert statuses == [START_FAILED_EXIT]


@pytest.mark.timeout(30)
def test_max_requests_recycles_without_losing_a_request():
    sock = listener()
    port = sock.getsockname()[1]
    supervisor = make(sock, 2, limit=3)
    answers: list[int] = []

    def drive():
        answers.extend(ask(port) for _ in range(30))  # every one answered

    supervise(supervisor, drive)
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

    supervisor = Supervisor(sock, 2, command, say=lambda _: None)
    # A failure, not a timeout, if the drain waits forever (supervise's limit).
    supervise(supervisor, lambda: ask(port), stop=False)  # served by one worker, which
    statuses = [slot.process.returncode for slot in supervisor.slots]  # then recycles
    assert len(starts) == 3
    # Every worker has exited, the replacement too, and by the SIGTERM of the drain (before
    # or after its handler was installed), not by the SIGKILL that ends a forced stop.
    assert all(status in (0, -signal.SIGTERM) for status in statuses), statuses


@pytest.mark.timeout(30)
def test_a_draining_worker_s_last_words_are_forwarded(capfd):
    """The drain ends once each worker's stderr has reached its end (PIPES_GRACE at most),
    so what is written there as a worker stops is copied to the supervisor's stderr, not
    cut off; here by a child the worker leaves behind, a moment after the worker exited."""
    sock = listener()
    says_goodbye = with_last_words(
        "    import subprocess\n"
        "    subprocess.Popen([sys.executable, '-c', 'import sys, time; time.sleep(0.3); '\n"
        "                      f'print(\"goodbye from {os.getpid()}\", file=sys.stderr)'])\n"
    )
    supervisor = Supervisor(
        sock, 2, lambda i, fd: [sys.executable, "-c", says_goodbye, str(fd), "0"],
        say=lambda _: None,
    )  # fmt: skip

    def drive():
        until(lambda: all(slot.ready for slot in supervisor.slots), "both workers ready")

    assert supervise(supervisor, drive) == 0
    err = capfd.readouterr().err
    for slot in supervisor.slots:
        assert slot.process.returncode == 0
        assert f"goodbye from {slot.pid}" in err, err


@pytest.mark.timeout(30)
def test_a_drain_waits_for_a_slow_worker_without_spinning():
    """While one worker drains slowly, the supervisor sleeps in select() until something
    happens. Before: the other worker, gone at once, left a deadline in the past (the wait
    for its pipes), so every select() returned at once and the supervisor spun a core
    until the slow one had exited."""
    sock = listener()
    slow_one = with_last_words(  # worker 1 takes PIPES_GRACE + 1.5 s to drain, 0 no time
        "    if os.environ['PYWEB_WORKER_ID'] == '1':\n"
        f"        __import__('time').sleep({PIPES_GRACE + 1.5})\n"
    )
    supervisor = Supervisor(
        sock, 2, lambda i, fd: [sys.executable, "-c", slow_one, str(fd), "0"],
        say=lambda _: None,
    )  # fmt: skip
    # CPU time of the thread that runs the supervisor (this one), read by the driver.
    supervisor_cpu = time.pthread_getcpuclockid(threading.main_thread().ident)
    at_first_exit: list[float] = []

    def drive():
        until(lambda: all(slot.ready for slot in supervisor.slots), "both workers ready")
        supervisor.stop()
        until(lambda: supervisor.slots[0].exits, "worker 0 gone")
        at_first_exit.append(time.clock_gettime(supervisor_cpu))

    started = time.monotonic()
    assert supervise(supervisor, drive) == 0
    took = time.monotonic() - started
    cpu = time.thread_time() - at_first_exit[0]
    assert took >= PIPES_GRACE + 1.5
    # From worker 0's exit on, the supervisor had almost nothing to do: a spin would burn
    # the last 1.5 s (a good part of it even on a loaded machine).
    assert cpu < 0.1, f"the supervisor used {cpu:.2f} s of CPU while worker 1 drained"


@pytest.mark.timeout(30)
def test_a_second_sigterm_kills_the_draining_workers():
    """SIGTERM drains; a second one, while the workers still drain, kills them: exit 1."""
    sock = listener()
    said: list[str] = []
    slow = with_last_words("    __import__('time').sleep(20)\n")  # a drain of 20 s
    supervisor = Supervisor(
        sock, 2, lambda i, fd: [sys.executable, "-c", slow, str(fd), "0"], say=said.append
    )

    def drive():
        until(lambda: all(slot.ready for slot in supervisor.slots), "both workers ready")
        os.kill(os.getpid(), signal.SIGTERM)  # (the supervisor runs in this process)
        until(lambda: any("draining" in line for line in said), "the drain")
        os.kill(os.getpid(), signal.SIGTERM)

    started = time.monotonic()
    assert supervise(supervisor, drive, stop=False) == 1
    assert time.monotonic() - started < 15  # not the 20 s of the drain
    assert said[-2:] == ["SIGTERM: draining the workers", "second signal: killing the workers"]
    assert [slot.process.returncode for slot in supervisor.slots] == [-signal.SIGKILL] * 2


@pytest.mark.timeout(30)
def test_a_worker_whose_child_keeps_its_stderr_is_replaced_all_the_same(tmp_path):
    """A worker's pipes normally end when it exits, and the supervisor reads them to the
    end before it decides what the exit means; but a child of the worker may hold them
    open. The supervisor waits for them PIPES_GRACE at most, then replaces the worker, and
    a drain ends too."""
    sock = listener()
    said: list[str] = []
    child_pid = tmp_path / "child.pid"
    # It starts a child that inherits its stderr and sleeps, says it is ready, and dies.
    dies = (
        "import os, subprocess, sys\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child_pid)!r}, 'a').write(f'{{child.pid}}\\n')\n"
        "os.write(int(os.environ['PYWEB_READY_FD']), b'1')\n"
        "os._exit(3)\n"
    )
    supervisor = Supervisor(sock, 1, lambda i, fd: [sys.executable, "-c", dies], say=said.append)
    try:
        supervise(supervisor, lambda: supervisor.wait_for_starts(2))
    finally:
        for pid in child_pid.read_text().split() if child_pid.exists() else ():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except ProcessLookupError:
                pass
    assert supervisor.slots[0].exits[0] == 3
    assert any("exited with status 3; restarting in 0.1 s" in line for line in said), said


@pytest.mark.timeout(30)
def test_run_leaves_the_signal_handlers_as_it_found_them():
    """run() installs its handlers and a wake-up fd; the process it runs in (a test's, here)
    gets its own back when it returns."""
    before = {signum: signal.getsignal(signum) for signum in WATCHED}
    supervisor = Supervisor(
        listener(), 1, lambda i, fd: [sys.executable, "-c", "raise SystemExit(2)"],
        say=lambda _: None, start_failures=1,
    )  # fmt: skip
    assert supervisor.run() == START_FAILED_EXIT
    assert {signum: signal.getsignal(signum) for signum in WATCHED} == before
    assert signal.set_wakeup_fd(-1) == -1


def test_worker_table_outside_a_supervisor(monkeypatch):
    monkeypatch.delenv("PYWEB_WORKERS_FILE", raising=False)
    assert worker_table() == []


def test_zero_workers_is_refused():
    with pytest.raises(ValueError, match="workers must be at least 1, got 0"):
        Supervisor(listener(), 0, lambda i, fd: [])
