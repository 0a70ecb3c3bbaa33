/* bounded_search: A* over log-determinized states builds the region that can hold the n best sequences;
 * exact best completions inside it; best-first search over word prefixes (nbest_lists.py describes
 * the rounds); when a budget stops it and ``anytime`` is set, the final pass over the region built so far,
 * its candidates and the bound on everything else (nbest_lists.py, "Anytime search"). */
#include "region.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Resident memory of the process in bytes (/proc/self/statm; -1 where it cannot be read). */
static i64 resident_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size, res;
    if (!f)
        return -1;
    int ok = fscanf(f, "%lld %lld", &size, &res) == 2;
    fclose(f);
    return ok ? (i64)res * (i64)sysconf(_SC_PAGESIZE) : -1;
}

/* Seconds on the monotonic clock (the time limit's). */
static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* How many expansions (step 1: also after the first; the candidates) / prefix pops (step 3) between two reads
 * of the clock and of the resident memory. */
#define CLOCK_EVERY_EXPANSIONS 64
#define CLOCK_EVERY_POPS 4096

/* The most prefixes the final pass of an anytime search pops (~100 bytes each): inside a region that holds
 * few ends, prefixes that reach the same states again multiply without listing anything. */
#define FINAL_POPS 1000000
/* The most candidates a final pass lists by diving when it lists every sequence (n < 0), and the most
 * candidate entries it keeps (~40 bytes each). */
#define MAX_DIVES 1000
#define MAX_CANDIDATES 4000000

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
    /* what the candidates of the final anytime pass need (see dive_candidates): the lattice, bounds, guide,
     * resolution, member limit and how many more to list */
    const Arcs *rows;
    const double *hb, *guide;
    double resolution;
    i64 dive_members, dives_left, dive_steps;
    /* resident memory past which step 1 stops (rss_search) and past which the final pass and the dives stop
     * (rss_final); INT64_MAX: no memory budget */
    i64 rss_search, rss_final;
    /* the candidate entries of the final pass (see dive_candidates) */
    FA c_f, c_g;
    IA c_j, c_link, c_heap;
    i64 n_c, c_size;
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
                  s->t_parent.p, s->t_label.p, s->f_link.p, s->c_f.p, s->c_g.p, s->c_j.p, s->c_link.p, s->c_heap.p};
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
    if (!ALLOC(sc->lab_cnt, num_labels + 1) || !ALLOC(sc->lab_fill, num_labels + 1) || !ALLOC(sc->dslot, m) ||
        !ALLOC(sc->e_mark, m) || !ALLOC(sc->alpha, m))
        return -1;
    memset(sc->lab_cnt, 0, (size_t)(num_labels + 1) * sizeof(i64));
    memset(sc->lab_fill, 0, (size_t)(num_labels + 1) * sizeof(i64));
    memset(sc->e_mark, 0, (size_t)m * sizeof(i64));
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

/* The candidates of the final anytime pass.  Every prefix the pass sets aside (it needs a state outside
 * the region) becomes a candidate entry, ordered by an *estimate* of its best completion: the transition
 * costs so far + the log sum of its state's members' residuals + ``guide`` (the lattice's best single
 * path cost from each state: an estimate, not a bound).  Popping an entry dives from it: at each state
 * (expanded on the way, outside the region) it follows the choice of smallest estimate and keeps the
 * other choices as entries; the end of the dive is listed, with its exact cost, as a candidate of
 * unproven rank (the entries set aside still bound the rest: see nbest_lists.py).  So the candidates
 * come roughly best first, each listed sequence distinct (the entries stand for disjoint sets of
 * sequences).  Stops at n listed (s->dives_left), when the store passes s->dive_members or the resident
 * memory s->rss_final (no more expansions), at ``deadline`` once something is listed, or when no entry is
 * left.  Entries: c_j (-1: a complete sequence), c_g (its cost so far;
 * of a complete one, its exact cost), c_link (its trie node), c_f (the estimate). */
static double completion_estimate(const Search *s, i64 nj)
{
    const Store *st = &s->st;
    i64 m0 = st->off.p[nj], m1 = st->off.p[nj + 1];
    double mn = INF, sum = 0.0;
    for (i64 q = m0; q < m1; q++) {
        double y = st->resid.p[q] + s->guide[st->state.p[q]];
        if (y < mn)
            mn = y;
    }
    if (!(mn < INF))
        return INF;
    for (i64 q = m0; q < m1; q++)
        sum += exp(mn - (st->resid.p[q] + s->guide[st->state.p[q]]));
    return mn - log(sum);
}

