/* Compiled loops of the exact sequence search (lattice_tools.alternatives._determinizer, ._best_paths):
 *
 *   Expander(...)          the fixed tables of a Determinizer (copied, validated once);
 *     .expand(key, resid)  one determinized state -> its choices, sorted by bound, and its successor data;
 *     .successor(data, g)  the subset reached by choice group g -> (interning key, residual costs);
 *     .lazy_search(...)    the lazy best-first search of one automaton, in one call;
 *   WordTimes(...)         the tables of the word-time Viterbi;
 *     .best_paths(...)     best single path of each sequence of a prefix trie;
 *   closed_exits(...)      each state's exit cost through its best epsilon path.
 *
 * Files: buffers.c (buffer checks, sorting), expander.c, lazy_search.c, word_times.c, this one (the module).
 *
 * The floating-point operations are those of tests/_reference/search_kernels.py, in the same order (the
 * package is built with -ffp-contract=off), so every cost is bit-identical.  A determinized state
 * crosses as two bytes objects: its key (n int64 states, then n int64 residuals rounded to the
 * resolution: what the Python side interns) and its n float64 residual costs.
 */
#include "search.h"

static PyMethodDef module_methods[] = {
    {"closed_exits", closed_exits, METH_VARARGS,
     "closed_exits($module, exit_cost, eps_off, eps_dst, eps_cost, /)\n--\n\n"
     "-> bytes (float64 per state)\n\n"
     "Each state's exit cost through its best epsilon path: min(exit_cost[s], eps_cost[k] + the closed exit of "
     "eps_dst[k]) over the epsilon arcs k of s, eps_off[s]:eps_off[s + 1] (int64, one more than exit_cost); "
     "states numbered topologically (every eps_dst after its source)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "lattice_tools._ext.search",
                                        "Compiled loops of the exact sequence search.", -1, module_methods,
                                        NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_search(void) {
    if (PyType_Ready(&ExpanderType) < 0 || PyType_Ready(&WordTimesType) < 0) return NULL;
    PyObject *arr = PyImport_ImportModule("array");
    if (!arr) return NULL;
    array_type = PyObject_GetAttrString(arr, "array");
    Py_DECREF(arr);
    code_d = PyUnicode_FromString("d");
    code_q = PyUnicode_FromString("q");
    if (!array_type || !code_d || !code_q) return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (!m) return NULL;
    Py_INCREF(&ExpanderType);
    Py_INCREF(&WordTimesType);
    if (PyModule_AddObject(m, "Expander", (PyObject *)&ExpanderType) < 0 ||
        PyModule_AddObject(m, "WordTimes", (PyObject *)&WordTimesType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
