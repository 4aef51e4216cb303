/* pyweb_regions._frame: the everyday reply head framed in C (RFC 9112 §4, §6; Hop §3.1).
 *
 * pyweb/protocol/response.py's frame_response is the framer; this is its fast path for the
 * reply that every page and service sends: a known status, header fields the Python code
 * has already checked and cached, a body of known length.  It writes exactly the bytes the
 * Python framer writes, into one bytes object (the head, and a small body behind it when
 * asked), and makes the same decisions (send_body, keep_alive).
 *
 * It checks nothing itself: it reuses the Python framer's caches, so every rule lives in
 * one place.
 *
 *   line_cache    (name, value) -> (line, kind): fields already validated by the Python
 *                 code (RFC 9110 §5.1 name a token, §5.5 value without CR, LF, NUL), and
 *                 the framing fields it drops (kind SKIP);
 *   status_lines  status -> "HTTP/1.1 200 OK\r\n";
 *   length_lines  length -> "Content-Length: 13\r\n";
 *   date_line()   the Date line of this second (RFC 9110 §6.6.1), asked for once a second.
 *
 * Whatever it is not sure of (a field not in the cache yet, a list instead of a tuple, an
 * unknown status, a streamed body, an attribute of an unexpected type...) it declines by
 * returning None, and the Python framer runs as if this did not exist: it validates, raises
 * the same ValueError, or caches the field so that the next reply takes the fast path.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/* The kinds of a cached field line, as in response.py (_PLAIN, _SKIP, _DATE, _SERVER). */
enum { KIND_PLAIN = 0, KIND_SKIP = 1, KIND_DATE = 2, KIND_SERVER = 3 };

/* A head has the status line, the fields, then at most Date, Server, Content-Length,
 * Connection, the empty line and the joined body: a reply with more fields than this
 * (rare) is framed by the Python code. */
#define MAX_FIELDS 48
#define MAX_PIECES (MAX_FIELDS + 8)

/* What configure() was given: the Python framer's caches and the ResponseHead type. */
static struct {
    PyObject *line_cache;   /* dict */
    PyObject *status_lines; /* dict */
    PyObject *length_lines; /* dict */
    PyObject *date_line;    /* callable: refreshes date_state, returns the line */
    PyObject *server_line;  /* bytes: "Server: pyweb\r\n" */
    PyTypeObject *head_type; /* ResponseHead, a 4-field NamedTuple */
    PyTypeObject *request_type; /* Request, whose slots are read at their offsets */
    long long second;       /* the second of `date`, this module's copy of date_state */
    PyObject *date;         /* bytes: the Date line of `second` */
} cfg;

static PyObject *line_close, *line_keep_alive, *line_end;

/* ------------------------------------------------------------------- the pieces of a head */

/* The bytes objects a head is joined from, each held by a strong reference: a dict lookup
 * can run Python code (a str subclass's __eq__) that changes the caches under us. */
typedef struct {
    PyObject *items[MAX_PIECES];
    int n;
    Py_ssize_t size;
} Pieces;

/* Add a bytes object (a new reference is taken). */
static void
pieces_add(Pieces *p, PyObject *line)
{
    Py_INCREF(line);
    p->items[p->n++] = line;
    p->size += PyBytes_GET_SIZE(line);
}

static void
pieces_clear(Pieces *p)
{
    for (int i = 0; i < p->n; i++)
        Py_DECREF(p->items[i]);
    p->n = 0;
}

