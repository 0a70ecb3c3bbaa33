/* The linear-time graph loops of lattice_tools.algorithms.kaldi_order that depend on Kaldi's order of
 * states and arcs: OpenFst's depth-first TopSort, Kaldi's CompactLatticeStateTimes, the tropical
 * ShortestPath (n = 1) with float32 weights and Kaldi's CompactLatticeShortestPath (double sums).  Their
 * oracles are the plain-Python transcriptions in tests/_reference/kaldi_order.py
 * (tests/test_kaldi_order_loops.py compares them).
 *
 * Arrays cross as buffers (no numpy headers): every argument's type and size is checked on entry and
 * every index before it is followed, so no input reads or writes out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* arc_offsets (num_states + 1 items) runs from 0 to num_arcs without decreasing; arc_dst are states. */
static int check_graph(const char *fn, const Py_buffer *offsets, const Py_buffer *dst, Py_ssize_t num_states)
{
    const int64_t *off = offsets->buf, *d = dst->buf;
    const Py_ssize_t m = buffer_items(dst);
    if (buffer_check_items(offsets, fn, "arc_offsets", num_states + 1) < 0)
        return -1;
    if (off[0] != 0 || off[num_states] != m) {
        PyErr_Format(PyExc_ValueError, "%s: arc_offsets must run from 0 to len(arc_dst) = %zd", fn, m);
        return -1;
    }
    for (Py_ssize_t s = 0; s < num_states; s++)
        if (off[s + 1] < off[s]) {
            PyErr_Format(PyExc_ValueError, "%s: arc_offsets decreases at state %zd", fn, s);
            return -1;
        }
    for (Py_ssize_t a = 0; a < m; a++)
        if (d[a] < 0 || d[a] >= num_states) {
            PyErr_Format(PyExc_ValueError, "%s: arc_dst[%zd] = %lld is not a state (0 .. %zd)", fn, a,
                         (long long)d[a], num_states - 1);
            return -1;
        }
    return 0;
}

PyDoc_STRVAR(top_sort_doc,
"top_sort($module, start, arc_offsets, arc_dst, new_id, /)\n--\n\n"
"-> bool\n\n"
"OpenFst's TopSort: depth-first search from start (then from every unvisited state in increasing order),\n"
"the arcs of state s being arc_dst[arc_offsets[s]:arc_offsets[s + 1]] in stored order; new_id[s] (int64,\n"
"writable, num_states items) receives the position of s in the reverse finishing order.  Returns False\n"
"(new_id undefined) if there is a cycle.");

