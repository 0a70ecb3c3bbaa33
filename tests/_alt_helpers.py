"""Helpers for the alternatives tests: random word lattices, brute-force path enumeration,
real lattices (pocketsphinx SLF, k2 fixtures) and kaldifst references."""
from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

import numpy as np
from _data import TEST_DATA

from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "lattice_tools" / "data"
K2 = TEST_DATA / "k2-fixtures"

VOCAB = ["<eps>", "a", "b", "c", "d", "<sil>"]
SYMS = SymbolTable.from_words(VOCAB[1:])


def log_add(a, b):
    m = min(a, b)
    if m == math.inf:
        return math.inf
    return m - math.log(math.exp(-(a - m)) + math.exp(-(b - m)))


# ---------------------------------------------------------------------------------------------
# Random lattices (for hypothesis)

def lattice_strategy(max_states: int = 7, max_arcs: int = 14):
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        n = draw(st.integers(2, max_states))
        times = sorted(draw(st.lists(st.integers(0, 30), min_size=n, max_size=n)))
        times = [t + i for i, t in enumerate(times)]  # strictly increasing state times
        arcs = []
        # guarantee a complete path 0 -> n-1
        chain = sorted(set([0, n - 1] + draw(st.lists(st.integers(1, n - 2), max_size=3)) if n > 2 else [0, n - 1]))
        for s, d in zip(chain, chain[1:], strict=False):
            arcs.append((s, d))
        k = draw(st.integers(0, max_arcs - len(arcs)))
        for _ in range(k):
            s = draw(st.integers(0, n - 2))
            d = draw(st.integers(s + 1, n - 1))
            arcs.append((s, d))
        words = [SYMS.get_id(VOCAB[i]) if i else 0 for i in
                 draw(st.lists(st.integers(0, len(VOCAB) - 1), min_size=len(arcs), max_size=len(arcs)))]
        g = draw(st.lists(st.floats(0, 3), min_size=len(arcs), max_size=len(arcs)))
        ac = draw(st.lists(st.floats(0, 3), min_size=len(arcs), max_size=len(arcs)))
        final = [math.inf] * n
        final[n - 1] = 0.0
        extra_final = draw(st.lists(st.integers(0, n - 2), max_size=1))
        for s in extra_final:
            final[s] = draw(st.floats(0, 2))
        src = [a[0] for a in arcs]
        dst = [a[1] for a in arcs]
        return Lattice.from_arcs(src=src, dst=dst, word=words, symbols=SYMS, final_graph_cost=final,
                                 t0=[times[s] for s in src], t1=[times[d] for d in dst], graph_cost=g,
                                 acoustic_cost=ac, key="rand")

    return build()


def enumerate_paths(lat: Lattice, labels, cost, final):
    """Every complete path as (arc list, cost)."""
    offs = lat.out_arc_offsets()
    out = []

    def rec(s, arcs, c):
        if np.isfinite(final[s]):
            out.append((tuple(arcs), c + final[s]))
        for a in range(offs[s], offs[s + 1]):
            arcs.append(a)
            rec(int(lat.dst[a]), arcs, c + cost[a])
            arcs.pop()

    rec(0, [], 0.0)
    return out


def brute_force_sequences(lat: Lattice, labels, cost, final):
    """dict word-id tuple -> log-semiring cost of all its paths."""
    seqs: dict = {}
    for arcs, c in enumerate_paths(lat, labels, cost, final):
        key = tuple(int(labels[a]) for a in arcs if labels[a] != 0)
        seqs[key] = log_add(seqs.get(key, math.inf), c)
    return seqs


# ---------------------------------------------------------------------------------------------
# Real lattices

@functools.cache
def pocketsphinx_slf(wav_name: str, tmpdir: str) -> str:
    """Decode a bundled clip with pocketsphinx (wide beams) into an SLF lattice; returns the path."""
    from lattice_tools.decode.pocketsphinx import decode_audio

    path = os.path.join(tmpdir, Path(wav_name).stem + ".lat")
    if not os.path.exists(path):
        decode_audio([str(DATA / "librivox" / wav_name)], out_dir=tmpdir, lw=6.5, beam=1e-60, wbeam=1e-40,
                     pbeam=1e-60, config={"lpbeam": 1e-40, "lponlybeam": 1e-40})
    return path


