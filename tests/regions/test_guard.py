"""ModuleGuard: snapshot a module, say what a request changed, put it back (both
implementations; SMLserver §2.1's identical initial state, approximated by rebinding).

The C guard's "nothing changed" shortcut has three mechanisms (``FAST_CHECK``): a dict
watcher (3.12+), the dict version tag (3.11-3.13) and plain comparison. Every test here runs
against each one this Python has, and against the pure-Python fallback."""

from __future__ import annotations

import contextlib
import gc
import subprocess
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pyweb_regions

from .conftest import load

MECHANISMS = ["dict_watcher", "version_tag", "compare"]
ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def mechanism(which: str) -> Iterator[types.ModuleType]:
    """``"python"``, or ``"c/<mechanism>"``: the C module making its new guards use it."""
    name, _, fast = which.partition("/")
    module = load(name)
    if not fast:
        yield module
        return
    try:
        previous = module._set_fast_check(fast)
    except ValueError:
        pytest.skip(
            f"{fast} is not available on Python {sys.version_info[0]}.{sys.version_info[1]}"
        )
    try:
        yield module
    finally:
        module._set_fast_check(previous)


def _available() -> list[str]:
    """The C mechanisms this Python has (just "c", which skips, when C was not built)."""
    try:
        c = pyweb_regions.implementation("c")
    except ImportError:
        return ["c", "python"]
    out = []
    for fast in MECHANISMS:
        with contextlib.suppress(ValueError):
            c._set_fast_check(c._set_fast_check(fast))
            out.append(f"c/{fast}")
    return [*out, "python"]


@pytest.fixture(params=_available())
def impl(request) -> Iterator[types.ModuleType]:
    """Overrides conftest's ``impl``: the C guard once per mechanism, then the fallback."""
    with mechanism(request.param) as module:
        yield module


def make_module() -> types.ModuleType:
    m = types.ModuleType("_lib")
    m.counter = 0
    m.name = "lib"
    m.items = [1, 2, 3]
    m.config = {"debug": False}
    m.seen = {"a", "b"}
    m.buf = bytearray(b"abc")
    m.helper = len
    return m


