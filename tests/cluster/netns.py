"""Hosts on one machine: Linux network namespaces, veth links, and a way into them.

``make test-cluster`` needs several "machines" with addresses of their own, a balancer in
front, and the machine's shared PostgreSQL and Redis behind. Network namespaces give that
on one Linux box (root only): each namespace has its own interfaces, addresses and
loopback. Addresses are chosen in a private range (10.231.0.0/16) and exist only inside
the namespaces made here: nothing is added to the machine's own network.

* :class:`Namespaces` makes the namespaces and the veth pairs between them, and removes
  them all (``ip netns del`` also removes the links) however the run ends.
* :func:`inside` switches the *calling thread* into a namespace (``setns(2)``: a network
  namespace is per thread on Linux); a socket keeps the namespace it was made in. The test
  driver's client threads live in the balancer's namespace this way.
* :class:`Forwarder` makes the machine's 127.0.0.1 services (PostgreSQL, Redis) appear on
  each namespace's own 127.0.0.1, as a database server appears on a host's network: it
  listens inside the namespace and connects out from the machine's.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import subprocess
import threading
from collections.abc import Iterator

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def run(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


@contextlib.contextmanager
def inside(namespace: str) -> Iterator[None]:
    """Run the calling thread in ``namespace`` for the ``with`` block."""
    here = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    there = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
    try:
        if _libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {namespace}")
        try:
            yield
        finally:
            if _libc.setns(here, CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), "setns back")
    finally:
        os.close(here)
        os.close(there)


def enter(namespace: str) -> None:
    """Move the calling thread into ``namespace`` for good (a client thread)."""
    there = os.open(f"/var/run/netns/{namespace}", os.O_RDONLY)
    try:
        if _libc.setns(there, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns into {namespace}")
    finally:
        os.close(there)


class Namespaces:
    """Namespaces named ``<tag>-<name>`` and veth links between them; :meth:`remove` undoes
    everything."""

    def __init__(self, tag: str) -> None:
        self.tag = tag
        self.names: list[str] = []

    def add(self, name: str) -> str:
        full = f"{self.tag}-{name}"
        run("ip", "netns", "add", full)
        self.names.append(full)
        run("ip", "-n", full, "link", "set", "lo", "up")
        return full

    def link(self, a: str, a_addr: str, b: str, b_addr: str, ifname: str) -> None:
        """A veth pair between namespaces ``a`` and ``b`` with the given CIDR addresses."""
        left, right = f"{ifname}a", f"{ifname}b"  # names of at most 15 characters
        run("ip", "link", "add", left, "netns", a, "type", "veth", "peer", "name", right,
            "netns", b)  # fmt: skip
        for ns, dev, addr in ((a, left, a_addr), (b, right, b_addr)):
            run("ip", "-n", ns, "addr", "add", addr, "dev", dev)
            run("ip", "-n", ns, "link", "set", dev, "up")

    def remove(self) -> None:
        for name in reversed(self.names):
            subprocess.run(["ip", "netns", "del", name], capture_output=True)
        self.names.clear()


class Forwarder:
    """Forward ``127.0.0.1:port`` inside namespaces to the machine's ``127.0.0.1:port``."""

    def __init__(self) -> None:
        self.listeners: list[socket.socket] = []
        self.stopped = False

    def expose(self, namespace: str, port: int) -> None:
        with inside(namespace):
            listener = socket.socket()
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind(("127.0.0.1", port))
            listener.listen(256)
        self.listeners.append(listener)
        threading.Thread(target=self._accept, args=(listener, port), daemon=True).start()

    def _accept(self, listener: socket.socket, port: int) -> None:
        while not self.stopped:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", port))  # the machine's
            except OSError:
                client.close()
                continue
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
            source.close()  # each socket is the source of exactly one pump

    def stop(self) -> None:
        self.stopped = True
        for listener in self.listeners:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
