/* pyweb_regions._regions: the C half of pyweb's regions (SMLserver §2.1 and §5, Hop §3.1).
 *
 * Three independent pieces, each with a pure-Python twin in _fallback.py (same API):
 *
 *   ModuleGuard  a snapshot of one module's state (its bindings and the contents of its
 *                top-level list/dict/set/bytearray values), checked after every request and
 *                restored in place: SMLserver's "every request starts from an identical
 *                initial heap", approximated by rebinding (the object heap itself is never
 *                reset: objects escape into caches, logs, tracebacks; see docs/regions.md).
 *                The "nothing changed" check is one flag test per module: on 3.12+ a dict
 *                watcher marks the guard dirty when the module dict is written; on 3.11 it
 *                compares the dict's ma_version_tag (PEP 509); plus a memcmp per container.
 *   Arena        a request heap for bytes: fixed-size region pages from a process-wide free
 *                list (SMLserver §5.1), filled by recv_into and by response assembly, handed
 *                out as memoryviews.  reset() is O(1) and refuses (BufferError) while a view
 *                is alive, so Python code can never read a recycled page.
 *   alloc_*      Hop's BglMem for CPython: a PyMem_SetAllocator hook that counts bytes and
 *                calls allocated (cumulative) per thread, without counting pymalloc's
 *                fall-through to the raw allocator twice.
 *
 * Everything here runs with the GIL held, except the raw-domain allocator hook, which touches
 * only thread-local counters.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <errno.h>
#include <sys/uio.h>
#include <unistd.h>

#if PY_VERSION_HEX < 0x030E0000
#define HAVE_VERSION_TAG 1
#else
#define HAVE_VERSION_TAG 0
#endif
/* Dict watchers (PyDict_AddWatcher, CPython 3.12+): a callback when a watched dict changes. */
#if PY_VERSION_HEX >= 0x030C0000
#define HAVE_DICT_WATCHERS 1
#else
#define HAVE_DICT_WATCHERS 0
#endif

/* ======================================================================================
 * ModuleGuard
 * ====================================================================================== */

enum { K_LIST, K_DICT, K_SET, K_BYTEARRAY };

typedef struct {
    PyObject *name;  /* the global's name */
    PyObject *obj;   /* the container itself */
    PyObject *saved; /* tuple (list, set items), dict copy, or bytes */
    uint64_t tag;    /* dict containers: ma_version_tag when saved */
    int kind;
    unsigned char dirty; /* dict containers, FAST_WATCHER: set by the watcher callback */
} Container;

/* How a guard sees "nothing changed" without comparing everything (FAST_CHECK):
 *   FAST_TAG      the dict's ma_version_tag (PEP 509): 3.11, and 3.12-3.13 if no watcher;
 *   FAST_WATCHER  a dict watcher sets a "dirty" flag when the dict changes (3.12+);
 *   FAST_COMPARE  no shortcut: compare every binding by identity (still correct). */
enum { FAST_COMPARE, FAST_TAG, FAST_WATCHER };
static const char *const fast_names[] = {"compare", "version_tag", "dict_watcher"};

typedef struct {
    PyObject_HEAD
    PyObject *module;
    PyObject *dict;  /* module.__dict__ */
    PyObject *saved; /* name -> object, dunder names left out */
    uint64_t tag;
    Container *containers;
    Py_ssize_t ncontainers;
    int mode;            /* FAST_*, chosen when the snapshot is taken */
    unsigned char dirty; /* FAST_WATCHER: the module dict changed since the last check */
} GuardObject;

/* The mechanism new snapshots use: set at import (the best one available), changed only by
 * _set_fast_check() so that the tests can run every mechanism on one Python. */
static int fast_mode = HAVE_VERSION_TAG ? FAST_TAG : FAST_COMPARE;
static int watcher_id = -1;

#if HAVE_DICT_WATCHERS
/* The watched dicts: one entry per (dict, flag to set). A watcher is per interpreter, not
 * per guard, so the callback looks the dict up here. The list is short (the guarded module
 * dicts and their top-level dicts) and the callback runs only when a watched dict is written,
 * which after the snapshot means a request changed module state: a linear scan is enough. */
typedef struct {
    PyObject *dict; /* borrowed: the owner holds a reference while the entry exists */
    unsigned char *dirty;
    void *owner;
} Watch;

static Watch *watches = NULL;
static Py_ssize_t nwatches = 0, watches_cap = 0;

static int
guard_watch_callback(PyDict_WatchEvent event, PyObject *dict, PyObject *key, PyObject *value)
{
    /* Called before the change, with the GIL held; marking is all it may do. */
    (void)event, (void)key, (void)value;
    for (Py_ssize_t i = 0; i < nwatches; i++)
        if (watches[i].dict == dict)
            *watches[i].dirty = 1;
    return 0;
}

