/* Compiled loops of the exact N-best search (lattice_tools.alternatives.nbest_lists).
 *
 * closed_rows        every state's word arcs reachable through epsilon paths, with the log sum and the
 *                    minimum of the path costs, and its closed exit cost
 * best_word_bound    the admissible, consistent best-completion bound per state
 * suffix_list_bound  the tighter (admissible, not consistent) suffix-list bound per state
 * bounded_search     A* over log-determinized states builds the region that can hold the n best
 *                    sequences; exact best completions inside it; best-first search over word prefixes
 * best_paths         the best single path reading each output sequence (for word times)
 *
 * The algorithms are described in nbest_lists.py.  Every log sum is m - log(sum(exp(m - x))) around
 * the segment's minimum m, summed in a fixed order, so results are deterministic.  The operations are
 * those of the numba kernels this file replaced (tests/_reference/nbest_*.py keeps them as a
 * plain-Python oracle; the same bits), except one: an expansion of the region search propagates the
 * determinized state's members through the epsilon arcs and gathers each word arc once, where the
 * numba code gathered every member's closed row (the same arc once per member that reaches it, ~4x
 * the work on long dense lattices): the same terms summed in another order, so the same lists with
 * costs equal to ~1e-15 relative.
 *
 * Arrays cross as buffers (int64 'l'/'q', float64 'd', bool '?'), checked on entry; results are
 * returned as bytearrays (numpy.frombuffer views them).  Long loops poll PyErr_CheckSignals.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

#define INF HUGE_VAL
#define SIGNAL_EVERY 65536

enum { ST_OK = 0, ST_TOO_MANY_POPS = 1, ST_TOO_MANY_STATES = 2, ST_TOO_MANY_MEMBERS = 3 };

/* ------------------------------------------------------------------------------------------------ */
/* buffers in, bytearrays out                                                                        */
/* ------------------------------------------------------------------------------------------------ */
enum { K_I64, K_F64, K_BOOL };

#define MAX_VIEWS 16
typedef struct {
    Py_buffer v[MAX_VIEWS];
    int n;
} Views;

static void views_release(Views *vs)
{
    for (int i = 0; i < vs->n; i++)
        PyBuffer_Release(&vs->v[i]);
    vs->n = 0;
}

/* The data of ``obj`` as a C-contiguous array of ``kind`` with ``len`` entries (-1: any; the count is
 * stored in *out_len).  NULL with TypeError/ValueError naming the argument otherwise. */
static void *view(Views *vs, PyObject *obj, const char *name, int kind, Py_ssize_t len, Py_ssize_t *out_len)
{
    if (vs->n >= MAX_VIEWS) {
        PyErr_SetString(PyExc_RuntimeError, "nbest: too many buffers");
        return NULL;
    }
    Py_buffer *b = &vs->v[vs->n];
    if (PyObject_GetBuffer(obj, b, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "nbest: argument %s must be a contiguous array, not %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return NULL;
    }
    vs->n++;
    const char *f = b->format ? b->format : "B";
    if (*f == '@' || *f == '=' || (PY_LITTLE_ENDIAN && *f == '<'))
        f++;
    int ok;
    const char *want;
    if (kind == K_I64) {
        ok = b->itemsize == 8 && (f[0] == 'l' || f[0] == 'q') && !f[1];
        want = "an int64";
    } else if (kind == K_F64) {
        ok = b->itemsize == 8 && f[0] == 'd' && !f[1];
        want = "a float64";
    } else {
        ok = b->itemsize == 1 && f[0] == '?' && !f[1];
        want = "a bool";
    }
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "nbest: argument %s must be %s array (buffer format '%s', item size %zd)",
                     name, want, b->format ? b->format : "B", b->itemsize);
        return NULL;
    }
    Py_ssize_t n = b->len / b->itemsize;
    if (len >= 0 && n != len) {
        PyErr_Format(PyExc_ValueError, "nbest: argument %s has %zd entries, expected %zd", name, n, len);
        return NULL;
    }
    if (out_len)
        *out_len = n;
    return b->buf;
}

static PyObject *out_array(const void *p, i64 count, size_t itemsize)
{
    return PyByteArray_FromStringAndSize(count ? (const char *)p : NULL, (Py_ssize_t)(count * (i64)itemsize));
}

/* ------------------------------------------------------------------------------------------------ */
/* growable arrays                                                                                   */
/* ------------------------------------------------------------------------------------------------ */
/* Room for ``need`` entries of ``size`` bytes in *p (capacity *cap, at least doubled); new entries
 * are zero when ``zero``.  -1 with MemoryError. */
static int grow_(void **p, i64 *cap, i64 need, size_t size, int zero)
{
    if (need <= *cap)
        return 0;
    i64 c = 2 * *cap;
    if (c < need)
        c = need;
    if (c < 16)
        c = 16;
    void *q = realloc(*p, (size_t)c * size);
    if (!q) {
        PyErr_NoMemory();
        return -1;
    }
    if (zero)
        memset((char *)q + (size_t)*cap * size, 0, (size_t)(c - *cap) * size);
    *p = q;
    *cap = c;
    return 0;
}
#define GROW(p, cap, need) grow_((void **)&(p), &(cap), (need), sizeof(*(p)), 0)
#define GROWZ(p, cap, need) grow_((void **)&(p), &(cap), (need), sizeof(*(p)), 1)

static void *alloc_(size_t count, size_t size)
{
    void *p = malloc(count ? count * size : 1);
    if (!p)
        PyErr_NoMemory();
    return p;
}
#define ALLOC(p, count) ((p) = alloc_((size_t)(count), sizeof(*(p))))

/* ------------------------------------------------------------------------------------------------ */
/* log sums                                                                                          */
/* ------------------------------------------------------------------------------------------------ */
static inline double log_add(double a, double b)
{
    if (a > b) {
        double t = a;
        a = b;
        b = t;
    }
    if (b == INF)
        return a;
    return a - log1p(exp(a - b));
}

/* ------------------------------------------------------------------------------------------------ */
/* closed rows                                                                                       */
/* ------------------------------------------------------------------------------------------------ */
typedef struct {
    i64 arc;
    double lc, bc;
} RowEntry;

