/* Kaldi text lattices: the bytes of one lattice (its lines, up to the blank line that ends it) to the
 * arrays of lattice_tools.io._kaldi_text.RawFst, in one pass over the bytes.
 *
 * parse_block(block, kind) reads OpenFst text lines as Kaldi's LatticeHolder/CompactLatticeHolder
 * write them: `src dst word [g,a,t1_t2_...]` and `state [g,a,tids]` (CompactLattice), `src dst ilabel
 * olabel [g,a]` and `state [g,a]` (Lattice); the type is inferred from the columns when kind is 0.
 * It returns a tuple of bytearrays (numpy views them) or, for bad input, a tuple describing the first
 * error in the order the reader has always reported them (too many columns anywhere, then no lines,
 * then lines of both types, then the first bad line, then an implausibly large state id); Python
 * turns that into a FormatError naming the line (io/_kaldi_text.py, which documents the tuples).
 *
 * Numbers (numbers.h, numbers.c): integers are ASCII decimal in 0..INT32_MAX; weights are what
 * Python's float() reads (without its '_' separators), converted correctly rounded and independently
 * of the user's locale.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "numbers.h"

/* error reports: (code, then six numbers, unused ones 0); lines count from 0 in the block */
enum {
    E_COLUMNS = 1,   /* line, ncols */
    E_EMPTY = 2,     /* - */
    E_VOTE = 3,      /* line, kind, first_line, first_kind */
    E_STATE = 4,     /* line, kind, reason, tok_start, tok_end: a bad state id in column 1 */
    E_BADLINE = 5,   /* line, kind, field, reason, tok_start, tok_end; field 0: no detail */
    E_TWO_FINALS = 6,/* line, kind, state */
    E_INF_ARC = 7,   /* line, kind */
    E_BIG_STATE = 8  /* 0, kind, state, rows (Python finds the line naming the state) */
};
/* integer fields (named in messages by Python) */
enum { F_NONE = 0, F_STATE = 1, F_LABEL = 2, F_ILABEL = 3, F_OLABEL = 4, F_TID = 5 };
enum { K_AUTO = 0, K_COMPACT = 1, K_LATTICE = 2 };

/* ------------------------------------------------------------------------------------------------ */
/* growable arrays                                                                                   */
/* ------------------------------------------------------------------------------------------------ */
/* Kept in a bytearray, which is handed to Python as it is (numpy views it): no copy at the end, and
 * pages of a generous initial capacity that are never written cost nothing. */
typedef struct {
    PyObject *array;
    char *data;
    size_t len, cap, item;
} Vec;

static int vec_reserve(Vec *v, size_t cap) {
    if (cap > (size_t)PY_SSIZE_T_MAX / v->item) return -1;
    if (!v->array) v->array = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(cap * v->item));
    else if (PyByteArray_Resize(v->array, (Py_ssize_t)(cap * v->item))) return -1;
    if (!v->array) return -1;
    v->data = PyByteArray_AS_STRING(v->array);
    v->cap = cap;
    return 0;
}

static int vec_grow(Vec *v, size_t need) {
    if (v->len + need <= v->cap) return 0;
    size_t cap = v->cap ? v->cap : 256;
    while (cap < v->len + need) cap *= 2;
    return vec_reserve(v, cap);
}

/* The bytearray, cut to the items written (a new reference), or NULL. */
static PyObject *vec_take(Vec *v) {
    if (!v->array) return PyByteArray_FromStringAndSize("", 0);
    if (PyByteArray_Resize(v->array, (Py_ssize_t)(v->len * v->item))) return NULL;
    PyObject *out = v->array;
    v->array = NULL;
    return out;
}

#define VEC_AT(v, T) ((T *)(v).data)

/* ------------------------------------------------------------------------------------------------ */
/* tokens                                                                                            */
/* ------------------------------------------------------------------------------------------------ */
/* byte classes: SEP = the ASCII characters Python's str.split() splits on, except the newline, which
 * ends a line (EOL); everything else is part of a token (filled when the module is loaded) */
enum { TOKEN = 0, SEP = 1, EOL = 2 };
static unsigned char byte_class[256];

static void init_byte_class(void) {
    const char *seps = " \t\r\v\f\x1c\x1d\x1e\x1f";
    for (const char *c = seps; *c; c++) byte_class[(unsigned char)*c] = SEP;
    byte_class['\n'] = EOL;
}

