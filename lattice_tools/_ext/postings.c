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

/* The little-endian IEEE double at s (a hit's score). */
static double le_double(const unsigned char *s) {
    uint64_t bits = 0;
    for (int k = 7; k >= 0; k--) bits = bits << 8 | s[k];
    double x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

static const char DECODE_DOC[] =
    "decode($module, count, tick, data, /)\n--\n\n"
    "-> (list[int], list[int], list[float])\n\n"
    "The starts and durations (ticks times `tick`, whole microseconds) and the scores of the posting list\n"
    "`data` (bytes) of `count` hits (int >= 1); `tick` is an int in [1, 2^53].  ValueError when the list\n"
    "is damaged: too short, not 2 * count varints, a varint of more than 8 bytes, a time beyond 2^53,\n"
    "a score that is not a finite number >= 0.";

/* What parse() found wrong with a posting list (in the order decode() has always reported them). */
enum fault { GOOD = 0, SHORT, NOT_COUNT_HITS, TOO_LARGE, BEYOND, BAD_SCORE };

/* The one check of a posting list's bytes, shared by decode() and problem(): every varint parsed, the times
 * bounded with exact integers, every score tested.  `values` (2 * count slots, or NULL) receives the starts
 * (summed) and the durations in ticks; `bad_score` the first score refused. */
static enum fault parse(Py_ssize_t count, long long tick, const unsigned char *p, Py_ssize_t len, uint64_t *values,
                        double *bad_score) {
    if (count > len / 10 || len - 8 * count < 2 * count) return SHORT;
    Py_ssize_t nv = len - 8 * count, want = 2 * count, got = 0;
    /* exact integers: start * tick <= 2^53  <=>  start <= 2^53 / tick (rounded down) */
    uint64_t limit = (uint64_t)(MAX_MICROSECONDS / tick), start = 0, value = 0;
    int shift = 0, too_long = 0, beyond = 0;
    for (Py_ssize_t i = 0; i < nv; i++) {
        unsigned b = p[i];
        if (b >= 0x80) {
            if (shift < 56) value |= (uint64_t)(b & 0x7F) << shift; /* past 8 bytes the list is refused */
            else too_long = 1;
            if (shift < 63) shift += 7;
        } else {
            if (shift > 49) too_long = 1; /* a ninth byte */
            else if (got < want) {
                value |= (uint64_t)b << shift;
                if (got < count) {
                    /* each value < 2^56 and the sum stays <= 2^53 until it is refused: no overflow */
                    if (!beyond) start += value;
                    if (start > limit) beyond = 1;
                    if (values) values[got] = start;
                } else {
                    if (value > limit) beyond = 1;
                    if (values) values[got] = value;
                }
            }
            got++;
            value = 0;
            shift = 0;
        }
    }
    if (got != want || shift) return NOT_COUNT_HITS;
    if (too_long) return TOO_LARGE;
    if (beyond) return BEYOND;
    for (Py_ssize_t h = 0; h < count; h++) {
        double x = le_double(p + nv + 8 * h);
        if (!(x >= 0 && isfinite(x))) {
            *bad_score = x;
            return BAD_SCORE;
        }
    }
    return GOOD;
}

/* The message of a fault (a new str), as decode_postings words it. */
static PyObject *fault_text(enum fault f, Py_ssize_t count, Py_ssize_t len, double bad_score) {
    switch (f) {
    case SHORT:
        return PyUnicode_FromFormat("posting data of %zd bytes is too short for %zd hits", len, count);
    case NOT_COUNT_HITS:
        return PyUnicode_FromFormat("posting data does not hold %zd hits (damaged blob)", count);
    case TOO_LARGE:
        return PyUnicode_FromString("posting data holds a number too large for a time (damaged blob)");
    case BEYOND:
        return PyUnicode_FromString("posting data holds a time beyond 2^53 microseconds (damaged blob)");
    case BAD_SCORE: {
        PyObject *xo = PyFloat_FromDouble(bad_score);
        if (!xo) return NULL;
        PyObject *text = PyUnicode_FromFormat("score %R is not a finite number >= 0", xo);
        Py_DECREF(xo);
        return text;
    }
    default:
        Py_RETURN_NONE;
    }
}

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
    uint64_t *values = NULL;
    PyObject *tbeg = NULL, *dur = NULL, *score = NULL, *res = NULL;
    if (count <= len / 10) {
        values = PyMem_Malloc((size_t)(2 * count) * sizeof *values);
        if (!values) return PyErr_NoMemory();
    }
    double bad_score = 0;
    enum fault f = parse(count, tick, p, len, values, &bad_score);
    if (f != GOOD) {
        PyObject *text = fault_text(f, count, len, bad_score);
        if (text) {
            PyErr_SetObject(PyExc_ValueError, text);
            Py_DECREF(text);
        }
        goto done;
    }
    Py_ssize_t nv = len - 8 * count;
    tbeg = PyList_New(count);
    dur = PyList_New(count);
    score = PyList_New(count);
    if (!tbeg || !dur || !score) goto done;
    for (Py_ssize_t h = 0; h < count; h++) {
        double x = le_double(p + nv + 8 * h);
        PyObject *xo = PyFloat_FromDouble(x);
        if (!xo) goto done;
        PyList_SET_ITEM(score, h, xo);
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

static const char PROBLEM_DOC[] =
    "problem($module, count, tick, data, /)\n--\n\n"
    "-> str | None\n\n"
    "What is wrong with the posting list (count, tick, data), in the words of decode_postings, or None when\n"
    "nothing: the same check as decode() without building its lists.  Any argument types (the values of an\n"
    "SQLite row): a count that is not an int >= 1, a tick not an int in [1, 2^53] or data not bytes is a problem.";

static PyObject *problem(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "problem() takes count, tick and data");
        return NULL;
    }
    PyObject *co = args[0], *to = args[1], *data = args[2];
    Py_ssize_t count = -1;
    if (PyLong_CheckExact(co)) {
        int overflow = 0;
        long long c = PyLong_AsLongLongAndOverflow(co, &overflow);
        if (c == -1 && PyErr_Occurred()) return NULL;
        count = overflow > 0 ? PY_SSIZE_T_MAX : (c < 1 ? -1 : (c > PY_SSIZE_T_MAX ? PY_SSIZE_T_MAX : (Py_ssize_t)c));
    }
    if (count < 1) return PyUnicode_FromFormat("hit count %R is not an integer >= 1", co);
    long long tick = -1;
    if (PyLong_CheckExact(to)) {
        int overflow = 0;
        tick = PyLong_AsLongLongAndOverflow(to, &overflow);
        if (tick == -1 && PyErr_Occurred()) return NULL;
        if (overflow) tick = -1;
    }
    if (tick < 1 || tick > MAX_MICROSECONDS) return PyUnicode_FromFormat("time tick %R is not an integer in [1, 2^53]", to);
    if (!PyBytes_Check(data))
        return PyUnicode_FromFormat("posting data is %s, not a blob", Py_TYPE(data)->tp_name);
    Py_ssize_t len = PyBytes_GET_SIZE(data);
    if (count == PY_SSIZE_T_MAX) /* beyond any length */
        return PyUnicode_FromFormat("posting data of %zd bytes is too short for %R hits", len, co);
    double bad_score = 0;
    enum fault f = parse(count, tick, (const unsigned char *)PyBytes_AS_STRING(data), len, NULL, &bad_score);
    return fault_text(f, count, len, bad_score);
}

static PyMethodDef methods[] = {
    {"decode", (PyCFunction)(void (*)(void))decode, METH_FASTCALL, DECODE_DOC},
    {"problem", (PyCFunction)(void (*)(void))problem, METH_FASTCALL, PROBLEM_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "postings", "Posting lists of the term index (lattice_tools.kws.postings).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_postings(void) { return PyModule_Create(&module); }
