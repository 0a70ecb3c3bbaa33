"""Terms longer than the index's max_length: the one-term search of a lattice equals the index built
with max_length = the term's length, and brute-force path enumeration."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import pytest
from _alt_helpers import lattice_strategy
from hypothesis import given, settings
from hypothesis import strategies as st
from test_kws_index import brute_force_hits

from lattice_tools.kws.index import index_lattice, lattice_term_hits

LATS = Path(__file__).parent / "data" / "kaldi" / "lats"


def _by_place(hits):
    return {(h.tbeg, h.dur): h.score for h in hits}


def _assert_term_search_equals_index(lat, length, max_silence, min_posterior=0.0, max_terms=None):
    full = defaultdict(list)
    for h in index_lattice(lat, max_length=length, max_silence=max_silence, min_posterior=min_posterior):
        if len(h.words) == length:
            full[h.words].append(h)
    for words, hits in list(full.items())[:max_terms]:
        got = lattice_term_hits(lat, words, max_silence=max_silence, min_posterior=min_posterior)
        assert all(h.words == words and h.utterance == lat.key for h in got)
        assert _by_place(got).keys() == _by_place(hits).keys(), words
        assert _by_place(got) == pytest.approx(_by_place(hits), rel=1e-12, abs=1e-300), words
    return len(list(full)[:max_terms])


@settings(max_examples=80, deadline=None)
@given(lattice_strategy(max_states=11, max_arcs=20), st.integers(1, 6), st.sampled_from([None, 0.03, 0.1]))
def test_term_search_equals_brute_force(lat, length, max_silence):
    ref = defaultdict(list)
    for key, (p, b, e) in brute_force_hits(lat, length, max_silence).items():
        if len(key) == length:
            ref[tuple(w for w, _ in key)].append((round(min(b, e), 6), round(max(b, e), 6), p))
    for words, expected in ref.items():
        got = sorted((h.tbeg, round(h.tbeg + h.dur, 6), h.score)
                     for h in lattice_term_hits(lat, words, max_silence=max_silence))
        expected.sort()
        assert [g[:2] for g in got] == [x[:2] for x in expected], words
        assert [g[2] for g in got] == pytest.approx([x[2] for x in expected], rel=1e-9, abs=1e-12), words
    # a sequence the lattice does not read has no hits (a word repeated past its count on any path)
    if ref:
        words = next(iter(ref))
        assert lattice_term_hits(lat, words + ("no-such-word",)) == []


@settings(max_examples=40, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=16), st.integers(1, 5), st.sampled_from([None, 0.05]),
       st.sampled_from([0.0, 0.01, 0.2]))
def test_term_search_equals_index_of_that_length(lat, length, max_silence, min_posterior):
    _assert_term_search_equals_index(lat, length, max_silence, min_posterior)


def test_term_search_equals_index_on_bundled_lattices():
    """4- and 5-word sequences of real lattices (Kaldi archive of the bundled lattices; 25 per
    lattice and length: each term search recomputes the lattice's network)."""
    from lattice_tools.io import read_lattices

    lats = list(read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi",
                              symbols=str(LATS / "bundled.words.txt")))
    checked = 0
    for lat in lats[:2]:
        for length in (4, 5):
            checked += _assert_term_search_equals_index(lat, length, 0.5, max_terms=25)
    assert checked == 100


# ------------------------------------------------------------------------------------------------
# search(): long terms from the lattices of the candidate utterances

ARK = f"ark,t:{LATS / 'bundled.ark.gz'}"
WORDS = str(LATS / "bundled.words.txt")


def _bundled(n=3):
    from lattice_tools.io import read_lattices

    return list(read_lattices(ARK, format="kaldi", symbols=WORDS))[:n]


def _detections(res):
    return sorted((d.kwid, d.file, d.channel, d.tbeg, d.dur, d.score) for d in res.detections)