/* The pieces joined into one new bytes object. */
static PyObject *
pieces_join(Pieces *p)
{
    PyObject *data = PyBytes_FromStringAndSize(NULL, p->size);
    if (data == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(data);
    for (int i = 0; i < p->n; i++) {
        Py_ssize_t k = PyBytes_GET_SIZE(p->items[i]);
        memcpy(out, PyBytes_AS_STRING(p->items[i]), (size_t)k);
        out += k;
    }
    return data;
}

/* A cached bytes value of `dict`, or NULL (not there, or not bytes: decline). Borrowed. */
static PyObject *
cached_bytes(PyObject *dict, PyObject *key)
{
    PyObject *line = PyDict_GetItemWithError(dict, key);
    if (line == NULL) {
        PyErr_Clear(); /* an unhashable key: the Python code raises what it must */
        return NULL;
    }
    return PyBytes_CheckExact(line) ? line : NULL;
}

/* ------------------------------------------------------------------------- the request */

/* The three attributes of a Request the framer reads.  Request is a slots dataclass: its
 * attributes are member descriptors at fixed offsets, read here directly (a tenth of what
 * getattr costs); another type of request is read with getattr. */
enum { ATTR_METHOD, ATTR_HTTP_VERSION, ATTR_KEEP_ALIVE, N_ATTRS };
static const char *const attr_names[N_ATTRS] = {"method", "http_version", "keep_alive"};
static PyObject *attr_strs[N_ATTRS];
static Py_ssize_t attr_offsets[N_ATTRS];

/* request.<attribute>, a new reference; NULL (nothing raised) when it is missing. */
static PyObject *
request_attr(PyObject *request, int which)
{
    if (Py_TYPE(request) == cfg.request_type) {
        PyObject *v = *(PyObject **)((char *)request + attr_offsets[which]);
        return Py_XNewRef(v); /* NULL: a slot never set */
    }
    PyObject *v = PyObject_GetAttr(request, attr_strs[which]);
    if (v == NULL)
        PyErr_Clear();
    return v;
}

/* The offset of a slot attribute `name` of `type` (a member descriptor holding an object),
 * or -1. */
static Py_ssize_t
slot_offset(PyTypeObject *type, PyObject *name)
{
    PyObject *descr = PyDict_GetItemWithError(type->tp_dict, name);
    if (descr == NULL || !Py_IS_TYPE(descr, &PyMemberDescr_Type))
        return -1;
    PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
    return member->type == T_OBJECT_EX ? member->offset : -1;
}

/* 1 if `s` is an exact str equal to the ASCII `text`, 0 if another str; -1 when it is not
 * an exact str (decline: the Python code compares it in its own way). */
static int
str_is(PyObject *s, const char *text)
{
    if (s == NULL || !PyUnicode_CheckExact(s))
        return -1;
    Py_ssize_t n = (Py_ssize_t)strlen(text);
    if (PyUnicode_GET_LENGTH(s) != n)
        return 0;
    if (PyUnicode_IS_COMPACT_ASCII(s))
        return memcmp(PyUnicode_DATA(s), text, (size_t)n) == 0;
    return PyUnicode_CompareWithASCIIString(s, text) == 0;
}

/* request.<attribute> as 0 or 1 when it is a bool; -1 otherwise (decline). */
static int
request_bool(PyObject *request, int which)
{
    PyObject *v = request_attr(request, which);
    int r = v == Py_True ? 1 : v == Py_False ? 0 : -1;
    Py_XDECREF(v);
    return r;
}

/* 1 if request.<attribute> is the str `text`, 0 if another str, -1 otherwise (decline). */
static int
request_str_is(PyObject *request, int which, const char *text)
{
    PyObject *v = request_attr(request, which);
    int r = str_is(v, text);
    Py_XDECREF(v);
    return r;
}

/* --------------------------------------------------------------------------- the Date */

/* The clock's second as Python's int(time.time()) sees it (CLOCK_REALTIME in nanoseconds,
 * as a double, truncated), so both framers turn to the next Date line at the same instant. */
static long long
clock_second(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    long long ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (ns % 1000000000LL == 0)
        return ns / 1000000000LL;
    return (long long)((double)ns / 1e9);
}

/* The Date line of this second (RFC 9110 §6.6.1: an origin server with a clock MUST send
 * Date).  Once a second it is asked of the Python date_line(), which formats it (or finds
 * it in date_state, formatted by the Python framer) and keeps it there.  Borrowed; NULL
 * with an error. */
static PyObject *
date_line(void)
{
    long long now = clock_second();
    if (now == cfg.second && cfg.date != NULL)
        return cfg.date;
    PyObject *line = PyObject_CallNoArgs(cfg.date_line);
    if (line == NULL)
        return NULL;
    if (!PyBytes_CheckExact(line)) {
        Py_DECREF(line);
        PyErr_SetString(PyExc_TypeError, "date_line() must return bytes");
        return NULL;
    }
    Py_XSETREF(cfg.date, line);
    cfg.second = now;
    return line;
}

/* --------------------------------------------------------------------------- the fields */

/* What the steps below return: done, declined (nothing raised), or an error raised. */
enum { DONE = 0, DECLINE = 1, ERROR = -1 };

/* The fields of the last replies, by address.  A page answers with the same tuple objects
 * on every reply (its Content-Type, the site's security headers), so a field seen before is
 * found by its address, without hashing the tuple and looking it up in line_cache (a fifth
 * of the cost).  An entry holds its tuple, so that address cannot be taken by another
 * object while the entry is there; only a tuple of two exact str is remembered: its line
 * depends on its text alone, which cannot change. */
#define SEEN_SIZE 64
typedef struct {
    PyObject *field; /* the (name, value) tuple, held */
    PyObject *line;  /* its line, held */
    int kind;
} Seen;
static Seen seen[SEEN_SIZE];

static void
seen_clear(void)
{
    for (int i = 0; i < SEEN_SIZE; i++) {
        Py_CLEAR(seen[i].field);
        Py_CLEAR(seen[i].line);
    }
}

/* The line and kind of `field` from line_cache, remembered in `slot` when it may be.
 * DONE (the line borrowed from `slot` or the cache) or DECLINE. */
static int
look_up_field(PyObject *field, Seen *slot, Seen *found)
{
    Py_INCREF(field);
    PyObject *entry = PyDict_GetItemWithError(cfg.line_cache, field);
    Py_DECREF(field);
    if (entry == NULL) {
        PyErr_Clear(); /* unhashable: the Python code raises what it must */
        return DECLINE; /* not checked yet: the Python code checks and caches it */
    }
    if (!PyTuple_CheckExact(entry) || PyTuple_GET_SIZE(entry) != 2)
        return DECLINE;
    PyObject *line = PyTuple_GET_ITEM(entry, 0);
    PyObject *kind = PyTuple_GET_ITEM(entry, 1);
    if (!PyBytes_CheckExact(line) || !PyLong_CheckExact(kind))
        return DECLINE;
    found->line = line;
    found->kind = (int)PyLong_AsLong(kind);
    if (found->kind < KIND_PLAIN || found->kind > KIND_SERVER) {
        PyErr_Clear();
        return DECLINE;
    }
    if (PyTuple_GET_SIZE(field) == 2 && PyUnicode_CheckExact(PyTuple_GET_ITEM(field, 0))
        && PyUnicode_CheckExact(PyTuple_GET_ITEM(field, 1))) {
        Py_XSETREF(slot->field, Py_NewRef(field));
        Py_XSETREF(slot->line, Py_NewRef(line));
        slot->kind = found->kind;
        found->line = slot->line;
    }
    return DONE;
}

/* The handler's fields as cached lines (RFC 9110 §5.1, §5.5: checked by the Python code
 * when it cached them), the framing fields left out (RFC 9112 §6: the writer's), then Date
 * and Server unless the handler set them (RFC 9110 §6.6.1, §10.2.4). */
static int
add_fields(Pieces *p, PyObject *headers)
{
    if (!PyList_CheckExact(headers))
        return DECLINE; /* a tuple or another iterable: the Python code iterates it */
    int has_date = 0, has_server = 0;
    /* The size is read again each time: a lookup may run code that changes the list. */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(headers); i++) {
        if (i == MAX_FIELDS)
            return DECLINE;
        PyObject *field = PyList_GET_ITEM(headers, i);
        if (!PyTuple_CheckExact(field))
            return DECLINE; /* a list [name, value]: the Python code checks it every time */
        Seen *slot = &seen[((uintptr_t)field >> 4) % SEEN_SIZE];
        Seen found = *slot;
        if (slot->field != field && look_up_field(field, slot, &found) != DONE)
            return DECLINE;
        if (found.kind == KIND_SKIP)
            continue; /* Content-Length, Transfer-Encoding, Connection */
        has_date |= found.kind == KIND_DATE;
        has_server |= found.kind == KIND_SERVER;
        pieces_add(p, found.line);
    }
    if (!has_date) {
        PyObject *line = date_line();
        if (line == NULL)
            return ERROR;
        pieces_add(p, line);
    }
    if (!has_server)
        pieces_add(p, cfg.server_line);
    return DONE;
}

