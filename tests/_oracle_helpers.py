"""Independent references for the oracle tests: path enumeration and a plain recursive aligner.

Nothing here imports lattice_tools.oracle: the brute force must not share code with the DP it checks.
"""
from __future__ import annotations

import functools
from types import SimpleNamespace

import numpy as np

from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable

VOCAB = ["a", "b", "c", "d", "e"]


def word_cost_sclite(h, v, v_optional=False):
    """sclite's wwd_WORD (SCTK src/sclite/word.c) x1000; ``None`` = NULL_WORD, ``"@"`` = the null word."""
    if v is None:  # insertion of h
        return 1 if h == "@" else 3000
    if h is None:  # deletion of v
        if v == "@":
            return 1
        return 2000 if v_optional else 3000
    if h == "@" or v == "@":
        # wwd_WORD prices a word against '@' at 1, but sclite's network DP never pairs '@' with
        # anything (measured: it prefers skipping '@' even at a higher total), so neither do we.
        return float("inf")
    if h == v:
        return 0
    return 4000


def word_cost_levenshtein(h, v, v_optional=False):
    if v is None:
        return 0 if h == "@" else 1
    if h is None:
        return 0 if (v == "@" or v_optional) else 1
    if h == v:
        return 0
    if h == "@" and v == "@":
        return 0
    return 1


def network_align_cost(hyp_words, num_states, arcs, cost):
    """Minimum cost of aligning a word sequence against a reference network by plain recursion.

    ``arcs``: list of ``(src, dst, word, optional)`` with ``word == "@"`` for the null word."""
    out = {}
    for s, d, w, o in arcs:
        out.setdefault(s, []).append((d, w, o))
    final = num_states - 1
    n = len(hyp_words)

    @functools.cache
    def f(i, r):
        best = 0 if (i == n and r == final) else float("inf")
        if i < n:
            best = min(best, cost(hyp_words[i], None) + f(i + 1, r))
        for d, w, o in out.get(r, []):
            best = min(best, cost(None, w, o) + f(i, d))
            if i < n:
                best = min(best, cost(hyp_words[i], w, o) + f(i + 1, d))
        return best

    return f(0, 0)


def enumerate_paths(lat: Lattice):
    """Every complete path's word sequence (epsilon removed)."""
    out = {}
    for a in range(lat.num_arcs):
        out.setdefault(int(lat.src[a]), []).append(a)
    result = []
    stack = [(0, ())]
    while stack:
        s, seq = stack.pop()
        if lat.is_final[s]:
            result.append(seq)
        for a in out.get(s, []):
            w = int(lat.word[a])
            stack.append((int(lat.dst[a]), seq + ((lat.symbols.word(w),) if w else ())))
    return result


def random_lattice(rng: np.random.Generator, num_states: int, extra_arcs: int, eps_prob: float = 0.2) -> Lattice:
    """A small random acyclic word lattice: a chain 0..n-1 (so every state is live) plus random arcs."""
    syms = SymbolTable.from_words(VOCAB)
    src = list(range(num_states - 1))
    dst = list(range(1, num_states))
    for _ in range(extra_arcs):
        s = int(rng.integers(0, num_states - 1))
        d = int(rng.integers(s + 1, num_states))
        src.append(s)
        dst.append(d)
    words = [0 if rng.random() < eps_prob else int(rng.integers(1, len(VOCAB) + 1)) for _ in src]
    fin = np.full(num_states, np.inf)
    fin[-1] = 0.0
    if num_states > 2 and rng.random() < 0.3:
        fin[int(rng.integers(1, num_states - 1))] = 0.0
    t0 = np.arange(len(src))
    return Lattice.from_arcs(src=src, dst=dst, word=words, symbols=syms, final_graph_cost=fin, t0=t0, t1=t0 + 1)


