"""``silence_rule="kaldi"``: each silence arc bounded as ``lattice-to-kws-index --max-silence-frames`` bounds
it, checked against Kaldi's own index of the bundled lattices (skipped when the Kaldi binaries are absent),
and the index setting that records the rule."""
from __future__ import annotations

import math
import subprocess
from collections import defaultdict
from pathlib import Path

import pytest
from _kaldi_helpers import kaldi_env, require_kaldi

from lattice_tools.core.errors import MismatchError
from lattice_tools.io import read_lattices
from lattice_tools.kws.build import build_lattice_index
from lattice_tools.kws.index import index_lattice
from lattice_tools.kws.store import TermIndex, merge_indexes

LATS = Path(__file__).parent / "data" / "kaldi" / "lats"
DATA = Path(__file__).parent / "data" / "kaldi_kws"
TOOLS = ("lattice-to-kws-index", "kws-index-union", "transcripts-to-fsts", "kws-search")


def bundled():
    return list(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi",
                              symbols=str(LATS / "bundled.words.txt")))


def our_hits(lats, umap, max_silence, rule):
    out = {}
    for lat in lats:
        for h in index_lattice(lat, max_length=2, max_silence=max_silence, silence_rule=rule):
            key = (tuple(lat.symbols.id(w) for w in h.words), umap[lat.key], round(h.tbeg * 100),
                   round((h.tbeg + h.dur) * 100))
            out[key] = h.score
    return out


def kaldi_hits(terms, frames, workdir):
    tools = require_kaldi(*TOOLS)

    def run(*cmd, **kw):
        p = subprocess.run(cmd, capture_output=True, env=kaldi_env(), **kw)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
        return p.stdout
    kw = workdir / "kw.int"
    kw.write_text("".join(f"K{i} {' '.join(map(str, t))}\n" for i, t in enumerate(terms)))
    # no state budget: the whole index (the fixture's --max-states-scale=4 leaves one utterance partial)
    idx = run(tools["lattice-to-kws-index"], "--max-states-scale=-1", f"--max-silence-frames={frames}",
              f"ark:{DATA / 'utter.map'}", f"ark:gunzip -c {LATS / 'bundled.ark.gz'}|", "ark:-")
    run(tools["kws-index-union"], "ark:-", f"ark:{workdir / 'index'}", input=idx)
    run(tools["transcripts-to-fsts"], f"ark:{kw}", f"ark:{workdir / 'kw.fsts'}")
    run(tools["kws-search"], "--negative-tolerance=-1", f"ark:{workdir / 'index'}", f"ark:{workdir / 'kw.fsts'}",
        f"ark,t:{workdir / 'hits.txt'}")
    out = {}
    for line in (workdir / "hits.txt").read_text().splitlines():
        k, u, b, e, sc = line.split()
        out[(terms[int(k[1:])], int(u), int(b), int(e))] = float(sc)
    return out


