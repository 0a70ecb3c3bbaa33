/* The states and arcs of a binary CompactLattice parsed from a buffer (the parse itself is
 * kaldi_compact_body.h, which says what is read and checked): lattice_tools.io.lattices.kaldi.read_binary_fst
 * hands it the bytes after the FST header and gets the arrays of its RawFst.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kaldi_compact_body.h"

static const char PARSE_DOC[] =
    "compact_body(buf, pos, num_states, fsize) -> tuple\n\n"
    "Parses the states of a binary CompactLattice from buf[pos:] (module comment); fsize is 4 or 8.\n"
    "(0, consumed, final_w1, final_w2, final_strings, src, dst, ilabel, olabel, w1, w2, tids, tid_offsets):\n"
    "float64 / int64 / int32 (tids) arrays as bytes, final_strings a list of (state, int32 bytes) for the\n"
    "final states with a non-empty string; (1, state, what, at): the buffer ends inside `what` (0 final\n"
    "weight, 1 final string, 2 arc count, 3 arc) of `state`, whose read starts at buf[pos + at];\n"
    "(2, state, problem, value): a corrupt length (0 final string, 1 arc count, 2 arc string).";

static PyObject *vec_bytes(const Vec *v) { return PyBytes_FromStringAndSize(v->data ? v->data : "", (Py_ssize_t)(v->len * v->item)); }

static PyObject *compact_body(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    Py_ssize_t pos;
    long long num_states;
    int fsize;
    if (!PyArg_ParseTuple(args, "y*nLi", &view, &pos, &num_states, &fsize)) return NULL;
    PyObject *res = NULL, *finals = NULL;
    CompactBody b;
    compact_body_init(&b);
    if ((fsize != 4 && fsize != 8) || pos < 0 || pos > view.len || num_states < 0) {
        PyErr_SetString(PyExc_ValueError, "compact_body: fsize must be 4 or 8, pos within the buffer, num_states >= 0");
        goto done;
    }
    const unsigned char *base = (const unsigned char *)view.buf + pos, *end = (const unsigned char *)view.buf + view.len;
    BodyStop stop = {0};
    int status = compact_parse(base, end, num_states, fsize, 1, -1, &b, &stop);
    if (status == BODY_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == BODY_SHORT) {
        res = Py_BuildValue("(iLin)", BODY_SHORT, stop.state, stop.what, stop.at);
        goto done;
    }
    if (status == BODY_CORRUPT) {
        res = Py_BuildValue("(iLiL)", BODY_CORRUPT, stop.state, stop.what, stop.value);
        goto done;
    }
    if (!(finals = PyList_New(0))) goto done;
    const int64_t *flen = (const int64_t *)b.final_len.data;
    const char *ids = b.final_tids.data;
    for (long long s = 0; s < num_states; s++) {
        if (!flen[s]) continue;
        PyObject *item = Py_BuildValue("(Ly#)", s, ids, (Py_ssize_t)(4 * flen[s]));
        if (!item || PyList_Append(finals, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
        ids += 4 * flen[s];
    }
    res = Py_BuildValue("(inNNONNNNNNNN)", BODY_OK, stop.consumed, vec_bytes(&b.final_w1), vec_bytes(&b.final_w2),
                        finals, vec_bytes(&b.src), vec_bytes(&b.dst), vec_bytes(&b.ilabel), vec_bytes(&b.olabel),
                        vec_bytes(&b.w1), vec_bytes(&b.w2), vec_bytes(&b.tids), vec_bytes(&b.tid_offsets));
done:
    Py_XDECREF(finals);
    compact_body_free(&b);
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