def read_slf_lattice(path: str, key: str = "") -> Lattice:
    """The toolkit's SLF reader; if it rejects the file (older versions refused pocketsphinx words
    that begin with a quote, e.g. ``'em``), a minimal pocketsphinx-dialect parser: words on nodes,
    link ``S -> E`` carries node ``S``'s word from ``t[S]`` to ``t[E]``, ``a=`` acoustic."""
    from lattice_tools.core.errors import FormatError
    from lattice_tools.io.lattices.slf import read_slf

    key = key or Path(path).stem
    try:
        return read_slf(path, key=key)
    except FormatError:
        pass
    nodes, links, header = {}, [], {}
    for line in open(path, encoding="utf-8"):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if "I" in fields:
            w = fields.get("W", "!NULL")
            w = w[: w.rindex("(")] if w.endswith(")") and "(" in w else w
            nodes[int(fields["I"])] = (float(fields.get("t", "0")), w)
        elif "J" in fields:
            links.append((int(fields["S"]), int(fields["E"]), float(fields.get("a", "0"))))
        else:
            header.update(fields)
    fillers = {"!NULL", "!SENT_START", "!SENT_END"}
    syms = SymbolTable.from_words(sorted({w for _, w in nodes.values()} - fillers))
    fs = 0.01
    src, dst, wid, t0, t1, ac = [], [], [], [], [], []
    for s, e, a in links:
        w = nodes[s][1]
        src.append(s)
        dst.append(e)
        wid.append(0 if w in fillers else syms.id(w))
        t0.append(int(round(nodes[s][0] / fs)))
        t1.append(int(round(nodes[e][0] / fs)))
        ac.append(-a)
    final = [math.inf] * (max(nodes) + 1)
    final[int(header["end"])] = 0.0
    return Lattice.from_arcs(src=src, dst=dst, word=wid, symbols=syms, final_graph_cost=final,
                             start=int(header["start"]), t0=t0, t1=t1, acoustic_cost=ac, frame_shift=fs, key=key)


def k2_frame_lattices(name: str = "hlg_lattice.pt"):
    """Frame-level k2 lattices built from ``k2_decoded.json`` (no k2 needed): one arc per frame,
    words on some arcs (2-word arcs become a chain of two arcs at the same frame), k2's final
    (-1) arcs kept as epsilon arcs into the super-final state."""
    dec = json.load(open(K2 / "k2_decoded.json"))["files"][name]
    syms = SymbolTable.read(str(K2 / "words.txt"))
    out = []
    ss, asp = dec["state_splits"], dec["arc_splits"]
    for u in range(len(ss) - 1):
        lo, hi = asp[u], asp[u + 1]
        nst = ss[u + 1] - ss[u]
        src, dst, word, t0, t1, g, ac = [], [], [], [], [], [], []
        nxt = nst
        for i in range(lo, hi):
            s, d, lab, score = dec["src"][i], dec["dst"][i], dec["label"][i], dec["score"][i]
            lms = dec["lm_scores"][i]
            fr = dec["frame"][i]
            ws = dec["aux_labels"][i]
            ws = [w for w in (ws if isinstance(ws, list) else [ws]) if w > 0]
            if len(ws) <= 1:
                src.append(s)
                dst.append(d)
                word.append(ws[0] if ws else 0)
                t0.append(fr)
                t1.append(fr + (0 if lab == -1 else 1))
                g.append(-lms)
                ac.append(-(score - lms))
            else:  # chain with equal frames; weights on the first arc
                prev = s
                for k, w in enumerate(ws):
                    tgt = d if k == len(ws) - 1 else nxt
                    if tgt == nxt:
                        nxt += 1
                    src.append(prev)
                    dst.append(tgt)
                    word.append(w)
                    t0.append(fr)
                    t1.append(fr + 1)
                    g.append(-lms if k == 0 else 0.0)
                    ac.append(-(score - lms) if k == 0 else 0.0)
                    prev = tgt
        final = [math.inf] * nxt
        final[nst - 1] = 0.0
        lat = Lattice.from_arcs(src=src, dst=dst, word=word, symbols=syms, final_graph_cost=final, t0=t0, t1=t1,
                                graph_cost=g, acoustic_cost=ac, frame_shift=0.04, key=f"utt{u}", word_aligned=False,
                                num_states=nxt)
        out.append(lat)
    return out


# ---------------------------------------------------------------------------------------------
# kaldifst references

def to_kaldifst(num_states, src, dst, labels, cost, final, *, fresh_states=True, start_weights=None):
    """A StdVectorFst acceptor; with ``fresh_states`` every labelled arc goes through a fresh state
    (``s -w-> x -eps-> d``), the pitfalls.md workaround for determinize_star(use_log=True)."""
    import kaldifst

    fst = kaldifst.StdVectorFst()
    for _ in range(num_states):
        fst.add_state()
    if start_weights is None:
        fst.start = 0
    else:
        st = fst.add_state()
        fst.start = st
        for s, w in start_weights.items():
            fst.add_arc(st, kaldifst.StdArc(0, 0, float(w), int(s)))
    for s, d, w, c in zip(np.asarray(src).tolist(), np.asarray(dst).tolist(), np.asarray(labels).tolist(),
                          np.asarray(cost).tolist(), strict=False):
        if w != 0 and fresh_states:
            x = fst.add_state()
            fst.add_arc(s, kaldifst.StdArc(w, w, c, x))
            fst.add_arc(x, kaldifst.StdArc(0, 0, 0.0, d))
        else:
            fst.add_arc(s, kaldifst.StdArc(w, w, c, d))
    for s, f in enumerate(np.asarray(final).tolist()):
        if math.isfinite(f):
            fst.set_final(s, f)
    return fst


def kaldifst_log_determinize(fst):
    import kaldifst

    kaldifst.determinize_star(fst, delta=1e-6, use_log=True)
    return fst


