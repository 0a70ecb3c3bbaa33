/* Compiled loops of the exact sequence search (lattice_tools.alternatives._determinizer, ._best_paths):
 *
 *   Expander(...)          the fixed tables of a Determinizer (held as buffers, validated once);
 *     .expand(key, resid)  one determinized state -> its choices, sorted by bound, and its successor data;
 *     .successor(data, g)  the subset reached by choice group g -> (interning key, residual costs);
 *   WordTimes(...)         the tables of the word-time Viterbi;
 *     .best_paths(...)     best single path of each sequence of a prefix trie;
 *   closed_exits(...)      each state's exit cost through its best epsilon path.
 *
 * The floating-point operations are those of the numba kernels they replace, in the same order (the
 * package is built with -ffp-contract=off), so every cost is bit-identical.  A determinized state
 * crosses as two bytes objects: its key (n int64 states, then n int64 residuals rounded to the
 * resolution: what the Python side interns) and its n float64 residual costs.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

static PyObject *array_type; /* array.array */

/* ---- buffers ---------------------------------------------------------------------------------- */

/* A read-only (or writable) C-contiguous 1-d buffer of int64 (kind 'i') or float64 (kind 'd'). */
static int get_array(PyObject *obj, Py_buffer *view, char kind, const char *name) {
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
        PyErr_Format(PyExc_TypeError, "%s: expected a contiguous array (buffer), got %.100s", name,
                     Py_TYPE(obj)->tp_name);
        return -1;
    }
    const char *f = view->format ? view->format : "B";
    if (*f == '<' || *f == '=' || *f == '@') f++;
    int ok = view->itemsize == 8 && f[1] == '\0' &&
             (kind == 'd' ? f[0] == 'd' : (f[0] == 'q' || f[0] == 'l'));
    if (!ok || view->ndim > 1) {
        PyErr_Format(PyExc_TypeError, "%s: expected a 1-d %s array, got format '%s' itemsize %zd", name,
                     kind == 'd' ? "float64" : "int64", view->format ? view->format : "B", view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

static Py_ssize_t len8(const Py_buffer *v) { return v->len / 8; }
static const i64 *I(const Py_buffer *v) { return (const i64 *)v->buf; }
static const double *D(const Py_buffer *v) { return (const double *)v->buf; }

static int check_offsets(const Py_buffer *off, Py_ssize_t rows, Py_ssize_t total, const char *name) {
    const i64 *o = I(off);
    if (len8(off) != rows + 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd offsets, got %zd", name, rows + 1, len8(off));
        return -1;
    }
    for (Py_ssize_t r = 0; r <= rows; r++)
        if (o[r] < 0 || o[r] > total || (r && o[r] < o[r - 1])) {
            PyErr_Format(PyExc_ValueError, "%s: offsets must be nondecreasing within [0, %zd] (row %zd)", name,
                         total, r);
            return -1;
        }
    return 0;
}

static int check_range(const Py_buffer *a, i64 lo, i64 hi, const char *name) {
    const i64 *x = I(a);
    for (Py_ssize_t k = 0; k < len8(a); k++)
        if (x[k] < lo || x[k] >= hi) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] = %lld is outside [%lld, %lld)", name, k, (long long)x[k],
                         (long long)lo, (long long)hi);
            return -1;
        }
    return 0;
}

static int check_len(const Py_buffer *a, Py_ssize_t n, const char *name) {
    if (len8(a) != n) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd values, got %zd", name, n, len8(a));
        return -1;
    }
    return 0;
}

/* unaligned-safe access to the int64 / float64 contents of bytes objects */
static inline i64 ld_i(const char *p, Py_ssize_t k) { i64 v; memcpy(&v, p + 8 * k, 8); return v; }
static inline double ld_d(const char *p, Py_ssize_t k) { double v; memcpy(&v, p + 8 * k, 8); return v; }
static inline void st_i(char *p, Py_ssize_t k, i64 v) { memcpy(p + 8 * k, &v, 8); }
static inline void st_d(char *p, Py_ssize_t k, double v) { memcpy(p + 8 * k, &v, 8); }

/* Grow a scratch area to hold n items of size sz (contents not kept). */
static int reserve(void **p, Py_ssize_t *cap, Py_ssize_t n, size_t sz) {
    if (n <= *cap) return 0;
    Py_ssize_t c = n > 2 * *cap ? n : 2 * *cap;
    void *q = malloc((size_t)c * sz);
    if (!q) { PyErr_NoMemory(); return -1; }
    free(*p);
    *p = q;
    *cap = c;
    return 0;
}

/* Sort a[0:n] ascending: quicksort (median of three) with insertion sort for short runs, comparisons
 * inline (qsort's callback cost more than the kernels' own work).  The kernels sort sets of distinct
 * state or group numbers, so any correct sort gives the same order. */
static void sort_i64(i64 *a, Py_ssize_t n) {
    while (n > 16) {
        i64 x = a[0], y = a[n / 2], z = a[n - 1];
        i64 pivot = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
        Py_ssize_t i = 0, j = n - 1;
        for (;;) {
            while (a[i] < pivot) i++;
            while (a[j] > pivot) j--;
            if (i >= j) break;
            i64 t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
        /* a[0:j + 1] <= pivot <= a[j + 1:n]: recurse on the shorter part, loop on the longer */
        if (j + 1 < n - j - 1) {
            sort_i64(a, j + 1);
            a += j + 1;
            n -= j + 1;
        } else {
            sort_i64(a + j + 1, n - j - 1);
            n = j + 1;
        }
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        i64 v = a[i];
        Py_ssize_t k = i;
        for (; k > 0 && a[k - 1] > v; k--) a[k] = a[k - 1];
        a[k] = v;
    }
}

/* numpy's order for float64 sorting: NaN after everything */
static inline int less_d(double a, double b) { return a < b || (b != b && a == a); }

/* Stable argsort of key[0:n] into idx (tmp: n scratch), as numpy's kind="mergesort". */
static void argsort_stable(const double *key, i64 *idx, i64 *tmp, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) idx[i] = i;
    for (Py_ssize_t w = 1; w < n; w *= 2) {
        for (Py_ssize_t lo = 0; lo < n; lo += 2 * w) {
            Py_ssize_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            Py_ssize_t a = lo, b = mid, o = lo;
            while (a < mid && b < hi) tmp[o++] = less_d(key[idx[b]], key[idx[a]]) ? idx[b++] : idx[a++];
            while (a < mid) tmp[o++] = idx[a++];
            while (b < hi) tmp[o++] = idx[b++];
        }
        memcpy(idx, tmp, (size_t)n * sizeof(i64));
    }
}

