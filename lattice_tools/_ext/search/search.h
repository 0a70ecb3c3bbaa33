/* Shared declarations of the modules' files (lattice_tools/_ext/search/): the exact sequence search's
 * compiled loops.  See search.c for what the module holds. */
#ifndef LATTICE_TOOLS_SEARCH_H
#define LATTICE_TOOLS_SEARCH_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../buffers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

static inline Py_ssize_t len8(const Py_buffer *v) { return v->len / 8; }
static inline const i64 *I(const Py_buffer *v) { return (const i64 *)v->buf; }
static inline const double *D(const Py_buffer *v) { return (const double *)v->buf; }
/* the same for the tables an object owns (OwnedArray, buffers.h) */
static inline const i64 *OI(const OwnedArray *a) { return (const i64 *)a->data; }
static inline const double *OD(const OwnedArray *a) { return (const double *)a->data; }

/* unaligned-safe access to the int64 / float64 contents of bytes objects */
static inline i64 ld_i(const char *p, Py_ssize_t k) { i64 v; memcpy(&v, p + 8 * k, 8); return v; }
static inline double ld_d(const char *p, Py_ssize_t k) { double v; memcpy(&v, p + 8 * k, 8); return v; }
static inline void st_i(char *p, Py_ssize_t k, i64 v) { memcpy(p + 8 * k, &v, 8); }
static inline void st_d(char *p, Py_ssize_t k, double v) { memcpy(p + 8 * k, &v, 8); }

/* np.int64(np.rint(x)) on x86-64: out of range or NaN gives INT64_MIN */
static inline i64 rint_i64(double x) {
    double r = rint(x);
    return (r >= -9223372036854775808.0 && r < 9223372036854775808.0) ? (i64)r : INT64_MIN;
}

/* buffers.c */
extern PyObject *array_type, *code_d, *code_q; /* array.array, "d", "q" */
int check_offsets(const i64 *off, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t total, const char *name);
int check_range(const i64 *x, Py_ssize_t n, i64 lo, i64 hi, const char *name);
int reserve(void **p, Py_ssize_t *cap, Py_ssize_t n, size_t sz);
void sort_i64(i64 *a, Py_ssize_t n);
PyObject *typed(PyObject *code, PyObject *bytes);

/* expander.c: the expansion tables of a Determinizer */
enum { T_OFF, T_GROUP, GROUP_LABEL, T_COST, COST_MIN, COST_SCALED, T_COMPL, COMPL_MIN, COMPL_SCALED,
       C_OFF, C_BASE, C_ENTRY, ARC_OFF, E_COST, ARC_DST, ARC_COST, ARC_SCALED, N_TABLES };

typedef struct {
    PyObject_HEAD
    OwnedArray t[N_TABLES]; /* copies of the arguments (a caller's array can change after the call) */
    int held, ready; /* tables copied; 1 once __init__ succeeded */
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

typedef struct { /* an expansion, in the Expander's scratch (valid until its next call) */
    Py_ssize_t nm, ng, f; /* members, groups, choices (the groups with a finite bound) */
    i64 *groups, *order, *m_entry, *ends;
    double *m_base, *cost, *bound;
} Expansion;

extern PyTypeObject ExpanderType;
int expander_ready(Expander *self);
int subset_args(Expander *self, PyObject *key, PyObject *resid, Py_ssize_t *n);
int expand_core(Expander *self, const char *kst, const char *krs, Py_ssize_t n, Expansion *x);
Py_ssize_t successor_data_size(const Expansion *x);
void successor_data(const Expansion *x, char *ps);
Py_ssize_t successor_core(Expander *self, const char *data, Py_ssize_t size, Py_ssize_t g);
int subset_bytes(Expander *self, Py_ssize_t nt, PyObject **key, PyObject **res);

/* lazy_search.c */
PyObject *Expander_lazy_search(Expander *self, PyObject *args);

/* word_times.c */
extern PyTypeObject WordTimesType;
PyObject *closed_exits(PyObject *module, PyObject *args);

#endif
