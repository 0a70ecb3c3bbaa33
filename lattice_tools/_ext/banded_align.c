/* The network alignment of lattice_tools.scoring.segment_free: sclite's recursion (the one of
 * lattice_tools.scoring.align, cell by cell as its align_reference) over a band of cells, with an optional
 * time constraint on which arcs may be paired.
 *
 * Cells are pairs (a, b) of a reference arc and a hypothesis arc (index 0 is each network's null head arc).
 * Row a holds only the columns lo[a]..hi[a]; a cell outside its row's band counts as unreachable (+inf).
 * With use_time, a substitution or correct pairing of (a, b) exists only when the arcs' time spans overlap
 * (r_t0[a] < h_t1[b] && r_t1[a] > h_t0[b]: meeteval's test, the collar already added to the spans).
 *
 *     D[a][b] = sub if sub <= del and sub <= ins else del if del < ins else ins     (sclite)
 *     D[a][b] = sub if sub <  del and sub <  ins else del if del < ins else ins     (strict: Levenshtein)
 *
 * each ``min`` over predecessors keeping its first minimum, in float32 as sclite computes, so ties break
 * as there.  Words are ids (-1 the null word): equal ids match, and so do the pairs the caller lists in
 * equal_pairs (sclite's fragments).  The band (chosen by the caller) decides only which cells exist; the test oracle is
 * align_reference (full band, no time constraint) and a full-band run with the time constraint.
 *
 * Memory: 9 bytes per cell of the band (the float32 value, the move, the ranks of the chosen predecessors).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SIGNAL_CHECK_CELLS 200000
#define NBUF 23
#define MAX_PREDS 65535

enum { MOVE_SUB = 0, MOVE_DEL = 1, MOVE_INS = 2 };

typedef struct {
    Py_ssize_t n;                    /* arcs + 1 (the head arc 0) */
    const int64_t *word, *pred_ptr, *pred, *order;
    const float *cost;               /* insertion (hypothesis) or deletion (reference) cost of each arc */
    const double *t0, *t1;
} Side;

typedef struct {
    const int64_t *lo, *hi, *rowoff;
} Band;

static inline float cell_value(const float *V, const Band *band, int64_t a, int64_t b)
{
    if (b < band->lo[a] || b > band->hi[a])
        return INFINITY;
    return V[band->rowoff[a] + (b - band->lo[a])];
}

/* Word ids are equal words, or a pair listed in equal_pairs (x * n_words + y, sorted: sclite's fragment
 * matches, -F). */
