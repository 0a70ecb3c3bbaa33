"""The chain-reference fast scorer (lattice_tools.scoring._fast_score) against the general engine
(same segments, counts, costs, alignment pairs, warnings, NCE) and against Debian sclite."""
from __future__ import annotations

import os
import random
import tempfile

import pytest

import lattice_tools.scoring.sclite as sclite_mod
from _fastscore_helpers import random_chain_case
from _scoring_helpers import SCLITE, parse_pra, run_sclite
from lattice_tools.io.ctm import read_ctm
from lattice_tools.io.stm import read_stm
from lattice_tools.scoring.reports import alignment_lines
from lattice_tools.scoring.sclite import score_stm_ctm

OPTION_SETS = [dict(), dict(optional_deletable=True), dict(mode="levenshtein"),
               dict(case_sensitive=True), dict(mode="levenshtein", optional_deletable=True)]


def _write(tmp, stm, ctm):
    rp, hp = os.path.join(tmp, "r.stm"), os.path.join(tmp, "h.ctm")
    with open(rp, "w") as f:
        f.write("\n".join(stm) + "\n")
    with open(hp, "w") as f:
        f.write("\n".join(ctm) + "\n")
    return rp, hp


def _general(monkeypatch, *args, **kw):
    with monkeypatch.context() as m:
        m.setattr(sclite_mod, "_fast_path_applies", lambda *a: False)
        return score_stm_ctm(*args, **kw)


def _same(a, b):
    assert a.total == b.total
    assert list(a.speakers.items()) == list(b.speakers.items())
    assert a.warnings == b.warnings
    assert (a.nce is None) == (b.nce is None)
    if a.nce is not None:
        assert a.nce == pytest.approx(b.nce, rel=1e-12, abs=1e-12, nan_ok=True)
        assert a.speaker_nce == pytest.approx(b.speaker_nce, rel=1e-12, abs=1e-12, nan_ok=True)
    assert len(a.segments) == len(b.segments)
    for x, y in zip(a.segments, b.segments):
        assert (x.id, x.speaker, x.file, x.channel, x.start, x.end, x.labels) == \
            (y.id, y.speaker, y.file, y.channel, y.start, y.end, y.labels)
        assert x.alignment.counts == y.alignment.counts, x.id
        assert x.alignment.cost == y.alignment.cost, x.id
        assert x.alignment.pairs == y.alignment.pairs, x.id


@pytest.mark.parametrize("seed", range(60))
def test_fast_path_equals_general_engine(seed, monkeypatch):
    rng = random.Random(1000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 6),
                                 conf=rng.random() < 0.4, stars=rng.random() < 0.3, shuffle=rng.random() < 0.2)
    opts = OPTION_SETS[seed % len(OPTION_SETS)]
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        ref, hyp = read_stm(rp), read_ctm(hp)
        assert sclite_mod._fast_path_applies(list(ref.segments), False, False, ())
        fast = score_stm_ctm(ref, hyp, allow_missing=True, **opts)
        slow = _general(monkeypatch, ref, hyp, allow_missing=True, **opts)
    _same(fast, slow)


def test_fast_path_errors_and_empty_inputs(monkeypatch):
    from lattice_tools.errors import MismatchError
    from lattice_tools.io.ctm import parse_ctm_lines
    from lattice_tools.io.stm import parse_stm_line

    stm = [parse_stm_line("f1 A s1 0.0 5.0 a b c", "r.stm", 1)]
    extra = parse_ctm_lines(enumerate(["f2 A 0.5 0.1 a"], 1), "h.ctm")
    with pytest.raises(MismatchError, match="f2 a"):
        score_stm_ctm(stm, extra, hyp_name="h.ctm")
    res = score_stm_ctm(stm, extra, allow_missing=True)
    _same(res, _general(monkeypatch, stm, extra, allow_missing=True))
    assert res.total.deletions == 3
    empty_ref = [parse_stm_line("f1 A s1 0.0 5.0", "r.stm", 1)]
    hyp = parse_ctm_lines(enumerate(["f1 A 0.5 0.1 a", "f1 A 0.7 0.1 b"], 1), "h.ctm")
    res = score_stm_ctm(empty_ref, hyp)
    _same(res, _general(monkeypatch, empty_ref, hyp))
    assert (res.total.insertions, res.total.ref_words) == (2, 0)


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
@pytest.mark.parametrize("seed", range(25))
def test_fast_path_equals_sclite(seed):
    rng = random.Random(5000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 5))
    flags = [[], ["-D"]][seed % 2]
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        rows, pra = run_sclite(rp, "stm", hp, "ctm", flags, workdir=tmp)
        res = score_stm_ctm(read_stm(rp), read_ctm(hp), optional_deletable="-D" in flags,
                            allow_missing=True)
        t = res.total
        assert rows["Sum"][:2] == [t.segments, t.ref_words]
        blocks = {b["id"]: b for b in parse_pra(pra)}
        assert len(blocks) == len(res.segments)
        for seg in res.segments:
            b = blocks[seg.id]
            c = seg.counts
            assert b["Scores:"] == f"Scores: (#C #S #D #I) {c.correct} {c.substitutions} {c.deletions} {c.insertions}"
            assert [b[k] for k in ("REF:", "HYP:", "Eval:") if k in b] == alignment_lines(seg.alignment), seg.id