/* ------------------------------------------------------------------------ the framing */

/* What the head says about the body and the connection. */
typedef struct {
    int send_body;
    int keep_alive;
} Decision;

/* RFC 9110 §9.3.2 and §15: no body for HEAD, 1xx, 204 and 304; the connection stays open
 * only if the server wants it and the request allows it (RFC 9112 §9.3). */
static int
decide(PyObject *request, long code, PyObject *keep_alive, Decision *d)
{
    if (keep_alive != Py_True && keep_alive != Py_False)
        return DECLINE;
    int head = 0;
    d->keep_alive = 0;
    if (request != Py_None) {
        head = request_str_is(request, ATTR_METHOD, "HEAD");
        if (head < 0)
            return DECLINE;
        if (keep_alive == Py_True) {
            d->keep_alive = request_bool(request, ATTR_KEEP_ALIVE);
            if (d->keep_alive < 0)
                return DECLINE;
        }
    }
    d->send_body = !head && code >= 200 && code != 204 && code != 304;
    return DONE;
}

/* RFC 9112 §6.2: Content-Length for a body of known length, from the length-line cache
 * (RFC 9110 §8.6: none for 1xx and 204; a 304 describes another response).  A streamed
 * body (chunked, or close-delimited on HTTP/1.0) is left to the Python code. */
