/* best_paths: the best single path reading each sequence seq_lab[seq_off[i]:seq_off[i + 1]] (dense
 * labels) from state 0: a tropical Viterbi pass over the closed rows, states in increasing order and
 * each row in arc order, the first candidate kept among equal costs.  Returns (cost, arcs): per sequence
 * its best cost (INF: none) and its word arcs (-1 when none). */
#include "nbest.h"

typedef struct {
    IA cur, cur_link, nxt, l_arc, l_parent, new_link;
    FA cur_v, new_v;
    i64 *best_from, *best_k;
    double *best_v;
} PathScratch;

static int best_path_one(PathScratch *ps, const Rows *r, const i64 *w_arc, const double *w_bc, const double *x_bc,
                         const i64 *lab, i64 len, double *cost_out, i64 *arcs_out)
{
    i64 *best_from = ps->best_from, *best_k = ps->best_k;
    double *best_v = ps->best_v;
    if (IGROW(ps->cur, 1) < 0 || FGROW(ps->cur_v, 1) < 0 || IGROW(ps->cur_link, 1) < 0)
        return -1;
    ps->cur.p[0] = 0;
    ps->cur_v.p[0] = 0.0;
    ps->cur_link.p[0] = -1;
    i64 n_cur = 1, n_links = 0;
    for (i64 p = 0; p < len; p++) {
        i64 want = lab[p], n_nxt = 0;
        for (i64 ci = 0; ci < n_cur; ci++) {
            i64 s = ps->cur.p[ci];
            for (i64 k = r->w_off[s]; k < r->w_off[s + 1]; k++) {
                if (r->w_dlab[k] != want)
                    continue;
                i64 d = r->w_dst[k];
                double v = ps->cur_v.p[ci] + w_bc[k];
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
        if (IGROW(ps->l_arc, n_links + n_nxt) < 0 || IGROW(ps->l_parent, n_links + n_nxt) < 0 ||
            FGROW(ps->new_v, n_nxt) < 0 || IGROW(ps->new_link, n_nxt) < 0)
            return -1;
        for (i64 q = 0; q < n_nxt; q++) {
            i64 d = ps->nxt.p[q];
            ps->l_arc.p[n_links + q] = w_arc[best_k[d]];
            ps->l_parent.p[n_links + q] = ps->cur_link.p[best_from[d]];
            ps->new_v.p[q] = best_v[d];
            ps->new_link.p[q] = n_links + q;
            best_v[d] = INF;
            best_from[d] = -1;
            best_k[d] = -1;
        }
        n_links += n_nxt;
        if (IGROW(ps->cur, n_nxt) < 0 || FGROW(ps->cur_v, n_nxt) < 0 || IGROW(ps->cur_link, n_nxt) < 0)
            return -1;
        for (i64 q = 0; q < n_nxt; q++) {
            ps->cur.p[q] = ps->nxt.p[q];
            ps->cur_v.p[q] = ps->new_v.p[q];
            ps->cur_link.p[q] = ps->new_link.p[q];
        }
        n_cur = n_nxt;
        if (n_cur == 0)
            break;
    }
    double bv = INF;
    i64 bl = -2;
    for (i64 ci = 0; ci < n_cur; ci++) {
        double tot = ps->cur_v.p[ci] + x_bc[ps->cur.p[ci]];
        if (tot < bv) {
            bv = tot;
            bl = ps->cur_link.p[ci];
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
    i64 *arcs = NULL;
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
    for (i64 i = 0; i < n_seq; i++) {
        if (best_path_one(&ps, &r, w_arc, w_bc, x_bc, seq_lab + seq_off[i], seq_off[i + 1] - seq_off[i], cost + i,
                          arcs + seq_off[i]) < 0)
            goto done;
    }
    if (budget_take(8 * (n_seq + n_arcs_total)) < 0) /* (the output copies) */
        goto done;
    result = Py_BuildValue("(NN)", out_array(cost, n_seq, 8), out_array(arcs, n_arcs_total, 8));
done:
    views_release(&vs);
    free(cost);
    free(arcs);
    void *pp[] = {ps.cur.p, ps.cur_link.p, ps.nxt.p, ps.l_arc.p, ps.l_parent.p, ps.new_link.p, ps.cur_v.p,
                  ps.new_v.p, ps.best_from, ps.best_k, ps.best_v};
    for (size_t i = 0; i < sizeof(pp) / sizeof(pp[0]); i++)
        free(pp[i]);
    budget_begin(-1);
    return result;
}
