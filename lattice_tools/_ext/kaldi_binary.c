/* The body of a binary OpenFst "vector" CompactLattice (Kaldi's binary lattice archives), after its header:
 * per state its final weight (two floats), its final transition-id string (int32 length, int32 ids), its
 * arc count (int64), then per arc ilabel, olabel (int32), graph and acoustic cost (two floats), the string
 * (int32 length, ids) and the next state (int32); floats of 4 or 8 bytes (compactlattice44 / compactlattice84),
 * little-endian.  Read in two passes over the bytes (count, then fill arrays of the right sizes) for the
 * Kaldi reader (lattice_tools/io/lattices/kaldi.py, read_binary_fst), which reads the header, checks what the
 * arrays hold (finite weights, states in range) and builds the RawFst.
 *
 * compact_body(data, pos, num_states, float_size) ->
 *     int n: the bytes from pos hold less than the body; at least n of them are needed to read on
 *     None: a corrupt count (string length outside [0, 2^24), arc count outside [0, 2^31)): the Python reader
 *           reads the body again and reports it with its state
 *     (consumed, src, dst, ilabel, olabel, w1, w2, final_w1, final_w2, tids, tid_offsets, final_state,
 *      final_offsets, final_tids): consumed = the body's length in bytes; bytes of int64 src, dst, ilabel,
 *      olabel and float64 w1 (graph), w2 (acoustic) per arc, in file order; float64 final_w1, final_w2 per
 *      state (both +inf where the final graph weight is +inf, OpenFst's Zero); int32 tids, every arc's string
 *      concatenated, with int64 tid_offsets (arcs + 1); the states with a finite final weight and a non-empty
 *      final string (int64 final_state), their strings concatenated (int32 final_tids) and int64 final_offsets
 *      (one more than final_state).
 *   data: bytes-like (uint8 items, C-contiguous; buffers.h), held only during the call; pos: where the body
 *   starts; num_states: from the header, in [0, 2^31); float_size: 4 or 8.
 * The returned bytes objects are the kernel's own (viewed with numpy.frombuffer: read-only).
 */
#include "buffers.h"
#include <math.h>
#include <stdint.h>
#include <string.h>

