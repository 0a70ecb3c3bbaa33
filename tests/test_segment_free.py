"""Segment-free scoring (lattice_tools.scoring.segment_free): without a collar it equals Debian sclite run with
one STM segment per side (counts and the .pra alignment, on random sides with ALT blocks crossing segment
boundaries); the compiled alignment equals the cell-by-cell transcription of sclite's recursion; the band never
changes the optimal cost under a collar; with a collar the error count on 1-best CTMs equals meeteval's tcpWER;
and it is never worse than scoring in the reference segmentation."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import tempfile

import numpy as np
import pytest
from _scoring_helpers import SCLITE, parse_pra, random_ref_text, run_sclite
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.io.transcripts.ctm import read_ctm
from lattice_tools.io.transcripts.stm import read_stm
from lattice_tools.scoring.align import Alignment, AlignOptions, align_reference
from lattice_tools.scoring.network import from_ctm_items, parse_transcript
from lattice_tools.scoring.reports import alignment_lines
from lattice_tools.scoring.sclite import score_files, score_stm_ctm
from lattice_tools.scoring.segment_free import (
    align_side,
    reference_times,
    score_segment_free,
    side_reference,
    slots_of,
)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
try:
    from bench_segment_free import merged_stm, sides
finally:
    sys.path.pop(0)


def _write(tmp, name, lines):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def _side_pairs(result):
    """The aligned pairs of each file/channel, its segments' pairs in order."""
    out: dict = {}
    for seg in result.segments:
        out.setdefault((seg.file, seg.channel), []).extend(seg.alignment.pairs)
    return out


# ----------------------------------------------------------------------------------------------
# the compiled alignment
@pytest.mark.parametrize("seed", range(60))
def test_unconstrained_alignment_equals_sclite_recursion(seed):
    rng = random.Random(seed)
    ref = parse_transcript(random_ref_text(rng, rng.randint(0, 9)))
    hyp = parse_transcript(random_ref_text(rng, rng.randint(0, 9), p_alt=0.3))
    for opts in (AlignOptions(), AlignOptions(optional_deletable=True), AlignOptions(mode="levenshtein"),
                 AlignOptions(fragments=True), AlignOptions(optional_deletable=True, fragments=True)):
        expected = align_reference(ref, hyp, opts)
        got, cells = align_side(ref, hyp, opts)
        assert (got.pairs, got.counts) == (expected.pairs, expected.counts)
        assert got.cost == pytest.approx(expected.cost, abs=1e-4)
        assert cells == (ref.num_arcs + 1) * (hyp.num_arcs + 1)


def _timed_case(rng, n_ref, n_hyp, p_alt):
    """A reference network (one segment over [0, n_ref]) and a CTM network whose words and ALT blocks are
    spread over the same time, with times of their own."""
    ref = parse_transcript(random_ref_text(rng, n_ref, p_alt=p_alt))
    t0, t1 = reference_times(ref, 0.0, float(max(n_ref, 1)))
    lines = []
    t = 0.0
    for _ in range(n_hyp):
        t += rng.uniform(0.0, 1.5)
        if rng.random() < p_alt:
            lines.append("f A * * <ALT_BEGIN>")
            for _k in range(rng.randint(2, 3)):
                for j in range(rng.randint(0, 2)):
                    lines.append(f"f A {t + 0.1 * j:.2f} 0.10 {rng.choice('abcde')}")
                lines.append("f A * * <ALT>")
            lines[-1] = "f A * * <ALT_END>"
        else:
            lines.append(f"f A {t:.2f} {rng.choice([0.1, 0.3])} {rng.choice('abcde')}")
    with tempfile.TemporaryDirectory() as tmp:
        items = read_ctm(_write(tmp, "h.ctm", lines))
    hyp = from_ctm_items(items)
    mid = (hyp.start + (hyp.start + np.nan_to_num(hyp.duration))) / 2
    return ref, (t0, t1), hyp, (mid, mid)


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 10**9), st.integers(0, 14), st.integers(0, 14), st.sampled_from([0.0, 0.2, 0.5, 1.0, 3.0]),
       st.sampled_from(["sclite", "levenshtein"]), st.sampled_from([0.0, 0.3]))