/* np.int64(np.rint(x)) on x86-64: out of range or NaN gives INT64_MIN */
static inline i64 rint_i64(double x) {
    double r = rint(x);
    return (r >= -9223372036854775808.0 && r < 9223372036854775808.0) ? (i64)r : INT64_MIN;
}

static PyObject *typed(PyObject *code, PyObject *bytes) {
    if (!bytes) return NULL;
    PyObject *a = PyObject_CallFunctionObjArgs(array_type, code, bytes, NULL);
    Py_DECREF(bytes);
    return a;
}

static PyObject *code_d, *code_q;

/* ---- Expander ---------------------------------------------------------------------------------- */

enum { T_OFF, T_GROUP, GROUP_LABEL, T_COST, COST_MIN, COST_SCALED, T_COMPL, COMPL_MIN, COMPL_SCALED,
       C_OFF, C_BASE, C_ENTRY, ARC_OFF, E_COST, ARC_DST, ARC_COST, ARC_SCALED, N_TABLES };
static const char *table_names[N_TABLES] = {
    "t_off", "t_group", "group_label", "t_cost", "cost_min", "cost_scaled", "t_compl", "compl_min",
    "compl_scaled", "c_off", "c_base", "c_entry", "arc_off", "e_cost", "arc_dst", "arc_cost", "arc_scaled"};
static const char table_kinds[N_TABLES + 1] = "iiiddddddidiididd";

typedef struct {
    PyObject_HEAD
    Py_buffer t[N_TABLES];
    int held, ready; /* buffers held; 1 once __init__ succeeded */
    Py_ssize_t M, K, G, E;
    double resolution;
    i64 stamp;
    /* per group, per state, per entry scratch (marks hold the stamp of the call that set them) */
    i64 *group_mark, *group_pos, *mark, *entry_mark, *entries;
    double *group_cost, *group_compl, *acc, *acc_min, *entry_weight;
    /* per call scratch */
    i64 *iscr; Py_ssize_t icap;
    double *dscr; Py_ssize_t dcap;
} Expander;

static void Expander_dealloc(Expander *self) {
    for (int k = 0; k < self->held; k++) PyBuffer_Release(&self->t[k]);
    free(self->group_mark); free(self->group_pos); free(self->mark); free(self->entry_mark); free(self->entries);
    free(self->group_cost); free(self->group_compl); free(self->acc); free(self->acc_min);
    free(self->entry_weight); free(self->iscr); free(self->dscr);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Expander_validate(Expander *s) {
    Py_buffer *t = s->t;
    Py_ssize_t M = len8(&t[T_OFF]) - 1, K = len8(&t[T_GROUP]), P = len8(&t[C_ENTRY]);
    Py_ssize_t E = len8(&t[ARC_OFF]) - 1, A = len8(&t[ARC_DST]);
    if (M < 0 || E < 0) {
        PyErr_SetString(PyExc_ValueError, "t_off, arc_off: need at least one offset");
        return -1;
    }
    s->M = M; s->K = K; s->E = E; s->G = len8(&t[GROUP_LABEL]);
    if (check_offsets(&t[T_OFF], M, K, "t_off") || check_range(&t[T_GROUP], 0, s->G, "t_group") ||
        check_len(&t[T_COST], K, "t_cost") || check_len(&t[COST_SCALED], K, "cost_scaled") ||
        check_len(&t[T_COMPL], K, "t_compl") || check_len(&t[COMPL_SCALED], K, "compl_scaled") ||
        check_len(&t[COST_MIN], M, "cost_min") || check_len(&t[COMPL_MIN], M, "compl_min") ||
        check_offsets(&t[C_OFF], K, P, "c_off") || check_len(&t[C_BASE], P, "c_base") ||
        check_range(&t[C_ENTRY], 0, E, "c_entry") || check_offsets(&t[ARC_OFF], E, A, "arc_off") ||
        check_len(&t[E_COST], E, "e_cost") || check_range(&t[ARC_DST], 0, M, "arc_dst") ||
        check_len(&t[ARC_COST], A, "arc_cost") || check_len(&t[ARC_SCALED], A, "arc_scaled"))
        return -1;
    return 0;
}

static int Expander_init(Expander *self, PyObject *args, PyObject *kwds) {
    PyObject *obj[N_TABLES];
    double resolution;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "Expander takes positional arguments only");
        return -1;
    }
    if (self->held) {
        PyErr_SetString(PyExc_TypeError, "Expander is already initialised");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOd:Expander", &obj[0], &obj[1], &obj[2], &obj[3], &obj[4],
                          &obj[5], &obj[6], &obj[7], &obj[8], &obj[9], &obj[10], &obj[11], &obj[12], &obj[13],
                          &obj[14], &obj[15], &obj[16], &resolution))
        return -1;
    for (int k = 0; k < N_TABLES; k++) {
        if (get_array(obj[k], &self->t[k], table_kinds[k], table_names[k]) < 0) return -1;
        self->held = k + 1;
    }
    if (!(resolution > 0)) {
        PyErr_SetString(PyExc_ValueError, "resolution must be positive");
        return -1;
    }
    self->resolution = resolution;
    if (Expander_validate(self) < 0) return -1;
    size_t G = (size_t)self->G + 1, M = (size_t)self->M + 1, E = (size_t)self->E + 1;
    self->group_mark = calloc(G, 8); self->group_pos = calloc(G, 8);
    self->group_cost = calloc(G, 8); self->group_compl = calloc(G, 8);
    self->mark = calloc(M, 8); self->acc = calloc(M, 8); self->acc_min = calloc(M, 8);
    self->entry_mark = calloc(E, 8); self->entry_weight = calloc(E, 8); self->entries = calloc(E, 8);
    if (!self->group_mark || !self->group_pos || !self->group_cost || !self->group_compl || !self->mark ||
        !self->acc || !self->acc_min || !self->entry_mark || !self->entry_weight || !self->entries) {
        PyErr_NoMemory();
        return -1;
    }
    self->ready = 1;
    return 0;
}

static int expander_ready(Expander *self) {
    if (!self->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Expander is not initialised");
        return -1;
    }
    return 0;
}