/* ------------------------------------------------------------------------------------------------ */
/* the parser                                                                                        */
/* ------------------------------------------------------------------------------------------------ */
typedef struct {
    Vec src, dst, ilabel, olabel, w1, w2, tid_off, tids;  /* per arc; tids: the pool */
    Vec fstate, fline, fw1, fw2, ftid_start, ftid_end;     /* per final line, in order */
    Vec ftids;
} Out;

typedef struct {
    int code;
    long long v[6];
} Err;

static void set_err(Err *e, int code, long long a, long long b, long long c, long long d, long long f, long long g) {
    e->code = code;
    e->v[0] = a, e->v[1] = b, e->v[2] = c, e->v[3] = d, e->v[4] = f, e->v[5] = g;
}

#define MAX_COLS 5

typedef struct {
    const char *base;
    long long line;
    int kind;  /* the kind the line is parsed as */
    Err *err;
    int oom;
} Ctx;

/* the integer token [p, end) of field `field`; 0, or -1 with the error set */
static int line_int(Ctx *c, const char *p, const char *end, int field, int64_t *out) {
    int r = parse_int32(p, end, out);
    if (r == 0) return 0;
    set_err(c->err, E_BADLINE, c->line, c->kind, field, r, p - c->base, end - c->base);
    return -1;
}

/* A weight token: "g,a" (Lattice) or "g,a[,t1_t2...]" (CompactLattice), tids appended to `pool`
 * (their count in *ntids); 0, or -1 with the error set (a bad transition id names itself). */
static int parse_weight(Ctx *c, const char *p, const char *end, int compact, double *g, double *a, Vec *pool,
                        size_t *ntids) {
    const char *c1 = NULL, *c2 = NULL; /* the first two commas; a third one makes tids fail below */
    for (const char *q = p; q < end && !c2; q++) {
        if (*q == ',') {
            if (!c1) c1 = q;
            else c2 = q;
        }
    }
    const char *a_end = c2 ? c2 : end;
    *ntids = 0;
    if (!c1 || (c2 && !compact)) goto bad;
    if (c2 && c2 + 1 < end) {  /* the tids, parsed before the costs as the reader always has */
        const char *t = c2 + 1;
        for (;;) {
            const char *te = t;
            while (te < end && *te != '_') te++;
            int64_t v;
            int r = parse_int32(t, te, &v);
            if (r) {
                pool->len -= *ntids;
                *ntids = 0;
                if (memchr(c2 + 1, ',', (size_t)(end - c2 - 1))) goto bad; /* more than 3 parts */
                set_err(c->err, E_BADLINE, c->line, c->kind, F_TID, r, t - c->base, te - c->base);
                return -1;
            }
            if (pool->len == pool->cap && vec_grow(pool, 1)) {
                c->oom = 1;
                return -1;
            }
            VEC_AT(*pool, int32_t)[pool->len++] = (int32_t)v;
            (*ntids)++;
            if (te == end) break;
            t = te + 1;
        }
    }
    int r1 = parse_float(p, c1, g);
    int r2 = r1 ? r1 : parse_float(c1 + 1, a_end, a);
    if (r1 == -2 || r2 == -2) {
        c->oom = 1;
        return -1;
    }
    if (r1 == 0 && r2 == 0) return 0;
    pool->len -= *ntids;
    *ntids = 0;
bad:
    set_err(c->err, E_BADLINE, c->line, c->kind, F_NONE, 0, 0, 0);
    return -1;
}

#define PUSH(v, T, x)                                   \
    do {                                                \
        if (vec_grow(&(v), 1)) return -2;               \
        VEC_AT(v, T)[(v).len++] = (x);                  \
    } while (0)

