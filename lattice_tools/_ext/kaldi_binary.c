/* The states and arcs of a binary CompactLattice (OpenFst "vector" FST of arc type compactlattice44 or
 * compactlattice84) parsed from a buffer: lattice_tools.io.lattices.kaldi.read_binary_fst hands it the bytes
 * after the FST header.  Per state: its final weight (two float32 or float64), its final transition-id
 * string (int32 length, int32 ids), its arc count (int64), then per arc ilabel, olabel (int32), weight (two
 * floats), string (int32 length, int32 ids), next state (int32), all little-endian.
 *
 * The buffer may end before the FST does (the reader streams): the parse then reports where it stopped, and
 * the caller reads more and parses again, or reports the truncation with the position and what was being
 * read.  Lengths are checked as the reader in Python checked them (a string of 0 .. 2^24 - 1 ids, an arc
 * count of 0 .. 2^31 - 1); arrays grow as the parse goes, so a corrupt count fails at the end of the input,
 * not in malloc.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { OK = 0, SHORT = 1, CORRUPT = 2 };
/* what a SHORT parse was reading */
enum { FINAL_WEIGHT = 0, FINAL_STRING = 1, ARC_COUNT = 2, ARC = 3 };
/* what a CORRUPT parse found */
enum { BAD_FINAL_STRING = 0, BAD_ARC_COUNT = 1, BAD_ARC_STRING = 2 };

typedef struct {
    char *data;
    size_t len, cap, item;
} Vec;

static int vec_push(Vec *v, const void *x) {
    if (v->len == v->cap) {
        size_t cap = v->cap ? 2 * v->cap : 256;
        char *p = realloc(v->data, cap * v->item);
        if (!p) return -1;
        v->data = p, v->cap = cap;
    }
    memcpy(v->data + v->len * v->item, x, v->item);
    v->len++;
    return 0;
}

static PyObject *vec_bytes(const Vec *v) { return PyBytes_FromStringAndSize(v->data ? v->data : "", (Py_ssize_t)(v->len * v->item)); }

static int32_t get_i32(const unsigned char *p) {
    uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    int32_t x;
    memcpy(&x, &u, 4);
    return x;
}

static int64_t get_i64(const unsigned char *p) {
    uint64_t u = 0;
    for (int i = 7; i >= 0; i--) u = u << 8 | p[i];
    int64_t x;
    memcpy(&x, &u, 8);
    return x;
}

static double get_real(const unsigned char *p, int fsize) {
    if (fsize == 4) {
        uint32_t u = (uint32_t)get_i32(p);
        float f;
        memcpy(&f, &u, 4);
        return (double)f;
    }
    uint64_t u = (uint64_t)get_i64(p);
    double d;
    memcpy(&d, &u, 8);
    return d;
}

static const char PARSE_DOC[] =
    "compact_body(buf, pos, num_states, fsize) -> tuple\n\n"
    "Parses the states of a binary CompactLattice from buf[pos:] (module comment); fsize is 4 or 8.\n"
    "(0, consumed, final_w1, final_w2, final_strings, src, dst, ilabel, olabel, w1, w2, tids, tid_offsets):\n"
    "float64 / int64 / int32 (tids) arrays as bytes, final_strings a list of (state, int32 bytes) for the\n"
    "final states with a non-empty string; (1, state, what, at): the buffer ends inside `what` (0 final\n"
    "weight, 1 final string, 2 arc count, 3 arc) of `state`, whose read starts at buf[pos + at];\n"
    "(2, state, problem, value): a corrupt length (0 final string, 1 arc count, 2 arc string).";

