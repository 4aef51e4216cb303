/* pyweb_regions._head: the C fast path for the everyday HTTP/1.1 request head.
 *
 * pyweb.protocol.parser.RequestParser is the parser (sans-IO, pure Python, checked against
 * h11). This module takes over one step of it, for the heads real clients send every
 * time: "GET /path HTTP/1.1", a Host, a few plain fields. It ACCEPTS A SUBSET and
 * DECLINES everything else, and for what it accepts it produces exactly what the Python
 * path produces: the same Request, the same parser state, the same bytes consumed
 * (tests/protocol/test_c_head.py holds it to that, on random and mutated heads).
 *
 *   parse_head(parser) ->  a Request   the head was taken (state set, bytes consumed)
 *                          NEED_DATA   no CRLF CRLF yet: parser._head_incomplete() has run
 *                                      its checks on what has arrived (it may raise)
 *                          None        declined: the Python path parses it (and raises
 *                                      the errors; this module never raises one)
 *
 * What it takes (anything else is declined):
 *   request-line = method SP origin-form SP ( "HTTP/1.1" / "HTTP/1.0" )   RFC 9112 §3
 *     method      one of GET HEAD POST PUT DELETE OPTIONS PATCH
 *     target      "/" then printable ASCII, no space (1*VCHAR, RFC 9112 §3.2.1)
 *   field-line   = token ":" OWS value OWS, the value printable ASCII, SP and HTAB
 *                  (RFC 9112 §5; no obs-text, no obs-fold, no control characters)
 *   Host          at most one, reg-name [ ":" port ] (RFC 9110 §7.2); required in 1.1
 *   Content-Length at most one field, 1 to 18 digits, not over Limits.max_body
 *   Connection    any list of options (close / keep-alive are read, RFC 9110 §7.6.1)
 *   no Transfer-Encoding, no Expect; within every Limits bound
 *
 * The parser object's slots and the Request's are written directly, at the offsets of
 * their member descriptors, found once by setup() (a Request made by its dataclass
 * __init__ from here cost more than the rest of the head: docs/performance.md).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000
#define MEMBER_OBJECT_EX Py_T_OBJECT_EX
#else
#include <structmember.h>
#define MEMBER_OBJECT_EX T_OBJECT_EX
#endif

/* ======================================================================================
 * Character classes (one table lookup per byte)
 * ====================================================================================== */

enum {
    C_TCHAR = 1,    /* tchar: a token's characters (RFC 9110 §5.6.2) */
    C_VCHAR = 2,    /* VCHAR %x21-7E (RFC 5234 B.1): targets and field values */
    C_OWS = 4,      /* SP / HTAB (RFC 9110 §5.6.3) */
    C_REGNAME = 8,  /* unreserved / pct-encoded / sub-delims: a Host's reg-name (RFC 3986) */
    C_DIGIT = 16,
};

static unsigned char cls[256];

static void
mark(const char *chars, unsigned char bit)
{
    for (const unsigned char *c = (const unsigned char *)chars; *c; c++)
        cls[*c] |= bit;
}

static void
init_classes(void)
{
    static const char alnum[] =
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    mark(alnum, C_TCHAR | C_REGNAME);
    mark("!#$%&'*+-.^_`|~", C_TCHAR);
    mark("-._~%!$&'()*+,;=", C_REGNAME);
    mark("0123456789", C_DIGIT);
    mark(" \t", C_OWS);
    for (int c = 0x21; c <= 0x7E; c++)
        cls[c] |= C_VCHAR;
}

#define IS(c, bit) (cls[(unsigned char)(c)] & (bit))

/* ======================================================================================
 * What setup() finds once: slot offsets, types, constants
 * ====================================================================================== */

/* RequestParser's slots this module reads or writes. */
static Py_ssize_t off_limits, off_buf, off_state, off_scan, off_line_seen, off_empty_lines,
    off_keep_alive, off_head_bytes, off_head_fields, off_remaining;
/* Request's slots, in the order of its fields. */
#define REQUEST_FIELDS 12
static const char *request_fields[REQUEST_FIELDS] = {
    "method", "target", "http_version", "headers", "path", "query", "host", "keep_alive",
    "content_length", "chunked", "expect_continue", "forwarded",
};
static Py_ssize_t off_request[REQUEST_FIELDS];

