/* The MBR / confusion-network recursion of lattice_tools.alternatives.sausages (Kaldi's
 * MinimumBayesRisk, lat/sausages.cc: EditDistance + AccStats, Figures 4-6 of Xu et al. 2011).
 *
 * acc_stats() runs Kaldi's loops in Kaldi's order of states, arcs and positions, with the same
 * double-precision operations, so that the sums come out as Kaldi's do (not merely close): built
 * with -ffp-contract=off and without fast-math, a fused or reordered addition would change them.
 * What differs from Kaldi is only what is kept in memory: the forward pass stores the move it
 * chooses at every (arc, position) in a byte, so the backward pass reads it instead of recomputing
 * the three edit costs and their minimum (Kaldi computes them twice); the statistics of a
 * (position, word) -- gamma, tau_b, tau_e -- are stored side by side; Kaldi's per-arc
 * beta_dash_arc vector is a scalar carry.
 *
 * Arrays cross as buffers (no numpy headers): every argument's type and size is checked on entry,
 * every index is checked before the loops, so no input can make the loops read or write out of
 * bounds.  The test oracle is the literal transcription of Kaldi in tests/_reference/mbr.py.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "buffers.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Work (inner-loop iterations) between two checks for Ctrl-C. */
#define SIGNAL_CHECK_WORK 100000

#if defined(__GNUC__) || defined(__clang__)
/* Two doubles at a time (GCC/Clang vector extensions: SIMD where the target has it, plain code
 * otherwise); a comparison gives a lane mask of all ones (true) or zeros. */
typedef double vdouble __attribute__((vector_size(16)));
typedef long long vmask __attribute__((vector_size(16)));
#define MBR_VECTORS 1
#endif

/* ``1.0 + delta()`` of Kaldi: delta() returns a float (1e-5f), added to a double 1.0. */
static const double PENALIZED_ONE = 1.0 + (double)1.0e-5f;

/* Kaldi's LogAdd in double: a term more than log(DBL_EPSILON) below the other is ignored. */
static double log_add(double x, double y, double min_log_diff)
{
    double diff;
    if (x < y) {
        diff = x - y;
        x = y;
    } else {
        diff = y - x;
    }
    if (diff >= min_log_diff)
        return x + log1p(exp(diff));
    return x;
}

typedef struct {
    Py_ssize_t N, Q, n_pre, n_codes;
    const int64_t *pre_offsets, *pre_arcs, *arc_start, *arc_code, *state_times, *R;
    const double *arc_loglike;
    double *stats;      /* (Q + 1) x n_codes x 3: gamma, tau_b, tau_e */
    double *alpha;      /* N */
    double *post;       /* n_pre */
    double *alpha_dash; /* N x (Q + 1), then reused as beta_dash */
    signed char *choice;  /* n_pre x (Q + 1) */
    double *ref_cost, *ref_word, *best12;  /* Q + 1 */
    signed char *move12;  /* Q + 1 */
} Pass;

/* Ctrl-C between chunks of work: returns -1 with the exception set. */
static int tick(Py_ssize_t *work, Py_ssize_t amount)
{
    *work += amount;
    if (*work >= SIGNAL_CHECK_WORK) {
        *work = 0;
        if (PyErr_CheckSignals() < 0)
            return -1;
    }
    return 0;
}

/* Kaldi's EditDistance: fills alpha (log forward), post (arc posterior given its end state, per
 * position k of pre_arcs), choice[k, q] (the move the backward pass takes at (arc, q): 1
 * substitution/match, 2 insertion, 3 deletion, with Kaldi's tie order) and alpha_dash; returns the
 * expected edit distance through *risk.  Sums and minima are Kaldi's, in Kaldi's order. */
