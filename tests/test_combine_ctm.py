"""CTM systems in posterior combination: a CTM's confidences are read as word posteriors (a confusion network
with one bin per word), mixed with the N-best systems' lattice by the systems' weights.

Checked by brute force: every path of the lattices enumerated with its probability, against the independent
word model of the confidences and against the weighted mean of the parts' path probabilities.
"""
from __future__ import annotations

import itertools
import math
import os

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_nbest_lists_io import lattice_paths

from lattice_tools.alternatives.combine import combine_systems, read_ctm_system
from lattice_tools.alternatives.nbest_merge import combine_nbests, confidence_lattice, mix_lattices, nbest_lattice
from lattice_tools.cli import main
from lattice_tools.core.errors import FormatError, LatticeError, MismatchError
from lattice_tools.io.transcripts.ctm import CtmAltBlock, read_ctm
from lattice_tools.io.transcripts.nbest_files import read_nbest

DATA = os.path.join(os.path.dirname(__file__), "data", "nbest")


def independent_words(words) -> dict[tuple[str, ...], float]:
    """The probability of every word sequence when word i is there with probability c_i, independently."""
    out: dict[tuple[str, ...], float] = {}
    for keep in itertools.product((True, False), repeat=len(words)):
        p = math.prod(c if k else 1.0 - c for k, (_, _, _, c) in zip(keep, words, strict=True))
        seq = tuple(w for k, (w, *_) in zip(keep, words, strict=True) if k)
        if p > 0:
            out[seq] = out.get(seq, 0.0) + p
    return out


timed_words = st.lists(st.tuples(st.sampled_from("abc"), st.floats(0.0, 0.5), st.floats(0.0, 0.5),
                                 st.sampled_from([0.0, 0.25, 0.5, 0.9, 1.0])), max_size=5)


def _words(raw):
    out, t = [], 0.0
    for w, gap, dur, c in raw:
        out.append((w, t + gap, t + gap + dur, c))
        t += gap + dur
    return out


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timed_words)
def test_confidence_lattice_paths_are_the_independent_word_model(raw):
    words = _words(raw)
    lat = confidence_lattice("u", words)
    assert lat.has_times
    got = lattice_paths(lat)
    assert got == pytest.approx(independent_words(words), abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timed_words, timed_words, st.floats(0.0, 3.0), st.floats(0.1, 3.0))
def test_mixed_lattice_paths_are_the_weighted_mean(raw1, raw2, w1, w2):
    one = confidence_lattice("u", _words(raw1))
    two = confidence_lattice("u", _words(raw2), symbols=one.symbols)
    mixed = mix_lattices([(one, w1), (two, w2)])
    p1, p2 = lattice_paths(one), lattice_paths(two)
    expected = {k: (w1 * p1.get(k, 0.0) + w2 * p2.get(k, 0.0)) / (w1 + w2) for k in set(p1) | set(p2)}
    got = lattice_paths(mixed)
    assert set(got) <= set(expected)  # (a part of tiny weight can leave a path of probability 0)
    for k in expected:
        assert got.get(k, 0.0) == pytest.approx(expected[k], abs=1e-12), k


def test_mix_refuses_bad_weights_and_foreign_tables():
    a = confidence_lattice("u", [("x", 0.0, 0.1, 0.5)])
    b = confidence_lattice("u", [("y", 0.0, 0.1, 0.5)])  # its own table: "y" has the id "x" has in a's
    with pytest.raises(LatticeError, match="one word table"):
        mix_lattices([(a, 1.0), (b, 1.0)])
    with pytest.raises(LatticeError, match="weights"):
        mix_lattices([(a, 0.0)])
    with pytest.raises(LatticeError, match=r"\[0, 1\]"):
        confidence_lattice("u", [("x", 0.0, 0.1, 1.5)])


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_a_ctm_alone_gives_its_confidences_back(tmp_path):
    """One CTM combined with itself: each bin of the confusion network is a word with its confidence as its
    posterior and '@' with the rest; the 1-best keeps the words whose confidence is above 1/2."""
    ctm = _write(tmp_path / "sys.ctm", "utt1 1 0.00 0.30 the 0.9\nutt1 1 0.40 0.30 dog 0.3\n"
                                       "utt2 1 0.00 0.50 hello 1.0\nutt2 1 0.60 0.20 there\n")
    out = str(tmp_path / "out.ctm")
    stats = combine_systems([ctm, ctm], out)
    assert stats.utterances == 2 and stats.systems == 2 and stats.statistics.utterances == 2
    blocks = [item for item in read_ctm(out)]
    words = []
    for item in blocks:
        if isinstance(item, CtmAltBlock):
            words.append({alt[0].word if alt else "@": alt[0].confidence if alt else None for alt in item.alternatives})
        else:
            words.append({item.word: item.confidence})
    assert words[0] == {"the": pytest.approx(0.9), "@": None}
    assert words[1] == {"dog": pytest.approx(0.3), "@": None}
    assert words[2] == {"hello": pytest.approx(1.0)}
    assert words[3] == {"there": pytest.approx(1.0)}  # no confidence: 1
    one = str(tmp_path / "one.ctm")
    combine_systems([ctm, ctm], one, n=1)
    assert [w.word for w in read_ctm(one)] == ["the", "hello", "there"]