/* -log(sum(exp(-(m_resid[p] + value[m_entry[p]])))) over members a:b (INF when empty) */
static double members_logsum(const double *m_resid, const i64 *m_entry, i64 a, i64 b, const double *value) {
    double m = INFINITY;
    for (i64 p = a; p < b; p++) {
        double v = m_resid[p] + value[m_entry[p]];
        if (v < m) m = v;
    }
    if (m == INFINITY) return INFINITY;
    double t = 0.0;
    for (i64 p = a; p < b; p++) t += exp(m - (m_resid[p] + value[m_entry[p]]));
    return m - log(t);
}

static int subset_args(Expander *self, PyObject *key, PyObject *resid, Py_ssize_t *n) {
    if (expander_ready(self) < 0) return -1;
    if (!PyBytes_Check(key) || !PyBytes_Check(resid)) {
        PyErr_SetString(PyExc_TypeError, "key, resid: expected bytes");
        return -1;
    }
    *n = PyBytes_GET_SIZE(resid) / 8;
    if (PyBytes_GET_SIZE(resid) % 8 || PyBytes_GET_SIZE(key) != 16 * *n) {
        PyErr_SetString(PyExc_ValueError, "key, resid: expected 2 n int64 and n float64 values");
        return -1;
    }
    const char *k = PyBytes_AS_STRING(key);
    for (Py_ssize_t i = 0; i < *n; i++) {
        i64 s = ld_i(k, i);
        if (s < 0 || s >= self->M) {
            PyErr_Format(PyExc_ValueError, "key: state %lld is outside [0, %zd)", (long long)s, self->M);
            return -1;
        }
    }
    return 0;
}

typedef struct { /* an expansion, in the Expander's scratch (valid until its next call) */
    Py_ssize_t nm, ng, f; /* members, groups, choices (the groups with a finite bound) */
    i64 *groups, *order, *m_entry, *ends;
    double *m_base, *cost, *bound;
} Expansion;

/* The choices of the determinized state (states kst, residuals krs: n of each, checked): per group (an
 * automaton and a word, or the end) of its members' closed entries, the transition's cost and the bound
 * of its completions; the groups with a finite bound sorted by bound (ties by group number). */
static int expand_core(Expander *self, const char *kst, const char *krs, Py_ssize_t n, Expansion *x) {
    Py_buffer *t = self->t;
    const i64 *t_off = I(&t[T_OFF]), *t_group = I(&t[T_GROUP]);
    const double *t_cost = D(&t[T_COST]), *cost_min = D(&t[COST_MIN]), *cost_scaled = D(&t[COST_SCALED]);
    const double *t_compl = D(&t[T_COMPL]), *compl_min = D(&t[COMPL_MIN]), *compl_scaled = D(&t[COMPL_SCALED]);
    i64 *group_mark = self->group_mark, *group_pos = self->group_pos;
    double *group_cost = self->group_cost, *group_compl = self->group_compl;
    i64 stamp = ++self->stamp;
    Py_ssize_t nm = 0;
    double shift_c = INFINITY, shift_b = INFINITY;
    for (Py_ssize_t i = 0; i < n; i++) {
        i64 s = ld_i(kst, i);
        double r = ld_d(krs, i);
        nm += t_off[s + 1] - t_off[s];
        if (r + cost_min[s] < shift_c) shift_c = r + cost_min[s];
        if (r + compl_min[s] < shift_b) shift_b = r + compl_min[s];
    }
    /* integer scratch: groups[nm], order[nm], tmp[nm], m_entry[nm], ends[nm + 1] */
    if (reserve((void **)&self->iscr, &self->icap, 5 * nm + 1, 8) < 0 ||
        reserve((void **)&self->dscr, &self->dcap, 3 * nm, 8) < 0)
        return -1;
    i64 *groups = self->iscr, *order = groups + nm, *tmp = order + nm, *m_entry = tmp + nm, *ends = m_entry + nm;
    double *m_base = self->dscr, *cost = m_base + nm, *bound = cost + nm;
    *x = (Expansion){.nm = nm, .groups = groups, .order = order, .m_entry = m_entry, .ends = ends, .m_base = m_base,
                     .cost = cost, .bound = bound};
    Py_ssize_t ng = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        i64 s = ld_i(kst, i);
        for (i64 k = t_off[s]; k < t_off[s + 1]; k++) {
            i64 g = t_group[k];
            if (group_mark[g] != stamp) {
                group_mark[g] = stamp;
                group_pos[g] = 0;
                groups[ng++] = g;
            }
            group_pos[g] += 1;
        }
    }
    sort_i64(groups, ng);
    i64 start = 0;
    for (Py_ssize_t u = 0; u < ng; u++) {
        ends[u] = start;
        i64 c = group_pos[groups[u]];
        group_pos[groups[u]] = start; /* now the group's next member position */
        start += c;
        group_cost[groups[u]] = 0.0;
        group_compl[groups[u]] = 0.0;
    }
    ends[ng] = start;
    for (Py_ssize_t i = 0; i < n; i++) {
        i64 s = ld_i(kst, i);
        double r = ld_d(krs, i);
        if (t_off[s] == t_off[s + 1]) continue;
        double fc = r + cost_min[s] < INFINITY ? exp(shift_c - (r + cost_min[s])) : 0.0;
        double fb = r + compl_min[s] < INFINITY ? exp(shift_b - (r + compl_min[s])) : 0.0;
        for (i64 k = t_off[s]; k < t_off[s + 1]; k++) {
            i64 g = t_group[k], p = group_pos[g];
            group_pos[g] = p + 1;
            m_base[p] = r;
            m_entry[p] = k;
            group_cost[g] += fc * cost_scaled[k];
            group_compl[g] += fb * compl_scaled[k];
        }
    }
    for (Py_ssize_t u = 0; u < ng; u++) {
        i64 g = groups[u];
        double tc = group_cost[g], tb = group_compl[g];
        if (tc >= 1e-250 && tb >= 1e-250) {
            cost[u] = shift_c - log(tc);
            bound[u] = shift_b - log(tb);
        } else { /* far below the shift (or unreachable): the group's own shift, in the log domain */
            cost[u] = members_logsum(m_base, m_entry, ends[u], ends[u + 1], t_cost);
            bound[u] = members_logsum(m_base, m_entry, ends[u], ends[u + 1], t_compl);
        }
    }
    argsort_stable(bound, order, tmp, ng);
    Py_ssize_t f = 0;
    while (f < ng && bound[order[f]] < INFINITY) f++;
    x->ng = ng;
    x->f = f;
    return 0;
}

