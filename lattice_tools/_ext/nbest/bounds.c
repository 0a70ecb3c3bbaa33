/* The best-completion bounds of the search, per state over the closed rows in reverse topological order:
 * best_word_bound (admissible and consistent) and suffix_list_bound (tighter; admissible only). */
#include "nbest.h"

/* The closed rows as passed back from Python (Rows, nbest.h), checked. */
static int get_rows(Views *vs, Rows *r, i64 m, PyObject *o_off, PyObject *o_dlab, PyObject *o_dst, PyObject *o_lc,
                    PyObject *o_xlc, i64 num_labels)
{
    Py_ssize_t n;
    r->m = m;
    r->num_labels = num_labels;
    if (m < 0 || num_labels < 0) {
        PyErr_SetString(PyExc_ValueError, "nbest: num_states and num_labels must be >= 0");
        return -1;
    }
    if (!(r->w_off = view(vs, o_off, "w_off", K_I64, m + 1, NULL)))
        return -1;
    if (!(r->w_dlab = view(vs, o_dlab, "w_dlab", K_I64, -1, &n)))
        return -1;
    r->n_rows = n;
    if (!(r->w_dst = view(vs, o_dst, "w_dst", K_I64, n, NULL)) || !(r->w_lc = view(vs, o_lc, "w_lc", K_F64, n, NULL)) ||
        !(r->x_lc = view(vs, o_xlc, "x_lc", K_F64, m, NULL)))
        return -1;
    if (r->w_off[0] != 0 || r->w_off[m] != n) {
        PyErr_SetString(PyExc_ValueError, "nbest: w_off must start at 0 and end at the number of row entries");
        return -1;
    }
    for (i64 s = 0; s < m; s++) {
        if (r->w_off[s + 1] < r->w_off[s]) {
            PyErr_Format(PyExc_ValueError, "nbest: w_off decreases at state %lld", (long long)s);
            return -1;
        }
        for (i64 k = r->w_off[s]; k < r->w_off[s + 1]; k++) {
            if (r->w_dst[k] <= s || r->w_dst[k] >= m || r->w_dlab[k] < 0 || r->w_dlab[k] >= num_labels) {
                PyErr_Format(PyExc_ValueError, "nbest: row entry %lld of state %lld: destination %lld or label %lld "
                             "out of range", (long long)k, (long long)s, (long long)r->w_dst[k],
                             (long long)r->w_dlab[k]);
                return -1;
            }
        }
    }
    return 0;
}

/* h[s] = min(exit(s), min_w logsum_{closed arcs of s with label w} (cost + h[dst])) in reverse topological
 * order (see nbest_lists.best_word_bound). */
PyObject *py_best_word_bound(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels;
    long long max_bytes = -1;
    PyObject *o_off, *o_dlab, *o_dst, *o_lc, *o_xlc;
    if (!PyArg_ParseTuple(args, "nOOOOOn|L", &m, &o_off, &o_dlab, &o_dst, &o_lc, &o_xlc, &num_labels, &max_bytes))
        return NULL;
    budget_begin(max_bytes);
    Views vs = {.n = 0, .fn = "best_word_bound"};
    Rows r;
    PyObject *result = NULL;
    double *h = NULL, *acc = NULL;
    i64 *touched = NULL;
    if (get_rows(&vs, &r, m, o_off, o_dlab, o_dst, o_lc, o_xlc, num_labels) < 0)
        goto done;
    if (!ALLOC(h, m) || !ALLOC(acc, num_labels) || !ALLOC(touched, num_labels))
        goto done;
    memcpy(h, r.x_lc, (size_t)m * sizeof(double));
    for (i64 w = 0; w < num_labels; w++)
        acc[w] = INF;
    for (i64 s = m - 1; s >= 0; s--) {
        i64 nt = 0;
        for (i64 k = r.w_off[s]; k < r.w_off[s + 1]; k++) {
            double v = r.w_lc[k] + h[r.w_dst[k]];
            if (!(v < INF))
                continue;
            i64 w = r.w_dlab[k];
            if (acc[w] == INF) {
                touched[nt++] = w;
                acc[w] = v;
            } else {
                acc[w] = log_add(acc[w], v);
            }
        }
        for (i64 i = 0; i < nt; i++) {
            i64 w = touched[i];
            if (acc[w] < h[s])
                h[s] = acc[w];
            acc[w] = INF;
        }
    }
    result = out_array(h, m, 8);
done:
    views_release(&vs);
    free(h);
    free(acc);
    free(touched);
    budget_begin(-1);
    return result;
}