static PyObject *compact_body(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t pos;
    long long num_states;
    int fsize;
    if (!PyArg_ParseTuple(args, "y*nLi", &view, &pos, &num_states, &fsize)) return NULL;
    PyObject *res = NULL, *finals = NULL;
    Vec fw1 = {0, 0, 0, 8}, fw2 = {0, 0, 0, 8}, src = {0, 0, 0, 8}, dst = {0, 0, 0, 8}, il = {0, 0, 0, 8},
        ol = {0, 0, 0, 8}, w1 = {0, 0, 0, 8}, w2 = {0, 0, 0, 8}, tids = {0, 0, 0, 4}, offs = {0, 0, 0, 8};
    if ((fsize != 4 && fsize != 8) || pos < 0 || pos > view.len || num_states < 0) {
        PyErr_SetString(PyExc_ValueError, "compact_body: fsize must be 4 or 8, pos within the buffer, num_states >= 0");
        goto done;
    }
    if (!(finals = PyList_New(0))) goto done;
    const unsigned char *p = (const unsigned char *)view.buf + pos, *end = (const unsigned char *)view.buf + view.len;
    const unsigned char *base = p;
    int64_t zero = 0;
    if (vec_push(&offs, &zero) < 0) goto nomem;
#define NEED(n, what)                                                                                     \
    if ((size_t)(end - p) < (size_t)(n)) {                                                                \
        res = Py_BuildValue("(iLin)", SHORT, (long long)s, (what), (Py_ssize_t)(at - base));                \
        goto done;                                                                                        \
    }
    for (long long s = 0; s < num_states; s++) {
        const unsigned char *at = p;
        NEED(2 * fsize, FINAL_WEIGHT)
        double fa = get_real(p, fsize), fb = get_real(p + fsize, fsize);
        p += 2 * fsize;
        at = p;
        NEED(4, FINAL_STRING)
        int32_t n = get_i32(p);
        p += 4;
        if (n < 0 || n >= 1 << 24) {
            res = Py_BuildValue("(iLiL)", CORRUPT, s, BAD_FINAL_STRING, (long long)n);
            goto done;
        }
        at = p;
        NEED(4 * (size_t)n, FINAL_STRING)
        const unsigned char *final_ids = p;
        p += 4 * (size_t)n;
        if (!isinf(fa)) {
            if (vec_push(&fw1, &fa) < 0 || vec_push(&fw2, &fb) < 0) goto nomem;
            if (n) {
                PyObject *item = Py_BuildValue("(Ly#)", s, (const char *)final_ids, (Py_ssize_t)(4 * (size_t)n));
                if (!item || PyList_Append(finals, item) < 0) {
                    Py_XDECREF(item);
                    goto done;
                }
                Py_DECREF(item);
            }
        } else {
            double inf = INFINITY;
            if (vec_push(&fw1, &inf) < 0 || vec_push(&fw2, &inf) < 0) goto nomem;
        }
        at = p;
        NEED(8, ARC_COUNT)
        int64_t narcs = get_i64(p);
        p += 8;
        if (narcs < 0 || narcs >= (int64_t)1 << 31) {
            res = Py_BuildValue("(iLiL)", CORRUPT, s, BAD_ARC_COUNT, (long long)narcs);
            goto done;
        }
        for (int64_t a = 0; a < narcs; a++) {
            at = p;
            size_t head = 12 + 2 * (size_t)fsize;
            NEED(head, ARC)
            int64_t ilabel = get_i32(p), olabel = get_i32(p + 4);
            double g = get_real(p + 8, fsize), ac = get_real(p + 8 + fsize, fsize);
            int32_t len = get_i32(p + 8 + 2 * fsize);
            p += head;
            if (len < 0 || len >= 1 << 24) {
                res = Py_BuildValue("(iLiL)", CORRUPT, s, BAD_ARC_STRING, (long long)len);
                goto done;
            }
            at = p;
            NEED(4 * (size_t)len, ARC)
            const unsigned char *ids = p;
            p += 4 * (size_t)len;
            at = p;
            NEED(4, ARC)
            int64_t ns = get_i32(p);
            p += 4;
            int64_t from = s;
            for (int32_t i = 0; i < len; i++) {
                int32_t t = get_i32(ids + 4 * (size_t)i);
                if (vec_push(&tids, &t) < 0) goto nomem;
            }
            int64_t off = (int64_t)tids.len;
            if (vec_push(&src, &from) < 0 || vec_push(&dst, &ns) < 0 || vec_push(&il, &ilabel) < 0 ||
                vec_push(&ol, &olabel) < 0 || vec_push(&w1, &g) < 0 || vec_push(&w2, &ac) < 0 ||
                vec_push(&offs, &off) < 0)
                goto nomem;
        }
    }
#undef NEED
    res = Py_BuildValue("(inNNONNNNNNNN)", OK, (Py_ssize_t)(p - base), vec_bytes(&fw1), vec_bytes(&fw2), finals,
                        vec_bytes(&src), vec_bytes(&dst), vec_bytes(&il), vec_bytes(&ol), vec_bytes(&w1),
                        vec_bytes(&w2), vec_bytes(&tids), vec_bytes(&offs));
    goto done;
nomem:
    PyErr_NoMemory();
done:
    Py_XDECREF(finals);
    free(fw1.data), free(fw2.data), free(src.data), free(dst.data), free(il.data), free(ol.data), free(w1.data);
    free(w2.data), free(tids.data), free(offs.data);
    PyBuffer_Release(&view);
    return res;
}

static PyMethodDef methods[] = {
    {"compact_body", compact_body, METH_VARARGS, PARSE_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kaldi_binary", "Binary CompactLattices parsed (lattice_tools.io.lattices.kaldi).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_kaldi_binary(void) { return PyModule_Create(&module); }