/* One non-empty line of `n` tokens (tok[i] = start, end); 0, -1 (error set) or -2 (out of memory). */
static int parse_line(Ctx *c, Out *o, const char *const tok[][2], int n, int64_t *max_state, int64_t *start) {
    int compact = c->kind != K_LATTICE;
    int64_t s, d, il, ol;
    double g = 0.0, a = 0.0;
    size_t ntids = 0;
    int r = parse_int32(tok[0][0], tok[0][1], &s);
    if (r) {
        set_err(c->err, E_STATE, c->line, c->kind, r, tok[0][0] - c->base, tok[0][1] - c->base, 0);
        return -1;
    }
    if (*start < 0) *start = s;
    if (s > *max_state) *max_state = s;
    if (n <= 2) {
        size_t before = o->ftids.len;
        if (n == 2 && parse_weight(c, tok[1][0], tok[1][1], compact, &g, &a, &o->ftids, &ntids))
            return c->oom ? -2 : -1;
        PUSH(o->fstate, int64_t, s);
        PUSH(o->fline, int64_t, c->line);
        PUSH(o->fw1, double, g);
        PUSH(o->fw2, double, a);
        PUSH(o->ftid_start, int64_t, (int64_t)before);
        PUSH(o->ftid_end, int64_t, (int64_t)o->ftids.len);
        return 0;
    }
    if (compact ? n > 4 : n < 4) {
        set_err(c->err, E_BADLINE, c->line, c->kind, F_NONE, 0, 0, 0);
        return -1;
    }
    if (line_int(c, tok[1][0], tok[1][1], F_STATE, &d)) return -1;
    if (compact) {
        if (line_int(c, tok[2][0], tok[2][1], F_LABEL, &il)) return -1;
        ol = il;
        if (n == 4 && parse_weight(c, tok[3][0], tok[3][1], 1, &g, &a, &o->tids, &ntids)) return c->oom ? -2 : -1;
    } else {
        if (line_int(c, tok[2][0], tok[2][1], F_ILABEL, &il)) return -1;
        if (line_int(c, tok[3][0], tok[3][1], F_OLABEL, &ol)) return -1;
        if (n == 5 && parse_weight(c, tok[4][0], tok[4][1], 0, &g, &a, &o->tids, &ntids)) return c->oom ? -2 : -1;
    }
    if (isinf(g) || isinf(a)) {
        o->tids.len -= ntids;
        set_err(c->err, E_INF_ARC, c->line, c->kind, 0, 0, 0, 0);
        return -1;
    }
    if (d > *max_state) *max_state = d;
    PUSH(o->src, int64_t, s);
    PUSH(o->dst, int64_t, d);
    PUSH(o->ilabel, int64_t, il);
    PUSH(o->olabel, int64_t, ol);
    PUSH(o->w1, double, g);
    PUSH(o->w2, double, a);
    PUSH(o->tid_off, int64_t, (int64_t)o->tids.len);
    return 0;
}

/* The kind a line of `n` tokens looks like (K_AUTO: no opinion), as Kaldi's reader infers it. */
static int vote(const char *const tok[][2], int n) {
    if (n == 3) return K_COMPACT;
    if (n == 5) return K_LATTICE;
    if (n == 4) {
        for (const char *q = tok[3][0]; q < tok[3][1]; q++)
            if (*q == ',') return K_COMPACT;
        return K_LATTICE;
    }
    if (n == 2) {
        int commas = 0;
        for (const char *q = tok[1][0]; q < tok[1][1]; q++) commas += *q == ',';
        if (commas == 2) return K_COMPACT;
    }
    return K_AUTO;
}

typedef struct {
    const int64_t *state, *line;
} FinalKeys;

static FinalKeys sort_keys; /* qsort has no context argument in C11; the GIL serializes the calls */

static int cmp_final_idx(const void *x, const void *y) {
    int64_t i = *(const int64_t *)x, j = *(const int64_t *)y;
    if (sort_keys.state[i] != sort_keys.state[j]) return sort_keys.state[i] < sort_keys.state[j] ? -1 : 1;
    return sort_keys.line[i] < sort_keys.line[j] ? -1 : (sort_keys.line[i] > sort_keys.line[j]);
}

/* The earliest line that gives a state its second final weight (-1: none); its state in *state. */
static long long duplicate_final(const Out *o, int64_t *state) {
    size_t n = o->fstate.len;
    long long best = -1;
    if (n < 2) return -1;
    int64_t *idx = malloc(n * sizeof *idx);
    if (!idx) return -2;
    for (size_t i = 0; i < n; i++) idx[i] = (int64_t)i;
    sort_keys.state = VEC_AT(o->fstate, int64_t);
    sort_keys.line = VEC_AT(o->fline, int64_t);
    qsort(idx, n, sizeof *idx, cmp_final_idx);
    for (size_t i = 1; i < n; i++) {
        if (sort_keys.state[idx[i]] == sort_keys.state[idx[i - 1]] &&
            (best < 0 || sort_keys.line[idx[i]] < best)) {
            best = sort_keys.line[idx[i]];
            *state = sort_keys.state[idx[i]];
        }
    }
    free(idx);
    return best;
}