/* ------------------------------------------------------------------------------------------------ */
/* suffix-list bound                                                                                 */
/* ------------------------------------------------------------------------------------------------ */
static inline i64 pair_slot(const i64 *table, i64 mask, const i64 *c_w, const i64 *c_s, i64 w, i64 sfx, i64 stride)
{
    uint64_t hv = ((uint64_t)w * (uint64_t)stride + (uint64_t)sfx) * 2654435761u;
    i64 i = (i64)((hv >> 7) & (uint64_t)mask);
    while (table[i] >= 0 && (c_w[table[i]] != w || c_s[table[i]] != sfx))
        i = (i + 1) & mask;
    return i;
}

/* Insert (cost, q) into the ascending list top_c/top_q of at most ``cap`` entries (a later entry goes
 * after an equal one); returns the new length. */
static i64 keep_best(double *top_c, i64 *top_q, i64 cap, i64 nk, double cost, i64 q)
{
    if (nk == cap && !(cost < top_c[cap - 1]))
        return nk;
    i64 i = nk < cap ? nk : cap - 1;
    while (i > 0 && cost < top_c[i - 1]) {
        top_c[i] = top_c[i - 1];
        top_q[i] = top_q[i - 1];
        i--;
    }
    top_c[i] = cost;
    top_q[i] = q;
    return nk < cap ? nk + 1 : nk;
}

typedef struct {
    Rows r;
    i64 k, stride, size, c_size, n_suf;
    i64 *l_id, *l_n, *s_table, *s_lab, *s_next, *touched, *c_table, *c_w, *c_s, *c_slot, *top_q;
    double *l_c, *u, *h, *unl, *c_v, *top_c;
    char *seen;
    i64 cap_w, cap_s, cap_v, cap_slot;
} SuffixWork;

/* Candidates (word, suffix at the destination) of state s with their summed bounds relative to ref,
 * and per word the sum of the unlisted bounds (unl).  Returns the number of candidates, -1 on error;
 * *nt: the words touched (touched[:nt]). */
static i64 suffix_candidates(SuffixWork *w, i64 s, double ref, i64 *nt_out)
{
    const i64 *w_off = w->r.w_off, *w_dlab = w->r.w_dlab, *w_dst = w->r.w_dst;
    const double *w_lc = w->r.w_lc;
    i64 lo = w_off[s], hi = w_off[s + 1], k = w->k;
    i64 need = 0;
    for (i64 q = lo; q < hi; q++)
        need += w->l_n[w_dst[q]];
    if (2 * need > w->c_size) { /* at most half full */
        i64 ns = w->c_size;
        while (ns < 2 * need)
            ns *= 2;
        free(w->c_table);
        if (!ALLOC(w->c_table, ns))
            return -1;
        w->c_size = ns;
        for (i64 i = 0; i < ns; i++)
            w->c_table[i] = -1;
    }
    if (GROW(w->c_w, w->cap_w, need) < 0 || GROW(w->c_s, w->cap_s, need) < 0 || GROW(w->c_v, w->cap_v, need) < 0 ||
        GROW(w->c_slot, w->cap_slot, need) < 0)
        return -1;
    i64 nt = 0, nc = 0;
    for (i64 q = lo; q < hi; q++) {
        i64 d = w_dst[q], wd = w_dlab[q];
        double c = w_lc[q];
        if (!w->seen[wd]) {
            w->seen[wd] = 1;
            w->touched[nt++] = wd;
            w->unl[wd] = 0.0;
        }
        double eu = w->u[d] < INF ? exp(ref - c - w->u[d]) : 0.0;
        w->unl[wd] += eu;
        for (i64 i = d * k; i < d * k + w->l_n[d]; i++) { /* a listed suffix: its bound replaces U[d] */
            i64 sl = pair_slot(w->c_table, w->c_size - 1, w->c_w, w->c_s, wd, w->l_id[i], w->stride);
            if (w->c_table[sl] < 0) {
                w->c_table[sl] = nc;
                w->c_w[nc] = wd;
                w->c_s[nc] = w->l_id[i];
                w->c_v[nc] = 0.0;
                w->c_slot[nc] = sl;
                nc++;
            }
            w->c_v[w->c_table[sl]] += exp(ref - c - w->l_c[i]) - eu;
        }
    }
    *nt_out = nt;
    return nc;
}

