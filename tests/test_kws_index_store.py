"""SQLite term index (lattice_tools.kws.store / build) and search (lattice_tools.kws.search)."""
from __future__ import annotations

import math
import os
import sqlite3
from pathlib import Path

import pytest

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io import read_lattices
from lattice_tools.io.keyword_search.kwlist import KeywordTerm
from lattice_tools.kws.build import build_alternatives_index, build_lattice_index
from lattice_tools.kws.index import IndexHit, index_lattice
from lattice_tools.kws.search import kst_threshold, normalize_scores, remove_duplicates, search, tune_ntrue_scale
from lattice_tools.kws.store import TERM_QUERY, TermIndex, merge_indexes

DATA = Path(__file__).parent / "data" / "kaldi_kws"
LATS = Path(__file__).parent / "data" / "kaldi" / "lats"  # the bundled lattices as a Kaldi archive


def bundled(keys=None):
    lats = read_lattices(f"ark,t:{LATS / 'bundled.ark.gz'}", format="kaldi", symbols=str(LATS / "bundled.words.txt"))
    return [lat for lat in lats if keys is None or lat.key in keys]


def keyword_list():
    return [KeywordTerm(line.split()[0], " ".join(line.split()[1:]))
            for line in (DATA / "keywords.words.txt").read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def full_index(tmp_path_factory):
    path = tmp_path_factory.mktemp("idx") / "all.db"
    stats = build_lattice_index(bundled(), str(path), max_length=3)
    assert stats.utterances == 10 and stats.to_dict() == {"utterances": 10, "hits": stats.hits, "pruned_mass": 0.0}
    return path


def test_index_holds_what_index_lattice_computes(full_index):
    lats = bundled()
    with TermIndex(str(full_index)) as idx:
        assert idx.counts().utterances == 10
        for lat in lats[:3]:
            for h in index_lattice(lat, max_length=3)[:200]:
                got = [g for g in idx.lookup(h.words) if g.utterance == lat.key and g.tbeg == h.tbeg and g.dur == h.dur]
                assert len(got) == 1 and got[0].score == h.score


def test_term_query_uses_the_index_not_a_scan(full_index):
    conn = sqlite3.connect(str(full_index))
    plan = " | ".join(row[-1] for row in conn.execute("EXPLAIN QUERY PLAN " + TERM_QUERY, ("of clubs",)))
    conn.close()
    assert "SEARCH p USING PRIMARY KEY (term=?)" in plan, plan
    assert "SCAN" not in plan, plan


def test_thousand_term_query_touches_only_their_rows(full_index):
    """1,000 terms: the SQLite virtual machine steps stay proportional to the hits returned, far
    below the size of the hits table (no scan)."""
    with TermIndex(str(full_index)) as idx:
        n_hits = idx.counts().hits
        words = [w for (w,) in idx.conn.execute("SELECT word FROM vocabulary ORDER BY word LIMIT 1000")]
        steps = [0]

        def count():
            steps[0] += 1
            return 0
        idx.conn.set_progress_handler(count, 100)  # called every 100 VM instructions
        found = sum(len(idx.lookup((w,))) for w in words)
        idx.conn.set_progress_handler(None, 100)
    assert len(words) > 500
    # each found row costs a few dozen instructions; a scan would cost n_hits rows per term
    assert steps[0] * 100 < 200 * (found + len(words)), (steps[0], found, n_hits)
    assert steps[0] * 100 < n_hits * len(words) / 50


def test_shards_merge_to_the_whole(tmp_path, full_index):
    lats = bundled()
    a, b = str(tmp_path / "a.db"), str(tmp_path / "b.db")
    build_lattice_index(lats[:4], a, max_length=3)
    build_lattice_index(lats[4:], b, max_length=3)
    out = str(tmp_path / "merged.db")
    counts = merge_indexes(out, [a, b])
    # any order of the shards gives the same file, byte for byte
    c, d = str(tmp_path / "c3.db"), str(tmp_path / "d3.db")
    build_lattice_index(lats[4:7], c, max_length=3)
    build_lattice_index(lats[7:], d, max_length=3)
    orders = [[a, c, d], [d, a, c], [c, d, a]]
    merged_bytes = set()
    for k, order in enumerate(orders):
        merge_indexes(str(tmp_path / f"order{k}.db"), order)
        merged_bytes.add((tmp_path / f"order{k}.db").read_bytes())
    assert len(merged_bytes) == 1
    with TermIndex(str(tmp_path / "order0.db")) as three, TermIndex(out) as two:
        assert three.counts() == two.counts()
    with TermIndex(str(full_index)) as whole, TermIndex(out) as merged:
        assert counts == whole.counts()
        for t in keyword_list():
            key = lambda h: (h.utterance, h.tbeg, h.dur, h.score)  # noqa: E731
            assert sorted(map(key, merged.lookup(t.words))) == sorted(map(key, whole.lookup(t.words)))
    # the same utterance in two shards, or different settings, refuse to merge
    with pytest.raises(MismatchError, match="more than one shard"):
        merge_indexes(str(tmp_path / "bad.db"), [a, a])
    c = str(tmp_path / "c.db")
    build_lattice_index(lats[:1], c, max_length=2)
    with pytest.raises(MismatchError, match="max_length"):
        merge_indexes(str(tmp_path / "bad.db"), [a, c])
    assert not os.path.exists(tmp_path / "bad.db")
    assert not [p for p in os.listdir(tmp_path) if p.startswith(".")]  # no temporary left


def test_incremental_add_equals_one_build(tmp_path, full_index):
    lats = bundled()
    path = str(tmp_path / "inc.db")
    build_lattice_index(lats[:5], path, max_length=3)
    build_lattice_index(lats[5:], path, max_length=3, append=True)
    with TermIndex(path) as inc, TermIndex(str(full_index)) as whole:
        assert inc.counts() == whole.counts()
    with pytest.raises(MismatchError, match="already in the index"):
        build_lattice_index(lats[:1], path, max_length=3, append=True)
    with TermIndex(path) as inc, TermIndex(str(full_index)) as whole:  # untouched by the failed add
        assert inc.counts() == whole.counts()


def test_interrupted_build_leaves_previous_index(tmp_path):
    lats = bundled()
    path = str(tmp_path / "idx.db")
    build_lattice_index(lats[:2], path, max_length=2)
    before = Path(path).read_bytes()

    def boom(lats):
        yield lats[2]
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_lattice_index(boom(lats), path, max_length=2)
    assert Path(path).read_bytes() == before
    with pytest.raises(KeyboardInterrupt):
        build_lattice_index(boom(lats), path, max_length=2, append=True)
    assert Path(path).read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["idx.db"]


def test_not_an_index(tmp_path):
    bad = tmp_path / "x.db"
    bad.write_text("hello\n" * 100)
    with pytest.raises(FormatError, match="x.db"):
        TermIndex(str(bad))
    with pytest.raises(FormatError, match="no such index"):
        TermIndex(str(tmp_path / "missing.db"))


def test_search_finds_kaldi_hits_and_reports_oov(full_index):
    terms = keyword_list() + [KeywordTerm("KW-OOV", "clubs zzyzx"), KeywordTerm("KW-LONG", "i i i i"),
                              KeywordTerm("KW-NONE", "clubs clubs")]
    res = search(str(full_index), terms, duptime=0.5)
    assert res.oov == ["KW-OOV"] and res.oov_words == {"KW-OOV": ["zzyzx"]}
    assert res.too_long == ["KW-LONG"]
    assert res.no_hits == ["KW-NONE"]
    kaldi = {}
    for line in (DATA / "hits.txt").read_text().splitlines():
        kw, utt, b, e, score = line.split()
        kaldi.setdefault(kw, []).append(math.exp(-float(score)))
    got = {}
    for d in res.detections:
        got.setdefault(d.kwid, []).append(d.score)
        assert d.decision == (d.score >= 0.5)
    for kw, scores in kaldi.items():
        # every Kaldi hit's posterior is among ours (ours also has weaker hits Kaldi's index lacks? no:
        # the same hits; within 2^-10 in -log)
        for s in scores:
            assert any(abs(math.log(s) - math.log(g)) <= 2 ** -10 for g in got[kw]), (kw, s, got[kw])


def test_duplicate_removal_keeps_best():
    h = lambda t, s, f="f": IndexHit(("a",), "u", f, "1", t, 0.3, s)  # noqa: E731
    hits = [h(1.0, 0.2), h(1.3, 0.9), h(1.7, 0.5), h(2.0, 0.4), h(1.1, 0.3, "g")]
    kept = remove_duplicates(hits, 0.5)
    assert sorted((x.file, x.tbeg) for x in kept) == [("f", 1.3), ("f", 2.0), ("g", 1.1)]
    assert remove_duplicates(hits, 0) == hits


def test_normalizations():
    p = [0.9, 0.3, 0.05]
    assert normalize_scores(p, "none")[0] == p
    s, _ = normalize_scores(p, "sum-to-one")
    assert sum(s) == pytest.approx(1.0) and s[0] == pytest.approx(0.9 / 1.25)
    # KST: Kaldi's formula; the term's own threshold maps to the global one
    T = 3600.0
    thr = kst_threshold(p, T)
    assert thr == pytest.approx(999.9 * 1.25 / (T + 1.25 * 998.9))
    k, ok = normalize_scores(p, "kst", duration=T, threshold=0.5)
    q = math.log(0.5) / math.log(thr)
    assert ok and k == pytest.approx([x ** q for x in p])
    assert thr ** q == pytest.approx(0.5)  # the term's own threshold maps onto the global one
    k2, _ = normalize_scores(p, "kst", duration=T, ntrue_scale=2.0)
    assert k2[1] < normalize_scores(p, "kst", duration=T)[0][1]  # a larger N_true raises the bar
    with pytest.raises(ValueError, match="duration"):
        normalize_scores(p, "kst")


def test_kst_order_preserving_and_tuning(full_index):
    terms = keyword_list()
    raw = search(str(full_index), terms)
    kst = search(str(full_index), terms, normalization="kst", duration=300.0)
    assert [(d.kwid, d.tbeg) for d in raw.detections] == [(d.kwid, d.tbeg) for d in kst.detections]
    # a metric that prefers few YES decisions: the tuner picks the largest N_true scale
    best, table = tune_ntrue_scale(str(full_index), terms, lambda dets: -sum(d.decision for d in dets), duration=300.0,
                                   scales=[0.5, 1.0, 2.0, 50.0])
    assert [s for s, _ in table] == [0.5, 1.0, 2.0, 50.0]
    assert best == 50.0


def test_search_refuses_duplicate_and_empty_terms(full_index):
    with pytest.raises(MismatchError, match="duplicate"):
        search(str(full_index), [KeywordTerm("A", "clubs"), KeywordTerm("A", "five")])
    with pytest.raises(MismatchError, match="empty"):
        search(str(full_index), [KeywordTerm("A", "  ")])


def test_alternatives_index_and_search(tmp_path):
    alts = [Alternatives("u1", (Slot(0, 1, (Alternative(("of", "clubs"), (0.1, 0.4), (0.3, 0.5), 0.7),
                                            Alternative(("of", "cubs"), (0.1, 0.4), (0.3, 0.5), 0.3))),),
                         kind="phrase", file="rec", channel="A")]
    path = str(tmp_path / "ph.db")
    build_alternatives_index(alts, path, "phrase")
    res = search(path, [KeywordTerm("K1", "of clubs"), KeywordTerm("K2", "hearts")])
    assert [(d.file, d.channel, d.tbeg, round(d.dur, 6), d.score) for d in res.detections] == \
        [("rec", "A", 0.1, 0.8, pytest.approx(0.7))]
    assert res.oov == ["K2"]
    with TermIndex(path) as idx:
        assert idx.settings["representation"] == "phrase"


def test_memory_is_bounded_by_one_utterance(tmp_path):
    """Indexing streams: the traced peak for 3 copies of the archive is about that of 1 copy."""
    import tracemalloc

    lats = bundled()[:3]

    def copies(k):
        for i in range(k):
            for lat in lats:
                yield lat.with_key(f"{lat.key}-{i}")

    peaks = []
    for k in (1, 3):
        tracemalloc.start()
        build_lattice_index(copies(k), str(tmp_path / f"m{k}.db"), max_length=2)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    with TermIndex(str(tmp_path / "m3.db")) as idx:
        assert idx.counts().utterances == 9
    assert peaks[1] < 1.3 * peaks[0], peaks


def test_memory_budget_holds_on_the_build(tmp_path):
    """--max-memory bounds the index build: under a budget the process already exceeds, the build stops with
    a BudgetExceededError naming the budget, and leaves no index and no temporary; within it, it completes."""
    from lattice_tools.core._budget import resident_bytes
    from lattice_tools.core.errors import BudgetExceededError

    lats = bundled()
    path = tmp_path / "idx.db"
    with pytest.raises(BudgetExceededError, match="memory budget"):
        build_lattice_index(lats, str(path), max_length=3, max_memory=resident_bytes() // 2)
    assert sorted(os.listdir(tmp_path)) == []
    limit = resident_bytes() + (1 << 30)
    stats = build_lattice_index(lats, str(path), max_length=3, max_memory=limit)
    assert stats.utterances == 10 and resident_bytes() < limit