/* Arcs numbered topologically with sorted sources: ValueError otherwise (the loops index by them). */
static int check_arcs(i64 m, const i64 *src, const i64 *dst, i64 n_arcs)
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
    if (ALLOC(w_off, m + 1) && ALLOC(w_arc, used) && ALLOC(w_lc, used) && ALLOC(w_bc, used)) {
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
static PyObject *py_closed_rows(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, n_arcs;
    PyObject *os, *od, *ol, *oc, *of;
    if (!PyArg_ParseTuple(args, "nOOOOO", &m, &os, &od, &ol, &oc, &of))
        return NULL;
    if (m < 0)
        return PyErr_Format(PyExc_ValueError, "nbest: num_states must be >= 0, not %zd", m);
    Views vs = {.n = 0};
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
    return result;
}

/* The closed rows as passed back from Python: w_off (m + 1), and per entry dense label, destination,
 * log-sum cost; x_lc (m).  Checked: offsets non-decreasing within the entries, destinations and
 * labels in range. */
typedef struct {
    i64 m, n_rows, num_labels;
    const i64 *w_off, *w_dlab, *w_dst;
    const double *w_lc, *x_lc;
} Rows;

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
static PyObject *py_best_word_bound(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels;
    PyObject *o_off, *o_dlab, *o_dst, *o_lc, *o_xlc;
    if (!PyArg_ParseTuple(args, "nOOOOOn", &m, &o_off, &o_dlab, &o_dst, &o_lc, &o_xlc, &num_labels))
        return NULL;
    Views vs = {.n = 0};
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
static PyObject *py_suffix_list_bound(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels, k;
    PyObject *o_off, *o_dlab, *o_dst, *o_lc, *o_xlc;
    if (!PyArg_ParseTuple(args, "nOOOOOnn", &m, &o_off, &o_dlab, &o_dst, &o_lc, &o_xlc, &num_labels, &k))
        return NULL;
    if (k < 0)
        return PyErr_Format(PyExc_ValueError, "nbest: k must be >= 0, not %zd", k);
    Views vs = {.n = 0};
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
    return result;
}

/* ------------------------------------------------------------------------------------------------ */
/* the region search                                                                                 */
/* ------------------------------------------------------------------------------------------------ */
typedef struct {
    i64 *p;
    i64 cap;
} IA;
typedef struct {
    double *p;
    i64 cap;
} FA;
typedef struct {
    char *p;
    i64 cap;
} BA;
#define IGROW(a, need) grow_((void **)&(a).p, &(a).cap, (need), sizeof(i64), 0)
#define FGROW(a, need) grow_((void **)&(a).p, &(a).cap, (need), sizeof(double), 0)
#define BGROWZ(a, need) grow_((void **)&(a).p, &(a).cap, (need), 1, 1)
#define IGROWZ(a, need) grow_((void **)&(a).p, &(a).cap, (need), sizeof(i64), 1)

/* A binary heap of entry ids ordered by (key[e], e): an older entry goes first among equal keys. */
static int heap_push(IA *heap, i64 *size, const double *key, i64 e)
{
    if (IGROW(*heap, *size + 1) < 0)
        return -1;
    i64 *hp = heap->p;
    i64 i = *size;
    double ke = key[e];
    while (i > 0) {
        i64 p = (i - 1) >> 1, q = hp[p];
        if (key[q] < ke || (key[q] == ke && q < e))
            break;
        hp[i] = q;
        i = p;
    }
    hp[i] = e;
    *size += 1;
    return 0;
}

static i64 heap_pop(i64 *hp, i64 *size, const double *key)
{
    i64 top = hp[0];
    *size -= 1;
    i64 n = *size;
    if (n == 0)
        return top;
    i64 e = hp[n];
    double ke = key[e];
    i64 i = 0;
    for (;;) {
        i64 c = 2 * i + 1;
        if (c >= n)
            break;
        i64 q = hp[c];
        if (c + 1 < n) {
            i64 r = hp[c + 1];
            if (key[r] < key[q] || (key[r] == key[q] && r < q)) {
                c = c + 1;
                q = r;
            }
        }
        if (ke < key[q] || (ke == key[q] && e < q))
            break;
        hp[i] = q;
        i = c;
    }
    hp[i] = e;
    return top;
}

#define MASK61 ((((uint64_t)1) << 61) - 1)

static inline uint64_t subset_hash(const i64 *states, const i64 *rkeys, i64 lo, i64 hi)
{
    uint64_t h = 1469598103934665603ull & MASK61;
    for (i64 k = lo; k < hi; k++) {
        h = (h * 1000003u + (uint64_t)states[k]) & MASK61;
        h = (h * 1000003u + (uint64_t)rkeys[k]) & MASK61;
    }
    return h;
}

/* Determinized states and their choices.  Members of state j: state[off[j]:off[j + 1]] (ascending)
 * with residual costs resid and their keys rkey (rounded to the resolution); table: open addressing
 * on a hash of (states, keys), -1 = empty.  Choices of an expanded state j: ch_lo[j] .. ch_lo[j] +
 * ch_n[j] (ch_n = -1: not expanded), the end first (label -1), then in label order: the bound of all
 * completions through it, dense label, cost of the transition (of ending, for the end), successor. */
typedef struct {
    i64 nds, n_ch, table_size;
    IA off, state, rkey, table, ch_lo, ch_n, ch_lab, ch_next;
    FA resid, ch_bound, ch_cost;
} Store;

/* Expansion buffers: gathered entries (label, destination, cost), their label buckets, pairs and
 * label groups, and the label/destination tables of reduce_pairs. */
typedef struct {
    IA e_lab, e_dst, b_dst, p_dst, g_lab, g_lo, g_hi;
    FA e_v, b_v, p_val, p_tmp, g_sum, g_bound;
    i64 *lab_cnt, *lab_fill, *dslot;
    /* the epsilon closure of an expansion: its states, their marks (expansion number), log sums */
    IA cl;
    i64 *e_mark, expand_no;
    double *alpha;
} Scratch;

/* Reduce the gathered entries (label, destination, cost) by log sum per pair, pairs grouped by label in
 * increasing order and by destination inside a label (a counting sort by label, a slot table by
 * destination).  Each pair sums its entries in gather order.  Returns the number of pairs; *ng the
 * number of label groups (pairs g_lo[g]:g_hi[g]). */
static int cmp_i64(const void *a, const void *b)
{
    i64 x = *(const i64 *)a, y = *(const i64 *)b;
    return (x > y) - (x < y);
}

static i64 reduce_pairs(Scratch *sc, i64 ne, i64 *ng_out)
{
    const i64 *e_lab = sc->e_lab.p, *e_dst = sc->e_dst.p;
    const double *e_v = sc->e_v.p;
    i64 *lab_cnt = sc->lab_cnt, *lab_fill = sc->lab_fill, *dslot = sc->dslot;
    i64 *b_dst = sc->b_dst.p, *p_dst = sc->p_dst.p, *g_lab = sc->g_lab.p, *g_lo = sc->g_lo.p, *g_hi = sc->g_hi.p;
    double *b_v = sc->b_v.p, *p_val = sc->p_val.p, *p_min = sc->p_tmp.p;
    i64 ng = 0;
    for (i64 i = 0; i < ne; i++) {
        i64 w = e_lab[i];
        if (lab_cnt[w] == 0)
            g_lab[ng++] = w;
        lab_cnt[w]++;
    }
    if (ng > 1)
        qsort(g_lab, (size_t)ng, sizeof(i64), cmp_i64);
    i64 pos = 0;
    for (i64 gi = 0; gi < ng; gi++) {
        i64 w = g_lab[gi];
        lab_fill[w] = pos;
        g_lo[gi] = pos; /* entry range for now */
        pos += lab_cnt[w];
        lab_cnt[w] = 0;
    }
    for (i64 i = 0; i < ne; i++) { /* stable scatter: a label's entries in gather order */
        i64 w = e_lab[i], k = lab_fill[w];
        b_dst[k] = e_dst[i];
        b_v[k] = e_v[i];
        lab_fill[w] = k + 1;
    }
    i64 np_ = 0;
    for (i64 gi = 0; gi < ng; gi++) {
        i64 w = g_lab[gi], lo = g_lo[gi], hi = lab_fill[w];
        lab_fill[w] = 0;
        i64 first = np_;
        for (i64 k = lo; k < hi; k++) { /* pairs in first-seen order, each with its minimum */
            i64 d = b_dst[k], q = dslot[d];
            if (q < 0) {
                dslot[d] = np_;
                p_dst[np_] = d;
                p_min[np_] = b_v[k];
                p_val[np_] = 0.0;
                np_++;
            } else if (b_v[k] < p_min[q]) {
                p_min[q] = b_v[k];
            }
        }
        for (i64 k = lo; k < hi; k++) {
            i64 q = dslot[b_dst[k]];
            double dv = p_min[q] - b_v[k];
            p_val[q] += dv == 0.0 ? 1.0 : exp(dv);
        }
        for (i64 q = first; q < np_; q++) {
            dslot[p_dst[q]] = -1;
            p_val[q] = p_min[q] - log(p_val[q]);
        }
        /* destinations in increasing order (the interned subset's order): a label has few */
        for (i64 q = first + 1; q < np_; q++) {
            i64 d = p_dst[q];
            double v = p_val[q];
            i64 r = q - 1;
            while (r >= first && p_dst[r] > d) {
                p_dst[r + 1] = p_dst[r];
                p_val[r + 1] = p_val[r];
                r--;
            }
            p_dst[r + 1] = d;
            p_val[r + 1] = v;
        }
        g_lo[gi] = first;
        g_hi[gi] = np_;
    }
    *ng_out = ng;
    return np_;
}

/* The table of ids twice as large. */
static int rehash(Store *st)
{
    i64 size = 2 * st->table_size;
    i64 *t = malloc((size_t)size * sizeof(i64));
    if (!t) {
        PyErr_NoMemory();
        return -1;
    }
    for (i64 i = 0; i < size; i++)
        t[i] = -1;
    const i64 *off = st->off.p;
    for (i64 j = 0; j < st->nds; j++) {
        i64 i = (i64)(subset_hash(st->state.p, st->rkey.p, off[j], off[j + 1]) & (uint64_t)(size - 1));
        while (t[i] >= 0)
            i = (i + 1) & (size - 1);
        t[i] = j;
    }
    free(st->table.p);
    st->table.p = t;
    st->table.cap = size;
    st->table_size = size;
    return 0;
}

/* Id of the determinized state {p_dst[q]: p_val[q] - wsum} for q in a:b: an existing one, or nds after
 * writing it as state nds (the caller counts it).  The arrays have room for it (the table: at most
 * half full after it). */
static i64 intern(Store *st, const i64 *p_dst, const double *p_val, i64 a, i64 b, double wsum, double resolution)
{
    i64 nds = st->nds, *off = st->off.p, *state = st->state.p, *rkey = st->rkey.p, *table = st->table.p;
    double *resid = st->resid.p;
    i64 base = off[nds], len = b - a, need = base + len;
    uint64_t hv = 1469598103934665603ull & MASK61; /* subset_hash, computed while writing */
    for (i64 q = 0; q < len; q++) {
        double rr = p_val[a + q] - wsum, x = rint(rr / resolution);
        i64 key = x >= 9.2e18 ? INT64_MAX : x <= -9.2e18 ? INT64_MIN : (i64)x;
        state[base + q] = p_dst[a + q];
        resid[base + q] = rr;
        rkey[base + q] = key;
        hv = (hv * 1000003u + (uint64_t)p_dst[a + q]) & MASK61;
        hv = (hv * 1000003u + (uint64_t)key) & MASK61;
    }
    i64 size = st->table_size;
    i64 slot = (i64)(hv & (uint64_t)(size - 1));
    size_t bytes = (size_t)len * sizeof(i64);
    while (table[slot] >= 0) {
        i64 c = table[slot], c0 = off[c];
        if (off[c + 1] - c0 == len && !memcmp(state + c0, state + base, bytes) && !memcmp(rkey + c0, rkey + base, bytes))
            return c;
        slot = (slot + 1) & (size - 1);
    }
    table[slot] = nds;
    off[nds + 1] = need;
    return nds;
}

/* The lattice as the search reads it: per state its arcs (off[s]:off[s + 1], sorted by source), each
 * with its destination, dense word label (-1: epsilon) and cost; the exit costs. */
typedef struct {
    i64 m, num_labels;
    i64 *off; /* owned */
    const i64 *dst, *dlab;
    const double *cost, *final;
} Arcs;

static int get_arcs(Views *vs, Arcs *g, i64 m, PyObject *o_src, PyObject *o_dst, PyObject *o_dlab, PyObject *o_cost,
                    PyObject *o_final, i64 num_labels)
{
    Py_ssize_t n;
    g->m = m;
    g->num_labels = num_labels;
    g->off = NULL;
    if (m < 1 || num_labels < 0) {
        PyErr_SetString(PyExc_ValueError, "nbest: num_states must be >= 1 and num_labels >= 0");
        return -1;
    }
    const i64 *src = view(vs, o_src, "src", K_I64, -1, &n);
    if (!src || !(g->dst = view(vs, o_dst, "dst", K_I64, n, NULL)) ||
        !(g->dlab = view(vs, o_dlab, "dlab", K_I64, n, NULL)) || !(g->cost = view(vs, o_cost, "cost", K_F64, n, NULL)) ||
        !(g->final = view(vs, o_final, "final", K_F64, m, NULL)) || check_arcs(m, src, g->dst, n) < 0)
        return -1;
    for (i64 a = 0; a < n; a++) {
        if (g->dlab[a] < -1 || g->dlab[a] >= num_labels) {
            PyErr_Format(PyExc_ValueError, "nbest: arc %lld: dense label %lld out of range [-1, %lld)", (long long)a,
                         (long long)g->dlab[a], (long long)num_labels);
            return -1;
        }
    }
    if (!ALLOC(g->off, m + 1))
        return -1;
    i64 a = 0;
    for (i64 st = 0; st <= m; st++) {
        while (a < n && src[a] < st)
            a++;
        g->off[st] = a;
    }
    return 0;
}

/* Gather the word arcs that determinized state j reaches: propagate its members' residual costs through
 * the epsilon arcs (states in increasing = topological order, a log sum per epsilon arc) and take the
 * word arcs of every state reached, each arc once, as entries (label, destination, cost).  (Gathering
 * the members' closed rows instead reaches the same arc once per member that has an epsilon path to
 * it: ~4x the entries on long dense lattices.)  Returns the number of entries (-1 on error); *end: the
 * log sum of the exits. */
static i64 gather(i64 j, const Store *st, Scratch *sc, const Arcs *g, double *end_out)
{
    const i64 *off = g->off, *dst = g->dst, *dlab = g->dlab;
    const double *cost = g->cost;
    i64 lo = st->off.p[j], hi = st->off.p[j + 1];
    i64 mark = ++sc->expand_no, n_cl = 0;
    i64 *e_mark = sc->e_mark;
    double *alpha = sc->alpha;
    if (IGROW(sc->cl, hi - lo) < 0)
        return -1;
    for (i64 k = lo; k < hi; k++) {
        i64 s = st->state.p[k];
        e_mark[s] = mark;
        alpha[s] = st->resid.p[k];
        sc->cl.p[n_cl++] = s;
    }
    int added = 0;
    for (i64 i = 0; i < n_cl; i++) { /* the epsilon closure of the members */
        i64 t = sc->cl.p[i];
        for (i64 q = off[t]; q < off[t + 1]; q++) {
            i64 u = dst[q];
            if (dlab[q] >= 0 || e_mark[u] == mark)
                continue;
            if (IGROW(sc->cl, n_cl + 1) < 0)
                return -1;
            e_mark[u] = mark;
            alpha[u] = INF;
            sc->cl.p[n_cl++] = u;
            added = 1;
        }
    }
    const i64 *cl = sc->cl.p;
    if (added)
        qsort(sc->cl.p, (size_t)n_cl, sizeof(i64), cmp_i64);
    i64 total = 0;
    for (i64 i = 0; i < n_cl; i++)
        total += off[cl[i] + 1] - off[cl[i]];
    if (IGROW(sc->e_lab, total + 1) < 0 || IGROW(sc->e_dst, total + 1) < 0 || IGROW(sc->b_dst, total + 1) < 0 ||
        IGROW(sc->p_dst, total + 1) < 0 || IGROW(sc->g_lab, total + 1) < 0 || IGROW(sc->g_lo, total + 1) < 0 ||
        IGROW(sc->g_hi, total + 1) < 0 || FGROW(sc->e_v, total + 1) < 0 || FGROW(sc->b_v, total + 1) < 0 ||
        FGROW(sc->p_val, total + 1) < 0 || FGROW(sc->p_tmp, total + 1) < 0 || FGROW(sc->g_sum, total + 1) < 0 ||
        FGROW(sc->g_bound, total + 1) < 0)
        return -1;
    i64 *e_lab = sc->e_lab.p, *e_dst = sc->e_dst.p;
    double *e_v = sc->e_v.p;
    i64 ne = 0;
    double end = INF;
    for (i64 i = 0; i < n_cl; i++) {
        i64 t = cl[i];
        double at = alpha[t];
        if (!(at < INF))
            continue;
        double xv = at + g->final[t];
        if (xv < INF)
            end = log_add(end, xv);
        for (i64 q = off[t]; q < off[t + 1]; q++) {
            double v = at + cost[q];
            if (!(v < INF))
                continue;
            if (dlab[q] < 0) {
                alpha[dst[q]] = log_add(alpha[dst[q]], v);
            } else {
                e_lab[ne] = dlab[q];
                e_dst[ne] = dst[q];
                e_v[ne] = v;
                ne++;
            }
        }
    }
    *end_out = end;
    return ne;
}

/* Expand determinized state j: gather its word arcs (gather), reduce them per (label, destination) and
 * per label, and record its choices (successors interned). */
static int expand(i64 j, Store *st, Scratch *sc, const Arcs *g, const double *hb, double resolution)
{
    double end;
    i64 ne = gather(j, st, sc, g, &end);
    if (ne < 0)
        return -1;
    i64 ng;
    i64 n_pairs = reduce_pairs(sc, ne, &ng);
    const i64 *g_lo = sc->g_lo.p, *g_hi = sc->g_hi.p, *g_lab = sc->g_lab.p, *p_dst = sc->p_dst.p;
    const double *p_val = sc->p_val.p;
    double *p_tmp = sc->p_tmp.p, *g_sum = sc->g_sum.p, *g_bound = sc->g_bound.p;
    i64 nc = end < INF ? 1 : 0;
    for (i64 gi = 0; gi < ng; gi++) { /* log_sum of p_val and of p_val + hb, in one pass */
        i64 a = g_lo[gi], b = g_hi[gi];
        double m1 = INF, m2 = INF;
        for (i64 q = a; q < b; q++) {
            double y = p_val[q] + hb[p_dst[q]];
            p_tmp[q - a] = y;
            if (p_val[q] < m1)
                m1 = p_val[q];
            if (y < m2)
                m2 = y;
        }
        double s1 = 0.0, s2 = 0.0;
        for (i64 q = a; q < b; q++) {
            s1 += exp(m1 - p_val[q]);
            s2 += exp(m2 - p_tmp[q - a]);
        }
        g_sum[gi] = m1 == INF ? INF : m1 - log(s1);
        g_bound[gi] = m2 == INF ? INF : m2 - log(s2);
        if (g_bound[gi] < INF)
            nc++;
    }
    i64 n_ch = st->n_ch, nds = st->nds;
    if (FGROW(st->ch_bound, n_ch + nc) < 0 || IGROW(st->ch_lab, n_ch + nc) < 0 || FGROW(st->ch_cost, n_ch + nc) < 0 ||
        IGROW(st->ch_next, n_ch + nc) < 0)
        return -1;
    /* room for every successor, so that interning writes in place */
    i64 k_new = nc + 1;
    if (IGROW(st->off, nds + k_new + 1) < 0 || IGROW(st->ch_lo, nds + k_new) < 0 || IGROW(st->ch_n, nds + k_new) < 0)
        return -1;
    i64 mem_need = st->off.p[nds] + n_pairs + 1;
    if (IGROW(st->state, mem_need) < 0 || FGROW(st->resid, mem_need) < 0 || IGROW(st->rkey, mem_need) < 0)
        return -1;
    while (2 * (nds + k_new) > st->table_size) /* (sizes stay powers of 2) */
        if (rehash(st) < 0)
            return -1;
    st->ch_lo.p[j] = n_ch;
    st->ch_n.p[j] = nc;
    if (end < INF) {
        st->ch_bound.p[n_ch] = end;
        st->ch_lab.p[n_ch] = -1;
        st->ch_cost.p[n_ch] = end;
        st->ch_next.p[n_ch] = -1;
        n_ch++;
    }
    for (i64 gi = 0; gi < ng; gi++) {
        if (!(g_bound[gi] < INF))
            continue;
        st->nds = nds;
        i64 nj = intern(st, p_dst, p_val, g_lo[gi], g_hi[gi], g_sum[gi], resolution);
        if (nj == nds) {
            st->ch_lo.p[nj] = -1;
            st->ch_n.p[nj] = -1;
            nds++;
        }
        st->ch_bound.p[n_ch] = g_bound[gi];
        st->ch_lab.p[n_ch] = g_lab[gi];
        st->ch_cost.p[n_ch] = g_sum[gi];
        st->ch_next.p[n_ch] = nj;
        n_ch++;
    }
    st->nds = nds;
    st->n_ch = n_ch;
    return 0;
}

/* Stable index sort of key[c0:c0 + cn] into perm (absolute choice indices), ties in index order. */
static int stable_rank(const double *key, i64 c0, i64 cn, i64 *perm, IA *tmp)
{
    for (i64 q = 0; q < cn; q++)
        perm[q] = c0 + q;
    if (cn <= 32) {
        for (i64 q = 1; q < cn; q++) {
            i64 v = perm[q];
            i64 r = q - 1;
            while (r >= 0 && key[perm[r]] > key[v]) {
                perm[r + 1] = perm[r];
                r--;
            }
            perm[r + 1] = v;
        }
        return 0;
    }
    if (IGROW(*tmp, cn) < 0)
        return -1;
    i64 *a = perm, *b = tmp->p;
    for (i64 width = 1; width < cn; width *= 2) { /* bottom-up merge sort */
        for (i64 lo = 0; lo < cn; lo += 2 * width) {
            i64 mid = lo + width < cn ? lo + width : cn, hi = lo + 2 * width < cn ? lo + 2 * width : cn;
            i64 i = lo, jj = mid, o = lo;
            while (i < mid && jj < hi)
                b[o++] = key[a[jj]] < key[a[i]] ? a[jj++] : a[i++];
            while (i < mid)
                b[o++] = a[i++];
            while (jj < hi)
                b[o++] = a[jj++];
        }
        i64 *t = a;
        a = b;
        b = t;
    }
    if (a != perm)
        memcpy(perm, a, (size_t)cn * sizeof(i64));
    return 0;
}

typedef struct {
    Store st;
    Scratch sc;
    /* A* over determinized states: entries (f, g, state; -1 = an end), heap ordered by (f, entry) */
    FA a_f, a_g;
    IA a_j, a_heap;
    BA reg;
    IA stamp;
    FA best, ex_key;
    IA ex_perm, perm_tmp, st_j, st_r;
    /* the prefix search */
    FA p_f, p_g, f_cost;
    IA p_j, p_r, p_link, p_heap, t_parent, t_label, f_link;
    i64 n_found, n_trie;
} Search;

static void search_free(Search *s)
{
    Store *st = &s->st;
    Scratch *sc = &s->sc;
    void *ps[] = {st->off.p, st->state.p, st->rkey.p, st->table.p, st->ch_lo.p, st->ch_n.p, st->ch_lab.p,
                  st->ch_next.p, st->resid.p, st->ch_bound.p, st->ch_cost.p, sc->e_lab.p, sc->e_dst.p, sc->b_dst.p,
                  sc->p_dst.p, sc->g_lab.p, sc->g_lo.p, sc->g_hi.p, sc->e_v.p, sc->b_v.p, sc->p_val.p, sc->p_tmp.p,
                  sc->g_sum.p, sc->g_bound.p, sc->lab_cnt, sc->lab_fill, sc->dslot, sc->cl.p, sc->e_mark, sc->alpha, s->a_f.p, s->a_g.p, s->a_j.p,
                  s->a_heap.p, s->reg.p, s->stamp.p, s->best.p, s->ex_key.p, s->ex_perm.p, s->perm_tmp.p, s->st_j.p,
                  s->st_r.p, s->p_f.p, s->p_g.p, s->f_cost.p, s->p_j.p, s->p_r.p, s->p_link.p, s->p_heap.p,
                  s->t_parent.p, s->t_label.p, s->f_link.p};
    for (size_t i = 0; i < sizeof(ps) / sizeof(ps[0]); i++)
        free(ps[i]);
}

/* An empty store holding the start state {0: 0}; scratch tables for m states and num_labels labels. */
static int search_init(Search *s, i64 m, i64 num_labels)
{
    Store *st = &s->st;
    if (IGROWZ(st->off, 1024) < 0 || IGROWZ(st->state, 4096) < 0 || FGROW(st->resid, 4096) < 0 ||
        IGROWZ(st->rkey, 4096) < 0 || IGROW(st->table, 1024) < 0 || IGROW(st->ch_lo, 1024) < 0 ||
        IGROW(st->ch_n, 1024) < 0)
        return -1;
    st->resid.p[0] = 0.0;
    st->off.p[1] = 1;
    st->table_size = 1024;
    for (i64 i = 0; i < 1024; i++)
        st->table.p[i] = -1;
    st->table.p[subset_hash(st->state.p, st->rkey.p, 0, 1) & 1023] = 0;
    st->ch_lo.p[0] = st->ch_n.p[0] = -1;
    st->nds = 1;
    st->n_ch = 0;
    Scratch *sc = &s->sc;
    if (!(sc->lab_cnt = calloc((size_t)num_labels + 1, sizeof(i64))) ||
        !(sc->lab_fill = calloc((size_t)num_labels + 1, sizeof(i64))) || !ALLOC(sc->dslot, m) ||
        !(sc->e_mark = calloc((size_t)m, sizeof(i64))) || !ALLOC(sc->alpha, m)) {
        PyErr_NoMemory();
        return -1;
    }
    for (i64 i = 0; i < m; i++)
        sc->dslot[i] = -1;
    sc->expand_no = 0;
    return 0;
}

/* Each region state's exact best completion (depth-first post-order from the start; a successor
 * outside the region counts with its bound) and its choices ranked by that exact key (ex_key;
 * ex_perm: the ranked choice indices, ties in label order, the end first).  stamp marks the states
 * visited in this round. */
static int exact_completions(Search *s, i64 round_no)
{
    Store *st = &s->st;
    const i64 *ch_lo = st->ch_lo.p, *ch_n = st->ch_n.p, *ch_next = st->ch_next.p;
    const double *ch_bound = st->ch_bound.p, *ch_cost = st->ch_cost.p;
    const char *reg = s->reg.p;
    i64 *stamp = s->stamp.p;
    double *best = s->best.p, *ex_key = s->ex_key.p;
    if (IGROW(s->st_j, 1) < 0 || IGROW(s->st_r, 1) < 0)
        return -1;
    i64 sp = 0;
    s->st_j.p[0] = 0;
    s->st_r.p[0] = 0;
    stamp[0] = round_no;
    while (sp >= 0) {
        i64 j = s->st_j.p[sp], r = s->st_r.p[sp], c0 = ch_lo[j];
        int pushed = 0;
        while (r < ch_n[j]) {
            i64 nj = ch_next[c0 + r];
            r++;
            if (nj >= 0 && reg[nj] && stamp[nj] != round_no) {
                stamp[nj] = round_no;
                s->st_r.p[sp] = r;
                sp++;
                if (IGROW(s->st_j, sp + 1) < 0 || IGROW(s->st_r, sp + 1) < 0)
                    return -1;
                s->st_j.p[sp] = nj;
                s->st_r.p[sp] = 0;
                pushed = 1;
                break;
            }
        }
        if (pushed)
            continue;
        i64 cn = ch_n[j];
        double bj = INF;
        for (i64 c = c0; c < c0 + cn; c++) {
            i64 nj = ch_next[c];
            if (nj < 0)
                ex_key[c] = ch_cost[c];
            else if (reg[nj])
                ex_key[c] = ch_cost[c] + best[nj];
            else
                ex_key[c] = ch_bound[c];
            if (ex_key[c] < bj)
                bj = ex_key[c];
        }
        best[j] = bj;
        if (stable_rank(ex_key, c0, cn, s->ex_perm.p + c0, &s->perm_tmp) < 0)
            return -1;
        sp--;
    }
    return 0;
}

static int push_prefix(Search *s, i64 *n_p, i64 *p_size, double f, i64 j, i64 r, double g, i64 link)
{
    i64 k = *n_p;
    if (FGROW(s->p_f, k + 1) < 0 || IGROW(s->p_j, k + 1) < 0 || IGROW(s->p_r, k + 1) < 0 || FGROW(s->p_g, k + 1) < 0 ||
        IGROW(s->p_link, k + 1) < 0)
        return -1;
    s->p_f.p[k] = f;
    s->p_j.p[k] = j;
    s->p_r.p[k] = r;
    s->p_g.p[k] = g;
    s->p_link.p[k] = link;
    if (heap_push(&s->p_heap, p_size, s->p_f.p, k) < 0)
        return -1;
    *n_p = k + 1;
    return 0;
}

/* Best-first search over word prefixes with the exact keys: a heap entry is "choice r of state j after
 * prefix cost g"; popping it pushes choice r + 1 and the first choice of the successor.  Sets
 * *status and *outside (>= 0: the search needs that state, which is outside the region); the found
 * sequences are s->f_link/f_cost[:n_found], the trie s->t_parent/t_label[:n_trie].  -1 on error. */
static int rank_prefixes(Search *s, i64 n, i64 max_pops, int *status, i64 *outside)
{
    const Store *st = &s->st;
    const i64 *ch_lo = st->ch_lo.p, *ch_n = st->ch_n.p, *ch_lab = st->ch_lab.p, *ch_next = st->ch_next.p;
    const double *ch_cost = st->ch_cost.p, *ex_key = s->ex_key.p;
    const i64 *ex_perm = s->ex_perm.p;
    const char *reg = s->reg.p;
    i64 n_p = 0, p_size = 0, pops = 0;
    s->n_found = 0;
    s->n_trie = 1;
    *status = ST_OK;
    *outside = -1;
    if (IGROW(s->t_parent, 1) < 0 || IGROW(s->t_label, 1) < 0)
        return -1;
    s->t_parent.p[0] = s->t_label.p[0] = -1;
    if (ch_n[0] > 0 && push_prefix(s, &n_p, &p_size, ex_key[ex_perm[ch_lo[0]]], 0, 0, 0.0, 0) < 0)
        return -1;
    while (p_size > 0) {
        i64 e = heap_pop(s->p_heap.p, &p_size, s->p_f.p);
        pops++;
        if (pops > max_pops) {
            *status = ST_TOO_MANY_POPS;
            return 0;
        }
        if ((pops & (SIGNAL_EVERY - 1)) == 0 && PyErr_CheckSignals() < 0)
            return -1;
        i64 j = s->p_j.p[e], r = s->p_r.p[e], link = s->p_link.p[e];
        double g = s->p_g.p[e];
        i64 c0 = ch_lo[j];
        if (r + 1 < ch_n[j] && push_prefix(s, &n_p, &p_size, g + ex_key[ex_perm[c0 + r + 1]], j, r + 1, g, link) < 0)
            return -1;
        i64 c = ex_perm[c0 + r], nj = ch_next[c];
        if (nj < 0) {
            if (IGROW(s->f_link, s->n_found + 1) < 0 || FGROW(s->f_cost, s->n_found + 1) < 0)
                return -1;
            s->f_link.p[s->n_found] = link;
            s->f_cost.p[s->n_found] = g + ch_cost[c];
            s->n_found++;
            if (0 <= n && n <= s->n_found)
                break;
            continue;
        }
        if (!reg[nj]) {
            *outside = nj;
            s->n_found = 0;
            s->n_trie = 0;
            return 0;
        }
        if (ch_n[nj] > 0) {
            double gc = g + ch_cost[c];
            i64 t = s->n_trie;
            if (IGROW(s->t_parent, t + 1) < 0 || IGROW(s->t_label, t + 1) < 0)
                return -1;
            s->t_parent.p[t] = link;
            s->t_label.p[t] = ch_lab[c];
            if (push_prefix(s, &n_p, &p_size, gc + ex_key[ex_perm[ch_lo[nj]]], nj, 0, gc, t) < 0)
                return -1;
            s->n_trie = t + 1;
        }
    }
    return 0;
}

static int push_astar(Search *s, i64 *n_a, i64 *a_size, double f, double g, i64 j)
{
    i64 k = *n_a;
    if (FGROW(s->a_f, k + 1) < 0 || FGROW(s->a_g, k + 1) < 0 || IGROW(s->a_j, k + 1) < 0)
        return -1;
    s->a_f.p[k] = f;
    s->a_g.p[k] = g;
    s->a_j.p[k] = j;
    if (heap_push(&s->a_heap, a_size, s->a_f.p, k) < 0)
        return -1;
    *n_a = k + 1;
    return 0;
}

/* The A* rounds (see nbest_lists.py).  Returns -1 on error (exception set), else the status. */
static int run_search(Search *s, const Arcs *rows, const double *hb, i64 n, i64 max_pops, i64 max_states,
                      i64 max_members, double margin, double resolution)
{
    Store *st = &s->st;
    i64 n_a = 0, a_size = 0, n_reg = 0, round_no = 0, steps = 0;
    if (search_init(s, rows->m, rows->num_labels) < 0 || push_astar(s, &n_a, &a_size, 0.0, 0.0, 0) < 0 ||
        BGROWZ(s->reg, 1024) < 0)
        return -1;
    int has_thr = n < 0;
    double thr = INF;
    for (;;) {
        /* 1. grow the region: every state with g + bound <= thr, each at its cheapest prefix cost */
        while (a_size > 0 && !(has_thr && s->a_f.p[s->a_heap.p[0]] > thr)) {
            if ((++steps & (SIGNAL_EVERY - 1)) == 0 && PyErr_CheckSignals() < 0)
                return -1;
            i64 e = heap_pop(s->a_heap.p, &a_size, s->a_f.p);
            i64 j = s->a_j.p[e];
            if (j < 0) {
                if (!has_thr) { /* the first end popped is the best sequence (consistent bound) */
                    has_thr = 1;
                    thr = s->a_f.p[e] + margin;
                }
                continue;
            }
            if (s->reg.p[j])
                continue;
            s->reg.p[j] = 1;
            double g = s->a_g.p[e];
            if (++n_reg > max_states)
                return ST_TOO_MANY_STATES;
            if (st->ch_n.p[j] < 0) {
                if (expand(j, st, &s->sc, rows, hb, resolution) < 0)
                    return -1;
                if (st->off.p[st->nds] > max_members)
                    return ST_TOO_MANY_MEMBERS;
                if (BGROWZ(s->reg, st->nds) < 0)
                    return -1;
            }
            i64 lo = st->ch_lo.p[j], hi = lo + st->ch_n.p[j];
            for (i64 c = lo; c < hi; c++) {
                i64 nj = st->ch_next.p[c];
                if (nj >= 0 && s->reg.p[nj])
                    continue;
                double f = g + (nj < 0 ? st->ch_cost.p[c] : st->ch_bound.p[c]);
                if (push_astar(s, &n_a, &a_size, f, g + st->ch_cost.p[c], nj) < 0)
                    return -1;
            }
        }
        if (!has_thr) /* no end reachable */
            return ST_OK;
        /* 2. exact best completions inside the region */
        round_no++;
        if (IGROWZ(s->stamp, st->nds) < 0 || FGROW(s->best, st->nds) < 0 || FGROW(s->ex_key, st->n_ch) < 0 ||
            IGROW(s->ex_perm, st->n_ch) < 0)
            return -1;
        if (exact_completions(s, round_no) < 0)
            return -1;
        /* 3. best-first over word prefixes with the exact bound */
        int status;
        i64 outside;
        if (rank_prefixes(s, n, max_pops, &status, &outside) < 0)
            return -1;
        if (outside < 0)
            return status;
        /* the prefix search needs a state outside the region: grow it past that state's bound */
        double need_f = INF;
        for (i64 q = 0; q < a_size; q++) {
            i64 e = s->a_heap.p[q];
            if (s->a_j.p[e] == outside && s->a_f.p[e] < need_f)
                need_f = s->a_f.p[e];
        }
        margin *= 2.0;
        double x = thr + margin, y = (need_f < INF ? need_f : thr) + margin;
        thr = y > x ? y : x;
    }
}

static PyObject *py_bounded_search(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels;
    long long n, max_pops, max_states, max_members;
    double margin, resolution;
    PyObject *o_src, *o_dst, *o_dlab, *o_cost, *o_final, *o_hb;
    if (!PyArg_ParseTuple(args, "nOOOOOOnLLLLdd", &m, &o_src, &o_dst, &o_dlab, &o_cost, &o_final, &o_hb, &num_labels,
                          &n, &max_pops, &max_states, &max_members, &margin, &resolution))
        return NULL;
    if (!(resolution > 0.0) || !(margin >= 0.0))
        return PyErr_Format(PyExc_ValueError, "nbest: resolution must be > 0 and margin >= 0 (got %g, %g)", resolution,
                            margin);
    Views vs = {.n = 0};
    Arcs rows;
    Search s;
    memset(&s, 0, sizeof(s));
    PyObject *result = NULL;
    if (get_arcs(&vs, &rows, m, o_src, o_dst, o_dlab, o_cost, o_final, num_labels) < 0)
        goto done;
    const double *hb = view(&vs, o_hb, "hb", K_F64, m, NULL);
    if (!hb)
        goto done;
    int status = run_search(&s, &rows, hb, n, max_pops, max_states, max_members, margin, resolution);
    if (status < 0)
        goto done;
    i64 nf = s.n_found, nt = s.n_trie;
    if (status != ST_OK && status != ST_TOO_MANY_POPS)
        nf = nt = 0;
    result = Py_BuildValue("(iNNNN)", status, out_array(s.f_link.p, nf, 8), out_array(s.f_cost.p, nf, 8),
                           out_array(s.t_parent.p, nt, 8), out_array(s.t_label.p, nt, 8));
done:
    views_release(&vs);
    search_free(&s);
    free(rows.off);
    return result;
}

/* ------------------------------------------------------------------------------------------------ */
/* best paths                                                                                        */
/* ------------------------------------------------------------------------------------------------ */
/* Best single path reading each sequence seq_lab[seq_off[i]:seq_off[i + 1]] (dense labels) from state
 * 0: a tropical Viterbi pass over the closed rows, states in increasing order and each row in arc
 * order, the first candidate kept among equal costs.  Returns (cost, arcs): per sequence its best cost
 * (INF: none) and its word arcs (-1 when none). */
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

static PyObject *py_best_paths(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, n_rows, n_off, n_lab, n_arcs_total;
    PyObject *o_off, *o_dlab, *o_dst, *o_bc, *o_arc, *o_xbc, *o_soff, *o_slab;
    if (!PyArg_ParseTuple(args, "OOOOOOOOn", &o_off, &o_dlab, &o_dst, &o_bc, &o_arc, &o_xbc, &o_soff, &o_slab, &m))
        return NULL;
    Views vs = {.n = 0};
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
    result = Py_BuildValue("(NN)", out_array(cost, n_seq, 8), out_array(arcs, n_arcs_total, 8));
done:
    views_release(&vs);
    free(cost);
    free(arcs);
    void *pp[] = {ps.cur.p, ps.cur_link.p, ps.nxt.p, ps.l_arc.p, ps.l_parent.p, ps.new_link.p, ps.cur_v.p,
                  ps.new_v.p, ps.best_from, ps.best_k, ps.best_v};
    for (size_t i = 0; i < sizeof(pp) / sizeof(pp[0]); i++)
        free(pp[i]);
    return result;
}

/* ------------------------------------------------------------------------------------------------ */
static PyMethodDef methods[] = {
    {"closed_rows", py_closed_rows, METH_VARARGS,
     "closed_rows(m, src, dst, lab, cost, final) -> (w_off, w_arc, w_lc, w_bc, x_lc, x_bc) as bytearrays"},
    {"best_word_bound", py_best_word_bound, METH_VARARGS,
     "best_word_bound(m, w_off, w_dlab, w_dst, w_lc, x_lc, num_labels) -> h (float64 bytearray)"},
    {"suffix_list_bound", py_suffix_list_bound, METH_VARARGS,
     "suffix_list_bound(m, w_off, w_dlab, w_dst, w_lc, x_lc, num_labels, k) -> h (float64 bytearray)"},
    {"bounded_search", py_bounded_search, METH_VARARGS,
     "bounded_search(m, src, dst, dlab, cost, final, hb, num_labels, n, max_pops, max_states, max_members, "
     "margin, resolution) -> (status, found_link, found_cost, t_parent, t_label)"},
    {"best_paths", py_best_paths, METH_VARARGS,
     "best_paths(w_off, w_dlab, w_dst, w_bc, w_arc, x_bc, seq_off, seq_lab, m) -> (cost, arcs)"},
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
        PyModule_AddIntConstant(mod, "TOO_MANY_MEMBERS", ST_TOO_MANY_MEMBERS) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
