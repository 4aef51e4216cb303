"""What a worker tells its supervisor (pyweb/server/supervised.py): the ready line."""

from __future__ import annotations

import io
import os
import re

import pytest

from pyweb.server import supervised
from tests.helpers import READY


class Writes(io.RawIOBase):
    """A raw stream that keeps each ``write`` call apart: what reaches a pipe per
    system call."""

    def __init__(self) -> None:
        self.calls: list[bytes] = []

    def writable(self) -> bool:
        return True

    def write(self, b: bytes) -> int:  # type: ignore[override]
        self.calls.append(bytes(b))
        return len(b)


def unbuffered_stdout() -> tuple[io.TextIOWrapper, Writes]:
    """stdout as ``python -u`` (or PYTHONUNBUFFERED) makes it: each write goes through."""
    raw = Writes()
    return io.TextIOWrapper(raw, encoding="utf-8", write_through=True), raw  # type: ignore[arg-type]


def test_print_on_an_unbuffered_stdout_writes_the_newline_apart() -> None:
    # Broken: two workers printing this way at once could interleave their lines.
    out, raw = unbuffered_stdout()
    print("pyweb worker 0 (pid 1) ready", file=out, flush=True)
    assert raw.calls == [b"pyweb worker 0 (pid 1) ready", b"\n"]


def test_the_ready_line_goes_out_in_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    # Fixed: one write per line, which a pipe keeps whole (under PIPE_BUF bytes).
    out, raw = unbuffered_stdout()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.delenv("PYWEB_READY_FD", raising=False)
    supervised.announce_ready("3")
    assert raw.calls == [f"pyweb worker 3 (pid {os.getpid()}) ready\n".encode()]
    assert READY.fullmatch(raw.calls[0].decode().strip())


def test_the_ready_pipe_gets_one_byte_and_is_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    r, w = os.pipe()
    out, _ = unbuffered_stdout()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setenv("PYWEB_READY_FD", str(w))
    supervised.announce_ready("0")
    assert os.read(r, 10) == b"1"
    assert os.read(r, 10) == b""  # the write end is closed: said once
    assert "PYWEB_READY_FD" not in os.environ
    os.close(r)


def test_two_ready_lines_run_together_are_both_read() -> None:
    # What an older worker could print: the reader of test scripts finds both.
    line = "pyweb worker 0 (pid 10) readypyweb worker 1 (pid 11) ready\n"
    assert [m.groups() for m in READY.finditer(line)] == [("0", "10"), ("1", "11")]
    assert re.search(READY, line)