static void out_free(Out *o) {
    Vec *all[] = {&o->src, &o->dst, &o->ilabel, &o->olabel, &o->w1, &o->w2, &o->tid_off, &o->tids,
                  &o->fstate, &o->fline, &o->fw1, &o->fw2, &o->ftid_start, &o->ftid_end, &o->ftids};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) Py_XDECREF(all[i]->array);
}

static PyObject *error_tuple(const Err *e) {
    return Py_BuildValue("(iLLLLLL)", e->code, e->v[0], e->v[1], e->v[2], e->v[3], e->v[4], e->v[5]);
}

static PyObject *result_tuple(Out *o, int kind, int64_t start, int64_t num_states) {
    Vec *arrays[] = {&o->src, &o->dst, &o->ilabel, &o->olabel, &o->w1, &o->w2, &o->tid_off, &o->tids,
                           &o->fstate, &o->fw1, &o->fw2, &o->ftid_start, &o->ftid_end, &o->ftids};
    Py_ssize_t n = (Py_ssize_t)(sizeof arrays / sizeof *arrays);
    PyObject *t = PyTuple_New(3 + n);
    for (Py_ssize_t i = 0; t && i < 3 + n; i++) {
        PyObject *item = i == 0 ? PyLong_FromLong(kind) : i == 1 ? PyLong_FromLongLong(start)
                       : i == 2 ? PyLong_FromLongLong(num_states) : vec_take(arrays[i - 3]);
        if (!item) Py_CLEAR(t); /* (a tuple's unset items are NULL, which its deallocation skips) */
        else PyTuple_SET_ITEM(t, i, item);
    }
    return t;
}

static const char PARSE_DOC[] =
    "parse_block($module, block, kind, /)\n--\n\n"
    "-> tuple\n\n"
    "The lines of one Kaldi text lattice (bytes-like, lines separated by newlines, no blank line) read as\n"
    "kind 0 (inferred), 1 (CompactLattice) or 2 (Lattice).  Success: (kind, start, num_states, src, dst,\n"
    "ilabel, olabel, graph, acoustic, tid_offsets, tids, final_state, final_graph, final_acoustic,\n"
    "final_tid_start, final_tid_end, final_tids) with bytearrays of int64 / float64 / int32 (tids);\n"
    "tid_offsets has one entry per arc: the end of its tids in tids (the start is the previous arc's end).  Bad input: a shorter tuple\n"
    "of ints whose first item is an error code (see io/_kaldi_text.py).";

/* The line loop: tokens, the type vote, the parse of each line until the first bad one (after
 * which lines are still scanned for too many columns and conflicting votes, which are reported
 * first).  Returns 0, or -2 when out of memory or interrupted (Python error set). */
static int parse_lines(const char *base, const char *end, int kind_req, Out *o, Err *first_bad, Err *structural,
                       int *kind_out, int64_t *start, int64_t *max_state, long long *rows) {
    int kind = kind_req;
    long long first_vote_line = -1;
    int first_vote = K_AUTO;
    Ctx ctx = {base, 0, kind_req, first_bad, 0};
    const char *p = base;
    long long line = 0;
    for (;;) {
        const char *tok[MAX_COLS + 1][2];
        int n = 0;
        const char *q = p;
        for (;;) { /* the line's tokens, up to its newline (or the end) */
            while (q < end && byte_class[(unsigned char)*q] == SEP) q++;
            if (q == end || *q == '\n') break;
            const char *t = q;
            while (q < end && byte_class[(unsigned char)*q] == TOKEN) q++;
            if (n <= MAX_COLS) {
                tok[n][0] = t;
                tok[n][1] = q;
            }
            n++;
        }
        const char *eol = q;
        if (n > MAX_COLS) {
            if (structural->code != E_COLUMNS) set_err(structural, E_COLUMNS, line, n, 0, 0, 0, 0);
            goto next; /* reported before anything else: only the first one matters */
        }
        if (n == 0) goto next;
        (*rows)++;
        if (structural->code == E_COLUMNS) goto next;
        if (kind_req == K_AUTO) {
            int v = vote((const char *const(*)[2])tok, n);
            if (v != K_AUTO) {
                if (first_vote == K_AUTO) {
                    first_vote = v;
                    first_vote_line = line;
                    kind = v;
                } else if (v != first_vote && structural->code == 0) {
                    set_err(structural, E_VOTE, line, v, first_vote_line, first_vote, 0, 0);
                }
            }
        }
        if (first_bad->code == 0 && structural->code == 0) {
            /* before the first line that shows the type, lines parse the same either way */
            ctx.kind = kind == K_AUTO ? K_COMPACT : kind;
            ctx.line = line;
            int r = parse_line(&ctx, o, (const char *const(*)[2])tok, n, max_state, start);
            if (r == -2 || ctx.oom) {
                PyErr_NoMemory();
                return -2;
            }
        }
    next:
        line++;
        if ((line & 0xffff) == 0 && PyErr_CheckSignals()) return -2;
        if (eol == end) break;
        p = eol + 1;
    }
    *kind_out = kind == K_AUTO ? K_COMPACT : kind;
    return 0;
}