static int
watch_add(PyObject *dict, unsigned char *dirty, void *owner)
{
    if (nwatches == watches_cap) {
        Py_ssize_t cap = watches_cap ? 2 * watches_cap : 64;
        Watch *w = PyMem_Realloc(watches, (size_t)cap * sizeof(Watch));
        if (w == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        watches = w;
        watches_cap = cap;
    }
    if (PyDict_Watch(watcher_id, dict) < 0)
        return -1;
    watches[nwatches++] = (Watch){dict, dirty, owner};
    *dirty = 0;
    return 0;
}

/* Forget the owner's entries; stop watching a dict nobody else watches (two guards may share
 * a module, and a top-level dict may be imported into several modules). */
static void
watch_remove_owner(void *owner)
{
    for (Py_ssize_t i = 0; i < nwatches; i++) {
        if (watches[i].owner != owner)
            continue;
        int shared = 0;
        for (Py_ssize_t k = 0; k < nwatches && !shared; k++)
            shared = watches[k].owner != owner && watches[k].dict == watches[i].dict;
        if (!shared && PyDict_Unwatch(watcher_id, watches[i].dict) < 0)
            PyErr_Clear(); /* unwatching twice (the owner's dict listed twice) is harmless */
    }
    Py_ssize_t j = 0;
    for (Py_ssize_t i = 0; i < nwatches; i++)
        if (watches[i].owner != owner)
            watches[j++] = watches[i];
    nwatches = j;
}
#endif

static uint64_t
dict_tag(PyObject *d)
{
#if HAVE_VERSION_TAG
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    return ((PyDictObject *)d)->ma_version_tag;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#else
    (void)d;
    return 0; /* no tag: every check takes the (still correct) identity-compare path */
#endif
}

/* Names left out of snapshots: dunders (__builtins__, __warningregistry__, ...) belong to
 * the interpreter, and a key that is not a str (possible through vars(module)) could run
 * Python code when compared. */
static int
is_dunder(PyObject *key)
{
    if (!PyUnicode_CheckExact(key))
        return 1;
    if (!PyUnicode_IS_ASCII(key))
        return 0;
    Py_ssize_t n = PyUnicode_GET_LENGTH(key);
    const char *s = (const char *)PyUnicode_DATA(key);
    return n >= 4 && s[0] == '_' && s[1] == '_' && s[n - 1] == '_' && s[n - 2] == '_';
}

static void
guard_clear_snapshot(GuardObject *self)
{
#if HAVE_DICT_WATCHERS
    /* First, while the dicts are still referenced: the entries point into self. */
    if (watcher_id >= 0)
        watch_remove_owner(self);
#endif
    for (Py_ssize_t i = 0; i < self->ncontainers; i++) {
        Py_CLEAR(self->containers[i].name);
        Py_CLEAR(self->containers[i].obj);
        Py_CLEAR(self->containers[i].saved);
    }
    PyMem_Free(self->containers);
    self->containers = NULL;
    self->ncontainers = 0;
    Py_CLEAR(self->saved);
}

static int
container_save(Container *c)
{
    PyObject *o = c->obj;
    Py_CLEAR(c->saved);
    switch (c->kind) {
    case K_LIST:
        c->saved = PyList_AsTuple(o);
        break;
    case K_DICT:
        c->saved = PyDict_Copy(o);
        c->tag = dict_tag(o);
        break;
    case K_SET:
        c->saved = PySequence_Tuple(o);
        break;
    case K_BYTEARRAY:
        c->saved = PyBytes_FromStringAndSize(PyByteArray_AS_STRING(o), PyByteArray_GET_SIZE(o));
        break;
    }
    return c->saved == NULL ? -1 : 0;
}

static int
guard_take(GuardObject *self)
{
    PyObject *key, *value;
    Py_ssize_t pos = 0, n = 0;
    guard_clear_snapshot(self);
    self->mode = fast_mode;
    self->saved = PyDict_New();
    if (self->saved == NULL)
        return -1;
    self->containers = PyMem_Calloc((size_t)PyDict_GET_SIZE(self->dict) + 1, sizeof(Container));
    if (self->containers == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    while (PyDict_Next(self->dict, &pos, &key, &value)) {
        if (is_dunder(key))
            continue;
        if (PyDict_SetItem(self->saved, key, value) < 0)
            return -1;
        int kind;
        if (PyList_Check(value))
            kind = K_LIST;
        else if (PyDict_Check(value))
            kind = K_DICT;
        else if (PySet_Check(value))
            kind = K_SET;
        else if (PyByteArray_Check(value))
            kind = K_BYTEARRAY;
        else
            continue;
        Container *c = &self->containers[n++];
        self->ncontainers = n;
        c->kind = kind;
        c->name = Py_NewRef(key);
        c->obj = Py_NewRef(value);
        if (container_save(c) < 0)
            return -1;
#if HAVE_DICT_WATCHERS
        if (self->mode == FAST_WATCHER && kind == K_DICT && watch_add(value, &c->dirty, self) < 0)
            return -1;
#endif
    }
    self->tag = dict_tag(self->dict);
#if HAVE_DICT_WATCHERS
    if (self->mode == FAST_WATCHER && watch_add(self->dict, &self->dirty, self) < 0)
        return -1;
#endif
    return 0;
}

/* 1 if the container's contents differ from the saved copy, 0 if not, -1 on error. */
static int
container_changed(Container *c, int mode)
{
    PyObject *o = c->obj, *s = c->saved;
    switch (c->kind) {
    case K_LIST: {
        Py_ssize_t n = PyList_GET_SIZE(o);
        if (n != PyTuple_GET_SIZE(s))
            return 1;
        return n && memcmp(((PyListObject *)o)->ob_item, ((PyTupleObject *)s)->ob_item,
                           (size_t)n * sizeof(PyObject *)) != 0;
    }
    case K_DICT: {
        if (mode == FAST_WATCHER ? !c->dirty : mode == FAST_TAG && dict_tag(o) == c->tag)
            return 0;
        if (PyDict_GET_SIZE(o) != PyDict_GET_SIZE(s))
            return 1;
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (PyDict_Next(s, &pos, &key, &value)) {
            PyObject *now = PyDict_GetItemWithError(o, key);
            if (now != value)
                return PyErr_Occurred() ? -1 : 1;
        }
        c->tag = dict_tag(o); /* same contents (e.g. a key set and deleted): fast again */
        c->dirty = 0;
        return 0;
    }
    case K_SET: {
        Py_ssize_t n = PyTuple_GET_SIZE(s);
        if (PySet_GET_SIZE(o) != n)
            return 1;
        for (Py_ssize_t i = 0; i < n; i++) {
            int r = PySet_Contains(o, PyTuple_GET_ITEM(s, i));
            if (r <= 0)
                return r < 0 ? -1 : 1;
        }
        return 0;
    }
    case K_BYTEARRAY: {
        Py_ssize_t n = PyByteArray_GET_SIZE(o);
        if (n != PyBytes_GET_SIZE(s))
            return 1;
        return n && memcmp(PyByteArray_AS_STRING(o), PyBytes_AS_STRING(s), (size_t)n) != 0;
    }
    }
    return 0;
}

/* Put the saved contents back into the same object (aliases elsewhere stay consistent).
 * 0 on success, 1 if it could not be restored (a bytearray with live views), -1 on error. */
static int
container_restore(Container *c)
{
    PyObject *o = c->obj, *s = c->saved;
    switch (c->kind) {
    case K_LIST:
        if (PyList_SetSlice(o, 0, PyList_GET_SIZE(o), s) < 0)
            return -1;
        break;
    case K_DICT:
        PyDict_Clear(o);
        if (PyDict_Update(o, s) < 0)
            return -1;
        c->tag = dict_tag(o);
        c->dirty = 0; /* set by our own writes just now */
        break;
    case K_SET:
        if (PySet_Clear(o) < 0)
            return -1;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(s); i++)
            if (PySet_Add(o, PyTuple_GET_ITEM(s, i)) < 0)
                return -1;
        break;
    case K_BYTEARRAY:
        if (PyByteArray_GET_SIZE(o) != PyBytes_GET_SIZE(s) &&
            PyByteArray_Resize(o, PyBytes_GET_SIZE(s)) < 0) {
            if (PyErr_ExceptionMatches(PyExc_BufferError)) {
                PyErr_Clear();
                return 1;
            }
            return -1;
        }
        memcpy(PyByteArray_AS_STRING(o), PyBytes_AS_STRING(s), (size_t)PyBytes_GET_SIZE(s));
        break;
    }
    return 0;
}

static int
record(PyObject **changes, const char *kind, PyObject *name)
{
    if (*changes == NULL && (*changes = PyList_New(0)) == NULL)
        return -1;
    PyObject *item = Py_BuildValue("(sO)", kind, name);
    if (item == NULL)
        return -1;
    int r = PyList_Append(*changes, item);
    Py_DECREF(item);
    return r;
}

static int
append_name(PyObject **list, PyObject *key)
{
    if (*list == NULL && (*list = PyList_New(0)) == NULL)
        return -1;
    return PyList_Append(*list, key);
}

/* The one scan behind changed(), diff() and restore().
 * mode 0: stop at the first change, return 1/0.  mode 1: list changes.  mode 2: list and
 * restore.  Returns -1 on error, else the number of changes (mode 0: 0 or 1). */
static Py_ssize_t
guard_scan(GuardObject *self, int mode, PyObject **changes)
{
    Py_ssize_t count = 0;
    PyObject *key, *value;
    Py_ssize_t pos;

    int maybe_changed = self->mode == FAST_WATCHER ? self->dirty
                        : self->mode == FAST_TAG   ? dict_tag(self->dict) != self->tag
                                                   : 1;
    if (maybe_changed) {
        /* Something was stored in the module dict: compare bindings by identity. */
        PyObject *added = NULL, *rebound = NULL, *deleted = NULL;
        Py_ssize_t seen = 0;
        int err = 0;
        pos = 0;
        while (!err && PyDict_Next(self->dict, &pos, &key, &value)) {
            if (is_dunder(key))
                continue;
            PyObject *old = PyDict_GetItemWithError(self->saved, key);
            if (old == NULL) {
                if (PyErr_Occurred()) {
                    err = 1;
                    break;
                }
                if (PyModule_Check(value)) {
                    /* "import pkg.sub" binds sub on pkg: the import system's doing. */
                    continue;
                }
                count++;
                if (mode == 0)
                    return 1;
                err = record(changes, "added", key) < 0 ||
                      (mode == 2 && append_name(&added, key) < 0);
            } else {
                seen++;
                if (old != value) {
                    count++;
                    if (mode == 0)
                        return 1;
                    err = record(changes, "rebound", key) < 0 ||
                          (mode == 2 && append_name(&rebound, key) < 0);
                }
            }
        }
        if (!err && seen != PyDict_GET_SIZE(self->saved)) {
            pos = 0;
            while (!err && PyDict_Next(self->saved, &pos, &key, &value)) {
                int has = PyDict_Contains(self->dict, key);
                if (has < 0) {
                    err = 1;
                } else if (!has) {
                    count++;
                    if (mode == 0)
                        return 1;
                    err = record(changes, "deleted", key) < 0 ||
                          (mode == 2 && append_name(&deleted, key) < 0);
                }
            }
        }
        if (!err && mode == 2) {
            for (Py_ssize_t i = 0; !err && added && i < PyList_GET_SIZE(added); i++)
                err = PyDict_DelItem(self->dict, PyList_GET_ITEM(added, i)) < 0;
            for (int which = 0; which < 2 && !err; which++) {
                PyObject *names = which ? deleted : rebound;
                for (Py_ssize_t i = 0; !err && names && i < PyList_GET_SIZE(names); i++) {
                    PyObject *name = PyList_GET_ITEM(names, i);
                    err = PyDict_SetItem(self->dict, name, PyDict_GetItem(self->saved, name)) < 0;
                }
            }
        }
        Py_XDECREF(added);
        Py_XDECREF(rebound);
        Py_XDECREF(deleted);
        if (err)
            return -1;
        if (count == 0 || mode == 2) {
            self->tag = dict_tag(self->dict); /* checked (or restored): fast path again */
            self->dirty = 0;
        }
    }

    for (Py_ssize_t i = 0; i < self->ncontainers; i++) {
        Container *c = &self->containers[i];
        int r = container_changed(c, self->mode);
        if (r < 0)
            return -1;
        if (!r)
            continue;
        count++;
        if (mode == 0)
            return 1;
        if (mode == 2) {
            r = container_restore(c);
            if (r < 0)
                return -1;
            if (record(changes, r ? "not restored" : "mutated", c->name) < 0)
                return -1;
        } else if (record(changes, "mutated", c->name) < 0) {
            return -1;
        }
    }
    return count;
}

static PyObject *
changes_result(Py_ssize_t n, PyObject *changes)
{
    if (n < 0) {
        Py_XDECREF(changes);
        return NULL;
    }
    if (changes == NULL)
        return PyTuple_New(0); /* the shared empty tuple: no allocation on the fast path */
    PyObject *t = PyList_AsTuple(changes);
    Py_DECREF(changes);
    return t;
}

static int
guard_init(GuardObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"module", NULL};
    PyObject *module;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:ModuleGuard", kwlist, &module))
        return -1;
    if (!PyModule_Check(module)) {
        PyErr_Format(PyExc_TypeError, "ModuleGuard needs a module, got %R", module);
        return -1;
    }
    PyObject *dict = PyModule_GetDict(module);
    Py_XSETREF(self->module, Py_NewRef(module));
    Py_XSETREF(self->dict, Py_NewRef(dict));
    return guard_take(self);
}