def test_nothing_changed(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    assert not g.changed()
    assert g.diff() == ()
    assert g.restore() == ()
    assert g.names == 7 and g.containers == 4
    _ = m.counter, m.items[0], m.config.get("debug"), "a" in m.seen  # reading is no change
    assert not g.changed()


def test_rebound_added_deleted_are_reported_and_undone(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.counter += 1
    m.leak = object()
    del m.name
    assert g.changed()
    assert sorted(g.diff()) == [("added", "leak"), ("deleted", "name"), ("rebound", "counter")]
    assert sorted(g.restore()) == [("added", "leak"), ("deleted", "name"), ("rebound", "counter")]
    assert m.counter == 0 and m.name == "lib" and not hasattr(m, "leak")
    assert not g.changed() and g.restore() == ()


def test_containers_are_restored_in_place(impl):
    m = make_module()
    items, config, seen, buf = m.items, m.config, m.seen, m.buf
    g = impl.ModuleGuard(m)
    m.items.append(4)
    m.config["debug"] = True
    m.seen.discard("a")
    m.buf[0:1] = b"X"
    assert sorted(g.restore()) == [
        ("mutated", "buf"),
        ("mutated", "config"),
        ("mutated", "items"),
        ("mutated", "seen"),
    ]
    # Same objects (a module that did `from _lib import items` sees the restore too).
    assert m.items is items and items == [1, 2, 3]
    assert m.config is config and config == {"debug": False}
    assert m.seen is seen and seen == {"a", "b"}
    assert m.buf is buf and buf == b"abc"
    assert not g.changed()


def test_replacing_an_item_with_an_equal_object_is_a_change_of_identity(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.items[0] = [1][0] + 0  # the small int 1 is cached: same object, no change
    assert not g.changed()
    m.config["debug"] = False  # the same object stored again: no change
    assert not g.changed()


def test_set_and_delete_is_no_change(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.tmp = 1
    del m.tmp
    m.config["x"] = 1
    del m.config["x"]
    assert not g.changed() and g.diff() == ()


def test_dunders_and_submodules_are_the_interpreter_s(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.__warningregistry__ = {}
    m.sub = types.ModuleType("_lib.sub")  # what `import _lib.sub` does to the package
    assert not g.changed() and g.restore() == ()
    assert hasattr(m, "sub")


def test_rebinding_a_container_restores_the_old_object(impl):
    m = make_module()
    items = m.items
    g = impl.ModuleGuard(m)
    m.items = []
    assert g.restore() == (("rebound", "items"),)
    assert m.items is items


def test_a_bytearray_with_a_live_view_is_reported_not_restored(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.buf.extend(b"def")
    view = memoryview(m.buf)
    assert g.restore() == (("not restored", "buf"),)
    view.release()
    assert g.restore() == (("mutated", "buf"),)
    assert m.buf == b"abc"


def test_retake_accepts_the_current_state(impl):
    m = make_module()
    g = impl.ModuleGuard(m)
    m.counter = 5
    g.retake()
    assert not g.changed()
    m.counter = 6
    g.restore()
    assert m.counter == 5


def test_the_fast_check_is_the_best_this_python_has():
    python = load("python")
    assert python.FAST_CHECK == "compare" and python.VERSION_TAG == 0
    assert python.ModuleGuard(make_module()).fast_check == "compare"
    c = load("c")
    expected = "version_tag" if sys.version_info < (3, 12) else "dict_watcher"
    assert c.FAST_CHECK == expected
    assert c.VERSION_TAG == (expected == "version_tag")
    assert c.ModuleGuard(make_module()).fast_check == expected
    if pyweb_regions.IMPLEMENTATION == "c":
        assert pyweb_regions.FAST_CHECK == expected


@pytest.mark.skipif(sys.version_info < (3, 12), reason="dict watchers are 3.12+")
def test_no_watcher_id_left_falls_back_to_the_version_tag_or_compare(tmp_path):
    """An interpreter has 8 dict watcher ids: when other extensions took them all, the guard
    still works, with the next best check (a real interpreter, ids used up by _testcapi)."""
    testcapi = pytest.importorskip("_testcapi")
    if not hasattr(testcapi, "add_dict_watcher"):
        pytest.skip("this _testcapi cannot add dict watchers")
    load("c")
    script = """
import _testcapi, types
try:
    while True:
        _testcapi.add_dict_watcher(0)
except RuntimeError:
    pass
from pyweb_regions import _regions
m = types.ModuleType("m")
m.x = 1
g = _regions.ModuleGuard(m)
quiet = g.changed()
m.x = 2
print(_regions.FAST_CHECK, g.fast_check, quiet, g.restore(), m.x)
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout.split(maxsplit=2)
    expected = "version_tag" if sys.version_info < (3, 14) else "compare"
    assert out == [expected, expected, "False (('rebound', 'x'),) 1\n"]


def test_a_guard_keeps_the_mechanism_it_was_made_with(impl):
    g = impl.ModuleGuard(make_module())
    made_with = g.fast_check
    assert made_with in MECHANISMS
    if made_with != "compare":
        impl._set_fast_check("compare")  # the fixture puts the mechanism back
        assert g.fast_check == made_with and impl.ModuleGuard(make_module()).fast_check == "compare"
        g.retake()
        assert g.fast_check == "compare"
    with pytest.raises(ValueError, match="not available"):
        impl._set_fast_check("telepathy")


def test_guards_sharing_a_module_or_a_dict_each_see_changes(impl):
    """Two guards on one module, and a dict imported into a second module: one guard going
    away must not blind the others (a dict watcher is per dict, not per guard)."""
    m = make_module()
    m2 = types.ModuleType("_other")
    m2.config = m.config  # `from _lib import config`
    first, second, other = impl.ModuleGuard(m), impl.ModuleGuard(m), impl.ModuleGuard(m2)
    del first
    gc.collect()
    m.counter = 1
    assert second.changed() and not other.changed()
    m.config.clear()
    assert other.diff() == (("mutated", "config"),)
    assert sorted(second.diff()) == [("mutated", "config"), ("rebound", "counter")]
    assert other.restore() == (("mutated", "config"),)
    assert m.config == {"debug": False}
    assert second.restore() == (("rebound", "counter"),)  # config is already back
    assert not second.changed() and not other.changed()
    m.config.update(extra=1)
    assert second.changed() and other.changed()
    del other
    gc.collect()
    assert second.restore() == (("mutated", "config"),) and not second.changed()


def test_a_module_outliving_its_guard(impl):
    """The guard is gone; writing the module afterwards must not touch freed memory (the
    watcher callback still runs for dicts watched by other guards)."""
    m = make_module()
    keep = impl.ModuleGuard(make_module())
    g = impl.ModuleGuard(m)
    del g
    gc.collect()
    for i in range(100):
        setattr(m, f"x{i}", i)
        m.config[i] = i
    assert not keep.changed()


def test_not_a_module(impl):
    with pytest.raises(TypeError, match="needs a module"):
        impl.ModuleGuard({"counter": 0})


def test_fifty_globals_as_in_the_benchmark(impl):
    m = types.ModuleType("big")
    for i in range(45):
        setattr(m, f"g{i}", i * 1000)
    for i in range(5):
        setattr(m, f"c{i}", list(range(20)))
    g = impl.ModuleGuard(m)
    assert g.names == 50 and g.containers == 5
    m.g7 = "x"
    m.c3.append(1)
    assert sorted(g.restore()) == [("mutated", "c3"), ("rebound", "g7")]
    assert m.g7 == 7000 and m.c3 == list(range(20))


# ---- property: whatever a request does at the top level, restore() undoes it ---------------

_names = st.sampled_from(["counter", "name", "items", "config", "seen", "buf", "new1", "new2"])
_ops = st.lists(
    st.tuples(
        st.sampled_from(["rebind", "delete", "append", "setkey", "add", "extend"]),
        _names,
        st.integers(0, 5),
    ),
    max_size=12,
)


def _state(m: types.ModuleType) -> dict:
    return {
        k: (v, list(v) if isinstance(v, list | bytearray) else dict(v) if isinstance(v, dict)
            else set(v) if isinstance(v, set) else None)
        for k, v in vars(m).items()
        if not k.startswith("__")
    }  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(ops=_ops, which=st.sampled_from(_available()))
def test_restore_undoes_any_top_level_change(ops, which):
    with mechanism(which) as impl:
        _check_restore_undoes(impl, ops)


def _check_restore_undoes(impl: types.ModuleType, ops: list[tuple[str, str, int]]) -> None:
    m = make_module()
    before = _state(m)
    g = impl.ModuleGuard(m)
    touched = set()
    for op, name, value in ops:
        current = getattr(m, name, None)
        if op == "rebind":
            setattr(m, name, value)
        elif op == "delete" and hasattr(m, name):
            delattr(m, name)
        elif op == "append" and isinstance(current, list):
            current.append(value)
        elif op == "setkey" and isinstance(current, dict):
            current[value] = value
        elif op == "add" and isinstance(current, set):
            current.add(value)
        elif op == "extend" and isinstance(current, bytearray):
            current.extend(bytes([value]))
        else:
            continue
        touched.add(name)
    changed = _state(m) != before
    assert g.changed() == changed
    reported = {name for _kind, name in g.diff()}
    assert reported <= touched
    assert bool(reported) == changed
    assert {name for _kind, name in g.restore()} == reported
    after = _state(m)
    assert after.keys() == before.keys()
    for k, (obj, contents) in before.items():
        assert after[k][0] is obj, k  # the same objects are bound again
        assert after[k][1] == contents, k  # with the same contents
    assert not g.changed()


# ---- any_changed: every guard of a site in one call ------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    ops=st.lists(st.tuples(st.integers(0, 3), _ops), max_size=4),
    which=st.sampled_from(_available()),
)
def test_any_changed_agrees_with_each_guard(ops, which):
    """Four guarded modules, some changed by the ops: ``any_changed`` answers what asking
    each guard answers, for a dict and for another mapping, before and after restore."""
    import collections

    with mechanism(which) as impl:
        modules = [make_module() for _ in range(4)]
        guards = {f"m{i}": impl.ModuleGuard(m) for i, m in enumerate(modules)}
        assert impl.any_changed(guards) is False
        for index, module_ops in ops:
            m = modules[index]
            for op, name, value in module_ops:
                current = getattr(m, name, None)
                if op == "rebind":
                    setattr(m, name, value)
                elif op == "append" and isinstance(current, list):
                    current.append(value)
                elif op == "setkey" and isinstance(current, dict):
                    current[value] = value
        expected = any(g.changed() for g in guards.values())
        assert impl.any_changed(guards) is expected
        assert impl.any_changed(collections.OrderedDict(guards)) is expected
        assert impl.any_changed(types.MappingProxyType(guards)) is expected
        for g in guards.values():
            g.restore()
        assert impl.any_changed(guards) is False
        assert impl.any_changed({}) is False


def test_any_changed_asks_other_guards_and_passes_their_errors(impl):
    """A value that is not this implementation's guard is asked through its changed(); what
    it raises reaches the caller (a check that fails never reads as "nothing changed")."""

    class Stub:
        def __init__(self, answer):
            self.answer = answer

        def changed(self):
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer

    m = make_module()
    guard = impl.ModuleGuard(m)
    assert impl.any_changed({"a": guard, "b": Stub(0)}) is False
    assert impl.any_changed({"a": guard, "b": Stub([1])}) is True
    with pytest.raises(KeyError):
        impl.any_changed({"a": guard, "b": Stub(KeyError("boom"))})
    m.counter = 5  # the real guard answers first: the stub is not asked
    assert impl.any_changed({"a": guard, "b": Stub(KeyError("boom"))}) is True
    with pytest.raises(AttributeError):
        impl.any_changed([guard])  # a mapping, not a list


def test_any_changed_on_an_uninitialised_guard_raises():
    c = load("c")
    g = c.ModuleGuard.__new__(c.ModuleGuard)
    with pytest.raises(ValueError, match="not initialised"):
        c.any_changed({"g": g})


def test_names_that_are_not_str_are_left_out(impl):
    m = make_module()
    vars(m)[1] = "odd"
    g = impl.ModuleGuard(m)
    vars(m)[2] = "odder"
    assert not g.changed() and g.restore() == ()
    m.counter = 9
    assert g.restore() == (("rebound", "counter"),)


def test_an_uninitialised_guard_or_arena_raises_instead_of_crashing():
    c = load("c")
    g = c.ModuleGuard.__new__(c.ModuleGuard)
    for method in (g.changed, g.diff, g.restore, g.retake):
        with pytest.raises(ValueError, match="not initialised"):
            method()
    a = c.Arena.__new__(c.Arena)
    for call in (lambda: a.write(b"x"), a.views, a.reset, a.getvalue, a.tail):
        with pytest.raises(ValueError, match="not initialised"):
            call()
    with pytest.raises(BufferError):
        memoryview(a)
    a.close()
