/* The WordTimes type (the word-time Viterbi over a prefix trie) and closed_exits. */
#include "search.h"

enum { W_T_OFF, W_T_LABEL, W_T_COST, W_T_ENTRY, W_ARC_OFF, W_ARC_DST, W_ARC_COST, W_ARC_ORDER, W_ARC_ID, W_EXIT,
       N_WTABLES };
static const char *wtable_names[N_WTABLES] = {"t_off", "t_label", "t_cost", "t_entry", "arc_off", "arc_dst",
                                              "arc_cost", "arc_order", "arc_id", "exit_cost"};
static const char wtable_kinds[N_WTABLES + 1] = "qqdqqqdqqd";

typedef struct {
    PyObject_HEAD
    OwnedArray t[N_WTABLES]; /* copies of the arguments (a caller's array can change after the call) */
    int held, ready; /* tables copied; 1 once __init__ succeeded */
    int busy;        /* 1 during best_paths: a call from a signal handler in its pass would share its scratch */
    Py_ssize_t M, E;
    i64 base; /* marks of a call are base + child node: unique across calls */
    i64 *seen, *cell_arc, *cell_from, *touched, *entry_seen, *entry_from, *entry_list;
    double *cell_cost, *entry_cost;
} WordTimes;

static void WordTimes_dealloc(WordTimes *self) {
    for (int k = 0; k < self->held; k++) owned_free(&self->t[k]);
    free(self->seen); free(self->cell_arc); free(self->cell_from); free(self->touched); free(self->entry_seen);
    free(self->entry_from); free(self->entry_list); free(self->cell_cost); free(self->entry_cost);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int WordTimes_init(WordTimes *self, PyObject *args, PyObject *kwds) {
    PyObject *obj[N_WTABLES];
    if ((kwds && PyDict_GET_SIZE(kwds)) || self->held) {
        PyErr_SetString(PyExc_TypeError, "WordTimes takes positional arguments only, once");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOOOO:WordTimes", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4], &obj[5],
                          &obj[6], &obj[7], &obj[8], &obj[9]))
        return -1;
    for (int k = 0; k < N_WTABLES; k++) {
        if (owned_copy(&self->t[k], obj[k], "WordTimes", wtable_names[k], wtable_kinds[k], BUF_FLAT, -1) < 0)
            return -1;
        self->held = k + 1;
    }
    const OwnedArray *t = self->t;
    Py_ssize_t M = t[W_EXIT].items, T = t[W_T_LABEL].items, E = t[W_ARC_OFF].items - 1, A = t[W_ARC_DST].items;
    if (E < 0) {
        PyErr_SetString(PyExc_ValueError, "arc_off: need at least one offset");
        return -1;
    }
    const char *fn = "WordTimes";
    if (check_offsets(OI(&t[W_T_OFF]), t[W_T_OFF].items, M, T, "t_off") ||
        owned_check_items(&t[W_T_COST], fn, "t_cost", T) || owned_check_items(&t[W_T_ENTRY], fn, "t_entry", T) ||
        check_range(OI(&t[W_T_ENTRY]), T, 0, E, "t_entry") ||
        check_offsets(OI(&t[W_ARC_OFF]), t[W_ARC_OFF].items, E, A, "arc_off") ||
        check_range(OI(&t[W_ARC_DST]), A, 0, M, "arc_dst") || owned_check_items(&t[W_ARC_COST], fn, "arc_cost", A) ||
        owned_check_items(&t[W_ARC_ORDER], fn, "arc_order", A) || owned_check_items(&t[W_ARC_ID], fn, "arc_id", A))
        return -1;
    self->M = M;
    self->E = E;
    size_t m = (size_t)M + 1, e = (size_t)E + 1;
    self->seen = malloc(m * 8); self->cell_arc = malloc(m * 8); self->cell_from = malloc(m * 8);
    self->touched = malloc(m * 8); self->cell_cost = malloc(m * 8);
    self->entry_seen = malloc(e * 8); self->entry_from = malloc(e * 8); self->entry_list = malloc(e * 8);
    self->entry_cost = malloc(e * 8);
    if (!self->seen || !self->cell_arc || !self->cell_from || !self->touched || !self->cell_cost ||
        !self->entry_seen || !self->entry_from || !self->entry_list || !self->entry_cost) {
        PyErr_NoMemory();
        return -1;
    }
    for (size_t k = 0; k < m; k++) self->seen[k] = -1;
    for (size_t k = 0; k < e; k++) self->entry_seen[k] = -1;
    self->ready = 1;
    return 0;
}