static PyTypeObject *parser_type, *limits_type, *request_type;
static PyObject *need_data;         /* pyweb.protocol.messages.NEED_DATA */
static PyObject *state_eom;         /* the parser's _EOM: the head had no body */
static PyObject *state_cl_body;     /* the parser's _CL_BODY: a Content-Length body follows */
static PyObject *zero, *empty_str, *version_11, *version_10;
static PyObject *head_incomplete_name;  /* "_head_incomplete" */

/* The methods taken, as the Python path reports them (the same strings every time). */
#define METHODS 7
static const char *method_names[METHODS] = {
    "GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "PATCH",
};
static PyObject *method_str[METHODS];
static Py_ssize_t method_len[METHODS];

#define SLOT(obj, off) (*(PyObject **)((char *)(obj) + (off)))

/* Replace the object in a slot (a new reference to `value` is stored). */
static void
set_slot(PyObject *obj, Py_ssize_t off, PyObject *value)
{
    PyObject *old = SLOT(obj, off);
    Py_INCREF(value);
    SLOT(obj, off) = value;
    Py_XDECREF(old);
}

/* The offset of `type`'s slot `name` (an object member descriptor), or -1 with an error. */
static Py_ssize_t
slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *descr = PyObject_GetAttrString((PyObject *)type, name);
    if (descr == NULL)
        return -1;
    Py_ssize_t off = -1;
    if (Py_IS_TYPE(descr, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descr)->d_member;
        if (member->type == MEMBER_OBJECT_EX)
            off = member->offset;
    }
    Py_DECREF(descr);
    if (off < 0)
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
    return off;
}

/* ======================================================================================
 * Reading the head. Every function returns 1 (taken) or 0 (declined); none raises.
 * ====================================================================================== */

/* What the head says, gathered while its lines are read. */
typedef struct {
    const char *s;             /* the buffer: the head is s[0 .. end) */
    Py_ssize_t end;            /* where the CRLF CRLF starts */
    int method;                /* index into method_names */
    Py_ssize_t target_end;     /* the target is s[method_len + 1 .. target_end) */
    Py_ssize_t target_start;
    int http11;                /* 1: HTTP/1.1, 0: HTTP/1.0 */
    PyObject *host;            /* the Host value (a reference), NULL without one */
    long long content_length;  /* -1 without a Content-Length field */
    int close, keep_alive_option, forwarded;
} Head;

/* RFC 9112 §3: method SP request-target SP HTTP-version, the line s[0 .. n). */
static int
request_line(Head *h, Py_ssize_t n)
{
    const char *s = h->s;
    /* method: one of the common ones, followed by SP (RFC 9110 §9.1: case-sensitive) */
    h->method = -1;
    for (int i = 0; i < METHODS; i++) {
        Py_ssize_t len = method_len[i];
        if (s[0] == method_names[i][0] && len < n && s[len] == ' '
            && memcmp(s, method_names[i], (size_t)len) == 0) {
            h->method = i;
            h->target_start = (Py_ssize_t)len + 1;
            break;
        }
    }
    if (h->method < 0)
        return 0;
    /* request-target: origin-form only ("/" first, RFC 9112 §3.2.1), 1*VCHAR */
    Py_ssize_t i = h->target_start;
    if (i >= n || s[i] != '/')
        return 0;
    while (i < n && IS(s[i], C_VCHAR))
        i++;
    h->target_end = i;
    /* SP HTTP-version, and nothing after it (RFC 9112 §2.3) */
    if (n - i != 9 || memcmp(s + i, " HTTP/1.", 8) != 0)
        return 0;
    if (s[n - 1] == '1')
        h->http11 = 1;
    else if (s[n - 1] == '0')
        h->http11 = 0;
    else
        return 0;  /* HTTP/1.2 and up: the Python path reads them as 1.1 */
    return 1;
}

/* ASCII case-insensitive comparison of s[0 .. n) with the lower-case `word`. */
static int
equals_lower(const char *s, Py_ssize_t n, const char *word)
{
    if ((size_t)n != strlen(word))
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (Py_TOLOWER((unsigned char)s[i]) != (unsigned char)word[i])
            return 0;
    return 1;
}

/* RFC 9110 §7.2: Host = uri-host [ ":" port ], taken when uri-host is a reg-name
 * (an IP-literal "[...]" is declined; the Python path checks it). An empty Host is valid. */
