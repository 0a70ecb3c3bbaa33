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
#include "kaldi_compact_body.h"

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

/* OpenFst's TopSort (top_sort below): 1 and new_id filled, 0 on a cycle, -1 out of memory.  start is a state. */
static int top_sort_core(Py_ssize_t n, Py_ssize_t start, const int64_t *o, const int64_t *d, int64_t *new_id)
{
    unsigned char *color = calloc((size_t)n, 1);  /* 0 white, 1 grey, 2 black */
    int64_t *stack_state = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *stack_arc = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *finish = malloc(sizeof(int64_t) * (size_t)n);
    int acyclic = 1;
    if (!color || !stack_state || !stack_arc || !finish) {
        acyclic = -1;
        goto done;
    }
    Py_ssize_t n_finished = 0, root = start;
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
done:
    free(color);
    free(stack_state);
    free(stack_arc);
    free(finish);
    return acyclic;
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
    const int acyclic = top_sort_core(n, start, off.buf, dst.buf, out.buf);
    if (acyclic < 0) {
        PyErr_NoMemory();
        goto done;
    }
    result = PyBool_FromLong(acyclic);
done:
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

/* The search of Kaldi's CompactLatticeShortestPath on a topologically numbered lattice (start 0): states
 * relaxed in numeric order, a state keeps the first predecessor state that strictly improves it (double sums),
 * the super-final the first best final state; between two consecutive states of the path, the cheapest arc
 * (the first on a tie).  path (room for n arcs) receives the arcs, *len their number, *last the path's last
 * state (-1: no final state is reachable).  0, -1 out of memory, -2 the numbering is not topological. */
static int shortest_path_core(Py_ssize_t n, const int64_t *o, const int64_t *d, const double *c, const double *f,
                              int64_t *path, Py_ssize_t *len, Py_ssize_t *last)
{
    *len = 0;
    *last = -1;
    if (n == 0)
        return 0;
    double *best = malloc(sizeof(double) * (size_t)n);
    int64_t *pred = malloc(sizeof(int64_t) * (size_t)n);
    int status = 0;
    if (!best || !pred) {
        status = -1;
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
    if (sf_pred < 0)
        goto done;
    /* the states of the path backwards: its length first (a chain longer than the number of states, or
     * one that stops before state 0, means the numbering was not topological) */
    Py_ssize_t k = 0;
    for (int64_t s = sf_pred; s != 0; s = pred[s]) {
        if (pred[s] < 0 || ++k > n) {
            status = -2;
            goto done;
        }
    }
    *len = k;
    *last = sf_pred;
    for (int64_t t = sf_pred; t != 0; t = pred[t]) {
        const int64_t s = pred[t];
        int64_t chosen = -1;
        for (int64_t a = o[s]; a < o[s + 1]; a++)
            if (d[a] == t && (chosen < 0 || c[a] < c[chosen]))
                chosen = a;
        path[--k] = chosen;
    }
done:
    free(best);
    free(pred);
    return status;
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
    int64_t *arcs = NULL;
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
    arcs = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!arcs) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t len, last;
    const int status = shortest_path_core(n, off.buf, dst.buf, cost.buf, fin.buf, arcs, &len, &last);
    if (status == -1) {
        PyErr_NoMemory();
        goto done;
    }
    if (status == -2) {
        PyErr_SetString(PyExc_ValueError, "compact_shortest_path: the states are not numbered topologically");
        goto done;
    }
    if (!(path = PyList_New(len)))
        goto done;
    for (Py_ssize_t i = 0; i < len; i++) {
        PyObject *v = PyLong_FromLongLong((long long)arcs[i]);
        if (!v)
            goto done;
        PyList_SET_ITEM(path, i, v);
    }
    result = Py_BuildValue("(On)", path, last);
done:
    Py_XDECREF(path);
    free(arcs);
    buffer_release(&off);
    buffer_release(&dst);
    buffer_release(&cost);
    buffer_release(&fin);
    return result;
}

/* ---------------------------------------------------------------------------------------------------------
 * Kaldi's lattice-best-path on one lattice in Kaldi's order of states and arcs: THE best path of lattice-tools
 * (lattice_tools.algorithms.kaldi_ops.best_path_kaldi hands it the stored-order arrays of a hub lattice;
 * compact_best_path below the arrays parsed from an archive's bytes).
 */

/* A lattice in Kaldi's stored order: n states, m arcs (src, dst, word, frames spanned, graph and acoustic
 * weights as read: float32 values, or float64 of a double archive), per state the final weights (inf: not
 * final) and the frames of its final string. */
typedef struct {
    Py_ssize_t n, m, start;
    const int64_t *src, *dst, *word, *dur;
    const double *graph, *acoustic;
    const double *final_graph, *final_acoustic;
    const int64_t *final_dur;
} StoredLattice;

/* what best_path_core found (arcs: malloc'ed indices of the input's arcs, in path order) */
typedef struct {
    int64_t *arcs;
    Py_ssize_t len;
    float graph, acoustic;
    int64_t frames;
} BestPath;

enum { BP_OK = 0, BP_NOMEM = -1, BP_NO_FINAL = 1, BP_CYCLE = 2, BP_UNREACHABLE = 3, BP_NO_PATH = 4 };

/* Kaldi's ScaleLattice on one weight: the float scale times the float weight in double, stored as float. */
static inline float scaled(double scale32, float w) { return (float)(scale32 * (double)w); }

/* Stable counting sort of the arcs in `order` (m of them) by key[arc] (0 .. n-1) into out. */
static int sort_by_state(Py_ssize_t n, Py_ssize_t m, const int64_t *order, const int64_t *key, int64_t *out,
                         int64_t *offsets /* n + 1 */)
{
    memset(offsets, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (Py_ssize_t i = 0; i < m; i++)
        offsets[key[order[i]] + 1]++;
    for (Py_ssize_t s = 0; s < n; s++)
        offsets[s + 1] += offsets[s];
    int64_t *next = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!next)
        return -1;
    memcpy(next, offsets, sizeof(int64_t) * ((size_t)n + 1));
    for (Py_ssize_t i = 0; i < m; i++)
        out[next[key[order[i]]]++] = order[i];
    free(next);
    return 0;
}

/* Kaldi's CompactLatticeShortestPath after ScaleLattice (and lattice-1best's word penalty, added in float to
 * the graph weight of word arcs): weights to float32 and scaled as Kaldi scales them; the states re-sorted by
 * TopSort when the stored numbering is not topological (start 0, every arc to a higher state); the search
 * (shortest_path_core) on double sums of the float weights; the path's graph and acoustic weights summed in
 * float32, final weight included, and its frames. */
static int best_path_core(const StoredLattice *L, double acoustic_scale, double lm_scale, double word_penalty,
                          BestPath *out)
{
    const Py_ssize_t n = L->n, m = L->m;
    int status = BP_OK;
    float *g = malloc(sizeof(float) * ((size_t)m + 1)), *a = malloc(sizeof(float) * ((size_t)m + 1));
    float *fg = malloc(sizeof(float) * (size_t)n), *fa = malloc(sizeof(float) * (size_t)n);
    int64_t *order = malloc(sizeof(int64_t) * ((size_t)m + 1)), *tmp = calloc((size_t)m + 1, sizeof(int64_t));
    int64_t *offsets = malloc(sizeof(int64_t) * ((size_t)n + 1)), *arc_dst = malloc(sizeof(int64_t) * ((size_t)m + 1));
    int64_t *new_id = NULL, *old_of = NULL, *path = NULL;
    double *cost = malloc(sizeof(double) * ((size_t)m + 1)), *fcost = malloc(sizeof(double) * (size_t)n);
    out->arcs = NULL;
    out->len = 0;
    if (!g || !a || !fg || !fa || !order || !tmp || !offsets || !arc_dst || !cost || !fcost) {
        status = BP_NOMEM;
        goto done;
    }
    for (Py_ssize_t i = 0; i < m; i++) {
        g[i] = (float)L->graph[i];
        a[i] = (float)L->acoustic[i];
    }
    for (Py_ssize_t s = 0; s < n; s++) {
        fg[s] = (float)L->final_graph[s];
        fa[s] = (float)L->final_acoustic[s];
    }
    if (lm_scale != 1.0 || acoustic_scale != 1.0) {
        const double lm = (double)(float)lm_scale, ac = (double)(float)acoustic_scale;
        for (Py_ssize_t i = 0; i < m; i++) {
            g[i] = scaled(lm, g[i]);
            a[i] = scaled(ac, a[i]);
        }
        for (Py_ssize_t s = 0; s < n; s++) {
            fg[s] = scaled(lm, fg[s]);
            fa[s] = scaled(ac, fa[s]);
        }
    }
    if (word_penalty != 0.0) {
        const float pen = (float)word_penalty;
        for (Py_ssize_t i = 0; i < m; i++)
            if (L->word[i] != 0)
                g[i] = g[i] + pen;
    }
    int any_final = 0;
    for (Py_ssize_t s = 0; s < n && !any_final; s++)
        any_final = isfinite(fg[s]);
    if (!any_final) {
        status = BP_NO_FINAL;
        goto done;
    }
    /* the arcs by source state, each state's in stored order */
    for (Py_ssize_t i = 0; i < m; i++)
        tmp[i] = i;
    if (sort_by_state(n, m, tmp, L->src, order, offsets) < 0) {
        status = BP_NOMEM;
        goto done;
    }
    int topological = L->start == 0;
    for (Py_ssize_t i = 0; i < m && topological; i++)
        topological = L->dst[i] > L->src[i];
    Py_ssize_t last_state = -1;
    if (topological) {
        for (Py_ssize_t i = 0; i < m; i++)
            arc_dst[i] = L->dst[order[i]];
        for (Py_ssize_t s = 0; s < n; s++)
            fcost[s] = (double)fg[s] + (double)fa[s];
    } else {
        new_id = malloc(sizeof(int64_t) * (size_t)n);
        old_of = malloc(sizeof(int64_t) * (size_t)n);
        if (!new_id || !old_of) {
            status = BP_NOMEM;
            goto done;
        }
        for (Py_ssize_t i = 0; i < m; i++)
            arc_dst[i] = L->dst[order[i]];
        const int acyclic = top_sort_core(n, L->start, offsets, arc_dst, new_id);
        if (acyclic < 0) {
            status = BP_NOMEM;
            goto done;
        }
        if (!acyclic) {
            status = BP_CYCLE;
            goto done;
        }
        /* renumbered, the arcs sorted stably by their new source state (tmp: the new source of each arc) */
        for (Py_ssize_t i = 0; i < m; i++)
            tmp[i] = new_id[L->src[i]];
        int64_t *resorted = malloc(sizeof(int64_t) * ((size_t)m + 1));
        if (!resorted || sort_by_state(n, m, order, tmp, resorted, offsets) < 0) {
            free(resorted);
            status = BP_NOMEM;
            goto done;
        }
        memcpy(order, resorted, sizeof(int64_t) * (size_t)m);
        free(resorted);
        for (Py_ssize_t i = 0; i < m; i++) {
            arc_dst[i] = new_id[L->dst[order[i]]];
            if (arc_dst[i] <= tmp[order[i]])
                status = BP_UNREACHABLE;
        }
        if (new_id[L->start] != 0)
            status = BP_UNREACHABLE;
        if (status != BP_OK)
            goto done;
        for (Py_ssize_t s = 0; s < n; s++)
            old_of[new_id[s]] = s;
        for (Py_ssize_t s = 0; s < n; s++)
            fcost[s] = (double)fg[old_of[s]] + (double)fa[old_of[s]];
    }
    for (Py_ssize_t i = 0; i < m; i++)
        cost[i] = (double)g[order[i]] + (double)a[order[i]];
    path = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!path) {
        status = BP_NOMEM;
        goto done;
    }
    Py_ssize_t len;
    const int found = shortest_path_core(n, offsets, arc_dst, cost, fcost, path, &len, &last_state);
    if (found == -1) {
        status = BP_NOMEM;
        goto done;
    }
    if (found == -2) {  /* (cannot happen: the numbering is topological here) */
        status = BP_UNREACHABLE;
        goto done;
    }
    if (last_state < 0) {
        status = BP_NO_PATH;
        goto done;
    }
    const Py_ssize_t last = old_of ? old_of[last_state] : last_state;
    float sum_g = 0.0f, sum_a = 0.0f;
    int64_t frames = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        const int64_t arc = order[path[i]];
        path[i] = arc;
        sum_g = sum_g + g[arc];
        sum_a = sum_a + a[arc];
        frames += L->dur[arc];
    }
    out->graph = sum_g + fg[last];
    out->acoustic = sum_a + fa[last];
    out->frames = frames + L->final_dur[last];
    out->arcs = path;
    out->len = len;
    path = NULL;