static inline int32_t get_i32(const unsigned char *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static inline int64_t get_i64(const unsigned char *p)
{
    int64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline double get_float(const unsigned char *p, int fsize)
{
    if (fsize == 4) {
        float f;
        memcpy(&f, p, 4);
        return (double)f;
    }
    double d;
    memcpy(&d, p, 8);
    return d;
}

enum { BODY_OK = 0, BODY_SHORT = 1, BODY_CORRUPT = 2 };

typedef struct {
    int64_t *src, *dst, *il, *ol, *tid_off, *final_state, *final_off;
    double *w1, *w2, *fw1, *fw2;
    int32_t *tids, *final_tids;
} Out;

/* One pass over the body: counts (out == NULL) or fills.  *end: bytes used (or needed, when short). */
static int body_pass(const unsigned char *b, size_t len, int64_t num_states, int fs, Out *out, int64_t *n_arcs,
                     int64_t *n_tids, int64_t *n_finals, int64_t *n_final_tids, size_t *end)
{
    size_t p = 0;
    int64_t arcs = 0, tids = 0, finals = 0, final_tids = 0;
#define NEED(k)                                                                                                        \
    do {                                                                                                               \
        if (len - p < (size_t)(k)) {                                                                                   \
            *end = p + (size_t)(k);                                                                                    \
            return BODY_SHORT;                                                                                         \
        }                                                                                                              \
    } while (0)
    for (int64_t s = 0; s < num_states; s++) {
        NEED(2 * fs + 4);
        double f1 = get_float(b + p, fs), f2 = get_float(b + p + fs, fs);
        int32_t n = get_i32(b + p + 2 * fs);
        p += 2 * fs + 4;
        if (n < 0 || n >= (1 << 24))
            return BODY_CORRUPT;
        NEED(4 * (size_t)n + 8);
        int finite = !isinf(f1);
        if (out) {
            out->fw1[s] = finite ? f1 : INFINITY;
            out->fw2[s] = finite ? f2 : INFINITY;
            if (finite && n) {
                out->final_state[finals] = s;
                out->final_off[finals] = final_tids;
                memcpy(out->final_tids + final_tids, b + p, 4 * (size_t)n);
            }
        }
        if (finite && n) {
            finals++;
            final_tids += n;
        }
        p += 4 * (size_t)n;
        int64_t narcs = get_i64(b + p);
        p += 8;
        if (narcs < 0 || narcs >= ((int64_t)1 << 31))
            return BODY_CORRUPT;
        for (int64_t a = 0; a < narcs; a++) {
            NEED(8 + 2 * fs + 4);
            int32_t na = get_i32(b + p + 8 + 2 * fs);
            if (na < 0 || na >= (1 << 24))
                return BODY_CORRUPT;
            NEED(8 + 2 * fs + 4 + 4 * (size_t)na + 4);
            if (out) {
                out->src[arcs] = s;
                out->il[arcs] = get_i32(b + p);
                out->ol[arcs] = get_i32(b + p + 4);
                out->w1[arcs] = get_float(b + p + 8, fs);
                out->w2[arcs] = get_float(b + p + 8 + fs, fs);
                out->tid_off[arcs] = tids;
                memcpy(out->tids + tids, b + p + 8 + 2 * fs + 4, 4 * (size_t)na);
                out->dst[arcs] = get_i32(b + p + 8 + 2 * fs + 4 + 4 * (size_t)na);
            }
            p += 8 + 2 * fs + 4 + 4 * (size_t)na + 4;
            arcs++;
            tids += na;
        }
    }
#undef NEED
    if (out) {
        out->tid_off[arcs] = tids;
        out->final_off[finals] = final_tids;
    }
    *n_arcs = arcs;
    *n_tids = tids;
    *n_finals = finals;
    *n_final_tids = final_tids;
    *end = p;
    return BODY_OK;
}

static PyObject *compact_body(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *data;
    Py_ssize_t pos, num_states;
    int fsize;
    Py_buffer view = {0};
    if (!PyArg_ParseTuple(args, "Onni:compact_body", &data, &pos, &num_states, &fsize)
        || buffer_get(&view, data, "compact_body", "data", 'B', BUF_FLAT, -1) < 0)
        return NULL;
    if (pos < 0 || pos > view.len || num_states < 0 || num_states >= ((Py_ssize_t)1 << 31)
        || (fsize != 4 && fsize != 8)) {
        buffer_release(&view);
        return PyErr_Format(PyExc_ValueError, "compact_body: need 0 <= pos <= len(data), 0 <= num_states < 2^31 and "
                            "float_size 4 or 8 (got %zd, %zd, %d)", pos, num_states, fsize);
    }
    const unsigned char *b = (const unsigned char *)view.buf + pos;
    size_t len = (size_t)(view.len - pos), end = 0;
    int64_t n_arcs, n_tids, n_finals, n_final_tids;
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = body_pass(b, len, num_states, fsize, NULL, &n_arcs, &n_tids, &n_finals, &n_final_tids, &end);
    Py_END_ALLOW_THREADS
    if (status == BODY_SHORT) {
        buffer_release(&view);
        return PyLong_FromSize_t(end);
    }
    if (status == BODY_CORRUPT) {
        buffer_release(&view);
        Py_RETURN_NONE;
    }
    enum { SRC, DST, IL, OL, W1, W2, FW1, FW2, TIDS, TID_OFF, FSTATE, FOFF, FTIDS, N };
    const int64_t items[N] = {n_arcs, n_arcs, n_arcs, n_arcs, n_arcs, n_arcs, num_states, num_states, n_tids,
                              n_arcs + 1, n_finals, n_finals + 1, n_final_tids};
    const size_t size[N] = {8, 8, 8, 8, 8, 8, 8, 8, 4, 8, 8, 8, 4};
    PyObject *col[N] = {0}, *result = NULL;
    for (int k = 0; k < N; k++)
        if (!(col[k] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(items[k] * (int64_t)size[k]))))
            goto done;
#define AT(k) ((void *)PyBytes_AS_STRING(col[k]))
    Out out = {AT(SRC), AT(DST), AT(IL), AT(OL), AT(TID_OFF), AT(FSTATE), AT(FOFF), AT(W1), AT(W2), AT(FW1), AT(FW2),
               AT(TIDS), AT(FTIDS)};
#undef AT
    Py_BEGIN_ALLOW_THREADS
    body_pass(b, len, num_states, fsize, &out, &n_arcs, &n_tids, &n_finals, &n_final_tids, &end);
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nOOOOOOOOOOOOO)", (Py_ssize_t)end, col[SRC], col[DST], col[IL], col[OL], col[W1],
                           col[W2], col[FW1], col[FW2], col[TIDS], col[TID_OFF], col[FSTATE], col[FOFF], col[FTIDS]);
done:
    for (int k = 0; k < N; k++)
        Py_XDECREF(col[k]);
    buffer_release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"compact_body", compact_body, METH_VARARGS,
     "compact_body(data, pos, num_states, float_size) -> int | None | (consumed, src, dst, ilabel, olabel, w1, w2,\n"
     "    final_w1, final_w2, tids, tid_offsets, final_state, final_offsets, final_tids)\n\n"
     "The body of a binary CompactLattice starting at data[pos] (after its header): an int when more bytes are\n"
     "needed (at least that many from pos), None for a corrupt count, else its arrays as bytes (see the\n"
     "module's documentation)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kaldi_binary",
                                    "The body of a binary Kaldi CompactLattice in two passes.", -1, methods};

PyMODINIT_FUNC PyInit_kaldi_binary(void)
{
    return PyModule_Create(&module);
}
