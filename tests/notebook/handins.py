"""A class of hand-ins of exercise 1 (temperature), honest ones and attacks on the grader.

Each hand-in is the teacher's solution or starter with one edit, the way a student would
hand it in. The attacks are the ones a review of ``pyweb grade`` tried for real; graded in
the sandbox each must be harmless. An attack cell ends by raising ``RuntimeError`` with
``blocked: ...`` when the sandbox stopped it or ``LEAKED: ...`` when it got through, so the
test sees, in the hand-in's feedback, that the attack ran and what it found.

``python -m tests.notebook.handins FOLDER`` writes the class into FOLDER, one folder per
student (``FOLDER/ada/01_temperature.ipynb``), with the master beside it
(``FOLDER/../master.ipynb``, with a hidden check) for ``pyweb grade FOLDER --master ...``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbformat

ROOT = Path(__file__).resolve().parents[2]
EXERCISE = ROOT / "notebook" / "01_temperature.ipynb"
SOLUTION = ROOT / "notebook" / "solutions" / "01_temperature.ipynb"
MARKER = "pyweb-grade-attack-7f3c"  # in the command line of every process an attack leaves


def _checks(nb: Any) -> list[Any]:
    return [c for c in nb.cells if "check" in c.metadata.get("tags", [])]


def _student(nb: Any) -> Any:
    return next(c for c in nb.cells if "student" in c.metadata.get("tags", []))


def _after_student(source: str) -> Callable[[Any], None]:
    def edit(nb: Any) -> None:
        nb.cells.insert(nb.cells.index(_student(nb)) + 1, nbformat.v4.new_code_cell(source))

    return edit


def _edited_checks(nb: Any) -> None:
    for number, cell in enumerate(_checks(nb), 1):
        cell.source = f'print("Check {number} passed")'


def _deleted_checks(nb: Any) -> None:
    for cell in _checks(nb)[:2]:
        nb.cells.remove(cell)


def _syntax_error(nb: Any) -> None:
    _student(nb).source += "\nif c > 100\n    print('hot')\n"


# Reads every other hand-in it can name, and writes into them (``victims`` is the folder of
# the class, which the test knows; a student would guess it from /proc).
OTHER_STUDENTS = '''
import os, pathlib
found, tried = [], []
for victim in pathlib.Path({folder!r}).rglob("*.ipynb"):
    tried.append(str(victim))
    try:
        victim.read_text(); found.append("read " + str(victim))
        victim.write_text("{{}}"); found.append("wrote " + str(victim))
    except OSError as exc:
        pass
for path in ["/root", "/home", "/etc/shadow", {folder!r}]:
    try:
        os.listdir(path) if os.path.isdir(path) else open(path).read(1)
        found.append("read " + path)
    except OSError:
        pass
raise RuntimeError(("LEAKED: " + "; ".join(found)) if found else "blocked: nothing of the class")
'''

TEACHER_FOLDER = '''
import os
found = []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
        names = os.listdir(f"/proc/{pid}/cwd")
    except OSError:
        continue
    if cwd != os.getcwd() and any(n.endswith(".ipynb") or n.endswith(".csv") for n in names):
        found.append(f"/proc/{pid}/cwd = {cwd}: {names[:5]}")
        try:
            open(f"/proc/{pid}/cwd/left-by-a-student.txt", "w").write("hello")
            found.append("and wrote there")
        except OSError:
            pass
try:
    ppid_cwd = os.readlink(f"/proc/{os.getppid()}/cwd")
except OSError as exc:
    ppid_cwd = type(exc).__name__
raise RuntimeError(("LEAKED: " + "; ".join(found)) if found
                   else f"blocked: /proc/<ppid>/cwd is {ppid_cwd}, nothing of the teacher's")
'''

LEFTOVER_SERVER = f'''
import socket, subprocess, sys
server = """
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 18551)); s.listen()
while True:
    time.sleep(1)
