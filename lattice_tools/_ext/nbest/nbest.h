/* What the files of the compiled N-best module (lattice_tools._ext.nbest) share: the types, the
 * argument glue (module.c), the growable arrays (buffers.c) and the log sum; each kernel's file
 * declares its Python entry point here for the method table.  Everything else stays static in its file.
 * (The module's symbols are hidden (setup.py: -fvisibility=hidden): only PyInit_nbest is exported.) */
#ifndef LATTICE_TOOLS_NBEST_H
#define LATTICE_TOOLS_NBEST_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "../buffers.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int64_t i64;

#define INF HUGE_VAL
#define SIGNAL_EVERY 65536

enum { ST_OK = 0, ST_TOO_MANY_POPS = 1, ST_TOO_MANY_STATES = 2, ST_TOO_MANY_MEMBERS = 3, ST_TOO_MANY_BYTES = 4,
       ST_TIME_LIMIT = 5 };

/* ------------------------------------------------------------------------------------------------ */
/* buffers in, bytearrays out (module.c)                                                             */
/* ------------------------------------------------------------------------------------------------ */
enum { K_I64 = 'q', K_F64 = 'd', K_BOOL = '?' }; /* buffers.h's item types */

#define MAX_VIEWS 16
typedef struct {
    Py_buffer v[MAX_VIEWS];
    int n;
    const char *fn; /* the function the buffers are arguments of, for the errors */
} Views;

void views_release(Views *vs);
/* The data of ``obj`` as a C-contiguous array of ``kind`` with ``len`` entries (-1: any; the count is
 * stored in *out_len).  NULL with TypeError/ValueError naming the argument otherwise. */
void *view(Views *vs, PyObject *obj, const char *name, int kind, Py_ssize_t len, Py_ssize_t *out_len);
PyObject *out_array(const void *p, i64 count, size_t itemsize);
/* Arcs numbered topologically with sorted sources: ValueError otherwise (the loops index by them). */
int check_arcs(i64 m, const i64 *src, const i64 *dst, i64 n_arcs);

/* ------------------------------------------------------------------------------------------------ */
/* growable arrays (buffers.c)                                                                       */
/* ------------------------------------------------------------------------------------------------ */
/* Room for ``need`` entries of ``size`` bytes in *p (capacity *cap, at least doubled); new entries
 * are zero when ``zero``.  -1 with MemoryError.  Inline because the hot loops call it for every entry
 * they append and there is room nearly always: only the reallocation (grow_realloc) is a call. */
int grow_realloc(void **p, i64 *cap, i64 need, size_t size, int zero);
static inline int grow_(void **p, i64 *cap, i64 need, size_t size, int zero)
{
    if (need <= *cap)
        return 0;
    return grow_realloc(p, cap, need, size, zero);
}
#define GROW(p, cap, need) grow_((void **)&(p), &(cap), (need), sizeof(*(p)), 0)
#define GROWZ(p, cap, need) grow_((void **)&(p), &(cap), (need), sizeof(*(p)), 1)

void *alloc_(size_t count, size_t size);
#define ALLOC(p, count) ((p) = alloc_((size_t)(count), sizeof(*(p))))

/* The byte budget of one kernel call (buffers.c): budget_begin(max_bytes) at its start (-1: none); every
 * allocation of grow_realloc and alloc_ counts against it (freed blocks are not given back, except a grown
 * block's old copy), and one that would pass it fails with MemoryError and budget_exceeded() true.
 * budget_take(bytes): count an allocation made otherwise (or the kernel's outputs before it builds them):
 * 0, or -1 with that MemoryError (its message: BUDGET_EXCEEDED, the module's constant of that name). */
#define BUDGET_EXCEEDED "nbest: the byte budget of the call is exceeded"
void budget_begin(i64 max_bytes);
int budget_take(i64 bytes);
void budget_give(i64 bytes);
int budget_exceeded(void);
i64 budget_held_bytes(void);

/* Growable arrays of int64, float64 and bytes with their capacities (the search's and the best paths'). */
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

/* qsort's comparison of int64 values. */
int cmp_i64(const void *a, const void *b);

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

/* The closed rows as passed back from Python: w_off (m + 1), and per entry dense label, destination,
 * log-sum cost; x_lc (m).  Checked: offsets non-decreasing within the entries, destinations and
 * labels in range. */
typedef struct {
    i64 m, n_rows, num_labels;
    const i64 *w_off, *w_dlab, *w_dst;
    const double *w_lc, *x_lc;
} Rows;

/* ------------------------------------------------------------------------------------------------ */
/* the kernels (one file each), for the method table in module.c                                   */
/* ------------------------------------------------------------------------------------------------ */
PyObject *py_closed_rows(PyObject *self, PyObject *args);         /* closed_rows.c */
PyObject *py_best_word_bound(PyObject *self, PyObject *args);     /* bounds.c */
PyObject *py_suffix_list_bound(PyObject *self, PyObject *args);   /* bounds.c */
PyObject *py_bounded_search(PyObject *self, PyObject *args);      /* region_search.c */
PyObject *py_best_paths(PyObject *self, PyObject *args);          /* best_paths.c */

#endif
