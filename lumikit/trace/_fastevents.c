/* A compiled reader for the common shape of Kineto trace chunks: the same columns as
 * lumikit/trace/columns.py's parse_array, without a Python object per event.
 *
 * parse(body) takes one JSON array of trace events (b'[{..},{..}]') and returns either None or a tuple
 *   (n_all, names, cats, name_code, cat_code, pid, tid, ts, dur, stream, correlation, external_id, bytes, size)
 * where names/cats are the chunk's own code tables (lists of str, in order of first appearance) and the other
 * columns are bytearrays of int32 / int64 / float64 values, one per complete event ("ph": "X").
 *
 * None means "not the common shape": the chunk is then read by the msgspec decoder in columns.py, which
 * handles every case (and raises on broken JSON). This reader gives up on anything unusual rather than guess:
 * escapes in kept strings or keys, duplicate keys, values of an unexpected type, numbers outside int64, unknown
 * phases, control characters, nesting deeper than MAX_DEPTH, trailing bytes. What it accepts, it reads to the
 * same values as the msgspec path (tests/trace/test_fast_events.py checks this on generated and mutated input).
 *
 * Every read is bounds-checked against the end of the buffer; nothing here recurses.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 512
#define MAX_NUMBER_CHARS 64
#define NO_BYTES (-(INT64_C(1) << 62)) /* columns.py's _NO_BYTES: "bytes" absent */

enum { OK = 0, GIVE_UP = 1, FAILED = 2 }; /* FAILED: a Python exception is set (memory) */

typedef struct {
    const unsigned char *p;
    const unsigned char *end;
} Cursor;

typedef struct {
    const unsigned char *start; /* the value's first byte */
    const unsigned char *stop;  /* one past its last byte (for strings: inside the quotes) */
    char kind;                  /* 0 absent, 's' string, 'i' integer, 'f' other number, 'n' null, 'o' other */
} Span;

/* ---- growable columns -------------------------------------------------------------------------------- */
typedef struct {
    char *data;
    size_t len, cap; /* in bytes */
} Buf;

static int buf_push(Buf *b, const void *value, size_t size) {
    if (b->len + size > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 4096;
        while (cap < b->len + size) cap *= 2;
        char *data = realloc(b->data, cap);
        if (!data) {
            PyErr_NoMemory();
            return FAILED;
        }
        b->data = data;
        b->cap = cap;
    }
    memcpy(b->data + b->len, value, size);
    b->len += size;
    return OK;
}

/* ---- a table of labels (names, categories): byte span -> code, and the list of labels as str ---------- */
typedef struct {
    const unsigned char **keys;
    Py_ssize_t *lens;
    int32_t *codes;
    size_t cap; /* slots, a power of two */
    size_t used;
    PyObject *labels; /* list of str, index = code */
} Labels;

static uint64_t hash_bytes(const unsigned char *s, Py_ssize_t n) {
    /* eight bytes at a time, multiply-xorshift mixing: names are long and share long prefixes */
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    w = 0;
    memcpy(&w, s + i, (size_t)(n - i));
    h = (h ^ w) * 0x94D049BB133111EBULL;
    return h ^ (h >> 29);
}

static int labels_init(Labels *t) {
    t->cap = 256;
    t->used = 0;
    t->keys = calloc(t->cap, sizeof(*t->keys));
    t->lens = calloc(t->cap, sizeof(*t->lens));
    t->codes = calloc(t->cap, sizeof(*t->codes));
    t->labels = PyList_New(0);
    if (!t->keys || !t->lens || !t->codes || !t->labels) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        return FAILED;
    }
    return OK;
}

static void labels_free(Labels *t) {
    free(t->keys);
    free(t->lens);
    free(t->codes);
    Py_XDECREF(t->labels);
}