/* The list, U and h of state s (its successors are done). */
static int suffix_state(SuffixWork *w, i64 s)
{
    const i64 *w_off = w->r.w_off, *w_dst = w->r.w_dst;
    const double *w_lc = w->r.w_lc, *x_lc = w->r.x_lc;
    i64 k = w->k;
    double *h = w->h;
    double ref = x_lc[s]; /* the largest single term: sums are taken relative to it */
    for (i64 q = w_off[s]; q < w_off[s + 1]; q++)
        if (w_lc[q] + h[w_dst[q]] < ref)
            ref = w_lc[q] + h[w_dst[q]];
    if (ref == INF)
        return 0;
    i64 nt;
    i64 nc = suffix_candidates(w, s, ref, &nt);
    if (nc < 0)
        return -1;
    double u_cost = INF;
    for (i64 i = 0; i < nt; i++) {
        i64 wd = w->touched[i];
        w->seen[wd] = 0;
        if (w->unl[wd] > 0.0 && ref - log(w->unl[wd]) < u_cost)
            u_cost = ref - log(w->unl[wd]);
    }
    i64 nk = x_lc[s] < INF ? keep_best(w->top_c, w->top_q, k + 1, 0, x_lc[s], -1) : 0;
    for (i64 q = 0; q < nc; q++) {
        w->c_table[w->c_slot[q]] = -1;
        double tot = w->unl[w->c_w[q]] + w->c_v[q];
        if (tot > 0.0)
            nk = keep_best(w->top_c, w->top_q, k + 1, nk, ref - log(tot), q);
    }
    i64 kept = nk < k ? nk : k;
    for (i64 i = 0; i < kept; i++) {
        i64 q = w->top_q[i], sid = 0;
        if (q >= 0) { /* intern the suffix (word c_w[q], then suffix c_s[q]) */
            i64 sl = pair_slot(w->s_table, w->size - 1, w->s_lab, w->s_next, w->c_w[q], w->c_s[q], w->stride);
            if (w->s_table[sl] >= 0) {
                sid = w->s_table[sl];
            } else {
                w->s_table[sl] = w->n_suf;
                w->s_lab[w->n_suf] = w->c_w[q];
                w->s_next[w->n_suf] = w->c_s[q];
                sid = w->n_suf++;
            }
        }
        w->l_id[s * k + i] = sid;
        w->l_c[s * k + i] = w->top_c[i];
    }
    w->l_n[s] = kept;
    double tk = nk > k ? w->top_c[k] : INF;
    w->u[s] = tk < u_cost ? tk : u_cost; /* (Python's min: the first of equals) */
    double t0 = nk ? w->top_c[0] : INF;
    h[s] = t0 < w->u[s] ? t0 : w->u[s];
    return 0;
}