static int trie_add(Search *s, i64 link, i64 label)
{
    i64 t = s->n_trie;
    if (IGROW(s->t_parent, t + 1) < 0 || IGROW(s->t_label, t + 1) < 0)
        return -1;
    s->t_parent.p[t] = link;
    s->t_label.p[t] = label;
    s->n_trie = t + 1;
    return 0;
}

static int push_candidate(Search *s, double f, i64 j, double g, i64 link)
{
    i64 k = s->n_c;
    if (FGROW(s->c_f, k + 1) < 0 || FGROW(s->c_g, k + 1) < 0 || IGROW(s->c_j, k + 1) < 0 || IGROW(s->c_link, k + 1) < 0)
        return -1;
    s->c_f.p[k] = f;
    s->c_g.p[k] = g;
    s->c_j.p[k] = j;
    s->c_link.p[k] = link;
    if (heap_push(&s->c_heap, &s->c_size, s->c_f.p, k) < 0)
        return -1;
    s->n_c = k + 1;
    return 0;
}

static int list_found(Search *s, i64 link, double cost)
{
    if (IGROW(s->f_link, s->n_found + 1) < 0 || FGROW(s->f_cost, s->n_found + 1) < 0)
        return -1;
    s->f_link.p[s->n_found] = link;
    s->f_cost.p[s->n_found] = cost;
    s->n_found++;
    s->dives_left--;
    return 0;
}

static int dive_candidates(Search *s, i64 n, double deadline)
{
    Store *st = &s->st;
    while (s->c_size > 0 && s->dives_left > 0 && (n < 0 || s->n_found < n)) {
        if (deadline < INF && s->n_found > 0 && now_seconds() > deadline)
            return 0;
        i64 e = heap_pop(s->c_heap.p, &s->c_size, s->c_f.p);
        i64 j = s->c_j.p[e], link = s->c_link.p[e];
        double g = s->c_g.p[e];
        if (j < 0) {
            if (list_found(s, link, g) < 0)
                return -1;
            continue;
        }
        for (;;) {
            if (st->ch_n.p[j] < 0) {
                if (st->off.p[st->nds] > s->dive_members) {
                    s->dives_left = 0;
                    return 0;
                }
                if (expand(j, st, &s->sc, s->rows, s->hb, s->resolution) < 0 || BGROWZ(s->reg, st->nds) < 0)
                    return -1;
                if ((++s->dive_steps & (SIGNAL_EVERY - 1)) == 0 && PyErr_CheckSignals() < 0)
                    return -1;
                if ((s->dive_steps & (CLOCK_EVERY_EXPANSIONS - 1)) == 0 && s->rss_final < INT64_MAX &&
                    resident_bytes() > s->rss_final) {
                    s->dives_left = 0;
                    return 0;
                }
            }
            i64 lo = st->ch_lo.p[j], hi = lo + st->ch_n.p[j], best = -1;
            double bk = INF;
            for (i64 c = lo; c < hi; c++) { /* the end first, then label order: ties go to the earlier */
                i64 nj = st->ch_next.p[c];
                double k = st->ch_cost.p[c] + (nj >= 0 ? completion_estimate(s, nj) : 0.0);
                if (best < 0 || k < bk) {
                    best = c;
                    bk = k;
                }
            }
            if (best < 0) { /* (no completion: cannot happen for a state reached with a finite bound) */
                s->dives_left = 0;
                return 0;
            }
            if (s->n_c < MAX_CANDIDATES) { /* the other choices wait as entries */
                for (i64 c = lo; c < hi; c++) {
                    if (c == best)
                        continue;
                    i64 nj = st->ch_next.p[c];
                    double gc = g + st->ch_cost.p[c];
                    if (nj < 0) {
                        if (push_candidate(s, gc, -1, gc, link) < 0)
                            return -1;
                        continue;
                    }
                    double est = completion_estimate(s, nj);
                    if (!(est < INF))
                        continue;
                    if (trie_add(s, link, st->ch_lab.p[c]) < 0 || push_candidate(s, gc + est, nj, gc, s->n_trie - 1) < 0)
                        return -1;
                }
            }
            g += st->ch_cost.p[best];
            if (st->ch_next.p[best] < 0) {
                if (list_found(s, link, g) < 0)
                    return -1;
                break;
            }
            if (trie_add(s, link, st->ch_lab.p[best]) < 0)
                return -1;
            link = s->n_trie - 1;
            j = st->ch_next.p[best];
        }
    }
    return 0;
}

