/* The lattice of one N-best list without new paths (lattice_tools.alternatives.nbest_merge, join="paths"):
 * the entries in a prefix tree, its weights pushed to the front, then the states with the same weighted
 * future merged from the leaves up.  The loops of the Python transcription kept as the differential
 * oracle in tests/_reference/nbest_paths_lattice.py, in the same order and with the same arithmetic, so
 * the arcs and costs are the same bits.
 *
 * Tree.  Entries are inserted in the given order (most probable first).  An entry's tokens are its words
 * with, when the list is timed, an epsilon token over each gap before a word (from frame 0).  A token
 * follows an existing child of its node, the first in insertion order, when the word agrees and the child
 * is untimed, or the two spans overlap, or they are equal (zero-length spans); otherwise a new child is
 * added, and a timed one starts at the frame at which its parent is reached (a path reaches each state
 * at one frame).  mass[v] sums the probabilities of the entries through v, end[v] of those ending there.
 *
 * Merge.  For v from the last node to the root: its signature is (final cost, its arcs sorted as the
 * tuples (word, t0, t1, cost, class of target), the frame at which it is reached), with arc cost
 * log mass[v] - log mass[child] and final cost log mass[v] - log end[v] (inf when no entry ends there);
 * nodes with equal signatures are one state, numbered in order of first appearance.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int64_t word, t0, t1;
    double cost;
    int64_t target;
} Arc;

typedef struct {
    int64_t *first_child, *last_child, *next_sibling, *word, *t0, *t1, *time;
    double *mass, *end;
    Py_ssize_t n, cap;
} Tree;

static void tree_free(Tree *t) {
    free(t->first_child), free(t->last_child), free(t->next_sibling), free(t->word), free(t->t0), free(t->t1);
    free(t->time), free(t->mass), free(t->end);
}

/* a new node (the root when the tree is empty), or -1 on allocation failure (the tree is left as it was) */
static int64_t tree_add(Tree *t, int64_t word, int64_t t0, int64_t t1, int64_t time) {
    if (t->n == t->cap) {
        Py_ssize_t cap = t->cap ? 2 * t->cap : 1024;
        void *p;
#define GROW(field)                                                        \
    if (!(p = realloc(t->field, (size_t)cap * sizeof *t->field))) return -1; \
    t->field = p;
        GROW(first_child) GROW(last_child) GROW(next_sibling) GROW(word) GROW(t0) GROW(t1) GROW(time) GROW(mass)
        GROW(end)
#undef GROW
        t->cap = cap;
    }
    int64_t v = t->n++;
    t->first_child[v] = t->last_child[v] = t->next_sibling[v] = -1;
    t->word[v] = word, t->t0[v] = t0, t->t1[v] = t1, t->time[v] = time;
    t->mass[v] = 0.0, t->end[v] = 0.0;
    return v;
}

/* the child of `node` that the token (word, a, b) follows, else a new one; -1 on allocation failure */
static int64_t tree_step(Tree *t, int64_t node, int64_t word, int64_t a, int64_t b) {
    for (int64_t c = t->first_child[node]; c >= 0; c = t->next_sibling[c]) {
        int64_t ct0 = t->t0[c], ct1 = t->t1[c];
        if (t->word[c] == word && (ct0 < 0 || (a < ct1 && ct0 < b) || (ct0 == a && ct1 == b))) return c;
    }
    if (a >= 0) { /* a new arc starts where its source is reached */
        int64_t from = t->time[node];
        a = from;
        b = b > from ? b : from;
    }
    int64_t c = tree_add(t, word, a, b, b >= 0 ? b : 0);
    if (c < 0) return -1;
    if (t->last_child[node] < 0)
        t->first_child[node] = c;
    else
        t->next_sibling[t->last_child[node]] = c;
    t->last_child[node] = c;
    return c;
}

static int arc_cmp(const void *pa, const void *pb) {
    const Arc *x = pa, *y = pb;
    if (x->word != y->word) return x->word < y->word ? -1 : 1;
    if (x->t0 != y->t0) return x->t0 < y->t0 ? -1 : 1;
    if (x->t1 != y->t1) return x->t1 < y->t1 ? -1 : 1;
    if (x->cost != y->cost) return x->cost < y->cost ? -1 : 1;
    if (x->target != y->target) return x->target < y->target ? -1 : 1;
    return 0;
}

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static uint64_t double_bits(double x) {
    uint64_t u;
    x += 0.0; /* -0.0 == 0.0: one hash */
    memcpy(&u, &x, sizeof u);
    return u;
}