static int
add_length(Pieces *p, long code, PyObject *body_length)
{
    if (code < 200 || code == 204 || code == 304)
        return DONE;
    if (body_length == Py_None)
        return DECLINE;
    PyObject *line = cached_bytes(cfg.length_lines, body_length);
    if (line == NULL)
        return DECLINE;
    pieces_add(p, line);
    return DONE;
}

/* RFC 9112 §9.6: "Connection: close" when the connection ends after this reply; §9.3 and
 * RFC 7230 appendix A.1.2: an HTTP/1.0 client is told when it may send another request. */
static int
add_connection(Pieces *p, PyObject *request, int keep_alive)
{
    if (!keep_alive) {
        pieces_add(p, line_close);
        return DONE;
    }
    int http10 = request_str_is(request, ATTR_HTTP_VERSION, "1.0"); /* request: not None */
    if (http10 < 0)
        return DECLINE;
    if (http10)
        pieces_add(p, line_keep_alive);
    return DONE;
}

/* Every piece of the head (and the joined body) in order; DONE, DECLINE or ERROR. */
static int
frame_pieces(Pieces *p, PyObject *const *args, Decision *d)
{
    PyObject *request = args[0], *status = args[1], *headers = args[2];
    PyObject *body_length = args[3], *keep_alive = args[4], *join = args[5];
    if (!PyLong_CheckExact(status))
        return DECLINE;
    PyObject *status_line = cached_bytes(cfg.status_lines, status);
    if (status_line == NULL)
        return DECLINE; /* a status not seen yet: the Python code checks it (RFC 9110 §15) */
    long code = PyLong_AsLong(status);
    if (code == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return DECLINE;
    }
    int r = decide(request, code, keep_alive, d);
    if (r != DONE)
        return r;
    pieces_add(p, status_line); /* RFC 9112 §4: the status line */
    if ((r = add_fields(p, headers)) != DONE)
        return r;
    if ((r = add_length(p, code, body_length)) != DONE)
        return r;
    if ((r = add_connection(p, request, d->keep_alive)) != DONE)
        return r;
    pieces_add(p, line_end); /* RFC 9112 §2.1: the empty line ends the head */
    if (d->send_body && join != Py_None) {
        if (!PyBytes_CheckExact(join))
            return DECLINE;
        pieces_add(p, join);
    }
    return DONE;
}

/* A ResponseHead(data, chunked=False, send_body, keep_alive): a tuple subclass, made as
 * tuple.__new__ makes one. */
static PyObject *
make_head(PyObject *data, Decision *d)
{
    PyObject *head = cfg.head_type->tp_alloc(cfg.head_type, 4);
    if (head == NULL)
        return NULL;
    PyTuple_SET_ITEM(head, 0, Py_NewRef(data));
    PyTuple_SET_ITEM(head, 1, Py_NewRef(Py_False));
    PyTuple_SET_ITEM(head, 2, Py_NewRef(d->send_body ? Py_True : Py_False));
    PyTuple_SET_ITEM(head, 3, Py_NewRef(d->keep_alive ? Py_True : Py_False));
    return head;
}