/* The successor data of an expansion: ng, nm, ends[ng + 1], m_entry[nm], m_base[nm] (8 bytes each). */
static Py_ssize_t successor_data_size(const Expansion *x) { return 8 * (3 + x->ng + 2 * x->nm); }

static void successor_data(const Expansion *x, char *ps) {
    st_i(ps, 0, x->ng);
    st_i(ps, 1, x->nm);
    memcpy(ps + 16, x->ends, 8 * (size_t)(x->ng + 1));
    memcpy(ps + 8 * (3 + x->ng), x->m_entry, 8 * (size_t)x->nm);
    memcpy(ps + 8 * (3 + x->ng + x->nm), x->m_base, 8 * (size_t)x->nm);
}

/* expand(key, resid): the choices of the determinized state (key, resid) as typed arrays (bounds 'd',
 * labels 'q' (-1: the end), costs 'd', groups 'q') and its successor data (bytes). */
static PyObject *Expander_expand(Expander *self, PyObject *const *args, Py_ssize_t nargs) {
    Py_ssize_t n;
    Expansion x;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "expand(key, resid)");
        return NULL;
    }
    if (subset_args(self, args[0], args[1], &n) < 0 ||
        expand_core(self, PyBytes_AS_STRING(args[0]), PyBytes_AS_STRING(args[1]), n, &x) < 0)
        return NULL;
    const i64 *group_label = I(&self->t[GROUP_LABEL]);
    Py_ssize_t f = x.f;
    PyObject *ob = PyBytes_FromStringAndSize(NULL, 8 * f), *ol = PyBytes_FromStringAndSize(NULL, 8 * f);
    PyObject *oc = PyBytes_FromStringAndSize(NULL, 8 * f), *og = PyBytes_FromStringAndSize(NULL, 8 * f);
    PyObject *succ = PyBytes_FromStringAndSize(NULL, successor_data_size(&x));
    if (!ob || !ol || !oc || !og || !succ) {
        Py_XDECREF(ob); Py_XDECREF(ol); Py_XDECREF(oc); Py_XDECREF(og); Py_XDECREF(succ);
        return NULL;
    }
    char *pb = PyBytes_AS_STRING(ob), *pl = PyBytes_AS_STRING(ol), *pc = PyBytes_AS_STRING(oc);
    char *pg = PyBytes_AS_STRING(og);
    for (Py_ssize_t i = 0; i < f; i++) {
        st_d(pb, i, x.bound[x.order[i]]);
        st_i(pl, i, group_label[x.groups[x.order[i]]]);
        st_d(pc, i, x.cost[x.order[i]]);
        st_i(pg, i, x.order[i]);
    }
    successor_data(&x, PyBytes_AS_STRING(succ));
    PyObject *a = typed(code_d, ob), *b = typed(code_q, ol), *c = typed(code_d, oc), *d = typed(code_q, og);
    if (!a || !b || !c || !d) {
        Py_XDECREF(a); Py_XDECREF(b); Py_XDECREF(c); Py_XDECREF(d); Py_DECREF(succ);
        return NULL;
    }
    return Py_BuildValue("(NNNNN)", a, b, c, d, succ);
}

/* The successor data of expand, checked: its member range of group g, every member's closed entry valid. */
static int successor_range(Expander *self, const char *p, Py_ssize_t size, Py_ssize_t g, i64 *a, i64 *b,
                           const char **ends, const char **m_entry, const char **m_base) {
    if (size < 24) {
        PyErr_SetString(PyExc_ValueError, "successor data: inconsistent sizes");
        return -1;
    }
    i64 ng = ld_i(p, 0), nm = ld_i(p, 1), len = size / 8;
    if (ng < 0 || nm < 0 || ng > len || nm > len || size != 8 * (3 + ng + 2 * nm)) {
        PyErr_SetString(PyExc_ValueError, "successor data: inconsistent sizes");
        return -1;
    }
    if (g < 0 || g >= ng) {
        PyErr_Format(PyExc_ValueError, "group %zd is outside [0, %lld)", g, (long long)ng);
        return -1;
    }
    *ends = p + 16;
    *m_entry = p + 8 * (3 + ng);
    *m_base = p + 8 * (3 + ng + nm);
    *a = ld_i(*ends, g);
    *b = ld_i(*ends, g + 1);
    if (*a < 0 || *a > *b || *b > nm) {
        PyErr_SetString(PyExc_ValueError, "successor data: bad member offsets");
        return -1;
    }
    for (i64 q = *a; q < *b; q++) {
        i64 k = ld_i(*m_entry, q);
        if (k < 0 || k >= self->K) {
            PyErr_SetString(PyExc_ValueError, "successor data: closed entry out of range");
            return -1;
        }
    }
    return 0;
}

/* The states reached by the arcs of the group's members when their shares are far below the largest one:
 * each state's own shift, in the log domain; fills resid[0:nt] */
static void exact_shares(Expander *self, i64 a, i64 b, const char *m_entry, const char *m_base, const i64 *states,
                         Py_ssize_t nt, double *resid) {
    Py_buffer *t = self->t;
    const i64 *c_off = I(&t[C_OFF]), *c_entry = I(&t[C_ENTRY]), *arc_off = I(&t[ARC_OFF]), *arc_dst = I(&t[ARC_DST]);
    const double *c_base = D(&t[C_BASE]), *arc_cost = D(&t[ARC_COST]);
    double *acc = self->acc, *acc_min = self->acc_min;
    for (Py_ssize_t i = 0; i < nt; i++) {
        acc_min[states[i]] = INFINITY;
        acc[states[i]] = 0.0;
    }
    for (int rep = 0; rep < 2; rep++) /* the smallest cost reaching each state, then the sum relative to it */
        for (i64 p = a; p < b; p++) {
            i64 mc = ld_i(m_entry, p);
            double mr = ld_d(m_base, p);
            for (i64 j = c_off[mc]; j < c_off[mc + 1]; j++) {
                i64 k = c_entry[j];
                for (i64 q = arc_off[k]; q < arc_off[k + 1]; q++) {
                    i64 v = arc_dst[q];
                    double x = mr + c_base[j] + arc_cost[q];
                    if (rep == 0) {
                        if (x < acc_min[v]) acc_min[v] = x;
                    } else if (acc_min[v] < INFINITY) {
                        acc[v] += exp(acc_min[v] - x);
                    }
                }
            }
        }
    double m = INFINITY;
    for (Py_ssize_t i = 0; i < nt; i++) {
        i64 v = states[i];
        acc_min[v] = acc_min[v] < INFINITY ? acc_min[v] - log(acc[v]) : INFINITY;
        m = acc_min[v] < m ? acc_min[v] : m;
    }
    double tt = 0.0;
    for (Py_ssize_t i = 0; i < nt; i++)
        if (acc_min[states[i]] < INFINITY) tt += exp(m - acc_min[states[i]]);
    double total_cost = m - log(tt);
    for (Py_ssize_t i = 0; i < nt; i++) resid[i] = acc_min[states[i]] - total_cost;
}