static const char MERGE_DOC[] =
    "paths_lattice(word, f0, f1, offsets, prob, timed) -> (src, dst, word, t0, t1, cost, final, start)\n\n"
    "The prefix-tree-and-merge lattice of one N-best list (module comment).  Entry e's words are\n"
    "word[offsets[e]:offsets[e+1]] (int64 ids > 0) spanning frames f0..f1 (int64; read only when timed),\n"
    "prob[e] its normalized probability.  Returns the arcs as bytes of int64 (src, dst, word, t0, t1) and\n"
    "float64 (cost), the final costs per state (float64 bytes) and the start state.";

static PyObject *paths_lattice(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *objs[5];
    int timed;
    if (!PyArg_ParseTuple(args, "OOOOOp", &objs[0], &objs[1], &objs[2], &objs[3], &objs[4], &timed)) return NULL;
    Py_buffer b[5];
    const char *names[5] = {"word", "f0", "f1", "offsets", "prob"};
    int got = 0;
    for (; got < 5; got++) {
        Py_ssize_t len = got == 0 || got == 3 ? -1 : got < 3 ? buffer_items(&b[0]) : buffer_items(&b[3]) - 1;
        if (buffer_get(&b[got], objs[got], "paths_lattice", names[got], got == 4 ? 'd' : 'q', BUF_FLAT, len)) break;
    }
    PyObject *res = NULL;
    Tree t = {0};
    Arc *arcs = NULL;
    int64_t *cls = NULL, *cls_node = NULL, *cls_first = NULL, *table = NULL;
    double *cls_final = NULL, *log_mass = NULL;
    if (got < 5) goto done;
    const int64_t *word = b[0].buf, *f0 = b[1].buf, *f1 = b[2].buf, *off = b[3].buf;
    const double *prob = b[4].buf;
    Py_ssize_t n_words = buffer_items(&b[0]), n_entries = buffer_items(&b[3]) - 1;
    if (n_entries < 0 || off[0] != 0 || off[n_entries] != n_words) {
        PyErr_SetString(PyExc_ValueError, "paths_lattice: offsets must run from 0 to len(word)");
        goto done;
    }
    for (Py_ssize_t e = 0; e < n_entries; e++)
        if (off[e + 1] < off[e]) {
            PyErr_SetString(PyExc_ValueError, "paths_lattice: offsets must not decrease");
            goto done;
        }
    if (tree_add(&t, 0, -1, -1, 0) < 0) goto nomem;
    for (Py_ssize_t e = 0; e < n_entries; e++) {
        double p = prob[e];
        int64_t node = 0, at = 0;
        t.mass[0] += p;
        for (int64_t i = off[e]; i < off[e + 1]; i++) {
            int64_t a = timed ? f0[i] : -1, bb = timed ? f1[i] : -1;
            if (timed && a > at) { /* the gap before the word */
                if ((node = tree_step(&t, node, 0, at, a)) < 0) goto nomem;
                t.mass[node] += p;
            }
            if ((node = tree_step(&t, node, word[i], a, bb)) < 0) goto nomem;
            t.mass[node] += p;
            if (timed && bb > at) at = bb;
        }
        t.end[node] += p;
    }
    Py_ssize_t n = t.n;
    log_mass = malloc((size_t)n * sizeof *log_mass);
    cls = malloc((size_t)n * sizeof *cls);
    cls_node = malloc((size_t)n * sizeof *cls_node);   /* per class: its first node */
    cls_first = malloc(((size_t)n + 1) * sizeof *cls_first); /* per class: its arcs in `arcs` */
    cls_final = malloc((size_t)n * sizeof *cls_final);
    arcs = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *arcs); /* a tree has n - 1 arcs; classes hold fewer */
    Py_ssize_t slots = 16;
    while (slots < 2 * n) slots *= 2;
    table = malloc((size_t)slots * sizeof *table);
    if (!log_mass || !cls || !cls_node || !cls_first || !cls_final || !arcs || !table) goto nomem;
    for (Py_ssize_t v = 0; v < n; v++) log_mass[v] = log(t.mass[v]);
    for (Py_ssize_t s = 0; s < slots; s++) table[s] = -1;
    Py_ssize_t n_cls = 0, n_arcs = 0;
    cls_first[0] = 0;
    for (Py_ssize_t v = n - 1; v >= 0; v--) {
        /* the candidate's arcs go after the classes' arcs; kept only if it is a new class */
        Arc *mine = arcs + n_arcs;
        Py_ssize_t k = 0;
        double lv = log_mass[v];
        for (int64_t c = t.first_child[v]; c >= 0; c = t.next_sibling[c], k++) {
            mine[k].word = t.word[c], mine[k].t0 = t.t0[c], mine[k].t1 = t.t1[c];
            mine[k].cost = lv - log_mass[c];
            mine[k].target = cls[c];
        }
        if (k > 1) qsort(mine, (size_t)k, sizeof *mine, arc_cmp);
        double final = t.end[v] > 0 ? lv - log(t.end[v]) : INFINITY;
        uint64_t h = mix(mix(double_bits(final), (uint64_t)t.time[v]), (uint64_t)k);
        for (Py_ssize_t i = 0; i < k; i++) {
            h = mix(mix(mix(h, (uint64_t)mine[i].word), (uint64_t)mine[i].t0), (uint64_t)mine[i].t1);
            h = mix(mix(h, double_bits(mine[i].cost)), (uint64_t)mine[i].target);
        }
        Py_ssize_t s = (Py_ssize_t)(h & (uint64_t)(slots - 1));
        int64_t found = -1;
        for (; table[s] >= 0; s = (s + 1) & (slots - 1)) {
            int64_t c = table[s];
            Py_ssize_t ck = cls_first[c + 1] - cls_first[c];
            if (ck != k || cls_final[c] != final || t.time[cls_node[c]] != t.time[v]) continue;
            const Arc *theirs = arcs + cls_first[c];
            Py_ssize_t i = 0;
            for (; i < k; i++)
                if (theirs[i].word != mine[i].word || theirs[i].t0 != mine[i].t0 || theirs[i].t1 != mine[i].t1 ||
                    theirs[i].cost != mine[i].cost || theirs[i].target != mine[i].target)
                    break;
            if (i == k) {
                found = c;
                break;
            }
        }
        if (found < 0) {
            found = n_cls++;
            table[s] = found;
            cls_node[found] = v;
            cls_final[found] = final;
            n_arcs += k;
            cls_first[found + 1] = n_arcs;
        }
        cls[v] = found;
    }
    PyObject *out[7] = {NULL};
    for (int i = 0; i < 5; i++) out[i] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_arcs * 8));
    out[5] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_arcs * 8));
    out[6] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(n_cls * 8));
    int ok = 1;
    for (int i = 0; i < 7; i++) ok = ok && out[i];
    if (ok) {
        int64_t *src = (int64_t *)PyBytes_AS_STRING(out[0]), *dst = (int64_t *)PyBytes_AS_STRING(out[1]);
        int64_t *wd = (int64_t *)PyBytes_AS_STRING(out[2]), *t0 = (int64_t *)PyBytes_AS_STRING(out[3]);
        int64_t *t1 = (int64_t *)PyBytes_AS_STRING(out[4]);
        double *cost = (double *)PyBytes_AS_STRING(out[5]), *fin = (double *)PyBytes_AS_STRING(out[6]);
        for (Py_ssize_t c = 0; c < n_cls; c++) {
            fin[c] = cls_final[c];
            for (int64_t i = cls_first[c]; i < cls_first[c + 1]; i++) {
                src[i] = c, dst[i] = arcs[i].target, wd[i] = arcs[i].word, t0[i] = arcs[i].t0, t1[i] = arcs[i].t1;
                cost[i] = arcs[i].cost;
            }
        }
        res = Py_BuildValue("(NNNNNNNL)", out[0], out[1], out[2], out[3], out[4], out[5], out[6],
                            (long long)cls[0]);
    } else {
        for (int i = 0; i < 7; i++) Py_XDECREF(out[i]);
        PyErr_NoMemory();
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    tree_free(&t);
    free(arcs), free(cls), free(cls_node), free(cls_first), free(cls_final), free(log_mass), free(table);
    for (int i = 0; i < got; i++) buffer_release(&b[i]);
    return res;
}

static PyMethodDef methods[] = {
    {"paths_lattice", paths_lattice, METH_VARARGS, MERGE_DOC},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "nbest_tree",
    "The lattice of an N-best list without new paths (lattice_tools.alternatives.nbest_merge).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_nbest_tree(void) { return PyModule_Create(&module); }