static int
guard_ready(GuardObject *self)
{
    if (self->dict == NULL || self->saved == NULL) {
        PyErr_SetString(PyExc_ValueError, "ModuleGuard was not initialised with a module");
        return 0;
    }
    return 1;
}

static PyObject *
guard_changed(GuardObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!guard_ready(self))
        return NULL;
    Py_ssize_t r = guard_scan(self, 0, NULL);
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r > 0);
}

static PyObject *
guard_diff(GuardObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *changes = NULL;
    if (!guard_ready(self))
        return NULL;
    Py_ssize_t n = guard_scan(self, 1, &changes);
    return changes_result(n, changes);
}

static PyObject *
guard_restore(GuardObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *changes = NULL;
    if (!guard_ready(self))
        return NULL;
    Py_ssize_t n = guard_scan(self, 2, &changes);
    return changes_result(n, changes);
}

static PyObject *
guard_retake(GuardObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->dict == NULL) {
        PyErr_SetString(PyExc_ValueError, "ModuleGuard was not initialised with a module");
        return NULL;
    }
    if (guard_take(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
guard_get_names(GuardObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->saved ? PyDict_GET_SIZE(self->saved) : 0);
}

static PyObject *
guard_get_containers(GuardObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->ncontainers);
}

static PyObject *
guard_get_fast_check(GuardObject *self, void *Py_UNUSED(closure))
{
    return PyUnicode_FromString(fast_names[self->mode]);
}

static int
guard_traverse(GuardObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->module);
    Py_VISIT(self->dict);
    Py_VISIT(self->saved);
    for (Py_ssize_t i = 0; i < self->ncontainers; i++) {
        Py_VISIT(self->containers[i].obj);
        Py_VISIT(self->containers[i].saved);
    }
    return 0;
}

