/* Compiled loops of the exact N-best search (lattice_tools.alternatives.nbest_lists).
 *
 * closed_rows        every state's word arcs reachable through epsilon paths, with the log sum and the
 *                    minimum of the path costs, and its closed exit cost
 * best_word_bound    the admissible, consistent best-completion bound per state
 * suffix_list_bound  the tighter (admissible, not consistent) suffix-list bound per state
 * bounded_search     A* over log-determinized states builds the region that can hold the n best
 *                    sequences; exact best completions inside it; best-first search over word prefixes;
 *                    anytime: what it found when a budget stopped it, with a bound on the rest
 * best_paths         the best single path reading each output sequence (for word times)
 *
 * The files: module.c (this one: the method table and the argument glue), buffers.c (growable arrays),
 * closed_rows.c, bounds.c (best_word_bound, suffix_list_bound), region_states.c (the determinized states
 * of the region search and their expansion), region_search.c (the A* rounds and the prefix search),
 * best_paths.c; nbest.h and region.h declare what they share.
 *
 * The algorithms are described in nbest_lists.py.  Every log sum is m - log(sum(exp(m - x))) around
 * the segment's minimum m, summed in a fixed order, so results are deterministic.  The operations are
 * those of the plain-Python transcription in tests/_reference/nbest_*.py (the tests' oracle; the same
 * bits), except one: an expansion of the region search propagates the determinized state's members
 * through the epsilon arcs and gathers each word arc once, where the transcription gathers every
 * member's closed row (the same arc once per member that reaches it, ~4x the work on long dense
 * lattices): the same terms summed in another order, so the same lists with costs equal to ~1e-15
 * relative.
 *
 * Every kernel takes an optional last argument max_bytes (default -1: none): what it may allocate (its
 * outputs included); past it bounded_search returns TOO_MANY_BYTES, the others raise MemoryError with the
 * message BUDGET_EXCEEDED (buffers.c counts the allocations).
 *
 * Arrays cross as buffers (int64 'l'/'q', float64 'd', bool '?'), checked on entry; results are
 * returned as bytearrays (numpy.frombuffer views them).  Long loops poll PyErr_CheckSignals.
 */
#include "nbest.h"

/* ------------------------------------------------------------------------------------------------ */
/* buffers in, bytearrays out                                                                        */
/* ------------------------------------------------------------------------------------------------ */
void views_release(Views *vs)
{
    for (int i = 0; i < vs->n; i++)
        PyBuffer_Release(&vs->v[i]);
    vs->n = 0;
}

void *view(Views *vs, PyObject *obj, const char *name, int kind, Py_ssize_t len, Py_ssize_t *out_len)
{
    if (vs->n >= MAX_VIEWS) {
        PyErr_SetString(PyExc_RuntimeError, "nbest: too many buffers");
        return NULL;
    }
    Py_buffer *b = &vs->v[vs->n];
    if (buffer_get(b, obj, vs->fn, name, (char)kind, 0, len) < 0)
        return NULL;
    vs->n++;
    if (out_len)
        *out_len = buffer_items(b);
    return b->buf;
}

PyObject *out_array(const void *p, i64 count, size_t itemsize)
{
    return PyByteArray_FromStringAndSize(count ? (const char *)p : NULL, (Py_ssize_t)(count * (i64)itemsize));
}

