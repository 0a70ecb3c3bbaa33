"""Cross-check with Kaldi's own lattice-to-kws-index + kws-search on random lattices (skipped when the
Kaldi binaries are not on PATH nor in $LATTICE_TOOLS_KALDI_BIN)."""
from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
from collections import defaultdict

import pytest
from _alt_helpers import lattice_strategy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives._common import word_labels
from lattice_tools.io import write_lattices
from lattice_tools.kws.index import index_lattice

TOOLS = ("lattice-to-kws-index", "kws-index-union", "transcripts-to-fsts", "kws-search")


def kaldi_tool(name):
    d = os.environ.get("LATTICE_TOOLS_KALDI_BIN")
    if d and os.access(os.path.join(d, name), os.X_OK):
        return os.path.join(d, name)
    return shutil.which(name)


pytestmark = pytest.mark.skipif(any(kaldi_tool(t) is None for t in TOOLS),
                                reason="Kaldi kwsbin tools not on PATH nor in $LATTICE_TOOLS_KALDI_BIN")


def kaldi_hits(lats, terms, workdir):
    """Kaldi's hits {(term ids, utt index, start frame, end frame): posterior}."""
    ark = os.path.join(workdir, "lats.ark")
    # silence is an epsilon for Kaldi's index too; the exact determinization (no state budget)
    write_lattices([lat.replace(word=word_labels(lat), ilabel=word_labels(lat)) for lat in lats], f"ark,t:{ark}",
                   format="kaldi")
    umap = os.path.join(workdir, "utter.map")
    with open(umap, "w") as f:
        for i, lat in enumerate(lats):
            f.write(f"{lat.key} {i + 1}\n")
    kw = os.path.join(workdir, "kw.int")
    with open(kw, "w") as f:
        for i, t in enumerate(terms):
            f.write(f"K{i} {' '.join(map(str, t))}\n")
    def run(*cmd, **kw):
        p = subprocess.run(cmd, capture_output=True, **kw)
        assert p.returncode == 0, (cmd, p.stderr[-2000:])
        return p
    idx = run(kaldi_tool("lattice-to-kws-index"), "--max-states-scale=-1", "--max-silence-frames=100000",
              f"ark:{umap}", f"ark:{ark}", "ark:-").stdout
    run(kaldi_tool("kws-index-union"), "ark:-", f"ark:{workdir}/index", input=idx)
    run(kaldi_tool("transcripts-to-fsts"), f"ark:{kw}", f"ark:{workdir}/kw.fsts")
    run(kaldi_tool("kws-search"), "--negative-tolerance=-1000", f"ark:{workdir}/index", f"ark:{workdir}/kw.fsts",
        f"ark,t:{workdir}/hits.txt")
    out = defaultdict(list)
    for line in open(f"{workdir}/hits.txt"):
        k, u, b, e, sc = line.split()
        out[(terms[int(k[1:])], int(u) - 1)].append((int(b), int(e), math.exp(-float(sc))))
    return out


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lats=st.lists(lattice_strategy(max_states=7, max_arcs=12), min_size=10, max_size=10))
def test_hits_equal_kaldi_on_random_lattices(lats):
    # Kaldi counts frames from 0 at the start state
    lats = [lat.replace(key=f"u{i:02d}", t0=lat.t0 - lat.t0[0], t1=lat.t1 - lat.t0[0]) for i, lat in enumerate(lats)]
    ours = defaultdict(list)
    for i, lat in enumerate(lats):
        for h in index_lattice(lat, max_length=2, max_silence=None):
            ids = tuple(lat.symbols.id(w) for w in h.words)
            ours[(ids, i)].append((round(h.tbeg * 100), round((h.tbeg + h.dur) * 100), min(1.0, h.score)))
    terms = sorted({t for t, _ in ours})
    if not terms:
        return
    with tempfile.TemporaryDirectory() as workdir:
        kaldi = kaldi_hits(lats, terms, workdir)
    close = lambda p, q: abs(math.log(p) - math.log(q)) <= 2 ** -9  # noqa: E731  (Kaldi: multiples of 2^-10)
    # every Kaldi hit is one of ours: same term, utterance, frames and score
    for key, hits in kaldi.items():
        for b, e, p in hits:
            assert any((b, e) == (b2, e2) and close(p, p2) for b2, e2, p2 in ours[key]), (key, b, e, p, ours[key])
    # each of our hits (above Kaldi's precision) is Kaldi's, or Kaldi merged it into a better hit that
    # overlaps it: two cluster sequences of a term that reach one state of Kaldi's determinized index
    # share its output label, and kws-search's tropical ShortestPath keeps only the better one
    for key, hits in ours.items():
        for b, e, p in hits:
            if p < 1e-3 or any((b, e) == (b2, e2) and close(p, p2) for b2, e2, p2 in kaldi[key]):
                continue
            assert any(b2 < e and b < e2 and p2 >= p * (1 - 2 ** -9) for b2, e2, p2 in kaldi[key]), \
                (key, b, e, p, kaldi[key])