PyDoc_STRVAR(frame_doc,
"frame(request, status, headers, body_length, keep_alive, join) -> ResponseHead | None\n\n"
"The head frame_response would make (with ``join``, a bytes body, copied behind it when\n"
"the body is sent), or None when the Python framer must do it.");

static PyObject *
frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError,
                        "frame(request, status, headers, body_length, keep_alive, join)");
        return NULL;
    }
    if (cfg.head_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyweb_regions._frame: configure() first");
        return NULL;
    }
    Pieces p = {.n = 0, .size = 0};
    Decision d;
    PyObject *result = NULL;
    int r = frame_pieces(&p, args, &d);
    if (r == DONE) {
        PyObject *data = pieces_join(&p);
        if (data != NULL) {
            result = make_head(data, &d);
            Py_DECREF(data);
        }
    }
    else if (r == DECLINE) {
        result = Py_NewRef(Py_None);
    }
    pieces_clear(&p);
    return result;
}

/* ------------------------------------------------------------------------- the module */

PyDoc_STRVAR(configure_doc,
"configure(line_cache, status_lines, length_lines, date_line, server_line, head_type,\n"
"          request_type)\n\n"
"Give the fast path the Python framer's caches (response.py calls it once).");

static PyObject *
configure(PyObject *module, PyObject *args)
{
    PyObject *line_cache, *status_lines, *length_lines, *date_line_fn;
    PyObject *server_line, *head_type, *request_type;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!O!O!:configure", &PyDict_Type, &line_cache,
                          &PyDict_Type, &status_lines, &PyDict_Type, &length_lines,
                          &date_line_fn, &PyBytes_Type, &server_line, &PyType_Type,
                          &head_type, &PyType_Type, &request_type))
        return NULL;
    PyTypeObject *t = (PyTypeObject *)head_type;
    /* A tuple subclass without a __dict__ or slots of its own (a NamedTuple). */
    if (!PyType_IsSubtype(t, &PyTuple_Type) || t->tp_basicsize != PyTuple_Type.tp_basicsize
        || t->tp_dictoffset != 0) {
        PyErr_SetString(PyExc_TypeError, "head_type must be a NamedTuple class");
        return NULL;
    }
    if (!PyCallable_Check(date_line_fn)) {
        PyErr_SetString(PyExc_TypeError, "date_line must be callable");
        return NULL;
    }
    Py_XSETREF(cfg.line_cache, Py_NewRef(line_cache));
    Py_XSETREF(cfg.status_lines, Py_NewRef(status_lines));
    Py_XSETREF(cfg.length_lines, Py_NewRef(length_lines));
    Py_XSETREF(cfg.date_line, Py_NewRef(date_line_fn));
    Py_XSETREF(cfg.server_line, Py_NewRef(server_line));
    for (int i = 0; i < N_ATTRS; i++) {
        attr_offsets[i] = slot_offset((PyTypeObject *)request_type, attr_strs[i]);
        if (attr_offsets[i] < 0) {
            PyErr_Format(PyExc_TypeError, "request_type has no slot %s", attr_names[i]);
            return NULL;
        }
    }
    Py_XSETREF(cfg.head_type, (PyTypeObject *)Py_NewRef(head_type));
    Py_XSETREF(cfg.request_type, (PyTypeObject *)Py_NewRef(request_type));
    Py_CLEAR(cfg.date);
    seen_clear();
    Py_RETURN_NONE;
}

static PyMethodDef frame_methods[] = {
    {"frame", (PyCFunction)(void (*)(void))frame, METH_FASTCALL, frame_doc},
    {"configure", configure, METH_VARARGS, configure_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef frame_module = {
    PyModuleDef_HEAD_INIT, "pyweb_regions._frame",
    "The everyday reply head framed in C; pyweb/protocol/response.py says when.", -1,
    frame_methods,
};

PyMODINIT_FUNC
PyInit__frame(void)
{
    for (int i = 0; i < N_ATTRS; i++)
        if ((attr_strs[i] = PyUnicode_InternFromString(attr_names[i])) == NULL)
            return NULL;
    line_close = PyBytes_FromString("Connection: close\r\n");
    line_keep_alive = PyBytes_FromString("Connection: keep-alive\r\n");
    line_end = PyBytes_FromString("\r\n");
    if (!line_close || !line_keep_alive || !line_end)
        return NULL;
    return PyModule_Create(&frame_module);
}