def fst_paths(fst):
    """All (labels, cost) paths of an acyclic StdVectorFst (for small FSTs / n-best outputs)."""
    import kaldifst

    out = []
    if fst.start < 0:
        return out

    def rec(s, labs, c):
        fw = fst.final(s).value
        if math.isfinite(fw):
            out.append((tuple(labs), c + fw))
        for arc in kaldifst.ArcIterator(fst, s):
            if arc.olabel:
                labs.append(arc.olabel)
            rec(arc.nextstate, labs, c + arc.weight.value)
            if arc.olabel:
                labs.pop()

    rec(fst.start, [], 0.0)
    return out


def fst_nbest(fst, n):
    """kaldifst shortest_path(n) on a (deterministic) FST: list of (labels, cost), best first."""
    import kaldifst

    sp = kaldifst.shortest_path(fst, n=n)
    paths = fst_paths(sp)
    return sorted(paths, key=lambda p: p[1])


def chained_lattice_strategy():
    """2-3 random lattices joined end to start (so that phrase cuts exist), plus random
    'crossing' arcs spanning the joins, with random (possibly high) costs."""
    from hypothesis import strategies as st

    @st.composite
    def build(draw):
        parts = draw(st.lists(lattice_strategy(max_states=5, max_arcs=8), min_size=2, max_size=3))
        src, dst, word, t0, t1, g, ac = [], [], [], [], [], [], []
        offset_state, offset_time = 0, 0
        for p in parts:
            # every final state of a part is joined to the part's last state by an epsilon arc
            last = p.num_states - 1
            for s in np.flatnonzero(p.is_final):
                if s != last:
                    src.append(offset_state + int(s))
                    dst.append(offset_state + last)
                    word.append(0)
                    t0.append(offset_time + int(p.t1.max()))
                    t1.append(offset_time + int(p.t1.max()))
                    g.append(float(p.final_graph_cost[s]))
                    ac.append(0.0)
            for a in range(p.num_arcs):
                src.append(offset_state + int(p.src[a]))
                dst.append(offset_state + int(p.dst[a]))
                word.append(int(p.word[a]))
                t0.append(offset_time + int(p.t0[a]))
                t1.append(offset_time + int(p.t1[a]))
                g.append(float(p.graph_cost[a]))
                ac.append(float(p.acoustic_cost[a]))
            offset_state += last
            offset_time += int(p.t1.max())
        n = offset_state + 1
        times = np.zeros(n, dtype=np.int64)
        for d, b in zip(dst, t1, strict=True):
            times[d] = max(times[d], b)
        for _ in range(draw(st.integers(0, 2))):
            s = draw(st.integers(0, n - 2))
            d = draw(st.integers(s + 1, n - 1))
            src.append(s)
            dst.append(d)
            word.append(draw(st.sampled_from([1, 2, 3])))
            t0.append(int(times[s]))
            t1.append(int(times[d]))
            g.append(draw(st.floats(0, 12)))
            ac.append(0.0)
        final = [math.inf] * n
        final[n - 1] = 0.0
        return Lattice.from_arcs(src=src, dst=dst, word=word, symbols=SYMS, final_graph_cost=final, t0=t0, t1=t1,
                                 graph_cost=g, acoustic_cost=ac, key="chain")

    return build()


_PS_DIR = None


def ps_lattice(wav_name: str = "sense_and_sensibility_01_austen_64kb-0880.wav") -> Lattice:
    """A real pocketsphinx lattice of a bundled clip (decoded once per test session)."""
    import tempfile

    global _PS_DIR
    if _PS_DIR is None:
        _PS_DIR = tempfile.mkdtemp(prefix="alt-tests-")
    return read_slf_lattice(pocketsphinx_slf(wav_name, _PS_DIR))


def naive_masked_phrase_nbest(num_states, src, dst, labels, cost, final, phrase, k, n):
    """Faria et al., section 3.4 literally, with kaldifst: mask every arc outside phrase k to epsilon,
    log-determinize the whole masked lattice (pitfalls.md workaround, delta 1e-6), take the n
    shortest paths.  Returns [(labels, cost)] best first."""
    masked = np.where(np.asarray(phrase) == k, labels, 0)
    fst = to_kaldifst(num_states, src, dst, masked, cost, final)
    kaldifst_log_determinize(fst)
    return fst_nbest(fst, n)


def lattice_search_problem(lat: Lattice, labels, cost, final, beta):
    """The whole lattice as a :class:`~lattice_tools.alternatives._fastsearch.SearchProblem` (start
    state 0, every arc's id its index; ``beta``: the backward bound) -- the phrase search engine run
    on a whole lattice, a differential oracle for the N-best engine."""
    from lattice_tools.alternatives._fastsearch import SearchProblem

    fin = np.flatnonzero(np.isfinite(final))
    return SearchProblem(lat.num_states, lat.src, lat.dst, labels, cost, np.arange(lat.num_arcs), np.array([0]),
                         np.array([0.0]), np.array([0.0]), fin, final[fin], final[fin], beta)