static int labels_grow(Labels *t) {
    size_t cap = t->cap * 2;
    const unsigned char **keys = calloc(cap, sizeof(*keys));
    Py_ssize_t *lens = calloc(cap, sizeof(*lens));
    int32_t *codes = calloc(cap, sizeof(*codes));
    if (!keys || !lens || !codes) {
        free(keys);
        free(lens);
        free(codes);
        PyErr_NoMemory();
        return FAILED;
    }
    for (size_t i = 0; i < t->cap; i++) {
        if (!t->keys[i]) continue;
        size_t j = hash_bytes(t->keys[i], t->lens[i]) & (cap - 1);
        while (keys[j]) j = (j + 1) & (cap - 1);
        keys[j] = t->keys[i];
        lens[j] = t->lens[i];
        codes[j] = t->codes[i];
    }
    free(t->keys);
    free(t->lens);
    free(t->codes);
    t->keys = keys;
    t->lens = lens;
    t->codes = codes;
    t->cap = cap;
    return OK;
}

/* The code of the label spelled by [s, s + n) (UTF-8, no escapes), adding it on first sight.
 * Returns OK, GIVE_UP (not valid UTF-8) or FAILED. */
static int labels_code(Labels *t, const unsigned char *s, Py_ssize_t n, int32_t *code) {
    static const unsigned char empty[1] = {0};
    if (n == 0) s = empty; /* a non-null key for the empty label */
    size_t j = hash_bytes(s, n) & (t->cap - 1);
    while (t->keys[j]) {
        if (t->lens[j] == n && memcmp(t->keys[j], s, (size_t)n) == 0) {
            *code = t->codes[j];
            return OK;
        }
        j = (j + 1) & (t->cap - 1);
    }
    PyObject *label = PyUnicode_DecodeUTF8((const char *)s, n, "strict");
    if (!label) {
        if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
            PyErr_Clear();
            return GIVE_UP;
        }
        return FAILED;
    }
    Py_ssize_t next = PyList_GET_SIZE(t->labels);
    if (next >= INT32_MAX || PyList_Append(t->labels, label) < 0) {
        Py_DECREF(label);
        if (!PyErr_Occurred()) return GIVE_UP;
        return FAILED;
    }
    Py_DECREF(label);
    t->keys[j] = s;
    t->lens[j] = n;
    t->codes[j] = (int32_t)next;
    *code = (int32_t)next;
    if (++t->used * 2 > t->cap) return labels_grow(t);
    return OK;
}

/* ---- the JSON grammar, as far as the common shape needs it ------------------------------------------ */
static inline void skip_ws(Cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\n' || *c->p == '\r' || *c->p == '\t')) c->p++;
}

/* Bytes that end a plain run inside a string: the quote, the backslash and control characters. */
static unsigned char STRING_STOP[256];

static void init_tables(void) {
    for (int i = 0; i < 256; i++) STRING_STOP[i] = i < 0x20 || i == '"' || i == '\\';
}

static inline int is_hex(unsigned char ch) {
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/* A string at c->p (on its opening quote): its inside in [*start, *stop), whether it held an escape.
 * Gives up on control characters, bad escapes and escaped surrogates (msgspec refuses or differs there). */
static int scan_string(Cursor *c, const unsigned char **start, const unsigned char **stop, int *escaped) {
    const unsigned char *p = c->p + 1;
    *escaped = 0;
    *start = p;
    while (p < c->end) {
        const unsigned char *q = p;
        while (q < c->end && !STRING_STOP[*q]) q++; /* the plain run */
        if (q >= c->end) return GIVE_UP;
        if (*q == '"') {
            *stop = q;
            c->p = q + 1;
            return OK;
        }
        if (*q < 0x20) return GIVE_UP;
        /* an escape */
        *escaped = 1;
        if (q + 1 >= c->end) return GIVE_UP;
        unsigned char e = q[1];
        if (e == 'u') {
            if (q + 5 >= c->end) return GIVE_UP;
            if (!is_hex(q[2]) || !is_hex(q[3]) || !is_hex(q[4]) || !is_hex(q[5])) return GIVE_UP;
            if ((q[2] == 'd' || q[2] == 'D') && strchr("89abcdefABCDEF", q[3])) return GIVE_UP; /* surrogates */
            p = q + 6;
        } else if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            p = q + 2;
        } else {
            return GIVE_UP;
        }
    }
    return GIVE_UP;
}

