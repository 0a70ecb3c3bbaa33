/* Frames of a Kaldi lattice: the frame at which paths from the start reach each state, summing the
 * arcs' durations (a CompactLattice arc's tid-string length, a Lattice arc's 1 for a non-zero input
 * label), in the stored numbering; lattice_tools.io._kaldi_lattice gives the result to
 * Lattice.from_arcs as the arcs' times.  Every path must agree, else the caller splits states (a
 * determinized CompactLattice) or refuses the lattice (a frame-level Lattice).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <stdint.h>
#include <stdlib.h>

static const char FRAMES_DOC[] =
    "state_frames($module, start, src, dst, dur, frame, /)\n--\n\n"
    "-> bool\n\n"
    "Fills frame (int64, one per state) with the frame at which paths from `start` reach each\n"
    "state, following arcs src -> dst that take dur frames (int64 arrays); states no path reaches stay -1.\n"
    "False as soon as two paths reach a state at different frames (a cycle of non-zero length included).";

static PyObject *state_frames(PyObject *self, PyObject *args) {
    (void)self;
    long long start;
    PyObject *objs[4];
    if (!PyArg_ParseTuple(args, "LOOOO", &start, &objs[0], &objs[1], &objs[2], &objs[3])) return NULL;
    Py_buffer b[4];
    const char *names[4] = {"src", "dst", "dur", "frame"};
    int got = 0;
    for (; got < 4; got++)
        if (buffer_get(&b[got], objs[got], "state_frames", names[got], 'q', got == 3 ? BUF_WRITABLE : 0,
                       got == 0 || got == 3 ? -1 : buffer_items(&b[0])))
            break;
    PyObject *res = NULL;
    int64_t *order = NULL, *first = NULL, *stack = NULL;
    if (got < 4) goto done;
    const int64_t *src = b[0].buf, *dst = b[1].buf, *dur = b[2].buf;
    int64_t *frame = b[3].buf;
    Py_ssize_t n = b[3].len / 8, m = b[0].len / 8;
    for (Py_ssize_t a = 0; a < m; a++) {
        if (src[a] < 0 || src[a] >= n || dst[a] < 0 || dst[a] >= n || dur[a] < 0) {
            PyErr_SetString(PyExc_ValueError, "arc state id outside 0..len(frame)-1, or negative duration");
            goto done;
        }
    }
    for (Py_ssize_t s = 0; s < n; s++) frame[s] = -1;
    if (start < 0 || start >= n) {
        PyErr_SetString(PyExc_ValueError, "start state outside 0..len(frame)-1");
        goto done;
    }
    /* arcs grouped by source state (counting sort), then a depth-first walk from the start */
    order = malloc((size_t)(m + 1) * sizeof *order);
    first = calloc((size_t)n + 1, sizeof *first);
    stack = malloc(((size_t)n + 1) * sizeof *stack);
    if (!order || !first || !stack) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t a = 0; a < m; a++) first[src[a] + 1]++;
    for (Py_ssize_t s = 0; s < n; s++) first[s + 1] += first[s];
    for (Py_ssize_t a = 0; a < m; a++) order[first[src[a]]++] = a;
    for (Py_ssize_t s = n; s > 0; s--) first[s] = first[s - 1];
    first[0] = 0;
    int consistent = 1;
    Py_ssize_t top = 0;
    frame[start] = 0;
    stack[top++] = start;
    while (top && consistent) {
        int64_t s = stack[--top];
        for (int64_t i = first[s]; i < first[s + 1]; i++) {
            int64_t a = order[i], d = dst[a], t = frame[s] + dur[a];
            if (frame[d] < 0) {
                frame[d] = t;
                stack[top++] = d; /* (each state is pushed once: when its frame is set) */
            } else if (frame[d] != t) {
                consistent = 0;
                break;
            }
        }
    }
    res = PyBool_FromLong(consistent);
done:
    free(order);
    free(first);
    free(stack);
    for (int i = 0; i < got; i++) buffer_release(&b[i]);
    return res;
}

static PyMethodDef methods[] = {
    {"state_frames", state_frames, METH_VARARGS, FRAMES_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kaldi_frames", "Frames of Kaldi lattices (lattice_tools.io._kaldi_lattice).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_kaldi_frames(void) { return PyModule_Create(&module); }
