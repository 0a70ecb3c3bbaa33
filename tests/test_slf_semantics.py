"""SLF semantics on real files and the SLF crash cases.

Real files: a Sphinx-III SLF lattice without end= (tests/data/slf/PROVENANCE.md); the HTK/SRILM
score fields (n=, header scales) on small files written in those tools' layouts.
"""
from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from lattice_tools.algorithms import arc_posteriors, best_path, total_log_prob
from lattice_tools.alternatives.sausages import sausage
from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, LatticeToolsError
from lattice_tools.io import read_lattices
from lattice_tools.io.lattices.slf import SlfWarning, is_filler, read_slf, read_slf_with_header

DATA = Path(__file__).parent / "data" / "slf"
PITTSBURGH = list("PITTSBURGH")


def _words(lat, arcs):
    return [lat.symbols.word(int(w)) for w in lat.word[arcs] if w]


# ---------------------------------------------------------------------------------------------
# end node (no end= in the header)
# ---------------------------------------------------------------------------------------------
def test_sphinx3_lattice_without_end_takes_the_latest_dead_end():
    """Sphinx-III writes no end=; its lattice keeps dead ends of pruned hypotheses.  Making each of
    them final (the old reading) gave "P I" as the certain best path; the decoder says PITTSBURGH."""
    path = DATA / "sphinx3_pittsburgh.slf"
    with pytest.warns(SlfWarning, match=r"7 nodes without outgoing links; node 0 at t=3\.29"):
        lat, hdr = read_slf_with_header(path)
    assert hdr.variant == "sphinx3"
    assert _words(lat, best_path(lat)) == PITTSBURGH
    # every complete path is the decoder's answer: posterior 1 on each letter
    one_best = sausage(lat).one_best()
    assert one_best == PITTSBURGH
    assert int(np.sum(lat.is_final)) == 1
    # the dead ends' partial paths are gone, so no arc has zero posterior
    assert np.all(arc_posteriors(lat) > 1 - 1e-9)


def test_sphinx3_lattice_one_best_oracle_is_zero(tmp_path):
    """The issue's measurement: 1-best oracle WER 80 % (P I, 8 deletions) with every dead end final."""
    ref = tmp_path / "ref.trn"
    ref.write_text("P I T T S B U R G H (pittsburgh.littleendian)\n")
    with pytest.warns(SlfWarning, match="no end="):
        result = CliRunner().invoke(main, ["oracle", str(DATA / "sphinx3_pittsburgh.slf"), "-r", str(ref),
                                           "--representation", "1best"])
    assert result.exit_code == 0, result.output
    assert "%WER 0.00 [ 0 / 10," in result.output


def test_end_node_rule_latest_then_sentence_end_then_lowest_id():
    head = "VERSION=1.0\nN=5 L=4\n"
    nodes = "I=0 t=0.0\nI=1 t=0.5\nI=2 t={t2}\nI=3 t={t3}\nI=4 t={t4}\n"
    links = "J=0 S=0 E=1 W=a a=-1\nJ=1 S=1 E=2 W={w2} a=-1\nJ=2 S=1 E=3 W={w3} a=-1\nJ=3 S=1 E=4 W={w4} a=-1\n"

    def end_word(**kw):
        text = head + nodes.format(**kw) + links.format(**kw)
        with pytest.warns(SlfWarning, match="3 nodes without outgoing links"):
            lat = read_slf(text)
        return _words(lat, best_path(lat))[-1]

    assert end_word(t2=1.0, t3=2.0, t4=1.5, w2="x", w3="y", w4="z") == "y"            # latest
    assert end_word(t2=2.0, t3=2.0, t4=1.0, w2="x", w3="</s>", w4="z") == "a"          # </s> is a filler
    assert end_word(t2=2.0, t3=2.0, t4=2.0, w2="x", w3="y", w4="z") == "x"            # lowest id
    # a single dead end: no guess, no warning (HTK's rule)
    text = head.replace("N=5 L=4", "N=3 L=2") + "I=0 t=0.0\nI=1 t=0.5\nI=2 t=0.9\n" + \
        "J=0 S=0 E=1 W=a a=-1\nJ=1 S=1 E=2 W=b a=-1\n"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _words(read_slf(text), best_path(read_slf(text))) == ["a", "b"]
    # dead ends the start cannot reach are not candidates
    text = "VERSION=1.0\nN=4 L=3\nI=0 t=0\nI=1 t=1\nI=2 t=2\nI=3 t=9\nJ=0 S=0 E=1 W=a\nJ=1 S=1 E=2 W=b\nJ=2 S=3 E=1 W=c\n"
    with pytest.raises(FormatError, match="nodes without incoming links"):
        read_slf(text)
    text = text.replace("VERSION=1.0", "VERSION=1.0\nstart=0")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _words(read_slf(text), best_path(read_slf(text))) == ["a", "b"]