/* A number at c->p, checked against JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(Cursor *c, int *is_integer) {
    const unsigned char *p = c->p, *end = c->end;
    *is_integer = 1;
    if (p < end && *p == '-') p++;
    if (p >= end) return GIVE_UP;
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        while (p < end && *p >= '0' && *p <= '9') p++;
    } else {
        return GIVE_UP;
    }
    if (p < end && *p == '.') {
        *is_integer = 0;
        p++;
        if (p >= end || *p < '0' || *p > '9') return GIVE_UP;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        *is_integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-')) p++;
        if (p >= end || *p < '0' || *p > '9') return GIVE_UP;
        while (p < end && *p >= '0' && *p <= '9') p++;
    }
    c->p = p;
    return OK;
}

static int scan_literal(Cursor *c, const char *word) {
    size_t n = strlen(word);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return GIVE_UP;
    c->p += n;
    return OK;
}

/* Any JSON value at c->p, walked over without building it: containers with an explicit stack of what is open
 * (so a mismatched bracket gives up), never recursion. */
static int skip_value(Cursor *c) {
    char open[MAX_DEPTH]; /* '{' or '[' per level */
    int depth = 0;
    const unsigned char *a, *b;
    int escaped, integer;
    for (;;) {
        /* a value */
        skip_ws(c);
        if (c->p >= c->end) return GIVE_UP;
        unsigned char ch = *c->p;
        if (ch == '{' || ch == '[') {
            if (depth >= MAX_DEPTH) return GIVE_UP;
            open[depth++] = (char)ch;
            c->p++;
            skip_ws(c);
            if (c->p < c->end && *c->p == (ch == '{' ? '}' : ']')) {
                c->p++;
                depth--;
            } else if (ch == '{') {
                goto object_key;
            } else {
                continue; /* the array's first value */
            }
        } else if (ch == '"') {
            if (scan_string(c, &a, &b, &escaped)) return GIVE_UP;
        } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
            if (scan_number(c, &integer)) return GIVE_UP;
        } else if (ch == 't') {
            if (scan_literal(c, "true")) return GIVE_UP;
        } else if (ch == 'f') {
            if (scan_literal(c, "false")) return GIVE_UP;
        } else if (ch == 'n') {
            if (scan_literal(c, "null")) return GIVE_UP;
        } else {
            return GIVE_UP;
        }
        /* after a value: close containers, or go on to the next element of the innermost one */
        for (;;) {
            if (depth == 0) return OK;
            skip_ws(c);
            if (c->p >= c->end) return GIVE_UP;
            ch = *c->p++;
            if (ch == ',') break;
            if (ch != (open[depth - 1] == '{' ? '}' : ']')) return GIVE_UP;
            depth--;
        }
        if (open[depth - 1] == '[') continue; /* the next array element */
    object_key:
        skip_ws(c);
        if (c->p >= c->end || *c->p != '"') return GIVE_UP;
        if (scan_string(c, &a, &b, &escaped)) return GIVE_UP;
        skip_ws(c);
        if (c->p >= c->end || *c->p != ':') return GIVE_UP;
        c->p++;
    }
}

/* A value of a kept field: remember where it is and what it is; containers are walked over. */
static int scan_kept(Cursor *c, Span *s) {
    int escaped, integer;
    if (s->kind) return GIVE_UP; /* a duplicate key: msgspec keeps the last, we do not guess */
    skip_ws(c);
    if (c->p >= c->end) return GIVE_UP;
    unsigned char ch = *c->p;
    s->start = c->p;
    if (ch == '"') {
        if (scan_string(c, &s->start, &s->stop, &escaped) || escaped) return GIVE_UP;
        s->kind = 's';
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        if (scan_number(c, &integer)) return GIVE_UP;
        s->stop = c->p;
        s->kind = integer ? 'i' : 'f';
    } else if (ch == 'n') {
        if (scan_literal(c, "null")) return GIVE_UP;
        s->kind = 'n';
    } else {
        if (skip_value(c)) return GIVE_UP;
        s->kind = 'o';
    }
    return OK;
}