def test_band_never_changes_the_optimum_under_a_collar(seed, n_ref, n_hyp, collar, mode, p_alt):
    """The banded alignment has the cost of the alignment over every cell (same time constraint): the band
    holds an optimal path (module docstring of scoring.segment_free)."""
    rng = random.Random(seed)
    ref, rt, hyp, ht = _timed_case(rng, n_ref, n_hyp, p_alt)
    opts = AlignOptions(mode=mode)
    banded, cells = align_side(ref, hyp, opts, ref_times=rt, hyp_times=ht, collar=collar)
    full, all_cells = align_side(ref, hyp, opts, ref_times=rt, hyp_times=ht, collar=collar, banded=False)
    assert banded.cost == pytest.approx(full.cost, abs=1e-3)
    assert cells <= all_cells
    # a pairing only where the times allow it
    for p in banded.pairs:
        if p.op in "CS" and p.ref_arc >= 0 and p.hyp_arc >= 0:
            assert rt[0][p.ref_arc] < ht[1][p.hyp_arc] + collar and rt[1][p.ref_arc] > ht[0][p.hyp_arc] - collar


def test_band_is_linear_in_the_side_length():
    """Cells per word stay flat when the side grows (the 5 s collar meeteval recommends for estimated
    reference word times)."""
    per_word = []
    for n in (100, 400, 1600):
        stm, ctm, _ = sides(seed=3, n_sides=1, n_words=n)
        with tempfile.TemporaryDirectory() as tmp:
            segs = read_stm(_write(tmp, "r.stm", stm)).segments
            items = read_ctm(_write(tmp, "h.ctm", ctm))
        ref, _, rt = side_reference(segs)
        hyp = from_ctm_items(items)
        mid = (hyp.start + (hyp.start + np.nan_to_num(hyp.duration))) / 2
        ali, cells = align_side(ref, hyp, AlignOptions(), ref_times=rt, hyp_times=(mid, mid), collar=5.0)
        assert ali.counts.errors == 0
        per_word.append(cells / n)
    assert max(per_word) < 1.5 * min(per_word), per_word
    assert per_word[-1] < 60


def test_slots_group_alternations_and_blocks():
    net = parse_transcript("a { b c / d } e { f / @ }")
    assert slots_of(net).tolist() == [1, 2, 2, 2, 3, 4, 4]


# ----------------------------------------------------------------------------------------------
# against Debian sclite with one segment per side
def _sclite_case(seed, tmp, flags=()):
    rng = random.Random(seed)
    stm, ctm, stats = sides(seed, n_sides=rng.randint(1, 3), n_words=rng.randint(5, 40), p_block=0.15,
                            noise=rng.choice([0.0, 0.1, 0.3]), channel_b=rng.random() < 0.3)
    ref = _write(tmp, "r.stm", stm)
    merged = _write(tmp, "m.stm", merged_stm(stm))
    hyp = _write(tmp, "h.ctm", ctm)
    expected, pra = run_sclite(merged, "stm", hyp, "ctm", list(flags), tmp)
    ours = score_segment_free(read_stm(ref), read_ctm(hyp), optional_deletable="-D" in flags)
    t = ours.total
    assert expected["Sum"][1] == t.ref_words
    blocks = parse_pra(pra)
    sides_pairs = _side_pairs(ours)
    assert len(blocks) == len(sides_pairs)
    for b in blocks:
        f = b["File:"].split()[-1]
        ch = b["Channel:"].split()[-1].lower()
        pairs = sides_pairs[(f, ch)]
        ali = Alignment(pairs, ours.total, 0.0)
        c = [sum(p.op == op for p in pairs) for op in "CSDI"]
        assert b["Scores:"] == "Scores: (#C #S #D #I) " + " ".join(map(str, c)), (seed, f, ch)
        assert [b[k] for k in ("REF:", "HYP:", "Eval:") if k in b] == alignment_lines(ali), (seed, f, ch)
    return stats


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
@pytest.mark.parametrize("seed", range(12))
def test_equals_sclite_with_one_segment_per_side(seed):
    with tempfile.TemporaryDirectory() as tmp:
        _sclite_case(seed, tmp)


