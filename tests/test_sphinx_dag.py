"""Sphinx DAG lattices (pocketsphinx ``Lattice.write``, Sphinx-III ``dag_write``): real files, the
cross-check against the SLF that pocketsphinx writes for the same lattice, malformed input."""
from __future__ import annotations

import gzip
import math
from pathlib import Path

import numpy as np
import pytest
from _io_helpers import canonical_arcs

from lattice_tools.algorithms import arc_posteriors, best_path, total_log_prob
from lattice_tools.core.errors import FormatError
from lattice_tools.io import guess_format, read_lattices
from lattice_tools.io.lattices.slf import read_slf
from lattice_tools.io.lattices.sphinx_dag import read_sphinx_dag

DATA = Path(__file__).parent / "data" / "slf"


def _nbest(path):
    """Sphinx-III astar N-best: (acoustic score A, [(word, start frame)]) per hypothesis."""
    out = []
    for line in path.read_text().splitlines():
        if not line.startswith("T "):
            continue
        tok = line.split()
        a = int(tok[3])
        rest = tok[6:]
        words = [(rest[i + 3], int(rest[i])) for i in range(0, len(rest) - 1, 4)]
        out.append((a, words))
    return out


def test_sphinx3_dag_matches_the_decoders_nbest():
    """The real Sphinx-III DAG (a .lat.gz, recognised from its content): its acoustic best path is the
    decoder's first hypothesis, with the same start frames and exactly its acoustic score A."""
    path = DATA / "sphinx3_pittsburgh.lat.gz"
    assert guess_format(str(path)) == "slf"
    [lat] = list(read_lattices(str(path)))
    assert lat.key == "sphinx3_pittsburgh"
    hyps = _nbest(DATA / "sphinx3_pittsburgh.nbest")
    a_best, words = hyps[0]
    arcs = best_path(lat)
    real = [(w, f) for w, f in words if w not in ("<s>", "</s>", "<sil>")]
    assert [(lat.symbols.word(int(lat.word[i])), int(lat.t0[i])) for i in arcs if lat.word[i]] == real
    assert -lat.acoustic_cost[arcs].sum() / math.log(1.0003) == pytest.approx(a_best, abs=1e-3)
    # the second hypothesis (MARCH) is a path of the lattice with its score too
    a2, words2 = hyps[1]
    assert "MARCH" in lat.words() and "U" in lat.words()
    assert a2 < a_best and "MARCH" in [w for w, _ in words2]
    assert np.all(lat.graph_cost == 0)  # the format has no LM score


def test_pocketsphinx_dag_and_slf_of_one_lattice_agree():
    """pocketsphinx wrote the same lattice object both ways (write / write_htk): same arcs (word,
    frames, acoustic score to the SLF's 6 decimals), same best path, same acoustic posteriors."""
    dag = read_sphinx_dag(DATA / "pocketsphinx_cards_002.dag.gz")
    slf = read_slf(DATA / "pocketsphinx_cards_002.lat.gz", weights="raw")
    assert dag.key == slf.key == "pocketsphinx_cards_002"
    a, b = canonical_arcs(dag), canonical_arcs(slf)
    assert len(a) == len(b) == dag.num_arcs
    for x, y in zip(a, b, strict=False):
        assert x[:4] == y[:4] and x[4] == pytest.approx(y[4], abs=1e-4)
    assert total_log_prob(dag) == pytest.approx(total_log_prob(slf), abs=1e-5)
    words = lambda lat: [lat.symbols.word(int(w)) for w in lat.word[best_path(lat)] if w]  # noqa: E731
    assert words(dag) == words(slf)
    for scale in (1.0, 0.1):
        pd = _posterior_by_arc(dag, scale)
        ps = _posterior_by_arc(slf, scale)
        assert pd.keys() == ps.keys()
        assert max(abs(pd[k] - ps[k]) for k in pd) < 1e-5


def _posterior_by_arc(lat, scale):
    post = arc_posteriors(lat, acoustic_scale=scale)
    out = {}
    for i in range(lat.num_arcs):
        k = (int(lat.word[i]) and lat.symbols.word(int(lat.word[i])), int(lat.t0[i]), int(lat.t1[i]))
        out[k] = out.get(k, 0.0) + float(post[i])
    return out


def test_live_pocketsphinx_writes_both_formats_and_they_agree(tmp_path):
    """Decode a bundled clip now, write both formats from one lattice, read both back."""
    pytest.importorskip("pocketsphinx")
    from lattice_tools.decode.pocketsphinx import _decoder, bundled_audio, load_audio

    audio = bundled_audio("cards")[2]
    d = _decoder(None, None, None, {})
    d.start_utt()
    d.process_raw(load_audio(audio), full_utt=True)
    d.end_utt()
    hyp = d.hyp().hypstr
    lattice = d.get_lattice()
    lattice.write(str(tmp_path / "u.dag"))
    lattice.write_htk(str(tmp_path / "u.lat"))
    [dag] = list(read_lattices(str(tmp_path / "u.dag")))
    slf = read_slf(tmp_path / "u.lat", weights="raw")
    assert dag.num_arcs == slf.num_arcs
    assert total_log_prob(dag) == pytest.approx(total_log_prob(slf), abs=1e-4)
    for scale in (1.0, 1 / 10):
        pd, ps = _posterior_by_arc(dag, scale), _posterior_by_arc(slf, scale)
        assert max(abs(pd[k] - ps[k]) for k in pd) < 1e-4
    assert hyp  # the decoder found words; the DAG's words are in its vocabulary
    assert set(hyp.split()) <= set(dag.words())