static int key_is(const unsigned char *a, const unsigned char *b, const char *word) {
    size_t n = strlen(word);
    return (size_t)(b - a) == n && memcmp(a, word, n) == 0;
}

/* ---- values into columns ------------------------------------------------------------------------------ */
static int parse_int64_text(const unsigned char *p, const unsigned char *end, int base, int64_t *out) {
    int negative = 0;
    if (p < end && *p == '-') {
        negative = 1;
        p++;
    }
    if (p >= end) return GIVE_UP;
    uint64_t limit = negative ? (UINT64_C(1) << 63) : (UINT64_C(1) << 63) - 1, v = 0;
    for (; p < end; p++) {
        unsigned d;
        if (*p >= '0' && *p <= '9') d = *p - '0';
        else if (base == 16 && *p >= 'a' && *p <= 'f') d = *p - 'a' + 10;
        else if (base == 16 && *p >= 'A' && *p <= 'F') d = *p - 'A' + 10;
        else return GIVE_UP;
        if (v > (limit - d) / (uint64_t)base) return GIVE_UP;
        v = v * (uint64_t)base + d;
    }
    *out = negative ? (int64_t)(0 - v) : (int64_t)v;
    return OK;
}

/* Whether Python's int(text) or int(text, 0) might accept the text: it is all ASCII and every character is one an
 * integer literal can hold (digits, hex letters, the 0x/0o/0b prefixes, a sign, underscores, spaces). Text with any
 * other ASCII character is no integer (columns.py's to_int then gives -1); non-ASCII text may hold Unicode digits. */
static int could_be_integer(const unsigned char *p, const unsigned char *end) {
    for (; p < end; p++) {
        unsigned char ch = *p;
        if (ch >= 0x80) return 1;
        if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') || ch == 'x' ||
              ch == 'X' || ch == 'o' || ch == 'O' || ch == '_' || ch == '+' || ch == '-' || ch == ' '))
            return 0;
    }
    return 1;
}

/* An id column's value as columns.py's _ints makes it: an integer, a decimal or "0x" string, null as -1. */
static int as_int64(const Span *s, int64_t missing, int64_t *out) {
    const unsigned char *p = s->start, *end = s->stop;
    switch (s->kind) {
    case 0:
        *out = missing;
        return OK;
    case 'n':
        *out = -1;
        return OK;
    case 'i':
        return parse_int64_text(p, end, 10, out);
    case 's':
        if (end - p >= 3 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
            /* "0x-5", "0x+5", "0x_5": Python's int() has its own rules for a sign or an underscore after the prefix */
            return is_hex(p[2]) ? parse_int64_text(p + 2, end, 16, out) : GIVE_UP;
        if (!could_be_integer(p, end)) { /* "Spans", "PyTorch Profiler": Python's int() refuses it either way */
            *out = -1;
            return OK;
        }
        if (end - p >= 1 && p[0] == '-') p++;
        if (p >= end || (*p == '0' && end - p > 1)) return GIVE_UP; /* "", "-", "007": Python's rules differ */
        return parse_int64_text(s->start, end, 10, out);
    default:
        return GIVE_UP; /* floats, booleans, containers */
    }
}

static const double POW10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A JSON number's text as a double, exactly as a correctly rounded parser gives it. The common case (at most
 * 2^53 as digits, a power of ten up to 22) is one exact multiplication or division, hence correctly rounded
 * (Clinger's fast path); anything else goes to Python's own parser. */
static int text_to_double(const unsigned char *p, const unsigned char *end, double *out) {
    const unsigned char *q = p;
    int negative = 0, exp10 = 0, digits = 0;
    uint64_t m = 0;
    if (q < end && *q == '-') {
        negative = 1;
        q++;
    }
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (m || *q != '0') digits++;
        m = m * 10 + (uint64_t)(*q - '0');
        if (digits > 18) goto slow;
    }
    if (q < end && *q == '.') {
        for (q++; q < end && *q >= '0' && *q <= '9'; q++) {
            if (m || *q != '0') digits++;
            m = m * 10 + (uint64_t)(*q - '0');
            exp10--;
            if (digits > 18) goto slow;
        }
    }
    if (q != end) goto slow; /* an exponent */
    if (m > (UINT64_C(1) << 53) || exp10 < -22) goto slow;
    double v = exp10 ? (double)m / POW10[-exp10] : (double)m;
    /* "-0" is the integer 0 to msgspec (then 0.0 in a float column); "-0.0" stays a negative zero */
    *out = negative && (m || memchr(p, '.', (size_t)(end - p))) ? -v : v;
    return OK;
slow:;
    char text[MAX_NUMBER_CHARS + 1];
    size_t n = (size_t)(end - p);
    if (n > MAX_NUMBER_CHARS) return GIVE_UP;
    memcpy(text, p, n);
    text[n] = 0;
    char *tail;
    double v2 = PyOS_string_to_double(text, &tail, NULL); /* correctly rounded, locale-independent */
    if (v2 == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return GIVE_UP;
    }
    if (*tail || !isfinite(v2)) return GIVE_UP; /* out of range: msgspec refuses it, let it say so */
    *out = v2;
    return OK;
}