@pytest.mark.slow
@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
def test_many_sides_equal_sclite_with_one_segment_per_side():
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(1000, 1200):
            _sclite_case(seed, tmp, ["-D"] if seed % 2 else [])


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
@pytest.mark.parametrize("seed", range(8))
def test_equals_sclite_with_reference_alternations_and_optional_words(seed):
    """Reference alternations, optional words, fragments and @ (sclite -D, -F, both, neither) over whole
    sides."""
    rng = random.Random(100 + seed)
    stm, ctm = [], []
    for s in range(2):
        t = 0.0
        for _k in range(rng.randint(1, 5)):
            text = random_ref_text(rng, rng.randint(0, 6), nested=False)
            stm.append(f"f{s} A spk{s} {t:.2f} {t + 3:.2f} <o,f0,male> {text}")
            t += 3.5
        times = sorted(round(rng.uniform(0, t), 2) for _ in range(rng.randint(1, 15)))
        for tm in times:
            if rng.random() < 0.2:
                ctm.append(f"f{s} A * * <ALT_BEGIN>")
                for _j in range(rng.randint(2, 3)):
                    ctm.extend(f"f{s} A {tm + 0.7 * i:.2f} 0.20 {rng.choice(['a', 'b', 'uh', 'the', 'ab-', 'abc'])}"
                               for i in range(rng.randint(1, 3)))
                    ctm.append(f"f{s} A * * <ALT>")
                ctm[-1] = f"f{s} A * * <ALT_END>"
            else:
                word = rng.choice(["a", "b", "c", "uh", "the", "um", "abc", "-ing", "cd"])
                ctm.append(f"f{s} A {tm:.2f} 0.20 {word}")
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        merged = _write(tmp, "m.stm", merged_stm(stm))
        for flags in ([], ["-D"], ["-F"], ["-D", "-F"]):
            opts = dict(optional_deletable="-D" in flags, fragments="-F" in flags)
            expected, pra = run_sclite(merged, "stm", hyp, "ctm", flags, tmp)
            ours = score_segment_free(read_stm(ref), read_ctm(hyp), **opts)
            single = score_stm_ctm(read_stm(merged), read_ctm(hyp), **opts)
            assert ours.total.ref_words == single.total.ref_words == expected["Sum"][1]
            for key, pairs in _side_pairs(ours).items():
                seg = next(s for s in single.segments if (s.file, s.channel) == key)
                assert tuple(pairs) == seg.alignment.pairs or [(p.op, p.ref, p.hyp) for p in pairs] == \
                    [(p.op, p.ref, p.hyp) for p in seg.alignment.pairs]
            blocks = {b["id"]: b for b in parse_pra(pra)}
            for seg in single.segments:
                assert [blocks[seg.id][k] for k in ("REF:", "HYP:", "Eval:") if k in blocks[seg.id]] == \
                    alignment_lines(seg.alignment)


# ----------------------------------------------------------------------------------------------
# against meeteval's tcpWER (1-best CTMs)
try:
    import meeteval
except ImportError:  # pragma: no cover
    meeteval = None


