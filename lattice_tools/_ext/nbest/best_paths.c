/* best_paths: the best single path reading each sequence seq_lab[seq_off[i]:seq_off[i + 1]] (dense
 * labels) from state 0: a tropical Viterbi pass over the closed rows, states in increasing order and
 * each row in arc order, the first candidate kept among equal costs.  Returns (cost, arcs): per sequence
 * its best cost (INF: none) and its word arcs (-1 when none).  The sequences are taken in lexicographic
 * order and each reuses the Viterbi levels of the prefix it shares with the one before (the same bits:
 * a level depends on the prefix only); on the bench's 31.5 s lattice, the 100 best (93 words each) take
 * 0.065 s instead of 0.135 s. */
#include "nbest.h"

typedef struct {
    /* the levels of the current prefix: level p (after p words) is the active states lv_state/lv_v/lv_link
     * [lv_off[p]:lv_off[p] + lv_n[p]] (ascending states), its links ending at lv_links[p] */
    IA lv_state, lv_link, lv_off, lv_n, lv_links, l_arc, l_parent, nxt;
    FA lv_v;
    i64 *best_from, *best_k;
    double *best_v;
} PathScratch;

/* Build level p + 1 from level p by reading dense label ``want`` (the loops of one Viterbi step: the
 * level's states in order, each row in arc order, the first candidate kept among equal costs). */
static int next_level(PathScratch *ps, const Rows *r, const i64 *w_arc, const double *w_bc, i64 p, i64 want)
{
    i64 *best_from = ps->best_from, *best_k = ps->best_k;
    double *best_v = ps->best_v;
    i64 off = ps->lv_off.p[p], n_cur = ps->lv_n.p[p], n_links = ps->lv_links.p[p], n_nxt = 0;
    for (i64 ci = 0; ci < n_cur; ci++) {
        i64 s = ps->lv_state.p[off + ci];
        for (i64 k = r->w_off[s]; k < r->w_off[s + 1]; k++) {
            if (r->w_dlab[k] != want)
                continue;
            i64 d = r->w_dst[k];
            double v = ps->lv_v.p[off + ci] + w_bc[k];
            if (best_from[d] < 0) {
                if (IGROW(ps->nxt, n_nxt + 1) < 0)
                    return -1;
                ps->nxt.p[n_nxt++] = d;
                best_v[d] = v;
                best_from[d] = ci;
                best_k[d] = k;
            } else if (v < best_v[d]) {
                best_v[d] = v;
                best_from[d] = ci;
                best_k[d] = k;
            }
        }
    }
    if (n_nxt > 1)
        qsort(ps->nxt.p, (size_t)n_nxt, sizeof(i64), cmp_i64);
    i64 noff = off + n_cur;
    if (IGROW(ps->l_arc, n_links + n_nxt) < 0 || IGROW(ps->l_parent, n_links + n_nxt) < 0 ||
        IGROW(ps->lv_state, noff + n_nxt) < 0 || FGROW(ps->lv_v, noff + n_nxt) < 0 ||
        IGROW(ps->lv_link, noff + n_nxt) < 0 || IGROW(ps->lv_off, p + 2) < 0 || IGROW(ps->lv_n, p + 2) < 0 ||
        IGROW(ps->lv_links, p + 2) < 0)
        return -1;
    for (i64 q = 0; q < n_nxt; q++) {
        i64 d = ps->nxt.p[q];
        ps->l_arc.p[n_links + q] = w_arc[best_k[d]];
        ps->l_parent.p[n_links + q] = ps->lv_link.p[off + best_from[d]];
        ps->lv_state.p[noff + q] = d;
        ps->lv_v.p[noff + q] = best_v[d];
        ps->lv_link.p[noff + q] = n_links + q;
        best_v[d] = INF;
        best_from[d] = -1;
        best_k[d] = -1;
    }
    ps->lv_off.p[p + 1] = noff;
    ps->lv_n.p[p + 1] = n_nxt;
    ps->lv_links.p[p + 1] = n_links + n_nxt;
    return 0;
}

/* The best path of the sequence lab[:len] whose first ``shared`` levels are built already (the prefix it
 * shares with the sequence before it; level 0 always is): builds the others, then takes the best exit of
 * the last level.  Each level depends only on the prefix, so sharing changes no bit of the result. */