static int forward(Pass *P, double *risk)
{
    const Py_ssize_t N = P->N, Q = P->Q, W = Q + 1;
    const double min_log_diff = log(2.220446049250313080847e-16);  /* kMinLogDiffDouble */
    const int64_t *restrict pre_arcs = P->pre_arcs, *restrict arc_start = P->arc_start,
                  *restrict arc_code = P->arc_code;
    const double *restrict loglike = P->arc_loglike;
    double *restrict alpha = P->alpha, *restrict post = P->post, *restrict ad = P->alpha_dash;
    double *restrict ref_cost = P->ref_cost, *restrict ref_word = P->ref_word, *restrict best12 = P->best12;
    signed char *restrict move12 = P->move12;
    Py_ssize_t work = 0;
    memset(ad, 0, sizeof(double) * (size_t)N * (size_t)W);
    alpha[0] = 0.0;
    for (Py_ssize_t q = 1; q <= Q; q++) {
        ref_cost[q] = P->R[q - 1] == 0 ? 0.0 : 1.0;
        ref_word[q] = (double)P->R[q - 1];  /* codes < n_codes: exact in a double */
        ad[q] = ad[q - 1] + ref_cost[q];
    }
    for (Py_ssize_t n = 1; n < N; n++) {
        const Py_ssize_t k0 = (Py_ssize_t)P->pre_offsets[n], k1 = (Py_ssize_t)P->pre_offsets[n + 1];
        double alpha_n = -INFINITY;
        for (Py_ssize_t k = k0; k < k1; k++) {
            const int64_t i = pre_arcs[k];
            alpha_n = log_add(alpha_n, alpha[arc_start[i]] + loglike[i], min_log_diff);
        }
        alpha[n] = alpha_n;
        double *restrict out = ad + n * W;
        for (Py_ssize_t k = k0; k < k1; k++) {
            const int64_t i = pre_arcs[k];
            const int64_t s = arc_start[i];
            const double w = (double)arc_code[i];
            const double pen = w == 0.0 ? 0.0 : PENALIZED_ONE;
            const double p = exp(alpha[s] + loglike[i] - alpha_n);
            const double *restrict prev = ad + s * W;
            signed char *restrict moves = P->choice + k * W;
            post[k] = p;
            /* substitution vs insertion need no previous column: computed first, off the serial
             * chain of the deletion move (ada[q] depends on ada[q-1]) */
            {
                Py_ssize_t q = 1;
#ifdef MBR_VECTORS
                const vdouble vw = {w, w}, vpen = {pen, pen}, one = {1.0, 1.0};
                for (; q + 1 <= Q; q += 2) {
                    vdouble pm1, p0, rw;
                    memcpy(&pm1, prev + q - 1, sizeof pm1);
                    memcpy(&p0, prev + q, sizeof p0);
                    memcpy(&rw, ref_word + q, sizeof rw);
                    const vmask match = vw == rw;
                    const vdouble a1 = pm1 + (vdouble)((vmask)one & ~match);
                    const vdouble a2 = p0 + vpen;
                    const vmask sub = a1 <= a2;
                    const vdouble best = (vdouble)(((vmask)a1 & sub) | ((vmask)a2 & ~sub));
                    memcpy(best12 + q, &best, sizeof best);
                    for (int j = 0; j < 2; j++)
                        move12[q + j] = (signed char)(2 + sub[j]);
                }
#endif
                for (; q <= Q; q++) {
                    const double a1 = prev[q - 1] + (w == ref_word[q] ? 0.0 : 1.0);
                    const double a2 = prev[q] + pen;
                    const int sub = a1 <= a2;
                    best12[q] = sub ? a1 : a2;
                    move12[q] = (signed char)(2 - sub);
                }
            }
            double ada = prev[0] + pen;
            out[0] += p * ada;
            moves[0] = 0;
            for (Py_ssize_t q = 1; q <= Q; q++) {
                const double a3 = ada + ref_cost[q];
                const double b = best12[q];
                const int keep = b <= a3;
                ada = keep ? b : a3;
                moves[q] = keep ? move12[q] : 3;
                out[q] += p * ada;
            }
            if (tick(&work, W) < 0)
                return -1;
        }
    }
    *risk = ad[(N - 1) * W + Q];
    return 0;
}

/* Kaldi's AccStats from the moves of the forward pass: beta_dash (in alpha_dash's memory) and the
 * statistics per (position, word), added in Kaldi's order. */