static int
guard_clear(GuardObject *self)
{
    guard_clear_snapshot(self);
    Py_CLEAR(self->module);
    Py_CLEAR(self->dict);
    return 0;
}

static void
guard_dealloc(GuardObject *self)
{
    PyObject_GC_UnTrack(self);
    guard_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
guard_repr(GuardObject *self)
{
    return PyUnicode_FromFormat("<ModuleGuard %R: %zd names, %zd containers>", self->module,
                                self->saved ? PyDict_GET_SIZE(self->saved) : 0,
                                self->ncontainers);
}

static PyMethodDef guard_methods[] = {
    {"changed", (PyCFunction)guard_changed, METH_NOARGS,
     "changed() -> bool: has the module's state changed since the snapshot?"},
    {"diff", (PyCFunction)guard_diff, METH_NOARGS,
     "diff() -> tuple of (kind, name): what changed (added, deleted, rebound, mutated)."},
    {"restore", (PyCFunction)guard_restore, METH_NOARGS,
     "restore() -> tuple of (kind, name): put the snapshot back and say what was undone."},
    {"retake", (PyCFunction)guard_retake, METH_NOARGS,
     "retake(): take a new snapshot of the module as it is now."},
    {NULL}};

static PyMemberDef guard_members[] = {
    {"module", T_OBJECT, offsetof(GuardObject, module), READONLY, "the guarded module"},
    {NULL}};

static PyGetSetDef guard_getset[] = {
    {"names", (getter)guard_get_names, NULL, "number of bindings in the snapshot", NULL},
    {"containers", (getter)guard_get_containers, NULL,
     "number of top-level containers whose contents are saved", NULL},
    {"fast_check", (getter)guard_get_fast_check, NULL,
     "how this snapshot sees 'nothing changed': dict_watcher, version_tag or compare", NULL},
    {NULL}};

static PyTypeObject GuardType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pyweb_regions._regions.ModuleGuard",
    .tp_doc = "ModuleGuard(module): snapshot a module now; check and restore it later.",
    .tp_basicsize = sizeof(GuardObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)guard_init,
    .tp_dealloc = (destructor)guard_dealloc,
    .tp_traverse = (traverseproc)guard_traverse,
    .tp_clear = (inquiry)guard_clear,
    .tp_repr = (reprfunc)guard_repr,
    .tp_methods = guard_methods,
    .tp_members = guard_members,
    .tp_getset = guard_getset,
};

/* ======================================================================================
 * Arena: region pages from a process-wide free list
 * ====================================================================================== */

#define PAGE_SIZE ((Py_ssize_t)16384)
#define FREE_MAX 256 /* pages kept on the free list; more go back to malloc */

typedef struct Page {
    struct Page *next;
    Py_ssize_t used;
    char data[];
} Page;

/* The free list and its statistics (GIL-protected, like SMLserver's mutex, §5.2). */
static Page *free_pages;
static Py_ssize_t free_count, pages_in_use, pages_high_water, pool_hits, pool_misses;

