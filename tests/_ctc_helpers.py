"""Helpers for the CTC graph/decoder tests: synthetic CTC posteriors and brute-force path
enumeration over OpenFst arrays (independent of the decoders under test)."""
from __future__ import annotations

import numpy as np

from lattice_tools.ctc._fst import FstArrays


def unique_parses(tokens: list[str], lexicon: list[tuple[str, tuple[str, ...]]]) -> set[tuple[str, ...]]:
    """Every way to split ``tokens`` into lexicon pronunciations (word sequences)."""
    by_first: dict[str, list] = {}
    for w, pron in lexicon:
        by_first.setdefault(pron[0], []).append((w, pron))
    out: set[tuple[str, ...]] = set()

    def rec(i, words):
        if i == len(tokens):
            out.add(tuple(words))
            return
        for w, pron in by_first.get(tokens[i], []):
            if tuple(tokens[i:i + len(pron)]) == pron:
                rec(i + len(pron), words + [w])

    rec(0, [])
    return out


def ctc_alignment(token_ids: list[int], rng: np.random.Generator, *, lead_blanks: int = 1,
                  max_rep: int = 2, max_blanks: int = 2) -> list[int]:
    """A CTC frame labelling of ``token_ids`` (0 = blank): each token 1..max_rep frames, followed by
    0..max_blanks blanks (at least one blank between two equal tokens, as CTC requires)."""
    frames = [0] * lead_blanks
    for i, t in enumerate(token_ids):
        frames += [t] * int(rng.integers(1, max_rep + 1))
        nb = int(rng.integers(0, max_blanks + 1))
        if i + 1 < len(token_ids) and token_ids[i + 1] == t:
            nb = max(nb, 1)
        frames += [0] * nb
    frames += [0]
    return frames


def synthetic_logprobs(frames: list[int], num_tokens: int, rng: np.random.Generator, *, peak: float = 8.0,
                       noise: float = 0.5) -> np.ndarray:
    """log_softmax of Gaussian noise plus ``peak`` on each frame's target label ([T, num_tokens], float32)."""
    logits = rng.normal(0.0, noise, size=(len(frames), num_tokens))
    logits[np.arange(len(frames)), frames] += peak
    logits -= logits.max(axis=1, keepdims=True)
    return (logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))).astype(np.float32)


def enumerate_paths(g: FstArrays, frame_labels: list[int], max_eps: int = 12) -> dict[tuple[int, ...], list[float]]:
    """All paths of an OpenFst-style graph (input 0 = epsilon) that read exactly ``frame_labels``:
    ``{word ids (epsilon and ids in `ignore` removed): [total cost of each path]}`` (brute force DFS)."""
    order = np.argsort(g.src, kind="stable")
    offsets = np.searchsorted(g.src[order], np.arange(g.num_states + 1))
    out: dict[tuple[int, ...], list[float]] = {}

    def rec(s, i, cost, words, eps_run):
        if i == len(frame_labels) and np.isfinite(g.final[s]):
            out.setdefault(tuple(words), []).append(cost + float(g.final[s]))
        for k in order[offsets[s]:offsets[s + 1]]:
            il, ol = int(g.ilabel[k]), int(g.olabel[k])
            nw = words + [ol] if ol else words
            if il == 0:
                if eps_run < max_eps:
                    rec(int(g.dst[k]), i, cost + float(g.weight[k]), nw, eps_run + 1)
            elif i < len(frame_labels) and il == frame_labels[i]:
                rec(int(g.dst[k]), i + 1, cost + float(g.weight[k]), nw, 0)

    rec(g.start, 0, 0.0, [], 0)
    return out