/* The closed entries of label lab reached from the parent's states lo:hi, each with its cheapest way in
 * (entry_from: the parent state, the earliest among equal costs); returns how many (in entry_list). */
static Py_ssize_t entries_of_label(WordTimes *w, i64 mk, i64 lab, const i64 *f_state, const double *f_cost, i64 lo,
                                   i64 hi) {
    const i64 *t_off = OI(&w->t[W_T_OFF]), *t_label = OI(&w->t[W_T_LABEL]), *t_entry = OI(&w->t[W_T_ENTRY]);
    const double *t_cost = OD(&w->t[W_T_COST]);
    Py_ssize_t ne = 0;
    for (i64 i = lo; i < hi; i++) {
        double g = f_cost[i];
        i64 a = t_off[f_state[i]], b = t_off[f_state[i] + 1];
        while (a < b) { /* the row's first closed entry with label >= lab */
            i64 mid = (a + b) >> 1;
            if (t_label[mid] < lab) a = mid + 1;
            else b = mid;
        }
        for (i64 ct = a; ct < t_off[f_state[i] + 1] && t_label[ct] == lab; ct++) {
            double x = g + t_cost[ct];
            i64 e = t_entry[ct];
            if (w->entry_seen[e] != mk) {
                w->entry_seen[e] = mk;
                w->entry_cost[e] = x;
                w->entry_from[e] = i;
                w->entry_list[ne++] = e;
            } else if (x < w->entry_cost[e]) { /* parent states come in increasing order: the earliest wins ties */
                w->entry_cost[e] = x;
                w->entry_from[e] = i;
            }
        }
    }
    return ne;
}

/* The arcs of the ne entries, each read once: per destination the cheapest candidate (ties: the earliest
 * parent state, then the earliest arc in arc_order); returns how many destinations (in touched). */
static Py_ssize_t relax_entries(WordTimes *w, i64 mk, Py_ssize_t ne, i64 *work) {
    const i64 *arc_off = OI(&w->t[W_ARC_OFF]), *arc_dst = OI(&w->t[W_ARC_DST]), *arc_order = OI(&w->t[W_ARC_ORDER]);
    const double *arc_cost = OD(&w->t[W_ARC_COST]);
    Py_ssize_t nt = 0;
    for (Py_ssize_t j = 0; j < ne; j++) {
        i64 e = w->entry_list[j], i = w->entry_from[e];
        double x = w->entry_cost[e];
        *work += arc_off[e + 1] - arc_off[e];
        for (i64 k = arc_off[e]; k < arc_off[e + 1]; k++) {
            i64 d = arc_dst[k];
            double v = x + arc_cost[k];
            if (w->seen[d] != mk) {
                w->seen[d] = mk;
                w->cell_cost[d] = v;
                w->cell_arc[d] = k;
                w->cell_from[d] = i;
                w->touched[nt++] = d;
            } else if (v < w->cell_cost[d] ||
                       (v == w->cell_cost[d] &&
                        (i < w->cell_from[d] || (i == w->cell_from[d] && arc_order[k] < arc_order[w->cell_arc[d]])))) {
                w->cell_cost[d] = v;
                w->cell_arc[d] = k;
                w->cell_from[d] = i;
            }
        }
    }
    return nt;
}

typedef struct { /* growable columns of the Viterbi pass, within a byte budget */
    i64 *f_state, *f_link, *link_arc, *link_parent;
    double *f_cost;
    Py_ssize_t f_cap, link_cap;
    i64 bytes, max_bytes; /* max_bytes < 0: no budget */
} Columns;

static void columns_free(Columns *c) {
    free(c->f_state); free(c->f_link); free(c->f_cost); free(c->link_arc); free(c->link_parent);
}

static int grow(void **p, Py_ssize_t cap) {
    void *q = realloc(*p, (size_t)(cap > 0 ? cap : 1) * 8);
    if (!q) return -1;
    *p = q;
    return 0;
}

/* 0, or 1 when the budget is exceeded, -1 (exception set) when out of memory */
static int columns_reserve(Columns *c, Py_ssize_t f_need, Py_ssize_t link_need) {
    Py_ssize_t fc = c->f_cap, lc = c->link_cap;
    if (f_need > fc) fc = f_need > 2 * fc ? f_need : 2 * fc;
    if (link_need > lc) lc = link_need > 2 * lc ? link_need : 2 * lc;
    if (fc == c->f_cap && lc == c->link_cap) return 0;
    i64 bytes = 24 * (i64)fc + 16 * (i64)lc;
    if (c->max_bytes >= 0 && bytes > c->max_bytes) return 1;
    if ((fc != c->f_cap && (grow((void **)&c->f_state, fc) || grow((void **)&c->f_link, fc) ||
                            grow((void **)&c->f_cost, fc))) ||
        (lc != c->link_cap && (grow((void **)&c->link_arc, lc) || grow((void **)&c->link_parent, lc)))) {
        PyErr_NoMemory();
        return -1;
    }
    c->f_cap = fc;
    c->link_cap = lc;
    c->bytes = bytes;
    return 0;
}