/* Best-first search over word prefixes with the exact keys: a heap entry is "choice r of state j after
 * prefix cost g"; popping it pushes choice r + 1 and the first choice of the successor.  Its key is a
 * lower bound on the cost of every sequence it stands for (choices r, r + 1, ... of j are ranked by their
 * keys, each the exact best completion inside the region or the bound of a successor outside it), and
 * the entries in the heap, with the sequences found, account for every sequence: so an end popped is
 * proven (nothing unfound costs less), and at any moment the smallest key bounds everything unfound.
 *
 * Sets *status and *outside (>= 0: the search needs that state, which is outside the region; then the
 * sequences found are dropped, unless ``set_aside``: then the entry is set aside (its key counts in
 * *lower) and the search goes on with the others).  *lower: a lower bound on the cost of every sequence
 * not found (INF when none is left).  The search stops after n sequences, after max_pops pops
 * (ST_TOO_MANY_POPS) or at ``deadline`` on the monotonic clock (ST_TIME_LIMIT).  The found sequences are
 * s->f_link/f_cost[:n_found] in order of cost, the trie s->t_parent/t_label[:n_trie].  -1 on error. */
static int rank_prefixes(Search *s, i64 n, i64 max_pops, int set_aside, double deadline, int *status, i64 *outside,
                         double *lower)
{
    const Store *st = &s->st;
    const i64 *ch_lo = st->ch_lo.p, *ch_n = st->ch_n.p, *ch_lab = st->ch_lab.p, *ch_next = st->ch_next.p;
    const double *ch_cost = st->ch_cost.p, *ex_key = s->ex_key.p;
    const i64 *ex_perm = s->ex_perm.p;
    const char *reg = s->reg.p;
    i64 n_p = 0, p_size = 0, pops = 0;
    double unresolved = INF;
    if (set_aside && max_pops > FINAL_POPS)
        max_pops = FINAL_POPS;
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
        if (0 <= n && n <= s->n_found)
            break;
        if (pops >= max_pops) {
            *status = ST_TOO_MANY_POPS;
            break;
        }
        if (deadline < INF && (pops & (CLOCK_EVERY_POPS - 1)) == 0 && pops && now_seconds() > deadline) {
            *status = ST_TIME_LIMIT;
            break;
        }
        if (set_aside && s->rss_final < INT64_MAX && (pops & (CLOCK_EVERY_POPS - 1)) == 0 && pops &&
            resident_bytes() > s->rss_final) {
            *status = ST_TOO_MANY_MEMBERS;
            break;
        }
        i64 e = heap_pop(s->p_heap.p, &p_size, s->p_f.p);
        pops++;
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
            continue;
        }
        if (!reg[nj]) {
            if (set_aside) {
                if (s->p_f.p[e] < unresolved)
                    unresolved = s->p_f.p[e];
                if (s->dives_left > 0 && s->n_c < MAX_CANDIDATES) { /* a candidate entry for the dives */
                    double gc = g + ch_cost[c], est = completion_estimate(s, nj);
                    if (est < INF && (trie_add(s, link, ch_lab[c]) < 0 ||
                                      push_candidate(s, gc + est, nj, gc, s->n_trie - 1) < 0))
                        return -1;
                }
                continue;
            }
            *outside = nj;
            s->n_found = 0;
            s->n_trie = 0;
            *lower = INF;
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
    double top = p_size > 0 ? s->p_f.p[s->p_heap.p[0]] : INF;
    *lower = top < unresolved ? top : unresolved;
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

/* Steps 2 and 3 over the current region: exact completions, then the prefix search (set_aside: see
 * rank_prefixes).  -1 on error. */
static int rank_region(Search *s, i64 *round_no, i64 n, i64 max_pops, int set_aside, double deadline, int *status,
                       i64 *outside, double *lower)
{
    Store *st = &s->st;
    *round_no += 1;
    if (IGROWZ(s->stamp, st->nds) < 0 || FGROW(s->best, st->nds) < 0 || FGROW(s->ex_key, st->n_ch) < 0 ||
        IGROW(s->ex_perm, st->n_ch) < 0)
        return -1;
    if (exact_completions(s, *round_no) < 0)
        return -1;
    return rank_prefixes(s, n, max_pops, set_aside, deadline, status, outside, lower);
}

/* The A* rounds (see nbest_lists.py).  Returns -1 on error (exception set), else the status; *lower: a
 * lower bound on the cost of every sequence not found (INF: none is left).
 *
 * ``anytime``: when a budget (max_states, max_members, max_pops, time_limit seconds) stops the search, the
 * prefix search still runs once over the region built so far, setting aside the prefixes that need a
 * state outside it: the sequences found are exact (their costs too) and *lower bounds the rest (the
 * status stays the budget's).  Otherwise a budget stop returns no sequence (except after max_pops: those
 * found before are proven). */
static int run_search(Search *s, const Arcs *rows, const double *hb, const double *guide, i64 n, i64 max_pops, i64 max_states,
                      i64 max_members, double margin, double resolution, int anytime, double time_limit,
                      i64 max_rss, double *lower)
{
    Store *st = &s->st;
    i64 n_a = 0, a_size = 0, n_reg = 0, round_no = 0, steps = 0;
    double deadline = time_limit < INF ? now_seconds() + time_limit : INF;
    /* an anytime search keeps a quarter of the members (and of the resident memory left) for its final pass */
    i64 search_members = anytime ? max_members - max_members / 4 : max_members;
    s->rows = rows;
    s->hb = hb;
    s->guide = guide;
    s->resolution = resolution;
    s->dive_members = max_members;
    s->dives_left = 0;
    s->rss_search = s->rss_final = INT64_MAX;
    i64 rss0 = max_rss >= 0 ? resident_bytes() : -1;
    if (rss0 >= 0) { /* an anytime search keeps a quarter of what is left for its final pass */
        i64 left = max_rss > rss0 ? max_rss - rss0 : 0;
        s->rss_search = anytime ? rss0 + left - left / 4 : max_rss;
        s->rss_final = rss0 + left - left / 10;
    }
    *lower = INF;
    if (search_init(s, rows->m, rows->num_labels) < 0 || push_astar(s, &n_a, &a_size, 0.0, 0.0, 0) < 0 ||
        BGROWZ(s->reg, 1024) < 0)
        return -1;
    int has_thr = n < 0;
    double thr = INF;
    int stop = ST_OK;
    for (;;) {
        /* 1. grow the region: every state with g + bound <= thr, each at its cheapest prefix cost */
        while (a_size > 0 && !(has_thr && s->a_f.p[s->a_heap.p[0]] > thr)) {
            if ((++steps & (SIGNAL_EVERY - 1)) == 0 && PyErr_CheckSignals() < 0)
                return -1;
            if (deadline < INF && (steps == 2 || (steps & (CLOCK_EVERY_EXPANSIONS - 1)) == 0) &&
                now_seconds() > deadline) {
                stop = ST_TIME_LIMIT;
                break;
            }
            i64 top = s->a_heap.p[0];
            i64 j = s->a_j.p[top];
            if (j >= 0 && !s->reg.p[j] && n_reg >= max_states) {
                stop = ST_TOO_MANY_STATES;
                break;
            }
            i64 e = heap_pop(s->a_heap.p, &a_size, s->a_f.p);
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
            n_reg++;
            double g = s->a_g.p[e];
            if (st->ch_n.p[j] < 0) {
                if (expand(j, st, &s->sc, rows, hb, resolution) < 0)
                    return -1;
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
            if (st->off.p[st->nds] > search_members ||
                (s->rss_search < INT64_MAX && (n_reg & (CLOCK_EVERY_EXPANSIONS - 1)) == 0 &&
                 resident_bytes() > s->rss_search)) {
                stop = ST_TOO_MANY_MEMBERS;
                break;
            }
        }
        if (stop != ST_OK) {
            if (!anytime)
                return stop;
            if (!s->reg.p[0]) { /* nothing expanded: only the start's bound is known */
                s->n_found = s->n_trie = 0;
                *lower = hb[0];
                return stop;
            }
            /* the final pass and its candidates may take a quarter of the time limit more (at least one
             * candidate is completed, so that something is listed) */
            double last = deadline == INF ? INF : deadline + 0.25 * time_limit;
            int status;
            i64 outside;
            s->dives_left = n >= 0 ? n : MAX_DIVES;
            if (rank_region(s, &round_no, n, max_pops, 1, last, &status, &outside, lower) < 0 ||
                dive_candidates(s, n, last) < 0)
                return -1;
            return stop;
        }
        if (!has_thr) /* no end reachable */
            return ST_OK;
        /* 2. exact best completions inside the region, 3. best-first over word prefixes with the exact bound */
        int status;
        i64 outside;
        if (rank_region(s, &round_no, n, max_pops, 0, deadline, &status, &outside, lower) < 0)
            return -1;
        if (outside < 0) {
            if (status == ST_TIME_LIMIT && !anytime)
                s->n_found = s->n_trie = 0;
            return status;
        }
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

PyObject *py_bounded_search(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t m, num_labels;
    long long n, max_pops, max_states, max_members, max_bytes = -1;
    double margin, resolution, time_limit = INF;
    int anytime = 0;
    long long max_rss = -1;
    PyObject *o_src, *o_dst, *o_dlab, *o_cost, *o_final, *o_hb, *o_guide = NULL, *o_time = NULL;
    if (!PyArg_ParseTuple(args, "nOOOOOOnLLLLdd|pOOLL", &m, &o_src, &o_dst, &o_dlab, &o_cost, &o_final, &o_hb,
                          &num_labels, &n, &max_pops, &max_states, &max_members, &margin, &resolution, &anytime,
                          &o_time, &o_guide, &max_rss, &max_bytes))
        return NULL;
    if (o_time && o_time != Py_None) { /* seconds; None: no limit */
        time_limit = PyFloat_AsDouble(o_time);
        if (time_limit == -1.0 && PyErr_Occurred())
            return NULL;
    }
    if (!(resolution > 0.0) || !(margin >= 0.0) || !(time_limit > 0.0))
        return PyErr_Format(PyExc_ValueError, "nbest: resolution, time_limit must be > 0 and margin >= 0 (got %g, %g, "
                            "%g)", resolution, time_limit, margin);
    Views vs = {.n = 0, .fn = "bounded_search"};
    Arcs rows;
    Search s;
    memset(&s, 0, sizeof(s));
    PyObject *result = NULL;
    budget_begin(max_bytes);
    if (get_arcs(&vs, &rows, m, o_src, o_dst, o_dlab, o_cost, o_final, num_labels) < 0)
        goto done;
    const double *hb = view(&vs, o_hb, "hb", K_F64, m, NULL);
    if (!hb)
        goto done;
    const double *guide = o_guide && o_guide != Py_None ? view(&vs, o_guide, "guide", K_F64, m, NULL) : hb;
    if (!guide)
        goto done;
    double lower;
    int status = run_search(&s, &rows, hb, guide, n, max_pops, max_states, max_members, margin, resolution, anytime,
                            time_limit, (i64)max_rss, &lower);
    if (status < 0 && budget_exceeded()) { /* the byte budget, not the machine: a status, not an exception */
        PyErr_Clear();
        status = ST_TOO_MANY_BYTES;
        lower = -INF;
    }
    if (status < 0)
        goto done;
    i64 nf = s.n_found, nt = s.n_trie;
    if ((!anytime && status != ST_OK && status != ST_TOO_MANY_POPS) || status == ST_TOO_MANY_BYTES)
        nf = nt = 0;   /* (an allocation refused mid-step leaves no list worth returning) */
    if (budget_take(16 * (nf + nt)) < 0) { /* the outputs are copied while the search still holds its arrays */
        PyErr_Clear();
        status = ST_TOO_MANY_BYTES;
        nf = nt = 0;
    }
    result = Py_BuildValue("(iNNNNd)", status, out_array(s.f_link.p, nf, 8), out_array(s.f_cost.p, nf, 8),
                           out_array(s.t_parent.p, nt, 8), out_array(s.t_label.p, nt, 8), lower);
done:
    views_release(&vs);
    search_free(&s);
    free(rows.off);
    budget_begin(-1);
    return result;
}