/* The subset reached by choice group g of an expansion (its successor data: size bytes at data): the
 * destinations of the arcs of the group's members' closed entries, each with its share of the choice's
 * probability.  Returns how many states (in increasing order in self->iscr, their residual costs in
 * self->dscr), -1 on error. */
static Py_ssize_t successor_core(Expander *self, const char *data, Py_ssize_t size, Py_ssize_t g) {
    i64 a, b;
    const char *ends, *m_entry, *m_base;
    if (successor_range(self, data, size, g, &a, &b, &ends, &m_entry, &m_base) < 0) return -1;
    Py_buffer *t = self->t;
    const i64 *c_off = I(&t[C_OFF]), *c_entry = I(&t[C_ENTRY]), *arc_off = I(&t[ARC_OFF]), *arc_dst = I(&t[ARC_DST]);
    const double *c_base = D(&t[C_BASE]), *e_cost = D(&t[E_COST]), *arc_scaled = D(&t[ARC_SCALED]);
    i64 *mark = self->mark, *entry_mark = self->entry_mark, *entries = self->entries;
    double *acc = self->acc, *entry_weight = self->entry_weight;
    i64 stamp = ++self->stamp;
    double shift = INFINITY;
    for (i64 p = a; p < b; p++) {
        i64 mc = ld_i(m_entry, p);
        double mr = ld_d(m_base, p);
        for (i64 j = c_off[mc]; j < c_off[mc + 1]; j++) {
            double x = mr + c_base[j] + e_cost[c_entry[j]];
            if (x < shift) shift = x;
        }
    }
    Py_ssize_t ne = 0, n = 0;
    for (i64 p = a; p < b; p++) {
        i64 mc = ld_i(m_entry, p);
        double mr = ld_d(m_base, p);
        for (i64 j = c_off[mc]; j < c_off[mc + 1]; j++) {
            i64 k = c_entry[j];
            if (entry_mark[k] != stamp) {
                entry_mark[k] = stamp;
                entry_weight[k] = 0.0;
                entries[ne++] = k;
                n += arc_off[k + 1] - arc_off[k];
            }
            if (shift < INFINITY) entry_weight[k] += exp(shift - (mr + c_base[j] + e_cost[k]));
        }
    }
    if (reserve((void **)&self->iscr, &self->icap, n, 8) < 0 || reserve((void **)&self->dscr, &self->dcap, n, 8) < 0)
        return -1;
    i64 *touched = self->iscr;
    Py_ssize_t nt = 0;
    for (Py_ssize_t i = 0; i < ne; i++) {
        i64 k = entries[i];
        double f = entry_weight[k];
        for (i64 q = arc_off[k]; q < arc_off[k + 1]; q++) {
            i64 v = arc_dst[q];
            if (mark[v] != stamp) {
                mark[v] = stamp;
                acc[v] = 0.0;
                touched[nt++] = v;
            }
            acc[v] += f * arc_scaled[q];
        }
    }
    sort_i64(touched, nt);
    double total = 0.0, *resid = self->dscr;
    int exact = 0;
    for (Py_ssize_t i = 0; i < nt; i++) {
        if (!(acc[touched[i]] >= 1e-250)) exact = 1;
        total += acc[touched[i]];
    }
    if (!exact)
        for (Py_ssize_t i = 0; i < nt; i++) resid[i] = -log(acc[touched[i]] / total);
    else
        exact_shares(self, a, b, m_entry, m_base, touched, nt, resid);
    return nt;
}

/* The interning key (states, then residuals rounded to the resolution) and the residuals of the nt states
 * successor_core left in the scratch, as bytes. */
static int subset_bytes(Expander *self, Py_ssize_t nt, PyObject **key, PyObject **res) {
    *key = PyBytes_FromStringAndSize(NULL, 16 * nt);
    *res = PyBytes_FromStringAndSize(NULL, 8 * nt);
    if (!*key || !*res) {
        Py_CLEAR(*key);
        Py_CLEAR(*res);
        return -1;
    }
    char *pk = PyBytes_AS_STRING(*key), *pr = PyBytes_AS_STRING(*res);
    for (Py_ssize_t i = 0; i < nt; i++) {
        st_i(pk, i, self->iscr[i]);
        st_i(pk, nt + i, rint_i64(self->dscr[i] / self->resolution));
        st_d(pr, i, self->dscr[i]);
    }
    return 0;
}

/* successor(data, group) -> (key, resid) of the subset reached by that choice group. */
static PyObject *Expander_successor(Expander *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "successor(data, group)");
        return NULL;
    }
    if (expander_ready(self) < 0) return NULL;
    if (!PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "successor data: expected the bytes that expand returned");
        return NULL;
    }
    Py_ssize_t g = PyLong_AsSsize_t(args[1]);
    if (g == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t nt = successor_core(self, PyBytes_AS_STRING(args[0]), PyBytes_GET_SIZE(args[0]), g);
    PyObject *key, *res;
    if (nt < 0 || subset_bytes(self, nt, &key, &res) < 0) return NULL;
    return Py_BuildValue("(NN)", key, res);
}

/* ---- the lazy best-first search (what _fastsearch._best_first does over Python records) ----------- */

typedef struct { /* a determinized state of a lazy search */
    PyObject *key, *resid; /* the subset, until it is expanded */
    Py_ssize_t f;          /* its choices, -1 until it is expanded */
    double *bound, *cost;  /* one block: bound, cost, label, group, next (f each), the successor data */
    i64 *label, *group, *next;
    char *succ;
    Py_ssize_t succ_size;
} Rec;

typedef struct { double prio; i64 counter, rec, i; double g; i64 link; } Entry; /* choice i of rec after prefix link */

typedef struct {
    Rec *recs;
    Py_ssize_t n_recs, cap_recs;
    PyObject *ids; /* key -> state number */
    Entry *heap;
    Py_ssize_t n_heap, cap_heap;
    i64 *parent, *label, *depth; /* the prefix trie, node 0 the empty prefix */
    Py_ssize_t n_trie, cap_trie;
    i64 *found_link;
    double *found_cost;
    Py_ssize_t n_found, cap_found;
} Lazy;