static int backward(Pass *P)
{
    const Py_ssize_t N = P->N, Q = P->Q, W = Q + 1, C = P->n_codes;
    double *bd = P->alpha_dash, *stats = P->stats;
    Py_ssize_t work = 0;
    memset(bd, 0, sizeof(double) * (size_t)N * (size_t)W);
    bd[(N - 1) * W + Q] = 1.0;
    for (Py_ssize_t n = N - 1; n > 0; n--) {
        const double *beta_n = bd + n * W;
        const double tn = (double)P->state_times[n];
        /* beta_n is zero outside positions lo..hi (the alignment moves the mass of a state only to
         * nearby positions): an arc adds nothing above hi, nor below lo once its carry is zero, so
         * those positions are skipped -- unless its posterior is not finite (0 x inf is a NaN) */
        Py_ssize_t hi = Q, lo = 1;
        while (hi > 0 && beta_n[hi] == 0.0)
            hi--;
        while (lo < hi && beta_n[lo] == 0.0)
            lo++;
        for (Py_ssize_t k = (Py_ssize_t)P->pre_offsets[n]; k < (Py_ssize_t)P->pre_offsets[n + 1]; k++) {
            const int64_t i = P->pre_arcs[k];
            const int64_t s = P->arc_start[i];
            const int64_t w = P->arc_code[i];
            const signed char *moves = P->choice + k * W;
            double *beta_s = bd + s * W;
            const double p = P->post[k];
            const double ts = (double)P->state_times[s];
            /* Kaldi's beta_dash_arc[q] is the value carried down by a deletion at q + 1 (or 0) plus
             * this arc's share of beta_dash[n][q]: one addition, whose order does not matter */
            const int finite = p <= DBL_MAX;
            double carry = 0.0;
            for (Py_ssize_t q = finite ? hi : Q; q > 0; q--) {
                if (q < lo && carry == 0.0 && finite)
                    break;
                const double v = carry + p * beta_n[q];
                const signed char c = moves[q];
                carry = 0.0;
                if (c == 2) {
                    beta_s[q] += v;
                    continue;
                }
                if (c == 1)
                    beta_s[q - 1] += v;
                else
                    carry = v;
                if (v != 0.0) {
                    double *cell = stats + 3 * (q * C + (c == 1 ? w : 0));
                    cell[0] += v;
                    cell[1] += (c == 1 ? ts : tn) * v;
                    cell[2] += tn * v;
                }
            }
            beta_s[0] += carry + p * beta_n[0];
            if (tick(&work, W) < 0)
                return -1;
        }
    }
    const double t0 = (double)P->state_times[0];
    double carry = 0.0;
    for (Py_ssize_t q = Q; q > 0; q--) {  /* the start state: deletions down to position 0 */
        const double v = carry + bd[q];
        carry = v;
        if (v != 0.0) {
            double *cell = stats + 3 * (q * C);
            cell[0] += v;
            cell[1] += t0 * v;
            cell[2] += t0 * v;
        }
    }
    return 0;
}

/* Every index the loops follow is in range: pre_offsets runs from 0 to n_pre without decreasing,
 * pre_arcs are arcs, arc_start are states (earlier than the state an arc enters), arc_code and R
 * are codes. */