static inline int words_equal(int64_t x, int64_t y, const int64_t *equal_pairs, Py_ssize_t n_equal,
                              int64_t n_words)
{
    if (x == y)
        return 1;
    if (n_equal == 0)
        return 0;
    int64_t key = x * n_words + y;
    Py_ssize_t lo = 0, hi = n_equal;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (equal_pairs[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_equal && equal_pairs[lo] == key;
}

static int check_side(const Side *s, const char *name)
{
    Py_ssize_t n = s->n;
    if (s->pred_ptr[0] != 0 || s->pred_ptr[1] != 0) {
        PyErr_Format(PyExc_ValueError, "banded_align: the head arc of the %s network has predecessors", name);
        return -1;
    }
    for (Py_ssize_t k = 1; k < n; k++) {
        int64_t p0 = s->pred_ptr[k], p1 = s->pred_ptr[k + 1];
        if (p1 <= p0 || p1 - p0 > MAX_PREDS) {
            PyErr_Format(PyExc_ValueError, "banded_align: arc %zd of the %s network has %lld predecessors "
                         "(1 to %d supported)", k, name, (long long)(p1 - p0), MAX_PREDS);
            return -1;
        }
    }
    int64_t n_pred = s->pred_ptr[n];
    for (int64_t i = 0; i < n_pred; i++)
        if (s->pred[i] < 0 || s->pred[i] >= n) {
            PyErr_Format(PyExc_ValueError, "banded_align: %s predecessor out of range", name);
            return -1;
        }
    /* the order must be a permutation starting with the head arc in which every arc comes after its
     * predecessors (so no cell is read before it is computed) */
    int64_t *pos = malloc((size_t)n * sizeof *pos);
    if (!pos) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++)
        pos[k] = -1;
    int ok = s->order[0] == 0;
    for (Py_ssize_t k = 0; ok && k < n; k++) {
        int64_t a = s->order[k];
        if (a < 0 || a >= n || pos[a] >= 0)
            ok = 0;
        else
            pos[a] = k;
    }
    for (Py_ssize_t k = 1; ok && k < n; k++)
        for (int64_t i = s->pred_ptr[k]; i < s->pred_ptr[k + 1]; i++)
            if (pos[s->pred[i]] >= pos[k])
                ok = 0;
    free(pos);
    if (!ok) {
        PyErr_Format(PyExc_ValueError, "banded_align: the %s order is not a topological permutation of its arcs",
                     name);
        return -1;
    }
    return 0;
}

static PyObject *banded_align(PyObject *self, PyObject *args)
{
    PyObject *o[NBUF];
    int strict = 0, use_time = 0;
    long long n_words = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOOOOOOOOOOOOOOOOOOLii", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6],
                          &o[7], &o[8], &o[9], &o[10], &o[11], &o[12], &o[13], &o[14], &o[15], &o[16], &o[17],
                          &o[18], &o[19], &o[20], &o[21], &o[22], &n_words, &strict, &use_time))
        return NULL;
    static const char *names[NBUF] = {"r_word", "r_cost", "r_pred_ptr", "r_pred", "r_order", "r_t0", "r_t1",
                                      "h_word", "h_cost", "h_pred_ptr", "h_pred", "h_order", "h_t0", "h_t1",
                                      "lo", "hi", "r_final", "h_final", "weights", "path_a", "path_b", "rowoff",
                                      "equal_pairs"};
    static const char types[NBUF] = {'q', 'f', 'q', 'q', 'q', 'd', 'd', 'q', 'f', 'q', 'q', 'q', 'd', 'd',
                                     'q', 'q', 'q', 'q', 'f', 'q', 'q', 'q', 'q'};
    Py_buffer b[NBUF];
    memset(b, 0, sizeof b);
    PyObject *result = NULL;
    float *V = NULL;
    uint8_t *move = NULL;
    uint16_t *rank_a = NULL, *rank_b = NULL;
    for (int i = 0; i < NBUF; i++) {
        int flags = BUF_FLAT | ((i == 19 || i == 20 || i == 21) ? BUF_WRITABLE : 0);
        if (buffer_get(&b[i], o[i], "banded_align", names[i], types[i], flags, -1) < 0)
            goto done;
    }
    Py_ssize_t NA = buffer_items(&b[0]), NB = buffer_items(&b[7]);
    if (NA < 1 || NB < 1) {
        PyErr_SetString(PyExc_ValueError, "banded_align: each network needs its head arc");
        goto done;
    }
    const Py_ssize_t want[NBUF] = {NA, NA, NA + 1, -1, NA, NA, NA, NB, NB, NB + 1, -1, NB, NB, NB,
                                   NA, NA, -1, -1, 2, NA + NB, NA + NB, NA, -1};
    for (int i = 0; i < NBUF; i++)
        if (want[i] >= 0 && buffer_check_items(&b[i], "banded_align", names[i], want[i]) < 0)
            goto done;
    Side R = {NA, b[0].buf, b[2].buf, b[3].buf, b[4].buf, b[1].buf, b[5].buf, b[6].buf};
    Side H = {NB, b[7].buf, b[9].buf, b[10].buf, b[11].buf, b[8].buf, b[12].buf, b[13].buf};
    if (R.pred_ptr[NA] != buffer_items(&b[3]) || H.pred_ptr[NB] != buffer_items(&b[10])) {
        PyErr_SetString(PyExc_ValueError, "banded_align: predecessor lists do not match their offsets");
        goto done;
    }
    if (check_side(&R, "reference") < 0 || check_side(&H, "hypothesis") < 0)
        goto done;
    for (Py_ssize_t k = 0; k < NA + NB; k++) {
        int64_t w = k < NA ? R.word[k] : H.word[k - NA];
        if (w < -1 || w >= n_words) {
            PyErr_SetString(PyExc_ValueError, "banded_align: word id out of range");
            goto done;
        }
    }
    const int64_t *equal_pairs = b[22].buf;
    Py_ssize_t n_equal = buffer_items(&b[22]);
    for (Py_ssize_t i = 1; i < n_equal; i++)
        if (equal_pairs[i] <= equal_pairs[i - 1]) {
            PyErr_SetString(PyExc_ValueError, "banded_align: equal_pairs must be sorted and distinct");
            goto done;
        }
    const int64_t *lo = b[14].buf, *hi = b[15].buf, *r_final = b[16].buf, *h_final = b[17].buf;
    Py_ssize_t n_rf = buffer_items(&b[16]), n_hf = buffer_items(&b[17]);
    const float w_sub = ((const float *)b[18].buf)[0], w_nullsub = ((const float *)b[18].buf)[1];
    int64_t *path_a = b[19].buf, *path_b = b[20].buf, *rowoff = b[21].buf;
    int64_t cells = 0;
    for (Py_ssize_t a = 0; a < NA; a++) {
        if (lo[a] < 0 || hi[a] >= NB || hi[a] < lo[a] - 1) {
            PyErr_Format(PyExc_ValueError, "banded_align: band of row %zd out of range", a);
            goto done;
        }
        rowoff[a] = cells;
        cells += hi[a] - lo[a] + 1;
    }
    for (Py_ssize_t i = 0; i < n_rf; i++)
        if (r_final[i] < 0 || r_final[i] >= NA) {
            PyErr_SetString(PyExc_ValueError, "banded_align: r_final out of range");
            goto done;
        }
    for (Py_ssize_t i = 0; i < n_hf; i++)
        if (h_final[i] < 0 || h_final[i] >= NB) {
            PyErr_SetString(PyExc_ValueError, "banded_align: h_final out of range");
            goto done;
        }
    size_t nc = cells > 0 ? (size_t)cells : 1;
    V = malloc(nc * sizeof *V);
    move = malloc(nc);
    rank_a = malloc(nc * sizeof *rank_a);
    rank_b = malloc(nc * sizeof *rank_b);
    if (!V || !move || !rank_a || !rank_b) {
        PyErr_NoMemory();
        goto done;
    }
    for (int64_t c = 0; c < cells; c++)
        V[c] = INFINITY;
    Band band = {lo, hi, rowoff};
    int64_t work = 0;
    for (Py_ssize_t ia = 0; ia < NA; ia++) {
        int64_t a = R.order[ia];
        int64_t pa0 = R.pred_ptr[a], pa1 = R.pred_ptr[a + 1];
        float wdel = R.cost[a];
        for (Py_ssize_t ib = 0; ib < NB; ib++) {
            int64_t bb = H.order[ib];
            if (bb < lo[a] || bb > hi[a])
                continue;
            int64_t pb0 = H.pred_ptr[bb], pb1 = H.pred_ptr[bb + 1];
            int64_t cell = rowoff[a] + (bb - lo[a]);
            if (a == 0 && bb == 0) {
                V[cell] = 0.0f;
                move[cell] = MOVE_SUB;
                rank_a[cell] = rank_b[cell] = 0;
                continue;
            }
            float ins = INFINITY, dl = INFINITY, sb = INFINITY;
            int ib_best = -1, ia_best = -1, sa_best = -1, sb_best = -1;
            if (bb > 0) {
                for (int64_t k = pb0; k < pb1; k++) {
                    float v = cell_value(V, &band, a, H.pred[k]);
                    if (v < ins) {
                        ins = v;
                        ib_best = (int)(k - pb0);
                    }
                }
                ins = ins + H.cost[bb];
            }
            if (a > 0) {
                for (int64_t k = pa0; k < pa1; k++) {
                    float v = cell_value(V, &band, R.pred[k], bb);
                    if (v < dl) {
                        dl = v;
                        ia_best = (int)(k - pa0);
                    }
                }
                dl = dl + wdel;
            }
            if (a > 0 && bb > 0 && (!use_time || (R.t0[a] < H.t1[bb] && R.t1[a] > H.t0[bb]))) {
                for (int64_t k = pa0; k < pa1; k++)
                    for (int64_t m = pb0; m < pb1; m++) {
                        float v = cell_value(V, &band, R.pred[k], H.pred[m]);
                        if (v < sb) {
                            sb = v;
                            sa_best = (int)(k - pa0);
                            sb_best = (int)(m - pb0);
                        }
                    }
                int64_t x = R.word[a], y = H.word[bb];
                float w = (x < 0 && y < 0) ? w_nullsub
                          : (x >= 0 && y >= 0 && words_equal(x, y, equal_pairs, n_equal, n_words)) ? 0.0f : w_sub;
                sb = sb + w;
            }
            int take_sub = strict ? (sb < dl && sb < ins) : (sb <= dl && sb <= ins);
            if (sa_best < 0)
                take_sub = 0;
            if (take_sub) {
                V[cell] = sb;
                move[cell] = MOVE_SUB;
                rank_a[cell] = (uint16_t)sa_best;
                rank_b[cell] = (uint16_t)sb_best;
            } else if (ia_best >= 0 && (dl < ins || ib_best < 0)) {
                V[cell] = dl;
                move[cell] = MOVE_DEL;
                rank_a[cell] = (uint16_t)ia_best;
                rank_b[cell] = 0;
            } else if (ib_best >= 0) {
                V[cell] = ins;
                move[cell] = MOVE_INS;
                rank_a[cell] = 0;
                rank_b[cell] = (uint16_t)ib_best;
            } else {
                V[cell] = INFINITY;          /* unreachable within the band */
                move[cell] = 255;
            }
            if (++work >= SIGNAL_CHECK_CELLS) {
                work = 0;
                if (PyErr_CheckSignals() < 0)
                    goto done;
            }
        }
    }
    float best = 999999.9f;
    int64_t ea = -1, eb = -1;
    for (Py_ssize_t i = 0; i < n_rf; i++)
        for (Py_ssize_t j = 0; j < n_hf; j++) {
            float v = cell_value(V, &band, r_final[i], h_final[j]);
            if (best > v) {
                best = v;
                ea = r_final[i];
                eb = h_final[j];
            }
        }
    if (ea < 0) {
        PyErr_SetString(PyExc_ValueError, "banded_align: no final cell is reachable within the band");
        goto done;
    }
    Py_ssize_t n_path = 0, cap = NA + NB;
    int64_t a = ea, bb = eb;
    for (;;) {
        if (n_path >= cap) {
            PyErr_SetString(PyExc_RuntimeError, "banded_align: back-trace longer than the networks");
            goto done;
        }
        path_a[n_path] = a;
        path_b[n_path] = bb;
        n_path++;
        if (a == 0 && bb == 0)
            break;
        int64_t cell = rowoff[a] + (bb - lo[a]);
        switch (move[cell]) {
        case MOVE_SUB: {
            int64_t na = R.pred[R.pred_ptr[a] + rank_a[cell]], nb = H.pred[H.pred_ptr[bb] + rank_b[cell]];
            a = na;
            bb = nb;
            break;
        }
        case MOVE_DEL:
            a = R.pred[R.pred_ptr[a] + rank_a[cell]];
            break;
        case MOVE_INS:
            bb = H.pred[H.pred_ptr[bb] + rank_b[cell]];
            break;
        default:
            PyErr_SetString(PyExc_RuntimeError, "banded_align: back-trace reached an unreachable cell");
            goto done;
        }
        if (bb < lo[a] || bb > hi[a]) {
            PyErr_SetString(PyExc_RuntimeError, "banded_align: back-trace left the band");
            goto done;
        }
    }
    result = Py_BuildValue("dnL", (double)best, n_path, (long long)cells);