static int best_path_one(PathScratch *ps, const Rows *r, const i64 *w_arc, const double *w_bc, const double *x_bc,
                         const i64 *lab, i64 len, i64 shared, double *cost_out, i64 *arcs_out)
{
    for (i64 p = shared; p < len; p++) {
        if (ps->lv_n.p[p] == 0) { /* no path reads the prefix: no level past it (it stays empty) */
            if (IGROW(ps->lv_off, p + 2) < 0 || IGROW(ps->lv_n, p + 2) < 0 || IGROW(ps->lv_links, p + 2) < 0)
                return -1;
            ps->lv_off.p[p + 1] = ps->lv_off.p[p];
            ps->lv_n.p[p + 1] = 0;
            ps->lv_links.p[p + 1] = ps->lv_links.p[p];
            continue;
        }
        if (next_level(ps, r, w_arc, w_bc, p, lab[p]) < 0)
            return -1;
    }
    i64 off = ps->lv_off.p[len], n_cur = ps->lv_n.p[len];
    double bv = INF;
    i64 bl = -2;
    for (i64 ci = 0; ci < n_cur; ci++) {
        double tot = ps->lv_v.p[off + ci] + x_bc[ps->lv_state.p[off + ci]];
        if (tot < bv) {
            bv = tot;
            bl = ps->lv_link.p[off + ci];
        }
    }
    if (bl == -2)
        return 0;
    *cost_out = bv;
    i64 q = len - 1;
    while (bl >= 0 && q >= 0) {
        arcs_out[q--] = ps->l_arc.p[bl];
        bl = ps->l_parent.p[bl];
    }
    return 0;
}

/* Sequences in lexicographic order (a prefix first; ties in index order): a stable merge sort of their
 * indices, so that each shares the longest prefix possible with the one before it. */
static int seq_less(const i64 *off, const i64 *lab, i64 a, i64 b)
{
    i64 la = off[a + 1] - off[a], lb = off[b + 1] - off[b], n = la < lb ? la : lb;
    for (i64 q = 0; q < n; q++)
        if (lab[off[a] + q] != lab[off[b] + q])
            return lab[off[a] + q] < lab[off[b] + q];
    return la < lb;
}

static int sort_sequences(const i64 *off, const i64 *lab, i64 n, i64 *order)
{
    i64 *tmp;
    if (!ALLOC(tmp, n > 0 ? n : 1))
        return -1;
    for (i64 i = 0; i < n; i++)
        order[i] = i;
    i64 *x = order, *y = tmp;
    for (i64 width = 1; width < n; width *= 2) {
        for (i64 lo = 0; lo < n; lo += 2 * width) {
            i64 mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            i64 i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                y[o++] = seq_less(off, lab, x[j], x[i]) ? x[j++] : x[i++];
            while (i < mid)
                y[o++] = x[i++];
            while (j < hi)
                y[o++] = x[j++];
        }
        i64 *t = x;
        x = y;
        y = t;
    }
    if (x != order)
        memcpy(order, x, (size_t)n * sizeof(i64));
    free(tmp);
    return 0;
}