static void lazy_free(Lazy *L) {
    for (Py_ssize_t j = 0; j < L->n_recs; j++) {
        Py_XDECREF(L->recs[j].key);
        Py_XDECREF(L->recs[j].resid);
        free(L->recs[j].bound);
    }
    free(L->recs); Py_XDECREF(L->ids); free(L->heap);
    free(L->parent); free(L->label); free(L->depth); free(L->found_link); free(L->found_cost);
}

/* grow an array of n items of size sz to hold need (contents kept) */
static int keep_grow(void **p, Py_ssize_t *cap, Py_ssize_t need, size_t sz) {
    if (need <= *cap) return 0;
    Py_ssize_t c = need > 2 * *cap ? need : 2 * *cap;
    void *q = realloc(*p, (size_t)c * sz);
    if (!q) { PyErr_NoMemory(); return -1; }
    *p = q;
    *cap = c;
    return 0;
}

/* the number of the determinized state (key, resid) in this search; -1 on error */
static i64 lazy_intern(Lazy *L, PyObject *key, PyObject *resid) {
    PyObject *id = PyDict_GetItemWithError(L->ids, key);
    if (id) return PyLong_AsLongLong(id);
    if (PyErr_Occurred() || keep_grow((void **)&L->recs, &L->cap_recs, L->n_recs + 1, sizeof(Rec)) < 0) return -1;
    i64 j = L->n_recs;
    id = PyLong_FromLongLong(j);
    if (!id || PyDict_SetItem(L->ids, key, id) < 0) {
        Py_XDECREF(id);
        return -1;
    }
    Py_DECREF(id);
    Rec *r = &L->recs[L->n_recs++];
    memset(r, 0, sizeof(Rec));
    r->f = -1;
    Py_INCREF(key);
    Py_INCREF(resid);
    r->key = key;
    r->resid = resid;
    return j;
}

/* the choice record of state j (expanded once) */
static int lazy_expand(Expander *self, Lazy *L, i64 j) {
    Rec *r = &L->recs[j];
    if (r->f >= 0) return 0;
    Expansion x;
    if (expand_core(self, PyBytes_AS_STRING(r->key), PyBytes_AS_STRING(r->resid), PyBytes_GET_SIZE(r->resid) / 8,
                    &x) < 0)
        return -1;
    Py_ssize_t f = x.f, size = successor_data_size(&x);
    char *block = malloc((size_t)(40 * f + size));
    if (!block) {
        PyErr_NoMemory();
        return -1;
    }
    const i64 *group_label = I(&self->t[GROUP_LABEL]);
    r->bound = (double *)block;
    r->cost = r->bound + f;
    r->label = (i64 *)(r->cost + f);
    r->group = r->label + f;
    r->next = r->group + f;
    r->succ = (char *)(r->next + f);
    r->succ_size = size;
    for (Py_ssize_t i = 0; i < f; i++) {
        r->bound[i] = x.bound[x.order[i]];
        r->cost[i] = x.cost[x.order[i]];
        r->label[i] = group_label[x.groups[x.order[i]]];
        r->group[i] = x.order[i];
        r->next[i] = -1;
    }
    successor_data(&x, r->succ);
    r->f = f;
    Py_CLEAR(r->key); /* (the dict keeps the key) */
    Py_CLEAR(r->resid);
    return 0;
}

/* the state reached by choice i of state j (interned) */
static i64 lazy_resolve(Expander *self, Lazy *L, i64 j, i64 i) {
    Rec *r = &L->recs[j];
    if (r->next[i] >= 0) return r->next[i];
    Py_ssize_t nt = successor_core(self, r->succ, r->succ_size, r->group[i]);
    PyObject *key, *res;
    if (nt < 0 || subset_bytes(self, nt, &key, &res) < 0) return -1;
    i64 nj = lazy_intern(L, key, res);
    Py_DECREF(key);
    Py_DECREF(res);
    if (nj >= 0) L->recs[j].next[i] = nj; /* (recs may have moved) */
    return nj;
}

static inline int entry_less(const Entry *a, const Entry *b) {
    return a->prio < b->prio || (a->prio == b->prio && a->counter < b->counter);
}

static int heap_push(Lazy *L, Entry e) {
    if (keep_grow((void **)&L->heap, &L->cap_heap, L->n_heap + 1, sizeof(Entry)) < 0) return -1;
    Py_ssize_t k = L->n_heap++;
    while (k > 0) {
        Py_ssize_t up = (k - 1) / 2;
        if (!entry_less(&e, &L->heap[up])) break;
        L->heap[k] = L->heap[up];
        k = up;
    }
    L->heap[k] = e;
    return 0;
}

static Entry heap_pop(Lazy *L) {
    Entry top = L->heap[0], last = L->heap[--L->n_heap];
    Py_ssize_t k = 0, n = L->n_heap;
    for (;;) {
        Py_ssize_t c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && entry_less(&L->heap[c + 1], &L->heap[c])) c++;
        if (!entry_less(&L->heap[c], &last)) break;
        L->heap[k] = L->heap[c];
        k = c;
    }
    if (n) L->heap[k] = last;
    return top;
}

static int trie_append(Lazy *L, i64 parent, i64 label) {
    Py_ssize_t cap = L->cap_trie;
    if (keep_grow((void **)&L->parent, &cap, L->n_trie + 1, 8) < 0) return -1;
    cap = L->cap_trie;
    if (keep_grow((void **)&L->label, &cap, L->n_trie + 1, 8) < 0) return -1;
    cap = L->cap_trie;
    if (keep_grow((void **)&L->depth, &cap, L->n_trie + 1, 8) < 0) return -1;
    L->cap_trie = cap;
    L->parent[L->n_trie] = parent;
    L->label[L->n_trie] = label;
    L->depth[L->n_trie] = parent >= 0 ? L->depth[parent] + 1 : 0;
    L->n_trie++;
    return 0;
}

static int found_append(Lazy *L, i64 link, double cost) {
    Py_ssize_t cap = L->cap_found;
    if (keep_grow((void **)&L->found_link, &cap, L->n_found + 1, 8) < 0) return -1;
    cap = L->cap_found;
    if (keep_grow((void **)&L->found_cost, &cap, L->n_found + 1, 8) < 0) return -1;
    L->cap_found = cap;
    L->found_link[L->n_found] = link;
    L->found_cost[L->n_found++] = cost;
    return 0;
}