enum { R_STATES, R_COSTS, N_LABEL, N_PARENT, N_CH_OFF, N_CHILDREN, N_END, N_TRIE };
static const char *trie_names[N_TRIE] = {"root_states", "root_costs", "label", "parent", "ch_off", "children",
                                         "end_of_node"};
static const char trie_kinds[N_TRIE + 1] = "qdqqqqq";

static int check_trie(WordTimes *self, Py_buffer *a, Py_ssize_t num_seqs) {
    Py_ssize_t n_nodes = len8(&a[N_LABEL]);
    const i64 *parent = I(&a[N_PARENT]);
    const char *fn = "WordTimes.best_paths";
    if (check_range(I(&a[R_STATES]), len8(&a[R_STATES]), 0, self->M, "root_states") ||
        buffer_check_items(&a[R_COSTS], fn, "root_costs", len8(&a[R_STATES])) ||
        buffer_check_items(&a[N_PARENT], fn, "parent", n_nodes) ||
        check_offsets(I(&a[N_CH_OFF]), len8(&a[N_CH_OFF]), n_nodes, len8(&a[N_CHILDREN]), "ch_off") ||
        check_range(I(&a[N_CHILDREN]), len8(&a[N_CHILDREN]), 0, n_nodes, "children") || buffer_check_items(&a[N_END], fn, "end_of_node", n_nodes) ||
        check_range(I(&a[N_END]), len8(&a[N_END]), -1, num_seqs, "end_of_node"))
        return -1;
    for (Py_ssize_t v = 1; v < n_nodes; v++)
        if (parent[v] < 0 || parent[v] >= v) {
            PyErr_Format(PyExc_ValueError, "parent[%zd] = %lld: a node's parent must come before it", v,
                         (long long)parent[v]);
            return -1;
        }
    if (n_nodes < 1) {
        PyErr_SetString(PyExc_ValueError, "label: the trie needs its root");
        return -1;
    }
    return 0;
}

/* The Viterbi pass of best_paths over a checked trie; 0, 1 (budget exceeded) or -1 (exception). */
static int viterbi(WordTimes *self, Py_buffer *a, Columns *col, double *best_cost, i64 *best_link, Py_ssize_t *n_links_out) {
    const i64 *root_states = I(&a[R_STATES]), *label = I(&a[N_LABEL]), *parent = I(&a[N_PARENT]);
    const i64 *ch_off = I(&a[N_CH_OFF]), *children = I(&a[N_CHILDREN]), *end_of_node = I(&a[N_END]);
    const double *root_costs = D(&a[R_COSTS]), *exit_cost = OD(&self->t[W_EXIT]);
    const i64 *arc_id = OI(&self->t[W_ARC_ID]);
    Py_ssize_t n_nodes = len8(&a[N_LABEL]), used = len8(&a[R_STATES]), n_links = 0;
    int status = -1;
    char *needed = calloc((size_t)n_nodes, 1);
    i64 *f_lo = malloc((size_t)n_nodes * 8), *f_hi = malloc((size_t)n_nodes * 8);
    if (!needed || !f_lo || !f_hi) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t v = 0; v < n_nodes; v++) {
        needed[v] = end_of_node[v] >= 0; /* the nodes on the way to a sequence */
        f_lo[v] = f_hi[v] = -1;
    }
    for (Py_ssize_t v = n_nodes - 1; v > 0; v--)
        if (needed[v]) needed[parent[v]] = 1;
    if ((status = columns_reserve(col, used > 256 ? 4 * used : 1024, 1024)) != 0) goto done;
    for (Py_ssize_t i = 0; i < used; i++) {
        col->f_state[i] = root_states[i];
        col->f_cost[i] = root_costs[i];
        col->f_link[i] = -1;
    }
    f_lo[0] = 0;
    f_hi[0] = used;
    i64 work = 0, next_check = 1 << 17;
    for (Py_ssize_t node = 0; node < n_nodes; node++) {
        i64 lo = f_lo[node], hi = f_hi[node], q = end_of_node[node];
        if (lo < 0) continue;
        if (q >= 0) {
            i64 arg = -1;
            double best = INFINITY;
            for (i64 i = lo; i < hi; i++) {
                double t = col->f_cost[i] + exit_cost[col->f_state[i]];
                if (arg < 0 || t < best) {
                    best = t;
                    arg = i;
                }
            }
            best_cost[q] = best;
            best_link[q] = arg >= 0 ? col->f_link[arg] : -1;
        }
        for (i64 ci = ch_off[node]; ci < ch_off[node + 1]; ci++) {
            i64 c = children[ci], mk = self->base + c;
            if (!needed[c]) continue;
            Py_ssize_t ne = entries_of_label(self, mk, label[c], col->f_state, col->f_cost, lo, hi);
            Py_ssize_t nt = relax_entries(self, mk, ne, &work);
            work += hi - lo + ne;
            if (work >= next_check) {
                next_check = work + (1 << 17);
                if (PyErr_CheckSignals() < 0) {
                    status = -1;
                    goto done;
                }
            }
            if (nt == 0) continue;
            sort_i64(self->touched, nt);
            if ((status = columns_reserve(col, used + nt, n_links + nt)) != 0) goto done;
            f_lo[c] = used;
            for (Py_ssize_t k = 0; k < nt; k++) {
                i64 d = self->touched[k];
                col->f_state[used] = d;
                col->f_cost[used] = self->cell_cost[d];
                col->f_link[used] = n_links;
                col->link_arc[n_links] = arc_id[self->cell_arc[d]];
                col->link_parent[n_links] = col->f_link[self->cell_from[d]];
                n_links++;
                used++;
            }
            f_hi[c] = used;
        }
    }
    status = 0;