done:
    free(V);
    free(move);
    free(rank_a);
    free(rank_b);
    for (int i = 0; i < NBUF; i++)
        buffer_release(&b[i]);
    return result;
}

static PyMethodDef methods[] = {
    {"banded_align", banded_align, METH_VARARGS,
     "banded_align($module, r_word, r_cost, r_pred_ptr, r_pred, r_order, r_t0, r_t1, h_word, h_cost, h_pred_ptr, "
     "h_pred, h_order, h_t0, h_t1, lo, hi, r_final, h_final, weights, path_a, path_b, rowoff, equal_pairs, n_words, "
     "strict, use_time, /)\n--\n\n"
     "-> (cost, path length, cells)\n\n"
     "sclite's network alignment over the band lo..hi of each reference arc's row.  Per side (r_: reference, "
     "h_: hypothesis; arc 0 the null head arc): word (int64 ids, -1 the null word), cost (float32 deletion or "
     "insertion cost), pred_ptr/pred (int64: the predecessor arcs of arc a are pred[pred_ptr[a]:pred_ptr[a + 1]]), "
     "order (int64, a topological permutation of the arcs, 0 first), t0/t1 (float64 time spans, read with "
     "use_time), final (int64: the arcs that end the network).  lo, hi (int64, one per reference arc): the band "
     "of columns of each row; rowoff (int64, writable, one per reference arc) receives each row's first cell.  "
     "weights (float32): substitution and null-substitution costs; equal_pairs (int64, sorted x * n_words + y): "
     "word pairs that match besides equal ids; strict: Levenshtein ties instead of sclite's.  The back-trace "
     "(final cell first) is written to path_a/path_b (int64, writable, len(r_word) + len(h_word) items)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "banded_align", NULL, -1, methods};

PyMODINIT_FUNC PyInit_banded_align(void)
{
    return PyModule_Create(&module);
}