@pytest.mark.parametrize("frames", [5, 10])
def test_kaldi_rule_equals_kaldi_index(tmp_path, frames):
    """With --max-silence-frames=F, Kaldi's index of the bundled lattices finds a one- or two-word term in
    exactly the utterances where the kaldi rule finds it (the gap rule misses some), with nearly the same summed
    posterior; single words hit for hit, score within 2^-10 (Kaldi's quantization).

    Two-word terms are compared per utterance: Kaldi keeps fewer separate hits of them than our time
    clustering (it splits hits by the last word's cluster only), which the silence rule does not touch."""
    require_kaldi(*TOOLS)
    lats = bundled()
    umap = {k: int(v) for k, v in (line.split() for line in (DATA / "utter.map").read_text().splitlines() if line)}
    kaldi_rule = our_hits(lats, umap, frames / 100, "kaldi")
    gap_rule = our_hits(lats, umap, frames / 100, "gap")
    terms = sorted({k[0] for k in kaldi_rule} | {k[0] for k in gap_rule})
    kaldi = kaldi_hits(terms, frames, tmp_path)

    def per_utterance(hits, score):
        out = defaultdict(float)
        for k, s in hits.items():
            out[k[:2]] += score(s)
        return out
    theirs = per_utterance(kaldi, lambda s: math.exp(-s))
    ours = per_utterance(kaldi_rule, lambda s: min(1.0, s))
    assert set(ours) == set(theirs)
    assert set(per_utterance(gap_rule, float)) < set(theirs)
    # Kaldi's scores are quantized (2^-10 per minimized weight): sums within 2^-8 relative or 1e-3
    # absolute; Kaldi's sums of some weak two-word terms are smaller (the separate hits it does not
    # keep), and a clamped hit (an expected count above 1: a term twice on one path) can differ
    off = [k for k, p in ours.items() if not math.isclose(p, theirs[k], rel_tol=2 ** -8, abs_tol=1e-3)]
    assert len(off) <= len(ours) // 500, off
    singles = {k: s for k, s in kaldi.items() if len(k[0]) == 1}
    assert set(singles) == {k for k in kaldi_rule if len(k[0]) == 1}
    for key, score in singles.items():
        assert -math.log(min(1.0, kaldi_rule[key])) == pytest.approx(score, abs=2 ** -10), key


def test_rules_agree_without_a_limit_and_kaldi_allows_more():
    lat = bundled()[0]
    same = lambda hs: sorted((h.words, h.tbeg, h.dur, round(h.score, 12)) for h in hs)  # noqa: E731
    assert same(index_lattice(lat, max_length=2, max_silence=None, silence_rule="kaldi")) == same(
        index_lattice(lat, max_length=2, max_silence=None))
    # each arc of a gap is at most the gap: every gap-rule hit is a kaldi-rule hit
    for ms in (0.02, 0.05, 0.5):
        gap = {(h.words, h.tbeg, h.dur) for h in index_lattice(lat, max_length=2, max_silence=ms)}
        kaldi = {(h.words, h.tbeg, h.dur) for h in index_lattice(lat, max_length=2, max_silence=ms,
                                                                    silence_rule="kaldi")}
        assert {k for k in gap if len(k[0]) == 1} == {k for k in kaldi if len(k[0]) == 1}
        assert len(kaldi) >= len(gap)
    with pytest.raises(ValueError, match="silence rule"):
        index_lattice(lat, silence_rule="frames")


def test_index_records_the_rule_and_merge_checks_it(tmp_path):
    lats = bundled()
    build_lattice_index(lats[:5], str(tmp_path / "a.db"), max_length=2, silence_rule="kaldi")
    build_lattice_index(lats[5:], str(tmp_path / "b.db"), max_length=2)
    with TermIndex(str(tmp_path / "a.db")) as idx:
        assert idx.settings["silence_rule"] == "kaldi"
    with TermIndex(str(tmp_path / "b.db")) as idx:
        assert idx.settings["silence_rule"] == "gap"
    with pytest.raises(MismatchError, match="silence_rule"):
        merge_indexes(str(tmp_path / "m.db"), [str(tmp_path / "a.db"), str(tmp_path / "b.db")])
    assert not (tmp_path / "m.db").exists()
    build_lattice_index(lats[5:], str(tmp_path / "c.db"), max_length=2, silence_rule="kaldi")
    merge_indexes(str(tmp_path / "m.db"), [str(tmp_path / "a.db"), str(tmp_path / "c.db")])
    with TermIndex(str(tmp_path / "m.db")) as idx:
        assert idx.settings["silence_rule"] == "kaldi"


def test_silence_rule_counts_per_utterance():
    """The hits the kaldi rule adds at 0.5 s come from gaps of several short silences."""
    lats = bundled()
    added = defaultdict(int)
    for lat in lats:
        gap = {(h.words, h.tbeg) for h in index_lattice(lat, max_length=2, max_silence=0.5)}
        for h in index_lattice(lat, max_length=2, max_silence=0.5, silence_rule="kaldi"):
            if (h.words, h.tbeg) not in gap:
                assert len(h.words) == 2
                added[lat.key] += 1
    assert sum(added.values()) > 0
