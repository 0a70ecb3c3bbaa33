/* The Expander type: a Determinizer's expansion tables, one determinized state's choices (expand) and the
 * subset a choice reaches (successor). */
#include "search.h"

static const char *table_names[N_TABLES] = {
    "t_off", "t_group", "group_label", "t_cost", "cost_min", "cost_scaled", "t_compl", "compl_min",
    "compl_scaled", "c_off", "c_base", "c_entry", "arc_off", "e_cost", "arc_dst", "arc_cost", "arc_scaled"};
static const char table_kinds[N_TABLES + 1] = "qqqddddddqdqqdqdd";

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

static void Expander_dealloc(Expander *self) {
    for (int k = 0; k < self->held; k++) owned_free(&self->t[k]);
    free(self->group_mark); free(self->group_pos); free(self->mark); free(self->entry_mark); free(self->entries);
    free(self->group_cost); free(self->group_compl); free(self->acc); free(self->acc_min);
    free(self->entry_weight); free(self->iscr); free(self->dscr);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Expander_validate(Expander *s) {
    const OwnedArray *t = s->t;
    Py_ssize_t M = t[T_OFF].items - 1, K = t[T_GROUP].items, P = t[C_ENTRY].items;
    Py_ssize_t E = t[ARC_OFF].items - 1, A = t[ARC_DST].items;
    if (M < 0 || E < 0) {
        PyErr_SetString(PyExc_ValueError, "t_off, arc_off: need at least one offset");
        return -1;
    }
    s->M = M; s->K = K; s->E = E; s->G = t[GROUP_LABEL].items;
    const char *fn = "Expander";
    if (check_offsets(OI(&t[T_OFF]), t[T_OFF].items, M, K, "t_off") || check_range(OI(&t[T_GROUP]), t[T_GROUP].items, 0, s->G, "t_group") ||
        owned_check_items(&t[T_COST], fn, "t_cost", K) || owned_check_items(&t[COST_SCALED], fn, "cost_scaled", K) ||
        owned_check_items(&t[T_COMPL], fn, "t_compl", K) || owned_check_items(&t[COMPL_SCALED], fn, "compl_scaled", K) ||
        owned_check_items(&t[COST_MIN], fn, "cost_min", M) || owned_check_items(&t[COMPL_MIN], fn, "compl_min", M) ||
        check_offsets(OI(&t[C_OFF]), t[C_OFF].items, K, P, "c_off") || owned_check_items(&t[C_BASE], fn, "c_base", P) ||
        check_range(OI(&t[C_ENTRY]), t[C_ENTRY].items, 0, E, "c_entry") || check_offsets(OI(&t[ARC_OFF]), t[ARC_OFF].items, E, A, "arc_off") ||
        owned_check_items(&t[E_COST], fn, "e_cost", E) || check_range(OI(&t[ARC_DST]), t[ARC_DST].items, 0, M, "arc_dst") ||
        owned_check_items(&t[ARC_COST], fn, "arc_cost", A) || owned_check_items(&t[ARC_SCALED], fn, "arc_scaled", A))
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
        if (owned_copy(&self->t[k], obj[k], "Expander", table_names[k], table_kinds[k], BUF_FLAT, -1) < 0)
            return -1;
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

int expander_ready(Expander *self) {
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

int subset_args(Expander *self, PyObject *key, PyObject *resid, Py_ssize_t *n) {
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


/* The choices of the determinized state (states kst, residuals krs: n of each, checked): per group (an
 * automaton and a word, or the end) of its members' closed entries, the transition's cost and the bound
 * of its completions; the groups with a finite bound sorted by bound (ties by group number). */
int expand_core(Expander *self, const char *kst, const char *krs, Py_ssize_t n, Expansion *x) {
    const OwnedArray *t = self->t;
    const i64 *t_off = OI(&t[T_OFF]), *t_group = OI(&t[T_GROUP]);
    const double *t_cost = OD(&t[T_COST]), *cost_min = OD(&t[COST_MIN]), *cost_scaled = OD(&t[COST_SCALED]);
    const double *t_compl = OD(&t[T_COMPL]), *compl_min = OD(&t[COMPL_MIN]), *compl_scaled = OD(&t[COMPL_SCALED]);
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
Py_ssize_t successor_data_size(const Expansion *x) { return 8 * (3 + x->ng + 2 * x->nm); }

void successor_data(const Expansion *x, char *ps) {
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
    const i64 *group_label = OI(&self->t[GROUP_LABEL]);
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
    const OwnedArray *t = self->t;
    const i64 *c_off = OI(&t[C_OFF]), *c_entry = OI(&t[C_ENTRY]), *arc_off = OI(&t[ARC_OFF]), *arc_dst = OI(&t[ARC_DST]);
    const double *c_base = OD(&t[C_BASE]), *arc_cost = OD(&t[ARC_COST]);
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
Py_ssize_t successor_core(Expander *self, const char *data, Py_ssize_t size, Py_ssize_t g) {
    i64 a, b;
    const char *ends, *m_entry, *m_base;
    if (successor_range(self, data, size, g, &a, &b, &ends, &m_entry, &m_base) < 0) return -1;
    const OwnedArray *t = self->t;
    const i64 *c_off = OI(&t[C_OFF]), *c_entry = OI(&t[C_ENTRY]), *arc_off = OI(&t[ARC_OFF]), *arc_dst = OI(&t[ARC_DST]);
    const double *c_base = OD(&t[C_BASE]), *e_cost = OD(&t[E_COST]), *arc_scaled = OD(&t[ARC_SCALED]);
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
int subset_bytes(Expander *self, Py_ssize_t nt, PyObject **key, PyObject **res) {
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


static PyMethodDef Expander_methods[] = {
    {"expand", (PyCFunction)(void (*)(void))Expander_expand, METH_FASTCALL,
     "expand($self, key, resid, /)\n--\n\n"
     "-> (bounds, labels, costs, groups, successor data)\n\n"
     "The choices of the determinized state key (bytes: n int64 states, then n int64 rounded residuals) with "
     "residual costs resid (bytes: n float64): per choice group with a finite bound, sorted by bound (ties by "
     "group), its bound and transition cost (array 'd'), word label (array 'q', -1 = the end) and group number "
     "(array 'q'); the successor data (bytes) for successor()."},
    {"successor", (PyCFunction)(void (*)(void))Expander_successor, METH_FASTCALL,
     "successor($self, data, group, /)\n--\n\n"
     "-> (key, resid)\n\n"
     "The determinized state reached by choice group `group` of an expansion (data: the successor data expand "
     "returned), as the bytes expand takes."},
    {"lazy_search", (PyCFunction)Expander_lazy_search, METH_VARARGS,
     "lazy_search($self, key, resid, n, max_pops, check, /)\n--\n\n"
     "-> (status, found links, found costs, parent, label, depth)\n\n"
     "The lazy best-first search of one automaton from the determinized state (key, resid): its n best "
     "sequences (n < 0: every one), calling check() every 4096 pops.  Status 0 with the sequences as trie nodes "
     "(found links, int64 bytes) and their costs (float64 bytes), the trie's parent, label and depth (int64 "
     "bytes, node 0 the empty prefix); status 1 (and Nones) when it needed more than max_pops pops."},
    {NULL, NULL, 0, NULL}};

PyTypeObject ExpanderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "lattice_tools._ext.search.Expander",
    .tp_basicsize = sizeof(Expander),
    .tp_dealloc = (destructor)Expander_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Expander(t_off, t_group, group_label, t_cost, cost_min, cost_scaled, t_compl, compl_min, "
              "compl_scaled, c_off, c_base, c_entry, arc_off, e_cost, arc_dst, arc_cost, arc_scaled, resolution, /)"
              "\n--\n\n"
              "The expansion tables of a Determinizer (lattice_tools.alternatives._determinizer), copied and "
              "checked once: per state (t_off, int64, M + 1 offsets) its closed entries with their group "
              "(t_group, int64 < len(group_label); group_label: int64 word label per group, -1 = the end), "
              "transition and completion costs (t_cost, t_compl float64; cost_min/compl_min per state and "
              "cost_scaled/compl_scaled per entry: row_scaling's shifts); per entry its parts (c_off, int64 offsets; "
              "c_base float64 cost, c_entry int64 closed entry < E); per closed entry (arc_off, int64, E + 1 "
              "offsets; e_cost float64) its arcs (arc_dst int64 < M, arc_cost and arc_scaled float64).  resolution: "
              "residual costs closer than this identify determinized states.  The arrays are copied: changing "
              "them afterwards does not change the object.",
    .tp_methods = Expander_methods,
    .tp_init = (initproc)Expander_init,
    .tp_new = PyType_GenericNew,
};