def test_dag_directory_and_explicit_format(tmp_path):
    raw = gzip.decompress((DATA / "pocketsphinx_cards_002.dag.gz").read_bytes())
    (tmp_path / "a.dag").write_bytes(raw)
    (tmp_path / "b.lat").write_bytes(gzip.decompress((DATA / "pocketsphinx_cards_002.lat.gz").read_bytes()))
    lats = list(read_lattices(str(tmp_path)))
    assert [lat.key for lat in lats] == ["a", "b"]
    assert guess_format(str(tmp_path / "a.dag")) == "sphinx"
    assert [lat.key for lat in read_lattices(str(tmp_path / "a.dag"), format="sphinx")] == ["a"]
    with pytest.raises(FormatError, match="not a Sphinx DAG"):
        list(read_lattices(str(tmp_path / "b.lat"), format="sphinx"))
    with pytest.raises(FormatError, match="not supported"):
        from lattice_tools.io import write_lattices
        write_lattices(lats[:1], str(tmp_path / "out.dag"))


DAG = """# getcwd: /x
# -logbase 1.000100e+00
Frames 30
Nodes 4 (NODEID WORD STARTFRAME FIRST-ENDFRAME LAST-ENDFRAME)
0 </s> 30 30 30 ; 0
1 go(2) 10 20 29 ; 1
2 no 10 20 29 ; 2
3 <s> 0 9 9 ; 3
Initial 3
Final 0
BestSegAscr 0 (NODEID ENDFRAME ASCORE)
Edges (FROM-NODEID TO-NODEID ASCORE)
3 1 -100
3 2 -300
3 2 -200
1 0 -1000
2 0 -1000
End
"""


def test_dag_semantics_on_a_small_file():
    lat = read_sphinx_dag(DAG, key="u")
    ln = math.log(1.0001)
    arcs = sorted((lat.symbols.word(int(w)) if w else "<eps>", int(a), int(b), round(c / ln, 6))
                  for w, a, b, c in zip(lat.word, lat.t0, lat.t1, lat.acoustic_cost, strict=False))
    # <s> carries frames 0-10 on each edge out of it; the repeated 3->2 edge keeps the best score
    # (ps_lattice_link); go(2) is go; the final node's </s> is on no edge
    assert arcs == [("<eps>", 0, 10, 100.0), ("<eps>", 0, 10, 200.0), ("go", 10, 30, 1000.0), ("no", 10, 30, 1000.0)]
    assert np.all(lat.graph_cost == 0) and lat.key == "u"


@pytest.mark.parametrize("text, line, message", [
    (DAG.replace("End\n", ""), 18, "truncated"),
    (DAG.replace("Nodes 4", "Nodes 99999999999"), 4, "lines left"),
    (DAG.replace("Nodes 4", "Nodes 999999999999999999999999"), 4, "not an integer|out of range"),
    (DAG.replace("2 no 10", "7 no 10"), 7, "expected 2"),
    (DAG.replace("2 no 10 20 29", "2 no 10 20"), 7, "node line"),
    (DAG.replace("Initial 3", "Initial 9"), 9, "not a node"),
    (DAG.replace("1 0 -1000", "1 5 -1000"), 16, "not a node"),
    (DAG.replace("1 0 -1000", "1 0 -1e9"), 16, "not an integer"),
    (DAG.replace("1 0 -1000", "1 1 -1000"), 16, "self-loop"),
    (DAG.replace("# -logbase 1.000100e+00\n", ""), 1, "logbase"),
    (DAG.replace("Frames 30", "Frame 30"), 1, "not a Sphinx DAG"),
    (DAG.replace("Initial 3", "Initial"), 9, "expected 'Initial N'"),
    (DAG.replace("2 0 -1000\n", "").replace("1 0 -1000\n", ""), 10, "not reachable"),
])
def test_malformed_dag_names_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.dag"
    path.write_text(text)
    with pytest.raises(FormatError, match=message) as err:
        read_sphinx_dag(path)
    assert f"{path}:{line}" in str(err.value)


def test_dag_without_logbase_takes_the_option():
    text = DAG.replace("# -logbase 1.000100e+00\n", "")
    lat = read_sphinx_dag(text, logbase=1.0003)
    assert lat.acoustic_cost.max() == pytest.approx(1000 * math.log(1.0003))