static int check_indices(const Pass *P, Py_ssize_t n_arcs)
{
    if (P->pre_offsets[0] != 0 || P->pre_offsets[P->N] != P->n_pre) {
        PyErr_Format(PyExc_ValueError, "acc_stats: pre_offsets must run from 0 to len(pre_arcs) = %zd", P->n_pre);
        return -1;
    }
    for (Py_ssize_t n = 0; n < P->N; n++)
        if (P->pre_offsets[n + 1] < P->pre_offsets[n]) {
            PyErr_Format(PyExc_ValueError, "acc_stats: pre_offsets decreases at state %zd", n);
            return -1;
        }
    for (Py_ssize_t k = 0; k < P->n_pre; k++)
        if (P->pre_arcs[k] < 0 || P->pre_arcs[k] >= n_arcs) {
            PyErr_Format(PyExc_ValueError, "acc_stats: pre_arcs[%zd] = %lld is not an arc (0 .. %zd)", k,
                         (long long)P->pre_arcs[k], n_arcs - 1);
            return -1;
        }
    for (Py_ssize_t i = 0; i < n_arcs; i++) {
        if (P->arc_start[i] < 0 || P->arc_start[i] >= P->N) {
            PyErr_Format(PyExc_ValueError, "acc_stats: arc_start[%zd] = %lld is not a state (0 .. %zd)", i,
                         (long long)P->arc_start[i], P->N - 1);
            return -1;
        }
        if (P->arc_code[i] < 0 || P->arc_code[i] >= P->n_codes) {
            PyErr_Format(PyExc_ValueError, "acc_stats: arc_code[%zd] = %lld is not a code (0 .. %zd)", i,
                         (long long)P->arc_code[i], P->n_codes - 1);
            return -1;
        }
    }
    for (Py_ssize_t n = 0; n < P->N; n++)  /* the forward pass reads alpha of earlier states only */
        for (int64_t k = P->pre_offsets[n]; k < P->pre_offsets[n + 1]; k++)
            if (P->arc_start[P->pre_arcs[k]] >= n) {
                PyErr_Format(PyExc_ValueError, "acc_stats: arc %lld enters state %zd from state %lld: the states "
                             "must be numbered topologically", (long long)P->pre_arcs[k], n,
                             (long long)P->arc_start[P->pre_arcs[k]]);
                return -1;
            }
    for (Py_ssize_t q = 0; q < P->Q; q++)
        if (P->R[q] < 0 || P->R[q] >= P->n_codes) {
            PyErr_Format(PyExc_ValueError, "acc_stats: R[%zd] = %lld is not a code (0 .. %zd)", q,
                         (long long)P->R[q], P->n_codes - 1);
            return -1;
        }
    return 0;
}

/* n * m * size without overflow (or -1). */
static Py_ssize_t product(Py_ssize_t n, Py_ssize_t m, Py_ssize_t size)
{
    if (n < 0 || m < 0 || size <= 0)
        return -1;
    if (m != 0 && n > PY_SSIZE_T_MAX / m)
        return -1;
    if (n * m != 0 && size > PY_SSIZE_T_MAX / (n * m))
        return -1;
    return n * m * size;
}

static void *alloc(Py_ssize_t bytes)
{
    return bytes < 0 ? NULL : malloc(bytes > 0 ? (size_t)bytes : 1);
}

PyDoc_STRVAR(acc_stats_doc,
"acc_stats($module, pre_offsets, pre_arcs, arc_start, arc_code, arc_loglike, state_times, R, stats, n_codes, /)\n--\n\n"
"-> risk\n\n"
"Kaldi's EditDistance + AccStats for hypothesis R (word codes with their epsilons, int64) on a lattice of\n"
"N = len(state_times) states in Kaldi's order (state 0 the start, state N-1 the single final state).\n"
"pre_offsets (int64, N + 1) and pre_arcs (int64): the arcs entering each state, in Kaldi's order;\n"
"arc_start, arc_code (0 = epsilon, < n_codes) (int64) and arc_loglike (float64) per arc; state_times\n"
"(int64, N) in frames.  stats (float64, writable, (len(R) + 1) x n_codes x 3) receives gamma, tau_b and\n"
"tau_e per (position, code), summed in Kaldi's order (row 0 stays zero).  Returns the expected edit\n"
"distance.  Allocates 16 N (len(R) + 1) + (len(R) + 1) len(pre_arcs) bytes besides stats.");