static int
host_ok(const char *v, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n && IS(v[i], C_REGNAME))
        i++;
    if (i < n && v[i] == ':') {  /* port = *DIGIT */
        for (i++; i < n && IS(v[i], C_DIGIT); i++)
            ;
    }
    return i == n;
}

/* RFC 9110 §8.6: Content-Length = 1*DIGIT, taken up to 18 digits (the Python path also
 * reads lists "5, 5" and longer numbers; it gets those). */
static int
content_length(const char *v, Py_ssize_t n, long long *out)
{
    if (n < 1 || n > 18)
        return 0;
    long long value = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!IS(v[i], C_DIGIT))
            return 0;
        value = value * 10 + (v[i] - '0');
    }
    *out = value;
    return 1;
}

/* RFC 9110 §7.6.1: Connection = #connection-option, options case-insensitive, split on
 * "," with the OWS around each removed (what parser._connection_options does). */
static void
connection_options(Head *h, const char *v, Py_ssize_t n)
{
    Py_ssize_t start = 0;
    while (start <= n) {
        Py_ssize_t stop = start;
        while (stop < n && v[stop] != ',')
            stop++;
        Py_ssize_t a = start, b = stop;
        while (a < b && IS(v[a], C_OWS))
            a++;
        while (b > a && IS(v[b - 1], C_OWS))
            b--;
        if (equals_lower(v + a, b - a, "close"))
            h->close = 1;
        else if (equals_lower(v + a, b - a, "keep-alive"))
            h->keep_alive_option = 1;
        start = stop + 1;
    }
}

/* A str of the ASCII bytes s[0 .. n), lower-cased when `lower`. */
static PyObject *
ascii_str(const char *s, Py_ssize_t n, int lower)
{
    if (n == 0)
        return Py_NewRef(empty_str);
    PyObject *str = PyUnicode_New(n, 127);
    if (str == NULL)
        return NULL;
    Py_UCS1 *out = PyUnicode_1BYTE_DATA(str);
    if (lower) {
        for (Py_ssize_t i = 0; i < n; i++)
            out[i] = (Py_UCS1)Py_TOLOWER((unsigned char)s[i]);
    }
    else {
        memcpy(out, s, (size_t)n);
    }
    return str;
}

/* What a field (lower-case name, value) means to the parser: the fields of parser._SPECIAL.
 * Returns 1 (go on) or 0 (declined). */
static int
note_field(Head *h, const char *name, Py_ssize_t name_len, PyObject *value)
{
    const char *v = (const char *)PyUnicode_1BYTE_DATA(value);
    Py_ssize_t n = PyUnicode_GET_LENGTH(value);
#define NAME_IS(word) (name_len == (Py_ssize_t)sizeof(word) - 1 && memcmp(name, word, name_len) == 0)
    if (NAME_IS("host")) {
        if (h->host != NULL || !host_ok(v, n))
            return 0;  /* two Hosts (400), or one the Python path must check */
        h->host = Py_NewRef(value);
    }
    else if (NAME_IS("content-length")) {
        if (h->content_length >= 0 || !content_length(v, n, &h->content_length))
            return 0;
    }
    else if (NAME_IS("connection")) {
        connection_options(h, v, n);
    }
    else if (NAME_IS("x-forwarded-for") || NAME_IS("x-forwarded-proto") || NAME_IS("forwarded")) {
        h->forwarded = 1;
    }
    else if (NAME_IS("transfer-encoding") || NAME_IS("expect")) {
        return 0;  /* chunked bodies and 100-continue: the Python path */
    }
#undef NAME_IS
    return 1;
}

/* RFC 9112 §5: field-line = field-name ":" OWS field-value OWS, the line s[0 .. n).
 * Appends (lower-case name, value) to `headers`. Returns 1, 0 (declined) or -1 (error). */