def test_kaldi_convert_slf_output_reads_like_the_kaldi_lattice(tmp_path):
    """Kaldi's utils/convert_slf.pl wrote this SLF from a real Kaldi lattice (no start=/end=, a
    terminal !NULL node, l= graph and a= acoustic scores): both readings agree exactly."""
    import gzip

    text = tmp_path / "utt8.txt"
    text.write_bytes(gzip.decompress((DATA / "kaldi_kgraph_utt8.lat.txt.gz").read_bytes()))
    [kaldi] = list(read_lattices(f"ark,t:{text}"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one sink: no guess
        slf = read_slf(DATA / "kaldi_kgraph_utt8.slf.gz", symbols=kaldi.symbols)
    assert slf.key == kaldi.key == "CVTE201703_00030_165916_7980"
    assert (slf.num_states, slf.num_arcs) == (kaldi.num_states, kaldi.num_arcs) == (35, 58)
    for scale in (1.0, 0.1):
        assert total_log_prob(slf, acoustic_scale=scale) == pytest.approx(total_log_prob(kaldi, acoustic_scale=scale),
                                                                         abs=1e-6)
        assert _words(slf, best_path(slf, acoustic_scale=scale)) == _words(kaldi, best_path(kaldi, acoustic_scale=scale))
    post_k, post_s = arc_posteriors(kaldi, acoustic_scale=0.1), arc_posteriors(slf, acoustic_scale=0.1)
    key = lambda lat, i: (int(lat.word[i]), int(lat.t0[i]), int(lat.t1[i]))  # noqa: E731
    by_k, by_s = {}, {}
    for lat, post, out in ((kaldi, post_k, by_k), (slf, post_s, by_s)):
        for i in range(lat.num_arcs):
            out[key(lat, i)] = out.get(key(lat, i), 0.0) + float(post[i])
    assert by_k.keys() == by_s.keys() and max(abs(by_k[x] - by_s[x]) for x in by_k) < 1e-9


# ---------------------------------------------------------------------------------------------
# scores: n=, header scales, base, tscale
# ---------------------------------------------------------------------------------------------
def test_ngram_field_carries_the_lm_of_ws97_style_lattices():
    """n= is SRILM's n-gram score (HTKLattice.cc; ngscale defaults to 1).  Ignoring it left the
    acoustics alone: "OKAY ACHE THE UH" instead of the consensus "OKAY GOOD" at acoustic scale 1/12."""
    path = DATA / "ws97_style_ngram.slf"
    lat = read_slf(path)
    assert sausage(lat, acoustic_scale=1 / 12).one_best() == ["OKAY", "GOOD"]
    assert _words(lat, best_path(lat, acoustic_scale=1 / 12)) == ["OKAY", "GOOD"]
    good = [i for i in range(lat.num_arcs) if lat.word[i] and lat.symbols.word(int(lat.word[i])) == "GOOD"][0]
    assert lat.graph_cost[good] == pytest.approx(3.05) and lat.acoustic_cost[good] == pytest.approx(618.5)
    # the same lattice without its n= scores gives the acoustic answer
    text = re.sub(r"\tn=\S+", "", path.read_text())
    assert sausage(read_slf(text), acoustic_scale=1 / 12).one_best() == ["OKAY", "ACHE", "THE", "UH"]
    # the long name and the header scale
    assert read_slf(path.read_text().replace("\tn=", "\tngram=")).graph_cost.tolist() == lat.graph_cost.tolist()
    scaled = read_slf(path.read_text().replace("VERSION=1.1", "VERSION=1.1\nngscale=2"))
    assert scaled.graph_cost[good] == pytest.approx(6.1)


def test_header_scales_are_applied_as_htk_does():
    """lmscale/wdpenalty apply by default (HTK LArcTotLike, SRILM readHTK): here they decide the best
    path; !ENTER/!EXIT/!NULL are not words."""
    path = DATA / "htk_lmscale.slf"
    lat, hdr = read_slf_with_header(path)
    assert hdr.applied and hdr.lmscale == 12.0 and hdr.wdpenalty == -10.0
    assert _words(lat, best_path(lat)) == ["OH", "HOW", "ARE", "YOU"]
    assert set(lat.words()) == {"OH", "HOW", "ARE", "YOU", "EWE"}
    # each link: acscale*a + lmscale*l + wdpenalty, the penalty on every link whose word is not !NULL
    by_word = {}
    for i in range(lat.num_arcs):
        by_word.setdefault(lat.symbols.word(int(lat.word[i])) if lat.word[i] else "<eps>", []).append(i)
    you = by_word["YOU"][0]
    assert -lat.graph_cost[you] == pytest.approx(12 * -0.436 - 10.0)
    assert -lat.acoustic_cost[you] == pytest.approx(-1394.44)
    first = int(np.argmin(lat.t0))  # the !NULL -> !ENTER link: !ENTER is a word for HTK's penalty
    assert -lat.graph_cost[first] == pytest.approx(-10.0)
    # scales="raw" is the old reading: raw scores, header left to the caller
    raw, rhdr = read_slf_with_header(path, scales="raw")
    assert _words(raw, best_path(raw)) == ["OH", "HOW", "ARE", "EWE"]
    assert _words(raw, best_path(raw, **rhdr.scales())) == ["OH", "HOW", "ARE", "YOU"]


def test_all_score_fields_and_their_scales():
    text = ("VERSION=1.0\nacscale=0.5 lmscale=2 ngscale=3 prscale=4 duscale=5 x1scale=6 wdpenalty=-1\n"
            "N=3 L=2\nI=0 t=0\nI=1 t=0.5\nI=2 t=1\n"
            "J=0 S=0 E=1 W=a a=-10 l=-1 n=-2 r=-0.5 ds=-0.25 x1=-0.125 x2=-100\n"
            "J=1 S=1 E=2 W=!NULL a=-10 l=-1 n=-2 r=-0.5 ds=-0.25 x1=-0.125 x2=-100\n")
    lat = read_slf(text)
    word_arc = int(np.argmax(lat.word > 0))
    null_arc = 1 - word_arc
    assert -lat.acoustic_cost[word_arc] == pytest.approx(-5.0)
    expected = 2 * -1 + 3 * -2 + 4 * -0.5 + 5 * -0.25 + 6 * -0.125  # x2scale absent: 0 (SRILM)
    assert -lat.graph_cost[word_arc] == pytest.approx(expected - 1)
    assert -lat.graph_cost[null_arc] == pytest.approx(expected)  # !NULL pays no penalty
    raw = read_slf(text, scales="raw")
    assert -raw.graph_cost[word_arc] == pytest.approx(-1 - 2 - 0.5)  # l + n + r, scale 1
    assert "r" in raw.attrs


def test_log_bases_and_time_scale():
    body = "N=2 L=1\nI=0 t=0\nI=1 t=50\nJ=0 S=0 E=1 W=w a={a} l={l}\n"
    # base=1 is HTK's spelling of natural logs (HNet.c ConvLogLikeFromBase); base=0: probabilities
    assert read_slf("base=1.0\n" + body.format(a=-2, l=-1)).acoustic_cost[0] == pytest.approx(2.0)
    probs = read_slf("base=0\n" + body.format(a=0.5, l=0.25))
    assert probs.acoustic_cost[0] == pytest.approx(math.log(2)) and probs.graph_cost[0] == pytest.approx(math.log(4))
    with pytest.raises(FormatError, match="non-finite a="):
        read_slf("base=0\n" + body.format(a=0, l=0.25))
    with pytest.warns(SlfWarning, match="SRILM"):
        ten = read_slf("base=10 wdpenalty=-1\n" + body.format(a=-2, l=-1))
    assert ten.graph_cost[0] == pytest.approx((1 + 1) * math.log(10))
    # tscale (HTK): times in units of tscale seconds
    assert read_slf("tscale=0.01\n" + body.format(a=-2, l=-1)).t1[0] == 50


def test_sphinx3_wdpenalty_is_a_probability():
    """Sphinx-III writes its -wip (a probability, 0.7) as wdpenalty=; its score is ln(0.7) a word."""
    with pytest.warns(SlfWarning):
        lat, hdr = read_slf_with_header(DATA / "sphinx3_pittsburgh.slf")
    assert hdr.wdpenalty == 0.7 and hdr.lmscale == 9.5
    p = [i for i in range(lat.num_arcs) if lat.word[i] and lat.symbols.word(int(lat.word[i])) == "P"][0]
    assert -lat.graph_cost[p] == pytest.approx(9.5 * -4.65 + math.log(0.7))
    assert -lat.acoustic_cost[p] == pytest.approx(-116.63)


# ---------------------------------------------------------------------------------------------
# fillers
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("word", ["!NULL", "!SENT_START", "!SENT_END", "!ENTER", "!EXIT", "SENT-START",
                                  "SENT-END", "<s>", "</s>", "<sil>", "-pau-"])
def test_fillers_of_htk_srilm_and_sphinx_are_not_words(word):
    text = f"VERSION=1.0\nN=3 L=2\nI=0 t=0\nI=1 t=0.5\nI=2 t=1\nJ=0 S=0 E=1 W={word} a=-1\nJ=1 S=1 E=2 W=yes a=-1\n"
    assert read_slf(text).words() == ["yes"]


def test_sphinx_noise_words_are_fillers_only_in_sphinx_lattices():
    assert is_filler("[NOISE]", "sphinx3") and is_filler("++BREATH++", "pocketsphinx")
    assert not is_filler("[NOISE]", "htk") and not is_filler("<unk>", "htk")
    assert not is_filler("yes", "sphinx3")


def test_alternatives_ctm_has_no_htk_fillers(tmp_path):
    ctm = tmp_path / "out.ctm"
    result = CliRunner().invoke(main, ["nbest", str(DATA / "htk_lmscale.slf"), "-n", "2", "--ctm", str(ctm)])
    assert result.exit_code == 0, result.output
    words = {line.split()[4] for line in ctm.read_text().splitlines() if line.strip() and not line.startswith(";;")}
    assert "!ENTER" not in words and "!EXIT" not in words and "!NULL" not in words
    assert "YOU" in words


# ---------------------------------------------------------------------------------------------
# malformed input: only the project's errors, naming the line
# ---------------------------------------------------------------------------------------------
GOOD = "VERSION=1.0\nN=3 L=2\nI=0 t=0.0\nI=1 t=0.3\nI=2 t=0.6\nJ=0 S=0 E=1 W=a a=-1\nJ=1 S=1 E=2 W=b a=-2\n"


@pytest.mark.parametrize("text, line, message", [
    (GOOD.replace("J=1 S=1", "J=99999999999999999999999999 S=1"), 7, "out of range"),
    (GOOD.replace("I=2 t", "I=99999999999999999999 t"), 5, "out of range"),
    (GOOD.replace("I=2 t", "I=999999999999999 t"), 5, "outside 0..2"),
    (GOOD.replace("E=2 W=b", "E=99999999999999999999999 W=b"), 7, "out of range"),
    (GOOD.replace("N=3", "N=99999999999999999999999"), 2, "out of range"),
    (GOOD.replace("t=0.6", "t=1e300"), 5, "not a time"),
    (GOOD.replace("t=0.6", "t=inf"), 5, "not a time"),
    (GOOD.replace("t=0.6", "t=-0.6"), 5, "not a time"),
    (GOOD.replace("a=-2", "a=-1e400"), 7, "non-finite a="),
    ("SUBLAT=x\n" + GOOD, 1, "sub-lattices"),
    (GOOD.replace("I=1 t=0.3", "I=1 t=0.3 L=sub"), 4, "sub-lattice"),
    (GOOD.replace("VERSION=1.0", "VERSION=1.0\ndir=x"), 2, "dir="),
    (GOOD.replace("E=2 W=b", "E=1_0 W=b"), 7, "not an integer"),    # int() would read 10, atoi() 1
    (GOOD.replace("a=-2", "a=-2_5"), 7, "not a number"),
    (GOOD.replace("E=2 W=b", "E=\u0661 W=b"), 7, "not an integer"),  # an Arabic-Indic digit
    (GOOD.replace("N=3 L=2", "N=3 L=2 lmscale=1_2"), 2, "not a number"),
])
def test_bad_numbers_are_format_errors_naming_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.slf"
    path.write_text(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy warning either
        with pytest.raises(FormatError, match=message) as err:
            read_slf(path)
    assert f"{path}:{line}" in str(err.value)


def test_long_field_names_are_accepted():
    """The HTK book's long names (NODE=, LINK=, time=, WORD=, acoustic=, language=, ngram=...)."""
    base = read_slf(GOOD)
    long_text = ("VERSION=1.0\nNODES=3 LINKS=2\nNODE=0 time=0.0\nNODE=1 TIME=0.3\nNODE=2 time=0.6\n"
                 "LINK=0 START=0 END=1 WORD=a acoustic=-1\nLINK=1 START=1 END=2 WORD=b acoustic=-2\n")
    mixed = GOOD.replace("I=0 t=0.0", "NODE=0 TIME=0.0").replace("J=0 S=0 E=1 W=a a=-1",
                                                                 "LINK=0 START=0 END=1 WORD=a acoustic=-1")
    for text in (long_text, mixed):
        lat = read_slf(text)
        assert lat.words() == base.words() and lat.acoustic_cost.tolist() == base.acoustic_cost.tolist()
        assert lat.t1.tolist() == base.t1.tolist()


def test_scores_on_nodes_belong_to_the_links_of_the_word():
    """SRILM -htk-scores-on-nodes: a=/r= on the node of the word (end node for dir=f)."""
    text = ("VERSION=1.0\nN=3 L=2\nI=0 t=0\nI=1 t=0.5 W=a a=-3 r=-0.5\nI=2 t=1 W=b a=-4 r=-0.25\n"
            "J=0 S=0 E=1 l=-1\nJ=1 S=1 E=2 l=-2\n")
    lat = read_slf(text)
    order = np.argsort(lat.t0)
    assert lat.acoustic_cost[order].tolist() == [3.0, 4.0]
    assert lat.graph_cost[order].tolist() == pytest.approx([1.5, 2.25])
    back = read_slf(text.replace("VERSION=1.0", "VERSION=1.0\ndir=b").replace("I=0 t=0", "I=0 t=0 W=z a=-9 r=0"))
    assert _words(back, np.argsort(back.t0)) == ["z", "a"]


def _mutations(data: bytes, n: int, seed: int):
    import random

    rng = random.Random(seed)
    alphabet = b"0123456789=. \n\tIJSEWatlnprNLbds-!#x'\"e~;"
    for _ in range(n):
        b = bytearray(data)
        for _ in range(rng.randint(1, 6)):
            op = rng.random()
            pos = rng.randrange(len(b))
            if op < 0.6:
                b[pos] = rng.choice(alphabet)
            elif op < 0.8:
                b[pos:pos] = bytes(rng.choice(alphabet) for _ in range(rng.randint(1, 30)))
            else:
                del b[pos:pos + rng.randint(1, 40)]
        if rng.random() < 0.1:
            b = b[: rng.randrange(len(b))]
        yield bytes(b)


def _fuzz(tmp_path, n, seed):
    import gzip

    files = [DATA / "htk_lmscale.slf", DATA / "ws97_style_ngram.slf", DATA / "sphinx3_pittsburgh.slf"]
    seeds = [f.read_bytes() for f in files] + [gzip.decompress((DATA / "sphinx3_pittsburgh.lat.gz").read_bytes())]
    bad = tmp_path / "fuzz.lat"
    outcomes = {"ok": 0, "error": 0}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SlfWarning)
        warnings.filterwarnings("error", category=RuntimeWarning)  # numpy overflow/invalid = a bug
        for i, data in enumerate(seeds):
            for mutant in _mutations(data, n, seed + i):
                bad.write_bytes(mutant)
                try:
                    list(read_lattices(str(bad)))
                    outcomes["ok"] += 1
                except LatticeToolsError:
                    outcomes["error"] += 1
    return outcomes


def test_fuzzed_slf_and_dag_files_raise_only_project_errors(tmp_path):
    outcomes = _fuzz(tmp_path, 150, 13)
    assert outcomes["error"] > 100 and outcomes["ok"] > 20


@pytest.mark.slow
def test_fuzzed_slf_and_dag_files_long_run(tmp_path):
    outcomes = _fuzz(tmp_path, 2500, 1013)  # 10,000 inputs
    assert sum(outcomes.values()) == 10000