static int suffix_init(SuffixWork *w, i64 m, i64 num_labels)
{
    i64 k = w->k, mk = m * k;
    w->stride = mk + 2;
    w->size = 1024;
    while (w->size < 4 * (mk + 2))
        w->size *= 2;
    w->c_size = 1024;
    w->n_suf = 1;
    if (!ALLOC(w->l_id, mk + 1) || !ALLOC(w->l_c, mk + 1) || !ALLOC(w->l_n, m) || !ALLOC(w->u, m) ||
        !ALLOC(w->h, m) || !ALLOC(w->s_table, w->size) || !ALLOC(w->s_lab, mk + 2) || !ALLOC(w->s_next, mk + 2) ||
        !ALLOC(w->unl, num_labels) || !ALLOC(w->seen, num_labels) || !ALLOC(w->touched, num_labels) ||
        !ALLOC(w->c_table, w->c_size) || !ALLOC(w->top_c, k + 1) || !ALLOC(w->top_q, k + 1))
        return -1;
    if (GROW(w->c_w, w->cap_w, 512) < 0 || GROW(w->c_s, w->cap_s, 512) < 0 || GROW(w->c_v, w->cap_v, 512) < 0 ||
        GROW(w->c_slot, w->cap_slot, 512) < 0)
        return -1;
    for (i64 i = 0; i <= mk; i++) {
        w->l_id[i] = 0;
        w->l_c[i] = INF;
    }
    for (i64 s = 0; s < m; s++) {
        w->l_n[s] = 0;
        w->u[s] = w->h[s] = INF;
    }
    for (i64 i = 0; i < w->size; i++)
        w->s_table[i] = -1;
    for (i64 i = 0; i < mk + 2; i++)
        w->s_lab[i] = w->s_next[i] = -1;
    for (i64 i = 0; i < w->c_size; i++)
        w->c_table[i] = -1;
    memset(w->seen, 0, (size_t)num_labels);
    for (i64 i = 0; i < num_labels; i++)
        w->unl[i] = 0.0;
    return 0;
}

/* A tighter admissible bound than best_word_bound: per state s a list of k completions (word sequences,
 * interned as suffixes: a word and the id of the suffix after it, 0 = the empty one) with an upper bound
 * e^-L on the probability of each, and an upper bound e^-U[s] on the probability of every completion
 * *not* listed.  A completion w W' of s is bounded by summing, over the closed w arcs a of s, e^-cost(a)
 * times the bound of W' at dst(a) (its listed value there, else U[dst(a)]): the alignments of one
 * continuation are summed *for that continuation*, where the best-next-word bound lets every
 * destination pick its own best one.  s lists its k best candidates; U[s] is the larger of the next
 * candidate and, per word, the sum over its arcs of U[dst].  Returns h with h[s] = -ln max(listed,
 * e^-U[s]) (by induction in reverse topological order an upper bound on every completion of s; k = 0
 * gives best_word_bound).  Not consistent (only admissible): the search does not need it. */
PyObject *py_suffix_list_bound(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels, k;
    long long max_bytes = -1;
    PyObject *o_off, *o_dlab, *o_dst, *o_lc, *o_xlc;
    if (!PyArg_ParseTuple(args, "nOOOOOnn|L", &m, &o_off, &o_dlab, &o_dst, &o_lc, &o_xlc, &num_labels, &k, &max_bytes))
        return NULL;
    budget_begin(max_bytes);
    if (k < 0)
        return PyErr_Format(PyExc_ValueError, "nbest: k must be >= 0, not %zd", k);
    Views vs = {.n = 0, .fn = "suffix_list_bound"};
    PyObject *result = NULL;
    SuffixWork w;
    memset(&w, 0, sizeof(w));
    w.k = k;
    if (get_rows(&vs, &w.r, m, o_off, o_dlab, o_dst, o_lc, o_xlc, num_labels) < 0 || suffix_init(&w, m, num_labels) < 0)
        goto done;
    for (i64 s = m - 1; s >= 0; s--)
        if (suffix_state(&w, s) < 0)
            goto done;
    result = out_array(w.h, m, 8);
done:
    views_release(&vs);
    void *ps[] = {w.l_id, w.l_n, w.s_table, w.s_lab, w.s_next, w.touched, w.c_table, w.c_w, w.c_s, w.c_slot,
                  w.top_q, w.l_c, w.u, w.h, w.unl, w.c_v, w.top_c, w.seen};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        free(ps[i]);
    budget_begin(-1);
    return result;
}
