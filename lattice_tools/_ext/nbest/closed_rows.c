/* closed_rows: every state's word arcs reachable through epsilon paths (its closed row), with the log
 * sum and the minimum of the path costs, and its closed exit cost. */
#include "nbest.h"

typedef struct {
    i64 arc;
    double lc, bc;
} RowEntry;

typedef struct {
    i64 m, n_arcs;
    const i64 *dst, *lab;
    const double *cost;
    i64 *off, *row_lo, *row_len, *r_arc, *slot;
    double *r_lc, *r_bc, *x_lc, *x_bc;
    RowEntry *t, *t2;
    i64 r_cap, r_cap2, r_cap3, t_cap, t2_cap, used;
} RowsWork;

static int row_entry(RowsWork *w, i64 *nt, i64 arc, double lc, double bc)
{
    if (GROW(w->t, w->t_cap, *nt + 1) < 0)
        return -1;
    w->slot[arc] = *nt;
    w->t[*nt].arc = arc;
    w->t[*nt].lc = lc;
    w->t[*nt].bc = bc;
    *nt += 1;
    return 0;
}

/* Sort the row being built (w->t[:nt]) by arc id (ids are distinct): a bottom-up merge sort with the
 * comparison inline (qsort's callback cost as much as the rest of the closed rows). */