@pytest.fixture(scope="module")
def long_setup(tmp_path_factory):
    from lattice_tools.io.keyword_search.kwlist import KeywordTerm
    from lattice_tools.kws.build import build_lattice_index

    tmp = tmp_path_factory.mktemp("long")
    lats = _bundled()
    # two utterances placed in one recording at offsets: the long hits must carry the offsets too
    segments = {lat.key: ("rec", "A", 10.0 * i) for i, lat in enumerate(lats)}
    short, full = tmp / "short.db", tmp / "full.db"
    build_lattice_index(lats, str(short), max_length=2, segments=segments, acoustic_scale=0.5)
    build_lattice_index(lats, str(full), max_length=4, segments=segments, acoustic_scale=0.5)
    four = sorted({h.words for lat in lats for h in index_lattice(lat, max_length=4, acoustic_scale=0.5)
                   if len(h.words) == 4})
    terms = [KeywordTerm(f"KW{i}", " ".join(w)) for i, w in enumerate(four[::7])]
    terms.append(KeywordTerm("KWX", " ".join(four[0][:2] + four[-1][2:])))  # every piece in the index, maybe not the term
    return lats, short, full, terms


def test_long_terms_equal_the_index_built_that_long(long_setup):
    from lattice_tools.kws.search import search

    lats, short, full, terms = long_setup
    assert len(terms) > 10
    got = search(str(short), terms, duptime=0, lattices=iter(lats))
    ref = search(str(full), terms, duptime=0)
    assert got.too_long == [] and got.no_hits == ref.no_hits and got.oov == ref.oov == []
    a, b = _detections(got), _detections(ref)
    assert [x[:5] for x in a] == [x[:5] for x in b]
    assert [x[5] for x in a] == pytest.approx([x[5] for x in b], rel=1e-12, abs=1e-300)
    assert {x[1:3] for x in a} == {("rec", "A")} and max(x[3] for x in a) > 10.0


def test_long_terms_without_lattices_are_too_long(long_setup):
    from lattice_tools.kws.search import search

    _, short, _, terms = long_setup
    assert search(str(short), terms).too_long == [t.kwid for t in terms]


def test_long_terms_need_every_candidate_lattice(long_setup):
    from lattice_tools.core.errors import MismatchError
    from lattice_tools.kws.search import search

    lats, short, _, terms = long_setup
    with pytest.raises(MismatchError, match="not in the lattices given"):
        search(str(short), terms, lattices=iter(lats[1:]))


def test_index_without_lattice_settings_names_what_is_missing(long_setup, tmp_path):
    import shutil
    import sqlite3

    from lattice_tools.core.errors import LatticeToolsError
    from lattice_tools.kws.search import search

    lats, short, _, terms = long_setup
    old = tmp_path / "old.db"
    shutil.copyfile(short, old)
    with sqlite3.connect(old) as c:  # an index written before the key existed
        c.execute("DELETE FROM meta WHERE key = 'lattice_search' OR key LIKE 'offset %'")
    with pytest.raises(LatticeToolsError, match="does not record the acoustic/LM scales.*--lattices"):
        search(str(old), terms, lattices=iter(lats))
    assert search(str(old), terms[:1]).too_long == [terms[0].kwid]
    short_terms = [type(terms[0])("S", " ".join(terms[0].words[:2]))]
    assert search(str(old), short_terms, lattices=iter(lats)).detections  # no long term: lattices unused


def test_append_and_merge_keep_the_lattice_settings(tmp_path):
    from lattice_tools.core.errors import MismatchError
    from lattice_tools.kws.build import build_lattice_index
    from lattice_tools.kws.store import TermIndex, merge_indexes

    lats = _bundled()
    a, b = tmp_path / "a.db", tmp_path / "b.db"
    build_lattice_index(lats[:1], str(a), segments={lats[0].key: ("r", "1", 3.5)}, lm_scale=2.0)
    with pytest.raises(MismatchError, match="other lattice settings"):
        build_lattice_index(lats[1:2], str(a), append=True, lm_scale=1.0)
    build_lattice_index(lats[1:2], str(b), lm_scale=2.0)
    merged = tmp_path / "m.db"
    merge_indexes(str(merged), [str(a), str(b)])
    with TermIndex(str(merged)) as idx:
        assert idx.lattice_search == {"acoustic_scale": 1.0, "lm_scale": 2.0, "word_penalty": 0.0,
                                      "silence_words": None}
        assert idx.utterance_place(lats[0].key) == ("r", "1", 3.5)
        assert idx.utterance_place(lats[1].key) == (lats[1].key, "1", 0.0)
    c = tmp_path / "c.db"
    build_lattice_index(lats[2:3], str(c), lm_scale=1.0)
    merge_indexes(str(merged), [str(a), str(c)])  # different settings: the merged index does not claim any
    with TermIndex(str(merged)) as idx:
        assert idx.lattice_search is None


