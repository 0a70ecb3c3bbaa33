/* The graph loops of Lattice.from_arcs (lattice_tools/lattice.py), the hub constructor every reader calls:
 * the states reachable from the start, their topological order (Kahn's algorithm with a LIFO stack, the
 * successors of a state in arc order -- the numbering every output shows) and the arcs' new order (sorted by
 * new source, then new destination, stable).  Their oracles are the plain-Python loops they replaced, in
 * tests/_reference/lattice_order.py (tests/test_lattice_order.py compares them).
 *
 * Arrays cross as buffers (no numpy headers): every argument's type and size is checked on entry and
 * every index before it is followed, so no input reads or writes out of bounds.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Loops over arcs call PyErr_CheckSignals every this many iterations (Ctrl-C on huge inputs). */
#define SIGNAL_EVERY 131072

/* src and dst have the same length and hold states 0 .. num_states - 1; start is a state. */
static int check_arcs(const char *fn, const Py_buffer *src, const Py_buffer *dst, Py_ssize_t num_states,
                      Py_ssize_t start)
{
    const Py_ssize_t m = buffer_items(src);
    if (buffer_items(dst) != m) {
        PyErr_Format(PyExc_ValueError, "%s: src has %zd items, dst %zd", fn, m, buffer_items(dst));
        return -1;
    }
    if (start < 0 || start >= num_states) {
        PyErr_Format(PyExc_ValueError, "%s: start %zd is not a state (0 .. %zd)", fn, start, num_states - 1);
        return -1;
    }
    const int64_t *s = src->buf, *d = dst->buf;
    for (Py_ssize_t a = 0; a < m; a++)
        if (s[a] < 0 || s[a] >= num_states || d[a] < 0 || d[a] >= num_states) {
            PyErr_Format(PyExc_ValueError, "%s: arc %zd (%lld -> %lld) has a state outside 0 .. %zd", fn, a,
                         (long long)s[a], (long long)d[a], num_states - 1);
            return -1;
        }
    return 0;
}

/* Successor lists: succ[offsets[s] .. offsets[s + 1]) = the heads of s's arcs in arc order (a stable
 * counting sort by source).  Returns 0, or -1 with MemoryError set (nothing left allocated). */
static int successor_lists(const int64_t *src, const int64_t *dst, Py_ssize_t m, Py_ssize_t n, int64_t **offsets,
                           int64_t **succ)
{
    int64_t *off = calloc((size_t)n + 1, sizeof(int64_t));
    int64_t *out = malloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    int64_t *fill = malloc(sizeof(int64_t) * (size_t)n);
    if (!off || !out || !fill) {
        free(off);
        free(out);
        free(fill);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t a = 0; a < m; a++)
        off[src[a] + 1]++;
    for (Py_ssize_t s = 0; s < n; s++)
        off[s + 1] += off[s];
    memcpy(fill, off, sizeof(int64_t) * (size_t)n);
    for (Py_ssize_t a = 0; a < m; a++)
        out[fill[src[a]]++] = dst[a];
    free(fill);
    *offsets = off;
    *succ = out;
    return 0;
}

/* Marks (reach[s] = 1) the states reachable from start by depth-first search; returns their number, or -1
 * with an exception set (Ctrl-C).  stack: scratch of n items (a state is pushed once, when first marked). */
static Py_ssize_t mark_reachable(Py_ssize_t start, const int64_t *offsets, const int64_t *succ, unsigned char *reach,
                                 int64_t *stack)
{
    Py_ssize_t depth = 0, count = 1, steps = 0;
    reach[start] = 1;
    stack[depth++] = start;
    while (depth > 0) {
        const int64_t s = stack[--depth];
        for (int64_t a = offsets[s]; a < offsets[s + 1]; a++) {
            const int64_t d = succ[a];
            if (!reach[d]) {
                reach[d] = 1;
                stack[depth++] = d;
                count++;
            }
        }
        if (++steps % SIGNAL_EVERY == 0 && PyErr_CheckSignals() < 0)
            return -1;
    }
    return count;
}