static int as_double(const Span *s, double missing, double *out) {
    switch (s->kind) {
    case 0:
        *out = missing;
        return OK;
    case 'n':
        *out = NAN; /* numpy turns None into NaN in a float column */
        return OK;
    case 'i':
        if (s->stop - s->start - (*s->start == '-') > 18) return GIVE_UP; /* big integers: msgspec's rules */
        return text_to_double(s->start, s->stop, out);
    case 'f':
        return text_to_double(s->start, s->stop, out);
    default:
        return GIVE_UP;
    }
}

/* ---- the chunk ------------------------------------------------------------------------------------------ */
enum { F_PH, F_NAME, F_CAT, F_PID, F_TID, F_TS, F_DUR, F_ARGS, N_FIELDS };
enum { A_STREAM, A_CORRELATION, A_EXTERNAL_ID, A_BYTES, A_SIZE, N_ARGS };
enum { C_PID, C_TID, C_TS, C_DUR, C_STREAM, C_CORRELATION, C_EXTERNAL_ID, C_BYTES, C_SIZE, C_NAME, C_CAT, N_COLS };

static const char OTHER_PHASES[] = "BEiIbnesStTfpPNODMVvRcC()"; /* columns.py's OTHER_PHASES */

typedef struct {
    Labels names, cats;
    Buf cols[N_COLS];
    Py_ssize_t n_all;
} Chunk;

/* An object member's key at c->p (a string without escapes) and the ':' after it: the key is [*a, *b). */
static int scan_key(Cursor *c, const unsigned char **a, const unsigned char **b) {
    int escaped;
    skip_ws(c);
    if (c->p >= c->end || *c->p != '"') return GIVE_UP;
    if (scan_string(c, a, b, &escaped) || escaped) return GIVE_UP;
    skip_ws(c);
    if (c->p >= c->end || *c->p != ':') return GIVE_UP;
    c->p++;
    return OK;
}

/* After an object member: *more is 1 at a ',' (another member follows), 0 at the closing '}'. */
static int after_member(Cursor *c, int *more) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != ',' && *c->p != '}')) return GIVE_UP;
    *more = *c->p++ == ',';
    return OK;
}

static int scan_args(Cursor *c, Span *args) {
    /* at '{' */
    const unsigned char *a, *b;
    int more = 1;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') {
        c->p++;
        return OK;
    }
    while (more) {
        if (scan_key(c, &a, &b)) return GIVE_UP;
        int field = key_is(a, b, "stream")        ? A_STREAM
                    : key_is(a, b, "correlation") ? A_CORRELATION
                    : key_is(a, b, "External id") ? A_EXTERNAL_ID
                    : key_is(a, b, "bytes")       ? A_BYTES
                    : key_is(a, b, "size")        ? A_SIZE
                                                  : -1;
        if (field >= 0 ? scan_kept(c, &args[field]) : skip_value(c)) return GIVE_UP;
        if (after_member(c, &more)) return GIVE_UP;
    }
    return OK;
}

