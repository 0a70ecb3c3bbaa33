/* Checks, scratch areas and sorting shared by the search module's files. */
#include "search.h"

PyObject *array_type, *code_d, *code_q;

/* off[0:n]: rows + 1 nondecreasing offsets within [0, total] */
int check_offsets(const i64 *o, Py_ssize_t n, Py_ssize_t rows, Py_ssize_t total, const char *name) {
    if (n != rows + 1) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd offsets, got %zd", name, rows + 1, n);
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

/* every x[0:n] within [lo, hi) */
int check_range(const i64 *x, Py_ssize_t n, i64 lo, i64 hi, const char *name) {
    for (Py_ssize_t k = 0; k < n; k++)
        if (x[k] < lo || x[k] >= hi) {
            PyErr_Format(PyExc_ValueError, "%s[%zd] = %lld is outside [%lld, %lld)", name, k, (long long)x[k],
                         (long long)lo, (long long)hi);
            return -1;
        }
    return 0;
}

/* Grow a scratch area to hold n items of size sz (contents not kept). */
int reserve(void **p, Py_ssize_t *cap, Py_ssize_t n, size_t sz) {
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
void sort_i64(i64 *a, Py_ssize_t n) {
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

PyObject *typed(PyObject *code, PyObject *bytes) {
    if (!bytes) return NULL;
    PyObject *a = PyObject_CallFunctionObjArgs(array_type, code, bytes, NULL);
    Py_DECREF(bytes);
    return a;
}