static int
field_line(Head *h, const char *s, Py_ssize_t n, PyObject *headers)
{
    Py_ssize_t colon = 0;
    while (colon < n && IS(s[colon], C_TCHAR))  /* field-name = token */
        colon++;
    if (colon == 0 || colon == n || s[colon] != ':')
        return 0;  /* obs-fold, space before the colon, no name, no colon: the Python path */
    Py_ssize_t a = colon + 1, b = n;
    while (a < b && IS(s[a], C_OWS))
        a++;
    while (b > a && IS(s[b - 1], C_OWS))
        b--;
    for (Py_ssize_t i = a; i < b; i++)  /* field-content: VCHAR, SP, HTAB */
        if (!IS(s[i], C_VCHAR | C_OWS))
            return 0;
    PyObject *name = ascii_str(s, colon, 1);
    if (name == NULL)
        return -1;
    PyObject *value = ascii_str(s + a, b - a, 0);
    if (value == NULL) {
        Py_DECREF(name);
        return -1;
    }
    int taken = note_field(h, (const char *)PyUnicode_1BYTE_DATA(name), colon, value);
    PyObject *pair = taken ? PyTuple_Pack(2, name, value) : NULL;
    Py_DECREF(name);
    Py_DECREF(value);
    if (!taken)
        return 0;
    if (pair == NULL)
        return -1;
    int err = PyList_Append(headers, pair);
    Py_DECREF(pair);
    return err < 0 ? -1 : 1;
}

/* The header fields, s[from .. h->end), one per CRLF-ended line. Returns the list (count
 * checked against max_headers), Py_None when declined (a new reference), NULL on error. */
static PyObject *
header_fields(Head *h, Py_ssize_t from, Py_ssize_t max_headers)
{
    PyObject *headers = PyList_New(0);
    if (headers == NULL)
        return NULL;
    const char *s = h->s;
    Py_ssize_t pos = from;
    while (pos < h->end) {
        const char *cr = memchr(s + pos, '\r', (size_t)(h->end - pos));
        Py_ssize_t stop = cr ? cr - s : h->end;
        if (stop < h->end && s[stop + 1] != '\n')
            goto declined;  /* a bare CR (RFC 9112 §2.2) */
        if (PyList_GET_SIZE(headers) >= max_headers)
            goto declined;  /* one field too many: 431 from the Python path */
        int r = field_line(h, s + pos, stop - pos, headers);
        if (r < 0) {
            Py_DECREF(headers);
            return NULL;
        }
        if (r == 0)
            goto declined;
        pos = stop + 2;
    }
    return headers;
declined:
    Py_DECREF(headers);
    Py_RETURN_NONE;
}

/* ======================================================================================
 * parse_head(parser)
 * ====================================================================================== */

/* The first CRLF CRLF in s[from .. n), or -1 (what bytearray.find does). */
static Py_ssize_t
find_head_end(const char *s, Py_ssize_t n, Py_ssize_t from)
{
    while (from + 4 <= n) {
        const char *cr = memchr(s + from, '\r', (size_t)(n - from - 3));
        if (cr == NULL)
            return -1;
        Py_ssize_t i = cr - s;
        if (s[i + 1] == '\n' && s[i + 2] == '\r' && s[i + 3] == '\n')
            return i;
        from = i + 1;
    }
    return -1;
}

/* The four limits of a Limits object as C integers; 0 (declined) when one is not an int.
 * A huge limit is as good as none. The last ints converted are remembered (ints are
 * immutable, and a reference is kept, so the same object means the same value): every
 * parser of a server shares one Limits. */
enum { MAX_REQUEST_LINE, MAX_HEADER_BYTES, MAX_HEADERS, MAX_BODY, LIMITS };
static Py_ssize_t off_limit[LIMITS];
static PyObject *limit_seen[LIMITS];
static Py_ssize_t limit_value[LIMITS];

static int
read_limits(PyObject *limits, Py_ssize_t *out)
{
    for (int i = 0; i < LIMITS; i++) {
        PyObject *value = SLOT(limits, off_limit[i]);
        if (value == NULL)
            return 0;
        if (value != limit_seen[i]) {
            if (!PyLong_CheckExact(value))
                return 0;
            int overflow;
            long long v = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (overflow)
                v = overflow > 0 ? PY_SSIZE_T_MAX : PY_SSIZE_T_MIN;
            limit_value[i] = (Py_ssize_t)v;
            Py_XSETREF(limit_seen[i], Py_NewRef(value));
        }
        out[i] = limit_value[i];
    }
    return 1;
}

/* A new reference to `value`, or NULL when it is NULL (an allocation that failed). */
#define OWN(value) Py_XNewRef(value)

