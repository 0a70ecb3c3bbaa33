"""The compiled objects own what they keep: every object of lattice_tools/_ext that holds arrays beyond
the call that built it (``search.Expander``, ``search.WordTimes``) keeps its own copies, so overwriting,
resizing or deleting the caller's arrays afterwards neither crashes the process nor changes a result.

Each case runs in a subprocess (a crash is a signal there, not the end of the test run): it builds the
object from a determinizer's own arrays (as the package does), records the results of every entry
point, then overwrites those arrays with out-of-range values, resizes them, deletes them, and asks
again.  Before the objects copied their tables, overwriting an offset array made the next call read
outside the tables (the process died of SIGSEGV)."""
from __future__ import annotations

import inspect
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from lattice_tools._ext import native

TESTS = Path(__file__).resolve().parent

#: The compiled modules (setup.py builds each) and their types that keep arrays beyond a call.
MODULES = ["banded_align", "kaldi_frames", "kaldi_order", "kaldi_text", "lattice_order", "mbr", "nbest", "postings", "search"]
KEEPING_TYPES = {"search.Expander", "search.WordTimes"}

_SETUP = """
import gc
import numpy as np
from _algo_helpers import random_lattice
from lattice_tools._ext import native
from lattice_tools.alternatives._determinizer import AutomataUnion, Determinizer, row_scaling
from lattice_tools.alternatives.phrase_alternatives import PhraseDecomposition

K = native("search")
lat = random_lattice(np.random.default_rng(7), 14, 50)
det = Determinizer(AutomataUnion(PhraseDecomposition(lat, 0.1).problems()))
roots = [det.subsets[det.intern(i, rs, rr)] for i, (rs, rr, _) in enumerate(det.union.roots) if len(rs)]
assert roots


def spoil(arrays):
    '''Overwrite every array with values outside any table, then resize them (the memory they had is freed).'''
    for a in arrays:
        a[...] = 2**62 if a.dtype.kind == "i" else np.nan
    for a in arrays:
        a.resize(3 * len(a) + 7, refcheck=False)
        a[...] = -(2**62) if a.dtype.kind == "i" else -np.inf
"""

_EXPANDER = _SETUP + """
cost_min, cost_scaled = row_scaling(det._a_off, det._a_cost)
compl_min, compl_scaled = row_scaling(det._a_off, det._a_compl)
tables = [det._a_off, det._a_group, det._group_label, det._a_cost, cost_min, cost_scaled, det._a_compl, compl_min,
          compl_scaled, det._part_off, det._part_base, det._part_entry, det._arc_off, det._e_cost, det._arc_dst,
          det._arc_cost, det._arc_scaled]
assert all(isinstance(t, np.ndarray) and t.flags.writeable for t in tables)
ex = K.Expander(*tables, 1e-9)


def results():
    out = []
    for key, resid in roots:
        *choices, succ = ex.expand(key, resid)
        out.append([bytes(c) for c in choices] + [succ])
        out.append([ex.successor(succ, g) for g in range(len(choices[0]))])
        out.append(ex.lazy_search(key, resid, 50, 10**6, lambda: None))
    return out


before = results()
spoil(tables)
print("overwritten and resized", flush=True)
assert results() == before
del tables, cost_min, cost_scaled, compl_min, compl_scaled
det._a_off = det._a_group = det._arc_off = det._arc_dst = None
gc.collect()
print("deleted", flush=True)
assert results() == before
print("ok")
"""

_WORD_TIMES = _SETUP + """
u = det.union
wt = det.word_time_tables()
per_closure = np.diff(det._e_off)[det._c_dst]
tables = [det._t_off.copy(), det._e_label[det._t_entry], np.repeat(det._c_bc, per_closure), det._t_entry.copy(),
          det._arc_off, det._arc_dst, det._arc_cost, det._arc_order, u.arc_ids[det._arc_order], u.exit_bc.copy()]
own = K.WordTimes(*tables)
parent = np.array([-1, 0, 1, 0], np.int64)
label = np.array([-1, 1, 2, 3], np.int64)
children = np.array([1, 3, 2], np.int64)
ch_off = np.array([0, 2, 3, 3, 3], np.int64)
end = np.array([0, 1, 2, 3], np.int64)


def results():
    out = []
    for obj in (wt, own):
        for rs, _, rb in u.roots:
            out.append(obj.best_paths(rs, rb, label, parent, ch_off, children, end, 4, -1))
    return out


before = results()
spoil(tables + [det._t_off, det._t_entry, det._c_bc, det._e_label, u.exit_bc])
print("overwritten and resized", flush=True)
assert results() == before
del tables
det._t_off = det._arc_off = det._arc_dst = None
gc.collect()
print("deleted", flush=True)
assert results() == before
print("ok")
"""


def _run(script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(TESTS), str(TESTS.parent),
                                                       os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env,
                          timeout=120)


@pytest.mark.parametrize("name,script", [("search.Expander", _EXPANDER), ("search.WordTimes", _WORD_TIMES)],
                         ids=["Expander", "WordTimes"])
def test_mutating_the_callers_arrays_after_construction_cannot_crash(name, script):
    proc = _run(script)
    assert proc.returncode == 0, f"{name}: exit status {proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    assert proc.stdout.split()[-1:] == ["ok"], proc.stdout


def _compiled_types():
    found = set()
    for module in MODULES:
        mod = native(module)
        found |= {f"{module}.{n}" for n, obj in vars(mod).items() if isinstance(obj, type) and not n.startswith("_")}
    return found


def test_every_compiled_type_has_an_ownership_case():
    """A new compiled type that keeps arrays needs a case above: the list is every type the modules define."""
    assert _compiled_types() == KEEPING_TYPES


def _entry_points():
    for module in MODULES:
        mod = native(module)
        for name, obj in sorted(vars(mod).items()):
            if name.startswith("_") or not callable(obj):
                continue
            yield f"{module}.{name}", obj
            if isinstance(obj, type):
                for meth, fn in sorted(vars(obj).items()):
                    if not meth.startswith("_") and callable(fn):
                        yield f"{module}.{name}.{meth}", fn


@pytest.mark.parametrize("name,fn", list(_entry_points()), ids=lambda x: x if isinstance(x, str) else "")
def test_every_entry_point_documents_its_arguments(name, fn):
    """Each function, type and method of the compiled modules has a text signature (its argument names, as
    help() and inspect show them) and a description of what it does with them."""
    assert fn.__text_signature__, f"{name}: no text signature in its docstring"
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    assert params, f"{name}: no argument names"
    assert len((fn.__doc__ or "").strip()) > 80, f"{name}: no description of its arguments"
