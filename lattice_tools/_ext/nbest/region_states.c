/* The determinized states of the region search (Store, region.h) and the expansion of one of them:
 * gather the word arcs its members reach, reduce them per (label, destination) and per label, and
 * intern the successors. */
#include "region.h"

/* Reduce the gathered entries (label, destination, cost) by log sum per pair, pairs grouped by label in
 * increasing order and by destination inside a label (a counting sort by label, a slot table by
 * destination).  Each pair sums its entries in gather order.  Returns the number of pairs; *ng the
 * number of label groups (pairs g_lo[g]:g_hi[g]). */
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
    i64 *t;
    if (!ALLOC(t, size))
        return -1;
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
    budget_give(st->table_size * (i64)sizeof(i64));
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
int expand(i64 j, Store *st, Scratch *sc, const Arcs *g, const double *hb, double resolution)
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