/* The Request, made like the dataclass makes it (a normal instance, every slot set): the
 * instance allocated by its type, then its twelve slots filled. Calling Request(...)
 * (the dataclass __init__) cost 3,300 instructions of the 8,400 of a whole wrk request:
 * docs/performance.md. */
static PyObject *
make_request(Head *h, PyObject *headers, PyObject *keep_alive)
{
    PyObject *request = request_type->tp_alloc(request_type, 0);
    if (request == NULL)
        return NULL;
    const char *s = h->s;
    Py_ssize_t t0 = h->target_start, t1 = h->target_end;
    const char *q = memchr(s + t0, '?', (size_t)(t1 - t0));
    PyObject *target = ascii_str(s + t0, t1 - t0, 0);
    SLOT(request, off_request[0]) = OWN(method_str[h->method]);
    SLOT(request, off_request[1]) = target;
    SLOT(request, off_request[2]) = OWN(h->http11 ? version_11 : version_10);
    SLOT(request, off_request[3]) = OWN(headers);
    /* origin-form: path [ "?" query ], split at the first "?" (RFC 9112 §3.2.1) */
    SLOT(request, off_request[4]) = q ? ascii_str(s + t0, q - (s + t0), 0) : OWN(target);
    SLOT(request, off_request[5]) = q ? ascii_str(q + 1, s + t1 - q - 1, 0) : OWN(empty_str);
    SLOT(request, off_request[6]) = OWN(h->host ? h->host : empty_str);  /* 1.0: no Host */
    SLOT(request, off_request[7]) = OWN(keep_alive);
    SLOT(request, off_request[8]) = h->content_length >= 0
                                        ? PyLong_FromLongLong(h->content_length)
                                        : OWN(Py_None);
    SLOT(request, off_request[9]) = OWN(Py_False);   /* chunked: Transfer-Encoding declined */
    SLOT(request, off_request[10]) = OWN(Py_False);  /* expect_continue: Expect declined */
    SLOT(request, off_request[11]) = OWN(h->forwarded ? Py_True : Py_False);
    for (int i = 0; i < REQUEST_FIELDS; i++) {
        if (SLOT(request, off_request[i]) == NULL) {  /* a str or int could not be made */
            Py_DECREF(request);  /* (its dealloc skips the empty slots) */
            return NULL;
        }
    }
    return request;
}

/* The parser's state after a head, as RequestParser._next_head leaves it. Cannot fail
 * once its integers exist. */
static int
commit_state(PyObject *parser, Head *h, Py_ssize_t fields, PyObject *keep_alive)
{
    PyObject *head_bytes = PyLong_FromSsize_t(h->end + 4);
    PyObject *head_fields = PyLong_FromSsize_t(fields);
    PyObject *remaining = h->content_length > 0 ? PyLong_FromLongLong(h->content_length)
                                                : NULL;
    if (head_bytes == NULL || head_fields == NULL
        || (h->content_length > 0 && remaining == NULL)) {
        Py_XDECREF(head_bytes);
        Py_XDECREF(head_fields);
        Py_XDECREF(remaining);
        return -1;
    }
    /* _take_head: the search for the head starts afresh */
    set_slot(parser, off_scan, zero);
    set_slot(parser, off_line_seen, Py_False);
    set_slot(parser, off_empty_lines, zero);
    set_slot(parser, off_keep_alive, keep_alive);
    set_slot(parser, off_head_bytes, head_bytes);
    set_slot(parser, off_head_fields, head_fields);
    if (remaining != NULL) {  /* a Content-Length body follows */
        set_slot(parser, off_state, state_cl_body);
        set_slot(parser, off_remaining, remaining);
    }
    else {  /* no body: the next event is the EndOfMessage */
        set_slot(parser, off_state, state_eom);
    }
    Py_DECREF(head_bytes);
    Py_DECREF(head_fields);
    Py_XDECREF(remaining);
    return 0;
}

/* Take the head: the Request, with the parser's state set and the head's bytes removed
 * from its buffer. Returns the Request, Py_None (declined) or NULL (error). */
