/* Arrays in as buffers, for every compiled module (lattice_tools/_ext/): one way of acquiring a numpy array
 * (or any object with the buffer protocol) as C-contiguous items of an expected type, optionally writable
 * and of an expected length, and one wording of the errors when it is not.
 *
 * Static inline functions only, so each module still builds on its own (-fvisibility=hidden; setup.py
 * lists this header as a dependency of every module).
 *
 *     Py_buffer b = {0};
 *     if (buffer_get(&b, obj, "acc_stats", "stats", 'd', BUF_WRITABLE, n) < 0) ... (error set, b not held)
 *     ... b.buf, buffer_items(&b) ...
 *     buffer_release(&b);   (also safe on a zeroed buffer, one buffer_get refused, or one released already)
 *
 * Item types: 'q' int64 (numpy's 'l' or 'q'), 'd' float64, 'f' float32, '?' bool, 'B' bool or uint8 (a byte
 * written, not read as C's bool).  Errors:
 *     TypeError  "FN: argument NAME must be a C-contiguous[ writable] array of TYPE (TYPENAME is not one)"
 *     TypeError  "FN: argument NAME must be a C-contiguous[ writable] array of TYPE
 *                 (got format 'F', itemsize N, ndim D)"
 *     ValueError "FN: argument NAME must have N items (got M)"
 */
#ifndef LATTICE_TOOLS_EXT_BUFFERS_H
#define LATTICE_TOOLS_EXT_BUFFERS_H

#ifndef PY_SSIZE_T_CLEAN
#define PY_SSIZE_T_CLEAN
#endif
#include <Python.h>

#include <stdlib.h>
#include <string.h>

/* buffer_get's flags */
enum { BUF_WRITABLE = 1, BUF_FLAT = 2 /* at most one dimension */ };

static inline const char *buffer_type_name(char type)
{
    switch (type) {
    case 'q': return "int64";
    case 'd': return "float64";
    case 'f': return "float32";
    case '?': return "bool";
    case 'B': return "bool or uint8";
    default: return "(unknown item type)";
    }
}

/* Whether the buffer's items are of `type` (a native or little-endian format on a little-endian machine). */
static inline int buffer_type_matches(const Py_buffer *view, char type)
{
    const char *f = view->format ? view->format : "B";
    if (*f == '@' || *f == '=' || (PY_LITTLE_ENDIAN && *f == '<'))
        f++;
    if (f[0] == '\0' || f[1] != '\0')
        return 0;
    switch (type) {
    case 'q': return view->itemsize == 8 && (f[0] == 'q' || f[0] == 'l');
    case 'd': return view->itemsize == 8 && f[0] == 'd';
    case 'f': return view->itemsize == 4 && f[0] == 'f';
    case '?': return view->itemsize == 1 && f[0] == '?';
    case 'B': return view->itemsize == 1 && (f[0] == '?' || f[0] == 'B');
    default: return 0;
    }
}

static inline Py_ssize_t buffer_items(const Py_buffer *view)
{
    return view->len / view->itemsize;
}

static inline void buffer_release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
    view->obj = NULL;
}

/* 0 if the buffer holds `length` items, else -1 with the ValueError of buffer_get (for lengths that depend on
 * other arguments, checked once they are all acquired). */
static inline int buffer_check_items(const Py_buffer *view, const char *fn, const char *name, Py_ssize_t length)
{
    if (buffer_items(view) == length)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: argument %s must have %zd items (got %zd)", fn, name, length,
                 buffer_items(view));
    return -1;
}

/* Acquires obj as a C-contiguous buffer of `type` items (writable with BUF_WRITABLE, one-dimensional with
 * BUF_FLAT), of `length` items unless length < 0.  0, or -1 with TypeError/ValueError naming the function
 * `fn` and the argument `name` (the view is then not held). */
static inline int buffer_get(Py_buffer *view, PyObject *obj, const char *fn, const char *name, char type, int flags,
                             Py_ssize_t length)
{
    const char *writable = flags & BUF_WRITABLE ? " writable" : "";
    int request = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (flags & BUF_WRITABLE ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, request) < 0) {
        view->obj = NULL;
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s: argument %s must be a C-contiguous%s array of %s (%.100s is not one)", fn,
                     name, writable, buffer_type_name(type), Py_TYPE(obj)->tp_name);
        return -1;
    }
    if (!buffer_type_matches(view, type) || ((flags & BUF_FLAT) && view->ndim > 1)) {
        PyErr_Format(PyExc_TypeError, "%s: argument %s must be a C-contiguous%s array of %s (got format '%s', "
                     "itemsize %zd, ndim %d)", fn, name, writable, buffer_type_name(type),
                     view->format ? view->format : "B", view->itemsize, view->ndim);
        buffer_release(view);
        return -1;
    }
    if (length >= 0 && buffer_check_items(view, fn, name, length) < 0) {
        buffer_release(view);
        return -1;
    }
    return 0;
}

/* An argument array copied into memory of its own: what a compiled object keeps beyond the call that built it.
 * (A view of the caller's array would let Python overwrite it under the object: offsets and state numbers
 * checked once could then index outside the tables.)  `items` items of the requested type at `data`. */
typedef struct {
    void *data;
    Py_ssize_t items;
} OwnedArray;

/* Copies obj (acquired as buffer_get does, same errors) into `out`; 0, or -1 with the error set (out untouched). */
static inline int owned_copy(OwnedArray *out, PyObject *obj, const char *fn, const char *name, char type, int flags,
                             Py_ssize_t length)
{
    Py_buffer view = {0};
    if (buffer_get(&view, obj, fn, name, type, flags & ~BUF_WRITABLE, length) < 0)
        return -1;
    void *copy = malloc(view.len > 0 ? (size_t)view.len : 1);
    if (!copy) {
        buffer_release(&view);
        PyErr_NoMemory();
        return -1;
    }
    memcpy(copy, view.buf, (size_t)view.len);
    out->data = copy;
    out->items = buffer_items(&view);
    buffer_release(&view);
    return 0;
}

static inline void owned_free(OwnedArray *a)
{
    free(a->data);
    a->data = NULL;
    a->items = 0;
}

/* buffer_check_items for an owned copy (the same ValueError). */
static inline int owned_check_items(const OwnedArray *a, const char *fn, const char *name, Py_ssize_t length)
{
    if (a->items == length)
        return 0;
    PyErr_Format(PyExc_ValueError, "%s: argument %s must have %zd items (got %zd)", fn, name, length, a->items);
    return -1;
}

#endif