static Page *
page_get(void)
{
    Page *p = free_pages;
    if (p != NULL) {
        free_pages = p->next;
        free_count--;
        pool_hits++;
    } else {
        p = PyMem_RawMalloc(sizeof(Page) + (size_t)PAGE_SIZE);
        if (p == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        pool_misses++;
    }
    p->next = NULL;
    p->used = 0;
    if (++pages_in_use > pages_high_water)
        pages_high_water = pages_in_use;
    return p;
}

/* Give back a chain of n pages (first..last): one splice, then trim if over the cap. */
static void
pages_put(Page *first, Page *last, Py_ssize_t n)
{
    if (first == NULL)
        return;
    last->next = free_pages;
    free_pages = first;
    free_count += n;
    pages_in_use -= n;
    while (free_count > FREE_MAX) {
        Page *p = free_pages;
        free_pages = p->next;
        PyMem_RawFree(p);
        free_count--;
    }
}

typedef struct {
    PyObject_HEAD
    Page *head, *tail;
    Py_ssize_t npages, max_pages, size, exports, generation, high_water;
    char *win; /* the window the next buffer export shows (set just before) */
    Py_ssize_t win_len;
    int win_readonly;
    int closed;
    /* head == tail == NULL, npages == 0 when the arena is empty: pages are taken from the
       free list by the first write and all go back on reset, so an idle keep-alive
       connection holds an arena object but no page. max_pages == 0: not initialised. */
} ArenaObject;

/* Free bytes in the last page; 0 when there is no page. */
#define ARENA_ROOM(self) ((self)->tail ? PAGE_SIZE - (self)->tail->used : 0)

/* What memoryview(arena) of an empty arena points at. */
static char empty_buffer[1];

typedef struct {
    Page *tail;
    Py_ssize_t used, npages, size;
} Mark;

static int
arena_ok(ArenaObject *self)
{
    if (self->closed || self->max_pages == 0) {
        PyErr_SetString(PyExc_ValueError, self->closed ? "the arena is closed"
                                                       : "the arena was not initialised");
        return 0;
    }
    return 1;
}

static int
arena_add_page(ArenaObject *self)
{
    if (self->npages >= self->max_pages) {
        PyErr_Format(PyExc_MemoryError,
                     "arena full: %zd pages of %zd bytes in use, the limit is %zd pages",
                     self->npages, PAGE_SIZE, self->max_pages);
        return -1;
    }
    Page *p = page_get();
    if (p == NULL)
        return -1;
    if (self->tail)
        self->tail->next = p;
    else
        self->head = p;
    self->tail = p;
    if (++self->npages > self->high_water)
        self->high_water = self->npages;
    return 0;
}

static void
arena_truncate(ArenaObject *self, Mark m)
{
    /* Undo a partial write: pages added since the mark go back to the free list. */
    if (m.tail == NULL) { /* the arena was empty: every page goes back */
        if (self->head)
            pages_put(self->head, self->tail, self->npages);
        self->head = self->tail = NULL;
        self->npages = self->size = 0;
        return;
    }
    if (m.tail->next) {
        Page *first = m.tail->next, *last = first;
        Py_ssize_t n = 1;
        while (last->next) {
            last = last->next;
            n++;
        }
        pages_put(first, last, n);
        m.tail->next = NULL;
    }
    self->tail = m.tail;
    self->tail->used = m.used;
    self->npages = m.npages;
    self->size = m.size;
}

static int
arena_copy(ArenaObject *self, const char *src, Py_ssize_t n)
{
    while (n > 0) {
        Py_ssize_t room = ARENA_ROOM(self);
        if (room == 0) {
            if (arena_add_page(self) < 0)
                return -1;
            room = PAGE_SIZE;
        }
        Py_ssize_t k = n < room ? n : room;
        memcpy(self->tail->data + self->tail->used, src, (size_t)k);
        self->tail->used += k;
        self->size += k;
        src += k;
        n -= k;
    }
    return 0;
}

/* Append one fragment (bytes-like, or str written as UTF-8). */
static int
arena_write_one(ArenaObject *self, PyObject *obj)
{
    if (PyBytes_CheckExact(obj))
        return arena_copy(self, PyBytes_AS_STRING(obj), PyBytes_GET_SIZE(obj));
    if (PyUnicode_Check(obj)) {
        if (PyUnicode_READY(obj) < 0)
            return -1;
        if (PyUnicode_IS_ASCII(obj))
            return arena_copy(self, (const char *)PyUnicode_DATA(obj), PyUnicode_GET_LENGTH(obj));
        /* Encode to a temporary, not PyUnicode_AsUTF8: that caches a copy on the str. */
        PyObject *b = PyUnicode_AsUTF8String(obj);
        if (b == NULL)
            return -1;
        int r = arena_copy(self, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b));
        Py_DECREF(b);
        return r;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Format(PyExc_TypeError, "arena.write() takes bytes-like objects or str, not %.100s",
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    int r = arena_copy(self, view.buf, view.len);
    PyBuffer_Release(&view);
    return r;
}

static Mark
arena_mark(ArenaObject *self)
{
    Mark m = {self->tail, self->tail ? self->tail->used : 0, self->npages, self->size};
    return m;
}

static PyObject *
arena_write(ArenaObject *self, PyObject *obj)
{
    if (!arena_ok(self))
        return NULL;
    Mark m = arena_mark(self);
    if (arena_write_one(self, obj) < 0) {
        arena_truncate(self, m); /* never a partial write */
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
arena_writev(ArenaObject *self, PyObject *seq)
{
    if (!arena_ok(self))
        return NULL;
    PyObject *fast = PySequence_Fast(seq, "arena.writev() takes a sequence of fragments");
    if (fast == NULL)
        return NULL;
    Mark m = arena_mark(self);
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
        PyObject *item = Py_NewRef(PySequence_Fast_GET_ITEM(fast, i));
        int r = arena_write_one(self, item);
        Py_DECREF(item);
        if (r < 0) {
            arena_truncate(self, m);
            Py_DECREF(fast);
            return NULL;
        }
    }
    Py_DECREF(fast);
    Py_RETURN_NONE;
}

/* A memoryview of [ptr, ptr+len): every view is a real buffer export of the arena. */
static PyObject *
arena_window(ArenaObject *self, char *ptr, Py_ssize_t len, int readonly)
{
    self->win = ptr;
    self->win_len = len;
    self->win_readonly = readonly;
    PyObject *mv = PyMemoryView_FromObject((PyObject *)self);
    self->win = NULL;
    return mv;
}

static PyObject *
arena_tail(ArenaObject *self, PyObject *args)
{
    Py_ssize_t want = 1;
    if (!PyArg_ParseTuple(args, "|n:tail", &want) || !arena_ok(self))
        return NULL;
    if (want < 1 || want > PAGE_SIZE) {
        PyErr_Format(PyExc_ValueError, "tail(%zd): between 1 and the page size (%zd) bytes",
                     want, PAGE_SIZE);
        return NULL;
    }
    if (ARENA_ROOM(self) < want && arena_add_page(self) < 0)
        return NULL;
    return arena_window(self, self->tail->data + self->tail->used, PAGE_SIZE - self->tail->used,
                        0);
}

static PyObject *
arena_commit(ArenaObject *self, PyObject *arg)
{
    if (!arena_ok(self))
        return NULL;
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred())
        return NULL;
    if (n < 0 || n > ARENA_ROOM(self)) {
        PyErr_Format(PyExc_ValueError, "commit(%zd): the tail has %zd free bytes", n,
                     ARENA_ROOM(self));
        return NULL;
    }
    if (n > 0) {
        self->tail->used += n;
        self->size += n;
    }
    Py_RETURN_NONE;
}

static PyObject *
arena_views(ArenaObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!arena_ok(self))
        return NULL;
    PyObject *list = PyList_New(0);
    if (list == NULL)
        return NULL;
    for (Page *p = self->head; p; p = p->next) {
        if (p->used == 0)
            continue;
        PyObject *mv = arena_window(self, p->data, p->used, 1);
        if (mv == NULL || PyList_Append(list, mv) < 0) {
            Py_XDECREF(mv);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(mv);
    }
    return list;
}

/* Most pages one send() hands to writev: a batch; the caller loops for the rest. */
#define SEND_IOV 64

/* send(fd, start=0): write the contents from byte `start` on with one writev(2), the way
   Hop sends a reply from its per-thread buffer (§3.1): no Python object per fragment. */
static PyObject *
arena_send(ArenaObject *self, PyObject *args)
{
    int fd;
    Py_ssize_t start = 0;
    if (!PyArg_ParseTuple(args, "i|n:send", &fd, &start) || !arena_ok(self))
        return NULL;
    if (start < 0 || start > self->size) {
        PyErr_Format(PyExc_ValueError, "send(fd, %zd): start must be between 0 and %zd", start,
                     self->size);
        return NULL;
    }
    struct iovec iov[SEND_IOV];
    int n = 0;
    Py_ssize_t skip = start;
    for (Page *p = self->head; p != NULL && n < SEND_IOV; p = p->next) {
        if (skip >= p->used) {
            skip -= p->used;
            continue;
        }
        iov[n].iov_base = p->data + skip;
        iov[n].iov_len = (size_t)(p->used - skip);
        skip = 0;
        n++;
    }
    if (n == 0)
        return PyLong_FromLong(0);
    ssize_t r;
    /* The kernel reads the pages without the GIL: count it as an export, so a reset() from
       another thread is refused instead of freeing pages under writev. */
    self->exports++;
    do {
        Py_BEGIN_ALLOW_THREADS
        r = writev(fd, iov, n);
        Py_END_ALLOW_THREADS
    } while (r < 0 && errno == EINTR && PyErr_CheckSignals() == 0);
    self->exports--;
    if (r < 0) {
        if (!PyErr_Occurred()) /* EAGAIN becomes BlockingIOError, EPIPE BrokenPipeError */
            PyErr_SetFromErrno(PyExc_OSError);
        return NULL;
    }
    return PyLong_FromSsize_t(r);
}

/* recv(fd) -> n: one read(2) from fd into the free space of the last page (a new page if it
   is full), committed: Hop's per-thread input buffer (§3.1) in one call, with no memoryview
   or bytes object made. 0 means end of file. When nothing is there (EAGAIN: BlockingIOError)
   or the read fails, nothing is committed and a page taken for the read goes back. */
static PyObject *
arena_recv(ArenaObject *self, PyObject *arg)
{
    int fd = PyObject_AsFileDescriptor(arg); /* an int, or an object with fileno() */
    if (fd < 0 || !arena_ok(self))
        return NULL;
    Mark m = arena_mark(self);
    if (ARENA_ROOM(self) == 0 && arena_add_page(self) < 0)
        return NULL;
    Page *p = self->tail;
    ssize_t r;
    /* The kernel writes into the page without the GIL: an export, as in send(). */
    self->exports++;
    do {
        Py_BEGIN_ALLOW_THREADS
        r = read(fd, p->data + p->used, (size_t)(PAGE_SIZE - p->used));
        Py_END_ALLOW_THREADS
    } while (r < 0 && errno == EINTR && PyErr_CheckSignals() == 0);
    self->exports--;
    if (r < 0) {
        if (!PyErr_Occurred())
            PyErr_SetFromErrno(PyExc_OSError);
        arena_truncate(self, m);
        return NULL;
    }
    if (r == 0) {
        arena_truncate(self, m); /* end of file: the page goes back if it was taken for this */
        return PyLong_FromLong(0);
    }
    p->used += r;
    self->size += r;
    return PyLong_FromSsize_t(r);
}

static PyObject *
arena_getvalue(ArenaObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!arena_ok(self))
        return NULL;
    PyObject *b = PyBytes_FromStringAndSize(NULL, self->size);
    if (b == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(b);
    for (Page *p = self->head; p; p = p->next) {
        memcpy(out, p->data, (size_t)p->used);
        out += p->used;
    }
    return b;
}

static int
arena_refuse_if_exported(ArenaObject *self, const char *what)
{
    if (self->exports > 0) {
        PyErr_Format(PyExc_BufferError, "cannot %s arena: %zd exported view(s) still alive", what,
                     self->exports);
        return -1;
    }
    return 0;
}

static PyObject *
arena_reset(ArenaObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!arena_ok(self) || arena_refuse_if_exported(self, "reset") < 0)
        return NULL;
    /* O(1): splice the whole page list onto the free list. */
    if (self->head)
        pages_put(self->head, self->tail, self->npages);
    self->head = self->tail = NULL;
    self->npages = 0;
    self->size = 0;
    self->generation++;
    Py_RETURN_NONE;
}

static PyObject *
arena_close(ArenaObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->closed || self->max_pages == 0) {
        self->closed = 1;
        Py_RETURN_NONE;
    }
    if (arena_refuse_if_exported(self, "close") < 0)
        return NULL;
    if (self->head)
        pages_put(self->head, self->tail, self->npages);
    self->head = self->tail = NULL;
    self->npages = self->size = 0;
    self->closed = 1;
    Py_RETURN_NONE;
}

