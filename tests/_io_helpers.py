"""Helpers for the lattice I/O tests: canonical forms, an independent forward pass, real decodes."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable

DATA = Path(__file__).resolve().parent.parent / "lattice_tools" / "data"


def canonical_arcs(lat: Lattice, digits: int = 5) -> list[tuple]:
    """Arcs as a sorted list of (word, t0, t1, graph, acoustic): equal for two numberings of one lattice."""
    out = []
    for i in range(lat.num_arcs):
        w = lat.symbols.word(int(lat.word[i])) if lat.word[i] else "<eps>"
        out.append((w, int(lat.t0[i]), int(lat.t1[i]), round(float(lat.graph_cost[i]), digits),
                    round(float(lat.acoustic_cost[i]), digits)))
    return sorted(out)


def total_log_prob_reference(lat: Lattice, acoustic_scale: float = 1.0, lm_scale: float = 1.0) -> float:
    """log sum over complete paths of exp(-cost), by a plain-Python DP over a fresh topological order
    (independent of lattice_tools.algorithms)."""
    n = lat.num_states
    out = [[] for _ in range(n)]
    indeg = [0] * n
    for i in range(lat.num_arcs):
        out[int(lat.src[i])].append(i)
        indeg[int(lat.dst[i])] += 1
    order, stack = [], [s for s in range(n) if indeg[s] == 0]
    while stack:
        s = stack.pop()
        order.append(s)
        for a in out[s]:
            d = int(lat.dst[a])
            indeg[d] -= 1
            if indeg[d] == 0:
                stack.append(d)
    alpha = [-math.inf] * n
    alpha[0] = 0.0
    for s in order:
        if alpha[s] == -math.inf:
            continue
        for a in out[s]:
            d = int(lat.dst[a])
            v = alpha[s] - (lm_scale * lat.graph_cost[a] + acoustic_scale * lat.acoustic_cost[a])
            m = max(alpha[d], v)
            alpha[d] = m + math.log(math.exp(alpha[d] - m) + math.exp(v - m)) if m > -math.inf else v
    ends = [alpha[s] - (lm_scale * lat.final_graph_cost[s] + acoustic_scale * lat.final_acoustic_cost[s])
            for s in range(n) if math.isfinite(lat.final_graph_cost[s]) and alpha[s] > -math.inf]
    m = max(ends)
    return m + math.log(sum(math.exp(e - m) for e in ends))


def word_sequences(lat: Lattice, limit: int = 100000) -> dict[tuple, float]:
    """All complete paths' word sequences with their log-summed score (small lattices only)."""
    out: dict[tuple, float] = {}
    offsets = lat.out_arc_offsets()
    count = [0]

    def visit(s, words, score):
        count[0] += 1
        assert count[0] < limit, "lattice too large to enumerate"
        if math.isfinite(lat.final_graph_cost[s]):
            sc = score - lat.final_graph_cost[s] - lat.final_acoustic_cost[s]
            key = tuple(words)
            out[key] = np.logaddexp(out.get(key, -math.inf), sc)
        for a in range(offsets[s], offsets[s + 1]):
            w = lat.symbols.word(int(lat.word[a])) if lat.word[a] else None
            visit(int(lat.dst[a]), words + ([w] if w else []),
                  score - lat.graph_cost[a] - lat.acoustic_cost[a])

    visit(0, [], 0.0)
    return out


def kaldi_raw_lattice(seed: int = 0, num_frames: int = 20, lattice_beam: float = 8.0):
    """A real Kaldi raw ``Lattice`` (kaldifst.Lattice) from kaldi-decoder's LatticeSimpleDecoder on
    a 3-word CTC-style graph (ilabel = token + 1, words a/b/c = 1/2/3) and random log-probs."""
    import kaldi_decoder
    import kaldifst  # noqa: F401  (kaldi_decoder needs it imported first)

    text = "\n".join([
        "0 0 1 0 0", "0 1 2 1 0.5", "1 1 2 0 0", "1 0 1 0 0", "0 2 3 2 0.7", "2 2 3 0 0", "2 0 1 0 0",
        "0 3 4 3 1.0", "3 3 4 0 0", "3 0 1 0 0", "1 0", "2 0", "3 0", "0 0"]) + "\n"
    fst = kaldifst.compile(text, acceptor=False)
    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(num_frames, 4)).astype(np.float32) * 2
    logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
    cfg = kaldi_decoder.LatticeSimpleDecoderConfig()
    cfg.beam = 20.0
    cfg.lattice_beam = lattice_beam
    dec = kaldi_decoder.LatticeSimpleDecoder(fst, cfg)
    dec.decode(kaldi_decoder.DecodableCtc(logp.astype(np.float32)))
    ok, lat = dec.get_raw_lattice()
    assert ok
    return lat


WORDS_ABC = SymbolTable({"a": 1, "b": 2, "c": 3})


def small_word_lattice(key: str = "utt1") -> Lattice:
    """A hand-made word lattice with times, graph and acoustic costs, an epsilon arc, two finals."""
    syms = SymbolTable({"the": 1, "cat": 2, "sat": 3, "a": 4, "hat": 5})
    #  0 -the-> 1 -cat-> 3 -sat-> 4(final)
    #  0 -a->   2 -hat-> 3 ;  1 -eps-> 2 ; 3 -eps-> 5(final, cost)
    return Lattice.from_arcs(
        src=[0, 0, 1, 2, 3, 1, 3], dst=[1, 2, 3, 3, 4, 2, 5], word=[1, 4, 2, 5, 3, 0, 0], symbols=syms,
        t0=[0, 0, 12, 12, 40, 12, 40], t1=[12, 12, 40, 40, 61, 12, 61],
        graph_cost=[1.5, 2.25, 0.5, 3.0, 0.125, 0.0, 1.0], acoustic_cost=[10.5, 11.0, 20.25, 19.0, 15.5, 0.0, 30.0],
        final_graph_cost=[np.inf, np.inf, np.inf, np.inf, 0.0, 0.5], final_acoustic_cost=[0, 0, 0, 0, 0, 0.25],
        key=key, frame_shift=0.01)


_DECODED: dict = {}


def decoded_pocketsphinx(tmp_path_factory) -> dict:
    """Decode the bundled "cards" clips and one LibriVox clip once per session.

    Returns ``{"dir": out_dir, "ctm": ctm_path, "lattices": [...], "audio": [...]}``; every test
    module shares the same decode (module-level cache).
    """
    if "result" not in _DECODED:
        from lattice_tools.decode.pocketsphinx import bundled_audio, decode_audio

        out = tmp_path_factory.mktemp("pocketsphinx")
        audio = bundled_audio("cards") + [str(DATA / "librivox" / "sense_and_sensibility_01_austen_64kb-0880.wav")]
        ctm = str(out / "hyp.ctm")
        lats = decode_audio(audio, out_dir=str(out / "lat"), ctm=ctm, progress=False)
        _DECODED["result"] = {"dir": str(out / "lat"), "ctm": ctm, "lattices": lats, "audio": audio}
    return _DECODED["result"]