/* The best-first loop of _fastsearch._best_first from state j0: 0 when done (n ends found, or every
 * one), 1 when it needed more than max_pops pops, -1 on error (check() raised, Ctrl-C, memory). */
static int lazy_loop(Expander *self, Lazy *L, i64 j0, i64 n, i64 max_pops, PyObject *check) {
    if (lazy_expand(self, L, j0) < 0) return -1;
    /* the entry to handle next when it is known without the heap: a new prefix's first choice that is
     * strictly better than the heap's top (the heap would return it at once) */
    Entry nxt = {0.0, 0, j0, 0, 0.0, 0};
    int have_nxt = L->recs[j0].f > 0;
    i64 counter = 0, pops = 0;
    for (;;) {
        Entry e;
        if (have_nxt) {
            e = nxt;
            have_nxt = 0;
        } else if (L->n_heap) {
            e = heap_pop(L);
        } else {
            break;
        }
        pops++;
        if (!(pops & 4095)) {
            if (PyErr_CheckSignals() < 0) return -1;
            PyObject *ok = PyObject_CallNoArgs(check);
            if (!ok) return -1;
            Py_DECREF(ok);
        }
        if (pops > max_pops) return 1;
        Rec *r = &L->recs[e.rec];
        if (e.i + 1 < r->f) {
            counter++;
            Entry next_choice = {e.g + r->bound[e.i + 1], counter, e.rec, e.i + 1, e.g, e.link};
            if (heap_push(L, next_choice) < 0) return -1;
        }
        i64 w = r->label[e.i];
        if (w < 0) {
            if (found_append(L, e.link, e.g + r->cost[e.i]) < 0) return -1;
            if (n >= 0 && L->n_found >= n) break;
            continue;
        }
        double gc = e.g + r->cost[e.i];
        i64 nj = lazy_resolve(self, L, e.rec, e.i);
        if (nj < 0 || lazy_expand(self, L, nj) < 0) return -1;
        Rec *q = &L->recs[nj];
        if (q->f > 0) {
            counter++;
            if (trie_append(L, e.link, w) < 0) return -1; /* the new prefix: this one extended by w */
            Entry first = {gc + q->bound[0], counter, nj, 0, gc, L->n_trie - 1};
            if (!L->n_heap || first.prio < L->heap[0].prio) {
                nxt = first;
                have_nxt = 1;
            } else if (heap_push(L, first) < 0) {
                return -1;
            }
        }
    }
    return 0;
}

/* lazy_search(key, resid, n, max_pops, check): the lazy best-first search from the determinized state
 * (key, resid) (n < 0: every sequence), calling check() every 4096 pops.  Returns (0, found links, found
 * costs, trie parent, trie label, trie depth) (bytes: int64 / float64), or (1, None...) when the search
 * needed more than max_pops pops. */
static PyObject *Expander_lazy_search(Expander *self, PyObject *args) {
    PyObject *key, *resid, *check, *result = NULL;
    long long n, max_pops;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "SSLLO:lazy_search", &key, &resid, &n, &max_pops, &check)) return NULL;
    if (!PyCallable_Check(check)) {
        PyErr_SetString(PyExc_TypeError, "check must be callable");
        return NULL;
    }
    if (subset_args(self, key, resid, &count) < 0) return NULL;
    Lazy L = {0};
    L.ids = PyDict_New();
    int status = -1;
    if (L.ids && trie_append(&L, -1, -1) == 0) {
        i64 j0 = lazy_intern(&L, key, resid);
        if (j0 >= 0) status = lazy_loop(self, &L, j0, n, max_pops, check);
    }
    if (status == 1) {
        result = Py_BuildValue("(iOOOOO)", 1, Py_None, Py_None, Py_None, Py_None, Py_None);
    } else if (status == 0) {
        result = Py_BuildValue("(iy#y#y#y#y#)", 0, (const char *)L.found_link, 8 * L.n_found,
                               (const char *)L.found_cost, 8 * L.n_found, (const char *)L.parent, 8 * L.n_trie,
                               (const char *)L.label, 8 * L.n_trie, (const char *)L.depth, 8 * L.n_trie);
    }
    lazy_free(&L);
    return result;
}

