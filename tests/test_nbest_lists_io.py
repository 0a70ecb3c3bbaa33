"""N-best lists: the readers (generic, sherpa-onnx, ESPnet, Kaldi) and the N-best -> lattice merge.

The merge is checked against brute force: every path of the lattice enumerated with its
probability, compared with the N-best posteriors; oracles against the entries' own oracles.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives.nbest_merge import combine_nbests, nbest_lattice
from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.core.errors import FormatError, LatticeError, MismatchError
from lattice_tools.io.transcripts.nbest import nbest_posteriors, read_nbest_jsonl, read_nbest_tsv, write_nbest_tsv
from lattice_tools.io.transcripts.nbest_files import guess_nbest_format, read_nbest
from lattice_tools.oracle.api import lattice_oracle, sequence_oracle

DATA = os.path.join(os.path.dirname(__file__), "data", "nbest")
KALDI = os.path.join(os.path.dirname(__file__), "data", "kaldi")


def lattice_paths(lat) -> dict[tuple[str, ...], float]:
    """Every path of an acyclic lattice with its probability (exp of minus its graph cost), words summed."""
    out: dict[tuple[str, ...], float] = {}
    offsets = lat.out_arc_offsets()

    def walk(state, words, cost):
        fin = lat.final_graph_cost[state]
        if np.isfinite(fin):
            key = tuple(words)
            out[key] = out.get(key, 0.0) + math.exp(-(cost + fin))
        for a in range(int(offsets[state]), int(offsets[state + 1])):
            w = int(lat.word[a])
            walk(int(lat.dst[a]), words + ([lat.symbols.word(w)] if w else []), cost + float(lat.graph_cost[a]))

    walk(0, [], 0.0)
    return out


def nbest_of(entries, key="u1") -> Alternatives:
    alts = tuple(Alternative(tuple(w), *(times or ()), posterior=p) if times is None
                 else Alternative(tuple(w), times[0], times[1], posterior=p) for w, p, times in entries)
    return Alternatives(key, (Slot(0.0, 0.0, alts),), kind="nbest")


# --------------------------------------------------------------------------------------------- readers
def test_posteriors_of_each_score_kind():
    assert nbest_posteriors([0.0, math.log(3.0)], "logprob") == pytest.approx([0.25, 0.75])
    assert nbest_posteriors([0.0, math.log(3.0)], "cost") == pytest.approx([0.75, 0.25])
    assert nbest_posteriors([-1.0, -2.0], "logprob", score_scale=0.0) == pytest.approx([0.5, 0.5])
    assert nbest_posteriors([5.0, 7.0, 9.0], "none") == pytest.approx([1 / 3] * 3)
    # a scale sharpens: softmax(2 * l)
    p = nbest_posteriors([-1.0, -2.0], "logprob", score_scale=2.0)
    assert p[0] == pytest.approx(1 / (1 + math.exp(-2.0)))


def test_generic_tsv_and_jsonl_agree():
    tsv = list(read_nbest_tsv(os.path.join(DATA, "generic.tsv")))
    jsonl = list(read_nbest_jsonl(os.path.join(DATA, "generic.jsonl")))
    assert [a.key for a in tsv] == [a.key for a in jsonl] == ["utt1", "utt2"]
    for a, b in zip(tsv, jsonl, strict=True):
        assert a.slots[0].alternatives == b.slots[0].alternatives
    first = tsv[0].slots[0].alternatives
    # duplicates are summed: "the cat sat" appears at ranks 1 and 3
    assert [x.words for x in first] == [("the", "cat", "sat"), ("a", "cat", "sat"), ("the", "cat")]
    w = [math.exp(-1.0), math.exp(-2.0), math.exp(-3.0), math.exp(-4.0)]
    assert first[0].posterior == pytest.approx((w[0] + w[2]) / sum(w))
    assert first[0].starts == pytest.approx((0.1, 0.4, 0.8))
    assert tsv[1].meta["score_kind"] == "none"


def test_generic_round_trip(tmp_path):
    lists = list(read_nbest_tsv(os.path.join(DATA, "generic.tsv")))
    out = tmp_path / "back.tsv"
    assert write_nbest_tsv(str(out), lists) == 2
    back = list(read_nbest_tsv(str(out)))
    for a, b in zip(lists, back, strict=True):
        for x, y in zip(a.slots[0].alternatives, b.slots[0].alternatives, strict=True):
            assert x.words == y.words and x.posterior == pytest.approx(y.posterior, rel=1e-12)


@pytest.mark.parametrize("text, message", [
    ("u\t1\t-1\n", "4 or 5"),
    ("u\tx\t-1\ta b\n", "rank"),
    ("u\t1\tnan\ta b\n", "not finite"),
    ("u\t1\t-1\ta b\nu\t1\t-2\tb\n", "rank 1 appears twice"),
    ("u\t1\t-1\ta b\nu\t2\t-\tb\n", "has no score"),
    ("u\t1\t-1\ta b\tx:1\n", "word times"),
    ("u\t1\t-1\ta\t0.5:0.2\n", "ends before"),
    ("u\t1\t-1\ta\nv\t1\t-1\tb\nu\t2\t-1\tc\n", "consecutive"),
])
def test_generic_errors_name_the_line(tmp_path, text, message):
    path = tmp_path / "bad.tsv"
    path.write_text(text)
    with pytest.raises((FormatError, MismatchError), match=message) as info:
        list(read_nbest_tsv(str(path)))
    assert str(path) in str(info.value)


def test_sherpa_results():
    lists = list(read_nbest(os.path.join(DATA, "sherpa.jsonl")))
    assert guess_nbest_format(os.path.join(DATA, "sherpa.jsonl")) == "sherpa"
    assert [a.key for a in lists] == ["test_wavs/0.wav", "test_wavs/1.wav", "test_wavs/2.wav", "test_wavs/3.wav"]
    one = lists[0].slots[0].alternatives
    assert len(one) == 1 and one[0].posterior == 1.0
    assert one[0].words == ("the", "tribal", "chieftain", "called")
    assert lists[0].meta["scores"] == pytest.approx((-0.972,))  # the sum of ys_log_probs
    # words start at their first token; the last ends a median token gap after its last token
    assert one[0].starts == pytest.approx((0.90, 1.26, 1.80, 2.46))
    assert one[0].durations[-1] == pytest.approx(0.30)
    many = lists[1].slots[0].alternatives
    scores = lists[1].meta["scores"]
    assert scores == pytest.approx((-0.6, -1.5, -2.5))  # sums of ys_log_probs
    p = nbest_posteriors(list(scores), "logprob")
    assert [a.posterior for a in many] == pytest.approx(p)
    # a TDT result: the last word ends at its last token's timestamp plus that token's duration
    tdt = lists[2].slots[0].alternatives[0]
    assert tdt.words == ("good", "morning")
    assert [s + d for s, d in zip(tdt.starts, tdt.durations, strict=True)] == pytest.approx([0.64, 0.88 + 0.32])
    # a streaming result: ys_probs are its token log-probabilities, times count from its segment's start_time
    online = lists[3]
    assert online.meta["scores"] == pytest.approx((-0.65,))
    assert online.slots[0].alternatives[0].starts == pytest.approx((5.32, 5.72, 5.92))
    assert guess_nbest_format(os.path.join(DATA, "sherpa.jsonl")) == "sherpa"


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to build sherpa-onnx's JSON writers")
def test_sherpa_file_is_what_sherpa_onnx_writes(tmp_path):
    """The vendored results are the output of sherpa-onnx's own AsJsonString functions (copied verbatim from
    its sources into tests/data/nbest/sherpa_writer/), built and run here."""
    exe = tmp_path / "writer"
    src = os.path.join(DATA, "sherpa_writer")
    subprocess.run(["g++", "-std=c++17", "-o", str(exe), os.path.join(src, "writer.cc")], check=True, cwd=src)
    out = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout
    with open(os.path.join(DATA, "sherpa.jsonl"), encoding="utf-8") as f:
        assert out == f.read()


def test_sherpa_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "u", "text": "a b", "tokens": [" a", " b"], "timestamps": [0.1, 0.2], '
                   '"ys_probs": [-0.1, "x"]}\n')
    with pytest.raises(FormatError, match=r"bad.jsonl:1: .*ys_probs"):
        list(read_nbest(str(bad)))
    bad.write_text('{"key": "u", "text": "a", "tokens": [" a"], "timestamps": [0.1], "start_time": "late"}\n')
    with pytest.raises(FormatError, match="start_time"):
        list(read_nbest(str(bad)))


def test_espnet_directory():
    directory = os.path.join(DATA, "espnet_decode")
    assert guess_nbest_format(directory) == "espnet"
    lists = list(read_nbest(directory))
    assert [a.key for a in lists] == ["spk1-utt1", "spk1-utt2", "spk2-utt1"]
    a = lists[0]
    assert a.meta["scores"] == pytest.approx((-3.2126, -4.5051, -6.0))
    assert a.slots[0].alternatives[0].words == ("HELLO", "WORLD")
    assert len(lists[2].slots[0].alternatives) == 2  # missing from 3best_recog: a shorter list


def test_espnet_score_errors(tmp_path):
    d = tmp_path / "1best_recog"
    d.mkdir()
    (d / "text").write_text("u1 A B\n")
    (d / "score").write_text("u1 tensor(oops)\n")
    with pytest.raises(FormatError, match="score"):
        list(read_nbest(str(tmp_path)))


def test_kaldi_nbest_archive_matches_lattice_to_nbest_costs():
    spec = os.path.join(KALDI, "expected", "bundled", "acwt0.1", "nbest10.txt.gz")
    words = os.path.join(KALDI, "lats", "bundled.words.txt")
    lists = list(read_nbest(spec, "kaldi", symbols=words))
    assert len(lists) == 10 and lists[0].key == "001"
    costs = lists[0].meta["scores"]
    assert list(costs) == sorted(costs)  # lattice-to-nbest writes the best first
    assert costs[0] == pytest.approx(2.36068 + 0.755722 + 0.430948)
    best = lists[0].slots[0].alternatives[0]
    assert best.words == ("then", "of", "clubs")
    assert best.starts == pytest.approx((0.0, 0.34, 0.42))


# --------------------------------------------------------------------------------------------- merge
def test_shared_prefix_and_suffix_are_joined_and_paths_keep_posteriors():
    nb = nbest_of([(["a", "b", "c"], 0.5, None), (["x", "b", "c"], 0.3, None), (["a", "b", "d"], 0.2, None)])
    lat = nbest_lattice(nb)
    assert lattice_paths(lat) == pytest.approx({("a", "b", "c"): 0.5, ("x", "b", "c"): 0.3, ("a", "b", "d"): 0.2})
    # "a" shared (prefix), "b c" after "x" joins ... the tree had 8 arcs; the merged lattice fewer
    assert lat.num_arcs < 8


def test_times_join_creates_paths_and_can_lower_the_oracle():
    t = ((0.0, 0.5, 1.0), (0.5, 0.5, 0.5))
    nb = nbest_of([(["a", "b", "c"], 0.6, t), (["x", "b", "d"], 0.4, t)])
    exact = nbest_lattice(nb)
    assert set(lattice_paths(exact)) == {("a", "b", "c"), ("x", "b", "d")}
    joined = nbest_lattice(nb, join="times")
    paths = lattice_paths(joined)
    assert set(paths) == {("a", "b", "c"), ("x", "b", "d"), ("a", "b", "d"), ("x", "b", "c")}
    assert sum(paths.values()) == pytest.approx(1.0)
    ref = "a b d"
    best_entry = min(sequence_oracle(a.words, ref).cost for a in nb.slots[0].alternatives)
    assert lattice_oracle(exact, ref).cost == best_entry
    assert lattice_oracle(joined, ref).cost < best_entry


def test_merge_errors():
    with pytest.raises(LatticeError, match="word times"):
        nbest_lattice(nbest_of([(["a"], 1.0, None)]), join="times")
    with pytest.raises(LatticeError, match="join"):
        nbest_lattice(nbest_of([(["a"], 1.0, None)]), join="nope")
    with pytest.raises(LatticeError, match="posterior above 0"):
        nbest_lattice(nbest_of([(["a"], 0.0, None)]))


words_st = st.lists(st.sampled_from(["a", "b", "c", "d"]), min_size=0, max_size=5)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(words_st, st.floats(0.01, 1.0)), min_size=1, max_size=8, unique_by=lambda e: tuple(e[0])))
def test_paths_join_is_the_nbest_exactly(entries):
    total = sum(p for _, p in entries)
    nb = nbest_of([(w, p, None) for w, p in entries])
    lat = nbest_lattice(nb)
    expected = {tuple(w): p / total for w, p in entries}
    assert lattice_paths(lat) == pytest.approx(expected, rel=1e-9, abs=1e-12)
    ref = ["a", "b", "c"]
    assert lattice_oracle(lat, ref).cost == min(sequence_oracle(tuple(w), ref).cost for w, _ in entries)


@st.composite
def any_entries(draw):
    """N-best entries of every kind the merge meets: untimed, timed with gaps, overlaps, zero-length and
    repeated words, an entry whose times are unknown (NaN), equal posteriors."""
    untimed = draw(st.booleans())
    out = []
    for _ in range(draw(st.integers(1, 10))):
        n = draw(st.integers(0, 5))
        words = [draw(st.sampled_from(["a", "b", "c"])) for _ in range(n)]
        if untimed or (n and draw(st.integers(0, 9)) == 0):
            times = (tuple([float("nan")] * n), tuple([float("nan")] * n)) if not untimed else None
        else:
            starts = tuple(draw(st.integers(0, 24)) / 20 for _ in range(n))
            times = (starts, tuple(draw(st.integers(0, 8)) / 20 for _ in range(n)))
        out.append((words, draw(st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0])), times))
    return out


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_entries())
def test_compiled_paths_merge_equals_its_python_transcription(entries):
    """The compiled prefix-tree merge gives the arrays of tests/_reference/nbest_paths_lattice.py, bit for bit."""
    from _reference.nbest_paths_lattice import paths_lattice

    from lattice_tools.alternatives.nbest_merge import _entries, _symbols

    nb = nbest_of(entries)
    got = nbest_lattice(nb, frame_shift=0.05)
    kept = _entries(nb)
    expected = paths_lattice(nb.key, kept, _symbols(None, kept), 0.05)
    assert got.num_states == expected.num_states
    for name in ("src", "dst", "word", "t0", "t1", "graph_cost", "final_graph_cost"):
        assert np.array_equal(getattr(got, name), getattr(expected, name)), name
    assert list(got.symbols) == list(expected.symbols)


@st.composite
def timed_entries(draw):
    out = []
    for _ in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 4))
        words = [draw(st.sampled_from(["a", "b", "c"])) for _ in range(n)]
        bounds = sorted(draw(st.lists(st.integers(0, 12), min_size=2 * n, max_size=2 * n, unique=True)))
        starts = tuple(bounds[2 * i] / 10 for i in range(n))
        durs = tuple((bounds[2 * i + 1] - bounds[2 * i]) / 10 for i in range(n))
        out.append((words, draw(st.floats(0.01, 1.0)), (starts, durs)))
    return out


@settings(max_examples=150, deadline=None)
@given(timed_entries())
def test_times_join_keeps_word_posteriors(entries):
    from lattice_tools.algorithms.scores import arc_posteriors

    nb = nbest_of(entries)
    total = sum(p for _, p, _ in entries)
    lat = nbest_lattice(nb, join="times", frame_shift=0.1)
    gamma: dict[tuple, float] = {}
    for words, p, (starts, durs) in entries:
        for w, s, d in zip(words, starts, durs, strict=True):
            k = (w, round(s * 10), round((s + d) * 10))
            gamma[k] = gamma.get(k, 0.0) + p / total
    post = arc_posteriors(lat)
    got = {}
    for a in range(lat.num_arcs):
        if lat.word[a]:
            got[(lat.symbols.word(int(lat.word[a])), int(lat.t0[a]), int(lat.t1[a]))] = float(post[a])
    assert got == pytest.approx(gamma, rel=1e-9, abs=1e-12)
    paths = lattice_paths(lat)
    assert sum(paths.values()) == pytest.approx(1.0)
    for words, _, _ in entries:
        assert tuple(words) in paths  # every entry is still a path
    # the oracle is the best of every path, the new ones included (brute force over the paths)
    ref = ["a", "b", "c"]
    brute = min(sequence_oracle(words, ref).cost for words in paths)
    assert lattice_oracle(lat, ref).cost == brute
    assert brute <= min(sequence_oracle(tuple(w), ref).cost for w, _, _ in entries)


def test_combine_nbests_weights_systems():
    one = nbest_of([(["a", "b"], 0.75, None), (["a", "c"], 0.25, None)])
    two = nbest_of([(["a", "c"], 1.0, None)])
    comb = combine_nbests([one, two])
    assert {a.words: a.posterior for a in comb.slots[0].alternatives} == pytest.approx(
        {("a", "b"): 0.375, ("a", "c"): 0.625})
    assert comb.slots[0].alternatives[0].words == ("a", "c")
    with pytest.raises(LatticeError, match="different utterances"):
        combine_nbests([one, nbest_of([(["a"], 1.0, None)], key="u2")])


def test_sausage_of_a_merged_nbest_runs():
    from lattice_tools.alternatives.sausages import sausage

    spec = os.path.join(KALDI, "expected", "bundled", "acwt0.1", "nbest10.txt.gz")
    words = os.path.join(KALDI, "lats", "bundled.words.txt")
    nb = next(read_nbest(spec, "kaldi", symbols=words, acoustic_scale=0.1))
    lat = nbest_lattice(nb, symbols=None)
    assert sum(lattice_paths(lat).values()) == pytest.approx(1.0)
    saus = sausage(lat)
    # the sausage's bins hold the N-best word posteriors: each bin sums to 1
    for slot in saus.slots:
        assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-6)
    assert json.dumps(saus.one_best())


@settings(max_examples=60, deadline=None)
@given(timed_entries())
def test_paths_join_with_times_is_exact_and_kaldi_writable(tmp_path_factory, entries):
    from lattice_tools.alternatives.sausages import sausage
    from lattice_tools.io.lattices.lattice_files import read_lattices, write_lattices

    merged: dict[tuple, float] = {}
    for words, p, _ in entries:
        merged[tuple(words)] = merged.get(tuple(words), 0.0) + p
    total = sum(merged.values())
    # one entry per word sequence, as the readers give them
    seen, unique = set(), []
    for e in entries:
        if tuple(e[0]) not in seen:
            seen.add(tuple(e[0]))
            unique.append((e[0], merged[tuple(e[0])], e[2]))
    lat = nbest_lattice(nbest_of(unique), frame_shift=0.1)
    assert lattice_paths(lat) == pytest.approx({k: v / total for k, v in merged.items()}, rel=1e-9, abs=1e-12)
    # every path reaches each state at one frame: Kaldi's writer and the MBR sausage accept it
    path = str(tmp_path_factory.mktemp("ark") / "x.ark")
    write_lattices(lat, "ark,t:" + path)
    back = next(read_lattices("ark,t:" + path, "kaldi", lat.symbols, 0.1))
    assert lattice_paths(back) == pytest.approx(lattice_paths(lat), rel=1e-6, abs=1e-9)
    sausage(lat)


def test_commands_nbest_to_lattices_and_combine(tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main
    from lattice_tools.io.transcripts.ctm import read_ctm

    runner = CliRunner()
    ark, words = tmp_path / "x.ark", tmp_path / "words.txt"
    r = runner.invoke(main, ["nbest-to-lattices", os.path.join(DATA, "sherpa.jsonl"), "-o", f"ark:{ark}",
                             "--write-words", str(words)])
    assert r.exit_code == 0, r.output
    lats = list(read_nbest(os.path.join(DATA, "sherpa.jsonl")))
    from lattice_tools.io.lattices.lattice_files import read_lattices

    back = {lat.key: lat for lat in read_lattices(f"ark:{ark}", "kaldi", str(words))}
    for nb in lats:
        expected = {a.words: a.posterior for a in nb.slots[0].alternatives}
        assert lattice_paths(back[nb.key]) == pytest.approx(expected, rel=1e-6)
    out = tmp_path / "c.ctm"
    r = runner.invoke(main, ["combine", os.path.join(DATA, "generic.tsv"), os.path.join(DATA, "generic.jsonl"),
                             "-o", str(out), "-n", "1"])
    assert r.exit_code == 0, r.output
    assert [w.word for w in read_ctm(str(out))] == ["the", "cat", "sat", "yellow"]
    # untimed lists need --allow-untimed; missing utterances are named
    r = runner.invoke(main, ["combine", os.path.join(DATA, "espnet_decode"), os.path.join(DATA, "espnet_decode"),
                             "-o", str(out)])
    assert r.exit_code == 2 and "no word times" in r.output
    r = runner.invoke(main, ["combine", os.path.join(DATA, "espnet_decode"), os.path.join(DATA, "generic.tsv"),
                             "-o", str(out)])
    assert r.exit_code == 2 and "spk1-utt1" in r.output and "Traceback" not in r.output


def test_combine_from_lattices_equals_combine_from_their_nbest_files(tmp_path):
    """Two doors to the same combination: lattices (each lattice's exact N-best list) and the same
    N-best lists written to TSV files and read back."""
    from lattice_tools.alternatives.combine import combine_systems
    from lattice_tools.alternatives.nbest_lists import nbest
    from lattice_tools.io.lattices.lattice_files import read_lattices, write_lattices

    words = os.path.join(KALDI, "lats", "bundled.words.txt")
    lats = list(read_lattices(os.path.join(KALDI, "lats", "bundled.ark.gz"), "kaldi", words))[:3]
    write_lattices(lats, f"ark:{tmp_path / 'three.ark'}")
    for scale in (1.0, 0.5):
        tsv = str(tmp_path / "sys.tsv")
        write_nbest_tsv(tsv, [nbest(lat, 20, acoustic_scale=scale) for lat in lats])
        from_lattices, from_files = tmp_path / "a.ctm", tmp_path / "b.ctm"
        combine_systems([f"ark:{tmp_path / 'three.ark'}"] * 2, str(from_lattices), nbest_format="lattice",
                        words=words, acoustic_scale=scale, lattice_nbest=20)
        combine_systems([tsv, tsv], str(from_files))
        assert from_lattices.read_text() == from_files.read_text()
        assert from_files.read_text().count("<ALT_BEGIN>") > 0


def test_nemo_predictions_with_their_manifest(tmp_path):
    preds = os.path.join(DATA, "nemo", "preds_out_width3_alpha0.5_beta1.0.tsv")
    manifest = os.path.join(DATA, "nemo", "manifest.json")
    assert guess_nbest_format(preds) == "nemo"
    lists = list(read_nbest(preds, nemo_manifest=manifest))
    assert [a.key for a in lists] == ["1089-134686-0000", "1089-134686-0001"]
    assert lists[0].meta["scores"] == pytest.approx((-4.2171, -6.9403, -7.5512))
    assert lists[1].slots[0].alternatives[0].words[-1] == "him"
    with pytest.raises(FormatError, match="manifest"):
        list(read_nbest(preds))
    short = tmp_path / "preds_out_width2_alpha0.5_beta1.0.tsv"
    short.write_text("a b\t-1\na c\t-2\nd\t-1\n")
    with pytest.raises(MismatchError, match="utterances"):
        list(read_nbest(str(short), nemo_manifest=manifest))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(words_st, st.floats(0.01, 1.0)), min_size=1, max_size=6, unique_by=lambda e: tuple(e[0])))
def test_align_join_is_a_confusion_network_of_the_entries(entries):
    from lattice_tools.algorithms.scores import arc_posteriors

    nb = nbest_of([(w, p, None) for w, p in entries])
    lat = nbest_lattice(nb, join="align")
    paths = lattice_paths(lat)
    assert sum(paths.values()) == pytest.approx(1.0)
    for words, _ in entries:
        assert tuple(words) in paths  # every entry is a path of the network
    # a chain of slots: the posteriors of each slot's arcs add up to 1
    post = arc_posteriors(lat)
    for state in range(lat.num_states - 1):
        assert float(post[lat.src == state].sum()) == pytest.approx(1.0)
    ref = ["a", "b", "c"]
    brute = min(sequence_oracle(words, ref).cost for words in paths)
    assert lattice_oracle(lat, ref).cost == brute
    assert brute <= min(sequence_oracle(tuple(w), ref).cost for w, _ in entries)