done:
    self->base += n_nodes;
    *n_links_out = n_links;
    free(needed); free(f_lo); free(f_hi);
    return status;
}

/* best_paths(root_states, root_costs, label, parent, ch_off, children, end_of_node, num_seqs, max_bytes):
 * best single path reading each sequence of the prefix trie (tropical; see _best_paths.best_paths).
 * Returns (status, best_cost, best_link, link_arc, link_parent) as bytes (float64, int64...); status 1 (and
 * Nones): the pass would hold more than max_bytes (< 0: no budget) of columns. */
static PyObject *WordTimes_best_paths(WordTimes *self, PyObject *args) {
    PyObject *obj[N_TRIE];
    Py_ssize_t num_seqs;
    long long max_bytes;
    if (!PyArg_ParseTuple(args, "OOOOOOOnL:best_paths", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4], &obj[5],
                          &obj[6], &num_seqs, &max_bytes))
        return NULL;
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "WordTimes is not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "WordTimes.best_paths is already running on these tables");
        return NULL;
    }
    Py_buffer a[N_TRIE];
    int held = 0;
    PyObject *result = NULL, *bc = NULL, *bl = NULL;
    Columns col = {0};
    col.max_bytes = max_bytes;
    for (; held < N_TRIE; held++)
        if (buffer_get(&a[held], obj[held], "WordTimes.best_paths", trie_names[held], trie_kinds[held], BUF_FLAT, -1) < 0)
            goto done;
    if (num_seqs < 0) {
        PyErr_SetString(PyExc_ValueError, "num_seqs must be >= 0");
        goto done;
    }
    if (check_trie(self, a, num_seqs) < 0) goto done;
    bc = PyBytes_FromStringAndSize(NULL, 8 * num_seqs);
    bl = PyBytes_FromStringAndSize(NULL, 8 * num_seqs);
    if (!bc || !bl) goto done;
    double *best_cost = (double *)PyBytes_AS_STRING(bc); /* bytes data is 8-aligned (CPython's allocators) */
    i64 *best_link = (i64 *)PyBytes_AS_STRING(bl);
    for (Py_ssize_t q = 0; q < num_seqs; q++) {
        best_cost[q] = INFINITY;
        best_link[q] = -1;
    }
    Py_ssize_t n_links = 0;
    self->busy = 1;
    int status = viterbi(self, a, &col, best_cost, best_link, &n_links);
    self->busy = 0;
    if (status < 0) goto done;
    if (status == 1) {
        result = Py_BuildValue("(iOOOO)", 1, Py_None, Py_None, Py_None, Py_None);
        goto done;
    }
    PyObject *la = PyBytes_FromStringAndSize((const char *)col.link_arc, 8 * n_links);
    PyObject *lp = la ? PyBytes_FromStringAndSize((const char *)col.link_parent, 8 * n_links) : NULL;
    if (!la || !lp) {
        Py_XDECREF(la);
        goto done;
    }
    result = Py_BuildValue("(iOONN)", 0, bc, bl, la, lp);
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&a[k]);
    Py_XDECREF(bc);
    Py_XDECREF(bl);
    columns_free(&col);
    return result;
}