def test_cli_long_terms(tmp_path):
    from click.testing import CliRunner

    from lattice_tools.cli import main

    def run(*args):
        return CliRunner().invoke(main, ["kws", *map(str, args)])

    lats = _bundled(10)
    four = sorted({h.words for lat in lats[:2] for h in index_lattice(lat, max_length=4) if len(h.words) == 4})
    kw = tmp_path / "kw.txt"
    kw.write_text("".join(f"L{i} {' '.join(w)}\n" for i, w in enumerate(four[:5])))
    short, full = tmp_path / "s.db", tmp_path / "f.db"
    assert run("index", ARK, "--words", WORDS, "--max-length", 2, "-o", short).exit_code == 0
    assert run("index", ARK, "--words", WORDS, "--max-length", 4, "-o", full).exit_code == 0
    r = run("search", short, "--kwlist", kw, "-o", tmp_path / "a.tsv")
    assert r.exit_code == 0 and "(answer them with --lattices" in r.output
    r = run("search", short, "--kwlist", kw, "-o", tmp_path / "a.tsv", "--lattices", ARK, "--words", WORDS)
    assert r.exit_code == 0, r.output
    r = run("search", full, "--kwlist", kw, "-o", tmp_path / "b.tsv")
    assert r.exit_code == 0, r.output
    a = (tmp_path / "a.tsv").read_text()
    assert a and a == (tmp_path / "b.tsv").read_text()


# ------------------------------------------------------------------------------------------------
# Kaldi's exact index (every factor length) on random lattices

def _kaldi_available():
    from test_kws_index_kaldi import TOOLS, kaldi_tool

    return all(kaldi_tool(t) is not None for t in TOOLS)


@pytest.mark.skipif(not _kaldi_available(), reason="Kaldi kwsbin tools not on PATH nor in $LATTICE_TOOLS_KALDI_BIN")
@settings(max_examples=12, deadline=None)
@given(lats=st.lists(lattice_strategy(max_states=14, max_arcs=26), min_size=6, max_size=6))
def test_long_term_hits_equal_kaldi_on_random_lattices(lats):
    """Terms of 3 to 6 words searched one at a time against Kaldi's lattice-to-kws-index (no state budget)
    + kws-search: the same rule as the index's Kaldi cross-check (tests/test_kws_index_kaldi.py)."""
    import math
    import tempfile

    from test_kws_index_kaldi import kaldi_hits

    lats = [lat.replace(key=f"u{i:02d}", t0=lat.t0 - lat.t0[0], t1=lat.t1 - lat.t0[0]) for i, lat in enumerate(lats)]
    words = sorted({h.words for lat in lats for h in index_lattice(lat, max_length=6, max_silence=None)
                    if len(h.words) >= 3})
    if not words:
        return
    ours = defaultdict(list)
    for i, lat in enumerate(lats):
        for w in words:
            for h in lattice_term_hits(lat, w, max_silence=None):
                ids = tuple(lat.symbols.id(x) for x in h.words)
                ours[(ids, i)].append((round(h.tbeg * 100), round((h.tbeg + h.dur) * 100), min(1.0, h.score)))
    terms = sorted({t for t, _ in ours})
    assert terms
    with tempfile.TemporaryDirectory() as workdir:
        kaldi = kaldi_hits(lats, terms, workdir)
    close = lambda p, q: abs(math.log(p) - math.log(q)) <= 2 ** -9  # noqa: E731  (Kaldi: multiples of 2^-10)
    for key, hits in kaldi.items():
        for b, e, p in hits:
            assert any((b, e) == (b2, e2) and close(p, p2) for b2, e2, p2 in ours[key]), (key, b, e, p, ours[key])
    for key, hits in ours.items():
        for b, e, p in hits:
            if p < 1e-3 or any((b, e) == (b2, e2) and close(p, p2) for b2, e2, p2 in kaldi[key]):
                continue
            assert any(b2 < e and b < e2 and p2 >= p * (1 - 2 ** -9) for b2, e2, p2 in kaldi[key]), \
                (key, b, e, p, kaldi[key])


def test_kst_tuning_reads_the_lattices_once_and_matches_the_long_index(long_setup):
    from lattice_tools.kws.search import tune_ntrue_scale

    lats, short, full, terms = long_setup
    reads = []

    def stream():
        for lat in lats:
            reads.append(lat.key)
            yield lat

    def metric(dets):  # any function of the detections and their scores
        return sum(d.score * (1 if d.decision else -0.5) for d in dets)

    scales = [0.3, 1.0, 3.0]
    best, table = tune_ntrue_scale(str(short), terms, metric, duration=100.0, scales=scales, lattices=stream())
    best_ref, table_ref = tune_ntrue_scale(str(full), terms, metric, duration=100.0, scales=scales)
    assert len(reads) <= len(lats) and best == best_ref
    assert [m for _, m in table] == pytest.approx([m for _, m in table_ref], rel=1e-9)


