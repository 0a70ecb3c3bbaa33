/* The lazy best-first search of one automaton in one call (Expander.lazy_search). */
#include "search.h"

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
    const i64 *group_label = OI(&self->t[GROUP_LABEL]);
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
PyObject *Expander_lazy_search(Expander *self, PyObject *args) {
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