static int
arena_init(ArenaObject *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"max_pages", NULL};
    Py_ssize_t max_pages = 64;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n:Arena", kwlist, &max_pages))
        return -1;
    if (max_pages < 1) {
        PyErr_Format(PyExc_ValueError, "Arena(max_pages=%zd): at least 1 page", max_pages);
        return -1;
    }
    if (self->max_pages != 0) {
        PyErr_SetString(PyExc_RuntimeError, "Arena.__init__ called twice");
        return -1;
    }
    self->max_pages = max_pages;
    return 0;
}

static void
arena_dealloc(ArenaObject *self)
{
    /* exports is 0 here: every view holds a reference to the arena. */
    if (!self->closed && self->head)
        pages_put(self->head, self->tail, self->npages);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
arena_getbuffer(ArenaObject *self, Py_buffer *view, int flags)
{
    char *ptr = self->win;
    Py_ssize_t len = self->win_len;
    int readonly = self->win_readonly;
    if (ptr == NULL) { /* memoryview(arena): the contents, when they are contiguous */
        if (self->closed || self->max_pages == 0 || self->npages > 1) {
            PyErr_SetString(PyExc_BufferError,
                            self->npages > 1 ? "the arena spans several pages: use views()"
                                             : "the arena is closed");
            return -1;
        }
        ptr = self->head ? self->head->data : empty_buffer;
        len = self->head ? self->head->used : 0;
        readonly = 1;
    }
    if (PyBuffer_FillInfo(view, (PyObject *)self, ptr, len, readonly, flags) < 0)
        return -1;
    self->exports++;
    return 0;
}

static void
arena_releasebuffer(ArenaObject *self, Py_buffer *Py_UNUSED(view))
{
    self->exports--;
}

static Py_ssize_t
arena_len(ArenaObject *self)
{
    return self->size;
}

static PyBufferProcs arena_as_buffer = {(getbufferproc)arena_getbuffer,
                                        (releasebufferproc)arena_releasebuffer};
static PySequenceMethods arena_as_sequence = {.sq_length = (lenfunc)arena_len};

static PyMethodDef arena_methods[] = {
    {"write", (PyCFunction)arena_write, METH_O,
     "write(data): append bytes-like data or a str (UTF-8); MemoryError when full, nothing "
     "written."},
    {"writev", (PyCFunction)arena_writev, METH_O,
     "writev(fragments): append every fragment, all or nothing."},
    {"tail", (PyCFunction)arena_tail, METH_VARARGS,
     "tail(min=1) -> writable memoryview of the free space of the last page (a new page if it "
     "has fewer than min bytes free): sock.recv_into(arena.tail()), then commit(n)."},
    {"commit", (PyCFunction)arena_commit, METH_O, "commit(n): n bytes were written into tail()."},
    {"recv", (PyCFunction)arena_recv, METH_O,
     "recv(fd) -> int: one read from fd (or a socket) into the last page's free space (a new page if it is "
     "full), committed; 0 at end of file; BlockingIOError when nothing is there."},
    {"views", (PyCFunction)arena_views, METH_NOARGS,
     "views() -> list of read-only memoryviews of the contents, one per page (for sendmsg)."},
    {"send", (PyCFunction)arena_send, METH_VARARGS,
     "send(fd, start=0) -> bytes written: the contents from byte start on, with one writev(2) "
     "on the file descriptor fd (BlockingIOError when it would block)."},
    {"getvalue", (PyCFunction)arena_getvalue, METH_NOARGS, "getvalue() -> bytes: a copy."},
    {"reset", (PyCFunction)arena_reset, METH_NOARGS,
     "reset(): empty the arena in O(1), pages back to the free list; BufferError while a view "
     "is alive."},
    {"close", (PyCFunction)arena_close, METH_NOARGS,
     "close(): every page back to the free list; BufferError while a view is alive."},
    {NULL}};

static PyMemberDef arena_members[] = {
    {"pages", T_PYSSIZET, offsetof(ArenaObject, npages), READONLY, "pages owned now"},
    {"max_pages", T_PYSSIZET, offsetof(ArenaObject, max_pages), READONLY, "the growth limit"},
    {"exports", T_PYSSIZET, offsetof(ArenaObject, exports), READONLY, "views alive"},
    {"generation", T_PYSSIZET, offsetof(ArenaObject, generation), READONLY,
     "how many times it was reset"},
    {"high_water", T_PYSSIZET, offsetof(ArenaObject, high_water), READONLY,
     "the most pages it ever owned"},
    {NULL}};

static PyTypeObject ArenaType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "pyweb_regions._regions.Arena",
    .tp_doc = "Arena(max_pages=64): a request heap for bytes, in region pages.",
    .tp_basicsize = sizeof(ArenaObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)arena_init,
    .tp_dealloc = (destructor)arena_dealloc,
    .tp_as_buffer = &arena_as_buffer,
    .tp_as_sequence = &arena_as_sequence,
    .tp_methods = arena_methods,
    .tp_members = arena_members,
};

