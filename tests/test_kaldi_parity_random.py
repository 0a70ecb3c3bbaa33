"""Random lattices against the Kaldi binaries (slow; skipped when Kaldi's latbin tools are absent).

Each example writes a few random CompactLattices as a Kaldi text archive -- consistent state
times, all final states at the same frame, states often not numbered topologically, several
final states, tid strings on final weights -- and compares lattice-tools with Kaldi on: MBR
(lattice-mbr-decode: words, Bayes risk, every sausage bin, bin times, at acoustic scales 1 and
0.1), the best path (lattice-best-path), the tropical N-best (lattice-determinize |
lattice-to-nbest) and the oracle error counts (lattice-oracle)."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest
from _kaldi_helpers import kaldi_env, require_kaldi
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms.kaldi_ops import nbest_kaldi
from lattice_tools.io import read_lattices
from lattice_tools.pipelines import latbin

pytestmark = pytest.mark.slow

TOOLS = ("lattice-mbr-decode", "lattice-best-path", "lattice-determinize", "lattice-to-nbest", "lattice-copy",
         "lattice-oracle")


@st.composite
def kaldi_lattice(draw, key):
    """Text of one CompactLattice: states with frames, arcs forward in time, permuted state ids."""
    n = draw(st.integers(2, 8))
    frames = sorted(draw(st.lists(st.integers(0, 12), min_size=n - 1, max_size=n - 1)))
    frames = [0] + [f + 1 + i for i, f in enumerate(frames)]  # strictly increasing: state 0 first
    end = frames[-1] + draw(st.integers(0, 2))
    arcs = [(i, i + 1) for i in range(n - 1)]  # a complete path
    for _ in range(draw(st.integers(0, 12))):
        s = draw(st.integers(0, n - 2))
        arcs.append((s, draw(st.integers(s + 1, n - 1))))
    finals = sorted(set([n - 1] + draw(st.lists(st.integers(1, n - 2), max_size=2)) if n > 2 else [n - 1]))
    perm = list(range(n))
    if draw(st.booleans()):
        rest = perm[1:]
        perm = [0] + draw(st.permutations(rest))
    weight = st.integers(0, 40000).map(lambda x: round(x / 10000, 4))
    lines = [key]
    order = draw(st.permutations(list(range(len(arcs)))))
    # OpenFst text: the first line's state is the start state
    order = sorted(order, key=lambda i: arcs[i][0] != 0)
    for i in order:
        s, d = arcs[i]
        word = draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6]))
        tids = "_".join(["1"] * (frames[d] - frames[s]))
        lines.append(f"{perm[s]} {perm[d]} {word} {draw(weight)},{draw(weight)},{tids}")
    for f in finals:
        tids = "_".join(["1"] * (end - frames[f]))
        lines.append(f"{perm[f]} {draw(weight)},{draw(weight)},{tids}")
    return "\n".join(lines) + "\n\n"


def _run(cmd, **kw):
    res = subprocess.run(cmd, capture_output=True, text=True, env=kaldi_env(), **kw)
    assert res.returncode == 0, res.stderr[-2000:]
    return res


def _table(path):
    out = {}
    for line in open(path):
        k, _, rest = line.partition(" ")
        out[k] = rest
    return out


@settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.integers(0, 10), min_size=1, max_size=1).flatmap(
    lambda _: st.tuples(*[kaldi_lattice(f"u{i}") for i in range(4)])), st.sampled_from(["1.0", "0.1"]))
def test_random_lattices_equal_kaldi(tmp_path_factory, texts, scale):
    b = require_kaldi(*TOOLS)
    d = tmp_path_factory.mktemp("rk")
    ark = d / "in.ark"
    ark.write_text("".join(texts))
    spec = f"ark:{ark}"
    # MBR
    _run([b["lattice-mbr-decode"], f"--acoustic-scale={scale}", spec, f"ark,t:{d / 'k.tra'}", f"ark,t:{d / 'k.risk'}",
          f"ark,t:{d / 'k.saus'}", f"ark,t:{d / 'k.times'}"])
    latbin.mbr_decode(spec, tra=str(d / "o.tra"), bayes_risk=str(d / "o.risk"), sausage_stats=str(d / "o.saus"),
                      times=str(d / "o.times"), acoustic_scale=float(scale))
    for x in ("tra", "risk", "saus", "times"):
        assert (d / f"o.{x}").read_text() == (d / f"k.{x}").read_text(), x
    # best path
    _run([b["lattice-best-path"], f"--acoustic-scale={scale}", spec, f"ark,t:{d / 'kb.tra'}"])
    latbin.best_path(spec, tra=str(d / "ob.tra"), acoustic_scale=float(scale))
    assert (d / "ob.tra").read_text() == (d / "kb.tra").read_text()
    # tropical N-best (sequences and order; exact cost ties may be ordered either way)
    det = subprocess.Popen([b["lattice-determinize"], f"--acoustic-scale={scale}", spec, "ark:-"],
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=kaldi_env())
    nb = subprocess.Popen([b["lattice-to-nbest"], "--n=5", f"--acoustic-scale={scale}", "ark:-", "ark:-"],
                          stdin=det.stdout, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=kaldi_env())
    _run([b["lattice-copy"], "ark:-", f"ark,t:{d / 'nb.txt'}"], stdin=nb.stdout)
    det.wait()
    nb.wait()
    want = {lat.key: [int(w) for w in lat.word if w] for lat in read_lattices(f"ark,t:{d / 'nb.txt'}")}
    for lat in read_lattices(spec):
        got = nbest_kaldi(lat, 5, acoustic_scale=float(scale))
        keys = sorted((k for k in want if k.rsplit("-", 1)[0] == lat.key), key=lambda k: int(k.rsplit("-", 1)[1]))
        assert len(keys) == len(got)
        for i, e in enumerate(got):
            if list(e.words) != want[keys[i]]:
                ac = float(np.float32(float(scale)))
                c = [x.graph_cost + ac * x.acoustic_cost for x in got]
                tied = [j for j in range(len(got)) if abs(c[j] - c[i]) < 1e-4]
                assert any(list(got[j].words) == want[keys[i]] for j in tied), (lat.key, i)
    # oracle against a reference made of the same word ids
    ref = d / "ref.txt"
    rng = np.random.default_rng(len(texts[0]))
    ref.write_text("".join(f"u{i} " + " ".join(map(str, rng.integers(1, 7, rng.integers(0, 5)))) + "\n"
                           for i in range(len(texts))))
    _run([b["lattice-oracle"], spec, f"ark,t:{ref}", "ark:/dev/null", f"ark,t:{d / 'ko.err'}"])
    latbin.oracle(spec, str(ref), errors=str(d / "oo.err"))
    assert (d / "oo.err").read_text() == (d / "ko.err").read_text()