int check_arcs(i64 m, const i64 *src, const i64 *dst, i64 n_arcs)
{
    for (i64 a = 0; a < n_arcs; a++) {
        if (src[a] < 0 || dst[a] <= src[a] || dst[a] >= m || (a && src[a] < src[a - 1])) {
            PyErr_Format(PyExc_ValueError, "nbest: arc %lld (%lld -> %lld) of a %lld-state lattice: states must be "
                         "numbered topologically (src < dst < num_states) and src sorted", (long long)a,
                         (long long)src[a], (long long)dst[a], (long long)m);
            return -1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------------------------------------------ */
static PyMethodDef methods[] = {
    {"closed_rows", py_closed_rows, METH_VARARGS,
     "closed_rows($module, m, src, dst, lab, cost, final, max_bytes=-1, /)\n--\n\n"
     "-> (w_off, w_arc, w_lc, w_bc, x_lc, x_bc) as bytearrays\n\n"
     "Every state's closed row of an m-state lattice numbered topologically: the word arcs reachable from it "
     "through epsilon paths (arcs src -> dst, int64 sorted by src; lab int64, 0 = epsilon; cost float64 per arc; "
     "final float64 per state, inf = not final).  Row s is w_arc[w_off[s]:w_off[s + 1]] (arc ids, sorted), with "
     "the log sum (w_lc) and the minimum (w_bc) of the epsilon-path-plus-arc costs; x_lc / x_bc: each state's "
     "exit cost through epsilon paths, log sum and minimum.  max_bytes (every kernel): what it may allocate "
     "(-1: no limit; past it MemoryError BUDGET_EXCEEDED, or bounded_search's status TOO_MANY_BYTES)."},
    {"best_word_bound", py_best_word_bound, METH_VARARGS,
     "best_word_bound($module, m, w_off, w_dlab, w_dst, w_lc, x_lc, num_labels, max_bytes=-1, /)\n--\n\n"
     "-> h (float64 bytearray)\n\n"
     "The admissible, consistent best-completion bound of every state: h[s] = min(x_lc[s], min over words w of "
     "the log sum over s's closed w entries of (w_lc + h[w_dst])), in reverse topological order.  The closed rows "
     "as closed_rows returns them (w_off int64, m + 1), with w_dlab (int64, the entries' dense word labels in "
     "[0, num_labels)) and w_dst (int64, their destinations)."},
    {"suffix_list_bound", py_suffix_list_bound, METH_VARARGS,
     "suffix_list_bound($module, m, w_off, w_dlab, w_dst, w_lc, x_lc, num_labels, k, max_bytes=-1, /)\n--\n\n"
     "-> h (float64 bytearray)\n\n"
     "A tighter admissible (not consistent) bound than best_word_bound, from the same closed rows: per state "
     "the k best completions are listed (sums over their alignments) and one bound covers every other; k = 0 "
     "gives best_word_bound."},
    {"bounded_search", py_bounded_search, METH_VARARGS,
     "bounded_search($module, m, src, dst, dlab, cost, final, hb, num_labels, n, max_pops, max_states, "
     "max_members, margin, resolution, anytime=False, time_limit=None, guide=None, max_rss=-1, max_bytes=-1, /)"
     "\n--\n\n"
     "-> (status, found_link, found_cost, t_parent, t_label, lower)\n\n"
     "The n best distinct word sequences (n < 0: every one) of an m-state lattice (arcs src -> dst, int64 "
     "sorted by src; dlab int64 dense word label per arc, -1 = epsilon, < num_labels; cost float64 per arc; "
     "final float64 per state): A* over log-determinized states with the bound hb (float64 per state) builds "
     "the region that can hold them (first reaching margin nats past the best sequence), exact best "
     "completions inside it, then a best-first search over word prefixes.  max_pops, max_states, max_members: "
     "budgets (status TOO_MANY_POPS, TOO_MANY_STATES, TOO_MANY_MEMBERS past them, TOO_MANY_BYTES past "
     "max_bytes, TIME_LIMIT past time_limit seconds, TOO_MANY_MEMBERS past max_rss bytes of resident memory, "
     "else OK); resolution: residual costs closer than this identify determinized states.  anytime: a search "
     "stopped by a budget still returns what it found (candidates completed best first by the estimate guide, "
     "float64 per state; default hb), and lower, a lower bound on the cost of every sequence it did not "
     "return.  time_limit: seconds (None or omitted: none).  The sequences are trie nodes found_link (int64) with costs found_cost (float64); the trie is "
     "t_parent / t_label (int64, node 0 the empty prefix); all bytearrays."},
    {"best_paths", py_best_paths, METH_VARARGS,
     "best_paths($module, w_off, w_dlab, w_dst, w_bc, w_arc, x_bc, seq_off, seq_lab, m, max_bytes=-1, /)\n--\n\n"
     "-> (cost, arcs)\n\n"
     "The best single path reading each output sequence (tropical, for word times), over the closed rows of "
     "closed_rows (w_bc, x_bc: the minimum costs) with dense labels w_dlab and destinations w_dst: sequence q "
     "is seq_lab[seq_off[q]:seq_off[q + 1]] (int64 dense labels).  cost (float64 per sequence, inf when no "
     "path reads it) and arcs (int64, seq_off's layout: the word arc read for each word, -1 when none) as "
     "bytearrays."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "nbest", "Compiled loops of the exact N-best search.",
                                    -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_nbest(void)
{
    PyObject *mod = PyModule_Create(&module);
    if (!mod)
        return NULL;
    if (PyModule_AddIntConstant(mod, "OK", ST_OK) < 0 || PyModule_AddIntConstant(mod, "TOO_MANY_POPS", ST_TOO_MANY_POPS) < 0 ||
        PyModule_AddIntConstant(mod, "TOO_MANY_STATES", ST_TOO_MANY_STATES) < 0 ||
        PyModule_AddIntConstant(mod, "TOO_MANY_MEMBERS", ST_TOO_MANY_MEMBERS) < 0 ||
        PyModule_AddIntConstant(mod, "TOO_MANY_BYTES", ST_TOO_MANY_BYTES) < 0 ||
        PyModule_AddIntConstant(mod, "TIME_LIMIT", ST_TIME_LIMIT) < 0 ||
        PyModule_AddStringConstant(mod, "BUDGET_EXCEEDED", BUDGET_EXCEEDED) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