static PyObject *parse_block(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer buf;
    int kind_req;
    if (!PyArg_ParseTuple(args, "y*i", &buf, &kind_req)) return NULL;
    if (kind_req < K_AUTO || kind_req > K_LATTICE) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "kind must be 0 (auto), 1 (compact) or 2 (lattice)");
        return NULL;
    }
    Out o;
    memset(&o, 0, sizeof o);
    Vec *i64[] = {&o.src, &o.dst, &o.ilabel, &o.olabel, &o.tid_off, &o.fstate, &o.fline, &o.ftid_start,
                  &o.ftid_end};
    for (size_t i = 0; i < sizeof i64 / sizeof *i64; i++) i64[i]->item = 8;
    o.w1.item = o.w2.item = o.fw1.item = o.fw2.item = 8;
    o.tids.item = o.ftids.item = 4;
    /* room for every arc at once (an arc line takes >= 6 bytes with its newline) and a third of the
     * bytes as tids; what is never written is never touched */
    size_t lines = 1, arcs_max = ((size_t)buf.len + 1) / 6;
    for (const char *q = buf.buf, *end = q + buf.len; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++) lines++;
    Vec *per_arc[] = {&o.src, &o.dst, &o.ilabel, &o.olabel, &o.w1, &o.w2, &o.tid_off};
    for (size_t i = 0; i < sizeof per_arc / sizeof *per_arc; i++) {
        if (vec_reserve(per_arc[i], (lines < arcs_max ? lines : arcs_max) + 1)) {
            out_free(&o);
            PyBuffer_Release(&buf);
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        }
    }
    if (vec_reserve(&o.tids, (size_t)buf.len / 3 + 16)) {
        out_free(&o);
        PyBuffer_Release(&buf);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    Err first_bad = {0}, structural = {0};
    int kind = K_COMPACT;
    int64_t start = -1, max_state = -1;
    long long rows = 0;
    const char *base = buf.buf;
    PyObject *res = NULL;
    int r = parse_lines(base, base + buf.len, kind_req, &o, &first_bad, &structural, &kind, &start, &max_state,
                        &rows);
    if (r) goto done;
    Err e = {0};
    if (structural.code == E_COLUMNS) {
        e = structural;
    } else if (rows == 0) {
        set_err(&e, E_EMPTY, 0, 0, 0, 0, 0, 0);
    } else if (structural.code) {
        e = structural;
    } else {
        int64_t dup_state = 0;
        long long dup = duplicate_final(&o, &dup_state);
        if (dup == -2) {
            PyErr_NoMemory();
            goto done;
        }
        if (dup >= 0) {
            set_err(&e, E_TWO_FINALS, dup, kind, dup_state, 0, 0, 0);
        } else if (first_bad.code) {
            e = first_bad;
            e.v[1] = kind; /* the type the whole lattice turned out to be */
        } else {
            long long limit = 4 * rows > (1 << 20) ? 4 * rows : (1 << 20);
            if (max_state + 1 > limit)
                set_err(&e, E_BIG_STATE, 0, kind, max_state, rows, 0, 0);
        }
    }
    res = e.code ? error_tuple(&e) : result_tuple(&o, kind, start, max_state + 1);
done:
    out_free(&o);
    PyBuffer_Release(&buf);
    return res;
}

static PyMethodDef methods[] = {
    {"parse_block", parse_block, METH_VARARGS, PARSE_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kaldi_text",
    "Kaldi text lattices read in C (lattice_tools.io._kaldi_text is the Python side).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_kaldi_text(void) {
    init_byte_class();
    if (numbers_init()) return NULL;
    return PyModule_Create(&module);
}