def test_ctm_mixed_with_nbest_lists(tmp_path):
    """An N-best system and a CTM system: the confusion network is that of the mixture of the N-best list's
    lattice (weight 3) and the CTM's network (weight 1)."""
    from lattice_tools.alternatives.sausages import sausage

    tsv = os.path.join(DATA, "generic.tsv")
    ctm = _write(tmp_path / "sys.ctm", "utt1 1 0.10 0.30 the 0.8\nutt1 1 0.40 0.40 dog 0.6\n")
    out = str(tmp_path / "out.ctm")
    combine_systems([tsv, ctm], out, weights=[3.0, 1.0])
    lists = list(read_nbest(tsv))
    lat = nbest_lattice(combine_nbests([lists[0]], [3.0]))
    words = read_ctm_system(ctm)["utt1"]
    mixed = mix_lattices([(lat, 3.0), (confidence_lattice("utt1", words, symbols=lat.symbols), 1.0)])
    paths = lattice_paths(mixed)
    nb = {a.words: a.posterior for a in lists[0].slots[0].alternatives}
    ctm_paths = independent_words(words)
    assert paths == pytest.approx({k: 0.75 * nb.get(k, 0.0) + 0.25 * ctm_paths.get(k, 0.0)
                                   for k in set(nb) | set(ctm_paths)})
    expected = sausage(mixed)
    got = [item for item in read_ctm(out) if item.file == "utt1"]
    assert len(got) == len(expected.slots)
    for item, slot in zip(got, expected.slots, strict=True):
        alts = item.alternatives if isinstance(item, CtmAltBlock) else ((item,),)
        assert [a[0].word if a else "@" for a in alts] == [" ".join(a.words) or "@" for a in slot.alternatives]
    # utt2 is not in the CTM: the CTM's output there is empty (one epsilon path, weight 1 of 4)
    utt2 = [item for item in read_ctm(out) if item.file == "utt2"]
    assert len(utt2) == 1 and isinstance(utt2[0], CtmAltBlock)
    conf = {a[0].word if a else "@": a[0].confidence if a else None for a in utt2[0].alternatives}
    assert conf["hello"] == pytest.approx(0.75 * 0.5, abs=1e-4) and conf["yellow"] == pytest.approx(0.375, abs=1e-4)


def test_without_ctm_systems_the_output_is_unchanged(tmp_path):
    """Giving the formats explicitly, or listing a CTM with weight 0, does not change the N-best systems'
    combination."""
    tsv, jsonl = os.path.join(DATA, "generic.tsv"), os.path.join(DATA, "generic.jsonl")
    ctm = _write(tmp_path / "sys.ctm", "utt1 1 0.10 0.30 dog 0.8\n")
    a, b = tmp_path / "a.ctm", tmp_path / "b.ctm"
    combine_systems([tsv, jsonl], str(a))
    combine_systems([tsv, jsonl, ctm], str(b), weights=[1.0, 1.0, 0.0])
    assert a.read_bytes() == b.read_bytes()


@pytest.mark.parametrize("text, words", [
    ("utt1 1 0.00 0.30 the 1.5\n", ["sys.ctm:1", "[0, 1]"]),
    ("utt1 1 * * the 0.5\n", ["sys.ctm:1", "no time"]),
    ("utt1 1 0.0 0.1 a 0.5\nutt1 2 0.2 0.1 b 0.5\n", ["sys.ctm:2", "channels"]),
    ("utt1 1 * * <ALT_BEGIN>\nutt1 1 0.0 0.1 a 0.5\nutt1 1 * * <ALT>\nutt1 1 * * @\nutt1 1 * * <ALT_END>\n",
     ["sys.ctm:1", "ALT block"]),
    ("utt9 1 0.00 0.30 the 0.5\n", ["sys.ctm", "utt9"]),
])
def test_bad_ctm_systems_are_refused_on_one_line(tmp_path, text, words):
    ctm = _write(tmp_path / "sys.ctm", text)
    out = tmp_path / "out.ctm"
    r = CliRunner().invoke(main, ["combine", os.path.join(DATA, "generic.tsv"), ctm, "-o", str(out)])
    assert r.exit_code == 2, r.output
    lines = [ln for ln in r.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("lattice-tools: error:"), r.output
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert not out.exists()
    with pytest.raises((FormatError, MismatchError)):
        combine_systems([os.path.join(DATA, "generic.tsv"), ctm], str(out))


def test_only_ctm_systems_with_the_ctm_format(tmp_path):
    one = _write(tmp_path / "one.txt", "b 1 0.0 0.2 x 0.7\na 1 0.0 0.2 y 0.4\n")
    two = _write(tmp_path / "two.txt", "a 1 0.0 0.2 y 0.8\n")
    out = tmp_path / "out.ctm"
    r = CliRunner().invoke(main, ["combine", "--nbest-format", "ctm", one, two, "-o", str(out), "-n", "1"])
    assert r.exit_code == 0, r.output
    # utterances sorted; a: y with (0.4 + 0.8) / 2 = 0.6; b: x with 0.7 / 2 (two has no b): '@' wins
    assert [(w.file, w.word, round(w.confidence, 4)) for w in read_ctm(str(out))] == [("a", "y", 0.6)]
