"""ModuleGuard: snapshot a module, say what a request changed, put it back (both
implementations; SMLserver §2.1's identical initial state, approximated by rebinding)."""

from __future__ import annotations

import types

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from .conftest import load


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
@given(ops=_ops, which=st.sampled_from(["c", "python"]))
def test_restore_undoes_any_top_level_change(ops, which):
    impl = load(which)
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