def _items_equal(a, b):
    import numpy as np
    assert a.chans == b.chans
    assert [a.vocab[i] if i >= 0 else None for i in a.arc_word.tolist()] == \
        [b.vocab[i] if i >= 0 else None for i in b.arc_word.tolist()]
    for f in ("chan", "t_sort", "mid", "lineno", "n_alts", "alt0", "drops_word", "alt_len", "alt_arc0",
              "arc_conf"):
        x, y = getattr(a, f), getattr(b, f)
        assert x.shape == y.shape, f
        assert np.array_equal(x, y, equal_nan=x.dtype.kind == "f"), f


def _decorate(rng, ctm):
    """Comments, blank lines, extra white space, CRLF, an empty alternative written as nothing."""
    out = [";; a comment"]
    depth = 0
    for line in ctm:
        if "<ALT_BEGIN>" in line:
            depth = 1
        if depth == 0 and rng.random() < 0.05:
            out.append(";;c " + str(rng.random()))
        if rng.random() < 0.05:
            out.append("   ")
        if rng.random() < 0.1:
            line = line.replace(" ", "  \t", 1)
        out.append(line)
        if "<ALT_BEGIN>" in line and rng.random() < 0.1:
            out.append(line.replace("<ALT_BEGIN>", "<ALT>"))      # empty alternative written as nothing
        if "<ALT_END>" in line:
            depth = 0
    return out


@pytest.mark.parametrize("seed", range(40))
def test_columnar_reader_equals_object_reader(seed, monkeypatch):
    from lattice_tools.scoring._fast_ctm import read_ctm_columns
    from lattice_tools.scoring._fast_score import items_from_objects
    from lattice_tools.scoring.sclite import _fold, score_files

    rng = random.Random(9000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 6),
                                 conf=rng.random() < 0.4, stars=rng.random() < 0.3, shuffle=rng.random() < 0.2)
    ctm = _decorate(rng, ctm)
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        if seed % 5 == 0:
            with open(hp, "rb") as f:
                data = f.read()
            with open(hp, "wb") as f:
                f.write(data.replace(b"\n", b"\r\n"))
        cs = seed % 3 == 0

        def fold(x):
            return _fold(x, cs, None)
        cols = read_ctm_columns(hp, fold)
        assert cols is not None
        _items_equal(cols, items_from_objects(read_ctm(hp), fold))
        via_file = score_files(rp, hp, allow_missing=True, case_sensitive=cs)
        via_objects = _general(monkeypatch, read_stm(rp), read_ctm(hp), allow_missing=True, case_sensitive=cs,
                               ref_name=rp, hyp_name=hp)
    _same(via_file, via_objects)


BAD_CTMS = [
    "f A 0.1 0.2",                                              # 4 fields
    "f A x 0.2 w",                                              # bad number
    "f A 0.1 0.2 w *",                                          # '*' confidence
    "f A 0.1 0.2 @",                                            # '@' outside a block
    "f A * * <ALT_BEGIN>\nf A 0.1 0.2 w\nf A * * <ALT_BEGIN>\nf A * * <ALT_END>\nf A * * <ALT_END>",  # nested
    "f A * * <ALT>",                                            # stray tag
    "f A * * <ALT_BEGIN>\nf A 0.1 0.2 w",                       # unterminated
    "f A * * <ALT_BEGIN>\nf B 0.1 0.2 w\nf A * * <ALT_END>",     # channel change in a block
    "f A * * <ALT_BEGIN>\n;; c\nf A 0.1 0.2 w\nf A * * <ALT_END>",  # comment in a block
    "f A * * <ALT_BEGIN>\nf A 0.1 0.2 @\nf A 0.1 0.2 w\nf A * * <ALT_END>",  # '@' with a word
    "f A 1e-1 0.2 w",                                           # valid, unusual number: exact reader
    "f A 0.1 0.2 w\rf A 0.3 0.2 x",                             # lone CR
]


@pytest.mark.parametrize("text", BAD_CTMS)
def test_columnar_reader_defers_unusual_input_to_exact_reader(text, tmp_path):
    from lattice_tools.errors import FormatError
    from lattice_tools.scoring._fast_ctm import read_ctm_columns
    from lattice_tools.scoring.sclite import score_files

    hp = tmp_path / "h.ctm"
    hp.write_bytes(text.encode() + b"\n")
    rp = tmp_path / "r.stm"
    rp.write_text("f A s 0.0 5.0 w x\n")
    assert read_ctm_columns(str(hp), str.lower) is None
    try:
        expected = ("ok", score_stm_ctm(read_stm(str(rp)), read_ctm(str(hp))).total)
    except FormatError as exc:
        expected = ("error", str(exc))
    try:
        got = ("ok", score_files(str(rp), str(hp)).total)
    except FormatError as exc:
        got = ("error", str(exc))
    assert got == expected
