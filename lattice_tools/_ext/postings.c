/* One posting list of the keyword-search term index decoded (lattice_tools.kws.postings.decode_postings,
 * which documents the format and checks the arguments' types first): `count` LEB128 varints of the
 * starts in ticks (the first absolute, then differences), `count` varints of the durations in ticks, then
 * `count` little-endian IEEE float64 scores.  Every byte is checked; a damaged list is a ValueError saying
 * what is wrong.  Compiled because a term index's lists hold one or two hits, where any per-call overhead
 * is most of a look-up.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#define MAX_MICROSECONDS (((int64_t)1) << 53)

static const char DECODE_DOC[] =
    "decode($module, count, tick, data, /)\n--\n\n"
    "-> (list[int], list[int], list[float])\n\n"
    "The starts and durations (ticks times `tick`, whole microseconds) and the scores of the posting list\n"
    "`data` (bytes) of `count` hits (int >= 1); `tick` is an int in [1, 2^53].  ValueError when the list\n"
    "is damaged: too short, not 2 * count varints, a varint of more than 8 bytes, a time beyond 2^53,\n"
    "a score that is not a finite number >= 0.";

static PyObject *decode(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "decode() takes count, tick and data");
        return NULL;
    }
    if (!PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "decode(): data must be bytes");
        return NULL;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[0]);
    if (count == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return NULL;
        PyErr_Clear(); /* (a count beyond Py_ssize_t: possible from SQLite on a 32-bit build) */
        PyErr_Format(PyExc_ValueError, "posting data of %zd bytes is too short for %R hits",
                     PyBytes_GET_SIZE(args[2]), args[0]);
        return NULL;
    }
    long long tick = PyLong_AsLongLong(args[1]);
    if (tick == -1 && PyErr_Occurred()) return NULL;
    if (count < 1 || tick < 1 || tick > MAX_MICROSECONDS) {
        PyErr_SetString(PyExc_ValueError, "decode(): count must be >= 1 and tick in [1, 2^53]");
        return NULL;
    }
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(args[2]);
    Py_ssize_t len = PyBytes_GET_SIZE(args[2]);
    if (count > len / 10 || len - 8 * count < 2 * count) {
        PyErr_Format(PyExc_ValueError, "posting data of %zd bytes is too short for %zd hits", len, count);
        return NULL;
    }
    Py_ssize_t nv = len - 8 * count, want = 2 * count, got = 0;
    uint64_t *values = PyMem_Malloc((size_t)want * sizeof *values);
    if (!values) return PyErr_NoMemory();
    uint64_t value = 0;
    int shift = 0, too_long = 0;
    for (Py_ssize_t i = 0; i < nv; i++) {
        unsigned b = p[i];
        if (b >= 0x80) {
            if (shift < 56) value |= (uint64_t)(b & 0x7F) << shift; /* past 8 bytes the list is refused */
            else too_long = 1;
            if (shift < 63) shift += 7;
        } else {
            if (shift > 49) too_long = 1; /* a ninth byte */
            else if (got < want) values[got] = value | (uint64_t)b << shift;
            got++;
            value = 0;
            shift = 0;
        }
    }
    PyObject *tbeg = NULL, *dur = NULL, *score = NULL, *res = NULL;
    if (got != want || shift) {
        PyErr_Format(PyExc_ValueError, "posting data does not hold %zd hits (damaged blob)", count);
        goto done;
    }
    if (too_long) {
        PyErr_SetString(PyExc_ValueError, "posting data holds a number too large for a time (damaged blob)");
        goto done;
    }
    /* exact integers: start * tick <= 2^53  <=>  start <= 2^53 / tick (rounded down) */
    uint64_t limit = (uint64_t)(MAX_MICROSECONDS / tick), start = 0;
    for (Py_ssize_t h = 0; h < count; h++) {
        start += values[h]; /* each value < 2^56 and the sum stays <= 2^53 until it is refused: no overflow */
        if (start > limit || values[count + h] > limit) {
            PyErr_SetString(PyExc_ValueError, "posting data holds a time beyond 2^53 microseconds (damaged blob)");
            goto done;
        }
        values[h] = start;
    }
    tbeg = PyList_New(count);
    dur = PyList_New(count);
    score = PyList_New(count);
    if (!tbeg || !dur || !score) goto done;
    for (Py_ssize_t h = 0; h < count; h++) {
        const unsigned char *s = p + nv + 8 * h;
        uint64_t bits = 0;
        for (int k = 7; k >= 0; k--) bits = bits << 8 | s[k];
        double x;
        memcpy(&x, &bits, sizeof x);
        PyObject *xo = PyFloat_FromDouble(x);
        if (!xo) goto done;
        PyList_SET_ITEM(score, h, xo);
        if (!(x >= 0 && isfinite(x))) {
            PyErr_Format(PyExc_ValueError, "score %R is not a finite number >= 0", xo);
            goto done;
        }
        PyObject *t = PyLong_FromLongLong((long long)values[h] * tick);
        if (!t) goto done;
        PyList_SET_ITEM(tbeg, h, t);
        PyObject *d = PyLong_FromLongLong((long long)values[count + h] * tick);
        if (!d) goto done;
        PyList_SET_ITEM(dur, h, d);
    }
    res = PyTuple_Pack(3, tbeg, dur, score);
done:
    PyMem_Free(values);
    Py_XDECREF(tbeg);
    Py_XDECREF(dur);
    Py_XDECREF(score);
    return res;
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL, DECODE_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "postings", "Posting lists of the term index (lattice_tools.kws.postings).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_postings(void) { return PyModule_Create(&module); }