static int sort_row(RowsWork *w, i64 nt)
{
    if (GROW(w->t2, w->t2_cap, nt) < 0)
        return -1;
    RowEntry *a = w->t, *b = w->t2;
    for (i64 width = 1; width < nt; width *= 2) {
        for (i64 lo = 0; lo < nt; lo += 2 * width) {
            i64 mid = lo + width < nt ? lo + width : nt, hi = lo + 2 * width < nt ? lo + 2 * width : nt;
            i64 i = lo, j = mid, o = lo;
            while (i < mid && j < hi)
                b[o++] = a[j].arc < a[i].arc ? a[j++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (j < hi)
                b[o++] = a[j++];
        }
        RowEntry *t = a;
        a = b;
        b = t;
    }
    if (a != w->t)
        memcpy(w->t, a, (size_t)nt * sizeof(RowEntry));
    return 0;
}

/* The closed row of state s (those of its epsilon successors are done): its own word arcs, then each
 * epsilon successor's row (its arc's cost added); a word arc met again is reduced into its first entry. */
static int close_state(RowsWork *w, i64 s)
{
    const i64 *off = w->off, *lab = w->lab, *dst = w->dst;
    const double *cost = w->cost;
    i64 nt = 0;
    for (i64 a = off[s]; a < off[s + 1]; a++)
        if (lab[a] != 0 && row_entry(w, &nt, a, cost[a], cost[a]) < 0)
            return -1;
    for (i64 a = off[s]; a < off[s + 1]; a++) {
        if (lab[a] != 0)
            continue;
        i64 d = dst[a];
        double c = cost[a];
        double xl = c + w->x_lc[d];
        if (xl < INF)
            w->x_lc[s] = log_add(w->x_lc[s], xl);
        double xb = c + w->x_bc[d];
        if (xb < w->x_bc[s])
            w->x_bc[s] = xb;
        i64 lo = w->row_lo[d];
        for (i64 k = lo; k < lo + w->row_len[d]; k++) {
            i64 arc = w->r_arc[k], j = w->slot[arc];
            double vl = w->r_lc[k] + c, vb = w->r_bc[k] + c;
            if (j < 0) {
                if (row_entry(w, &nt, arc, vl, vb) < 0)
                    return -1;
            } else {
                w->t[j].lc = log_add(w->t[j].lc, vl);
                if (vb < w->t[j].bc)
                    w->t[j].bc = vb;
            }
        }
    }
    if (nt > 1 && sort_row(w, nt) < 0)
        return -1;
    i64 used = w->used;
    if (GROW(w->r_arc, w->r_cap, used + nt) < 0 || GROW(w->r_lc, w->r_cap2, used + nt) < 0 ||
        GROW(w->r_bc, w->r_cap3, used + nt) < 0)
        return -1;
    for (i64 k = 0; k < nt; k++) {
        w->r_arc[used + k] = w->t[k].arc;
        w->r_lc[used + k] = w->t[k].lc;
        w->r_bc[used + k] = w->t[k].bc;
        w->slot[w->t[k].arc] = -1;
    }
    w->row_lo[s] = used;
    w->row_len[s] = nt;
    w->used = used + nt;
    return 0;
}

/* The rows in state order, as the tuple closed_rows returns. */
static PyObject *rows_result(RowsWork *w)
{
    i64 m = w->m, used = w->used;
    i64 *w_off = NULL, *w_arc = NULL;
    double *w_lc = NULL, *w_bc = NULL;
    PyObject *result = NULL;
    if (ALLOC(w_off, m + 1) && ALLOC(w_arc, used) && ALLOC(w_lc, used) && ALLOC(w_bc, used) &&
        budget_take(8 * (3 * m + 1 + 3 * used)) == 0) { /* (the output copies) */
        w_off[0] = 0;
        for (i64 s = 0; s < m; s++) {
            w_off[s + 1] = w_off[s] + w->row_len[s];
            memcpy(w_arc + w_off[s], w->r_arc + w->row_lo[s], (size_t)w->row_len[s] * sizeof(i64));
            memcpy(w_lc + w_off[s], w->r_lc + w->row_lo[s], (size_t)w->row_len[s] * sizeof(double));
            memcpy(w_bc + w_off[s], w->r_bc + w->row_lo[s], (size_t)w->row_len[s] * sizeof(double));
        }
        result = Py_BuildValue("(NNNNNN)", out_array(w_off, m + 1, 8), out_array(w_arc, used, 8),
                               out_array(w_lc, used, 8), out_array(w_bc, used, 8), out_array(w->x_lc, m, 8),
                               out_array(w->x_bc, m, 8));
    }
    free(w_off);
    free(w_arc);
    free(w_lc);
    free(w_bc);
    return result;
}

/* Per state s its closed row: the word arcs reachable from s through epsilon paths (epsilon: lab == 0),
 * sorted by arc id, each with the log sum (w_lc) and the minimum (w_bc) of "epsilon path + arc" costs;
 * and the closed exit costs x_lc / x_bc (final reached through epsilon paths).  Returns (w_off, w_arc,
 * w_lc, w_bc, x_lc, x_bc). */
PyObject *py_closed_rows(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, n_arcs;
    long long max_bytes = -1;
    PyObject *os, *od, *ol, *oc, *of;
    if (!PyArg_ParseTuple(args, "nOOOOO|L", &m, &os, &od, &ol, &oc, &of, &max_bytes))
        return NULL;
    budget_begin(max_bytes);
    if (m < 0)
        return PyErr_Format(PyExc_ValueError, "nbest: num_states must be >= 0, not %zd", m);
    Views vs = {.n = 0, .fn = "closed_rows"};
    PyObject *result = NULL;
    RowsWork w;
    memset(&w, 0, sizeof(w));
    const i64 *src = view(&vs, os, "src", K_I64, -1, &n_arcs);
    w.dst = src ? view(&vs, od, "dst", K_I64, n_arcs, NULL) : NULL;
    w.lab = w.dst ? view(&vs, ol, "lab", K_I64, n_arcs, NULL) : NULL;
    w.cost = w.lab ? view(&vs, oc, "cost", K_F64, n_arcs, NULL) : NULL;
    const double *final = w.cost ? view(&vs, of, "final", K_F64, m, NULL) : NULL;
    if (!final || check_arcs(m, src, w.dst, n_arcs) < 0)
        goto done;
    w.m = m;
    w.n_arcs = n_arcs;
    if (!ALLOC(w.off, m + 1) || !ALLOC(w.row_lo, m) || !ALLOC(w.row_len, m) || !ALLOC(w.x_lc, m) ||
        !ALLOC(w.x_bc, m) || !ALLOC(w.slot, n_arcs))
        goto done;
    for (i64 s = 0, a = 0; s <= m; s++) {
        while (a < n_arcs && src[a] < s)
            a++;
        w.off[s] = a;
    }
    memcpy(w.x_lc, final, (size_t)m * sizeof(double));
    memcpy(w.x_bc, final, (size_t)m * sizeof(double));
    for (i64 a = 0; a < n_arcs; a++)
        w.slot[a] = -1;
    i64 cap0 = 2 * n_arcs > 16 ? 2 * n_arcs : 16;
    if (GROW(w.r_arc, w.r_cap, cap0) < 0 || GROW(w.r_lc, w.r_cap2, cap0) < 0 || GROW(w.r_bc, w.r_cap3, cap0) < 0)
        goto done;
    for (i64 s = m - 1; s >= 0; s--)
        if (close_state(&w, s) < 0)
            goto done;
    result = rows_result(&w);
done:
    views_release(&vs);
    void *ps[] = {w.off, w.row_lo, w.row_len, w.r_arc, w.slot, w.r_lc, w.r_bc, w.x_lc, w.x_bc, w.t, w.t2};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        free(ps[i]);
    budget_begin(-1);
    return result;
}