@pytest.mark.skipif(meeteval is None, reason="meeteval not installed")
@pytest.mark.parametrize("seed", range(10))
@pytest.mark.parametrize("collar", [0.0, 0.25, 1.0, 5.0])
def test_collar_equals_meeteval_tcpwer_on_one_best(seed, collar):
    from meeteval.io.seglst import SegLST
    from meeteval.wer import tcpwer

    rng = random.Random(seed)
    stm, ctm, _ = sides(seed, n_sides=rng.randint(1, 3), n_words=rng.randint(5, 60), p_block=0.0,
                        noise=rng.choice([0.1, 0.3, 0.6]))
    # shift some hypothesis words in time, so the collar matters
    shifted = []
    for line in ctm:
        f, ch, t, d, w = line.split()
        shifted.append(f"{f} {ch} {float(t) + rng.choice([0.0, 0.0, 0.4, -0.7, 1.5]):.2f} {d} {w}")
    ctm = sorted(shifted, key=lambda x: (x.split()[0], float(x.split()[2])))
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        ours = score_files(ref, hyp, segment_free=True, collar=collar, mode="levenshtein")
    reference = SegLST([dict(session_id=f, speaker="s", start_time=float(t0), end_time=float(t1), words=" ".join(w))
                        for f, _ch, _spk, t0, t1, _lab, *w in (x.split(" ") for x in stm)])
    hypothesis = SegLST([dict(session_id=f, speaker="s", start_time=float(t), end_time=float(t) + float(d), words=w)
                         for f, _ch, t, d, w in (x.split() for x in ctm)])
    rates = tcpwer(reference, hypothesis, collar=collar)
    theirs = [sum(getattr(r, k) for r in rates.values())
              for k in ("errors", "length", "insertions", "deletions", "substitutions")]
    t = ours.total
    assert [t.errors, t.ref_words, t.insertions, t.deletions, t.substitutions] == theirs


# ----------------------------------------------------------------------------------------------
# invariants against the reference segmentation
@pytest.mark.parametrize("seed", range(6))
def test_never_worse_than_the_reference_segmentation(seed):
    """Levenshtein costs are error counts, and the segmented alignment is one of the side's alignments: the
    segment-free error count is never larger; with ALT blocks holding the reference words it is 0."""
    with tempfile.TemporaryDirectory() as tmp:
        for noise in (0.0, 0.2):
            stm, ctm, stats = sides(seed, n_sides=3, n_words=80, p_block=0.1, p_cross=0.5, noise=noise)
            ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
            for mode in ("levenshtein", "sclite"):
                free = score_files(ref, hyp, segment_free=True, mode=mode)
                seg = score_files(ref, hyp, mode=mode)
                assert free.total.ref_words == seg.total.ref_words
                free_cost = sum(s.alignment.cost for s in free.segments)
                assert free_cost <= sum(s.alignment.cost for s in seg.segments) + 1e-3
                if mode == "levenshtein":
                    assert free.total.errors <= seg.total.errors
                if noise == 0.0:
                    assert free.total.errors == 0
                    assert seg.total.errors > 0 or stats["crossing"] == 0


@pytest.mark.parametrize("seed", range(6))
def test_equals_the_reference_segmentation_when_no_block_crosses(seed):
    """Sides whose ALT blocks (holding the reference words) do not cross a boundary score the same both ways,
    segment by segment.  (With other errors the two may differ: the whole-side alignment may pair a deletion
    at the end of one segment with an insertion at the start of the next, as sclite with one segment per side
    does.)"""
    with tempfile.TemporaryDirectory() as tmp:
        stm, ctm, stats = sides(seed, n_sides=3, n_words=80, p_block=0.2, p_cross=0.0)
        assert stats["crossing"] == 0
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        free = score_files(ref, hyp, segment_free=True)
        seg = score_files(ref, hyp)
    assert free.total == seg.total
    assert [s.counts for s in free.segments] == [s.counts for s in seg.segments]


