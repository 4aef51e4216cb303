"""A sandbox from the operating system for one hand-in's kernel, made with bubblewrap.

``pyweb grade`` runs code a student wrote; a hand-in can do whatever its kernel may. So each
hand-in's Jupyter kernel is started inside ``bwrap`` (Debian's ``bubblewrap``), which builds
it a world of its own from Linux namespaces:

* a file system with only the system (``/usr``, ``/etc``), Python and pyweb, all read-only,
  plus the hand-in's own temporary folder, the only place it may write. The teacher's folder,
  the other hand-ins and the home folders are simply not there;
* its own process numbers (a PID namespace): it sees no process but its own, so
  ``/proc/<ppid>/cwd`` leads nowhere, and when the kernel ends the kernel of Linux ends every
  process the hand-in started (a server left listening, 200 forks);
* its own network with only a loopback interface: its page server works, nothing else does;
* limits (``prlimit``): address space, processes, CPU seconds, file size; and, when the
  grader runs as root, a user id of its own (``setpriv``), so that the process limit counts.

The grader talks to the kernel over Unix sockets in the hand-in's folder (ZeroMQ's ``ipc``
transport), since the sandbox has no network to share. This is how otter-grader and
Gradescope use a container per hand-in, with a tool a teacher's Debian machine already has.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Limits", "unavailable", "wrap", "SANDBOX_UID"]

SANDBOX_UID = 61_000
"""The first user id the grader gives hand-ins when it runs as root (one per parallel job)."""


@dataclass(frozen=True)
class Limits:
    """What one hand-in's kernel may use (the kernel's own threads count as processes)."""

    memory: int = 2 * 1024**3  # bytes of address space per process
    processes: int = 64
    cpu: int = 600  # seconds of CPU time per process
    file_size: int = 64 * 1024**2  # bytes, the largest file it may write
    open_files: int = 256


def _readable_roots() -> list[Path]:
    """What the kernel must read: the system, this Python, its packages and pyweb itself
    (only the package folders, never the folder a clone of pyweb sits in)."""
    import ipykernel

    import pyweb

    roots = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix)}
    roots.add(Path(pyweb.__file__).resolve().parent)
    try:
        import pyweb_regions

        roots.add(Path(pyweb_regions.__file__).resolve().parent)
    except ImportError:  # the C extension is optional
        pass
    roots.add(Path(ipykernel.__file__).resolve().parent.parent)
    roots.add(Path(sys.executable).resolve().parent.parent)
    system = {Path("/usr"), Path("/etc")}
    return sorted(r for r in roots | system if r.exists())


def _mounts(workdir: Path) -> list[str]:
    roots = _readable_roots()
    # The folders above each root are made anew, passable but not listable: a copy of /root's
    # 0700 would hide a Python installed under /root from the hand-in's user.
    above = sorted({str(a) for r in roots for a in r.parents if a != Path("/")} - {"/tmp"})
    args = [arg for folder in above for arg in ("--perms", "0711", "--dir", folder)]
    for root in roots:
        args += ["--ro-bind", str(root), str(root)]
    for link, target in (("/bin", "usr/bin"), ("/lib", "usr/lib"), ("/lib64", "usr/lib64"),
                         ("/sbin", "usr/sbin")):  # fmt: skip
        if Path(link).is_symlink():
            args += ["--symlink", target, link]
        elif Path(link).is_dir():
            args += ["--ro-bind", link, link]
    args += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--tmpfs", "/run"]
    args += ["--bind", str(workdir), str(workdir)]  # after /tmp's tmpfs, so it shows through
    return args


def wrap(argv: list[str], *, workdir: Path, uid: int | None, limits: Limits) -> list[str]:
    """``argv`` (the kernel's command) as a command run in a sandbox whose only writable
    folder is ``workdir``; as root, under user id ``uid`` (which must own ``workdir``)."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError(unavailable() or "bubblewrap is missing")
    if os.geteuid() == 0:
        # No user namespace: the real root sets up the mounts, then setpriv drops to a user
        # of its own, without capabilities, so that RLIMIT_NPROC applies.
        spaces = ["--unshare-ipc", "--unshare-pid", "--unshare-net", "--unshare-uts",
                  "--unshare-cgroup-try"]  # fmt: skip
        assert uid is not None, "as root, a hand-in needs a user id of its own"
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--"]  # fmt: skip
    else:
        spaces, drop = ["--unshare-all"], []
    prlimit = ["prlimit", f"--as={limits.memory}", f"--nproc={limits.processes}",
               f"--cpu={limits.cpu}", f"--fsize={limits.file_size}",
               f"--nofile={limits.open_files}", "--core=0", "--"]  # fmt: skip
    env = ["--clearenv", "--setenv", "HOME", str(workdir), "--setenv", "PATH",
           f"{Path(sys.executable).parent}:/usr/bin:/bin", "--setenv", "LANG", "C.UTF-8",
           "--setenv", "IPYTHONDIR", str(workdir / ".ipython"),
           "--setenv", "MPLCONFIGDIR", str(workdir / ".matplotlib"),
           "--setenv", "JUPYTER_RUNTIME_DIR", str(workdir / ".jupyter"),
           "--setenv", "PYDEVD_DISABLE_FILE_VALIDATION", "1"]  # fmt: skip
    return [bwrap, *spaces, "--die-with-parent", "--hostname", "hand-in",
            *_mounts(workdir), *env, "--chdir", str(workdir), "--",
            *prlimit, *drop, *argv]  # fmt: skip


@functools.cache
def unavailable() -> str | None:
    """``None`` when a sandbox can be made on this machine, else a sentence saying why not."""
    if not sys.platform.startswith("linux"):
        return f"the sandbox needs Linux namespaces; this is {sys.platform}"
    for tool, package in (("bwrap", "bubblewrap"), ("prlimit", "util-linux"),
                          ("setpriv", "util-linux")):  # fmt: skip
        if shutil.which(tool) is None:
            return f"{tool} is not installed (Debian: apt-get install {package})"
    import tempfile

    probe = Path(tempfile.mkdtemp(prefix="pyweb-sandbox-probe-"))
    try:
        uid = SANDBOX_UID if os.geteuid() == 0 else None
        if uid is not None:
            os.chown(probe, uid, uid)
        argv = wrap([sys.executable, "-c", "import pyweb, ipykernel"], workdir=probe, uid=uid,
                    limits=Limits())  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not start: {exc}"
    finally:
        shutil.rmtree(probe, ignore_errors=True)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap could not make a sandbox here ({why}); user namespaces may be off"
    return None