static PyObject *
take_head(PyObject *parser, Head *h, PyObject *buf, PyObject *limits)
{
    Py_ssize_t lim[LIMITS];
    if (!read_limits(limits, lim))
        Py_RETURN_NONE;
    Py_ssize_t max_request_line = lim[MAX_REQUEST_LINE], max_header_bytes = lim[MAX_HEADER_BYTES];
    /* the limits, as _next_head checks them: 414, 431 (the head with its CRLF CRLF) */
    const char *line_end = memchr(h->s, '\r', (size_t)h->end + 1);
    Py_ssize_t line_len = line_end - h->s;  /* (found: the head ends with CR LF CR LF) */
    if (line_len > max_request_line || h->end + 4 > max_header_bytes)
        Py_RETURN_NONE;
    if (!request_line(h, line_len))
        Py_RETURN_NONE;
    if (line_len < h->end && h->s[line_len + 1] != '\n')
        Py_RETURN_NONE;  /* a bare CR ends the request line */
    PyObject *headers = header_fields(h, line_len < h->end ? line_len + 2 : h->end,
                                      lim[MAX_HEADERS]);
    if (headers == NULL || headers == Py_None)
        return headers;
    /* RFC 9112 §3.2: HTTP/1.1 requires Host (400 from the Python path) */
    if ((h->host == NULL && h->http11) || h->content_length > lim[MAX_BODY]) {
        Py_DECREF(headers);
        Py_RETURN_NONE;  /* ... and a body over the limit is 413 */
    }
    /* RFC 9112 §9.3: 1.1 persists unless "close"; 1.0 only with "keep-alive" */
    PyObject *keep_alive = (h->http11 ? !h->close : (h->keep_alive_option && !h->close))
                               ? Py_True : Py_False;
    PyObject *request = make_request(h, headers, keep_alive);
    if (request == NULL) {
        Py_DECREF(headers);
        return NULL;
    }
    if (commit_state(parser, h, PyList_GET_SIZE(headers), keep_alive) < 0
        || PySequence_DelSlice(buf, 0, h->end + 4) < 0) {
        Py_DECREF(headers);
        Py_DECREF(request);
        return NULL;
    }
    Py_DECREF(headers);
    return request;
}

/* No CRLF CRLF yet: what _take_head does then, parser._head_incomplete() (the limits on
 * what has arrived, a bare LF, EOF inside the head: it raises their errors), and
 * NEED_DATA. The search just made is the only one (the method does not search again for
 * the end of the head). */
static PyObject *
incomplete(PyObject *parser)
{
    PyObject *result = PyObject_CallMethodNoArgs(parser, head_incomplete_name);
    if (result == NULL)
        return NULL;
    Py_DECREF(result);
    return Py_NewRef(need_data);
}

static PyObject *
parse_head(PyObject *module, PyObject *parser)
{
    if (parser_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "pyweb_regions._head.setup() was not called");
        return NULL;
    }
    if (!PyObject_TypeCheck(parser, parser_type)) {
        PyErr_SetString(PyExc_TypeError, "parse_head() takes a RequestParser");
        return NULL;
    }
    PyObject *buf = SLOT(parser, off_buf), *limits = SLOT(parser, off_limits);
    PyObject *scan_obj = SLOT(parser, off_scan);
    if (buf == NULL || !PyByteArray_CheckExact(buf) || limits == NULL
        || !PyObject_TypeCheck(limits, limits_type) || scan_obj == NULL
        || !PyLong_CheckExact(scan_obj))
        Py_RETURN_NONE;
    const char *s = PyByteArray_AS_STRING(buf);
    Py_ssize_t n = PyByteArray_GET_SIZE(buf);
    /* A request line starts with a method (a token); empty lines before it (RFC 9112
     * §2.2), a clean EOF and bytes that cannot start a request are the Python path's. */
    if (n == 0 || !IS(s[0], C_TCHAR))
        Py_RETURN_NONE;
    /* Search only the bytes not searched before (parser._scan), as _take_head does. */
    Py_ssize_t scan = PyLong_AsSsize_t(scan_obj);
    if (scan == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t end = find_head_end(s, n, scan > 3 ? scan - 3 : 0);
    if (end < 0)
        return incomplete(parser);
    Head h = {.s = s, .end = end, .content_length = -1};
    PyObject *result = take_head(parser, &h, buf, limits);
    Py_XDECREF(h.host);
    return result;
}

/* setup(RequestParser, Limits, Request, NEED_DATA, EOM, CL_BODY) -> parse_head
 * Finds the slot offsets and keeps the parser's constants; raises when a class has
 * changed shape (a slot renamed, a field added to Request) so this module cannot
 * silently build something the Python path would not. */