def test_cli_old_index_with_lattices_is_one_line_exit_2(long_setup, tmp_path):
    import shutil
    import sqlite3

    from click.testing import CliRunner

    from lattice_tools.cli import main

    _, short, _, terms = long_setup
    old = tmp_path / "old.db"
    shutil.copyfile(short, old)
    with sqlite3.connect(old) as c:
        c.execute("DELETE FROM meta WHERE key = 'lattice_search'")
    kw = tmp_path / "kw.txt"
    kw.write_text(f"{terms[0].kwid} {terms[0].text}\n")
    r = CliRunner().invoke(main, ["kws", "search", str(old), "--kwlist", str(kw), "-o", str(tmp_path / "o.tsv"),
                                  "--lattices", ARK, "--words", WORDS])
    assert r.exit_code == 2, r.output
    assert "--lattices" in r.output and "Traceback" not in r.output and len(r.output.strip().splitlines()) == 1
    assert not (tmp_path / "o.tsv").exists()


def test_long_terms_refuse_lattices_that_are_not_the_indexed_ones(long_setup):
    from lattice_tools.core.errors import MismatchError
    from lattice_tools.kws.search import search

    lats, short, _, terms = long_setup
    # read with another frame shift: every time moves, so the hits would be silently wrong
    moved = [lat.replace(frame_shift=lat.frame_shift * 3) for lat in lats]
    with pytest.raises(MismatchError, match="does not reproduce the index's hits"):
        search(str(short), terms, lattices=iter(moved))


@pytest.mark.parametrize("key, value, match", [
    ("lattice_search", "{\"acoustic_scale\": NaN}", "not a JSON value"),
    ("lattice_search", "{\"acoustic_scale\": 1}", "must hold finite"),
    ("lattice_search", "[1, 2]", "must hold finite"),
])
def test_damaged_lattice_settings_are_format_errors(long_setup, tmp_path, key, value, match):
    import shutil
    import sqlite3

    from lattice_tools.core.errors import FormatError
    from lattice_tools.kws.search import search

    lats, short, _, terms = long_setup
    bad = tmp_path / "bad.db"
    shutil.copyfile(short, bad)
    with sqlite3.connect(bad) as c:
        c.execute("UPDATE meta SET value = ? WHERE key = ?", (value, key))
    with pytest.raises(FormatError, match=match):
        search(str(bad), terms, lattices=iter(lats))


def test_damaged_offset_is_a_format_error(long_setup, tmp_path):
    import shutil
    import sqlite3

    from lattice_tools.core.errors import FormatError
    from lattice_tools.kws.search import search

    lats, short, _, terms = long_setup
    bad = tmp_path / "bad.db"
    shutil.copyfile(short, bad)
    with sqlite3.connect(bad) as c:
        assert c.execute("UPDATE meta SET value = '\"ten\"' WHERE key LIKE 'offset %'").rowcount == 2
    with pytest.raises(FormatError, match="is not a finite number"):
        search(str(bad), terms, lattices=iter(lats))


def test_long_terms_with_min_posterior_keep_every_candidate(long_setup, tmp_path):
    """With pruning, the candidates from the pruned pieces still hold every hit of the index built
    that long with the same --min-posterior (a term's partial mass never exceeds a piece's)."""
    from lattice_tools.kws.build import build_lattice_index
    from lattice_tools.kws.search import search

    lats, _, _, terms = long_setup
    short, full = tmp_path / "s.db", tmp_path / "f.db"
    build_lattice_index(lats, str(short), max_length=2, min_posterior=1e-3, acoustic_scale=0.5)
    build_lattice_index(lats, str(full), max_length=4, min_posterior=1e-3, acoustic_scale=0.5)
    got = search(str(short), terms, duptime=0, lattices=iter(lats))
    ref = search(str(full), terms, duptime=0)
    a, b = _detections(got), _detections(ref)
    assert a and [x[:5] for x in a] == [x[:5] for x in b]
    assert [x[5] for x in a] == pytest.approx([x[5] for x in b], rel=1e-12, abs=1e-300)