# ----------------------------------------------------------------------------------------------
# the command line
def test_cli_segment_free_reports_and_errors():
    stm, ctm, _ = sides(5, n_sides=2, n_words=40, p_block=0.2, p_cross=0.6)
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        env = dict(os.environ)
        run = [sys.executable, "-m", "lattice_tools", "score", "-r", ref, "-h", hyp]
        out = subprocess.run(run + ["--segment-free", "-o", tmp, "--name", "sf"], capture_output=True, text=True,
                             env=env)
        assert out.returncode == 0, out.stderr
        assert "%WER 0.00 [ 0 / 80," in out.stdout
        for ext in ("sys", "raw", "pra", "dtl", "json"):
            assert os.path.exists(os.path.join(tmp, f"sf.{ext}"))
        bad = subprocess.run(run + ["--collar", "1"], capture_output=True, text=True, env=env)
        assert bad.returncode == 2 and "--collar applies to --segment-free" in bad.stderr
        neg = subprocess.run(run + ["--segment-free", "--collar", "-1"], capture_output=True, text=True, env=env)
        assert neg.returncode == 2 and "Traceback" not in neg.stderr
        trn = _write(tmp, "r.trn", ["a b (s1-001)"])
        htrn = _write(tmp, "h.trn", ["a b (s1-001)"])
        wrong = subprocess.run([sys.executable, "-m", "lattice_tools", "score", "-r", trn, "-h", htrn,
                                "--segment-free"], capture_output=True, text=True, env=env)
        assert wrong.returncode == 2 and "needs an STM reference" in wrong.stderr and "Traceback" not in wrong.stderr


# ----------------------------------------------------------------------------------------------
# GLM alternations, missing channels, the memory budget
GLM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "sctk", "glm", "en20030506.glm")
CONTRACTIONS = ["can't", "he's", "i'd", "gonna", "okay", "uh-huh", "can not", "he is", "going to", "o. k."]


def _with_contractions(rng, lines, field):
    """Lines with some words (from field ``field`` on) replaced by words the GLM rewrites."""
    out = []
    for line in lines:
        parts = line.split(" ")
        for k in range(field, len(parts)):
            if parts[k] not in ("*", "@") and not parts[k].startswith("<") and rng.random() < 0.15:
                parts[k] = rng.choice(CONTRACTIONS).split()[0] if field == 4 else rng.choice(CONTRACTIONS)
        out.append(" ".join(parts))
    return out


@pytest.mark.parametrize("seed", range(4))
def test_glm_alternations_equal_one_segment_per_side(seed):
    """With a GLM (alternations on the reference, nested ALT blocks in the hypothesis, flattened), the
    segment-free alignment of each side equals the sclite-exact scorer's on the STM merged per side."""
    rng = random.Random(seed)
    stm, ctm, _ = sides(seed, n_sides=2, n_words=40, p_block=0.2, p_cross=0.5, noise=0.1)
    stm = [" ".join(x.split(" ")[:6]) + " " + " ".join(_with_contractions(rng, [" ".join(x.split(" ")[6:])], 0))
           for x in stm]
    ctm = _with_contractions(rng, ctm, 4)
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        merged = _write(tmp, "m.stm", merged_stm(stm))
        for flags in (dict(), dict(optional_deletable=True)):
            free = score_files(ref, hyp, glms=[GLM], segment_free=True, **flags)
            single = score_files(merged, hyp, glms=[GLM], **flags)
            assert free.total.ref_words == single.total.ref_words
            assert free.total.errors == single.total.errors
            for key, pairs in _side_pairs(free).items():
                seg = next(s for s in single.segments if (s.file, s.channel) == key)
                assert [(p.op, p.ref, p.hyp) for p in pairs] == [(p.op, p.ref, p.hyp) for p in seg.alignment.pairs]