done:
    free(g), free(a), free(fg), free(fa), free(order), free(tmp), free(offsets), free(arc_dst), free(new_id);
    free(old_of), free(path), free(cost), free(fcost);
    return status;
}

static const char *const BP_ERRORS[] = {"", "lattice has no final state", "lattice has a cycle",
                                        "states unreachable from the start state: Kaldi's TopSort would not number "
                                        "the start state 0",
                                        "lattice has no complete path from the start to a final state"};

PyDoc_STRVAR(best_path_doc,
"best_path($module, start, src, dst, word, dur, graph, acoustic, final_graph, final_acoustic, final_dur,\n"
"          acoustic_scale, lm_scale, word_penalty, /)\n--\n\n"
"-> (int, str | list, float, float, int)\n\n"
"Kaldi's lattice-best-path (CompactLatticeShortestPath after ScaleLattice; word_penalty as lattice-1best\n"
"adds it) on a lattice in Kaldi's stored order: arcs src -> dst (int64, grouped by source state in stored\n"
"order), their word ids and frames (int64), graph and acoustic weights (float64 holding the stored floats);\n"
"per state final_graph, final_acoustic (float64, inf: not final) and final_dur (int64, the frames of its\n"
"final string).  (0, arcs, graph, acoustic, frames): the path's arcs (indices of the input's) and its\n"
"scaled weights summed in float32 and frames; (1, message, 0.0, 0.0, 0): no path (the message says why).");