PyDoc_STRVAR(reachable_doc,
"reachable($module, start, src, dst, mask, /)\n--\n\n"
"-> int\n\n"
"Sets mask[s] (bool, writable, one item per state) to whether state s is reachable from start along the\n"
"arcs src[a] -> dst[a] (int64, equal length); returns the number of reachable states.");

static PyObject *reachable(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t start;
    PyObject *o_src, *o_dst, *o_mask;
    Py_buffer src = {0}, dst = {0}, mask = {0};
    PyObject *result = NULL;
    int64_t *offsets = NULL, *succ = NULL, *stack = NULL;
    if (!PyArg_ParseTuple(args, "nOOO:reachable", &start, &o_src, &o_dst, &o_mask))
        return NULL;
    if (buffer_get(&src, o_src, "reachable", "src", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "reachable", "dst", 'q', 0, -1) < 0 ||
        buffer_get(&mask, o_mask, "reachable", "mask", 'B', BUF_WRITABLE, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&mask), m = buffer_items(&src);
    if (check_arcs("reachable", &src, &dst, n, start) < 0)
        goto done;
    if (successor_lists(src.buf, dst.buf, m, n, &offsets, &succ) < 0)
        goto done;
    stack = malloc(sizeof(int64_t) * (size_t)n);
    if (!stack) {
        PyErr_NoMemory();
        goto done;
    }
    unsigned char *reach = mask.buf;
    memset(reach, 0, (size_t)n);
    const Py_ssize_t count = mark_reachable(start, offsets, succ, reach, stack);
    if (count >= 0)
        result = PyLong_FromSsize_t(count);
done:
    free(offsets);
    free(succ);
    free(stack);
    buffer_release(&src);
    buffer_release(&dst);
    buffer_release(&mask);
    return result;
}

/* Kahn's algorithm over the reachable part, LIFO: pops a state, appends it to order, and pushes each head
 * of its arcs (in arc order) whose count of unvisited live predecessors drops to 0.  Returns the (status,
 * value) pair documented in topological_order_doc, or -1 with an exception set. */
static int kahn(Py_ssize_t start, Py_ssize_t n, const int64_t *src, const int64_t *dst, Py_ssize_t m,
                const int64_t *offsets, const int64_t *succ, int64_t *order, int *status, Py_ssize_t *value)
{
    int ret = -1;
    unsigned char *reach = calloc((size_t)n, 1);
    int64_t *stack = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *indeg = calloc((size_t)n, sizeof(int64_t));
    if (!reach || !stack || !indeg) {
        PyErr_NoMemory();
        goto done;
    }
    const Py_ssize_t n_reach = mark_reachable(start, offsets, succ, reach, stack);
    if (n_reach < 0)
        goto done;
    for (Py_ssize_t a = 0; a < m; a++)  /* arcs from unreachable states do not count: their cycles do not matter */
        if (reach[src[a]])
            indeg[dst[a]]++;
    if (indeg[start] != 0) {
        *status = 1;
        *value = start;
        ret = 0;
        goto done;
    }
    Py_ssize_t depth = 0, count = 0;
    stack[depth++] = start;  /* a state is pushed once: when its count reaches 0 (the start: never counted) */
    while (depth > 0) {
        const int64_t s = stack[--depth];
        order[count++] = s;
        for (int64_t a = offsets[s]; a < offsets[s + 1]; a++) {
            const int64_t d = succ[a];
            if (--indeg[d] == 0)
                stack[depth++] = d;
        }
        if (count % SIGNAL_EVERY == 0 && PyErr_CheckSignals() < 0)
            goto done;
    }
    if (count != n_reach) {  /* a reachable state never popped still waits for a predecessor on a cycle */
        Py_ssize_t s = 0;
        while (s < n && !(reach[s] && indeg[s] > 0))
            s++;
        *status = 2;
        *value = s;
    } else {
        *status = 0;
        *value = count;
    }
    ret = 0;
done:
    free(reach);
    free(stack);
    free(indeg);
    return ret;
}

PyDoc_STRVAR(topological_order_doc,
"topological_order($module, start, src, dst, order, /)\n--\n\n"
"-> (status, value)\n\n"
"The states reachable from start along the arcs src[a] -> dst[a] (int64, equal length) in topological\n"
"order: Kahn's algorithm with a LIFO stack, start first, the heads of a state's arcs pushed in arc order.\n"
"order: int64, writable, one item per state.  Returns (0, count) with the order in order[:count];\n"
"(1, start) if the start state is on a cycle; (2, s) if another cycle is reachable, s being the smallest\n"
"reachable state still waiting for a predecessor.");

static PyObject *topological_order(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t start;
    PyObject *o_src, *o_dst, *o_order;
    Py_buffer src = {0}, dst = {0}, order = {0};
    PyObject *result = NULL;
    int64_t *offsets = NULL, *succ = NULL;
    if (!PyArg_ParseTuple(args, "nOOO:topological_order", &start, &o_src, &o_dst, &o_order))
        return NULL;
    if (buffer_get(&src, o_src, "topological_order", "src", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "topological_order", "dst", 'q', 0, -1) < 0 ||
        buffer_get(&order, o_order, "topological_order", "order", 'q', BUF_WRITABLE, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&order), m = buffer_items(&src);
    if (check_arcs("topological_order", &src, &dst, n, start) < 0)
        goto done;
    if (successor_lists(src.buf, dst.buf, m, n, &offsets, &succ) < 0)
        goto done;
    int status = 0;
    Py_ssize_t value = 0;
    if (kahn(start, n, src.buf, dst.buf, m, offsets, succ, order.buf, &status, &value) < 0)
        goto done;
    result = Py_BuildValue("(in)", status, value);
done:
    free(offsets);
    free(succ);
    buffer_release(&src);
    buffer_release(&dst);
    buffer_release(&order);
    return result;
}

PyDoc_STRVAR(arc_order_doc,
"arc_order($module, src, dst, state_map, arc_idx, new_src, new_dst, /)\n--\n\n"
"-> (count, unchanged)\n\n"
"The arcs whose two states are kept (state_map: int64, the new id of each state, -1 = dropped; src, dst:\n"
"int64, equal length) sorted by new source, then new destination, then index (numpy's lexsort).  Writes\n"
"the first count items of arc_idx (the input index of each kept arc), new_src and new_dst (int64,\n"
"writable, one item per arc).  unchanged: every arc is kept in its input order.");

/* Whether two buffers share memory (the outputs of arc_order are read back as sort keys while it writes
 * them: an output laid over another argument could send a key out of range). */
static int overlap(const Py_buffer *a, const Py_buffer *b)
{
    const char *a0 = a->buf, *b0 = b->buf;
    return a->len > 0 && b->len > 0 && a0 < b0 + b->len && b0 < a0 + a->len;
}

/* A stable counting sort of the `count` arc indices in `in` by key[in[i]] (keys 0 .. n - 1) into `out`;
 * bucket: scratch of n + 1 items. */
static void sort_by_key(const int64_t *in, Py_ssize_t count, const int64_t *key, Py_ssize_t n, int64_t *bucket,
                        int64_t *out)
{
    memset(bucket, 0, sizeof(int64_t) * ((size_t)n + 1));
    for (Py_ssize_t i = 0; i < count; i++)
        bucket[key[in[i]] + 1]++;
    for (Py_ssize_t k = 0; k < n; k++)
        bucket[k + 1] += bucket[k];
    for (Py_ssize_t i = 0; i < count; i++)
        out[bucket[key[in[i]]]++] = in[i];
}

static PyObject *arc_order(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o_src, *o_dst, *o_map, *o_idx, *o_nsrc, *o_ndst;
    Py_buffer src = {0}, dst = {0}, map = {0}, idx = {0}, nsrc = {0}, ndst = {0};
    PyObject *result = NULL;
    int64_t *kept = NULL, *bucket = NULL;
    if (!PyArg_ParseTuple(args, "OOOOOO:arc_order", &o_src, &o_dst, &o_map, &o_idx, &o_nsrc, &o_ndst))
        return NULL;
    if (buffer_get(&src, o_src, "arc_order", "src", 'q', 0, -1) < 0 ||
        buffer_get(&dst, o_dst, "arc_order", "dst", 'q', 0, -1) < 0 ||
        buffer_get(&map, o_map, "arc_order", "state_map", 'q', 0, -1) < 0 ||
        buffer_get(&idx, o_idx, "arc_order", "arc_idx", 'q', BUF_WRITABLE, -1) < 0 ||
        buffer_get(&nsrc, o_nsrc, "arc_order", "new_src", 'q', BUF_WRITABLE, -1) < 0 ||
        buffer_get(&ndst, o_ndst, "arc_order", "new_dst", 'q', BUF_WRITABLE, -1) < 0)
        goto done;
    const Py_ssize_t n = buffer_items(&map), m = buffer_items(&src);
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "arc_order: state_map is empty (a lattice has at least one state)");
        goto done;
    }
    if (check_arcs("arc_order", &src, &dst, n, 0) < 0)
        goto done;
    if (buffer_items(&idx) != m || buffer_items(&nsrc) != m || buffer_items(&ndst) != m) {
        PyErr_Format(PyExc_ValueError, "arc_order: arc_idx, new_src and new_dst must have %zd items (got %zd, %zd, "
                     "%zd)", m, buffer_items(&idx), buffer_items(&nsrc), buffer_items(&ndst));
        goto done;
    }
    const Py_buffer *outputs[3] = {&idx, &nsrc, &ndst}, *inputs[3] = {&src, &dst, &map};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            if ((j > i && overlap(outputs[i], outputs[j])) || overlap(outputs[i], inputs[j])) {
                PyErr_SetString(PyExc_ValueError, "arc_order: arc_idx, new_src and new_dst must not share memory "
                                "with each other or with src, dst, state_map");
                goto done;
            }
    const int64_t *s = src.buf, *d = dst.buf, *sm = map.buf;
    for (Py_ssize_t i = 0; i < n; i++)
        if (sm[i] < -1 || sm[i] >= n) {
            PyErr_Format(PyExc_ValueError, "arc_order: state_map[%zd] = %lld is neither -1 nor a state (0 .. %zd)", i,
                         (long long)sm[i], n - 1);
            goto done;
        }
    int64_t *out_idx = idx.buf, *out_src = nsrc.buf, *out_dst = ndst.buf;
    kept = malloc(sizeof(int64_t) * (size_t)(m ? m : 1));
    bucket = malloc(sizeof(int64_t) * ((size_t)n + 1));
    if (!kept || !bucket) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t count = 0;
    for (Py_ssize_t a = 0; a < m; a++) {
        out_src[a] = sm[s[a]];  /* the sort keys, by arc (rewritten in sorted order below) */
        out_dst[a] = sm[d[a]];
        if (out_src[a] >= 0 && out_dst[a] >= 0)
            kept[count++] = a;
    }
    sort_by_key(kept, count, out_dst, n, bucket, out_idx);  /* by new destination, stable */
    sort_by_key(out_idx, count, out_src, n, bucket, kept);  /* then by new source, stable */
    int unchanged = count == m;
    for (Py_ssize_t i = 0; i < count; i++) {
        const int64_t a = kept[i];
        out_idx[i] = a;
        unchanged &= a == i;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        out_src[i] = sm[s[out_idx[i]]];
        out_dst[i] = sm[d[out_idx[i]]];
    }
    result = Py_BuildValue("(nO)", count, unchanged ? Py_True : Py_False);
done:
    free(kept);
    free(bucket);
    buffer_release(&src);
    buffer_release(&dst);
    buffer_release(&map);
    buffer_release(&idx);
    buffer_release(&nsrc);
    buffer_release(&ndst);
    return result;
}

static PyMethodDef methods[] = {
    {"reachable", reachable, METH_VARARGS, reachable_doc},
    {"topological_order", topological_order, METH_VARARGS, topological_order_doc},
    {"arc_order", arc_order, METH_VARARGS, arc_order_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lattice_tools._ext.lattice_order",
    "The graph loops of Lattice.from_arcs: reachable states, their topological order, the arcs' new order.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_lattice_order(void)
{
    return PyModule_Create(&module);
}