def test_missing_channels_and_empty_hypothesis():
    stm = ["f1 A s1 0.00 2.00 <o,f0,male> a b c", "f1 A s1 3.00 4.00 <o,f0,male> d",
           "f2 A s2 0.00 1.00 <o,f0,male> e f"]
    ctm = ["f1 A 0.10 0.20 a", "f1 A 3.20 0.20 d", "f3 A 0.10 0.20 x"]
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        from lattice_tools.core.errors import MismatchError
        with pytest.raises(MismatchError, match=r"CTM file/channel\(s\) have no reference \(first: f3 a\)"):
            score_files(ref, hyp, segment_free=True)
        result = score_files(ref, hyp, segment_free=True, allow_missing=True)
    assert [(s.counts.correct, s.counts.deletions) for s in result.segments] == [(1, 2), (1, 0), (0, 2)]
    assert any("f2 a" in w for w in result.warnings)


def test_memory_budget_refuses_a_side_too_large():
    from lattice_tools.core._budget import resident_bytes
    from lattice_tools.core.errors import BudgetExceededError

    stm, ctm, _ = sides(1, n_sides=1, n_words=600)
    with tempfile.TemporaryDirectory() as tmp:
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        score_files(ref, hyp, segment_free=True, collar=5.0, max_memory=None)  # (modules loaded, files read once)
        budget = resident_bytes() + (2 << 20)   # the full table needs 601 x 601 cells x 9 bytes = 3.3 MB
        with pytest.raises(BudgetExceededError, match="segment-free alignment of file sw0000 channel a"):
            score_files(ref, hyp, segment_free=True, max_memory=budget)
        # the band of a collar fits
        assert score_files(ref, hyp, segment_free=True, collar=5.0, max_memory=budget).total.errors == 0


def test_compiled_alignment_refuses_bad_arguments():
    from lattice_tools._ext.banded_align import banded_align

    def z(n):
        return np.zeros(n, np.int64)

    args = [np.array([-1, 1]), np.array([0, 3], np.float32), np.array([0, 0, 1]), np.array([0]), np.array([0, 1]),
            np.zeros(2), np.zeros(2), np.array([-1]), np.zeros(1, np.float32), np.array([0, 0]), z(0), np.array([0]),
            np.zeros(1), np.zeros(1), z(2), z(2), np.array([1]), np.array([0]), np.array([4, 1], np.float32), z(3),
            z(3), z(2), z(0), 2, 0, 0]
    cost, n_path, cells = banded_align(*args)          # one deletion
    assert (cost, n_path, cells) == (3.0, 2, 2)
    bad_order = list(args)
    bad_order[4] = np.array([1, 0])
    with pytest.raises(ValueError, match="not a topological permutation"):
        banded_align(*bad_order)
    bad_type = list(args)
    bad_type[1] = np.zeros(2, np.float64)
    with pytest.raises(TypeError, match="argument r_cost must be"):
        banded_align(*bad_type)
    bad_word = list(args)
    bad_word[23] = 1
    with pytest.raises(ValueError, match="word id out of range"):
        banded_align(*bad_word)
    bad_band = list(args)
    bad_band[15] = np.array([0, 5])
    with pytest.raises(ValueError, match="band of row 1 out of range"):
        banded_align(*bad_band)


@pytest.mark.parametrize("seed", range(4))
def test_a_collar_wider_than_the_side_changes_nothing(seed):
    with tempfile.TemporaryDirectory() as tmp:
        stm, ctm, _ = sides(seed, n_sides=2, n_words=60, p_block=0.2, p_cross=0.5, noise=0.2)
        ref, hyp = _write(tmp, "r.stm", stm), _write(tmp, "h.ctm", ctm)
        free = score_files(ref, hyp, segment_free=True)
        wide = score_files(ref, hyp, segment_free=True, collar=1e6)
    assert [s.alignment.pairs for s in free.segments] == [s.alignment.pairs for s in wide.segments]
    assert free.total == wide.total


# ----------------------------------------------------------------------------------------------
# words that moved across a boundary
def _moves(stm_lines, ctm_lines, tmp, **kw):
    ref, hyp = _write(tmp, "m.stm", stm_lines), _write(tmp, "m.ctm", ctm_lines)
    moved: list = []
    free = score_segment_free(read_stm(ref), read_ctm(hyp), moved=moved, **kw)
    seg = score_stm_ctm(read_stm(ref), read_ctm(hyp), **{k: v for k, v in kw.items() if k != "collar"})
    return free, seg, moved