static PyObject *
pool_stats(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n}", "page_size", PAGE_SIZE, "free", free_count,
                         "in_use", pages_in_use, "high_water", pages_high_water, "hits",
                         pool_hits, "misses", pool_misses);
}

/* ======================================================================================
 * Allocation accounting (Hop §3.1's BglMem)
 * ====================================================================================== */

static PyMemAllocatorEx orig_raw, orig_mem, orig_obj;
static int hook_installed;
static volatile int counting;
/* Per-thread counters: no atomics, and a threaded server gets per-thread attribution. */
static __thread uint64_t t_bytes, t_calls;
/* Set while a MEM/OBJ call runs: pymalloc's fall-through to RAW (>512 B) is not counted
 * a second time. */
static __thread int t_nested;
static __thread int t_probe;

#define COUNT(n)                                                                               \
    do {                                                                                       \
        if ((counting || t_probe) && !t_nested) {                                              \
            t_bytes += (n);                                                                    \
            t_calls++;                                                                         \
        }                                                                                      \
    } while (0)

static void *
h_malloc(void *ctx, size_t size)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(size);
    t_nested++;
    void *p = a->malloc(a->ctx, size);
    t_nested--;
    return p;
}

static void *
h_calloc(void *ctx, size_t nelem, size_t elsize)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(nelem * elsize);
    t_nested++;
    void *p = a->calloc(a->ctx, nelem, elsize);
    t_nested--;
    return p;
}

static void *
h_realloc(void *ctx, void *ptr, size_t size)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(size);
    t_nested++;
    void *p = a->realloc(a->ctx, ptr, size);
    t_nested--;
    return p;
}

static void
h_free(void *ctx, void *ptr)
{
    PyMemAllocatorEx *a = ctx;
    t_nested++;
    a->free(a->ctx, ptr);
    t_nested--;
}

/* RAW: counted only when called directly, not from inside a MEM/OBJ call. */
static void *
h_raw_malloc(void *ctx, size_t size)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(size);
    return a->malloc(a->ctx, size);
}

static void *
h_raw_calloc(void *ctx, size_t nelem, size_t elsize)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(nelem * elsize);
    return a->calloc(a->ctx, nelem, elsize);
}

static void *
h_raw_realloc(void *ctx, void *ptr, size_t size)
{
    PyMemAllocatorEx *a = ctx;
    COUNT(size);
    return a->realloc(a->ctx, ptr, size);
}

static void
h_raw_free(void *ctx, void *ptr)
{
    PyMemAllocatorEx *a = ctx;
    a->free(a->ctx, ptr);
}

/* Is our hook still in the chain?  Allocate once with counting forced on and look. */
static int
hook_alive(void)
{
    if (!hook_installed)
        return 0;
    uint64_t b = t_bytes, c = t_calls;
    t_probe = 1;
    void *p = PyObject_Malloc(8);
    void *q = PyMem_Malloc(8);
    t_probe = 0;
    PyObject_Free(p);
    PyMem_Free(q);
    int alive = t_calls >= c + 2; /* tracemalloc, if it wraps us, may add its own */
    t_bytes = b;
    t_calls = c;
    return alive;
}

static PyObject *
alloc_install(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    if (hook_installed)
        return PyBool_FromLong(hook_alive());
    /* Wrap, never replace (gh-96997): memory allocated before keeps its allocator. */
    PyMemAllocatorEx raw, mem, obj;
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &orig_raw);
    PyMem_GetAllocator(PYMEM_DOMAIN_MEM, &orig_mem);
    PyMem_GetAllocator(PYMEM_DOMAIN_OBJ, &orig_obj);
    raw = (PyMemAllocatorEx){&orig_raw, h_raw_malloc, h_raw_calloc, h_raw_realloc, h_raw_free};
    mem = (PyMemAllocatorEx){&orig_mem, h_malloc, h_calloc, h_realloc, h_free};
    obj = (PyMemAllocatorEx){&orig_obj, h_malloc, h_calloc, h_realloc, h_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &raw);
    PyMem_SetAllocator(PYMEM_DOMAIN_MEM, &mem);
    PyMem_SetAllocator(PYMEM_DOMAIN_OBJ, &obj);
    hook_installed = 1;
    Py_RETURN_TRUE;
}

static PyObject *
alloc_installed(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(hook_alive());
}

static PyObject *
alloc_enable(PyObject *Py_UNUSED(m), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    if (on && !hook_installed) {
        PyErr_SetString(PyExc_RuntimeError, "alloc_enable(True): call alloc_install() first");
        return NULL;
    }
    counting = on;
    Py_RETURN_NONE;
}

static PyObject *
alloc_counts(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    /* Read both before building the tuple, whose allocation would count itself. */
    uint64_t b = t_bytes, c = t_calls;
    return Py_BuildValue("(KK)", (unsigned long long)b, (unsigned long long)c);
}

static PyObject *
alloc_reset_counts(PyObject *Py_UNUSED(m), PyObject *Py_UNUSED(ignored))
{
    t_bytes = 0;
    t_calls = 0;
    Py_RETURN_NONE;
}

/* utf8_length(fragments): how many bytes the str fragments take in UTF-8, without encoding
   them: a reply's Content-Length is known before its body is written into the arena. */