"""
subprocess.Popen([sys.executable, "-c", server, "{MARKER}"], start_new_session=True,
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
try:
    socket.create_connection(("1.1.1.1", 80), timeout=2).close()
    reached = "LEAKED: reached 1.1.1.1:80"
except OSError as exc:
    reached = f"blocked: no network ({{type(exc).__name__}})"
raise RuntimeError(reached)
'''

HUGE_OUTPUT = '''
print("x" * 200_000_000)
for _ in range(50):
    print("y" * 1_000_000)
'''

FORK_BOMB = f'''
import os, subprocess, sys
started, refused = 0, None
for _ in range(200):
    try:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{MARKER}"],
                         start_new_session=True)
        started += 1
    except OSError as exc:
        refused = exc
        break
raise RuntimeError((f"blocked: {{started}} processes, then {{type(refused).__name__}}")
                   if refused else f"LEAKED: all {{started}} processes started")
'''

CRASH = "import os\nos._exit(1)"
# Ignores "Interrupt kernel": the grader must give up on the kernel, not wait forever.
HANG = """import time
while True:
    try:
        time.sleep(100)
    except KeyboardInterrupt:
        pass"""
INFINITE_LOOP = "n = 0\nwhile True:\n    n += 1"


def _replace_expect(nb: Any) -> None:
    _after_student("expect = lambda r, **k: r\nexpect_form = lambda r, f, **k: {}")(nb)


CLASS: dict[str, tuple[Path, Callable[[Any], None] | None]] = {
    "ada": (SOLUTION, None),
    "zed": (SOLUTION, None),
    "cy": (EXERCISE, None),  # handed in unsolved
    "dee": (SOLUTION, _syntax_error),
    "eve": (SOLUTION, _after_student(INFINITE_LOOP)),
    "fay": (SOLUTION, _after_student(CRASH)),
    "gus": (SOLUTION, None),  # OTHER_STUDENTS and TEACHER_FOLDER: added by write_class
    "hal": (SOLUTION, _after_student(LEFTOVER_SERVER)),
    "ivy": (SOLUTION, _after_student(HUGE_OUTPUT)),
    "jon": (EXERCISE, _edited_checks),
    "kim": (EXERCISE, _replace_expect),
    "lou": (SOLUTION, _after_student(FORK_BOMB)),
    "max": (EXERCISE, _deleted_checks),
    "ned": (SOLUTION, _after_student(HANG)),
}

HIDDEN_CHECK = """r = srv.get("/temperature", params={"c": "36.6"})
expect(r, contains="97.9", message="For c=36.6")
print("Check 5 passed: 36.6 °C is 97.9 °F.")"""


def master() -> Any:
    """The teacher's master of exercise 1: the handed-out checks, and a hidden fifth worth
    2 points that no student saw."""
    nb = nbformat.read(EXERCISE, as_version=4)
    at = next(i for i, c in enumerate(nb.cells) if c.source.startswith("## Clean up"))
    check = nbformat.v4.new_code_cell(HIDDEN_CHECK)
    check.metadata.update({"tags": ["check", "hidden"], "pyweb": {"points": 2}})
    check["id"] = "temp-hidden"
    nb.cells[at:at] = [nbformat.v4.new_markdown_cell("## Check 5: a body temperature"), check]
    return nb


def hand_in(source: Path, edit: Callable[[Any], None] | None) -> Any:
    nb = nbformat.read(source, as_version=4)
    if edit is not None:
        edit(nb)
    return nb


def write_class(folder: Path, names: list[str] | None = None) -> list[str]:
    """Write the hand-ins ``names`` (all of :data:`CLASS` by default) into ``folder``,
    one folder per student; returns the names written."""
    chosen = names or list(CLASS)
    for name in chosen:
        source, edit = CLASS[name]
        nb = hand_in(source, edit)
        if name == "gus":  # reads the class's files, then looks for the teacher's folder
            _after_student(TEACHER_FOLDER)(nb)
            _after_student(OTHER_STUDENTS.format(folder=str(folder)))(nb)
        (folder / name).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(folder / name / "01_temperature.ipynb"))
    return chosen


if __name__ == "__main__":  # pragma: no cover
    out = Path(sys.argv[1])
    write_class(out)
    nbformat.write(master(), str(out.parent / "master.ipynb"))
    print(f"wrote {len(CLASS)} hand-ins into {out} and the master {out.parent / 'master.ipynb'}")