def random_reference(rng: np.random.Generator, length: int, alt_prob: float = 0.3, opt_prob: float = 0.2):
    """A random reference network with alternations (incl. ``@``) and optional words.

    Returns ``(network_namespace, arcs)``: the namespace has the scorer WordNetwork's array fields."""
    arcs = []
    state = 0
    nxt = 1
    for _ in range(length):
        end = nxt
        nxt += 1
        if rng.random() < alt_prob:
            k = int(rng.integers(2, 4))
            for _ in range(k):
                m = int(rng.integers(0, 3))
                if m == 0:
                    arcs.append((state, end, "@", False))
                else:
                    prev = state
                    for j in range(m):
                        to = end if j == m - 1 else nxt
                        if j < m - 1:
                            nxt += 1
                        arcs.append((prev, to, VOCAB[int(rng.integers(0, len(VOCAB)))], False))
                        prev = to
        else:
            arcs.append((state, end, VOCAB[int(rng.integers(0, len(VOCAB)))], bool(rng.random() < opt_prob)))
        state = end
    # renumber topologically (fresh middle states were allocated out of order)
    n = nxt
    order = _topo(n, arcs)
    new = {old: i for i, old in enumerate(order)}
    arcs = [(new[s], new[d], w, o) for s, d, w, o in arcs]
    final_old = state
    # the final state must be the last one
    assert new[final_old] == n - 1, "reference builder: final state is not last"
    net = SimpleNamespace(num_states=n, src=np.array([a[0] for a in arcs], dtype=np.int64),
                          dst=np.array([a[1] for a in arcs], dtype=np.int64),
                          words=tuple(None if a[2] == "@" else a[2] for a in arcs),
                          optional=np.array([a[3] for a in arcs], dtype=bool),
                          fragment=np.zeros(len(arcs), dtype=bool))
    return net, arcs


def _topo(n, arcs):
    indeg = [0] * n
    out = {}
    for s, d, _, _ in arcs:
        indeg[d] += 1
        out.setdefault(s, []).append(d)
    ready = [0]
    order = []
    while ready:
        ready.sort()
        s = ready.pop(0)
        order.append(s)
        for d in out.get(s, []):
            indeg[d] -= 1
            if indeg[d] == 0:
                ready.append(d)
    return order


# ----------------------------------------------------------------------------------------------
# Debian sclite on random STM + alt-CTM files
# ----------------------------------------------------------------------------------------------
def random_stm_altctm(rng: np.random.Generator, n_segments: int, vocab=VOCAB, max_alts: int = 4):
    """Random STM text and alt-CTM text for one recording side ``f1 A``.

    Each segment is 10 s; its reference has 1-6 words (sometimes an optional ``(w)``); its hypothesis
    is a run of words and flat ALT blocks (alternatives of 0-3 words, the empty one written ``@``)
    placed strictly inside the segment, in time order."""
    stm, ctm = [], []
    for s in range(n_segments):
        t0 = 10.0 * s
        ref = []
        for _ in range(int(rng.integers(1, 7))):
            w = vocab[int(rng.integers(0, len(vocab)))]
            ref.append(f"({w})" if rng.random() < 0.15 else w)
        stm.append(f"f1 A spk {t0:.2f} {t0 + 10:.2f} {' '.join(ref)}")
        t = t0 + 0.5
        for _ in range(int(rng.integers(1, 6))):  # sclite rejects an empty CTM side
            if rng.random() < 0.5:
                ctm.append(f"f1 A {t:.2f} 0.20 {vocab[int(rng.integers(0, len(vocab)))]} 0.9")
                t += 0.5
                continue
            ctm.append("f1 A * * <ALT_BEGIN>")
            k = int(rng.integers(2, max_alts + 1))
            longest = 0
            for j in range(k):
                if j:
                    ctm.append("f1 A * * <ALT>")
                m = int(rng.integers(0, 4))
                if m == 0:
                    ctm.append(f"f1 A {t:.2f} 0.20 @")
                for i in range(m):
                    ctm.append(f"f1 A {t + 0.3 * i:.2f} 0.20 {vocab[int(rng.integers(0, len(vocab)))]} 0.5")
                longest = max(longest, m)
            ctm.append("f1 A * * <ALT_END>")
            t += 0.3 * max(longest, 1) + 0.5
    return "\n".join(stm) + "\n", "\n".join(ctm) + "\n"


def run_sclite(sclite: str, stm_path: str, ctm_path: str, optional_deletable: bool = False):
    """Total ``(#Wrd, C, S, D, I)`` that Debian sclite reports (``-o rsum``)."""
    import re
    import subprocess

    cmd = [sclite, "-r", stm_path, "stm", "-h", ctm_path, "ctm", "-o", "rsum", "stdout"]
    if optional_deletable:
        cmd.insert(1, "-D")
    # sclite exits 1 when its NCE statistic is undefined (all confidences equal) but still reports.
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    for line in out.splitlines():
        if re.match(r"\s*\|\s*Sum(/Avg)?\s*\|", line):
            nums = re.findall(r"-?\d+(?:\.\d+)?", line)
            snt, wrd, c, s, d, i = (int(float(x)) for x in nums[:6])
            return wrd, c, s, d, i
    raise AssertionError("no Sum/Avg line in sclite output:\n" + out)