static PyObject *best_path(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t start;
    PyObject *o[10];
    double ac, lm, pen;
    const char *names[10] = {"src", "dst", "word", "dur", "graph", "acoustic", "final_graph", "final_acoustic",
                             "final_dur"};
    const char types[10] = {'q', 'q', 'q', 'q', 'd', 'd', 'd', 'd', 'q'};
    Py_buffer b[9];
    memset(b, 0, sizeof b);
    PyObject *result = NULL, *path = NULL;
    BestPath bp = {0};
    if (!PyArg_ParseTuple(args, "nOOOOOOOOOddd:best_path", &start, &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &ac, &lm, &pen))
        return NULL;
    for (int i = 0; i < 9; i++)
        if (buffer_get(&b[i], o[i], "best_path", names[i], types[i], BUF_FLAT,
                       i == 0 || i == 6 ? -1 : buffer_items(i < 6 ? &b[0] : &b[6])) < 0)
            goto done;
    StoredLattice L = {buffer_items(&b[6]), buffer_items(&b[0]), start, b[0].buf, b[1].buf, b[2].buf, b[3].buf,
                       b[4].buf, b[5].buf, b[6].buf, b[7].buf, b[8].buf};
    if (L.n == 0 || start < 0 || start >= L.n) {
        PyErr_Format(PyExc_ValueError, "best_path: start %zd is not a state (0 .. %zd)", start, L.n - 1);
        goto done;
    }
    for (Py_ssize_t i = 0; i < L.m; i++)
        if (L.src[i] < 0 || L.src[i] >= L.n || L.dst[i] < 0 || L.dst[i] >= L.n) {
            PyErr_Format(PyExc_ValueError, "best_path: arc %zd (%lld -> %lld) has a state outside 0 .. %zd", i,
                         (long long)L.src[i], (long long)L.dst[i], L.n - 1);
            goto done;
        }
    const int status = best_path_core(&L, ac, lm, pen, &bp);
    if (status == BP_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (status != BP_OK) {
        result = Py_BuildValue("(isddi)", 1, BP_ERRORS[status], 0.0, 0.0, 0);
        goto done;
    }
    if (!(path = PyList_New(bp.len)))
        goto done;
    for (Py_ssize_t i = 0; i < bp.len; i++) {
        PyObject *v = PyLong_FromLongLong((long long)bp.arcs[i]);
        if (!v)
            goto done;
        PyList_SET_ITEM(path, i, v);
    }
    result = Py_BuildValue("(iOddL)", 0, path, (double)bp.graph, (double)bp.acoustic, (long long)bp.frames);
done:
    Py_XDECREF(path);
    free(bp.arcs);
    for (int i = 0; i < 9; i++)
        buffer_release(&b[i]);
    return result;
}

/* What compact_best_path does with a lattice it leaves to the general reader: a lattice that is unusual (a
 * corrupt length, a negative label, a word outside the word table, a non-finite weight, states out of range,
 * paths reaching a state at different frames, a cycle, no complete path) goes through the reader that builds
 * the hub Lattice, which reports the problem -- or, for paths at different frames, splits states -- as it
 * does for every other input. */
enum { CB_OK = 0, CB_SHORT = 1, CB_GENERAL = 2 };

/* The options of a compiled best path reader: scales, penalty, the known word ids (kw: n_known bytes, NULL:
 * any id) and the bytes it may allocate (limit; -1: no limit). */
typedef struct {
    double ac, lm, pen;
    const unsigned char *kw;
    Py_ssize_t n_known;
    long long limit;
} BestPathOptions;

/* What compact_best_path allocates at most per state and arc (the parse's arrays with their growth, the trimmed
 * copy, the search's arrays: about 220 bytes): a lattice whose states and arcs times this exceed the limit is
 * left to the reader (which refuses it under the memory budget, naming it). */
#define BEST_PATH_BYTES_PER_ITEM 256

/* compact_best_path on the body at base[0 .. end - base): CB_OK with *value = (words, starts, durations, graph,
 * acoustic, frames) and stop->consumed; CB_SHORT with stop (where the buffer ended); CB_GENERAL; -1 with a
 * Python error set. */
static int compact_best_path_body(const unsigned char *base, const unsigned char *end, long long num_states,
                                  int fsize, long long start, const BestPathOptions *opt, PyObject **value,
                                  BodyStop *stop)
{
    const double ac = opt->ac, lm = opt->lm, pen = opt->pen;
    int result = -1;
    PyObject *words = NULL, *starts = NULL, *durs = NULL;
    CompactBody body;
    compact_body_init(&body);
    BestPath bp = {0};
    int64_t *frame = NULL, *stack = NULL, *in_first = NULL, *in_arcs = NULL, *indeg = NULL, *new_of = NULL;
    int64_t *k_src = NULL, *k_dst = NULL, *k_word = NULL, *k_dur = NULL, *k_raw = NULL, *k_fdur = NULL;
    double *k_g = NULL, *k_a = NULL, *k_fg = NULL, *k_fa = NULL;
    unsigned char *live = NULL;
    const int parsed = compact_parse(base, end, num_states, fsize, 0,
                                     opt->limit < 0 ? -1 : opt->limit / BEST_PATH_BYTES_PER_ITEM, &body, stop);
    if (parsed == BODY_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (parsed == BODY_SHORT) {
        result = CB_SHORT;
        goto done;
    }
#define GENERAL()                                                                                                   \
    {                                                                                                               \
        result = CB_GENERAL;                                                                                        \
        goto done;                                                                                                  \
    }
    if (parsed == BODY_CORRUPT || parsed == BODY_TOO_BIG)
        GENERAL()
    const Py_ssize_t n = (Py_ssize_t)num_states, m = (Py_ssize_t)body.src.len;
    const int64_t *src = (const int64_t *)body.src.data, *dst = (const int64_t *)body.dst.data;
    const int64_t *il = (const int64_t *)body.ilabel.data, *ol = (const int64_t *)body.olabel.data;
    const int64_t *toff = (const int64_t *)body.tid_offsets.data, *flen = (const int64_t *)body.final_len.data;
    const double *w1 = (const double *)body.w1.data, *w2 = (const double *)body.w2.data;
    const double *fw1 = (const double *)body.final_w1.data, *fw2 = (const double *)body.final_w2.data;
    const unsigned char *kw = opt->kw;
    const Py_ssize_t n_known = opt->n_known;
    /* what the reader and Lattice.from_arcs refuse (the general reader says which) */
    if (n == 0 || start < 0 || start >= n)
        GENERAL()
    for (Py_ssize_t i = 0; i < m; i++) {
        if (dst[i] < 0 || dst[i] >= n || il[i] < 0 || ol[i] < 0 || !isfinite(w1[i]) || !isfinite(w2[i]))
            GENERAL()
        if (kw && ol[i] != 0 && (ol[i] >= n_known || !kw[ol[i]]))
            GENERAL()
    }
    for (Py_ssize_t s = 0; s < n; s++)
        if (isnan(fw1[s]) || (isfinite(fw1[s]) && !isfinite(fw2[s])))
            GENERAL()
    /* the frame of every state reachable from the start (the final strings lead to one extra state, n), which
     * every path must agree on; arcs are grouped by source state as parsed */
    frame = malloc(sizeof(int64_t) * ((size_t)n + 1));
    stack = malloc(sizeof(int64_t) * ((size_t)n + 1));
    int64_t *first = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!frame || !stack || !first) {
        free(first);
        PyErr_NoMemory();
        goto done;
    }
    {
        Py_ssize_t a = 0;
        for (Py_ssize_t s = 0; s < n; s++) {
            first[s] = a;
            while (a < m && src[a] == s)
                a++;
        }
        first[n] = m;
    }
    for (Py_ssize_t s = 0; s <= n; s++)
        frame[s] = -1;
    live = calloc((size_t)n + 1, 1);
    if (!live) {
        free(first);
        PyErr_NoMemory();
        goto done;
    }
    int consistent = 1, topological = start == 0;
    for (Py_ssize_t i = 0; i < m && topological; i++)
        topological = dst[i] > src[i];
    if (topological) {
        /* (the usual archive: the same frames, no cycle and the same live states in two passes over the arcs) */
        frame[0] = 0;
        for (Py_ssize_t s = 0; s < n && consistent; s++) {
            if (frame[s] < 0)
                continue;
            for (int64_t i = first[s]; i < first[s + 1]; i++) {
                const int64_t d = dst[i], t = frame[s] + (toff[i + 1] - toff[i]);
                if (frame[d] < 0)
                    frame[d] = t;
                else if (frame[d] != t)
                    consistent = 0;
            }
            if (flen[s] > 0) {
                const int64_t t = frame[s] + flen[s];
                if (frame[n] < 0)
                    frame[n] = t;
                else if (frame[n] != t)
                    consistent = 0;
            }
        }
        free(first);
        if (!consistent)
            GENERAL()
        for (Py_ssize_t s = 0; s < n; s++)
            live[s] = isfinite(fw1[s]);
        for (Py_ssize_t i = m - 1; i >= 0; i--)
            if (live[dst[i]])
                live[src[i]] = 1;
    } else {
        Py_ssize_t top = 0;
        frame[start] = 0;
        stack[top++] = start;
        while (top && consistent) {
            const int64_t s = stack[--top];
            for (int64_t i = first[s]; i <= first[s + 1] && consistent; i++) {
                int64_t d, t;
                if (i < first[s + 1]) {
                    d = dst[i], t = frame[s] + (toff[i + 1] - toff[i]);
                } else if (flen[s] > 0) {  /* the final string: an arc to state n */
                    d = n, t = frame[s] + flen[s];
                } else {
                    break;
                }
                if (frame[d] < 0) {
                    frame[d] = t;
                    if (d < n)
                        stack[top++] = d;
                } else if (frame[d] != t) {
                    consistent = 0;
                }
            }
        }
        if (!consistent) {
            free(first);
            GENERAL()
        }
        /* a cycle among the reachable states (Kahn's count), then the states that reach a final state (the
         * reversed arcs from every final state) */
        indeg = calloc((size_t)n + 1, sizeof(int64_t));
        in_first = calloc((size_t)n + 2, sizeof(int64_t));
        in_arcs = malloc(sizeof(int64_t) * ((size_t)m + 1));
        if (!indeg || !in_first || !in_arcs) {
            free(first);
            PyErr_NoMemory();
            goto done;
        }
        Py_ssize_t n_reached = 0;
        for (Py_ssize_t s = 0; s < n; s++)
            n_reached += frame[s] >= 0;
        for (Py_ssize_t i = 0; i < m; i++)
            if (frame[src[i]] >= 0)
                indeg[dst[i]]++;
        top = 0;
        for (Py_ssize_t s = 0; s < n; s++)
            if (frame[s] >= 0 && indeg[s] == 0)
                stack[top++] = s;
        Py_ssize_t n_sorted = 0;
        while (top) {
            const int64_t s = stack[--top];
            n_sorted++;
            for (int64_t i = first[s]; i < first[s + 1]; i++)
                if (--indeg[dst[i]] == 0)
                    stack[top++] = dst[i];
        }
        free(first);
        if (n_sorted != n_reached)
            GENERAL()
        for (Py_ssize_t i = 0; i < m; i++)
            in_first[dst[i] + 2]++;
        for (Py_ssize_t s = 0; s < n; s++)
            in_first[s + 2] += in_first[s + 1];
        for (Py_ssize_t i = 0; i < m; i++)
            in_arcs[in_first[dst[i] + 1]++] = i;
        top = 0;
        for (Py_ssize_t s = 0; s < n; s++)
            if (isfinite(fw1[s])) {
                live[s] = 1;
                stack[top++] = s;
            }
        while (top) {
            const int64_t s = stack[--top];
            for (int64_t j = in_first[s]; j < in_first[s + 1]; j++) {
                const int64_t p = src[in_arcs[j]];
                if (!live[p]) {
                    live[p] = 1;
                    stack[top++] = p;
                }
            }
        }
    }
    for (Py_ssize_t s = 0; s < n; s++)
        live[s] = live[s] && frame[s] >= 0;
    if (!live[start])
        GENERAL()
    /* the live states in stored order, the arcs between them in stored order (the parsed arrays themselves when
     * every state is live, as in the usual archive) */
    Py_ssize_t kn = 0, km = 0;
    for (Py_ssize_t s = 0; s < n; s++)
        kn += live[s];
    const int all_live = kn == n;
    new_of = malloc(sizeof(int64_t) * (size_t)n);
    k_fg = malloc(sizeof(double) * (size_t)n), k_fa = malloc(sizeof(double) * (size_t)n);
    k_fdur = malloc(sizeof(int64_t) * (size_t)n);
    const size_t mm = (size_t)m + 1;
    k_dur = malloc(8 * mm);
    if (!all_live)
        k_src = malloc(8 * mm), k_dst = malloc(8 * mm), k_word = malloc(8 * mm), k_raw = malloc(8 * mm),
        k_g = malloc(8 * mm), k_a = malloc(8 * mm);
    if (!new_of || !k_fg || !k_fa || !k_fdur || !k_dur ||
        (!all_live && (!k_src || !k_dst || !k_word || !k_raw || !k_g || !k_a))) {
        PyErr_NoMemory();
        goto done;
    }
    kn = 0;
    for (Py_ssize_t s = 0; s < n; s++) {
        new_of[s] = live[s] ? kn : -1;
        if (!live[s])
            continue;
        if (flen[s] > 0) {  /* the hub's epsilon arc to its extra final state, weights + 0.0 as it sums them */
            k_fg[kn] = fw1[s] + 0.0, k_fa[kn] = fw2[s] + 0.0, k_fdur[kn] = flen[s];
        } else {
            k_fg[kn] = fw1[s], k_fa[kn] = fw2[s], k_fdur[kn] = 0;
        }
        kn++;
    }
    if (all_live) {
        for (Py_ssize_t i = 0; i < m; i++)
            k_dur[i] = toff[i + 1] - toff[i];
        km = m;
    } else {
        for (Py_ssize_t i = 0; i < m; i++) {
            if (!live[src[i]] || !live[dst[i]])
                continue;
            k_src[km] = new_of[src[i]], k_dst[km] = new_of[dst[i]], k_word[km] = ol[i];
            k_dur[km] = toff[i + 1] - toff[i], k_g[km] = w1[i], k_a[km] = w2[i], k_raw[km] = i;
            km++;
        }
    }
    StoredLattice L = {kn, km, new_of[start], all_live ? src : k_src, all_live ? dst : k_dst, all_live ? ol : k_word,
                       k_dur, all_live ? w1 : k_g, all_live ? w2 : k_a, k_fg, k_fa, k_fdur};
    const int status = best_path_core(&L, ac, lm, pen, &bp);
    if (status == BP_NOMEM) {
        PyErr_NoMemory();
        goto done;
    }
    if (status != BP_OK)
        GENERAL()
#undef GENERAL
    Py_ssize_t n_words = 0;
    for (Py_ssize_t i = 0; i < bp.len; i++)
        n_words += L.word[bp.arcs[i]] != 0;
    if (!(words = PyTuple_New(n_words)) || !(starts = PyTuple_New(n_words)) || !(durs = PyTuple_New(n_words)))
        goto done;
    for (Py_ssize_t i = 0, w = 0; i < bp.len; i++) {
        const int64_t raw = all_live ? bp.arcs[i] : k_raw[bp.arcs[i]];
        if (ol[raw] == 0)
            continue;
        PyObject *x = PyLong_FromLongLong((long long)ol[raw]), *y = PyLong_FromLongLong((long long)frame[src[raw]]);
        PyObject *z = PyLong_FromLongLong((long long)(toff[raw + 1] - toff[raw]));
        if (!x || !y || !z) {
            Py_XDECREF(x), Py_XDECREF(y), Py_XDECREF(z);
            goto done;
        }
        PyTuple_SET_ITEM(words, w, x), PyTuple_SET_ITEM(starts, w, y), PyTuple_SET_ITEM(durs, w, z);
        w++;
    }
    if (!(*value = Py_BuildValue("(OOOddL)", words, starts, durs, (double)bp.graph, (double)bp.acoustic,
                                 (long long)bp.frames)))
        goto done;
    result = CB_OK;
done:
    Py_XDECREF(words), Py_XDECREF(starts), Py_XDECREF(durs);
    compact_body_free(&body);
    free(bp.arcs), free(frame), free(stack), free(in_first), free(in_arcs), free(indeg), free(new_of), free(live);
    free(k_src), free(k_dst), free(k_word), free(k_dur), free(k_raw), free(k_fdur), free(k_g), free(k_a);
    free(k_fg), free(k_fa);
    return result;
}


/* The known word ids argument: None, or a uint8 array.  0, or -1 with the error set. */
static int known_words(PyObject *obj, const char *fn, Py_buffer *view, BestPathOptions *opt)
{
    opt->kw = NULL;
    opt->n_known = 0;
    if (obj == Py_None)
        return 0;
    if (buffer_get(view, obj, fn, "known_words", 'B', BUF_FLAT, -1) < 0)
        return -1;
    opt->kw = view->buf;
    opt->n_known = view->len;
    return 0;
}

PyDoc_STRVAR(compact_best_path_doc,
"compact_best_path($module, acoustic_scale, lm_scale, word_penalty, known_words, buf, pos, num_states, fsize,\n"
"                  start, limit, /)\n--\n\n"
"-> tuple\n\n"
"best_path on a binary CompactLattice parsed from buf[pos:] (the body after its FST header; fsize 4 or 8;\n"
"start: the header's start state), as lattice_tools.io.lattices.kaldi reads it into the hub Lattice: the\n"
"final strings' frames, the states trimmed to those on a path from the start to a final state (stored\n"
"order kept).  known_words: None, or a uint8 array, non-zero at the word ids of the word table; limit: the\n"
"bytes it may allocate (-1: no limit; a larger lattice is left to the reader).\n"
"(0, consumed, (words, starts, durations, graph, acoustic, frames)): the path's word ids (epsilons left out)\n"
"with each word's first frame and frames, its scaled costs and frames; (1, state, what, at): the buffer ends\n"
"inside the lattice (as compact_body reports it: read more and call again); (2,): a lattice for the general\n"
"reader (a corrupt length, a negative label, a word not in known_words, a non-finite weight, a state out of\n"
"range, paths reaching a state at different frames, a cycle, no complete path).");

static PyObject *compact_best_path(PyObject *self, PyObject *args)
{
    (void)self;
    BestPathOptions opt;
    PyObject *o_known, *value = NULL, *result = NULL;
    Py_buffer view = {0}, known = {0};
    Py_ssize_t pos;
    long long num_states, start;
    int fsize;
    if (!PyArg_ParseTuple(args, "dddOy*nLiLL:compact_best_path", &opt.ac, &opt.lm, &opt.pen, &o_known, &view, &pos,
                          &num_states, &fsize, &start, &opt.limit))
        return NULL;
    if (known_words(o_known, "compact_best_path", &known, &opt) < 0)
        goto done;
    if ((fsize != 4 && fsize != 8) || pos < 0 || pos > view.len || num_states < 0) {
        PyErr_SetString(PyExc_ValueError,
                        "compact_best_path: fsize must be 4 or 8, pos within the buffer, num_states >= 0");
        goto done;
    }
    BodyStop stop = {0};
    const unsigned char *base = (const unsigned char *)view.buf + pos, *end = (const unsigned char *)view.buf + view.len;
    const int status = compact_best_path_body(base, end, num_states, fsize, start, &opt, &value, &stop);
    if (status == CB_OK)
        result = Py_BuildValue("(inO)", CB_OK, stop.consumed, value);
    else if (status == CB_SHORT)
        result = Py_BuildValue("(iLin)", CB_SHORT, stop.state, stop.what, stop.at);
    else if (status == CB_GENERAL)
        result = Py_BuildValue("(i)", CB_GENERAL);
done:
    Py_XDECREF(value);
    buffer_release(&known);
    PyBuffer_Release(&view);
    return result;
}

/* The archive records compact_best_path_records takes: a key of printable ASCII (no whitespace, at most
 * MAX_KEY bytes) after ASCII whitespace, one space or tab, then a binary CompactLattice whose header is the
 * usual one (OpenFst magic, "vector", "compactlattice44" or "compactlattice84", no symbol tables, a known
 * number of states below 2^31).  Anything else is left to the reader in Python. */
#define MAX_KEY 65536

static int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

static int string_is(const unsigned char *p, const char *text)
{
    const size_t n = strlen(text);
    return body_i32(p) == (int32_t)n && memcmp(p + 4, text, n) == 0;
}

PyDoc_STRVAR(compact_best_path_records_doc,
"compact_best_path_records($module, acoustic_scale, lm_scale, word_penalty, known_words, buf, pos, limit, /)\n--\n\n"
"-> (int, int, list)\n\n"
"compact_best_path on the archive records at buf[pos:], one after the other, while they are usual (a key of\n"
"printable ASCII after whitespace, a space, a binary CompactLattice with the usual header -- see the comment\n"
"above -- that compact_best_path does not leave to the reader): (stopped, consumed, records), records a list\n"
"of (key bytes, newlines before the key, (words, starts, durations, graph, acoustic, frames)); stopped 0: the\n"
"buffer ends before the next record does (read more and call again), 1: the next record is for the reader.\n"
"limit: as for compact_best_path.");

static PyObject *compact_best_path_records(PyObject *self, PyObject *args)
{
    (void)self;
    BestPathOptions opt;
    PyObject *o_known, *records = NULL, *result = NULL;
    Py_buffer view = {0}, known = {0};
    Py_ssize_t pos;
    if (!PyArg_ParseTuple(args, "dddOy*nL:compact_best_path_records", &opt.ac, &opt.lm, &opt.pen, &o_known, &view,
                          &pos, &opt.limit))
        return NULL;
    if (known_words(o_known, "compact_best_path_records", &known, &opt) < 0)
        goto done;
    if (pos < 0 || pos > view.len) {
        PyErr_SetString(PyExc_ValueError, "compact_best_path_records: pos must be within the buffer");
        goto done;
    }
    if (!(records = PyList_New(0)))
        goto done;
    const unsigned char *const base = (const unsigned char *)view.buf + pos, *const end = base + (view.len - pos);
    const unsigned char *p = base;
    int stopped = 0;
    for (;;) {
        const unsigned char *q = p;
        long long newlines = 0;
        while (q < end && is_space(*q))
            newlines += *q++ == '\n';
        const unsigned char *key = q;
        while (q < end && !is_space(*q)) {
            if (*q < 0x21 || *q > 0x7e || q - key >= MAX_KEY) {  /* NUL, control, non-ASCII: the reader's */
                stopped = 1;
                break;
            }
            q++;
        }
        if (stopped || q == end)
            break;
        const Py_ssize_t key_len = q - key;
        if (key_len == 0 || (*q != ' ' && *q != '\t')) {
            stopped = 1;
            break;
        }
        q++;
        /* magic, "vector", arc type, version, flags, properties, start, states, arcs */
        const size_t head = 4 + 4 + 6 + 4 + 16 + 4 + 4 + 8 + 8 + 8 + 8;
        if ((size_t)(end - q) < head)
            break;
        if (body_i32(q) != 2125659606 || !string_is(q + 4, "vector")) {
            stopped = 1;
            break;
        }
        const int fsize = string_is(q + 14, "compactlattice44") ? 4 : string_is(q + 14, "compactlattice84") ? 8 : 0;
        const int32_t flags = body_i32(q + 38);
        const long long start = body_i64(q + 50), num_states = body_i64(q + 58);
        if (!fsize || (flags & 3) || num_states < 0 || num_states >= (long long)1 << 31) {
            stopped = 1;
            break;
        }
        q += head;
        PyObject *value = NULL;
        BodyStop stop = {0};
        const int status = compact_best_path_body(q, end, num_states, fsize, start, &opt, &value, &stop);
        if (status < 0)
            goto done;
        if (status == CB_SHORT)
            break;
        if (status == CB_GENERAL) {
            stopped = 1;
            break;
        }
        PyObject *item = Py_BuildValue("(y#LN)", (const char *)key, key_len, newlines, value);
        if (!item || PyList_Append(records, item) < 0) {
            Py_XDECREF(item);
            goto done;
        }
        Py_DECREF(item);
        p = q + stop.consumed;
    }
    result = Py_BuildValue("(inO)", stopped, (Py_ssize_t)(p - base), records);
done:
    Py_XDECREF(records);
    buffer_release(&known);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef methods[] = {
    {"top_sort", top_sort, METH_VARARGS, top_sort_doc},
    {"state_times", state_times, METH_VARARGS, state_times_doc},
    {"tropical_best_path", tropical_best_path, METH_VARARGS, tropical_best_path_doc},
    {"compact_shortest_path", compact_shortest_path, METH_VARARGS, compact_shortest_path_doc},
    {"best_path", best_path, METH_VARARGS, best_path_doc},
    {"compact_best_path", compact_best_path, METH_VARARGS, compact_best_path_doc},
    {"compact_best_path_records", compact_best_path_records, METH_VARARGS, compact_best_path_records_doc},
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
