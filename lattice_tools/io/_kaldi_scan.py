"""Compiled scanner of text CompactLattices (internal helper of :mod:`lattice_tools.io.kaldi`).

One pass over the bytes of a lattice in the layout Kaldi writes -- ``src dst word [g,a,tids]`` and
``state [g,a,tids]`` lines -- gives the integers (states, words, transition ids) and the spans of
the two weight numbers of each line, which numpy then converts exactly as Python's ``float`` would.
Anything else makes it give up (status != 0) so that the line parser reads the block and reports
the error.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def scan_compact(a):
    """Returns ``(status, kind, ints, wspan, tid_off, tids, n_lines)``: per line ``kind`` (0 arc
    without weight, 1 arc with weight, 2 final One, 3 final with weight), ``ints`` (src, dst, word or
    state, -, -), ``wspan`` (start, end of graph and acoustic weight text), ``tid_off`` (offsets of each
    line's tids in ``tids``)."""
    n = len(a)
    max_lines = 1
    n_us = 0
    for i in range(n):
        if a[i] == 10:
            max_lines += 1
        elif a[i] == 95:
            n_us += 1
    kind = np.empty(max_lines, np.int8)
    ints = np.empty((max_lines, 3), np.int64)
    wspan = np.zeros((max_lines, 4), np.int64)
    tid_off = np.zeros(max_lines + 1, np.int64)
    tids = np.empty(n_us + max_lines, np.int32)
    nt = 0
    ln = 0
    i = 0
    while i < n:
        # up to three integer columns, then an optional weight column, then end of line
        ncol = 0
        has_w = False
        while True:
            while i < n and (a[i] == 32 or a[i] == 9):
                i += 1
            if i >= n or a[i] == 10:
                break
            # a token: integer column or weight
            j = i
            comma = False
            while j < n and a[j] != 32 and a[j] != 9 and a[j] != 10:
                if a[j] == 44:
                    comma = True
                j += 1
            if comma:
                if has_w:
                    return 1, kind, ints, wspan, tid_off, tids, ln
                has_w = True
                # g , a , tids
                k = i
                while k < j and a[k] != 44:
                    k += 1
                wspan[ln, 0] = i
                wspan[ln, 1] = k
                k += 1
                s2 = k
                while k < j and a[k] != 44:
                    k += 1
                if k >= j:
                    return 1, kind, ints, wspan, tid_off, tids, ln
                wspan[ln, 2] = s2
                wspan[ln, 3] = k
                k += 1
                if k < j:
                    val = 0
                    nd = 0
                    while k <= j:
                        if k == j or a[k] == 95:
                            if nd == 0 or val >= 2147483648:
                                return 1, kind, ints, wspan, tid_off, tids, ln
                            tids[nt] = val
                            nt += 1
                            val = 0
                            nd = 0
                        elif 48 <= a[k] <= 57:
                            val = val * 10 + (a[k] - 48)
                            nd += 1
                        else:
                            return 1, kind, ints, wspan, tid_off, tids, ln
                        k += 1
            else:
                if has_w or ncol >= 3:
                    return 1, kind, ints, wspan, tid_off, tids, ln
                val = 0
                for k in range(i, j):
                    c = a[k]
                    if c < 48 or c > 57 or val >= 2147483648:
                        return 1, kind, ints, wspan, tid_off, tids, ln
                    val = val * 10 + (c - 48)
                if val >= 2147483648:  # Kaldi's ids are int32
                    return 1, kind, ints, wspan, tid_off, tids, ln
                ints[ln, ncol] = val
                ncol += 1
            i = j
        if ncol == 3:
            kind[ln] = 1 if has_w else 0
        elif ncol == 1:
            kind[ln] = 3 if has_w else 2
        else:
            return 1, kind, ints, wspan, tid_off, tids, ln
        ln += 1
        tid_off[ln] = nt
        i += 1  # the newline
    return 0, kind, ints, wspan, tid_off, tids, ln