PyObject *py_best_paths(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, n_rows, n_off, n_lab, n_arcs_total;
    long long max_bytes = -1;
    PyObject *o_off, *o_dlab, *o_dst, *o_bc, *o_arc, *o_xbc, *o_soff, *o_slab;
    if (!PyArg_ParseTuple(args, "OOOOOOOOn|L", &o_off, &o_dlab, &o_dst, &o_bc, &o_arc, &o_xbc, &o_soff, &o_slab, &m,
                          &max_bytes))
        return NULL;
    budget_begin(max_bytes);
    Views vs = {.n = 0, .fn = "best_paths"};
    PathScratch ps;
    memset(&ps, 0, sizeof(ps));
    PyObject *result = NULL;
    double *cost = NULL;
    i64 *arcs = NULL, *order = NULL;
    Rows r;
    r.m = m;
    if (m <= 0) {
        PyErr_SetString(PyExc_ValueError, "nbest: the lattice has no states");
        return NULL;
    }
    if (!(r.w_off = view(&vs, o_off, "w_off", K_I64, m + 1, NULL)) ||
        !(r.w_dlab = view(&vs, o_dlab, "w_dlab", K_I64, -1, &n_rows)) ||
        !(r.w_dst = view(&vs, o_dst, "w_dst", K_I64, n_rows, NULL)))
        goto done;
    const double *w_bc = view(&vs, o_bc, "w_bc", K_F64, n_rows, NULL);
    const i64 *w_arc = w_bc ? view(&vs, o_arc, "w_arc", K_I64, n_rows, NULL) : NULL;
    const double *x_bc = w_arc ? view(&vs, o_xbc, "x_bc", K_F64, m, NULL) : NULL;
    const i64 *seq_off = x_bc ? view(&vs, o_soff, "seq_off", K_I64, -1, &n_off) : NULL;
    const i64 *seq_lab = seq_off ? view(&vs, o_slab, "seq_lab", K_I64, -1, &n_lab) : NULL;
    if (!seq_lab)
        goto done;
    if (n_off < 1 || seq_off[0] != 0 || seq_off[n_off - 1] != n_lab) {
        PyErr_SetString(PyExc_ValueError, "nbest: seq_off must start at 0 and end at len(seq_lab)");
        goto done;
    }
    for (i64 i = 0; i + 1 < n_off; i++)
        if (seq_off[i + 1] < seq_off[i]) {
            PyErr_SetString(PyExc_ValueError, "nbest: seq_off decreases");
            goto done;
        }
    if (r.w_off[0] != 0 || r.w_off[m] != n_rows) {
        PyErr_SetString(PyExc_ValueError, "nbest: w_off must start at 0 and end at the number of row entries");
        goto done;
    }
    for (i64 s = 0; s < m; s++)
        for (i64 k = r.w_off[s]; k < r.w_off[s + 1]; k++)
            if (k < 0 || k >= n_rows || r.w_dst[k] <= s || r.w_dst[k] >= m) {
                PyErr_Format(PyExc_ValueError, "nbest: row entry %lld of state %lld out of range", (long long)k,
                             (long long)s);
                goto done;
            }
    n_arcs_total = n_lab;
    i64 n_seq = n_off - 1;
    if (!ALLOC(cost, n_seq) || !ALLOC(arcs, n_arcs_total) || !ALLOC(ps.best_from, m) || !ALLOC(ps.best_k, m) ||
        !ALLOC(ps.best_v, m))
        goto done;
    for (i64 i = 0; i < n_seq; i++)
        cost[i] = INF;
    for (i64 i = 0; i < n_arcs_total; i++)
        arcs[i] = -1;
    for (i64 s = 0; s < m; s++) {
        ps.best_from[s] = ps.best_k[s] = -1;
        ps.best_v[s] = INF;
    }
    if (!ALLOC(order, n_seq > 0 ? n_seq : 1) || sort_sequences(seq_off, seq_lab, n_seq, order) < 0 ||
        IGROW(ps.lv_state, 1) < 0 || FGROW(ps.lv_v, 1) < 0 || IGROW(ps.lv_link, 1) < 0 || IGROW(ps.lv_off, 1) < 0 ||
        IGROW(ps.lv_n, 1) < 0 || IGROW(ps.lv_links, 1) < 0)
        goto done;
    ps.lv_state.p[0] = 0; /* level 0: the start state */
    ps.lv_v.p[0] = 0.0;
    ps.lv_link.p[0] = -1;
    ps.lv_off.p[0] = 0;
    ps.lv_n.p[0] = 1;
    ps.lv_links.p[0] = 0;
    i64 prev = -1;
    for (i64 k = 0; k < n_seq; k++) {
        i64 i = order[k], len = seq_off[i + 1] - seq_off[i], shared = 0;
        if (prev >= 0) { /* the levels of the common prefix with the sequence before are still there */
            i64 lp = seq_off[prev + 1] - seq_off[prev];
            while (shared < len && shared < lp && seq_lab[seq_off[i] + shared] == seq_lab[seq_off[prev] + shared])
                shared++;
        }
        if (best_path_one(&ps, &r, w_arc, w_bc, x_bc, seq_lab + seq_off[i], len, shared, cost + i, arcs + seq_off[i]) <
            0)
            goto done;
        prev = i;
    }
    if (budget_take(8 * (n_seq + n_arcs_total)) < 0) /* (the output copies) */
        goto done;
    result = Py_BuildValue("(NN)", out_array(cost, n_seq, 8), out_array(arcs, n_arcs_total, 8));
done:
    views_release(&vs);
    free(cost);
    free(arcs);
    free(order);
    void *pp[] = {ps.lv_state.p, ps.lv_link.p, ps.lv_off.p, ps.lv_n.p, ps.lv_links.p, ps.l_arc.p, ps.l_parent.p,
                  ps.nxt.p, ps.lv_v.p, ps.best_from, ps.best_k, ps.best_v};
    for (size_t i = 0; i < sizeof(pp) / sizeof(pp[0]); i++)
        free(pp[i]);
    budget_begin(-1);
    return result;
}