static PyMethodDef WordTimes_methods[] = {
    {"best_paths", (PyCFunction)WordTimes_best_paths, METH_VARARGS,
     "best_paths($self, root_states, root_costs, label, parent, ch_off, children, end_of_node, num_seqs, "
     "max_bytes, /)\n--\n\n"
     "-> (status, best_cost, best_link, link_arc, link_parent)\n\n"
     "The best single path (tropical) reading each sequence of a prefix trie, from the initial states "
     "root_states (int64) at costs root_costs (float64).  The trie (int64 per node, node 0 the root): label, "
     "parent (before the node), the children of node v children[ch_off[v]:ch_off[v + 1]], end_of_node (the "
     "sequence in [0, num_seqs) that ends there, -1 none).  Status 0 with best_cost (float64 per sequence), "
     "best_link (int64, -1 when no path reads it) and the links' arc ids and parents (int64), all bytes; "
     "status 1 (and Nones) when the pass would hold more than max_bytes (< 0: no limit)."},
    {NULL, NULL, 0, NULL}};

PyTypeObject WordTimesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lattice_tools._ext.search.WordTimes",
    .tp_basicsize = sizeof(WordTimes),
    .tp_dealloc = (destructor)WordTimes_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WordTimes(t_off, t_label, t_cost, t_entry, arc_off, arc_dst, arc_cost, arc_order, arc_id, exit_cost, /)"
              "\n--\n\n"
              "The tables of the word-time Viterbi (Determinizer.word_time_tables), copied and checked once: per "
              "state (t_off, int64, len(exit_cost) + 1 offsets) its closed entries sorted by word label (t_label "
              "int64, t_cost float64 the cheapest epsilon path to the entry, t_entry int64 < E); per entry "
              "(arc_off, int64, E + 1 offsets) its arcs (arc_dst int64 state, arc_cost float64, arc_order int64 "
              "tie order, arc_id int64 the lattice arc); exit_cost (float64 per state) through the best epsilon "
              "path.  The arrays are copied: changing them afterwards does not change the object.",
    .tp_methods = WordTimes_methods,
    .tp_init = (initproc)WordTimes_init,
    .tp_new = PyType_GenericNew,
};

/* ---- closed_exits -------------------------------------------------------------------------------- */

/* closed_exits(exit_cost, eps_off, eps_dst, eps_cost) -> bytes (float64): each state's exit cost through
 * its best epsilon path, min(exit, eps cost + closed exit of the destination); states topologically
 * numbered (an epsilon arc's destination after its source), epsilon arcs eps_off by source. */
PyObject *closed_exits(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *obj[4];
    if (!PyArg_ParseTuple(args, "OOOO:closed_exits", &obj[0], &obj[1], &obj[2], &obj[3])) return NULL;
    Py_buffer a[4];
    static const char *names[4] = {"exit_cost", "eps_off", "eps_dst", "eps_cost"};
    static const char kinds[5] = "dqqd";
    int held = 0;
    PyObject *out = NULL;
    for (; held < 4; held++)
        if (buffer_get(&a[held], obj[held], "closed_exits", names[held], kinds[held], BUF_FLAT, -1) < 0) goto done;
    Py_ssize_t m = len8(&a[0]);
    if (check_offsets(I(&a[1]), len8(&a[1]), m, len8(&a[2]), "eps_off") ||
        buffer_check_items(&a[3], "closed_exits", "eps_cost", len8(&a[2])))
        goto done;
    const i64 *eps_off = I(&a[1]), *eps_dst = I(&a[2]);
    for (Py_ssize_t s = 0; s < m; s++)
        for (i64 k = eps_off[s]; k < eps_off[s + 1]; k++)
            if (eps_dst[k] <= s || eps_dst[k] >= m) {
                PyErr_Format(PyExc_ValueError, "eps_dst[%lld] = %lld: states must be numbered topologically",
                             (long long)k, (long long)eps_dst[k]);
                goto done;
            }
    out = PyBytes_FromStringAndSize((const char *)a[0].buf, 8 * m);
    if (!out) goto done;
    double *x = (double *)PyBytes_AS_STRING(out);
    const double *eps_cost = D(&a[3]);
    for (Py_ssize_t s = m - 1; s >= 0; s--)
        for (i64 k = eps_off[s]; k < eps_off[s + 1]; k++) {
            double v = eps_cost[k] + x[eps_dst[k]];
            if (v < x[s]) x[s] = v;
        }
done:
    for (int k = 0; k < held; k++) PyBuffer_Release(&a[k]);
    return out;
}