static int scan_event(Cursor *c, Chunk *out) {
    /* at '{' */
    Span f[N_FIELDS];
    Span args[N_ARGS];
    const unsigned char *a, *b;
    int args_object = 0;
    memset(f, 0, sizeof(f));
    memset(args, 0, sizeof(args));
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == '}') return GIVE_UP; /* no phase: the general decoder's case */
    for (int more = 1; more;) {
        if (scan_key(c, &a, &b)) return GIVE_UP;
        int field = -1;
        switch (b - a) {
        case 2:
            field = key_is(a, b, "ph") ? F_PH : key_is(a, b, "ts") ? F_TS : -1;
            break;
        case 3:
            field = key_is(a, b, "cat") ? F_CAT : key_is(a, b, "pid") ? F_PID : key_is(a, b, "tid") ? F_TID
                  : key_is(a, b, "dur") ? F_DUR : -1;
            break;
        case 4:
            field = key_is(a, b, "name") ? F_NAME : key_is(a, b, "args") ? F_ARGS : -1;
            break;
        }
        if (field == F_ARGS) {
            if (f[F_ARGS].kind) return GIVE_UP;
            skip_ws(c);
            if (c->p < c->end && *c->p == '{') {
                args_object = 1;
                f[F_ARGS].kind = 'o';
                if (scan_args(c, args)) return GIVE_UP;
            } else if (scan_kept(c, &f[F_ARGS])) { /* not an object: no args, as in columns.py */
                return GIVE_UP;
            }
        } else if (field >= 0 ? scan_kept(c, &f[field]) : skip_value(c)) {
            return GIVE_UP;
        }
        if (after_member(c, &more)) return GIVE_UP;
    }
    out->n_all++;
    /* the phase decides: a complete event is kept, another known phase is counted, anything else gives up */
    if (f[F_PH].kind != 's' || f[F_PH].stop - f[F_PH].start != 1) return GIVE_UP;
    unsigned char ph = *f[F_PH].start;
    if (ph != 'X') return strchr(OTHER_PHASES, ph) && ph ? OK : GIVE_UP;

    int32_t name = 0, cat = 0;
    int rc;
    if (f[F_NAME].kind != 's' && f[F_NAME].kind != 0) return GIVE_UP;
    rc = f[F_NAME].kind ? labels_code(&out->names, f[F_NAME].start, f[F_NAME].stop - f[F_NAME].start, &name)
                        : labels_code(&out->names, NULL, 0, &name);
    if (rc) return rc;
    if (f[F_CAT].kind == 's')
        rc = labels_code(&out->cats, f[F_CAT].start, f[F_CAT].stop - f[F_CAT].start, &cat);
    else if (f[F_CAT].kind == 0 || f[F_CAT].kind == 'n')
        rc = labels_code(&out->cats, NULL, 0, &cat); /* no category counts as "" */
    else
        return GIVE_UP;
    if (rc) return rc;

    int64_t ints[N_COLS];
    double ts, dur;
    if (as_int64(&f[F_PID], -1, &ints[C_PID]) || as_int64(&f[F_TID], -1, &ints[C_TID])) return GIVE_UP;
    if (as_double(&f[F_TS], NAN, &ts) || as_double(&f[F_DUR], 0.0, &dur)) return GIVE_UP;
    /* args that are not an object count as none; a number or a container there is decoded by msgspec (and may
     * be refused), so only a string or null is taken here */
    if (!args_object && f[F_ARGS].kind && f[F_ARGS].kind != 's' && f[F_ARGS].kind != 'n') return GIVE_UP;
    if (as_int64(&args[A_STREAM], -1, &ints[C_STREAM]) || as_int64(&args[A_CORRELATION], -1, &ints[C_CORRELATION]) ||
        as_int64(&args[A_EXTERNAL_ID], -1, &ints[C_EXTERNAL_ID]) || as_int64(&args[A_BYTES], NO_BYTES, &ints[C_BYTES]) ||
        as_int64(&args[A_SIZE], -1, &ints[C_SIZE]))
        return GIVE_UP;
    Buf *cols = out->cols;
    if (buf_push(&cols[C_NAME], &name, 4) || buf_push(&cols[C_CAT], &cat, 4) ||
        buf_push(&cols[C_TS], &ts, 8) || buf_push(&cols[C_DUR], &dur, 8))
        return FAILED;
    static const int int_cols[] = {C_PID, C_TID, C_STREAM, C_CORRELATION, C_EXTERNAL_ID, C_BYTES, C_SIZE};
    for (size_t i = 0; i < sizeof(int_cols) / sizeof(int_cols[0]); i++)
        if (buf_push(&cols[int_cols[i]], &ints[int_cols[i]], 8)) return FAILED;
    return OK;
}