static PyObject *
setup(PyObject *module, PyObject *args)
{
    PyTypeObject *parser, *limits, *request;
    PyObject *nd, *eom, *cl_body;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!O!:setup", &PyType_Type, &parser, &PyType_Type,
                          &limits, &PyType_Type, &request, &nd, &PyLong_Type, &eom,
                          &PyLong_Type, &cl_body))
        return NULL;
    struct { PyTypeObject *type; const char *name; Py_ssize_t *off; } slots[] = {
        {parser, "limits", &off_limits}, {parser, "_buf", &off_buf},
        {parser, "_state", &off_state}, {parser, "_scan", &off_scan},
        {parser, "_line_seen", &off_line_seen}, {parser, "_empty_lines", &off_empty_lines},
        {parser, "_keep_alive", &off_keep_alive}, {parser, "_head_bytes", &off_head_bytes},
        {parser, "_head_fields", &off_head_fields}, {parser, "_remaining", &off_remaining},
        {limits, "max_request_line", &off_limit[MAX_REQUEST_LINE]},
        {limits, "max_header_bytes", &off_limit[MAX_HEADER_BYTES]},
        {limits, "max_headers", &off_limit[MAX_HEADERS]},
        {limits, "max_body", &off_limit[MAX_BODY]},
    };
    for (size_t i = 0; i < sizeof(slots) / sizeof(slots[0]); i++)
        if ((*slots[i].off = slot_offset(slots[i].type, slots[i].name)) < 0)
            return NULL;
    for (int i = 0; i < REQUEST_FIELDS; i++)
        if ((off_request[i] = slot_offset(request, request_fields[i])) < 0)
            return NULL;
    /* Every slot of Request must be one of the fields set here. */
    PyObject *names = PyObject_GetAttrString((PyObject *)request, "__slots__");
    if (names == NULL)
        return NULL;
    Py_ssize_t count = PyObject_Size(names);
    Py_DECREF(names);
    if (count != REQUEST_FIELDS) {
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_TypeError, "Request has %zd slots, _head sets %d", count,
                         REQUEST_FIELDS);
        return NULL;
    }
    Py_XSETREF(parser_type, (PyTypeObject *)Py_NewRef(parser));
    Py_XSETREF(limits_type, (PyTypeObject *)Py_NewRef(limits));
    Py_XSETREF(request_type, (PyTypeObject *)Py_NewRef(request));
    Py_XSETREF(need_data, Py_NewRef(nd));
    Py_XSETREF(state_eom, Py_NewRef(eom));
    Py_XSETREF(state_cl_body, Py_NewRef(cl_body));
    return PyObject_GetAttrString(module, "parse_head");
}

static PyMethodDef head_methods[] = {
    {"parse_head", (PyCFunction)parse_head, METH_O,
     "parse_head(parser) -> Request | NEED_DATA | None: take the everyday request head "
     "from the parser's buffer (a Request), say that it is incomplete (NEED_DATA, after "
     "parser._head_incomplete()), or decline it (None: the Python path parses it)."},
    {"setup", (PyCFunction)setup, METH_VARARGS,
     "setup(RequestParser, Limits, Request, NEED_DATA, EOM, CL_BODY) -> parse_head"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef head_module = {
    PyModuleDef_HEAD_INIT, "pyweb_regions._head",
    "The C fast path for the everyday HTTP/1.1 request head (see pyweb/protocol/parser.py).",
    -1, head_methods,
};

PyMODINIT_FUNC
PyInit__head(void)
{
    init_classes();
    zero = PyLong_FromLong(0);
    empty_str = PyUnicode_New(0, 0);
    version_11 = PyUnicode_InternFromString("1.1");
    version_10 = PyUnicode_InternFromString("1.0");
    head_incomplete_name = PyUnicode_InternFromString("_head_incomplete");
    if (zero == NULL || empty_str == NULL || version_11 == NULL || version_10 == NULL
        || head_incomplete_name == NULL)
        return NULL;
    for (int i = 0; i < METHODS; i++) {
        method_len[i] = (Py_ssize_t)strlen(method_names[i]);
        if ((method_str[i] = PyUnicode_InternFromString(method_names[i])) == NULL)
            return NULL;
    }
    return PyModule_Create(&head_module);
}