def test_words_moved_across_a_boundary_by_hand():
    """Segment 1 says "a b c", segment 2 "d e"; the hypothesis puts "c" (midpoint 2.05) after segment 1's end
    (2.0): sclite hands it to segment 2 (a deletion there and an insertion here), the side's alignment pairs it
    with segment 1's "c": one word moved.  An ALT block over the boundary whose words pair with both
    segments' words moves the word whose reference is not in the block's segment."""
    stm = ["f 1 s 0.00 2.00 a b c", "f 1 s 2.00 4.00 d e"]
    with tempfile.TemporaryDirectory() as tmp:
        ctm = ["f 1 0.10 0.5 a", "f 1 0.70 0.5 b", "f 1 1.95 0.2 c", "f 1 2.50 0.5 d", "f 1 3.10 0.5 e"]
        free, seg, moved = _moves(stm, ctm, tmp, mode="levenshtein")
        assert moved == [{"file": "f", "channel": "1", "paired": 5, "moved": 1}]
        assert (free.total.errors, seg.total.errors) == (0, 2)
        # an ALT block of "c d" (midpoint of its last word 2.55: sclite hands it to segment 2) against "x"
        ctm = ["f 1 0.10 0.5 a", "f 1 0.70 0.5 b", "f 1 * * <ALT_BEGIN>", "f 1 1.80 0.2 c", "f 1 2.30 0.5 d",
               "f 1 * * <ALT>", "f 1 1.80 0.7 x", "f 1 * * <ALT_END>", "f 1 3.10 0.5 e"]
        free, seg, moved = _moves(stm, ctm, tmp, mode="levenshtein")
        assert moved == [{"file": "f", "channel": "1", "paired": 5, "moved": 1}]   # "c" of segment 1
        assert free.total.errors == 0 < seg.total.errors
        # nothing crosses: nothing moves, the same numbers both ways
        ctm = ["f 1 0.10 0.5 a", "f 1 0.70 0.5 b", "f 1 1.20 0.5 q", "f 1 2.50 0.5 d", "f 1 3.10 0.5 e"]
        free, seg, moved = _moves(stm, ctm, tmp, mode="sclite")
        assert moved == [{"file": "f", "channel": "1", "paired": 5, "moved": 0}]
        assert free.total == seg.total


@pytest.mark.parametrize("seed", range(6))
def test_no_word_moved_means_the_same_cost_both_ways(seed):
    """The segment-free cost is never above the segmented one (the segmented alignment is one of the side's
    alignments), and when its alignment moves no word across a boundary it is one segmented alignment, so the
    costs are equal; a lower cost needs a word that moved."""
    with tempfile.TemporaryDirectory() as tmp:
        for p_cross, noise in ((0.0, 0.0), (0.0, 0.15), (0.5, 0.0), (0.5, 0.15)):
            stm, ctm, _stats = sides(seed, n_sides=3, n_words=60, p_block=0.15, p_cross=p_cross, noise=noise)
            for mode in ("levenshtein", "sclite"):
                free, seg, moved = _moves(stm, ctm, tmp, mode=mode)
                free_cost = sum(s.alignment.cost for s in free.segments)
                seg_cost = sum(s.alignment.cost for s in seg.segments)
                assert free_cost <= seg_cost + 1e-3
                if mode == "levenshtein":
                    assert free.total.errors <= seg.total.errors
                n_moved = sum(m["moved"] for m in moved)
                assert sum(m["paired"] for m in moved) == free.total.correct + free.total.substitutions
                if n_moved == 0:
                    assert free_cost == pytest.approx(seg_cost, abs=1e-3)
                if p_cross and noise == 0.0 and seg.total.errors:
                    assert n_moved > 0