static PyMethodDef Expander_methods[] = {
    {"expand", (PyCFunction)(void (*)(void))Expander_expand, METH_FASTCALL,
     "expand(key, resid) -> (bounds, labels, costs, groups, successor data)"},
    {"successor", (PyCFunction)(void (*)(void))Expander_successor, METH_FASTCALL,
     "successor(data, group) -> (key, resid)"},
    {"lazy_search", (PyCFunction)Expander_lazy_search, METH_VARARGS,
     "lazy_search(key, resid, n, max_pops, check) -> (status, found links, found costs, parent, label, depth)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject ExpanderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lattice_tools._ext.search.Expander",
    .tp_basicsize = sizeof(Expander),
    .tp_dealloc = (destructor)Expander_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Expander(t_off, t_group, group_label, t_cost, cost_min, cost_scaled, t_compl, compl_min, "
              "compl_scaled, c_off, c_base, c_entry, arc_off, e_cost, arc_dst, arc_cost, arc_scaled, resolution): "
              "the expansion tables of a Determinizer",
    .tp_methods = Expander_methods,
    .tp_init = (initproc)Expander_init,
    .tp_new = PyType_GenericNew,
};

/* ---- WordTimes: the word-time Viterbi over a prefix trie ---------------------------------------- */

enum { W_T_OFF, W_T_LABEL, W_T_COST, W_T_ENTRY, W_ARC_OFF, W_ARC_DST, W_ARC_COST, W_ARC_ORDER, W_ARC_ID, W_EXIT,
       N_WTABLES };
static const char *wtable_names[N_WTABLES] = {"t_off", "t_label", "t_cost", "t_entry", "arc_off", "arc_dst",
                                              "arc_cost", "arc_order", "arc_id", "exit_cost"};
static const char wtable_kinds[N_WTABLES + 1] = "iidiiidiid";

typedef struct {
    PyObject_HEAD
    Py_buffer t[N_WTABLES];
    int held, ready; /* buffers held; 1 once __init__ succeeded */
    Py_ssize_t M, E;
    i64 base; /* marks of a call are base + child node: unique across calls */
    i64 *seen, *cell_arc, *cell_from, *touched, *entry_seen, *entry_from, *entry_list;
    double *cell_cost, *entry_cost;
} WordTimes;

static void WordTimes_dealloc(WordTimes *self) {
    for (int k = 0; k < self->held; k++) PyBuffer_Release(&self->t[k]);
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
        if (get_array(obj[k], &self->t[k], wtable_kinds[k], wtable_names[k]) < 0) return -1;
        self->held = k + 1;
    }
    Py_buffer *t = self->t;
    Py_ssize_t M = len8(&t[W_EXIT]), T = len8(&t[W_T_LABEL]), E = len8(&t[W_ARC_OFF]) - 1, A = len8(&t[W_ARC_DST]);
    if (E < 0) {
        PyErr_SetString(PyExc_ValueError, "arc_off: need at least one offset");
        return -1;
    }
    if (check_offsets(&t[W_T_OFF], M, T, "t_off") || check_len(&t[W_T_COST], T, "t_cost") ||
        check_len(&t[W_T_ENTRY], T, "t_entry") || check_range(&t[W_T_ENTRY], 0, E, "t_entry") ||
        check_offsets(&t[W_ARC_OFF], E, A, "arc_off") || check_range(&t[W_ARC_DST], 0, M, "arc_dst") ||
        check_len(&t[W_ARC_COST], A, "arc_cost") || check_len(&t[W_ARC_ORDER], A, "arc_order") ||
        check_len(&t[W_ARC_ID], A, "arc_id"))
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
    const i64 *t_off = I(&w->t[W_T_OFF]), *t_label = I(&w->t[W_T_LABEL]), *t_entry = I(&w->t[W_T_ENTRY]);
    const double *t_cost = D(&w->t[W_T_COST]);
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
    const i64 *arc_off = I(&w->t[W_ARC_OFF]), *arc_dst = I(&w->t[W_ARC_DST]), *arc_order = I(&w->t[W_ARC_ORDER]);
    const double *arc_cost = D(&w->t[W_ARC_COST]);
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
static const char trie_kinds[N_TRIE + 1] = "idiiiii";

static int check_trie(WordTimes *self, Py_buffer *a, Py_ssize_t num_seqs) {
    Py_ssize_t n_nodes = len8(&a[N_LABEL]);
    const i64 *parent = I(&a[N_PARENT]);
    if (check_range(&a[R_STATES], 0, self->M, "root_states") || check_len(&a[R_COSTS], len8(&a[R_STATES]), "root_costs") ||
        check_len(&a[N_PARENT], n_nodes, "parent") || check_offsets(&a[N_CH_OFF], n_nodes, len8(&a[N_CHILDREN]), "ch_off") ||
        check_range(&a[N_CHILDREN], 0, n_nodes, "children") || check_len(&a[N_END], n_nodes, "end_of_node") ||
        check_range(&a[N_END], -1, num_seqs, "end_of_node"))
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
    const double *root_costs = D(&a[R_COSTS]), *exit_cost = D(&self->t[W_EXIT]);
    const i64 *arc_id = I(&self->t[W_ARC_ID]);
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
    Py_buffer a[N_TRIE];
    int held = 0;
    PyObject *result = NULL, *bc = NULL, *bl = NULL;
    Columns col = {0};
    col.max_bytes = max_bytes;
    for (; held < N_TRIE; held++)
        if (get_array(obj[held], &a[held], trie_kinds[held], trie_names[held]) < 0) goto done;
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
    int status = viterbi(self, a, &col, best_cost, best_link, &n_links);
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
     "best_paths(root_states, root_costs, label, parent, ch_off, children, end_of_node, num_seqs, max_bytes) -> "
     "(status, best_cost, best_link, link_arc, link_parent)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject WordTimesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lattice_tools._ext.search.WordTimes",
    .tp_basicsize = sizeof(WordTimes),
    .tp_dealloc = (destructor)WordTimes_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "WordTimes(t_off, t_label, t_cost, t_entry, arc_off, arc_dst, arc_cost, arc_order, arc_id, exit_cost): "
              "the tables of the word-time Viterbi",
    .tp_methods = WordTimes_methods,
    .tp_init = (initproc)WordTimes_init,
    .tp_new = PyType_GenericNew,
};

/* ---- closed_exits -------------------------------------------------------------------------------- */

/* closed_exits(exit_cost, eps_off, eps_dst, eps_cost) -> bytes (float64): each state's exit cost through
 * its best epsilon path, min(exit, eps cost + closed exit of the destination); states topologically
 * numbered (an epsilon arc's destination after its source), epsilon arcs eps_off by source. */
static PyObject *closed_exits(PyObject *module, PyObject *args) {
    (void)module;
    PyObject *obj[4];
    if (!PyArg_ParseTuple(args, "OOOO:closed_exits", &obj[0], &obj[1], &obj[2], &obj[3])) return NULL;
    Py_buffer a[4];
    static const char *names[4] = {"exit_cost", "eps_off", "eps_dst", "eps_cost"};
    static const char kinds[5] = "diid";
    int held = 0;
    PyObject *out = NULL;
    for (; held < 4; held++)
        if (get_array(obj[held], &a[held], kinds[held], names[held]) < 0) goto done;
    Py_ssize_t m = len8(&a[0]);
    if (check_offsets(&a[1], m, len8(&a[2]), "eps_off") || check_len(&a[3], len8(&a[2]), "eps_cost")) goto done;
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

static PyMethodDef module_methods[] = {
    {"closed_exits", closed_exits, METH_VARARGS,
     "closed_exits(exit_cost, eps_off, eps_dst, eps_cost) -> bytes: each state's exit cost through its best "
     "epsilon path"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "lattice_tools._ext.search",
                                        "Compiled loops of the exact sequence search.", -1, module_methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_search(void) {
    if (PyType_Ready(&ExpanderType) < 0 || PyType_Ready(&WordTimesType) < 0) return NULL;
    PyObject *arr = PyImport_ImportModule("array");
    if (!arr) return NULL;
    array_type = PyObject_GetAttrString(arr, "array");
    Py_DECREF(arr);
    code_d = PyUnicode_FromString("d");
    code_q = PyUnicode_FromString("q");
    if (!array_type || !code_d || !code_q) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&ExpanderType);
    Py_INCREF(&WordTimesType);
    if (PyModule_AddObject(m, "Expander", (PyObject *)&ExpanderType) < 0 ||
        PyModule_AddObject(m, "WordTimes", (PyObject *)&WordTimesType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