static PyObject *top_sort(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t start;
    PyObject *o_off, *o_dst, *o_new;
    Py_buffer off = {0}, dst = {0}, out = {0};
    PyObject *result = NULL;
    unsigned char *color = NULL;
    int64_t *stack_state = NULL, *stack_arc = NULL, *finish = NULL;
    if (!PyArg_ParseTuple(args, "nOOO:top_sort", &start, &o_off, &o_dst, &o_new))
        return NULL;
    if (buffer_get(&off, o_off, "top_sort", "arc_offsets", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "top_sort", "arc_dst", 'q', 0, -1) < 0 ||
        buffer_get(&out, o_new, "top_sort", "new_id", 'q', BUF_WRITABLE, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&out);
    if (check_graph("top_sort", &off, &dst, n) < 0)
        goto done;
    if (n == 0 || start < 0 || start >= n) {
        PyErr_Format(PyExc_ValueError, "top_sort: start %zd is not a state (0 .. %zd)", start, n - 1);
        goto done;
    }
    const int64_t *o = off.buf, *d = dst.buf;
    int64_t *new_id = out.buf;
    color = calloc((size_t)n, 1);  /* 0 white, 1 grey, 2 black */
    stack_state = malloc(sizeof(int64_t) * (size_t)n);
    stack_arc = malloc(sizeof(int64_t) * (size_t)n);
    finish = malloc(sizeof(int64_t) * (size_t)n);
    if (!color || !stack_state || !stack_arc || !finish) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t n_finished = 0, root = start;
    int acyclic = 1;
    for (;;) {
        if (color[root] == 0) {
            Py_ssize_t depth = 0;
            color[root] = 1;
            stack_state[0] = root;
            stack_arc[0] = o[root];
            depth = 1;
            while (depth > 0 && acyclic) {
                const int64_t s = stack_state[depth - 1];
                int64_t a = stack_arc[depth - 1];
                const int64_t end = o[s + 1];
                int pushed = 0;
                while (a < end) {
                    const int64_t t = d[a++];
                    if (color[t] == 0) {
                        stack_arc[depth - 1] = a;
                        color[t] = 1;
                        stack_state[depth] = t;  /* depth < n: every state on the stack is grey, once */
                        stack_arc[depth] = o[t];
                        depth++;
                        pushed = 1;
                        break;
                    }
                    if (color[t] == 1) {
                        acyclic = 0;
                        break;
                    }
                }
                if (!pushed && acyclic) {
                    color[s] = 2;
                    finish[n_finished++] = s;
                    depth--;
                }
            }
            if (!acyclic)
                break;
        }
        /* next root: 0 after the start's tree, then increasing */
        Py_ssize_t next = root == start ? 0 : root + 1;
        while (next < n && color[next] != 0)
            next++;
        if (next >= n)
            break;
        root = next;
    }
    if (acyclic)
        for (Py_ssize_t i = 0; i < n_finished; i++)
            new_id[finish[i]] = n_finished - 1 - i;
    result = PyBool_FromLong(acyclic);
done:
    free(color);
    free(stack_state);
    free(stack_arc);
    free(finish);
    buffer_release(&off);
    buffer_release(&dst);
    buffer_release(&out);
    return result;
}

PyDoc_STRVAR(state_times_doc,
"state_times($module, src, dst, dur, times, strict, /)\n--\n\n"
"-> int\n\n"
"Kaldi's CompactLatticeStateTimes over arcs sorted by source (int64 src, dst, dur of equal length): the\n"
"frame of every state (times: int64, writable, one per state), the first arc reaching a state setting it\n"
"(an arc from a state not reached yet counts from -1).  Returns -1, with unreached states at frame 0; with\n"
"strict, the first state reached at two different frames, times then left as they were at that arc.");

static PyObject *state_times(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_src, *o_dst, *o_dur, *o_times;
    int strict;
    Py_buffer src = {0}, dst = {0}, dur = {0}, out = {0};
    PyObject *result = NULL;
    if (!PyArg_ParseTuple(args, "OOOOp:state_times", &o_src, &o_dst, &o_dur, &o_times, &strict))
        return NULL;
    if (buffer_get(&src, o_src, "state_times", "src", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "state_times", "dst", 'q', 0, -1) < 0 ||
        buffer_get(&dur, o_dur, "state_times", "dur", 'q', 0, -1) < 0 ||
        buffer_get(&out, o_times, "state_times", "times", 'q', BUF_WRITABLE, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&out), m = buffer_items(&src);
    if (buffer_items(&dst) != m || buffer_items(&dur) != m) {
        PyErr_Format(PyExc_ValueError, "state_times: src, dst and dur must have the same length (%zd, %zd, %zd)",
                     m, buffer_items(&dst), buffer_items(&dur));
        goto done;
    }
    const int64_t *s = src.buf, *d = dst.buf, *du = dur.buf;
    int64_t *t = out.buf;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "state_times: times is empty (a lattice has at least one state)");
        goto done;
    }
    for (Py_ssize_t a = 0; a < m; a++)
        if (s[a] < 0 || s[a] >= n || d[a] < 0 || d[a] >= n) {
            PyErr_Format(PyExc_ValueError, "state_times: arc %zd (%lld -> %lld) has a state outside 0 .. %zd", a,
                         (long long)s[a], (long long)d[a], n - 1);
            goto done;
        }
    t[0] = 0;
    for (Py_ssize_t i = 1; i < n; i++)
        t[i] = -1;
    for (Py_ssize_t a = 0; a < m; a++) {
        const int64_t want = t[s[a]] + du[a];
        const int64_t have = t[d[a]];
        if (have < 0) {
            t[d[a]] = want;
        } else if (have != want && strict) {
            result = PyLong_FromLongLong((long long)d[a]);
            goto done;
        }
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (t[i] < 0)
            t[i] = 0;
    result = PyLong_FromLong(-1);
done:
    buffer_release(&src);
    buffer_release(&dst);
    buffer_release(&dur);
    buffer_release(&out);
    return result;
}

/* The state arc a leaves: the last state s with arc_offsets[s] <= a (states without arcs share offsets). */
static Py_ssize_t arc_source(const int64_t *offsets, Py_ssize_t num_states, int64_t a)
{
    Py_ssize_t lo = 0, hi = num_states;
    while (hi - lo > 1) {
        const Py_ssize_t mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= a)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

PyDoc_STRVAR(tropical_best_path_doc,
"tropical_best_path($module, arc_offsets, arc_dst, arc_cost, final_cost, /)\n--\n\n"
"-> list\n\n"
"OpenFst's ShortestPath (n = 1) on a topologically numbered FST with float32 weights (arc_cost per arc,\n"
"final_cost per state, inf = not final): states relaxed in numeric order, an arc replaces a distance only\n"
"if its float32 sum is strictly better, the first best final state wins.  Returns the arcs of the path\n"
"(empty if no final state is reachable).");

static PyObject *tropical_best_path(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_off, *o_dst, *o_cost, *o_fin;
    Py_buffer off = {0}, dst = {0}, cost = {0}, fin = {0};
    PyObject *result = NULL;
    float *dist = NULL;
    int64_t *parent = NULL;
    if (!PyArg_ParseTuple(args, "OOOO:tropical_best_path", &o_off, &o_dst, &o_cost, &o_fin))
        return NULL;
    if (buffer_get(&off, o_off, "tropical_best_path", "arc_offsets", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "tropical_best_path", "arc_dst", 'q', 0, -1) < 0 ||
        buffer_get(&cost, o_cost, "tropical_best_path", "arc_cost", 'f', 0, -1) < 0 ||
        buffer_get(&fin, o_fin, "tropical_best_path", "final_cost", 'f', 0, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&fin);
    if (check_graph("tropical_best_path", &off, &dst, n) < 0)
        goto done;
    if (buffer_items(&cost) != buffer_items(&dst)) {
        PyErr_Format(PyExc_ValueError, "tropical_best_path: arc_cost has %zd items, arc_dst %zd", buffer_items(&cost),
                     buffer_items(&dst));
        goto done;
    }
    if (n == 0) {
        result = PyList_New(0);
        goto done;
    }
    const int64_t *o = off.buf, *d = dst.buf;
    const float *c = cost.buf, *f = fin.buf;
    dist = malloc(sizeof(float) * (size_t)n);
    parent = malloc(sizeof(int64_t) * (size_t)n);
    if (!dist || !parent) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        dist[s] = INFINITY;
        parent[s] = -1;
    }
    dist[0] = 0.0f;
    float f_dist = INFINITY;
    Py_ssize_t f_state = -1;
    for (Py_ssize_t s = 0; s < n; s++) {
        const float sd = dist[s];
        if (sd == INFINITY)
            continue;
        if (f[s] != INFINITY) {
            const float t = (float)((double)sd + (double)f[s]);  /* the float32 sum, rounded once */
            if (t < f_dist) {
                f_dist = t;
                f_state = s;
            }
        }
        for (int64_t a = o[s]; a < o[s + 1]; a++) {
            const float w = (float)((double)sd + (double)c[a]);
            if (w < dist[d[a]]) {
                dist[d[a]] = w;
                parent[d[a]] = a;
            }
        }
    }
    /* the path backwards, twice: its length, then its arcs (a parent chain longer than the number
     * of states means the numbering was not topological) */
    Py_ssize_t len = 0;
    for (Py_ssize_t s = f_state; s > 0; s = arc_source(o, n, parent[s])) {
        if (parent[s] < 0 || ++len > n) {
            PyErr_SetString(PyExc_ValueError, "tropical_best_path: the states are not numbered topologically");
            goto done;
        }
    }
    result = PyList_New(len);
    if (!result)
        goto done;
    Py_ssize_t i = len;
    for (Py_ssize_t s = f_state; s > 0; s = arc_source(o, n, parent[s])) {
        PyObject *v = PyLong_FromLongLong((long long)parent[s]);
        if (!v) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, --i, v);
    }
done:
    free(dist);
    free(parent);
    buffer_release(&off);
    buffer_release(&dst);
    buffer_release(&cost);
    buffer_release(&fin);
    return result;
}

PyDoc_STRVAR(compact_shortest_path_doc,
"compact_shortest_path($module, arc_offsets, arc_dst, arc_cost, final_cost, /)\n--\n\n"
"-> (list, int)\n\n"
"Kaldi's CompactLatticeShortestPath on a topologically numbered lattice (start 0; arc_cost per arc and\n"
"final_cost per state as float64, inf = not final): states relaxed in numeric order, a state keeps the\n"
"first predecessor state that strictly improves it (double sums), the super-final the first best final\n"
"state; between two consecutive states of the path, the cheapest arc (the first on a tie).  Returns the\n"
"arcs of the path and its last state, or ([], -1) when no final state is reachable.");

static PyObject *compact_shortest_path(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_off, *o_dst, *o_cost, *o_fin;
    Py_buffer off = {0}, dst = {0}, cost = {0}, fin = {0};
    PyObject *result = NULL, *path = NULL;
    double *best = NULL;
    int64_t *pred = NULL;
    if (!PyArg_ParseTuple(args, "OOOO:compact_shortest_path", &o_off, &o_dst, &o_cost, &o_fin))
        return NULL;
    if (buffer_get(&off, o_off, "compact_shortest_path", "arc_offsets", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "compact_shortest_path", "arc_dst", 'q', 0, -1) < 0 ||
        buffer_get(&cost, o_cost, "compact_shortest_path", "arc_cost", 'd', 0, -1) < 0 ||
        buffer_get(&fin, o_fin, "compact_shortest_path", "final_cost", 'd', 0, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&fin);
    if (check_graph("compact_shortest_path", &off, &dst, n) < 0)
        goto done;
    if (buffer_items(&cost) != buffer_items(&dst)) {
        PyErr_Format(PyExc_ValueError, "compact_shortest_path: arc_cost has %zd items, arc_dst %zd",
                     buffer_items(&cost), buffer_items(&dst));
        goto done;
    }
    if (n == 0) {
        result = Py_BuildValue("([]i)", -1);
        goto done;
    }
    const int64_t *o = off.buf, *d = dst.buf;
    const double *c = cost.buf, *f = fin.buf;
    best = malloc(sizeof(double) * (size_t)n);
    pred = malloc(sizeof(int64_t) * (size_t)n);
    if (!best || !pred) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        best[s] = INFINITY;
        pred[s] = -1;
    }
    best[0] = 0.0;
    double sf_best = INFINITY;
    Py_ssize_t sf_pred = -1;
    for (Py_ssize_t s = 0; s < n; s++) {
        const double my = best[s];
        for (int64_t a = o[s]; a < o[s + 1]; a++) {
            const double next = my + c[a];
            if (next < best[d[a]]) {
                best[d[a]] = next;
                pred[d[a]] = s;
            }
        }
        const double total = my + f[s];
        if (total < sf_best) {
            sf_best = total;
            sf_pred = s;
        }
    }
    if (sf_pred < 0) {
        result = Py_BuildValue("([]i)", -1);
        goto done;
    }
    /* the states of the path backwards: its length first (a chain longer than the number of states, or
     * one that stops before state 0, means the numbering was not topological) */
    Py_ssize_t len = 0;
    for (int64_t s = sf_pred; s != 0; s = pred[s]) {
        if (pred[s] < 0 || ++len > n) {
            PyErr_SetString(PyExc_ValueError, "compact_shortest_path: the states are not numbered topologically");
            goto done;
        }
    }
    path = PyList_New(len);
    if (!path)
        goto done;
    Py_ssize_t i = len;
    for (int64_t t = sf_pred; t != 0; t = pred[t]) {
        const int64_t s = pred[t];
        int64_t chosen = -1;
        for (int64_t a = o[s]; a < o[s + 1]; a++)
            if (d[a] == t && (chosen < 0 || c[a] < c[chosen]))
                chosen = a;
        PyObject *v = PyLong_FromLongLong((long long)chosen);
        if (!v)
            goto done;
        PyList_SET_ITEM(path, --i, v);
    }
    result = Py_BuildValue("(On)", path, sf_pred);
done:
    Py_XDECREF(path);
    free(best);
    free(pred);
    buffer_release(&off);
    buffer_release(&dst);
    buffer_release(&cost);
    buffer_release(&fin);
    return result;
}

static PyMethodDef methods[] = {
    {"top_sort", top_sort, METH_VARARGS, top_sort_doc},
    {"state_times", state_times, METH_VARARGS, state_times_doc},
    {"tropical_best_path", tropical_best_path, METH_VARARGS, tropical_best_path_doc},
    {"compact_shortest_path", compact_shortest_path, METH_VARARGS, compact_shortest_path_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lattice_tools._ext.kaldi_order",
    "Kaldi's order-dependent graph loops (TopSort, CompactLatticeStateTimes, tropical ShortestPath) for "
    "lattice_tools.algorithms.kaldi_order.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_kaldi_order(void)
{
    return PyModule_Create(&module);
}