static PyObject *
utf8_length(PyObject *Py_UNUSED(module), PyObject *seq)
{
    PyObject *fast = PySequence_Fast(seq, "utf8_length() takes a sequence of str");
    if (fast == NULL)
        return NULL;
    Py_ssize_t total = 0;
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(fast); i++) {
        PyObject *s = PySequence_Fast_GET_ITEM(fast, i);
        if (!PyUnicode_Check(s) || PyUnicode_READY(s) < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_TypeError, "utf8_length() takes str fragments, not %.100s",
                             Py_TYPE(s)->tp_name);
            Py_DECREF(fast);
            return NULL;
        }
        Py_ssize_t n = PyUnicode_GET_LENGTH(s);
        if (PyUnicode_IS_ASCII(s)) { /* the common case: one byte per character */
            total += n;
            continue;
        }
        int kind = PyUnicode_KIND(s);
        const void *data = PyUnicode_DATA(s);
        for (Py_ssize_t j = 0; j < n; j++) {
            Py_UCS4 c = PyUnicode_READ(kind, data, j);
            if (c >= 0xD800 && c <= 0xDFFF) {
                /* A lone surrogate cannot be sent: raise what str.encode() raises, here,
                   while the page is still running, rather than later in the server. */
                PyObject *b = PyUnicode_AsUTF8String(s);
                Py_XDECREF(b);
                Py_DECREF(fast);
                return NULL;
            }
            total += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
        }
    }
    Py_DECREF(fast);
    return PyLong_FromSsize_t(total);
}

/* any_changed(guards) -> bool: has any guard among the mapping's values seen its module
 * change?  The site asks this after every request; one call checks every guard of the site
 * (a ModuleGuard is one flag or tag test) instead of a Python loop that costs a call per
 * guarded module.  The values are read with PyDict_Next and held while each is checked;
 * a value that is not a ModuleGuard of this module (a fallback guard, a test's stand-in) is
 * asked through its own changed() method, so the answer is always that of the guards. */
static int
one_changed(PyObject *guard)
{
    if (Py_IS_TYPE(guard, &GuardType)) {
        if (!guard_ready((GuardObject *)guard))
            return -1;
        Py_ssize_t r = guard_scan((GuardObject *)guard, 0, NULL);
        return r < 0 ? -1 : r > 0;
    }
    PyObject *answer = PyObject_CallMethod(guard, "changed", NULL);
    if (answer == NULL)
        return -1;
    int r = PyObject_IsTrue(answer);
    Py_DECREF(answer);
    return r;
}

static PyObject *
any_changed(PyObject *Py_UNUSED(module), PyObject *guards)
{
    int r = 0;
    if (PyDict_CheckExact(guards)) {
        PyObject *key, *value;
        Py_ssize_t pos = 0;
        while (r == 0 && PyDict_Next(guards, &pos, &key, &value)) {
            Py_INCREF(value); /* held: a changed() of a stand-in could change the dict */
            r = one_changed(value);
            Py_DECREF(value);
        }
    } else {
        PyObject *values = PyObject_CallMethod(guards, "values", NULL);
        PyObject *it = values ? PyObject_GetIter(values) : NULL;
        Py_XDECREF(values);
        if (it == NULL)
            return NULL;
        PyObject *value;
        while (r == 0 && (value = PyIter_Next(it)) != NULL) {
            r = one_changed(value);
            Py_DECREF(value);
        }
        Py_DECREF(it);
        if (r == 0 && PyErr_Occurred())
            return NULL;
    }
    if (r < 0)
        return NULL;
    return PyBool_FromLong(r);
}

/* _set_fast_check(name) -> previous name: the mechanism for snapshots taken from now on
 * (guards already taken keep theirs). For the tests, which run every mechanism available. */
static PyObject *
set_fast_check(PyObject *Py_UNUSED(module), PyObject *arg)
{
    const char *name = PyUnicode_Check(arg) ? PyUnicode_AsUTF8(arg) : NULL;
    int mode = -1;
    for (int i = 0; name && i < 3; i++)
        if (strcmp(name, fast_names[i]) == 0)
            mode = i;
    if (mode < 0 || (mode == FAST_TAG && !HAVE_VERSION_TAG) ||
        (mode == FAST_WATCHER && watcher_id < 0)) {
        PyErr_Format(PyExc_ValueError, "fast check %R is not available on this Python", arg);
        return NULL;
    }
    PyObject *previous = PyUnicode_FromString(fast_names[fast_mode]);
    if (previous != NULL)
        fast_mode = mode;
    return previous;
}

static PyMethodDef module_methods[] = {
    {"any_changed", any_changed, METH_O,
     "any_changed(guards) -> bool: has the module of any ModuleGuard among the mapping's "
     "values changed? (One call for all of a site's guards.)"},
    {"_set_fast_check", set_fast_check, METH_O,
     "_set_fast_check(name) -> str: the mechanism new snapshots use (tests); the old one."},
    {"utf8_length", utf8_length, METH_O,
     "utf8_length(fragments) -> int: the UTF-8 length of a sequence of str, not encoded."},
    {"pool_stats", pool_stats, METH_NOARGS,
     "pool_stats() -> dict: page_size, free, in_use, high_water, hits, misses."},
    {"alloc_install", alloc_install, METH_NOARGS,
     "alloc_install() -> bool: wrap the MEM, OBJ and RAW allocators (once; idempotent)."},
    {"alloc_installed", alloc_installed, METH_NOARGS,
     "alloc_installed() -> bool: is the hook still called (tracemalloc.stop() can unhook it "
     "if tracemalloc was started first)?"},
    {"alloc_enable", alloc_enable, METH_O, "alloc_enable(flag): count from now on, or stop."},
    {"alloc_counts", alloc_counts, METH_NOARGS,
     "alloc_counts() -> (bytes, calls) allocated by the calling thread while counting."},
    {"alloc_reset_counts", alloc_reset_counts, METH_NOARGS,
     "alloc_reset_counts(): the calling thread's counters back to zero."},
    {NULL}};

static struct PyModuleDef regions_module = {
    PyModuleDef_HEAD_INIT, "pyweb_regions._regions",
    "Arenas, module snapshots and allocation counters in C (see pyweb_regions).", -1,
    module_methods};

PyMODINIT_FUNC
PyInit__regions(void)
{
    if (PyType_Ready(&GuardType) < 0 || PyType_Ready(&ArenaType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&regions_module);
    if (m == NULL)
        return NULL;
#if HAVE_DICT_WATCHERS
    /* One watcher for all guards; an interpreter has 8 ids (CPython reserves some). None
     * left: fall back to the version tag (3.12-3.13) or to comparing (3.14+). */
    if (watcher_id < 0) {
        watcher_id = PyDict_AddWatcher(guard_watch_callback);
        if (watcher_id < 0)
            PyErr_Clear();
    }
    if (watcher_id >= 0)
        fast_mode = FAST_WATCHER;
#endif
    if (PyModule_AddObjectRef(m, "ModuleGuard", (PyObject *)&GuardType) < 0 ||
        PyModule_AddObjectRef(m, "Arena", (PyObject *)&ArenaType) < 0 ||
        PyModule_AddIntConstant(m, "PAGE_SIZE", PAGE_SIZE) < 0 ||
        PyModule_AddIntConstant(m, "VERSION_TAG", fast_mode == FAST_TAG) < 0 ||
        PyModule_AddStringConstant(m, "FAST_CHECK", fast_names[fast_mode]) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