static int scan_chunk(Cursor *c, Chunk *out) {
    skip_ws(c);
    if (c->p >= c->end || *c->p != '[') return GIVE_UP;
    c->p++;
    skip_ws(c);
    if (c->p < c->end && *c->p == ']') {
        c->p++;
    } else {
        for (;;) {
            skip_ws(c);
            if (c->p >= c->end || *c->p != '{') return GIVE_UP;
            int rc = scan_event(c, out);
            if (rc) return rc;
            skip_ws(c);
            if (c->p >= c->end) return GIVE_UP;
            if (*c->p == ',') {
                c->p++;
                continue;
            }
            if (*c->p == ']') {
                c->p++;
                break;
            }
            return GIVE_UP;
        }
    }
    skip_ws(c);
    return c->p == c->end ? OK : GIVE_UP;
}

static PyObject *as_bytearray(const Buf *b) {
    return PyByteArray_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

static PyObject *parse(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    Chunk chunk;
    memset(&chunk, 0, sizeof(chunk));
    PyObject *result = NULL;
    if (labels_init(&chunk.names) || labels_init(&chunk.cats)) goto done;
    Cursor c = {(const unsigned char *)view.buf, (const unsigned char *)view.buf + view.len};
    int rc = scan_chunk(&c, &chunk);
    if (rc == FAILED) goto done;
    if (rc == GIVE_UP) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    static const int order[] = {C_NAME, C_CAT, C_PID, C_TID, C_TS, C_DUR, C_STREAM, C_CORRELATION, C_EXTERNAL_ID,
                                C_BYTES, C_SIZE};
    result = PyTuple_New(3 + N_COLS);
    if (!result) goto done;
    PyTuple_SET_ITEM(result, 0, PyLong_FromSsize_t(chunk.n_all));
    PyTuple_SET_ITEM(result, 1, Py_NewRef(chunk.names.labels));
    PyTuple_SET_ITEM(result, 2, Py_NewRef(chunk.cats.labels));
    for (int i = 0; i < N_COLS; i++) PyTuple_SET_ITEM(result, 3 + i, as_bytearray(&chunk.cols[order[i]]));
    for (int i = 0; i < 3 + N_COLS; i++) {
        if (!PyTuple_GET_ITEM(result, i)) {
            Py_CLEAR(result);
            break;
        }
    }
done:
    labels_free(&chunk.names);
    labels_free(&chunk.cats);
    for (int i = 0; i < N_COLS; i++) free(chunk.cols[i].data);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"parse", parse, METH_O,
     "parse(body) -> None or (n_all, names, cats, name, cat, pid, tid, ts, dur, stream, correlation, external_id,"
     " bytes, size): the complete events of a JSON array of trace events as columns (see columns.parse_array)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_fastevents",
                                    "A compiled reader for the common shape of trace chunks (see _fastevents.c).",
                                    -1, methods};

PyMODINIT_FUNC PyInit__fastevents(void) {
    init_tables();
    return PyModule_Create(&module);
}