static PyObject *acc_stats(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *o[8];
    static const char *const names[8] = {"pre_offsets", "pre_arcs", "arc_start", "arc_code", "arc_loglike",
                                         "state_times", "R", "stats"};
    static const char kinds[8] = {'q', 'q', 'q', 'q', 'd', 'q', 'q', 'd'};
    Py_buffer b[8];
    memset(b, 0, sizeof b);
    Pass P;
    memset(&P, 0, sizeof P);
    PyObject *result = NULL;
    double risk = 0.0;
    Py_ssize_t n_codes;
    if (!PyArg_ParseTuple(args, "OOOOOOOOn:acc_stats", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6], &o[7],
                          &n_codes))
        return NULL;
    for (int j = 0; j < 8; j++)
        if (buffer_get(&b[j], o[j], "acc_stats", names[j], kinds[j], j == 7 ? BUF_WRITABLE : 0, -1) < 0)
            goto done;
    P.N = buffer_items(&b[5]);
    P.n_pre = buffer_items(&b[1]);
    P.Q = buffer_items(&b[6]);
    const Py_ssize_t n_arcs = buffer_items(&b[2]);
    if (P.N < 1) {
        PyErr_SetString(PyExc_ValueError, "acc_stats: state_times is empty (a lattice has at least one state)");
        goto done;
    }
    if (buffer_items(&b[0]) != P.N + 1) {
        PyErr_Format(PyExc_ValueError, "acc_stats: pre_offsets has %zd items, expected len(state_times) + 1 = %zd",
                     buffer_items(&b[0]), P.N + 1);
        goto done;
    }
    if (buffer_items(&b[3]) != n_arcs || buffer_items(&b[4]) != n_arcs) {
        PyErr_Format(PyExc_ValueError, "acc_stats: arc_start, arc_code and arc_loglike must have the same length "
                     "(%zd, %zd, %zd)", n_arcs, buffer_items(&b[3]), buffer_items(&b[4]));
        goto done;
    }
    const Py_ssize_t W = P.Q + 1;
    if (P.Q < 1 || n_codes < 1) {
        PyErr_Format(PyExc_ValueError, "acc_stats: expected len(R) >= 1 and n_codes >= 1, got %zd and %zd", P.Q,
                     n_codes);
        goto done;
    }
    if (product(W, n_codes, 3) != buffer_items(&b[7])) {
        PyErr_Format(PyExc_ValueError, "acc_stats: stats has %zd items, expected (len(R) + 1) x n_codes x 3 = "
                     "%zd x %zd x 3", buffer_items(&b[7]), W, n_codes);
        goto done;
    }
    P.n_codes = n_codes;
    P.pre_offsets = b[0].buf;
    P.pre_arcs = b[1].buf;
    P.arc_start = b[2].buf;
    P.arc_code = b[3].buf;
    P.arc_loglike = b[4].buf;
    P.state_times = b[5].buf;
    P.R = b[6].buf;
    P.stats = b[7].buf;
    if (check_indices(&P, n_arcs) < 0)
        goto done;
    P.alpha = alloc(product(P.N, 1, sizeof(double)));
    P.post = alloc(product(P.n_pre, 1, sizeof(double)));
    P.alpha_dash = alloc(product(P.N, W, sizeof(double)));
    P.choice = alloc(product(P.n_pre, W, 1));
    P.ref_cost = alloc(product(W, 1, sizeof(double)));
    P.best12 = alloc(product(W, 1, sizeof(double)));
    P.ref_word = alloc(product(W, 1, sizeof(double)));
    P.move12 = alloc(product(W, 1, 1));
    if (!P.alpha || !P.post || !P.alpha_dash || !P.choice || !P.ref_cost || !P.ref_word || !P.best12 || !P.move12) {
        PyErr_NoMemory();
        goto done;
    }
    memset(P.stats, 0, (size_t)b[7].len);
    P.ref_cost[0] = P.ref_word[0] = 0.0;
    if (forward(&P, &risk) < 0 || backward(&P) < 0)
        goto done;
    result = PyFloat_FromDouble(risk);
done:
    free(P.alpha);
    free(P.post);
    free(P.alpha_dash);
    free(P.choice);
    free(P.ref_cost);
    free(P.best12);
    free(P.ref_word);
    free(P.move12);
    for (int j = 0; j < 8; j++)
        buffer_release(&b[j]);
    return result;
}

static PyMethodDef methods[] = {
    {"acc_stats", acc_stats, METH_VARARGS, acc_stats_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "lattice_tools._ext.mbr",
    "Kaldi's MBR recursion (EditDistance + AccStats of lat/sausages.cc) for lattice_tools.alternatives.sausages.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit_mbr(void)
{
    return PyModule_Create(&module);
}
