"""The chain engine (lattice_tools.scoring.chain_scorer) and the columnar CTM reader against the general engine
(same segments, counts, costs, alignment pairs, warnings, NCE) and against Debian sclite."""
from __future__ import annotations

import os
import random
import tempfile

import pytest
from _chain_scorer_helpers import random_chain_case, random_sausage_case
from _scoring_helpers import SCLITE, parse_pra, run_sclite

from lattice_tools.io.transcripts.ctm import read_ctm
from lattice_tools.io.transcripts.stm import read_stm
from lattice_tools.scoring.ctm_columns import read_ctm_columns
from lattice_tools.scoring.ctm_items import items_from_objects
from lattice_tools.scoring.reports import alignment_lines
from lattice_tools.scoring.sclite import chain_engine_applies, score_files, score_stm_ctm
from lattice_tools.scoring.segments import fold as fold_case
from lattice_tools.scoring.tuning import EngineTuning

OPTION_SETS = [dict(), dict(optional_deletable=True), dict(mode="levenshtein"),
               dict(case_sensitive=True), dict(mode="levenshtein", optional_deletable=True)]


def _write(tmp, stm, ctm):
    rp, hp = os.path.join(tmp, "r.stm"), os.path.join(tmp, "h.ctm")
    with open(rp, "w") as f:
        f.write("\n".join(stm) + "\n")
    with open(hp, "w") as f:
        f.write("\n".join(ctm) + "\n")
    return rp, hp


GENERAL = EngineTuning(engine="general")


def _general(*args, **kw):
    return score_stm_ctm(*args, tuning=GENERAL, **kw)


def _same(a, b):
    assert a.total == b.total
    assert list(a.speakers.items()) == list(b.speakers.items())
    assert a.warnings == b.warnings
    assert (a.nce is None) == (b.nce is None)
    if a.nce is not None:
        assert a.nce == pytest.approx(b.nce, rel=1e-12, abs=1e-12, nan_ok=True)
        assert a.speaker_nce == pytest.approx(b.speaker_nce, rel=1e-12, abs=1e-12, nan_ok=True)
    assert len(a.segments) == len(b.segments)
    for x, y in zip(a.segments, b.segments, strict=False):
        assert (x.id, x.speaker, x.file, x.channel, x.start, x.end, x.labels) == \
            (y.id, y.speaker, y.file, y.channel, y.start, y.end, y.labels)
        assert x.alignment.counts == y.alignment.counts, x.id
        assert x.alignment.cost == y.alignment.cost, x.id
        assert x.alignment.pairs == y.alignment.pairs, x.id


@pytest.mark.parametrize("seed", range(60))
def test_chain_engine_equals_general_engine(seed):
    rng = random.Random(1000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 6),
                                 conf=rng.random() < 0.4, stars=rng.random() < 0.3, shuffle=rng.random() < 0.2)
    opts = OPTION_SETS[seed % len(OPTION_SETS)]
    # odd seeds: tiny chunks, jobs are scored in several groups of similar reference length
    tuning = EngineTuning(engine="chain", max_cells=40 if seed % 2 else EngineTuning().max_cells)
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        ref, hyp = read_stm(rp), read_ctm(hp)
        assert chain_engine_applies(list(ref.segments))
        fast = score_stm_ctm(ref, hyp, allow_missing=True, tuning=tuning, **opts)
        slow = _general(ref, hyp, allow_missing=True, **opts)
    _same(fast, slow)


def test_chain_engine_errors_and_empty_inputs():
    from lattice_tools.core.errors import MismatchError
    from lattice_tools.io.transcripts.ctm import parse_ctm_lines
    from lattice_tools.io.transcripts.stm import parse_stm_line

    stm = [parse_stm_line("f1 A s1 0.0 5.0 a b c", "r.stm", 1)]
    extra = parse_ctm_lines(enumerate(["f2 A 0.5 0.1 a"], 1), "h.ctm")
    with pytest.raises(MismatchError, match="f2 a"):
        score_stm_ctm(stm, extra, hyp_name="h.ctm")
    res = score_stm_ctm(stm, extra, allow_missing=True)
    _same(res, _general(stm, extra, allow_missing=True))
    assert res.total.deletions == 3
    empty_ref = [parse_stm_line("f1 A s1 0.0 5.0", "r.stm", 1)]
    hyp = parse_ctm_lines(enumerate(["f1 A 0.5 0.1 a", "f1 A 0.7 0.1 b"], 1), "h.ctm")
    res = score_stm_ctm(empty_ref, hyp)
    _same(res, _general(empty_ref, hyp))
    assert (res.total.insertions, res.total.ref_words) == (2, 0)


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
@pytest.mark.parametrize("seed", range(25))
def test_chain_engine_equals_sclite(seed):
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
              "arc_conf", "is_block"):
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
        parts = line.split()
        if len(parts) >= 5 and not parts[4].startswith("<") and parts[4] != "@" and rng.random() < 0.2:
            parts[4] += "_a_long_word_" + str(rng.randint(0, 3))      # tokens longer than 8 bytes
            line = " ".join(parts)
        out.append(line)
        if "<ALT_BEGIN>" in line and rng.random() < 0.1:
            out.append(line.replace("<ALT_BEGIN>", "<ALT>"))      # empty alternative written as nothing
        if "<ALT_END>" in line:
            depth = 0
    return out


@pytest.mark.parametrize("seed", range(40))
def test_columnar_reader_equals_object_reader(seed):
    rng = random.Random(9000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 6),
                                 conf=rng.random() < 0.4, stars=rng.random() < 0.3, shuffle=rng.random() < 0.2)
    ctm = _decorate(rng, ctm)
    if seed % 4 == 1:                                             # long file names
        stm = [line.replace("f", "file_with_a_long_name_", 1) for line in stm]
        ctm = [line if line.startswith(";;") or not line.strip() else line.replace("f", "file_with_a_long_name_", 1)
               for line in ctm]
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        if seed % 5 == 0:
            with open(hp, "rb") as f:
                data = f.read()
            with open(hp, "wb") as f:
                f.write(data.replace(b"\n", b"\r\n"))
        cs = seed % 3 == 0

        def fold(x):
            return fold_case(x, cs, None)
        cols = read_ctm_columns(hp, fold)
        assert cols is not None
        _items_equal(cols, items_from_objects(read_ctm(hp), fold))
        # many small tokenization chunks
        _items_equal(read_ctm_columns(hp, fold, tuning=EngineTuning(ctm_chunk_bytes=97)), cols)
        via_file = score_files(rp, hp, allow_missing=True, case_sensitive=cs)
        via_objects = _general(read_stm(rp), read_ctm(hp), allow_missing=True, case_sensitive=cs,
                               ref_name=rp, hyp_name=hp)
    _same(via_file, via_objects)


def _columns_as_text(cols):
    """The columns of ctm_columns._data_lines with ids replaced by their texts (the two scanners number
    words and file/channel pairs differently)."""
    import numpy as np

    lines, comments, fc_id, fc_pairs, word_id, vocab, start, dur, conf = cols
    return (lines.tolist(), comments.tolist(), [tuple(fc_pairs[i]) for i in fc_id.tolist()],
            [vocab[i] for i in word_id.tolist()], np.asarray(start), np.asarray(dur), np.asarray(conf))


@pytest.mark.parametrize("seed", range(40))
def test_compiled_scanner_equals_numpy_scanner(seed):
    """ctm_columns: the compiled one-pass scanner gives the numpy tokenizer's columns (as texts), reads
    every ASCII file of canonical numbers, and leaves to the numpy tokenizer what it does not read."""
    import numpy as np

    from lattice_tools._ext import native
    from lattice_tools.scoring import ctm_columns as C

    rng = random.Random(5000 + seed)
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(0, 6),
                                 conf=rng.random() < 0.4, stars=rng.random() < 0.3, shuffle=rng.random() < 0.2)
    text = "\n".join(_decorate(rng, ctm)) + "\n"
    if seed % 5 == 0:
        text = text.replace("\n", "\r\n")
    variants = [(text, True)]
    if ctm:
        variants += [(text.replace(ctm[0].split()[4], "s\u00e9", 1), False),  # non-ASCII: the numpy scanner
                     (text + "f A 1e-1 0.2 w\n", False),                       # unusual number
                     (text + "f A 0.1 0.2 w\rf A 0.3 0.2 x\n", False)]        # lone CR
    for body, compiled_reads in variants:
        data = bytearray(body.encode() + bytes(137))
        n = len(body.encode())
        got = native("ctm_scan").scan(data, n)
        assert (got is not None) == compiled_reads
        want = C._data_lines_numpy(data, n, "utf-8", C.DEFAULT_TUNING)
        if got is None:
            assert C._data_lines(data, n, "utf-8", C.DEFAULT_TUNING) is None if want is None else True
            continue
        assert want is not None
        a = _columns_as_text(C._data_lines(data, n, "utf-8", C.DEFAULT_TUNING))
        b = _columns_as_text(want)
        assert a[:4] == b[:4]
        for x, y in zip(a[4:], b[4:], strict=True):
            assert np.array_equal(x, y, equal_nan=True) and np.array_equal(np.signbit(x), np.signbit(y))


def test_compiled_scanner_numbers_equal_float():
    """Start times, durations and confidences as float() reads them (sign of zero included); any other
    form of number leaves the file to the numpy tokenizer."""
    import numpy as np

    from lattice_tools._ext import native

    rng = random.Random(4)
    toks = [f"{rng.uniform(-999, 9999):.{rng.randint(0, 4)}f}"[:8].rstrip(".") for _ in range(5000)]
    toks += ["0", "-0", "007", "12345678", "0.000001", "-1.5", "99999.99", "-0.0"]
    body = "".join(f"f A {t} {t} w {t.lstrip('-')}\n" for t in toks).encode()
    got = native("ctm_scan").scan(body, len(body))
    want = np.array([float(t) for t in toks])
    for col, w in ((6, want), (7, want), (8, np.abs(want))):
        x = np.frombuffer(got[col], np.float64)
        assert np.array_equal(x, w) and np.array_equal(np.signbit(x), np.signbit(w))
    for bad in ["1e5", "+1", ".5", "5.", "1.2.3", "--1", "1-", "nan", "inf", "0x1", "123456789", "-"]:
        line = f"f A {bad} 1 w\n".encode()
        assert native("ctm_scan").scan(line, len(line)) is None, bad
    line = b"f A 1 1 w *\n"                                      # a '*' confidence
    assert native("ctm_scan").scan(line, len(line)) is None


def test_compiled_scanner_refuses_bad_lengths():
    from lattice_tools._ext import native

    scan = native("ctm_scan").scan
    with pytest.raises(ValueError, match="n_bytes"):
        scan(b"f A 0 1 w", 9)                                     # does not end with a newline
    with pytest.raises(ValueError, match="n_bytes"):
        scan(b"f A 0 1 w\n", 11)
    assert scan(b"", 0)[0] == b""


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
    "f A 0.1 0.2 " + "x" * 300,                                 # valid, very long word: exact reader
]


@pytest.mark.parametrize("text", BAD_CTMS)
def test_columnar_reader_defers_unusual_input_to_exact_reader(text, tmp_path):
    from lattice_tools.core.errors import FormatError

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


def test_unique_inverse_equals_numpy_unique():
    import numpy as np

    from lattice_tools.scoring.ctm_columns import _unique_inverse

    rng = np.random.default_rng(0)
    common = rng.integers(0, 1 << 62, 300, dtype=np.uint64)
    keys = common[rng.integers(0, 300, 200_000)]
    keys[rng.integers(0, len(keys), 50)] = rng.integers(0, 1 << 62, 50, dtype=np.uint64)  # rare: missed by the sample
    uniq, inv = _unique_inverse(keys)
    u2, i2 = np.unique(keys, return_inverse=True)
    assert np.array_equal(uniq, u2) and np.array_equal(inv, i2.reshape(-1))


def test_number_parser_equals_float(tmp_path):
    import numpy as np

    from lattice_tools.scoring.ctm_numbers import parse_numbers as _numbers

    rng = random.Random(3)
    toks = [f"{rng.uniform(-999, 9999):.{rng.randint(0, 4)}f}"[:8].rstrip(".") for _ in range(20000)]
    toks += ["0", "-0", "007", "12345678", "0.000001", "*", "-1.5", "99999.99"]
    data = bytearray(" ".join(toks).encode() + bytes(16))
    lens = np.array([len(t) for t in toks])
    starts = np.r_[0, np.cumsum(lens[:-1] + 1)]
    u64 = np.ndarray(shape=(len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
    got = _numbers(u64, starts, lens)
    want = [float("nan") if t == "*" else float(t) for t in toks]
    assert np.array_equal(got, np.array(want), equal_nan=True)
    assert all(np.signbit(g) == np.signbit(w) for g, w in zip(got.tolist(), want, strict=False) if w == 0)
    for bad in ["1e5", "+1", ".5", "5.", "1.2.3", "--1", "1-", "nan", "inf", "0x1"]:
        d = bytearray(bad.encode() + bytes(16))
        u = np.ndarray(shape=(len(d) - 7,), dtype="<u8", buffer=d, strides=(1,))
        assert _numbers(u, np.array([0]), np.array([len(bad)])) is None, bad


def test_large_ctm_with_rare_words_and_chunks(tmp_path):
    """A CTM big enough for the sampled vocabulary search and several DP chunks, scored through
    score_files (columnar path) and through the general engine on objects."""
    rng = random.Random(11)
    vocab = [f"w{i}" for i in range(300)]
    stm, ctm = [], []
    for s in range(800):
        f, k = divmod(s, 100)
        start = 10.0 * k
        ref = [rng.choice(vocab) for _ in range(rng.randint(0, 14))]
        stm.append(f"file{f} A spk{f} {start:.2f} {start + 9.5:.2f} {' '.join(ref)}")
        hyp = [w if rng.random() < 0.8 else rng.choice(vocab + [f"rare{s}"]) for w in ref]
        if rng.random() < 0.3:
            ctm.append(f"file{f} A * * <ALT_BEGIN>")
            for a in range(3):
                for j, w in enumerate(hyp[a:]):
                    ctm.append(f"file{f} A {start + 0.3 * j:.2f} 0.25 {w}")
                ctm.append(f"file{f} A * * " + ("<ALT>" if a < 2 else "<ALT_END>"))
        else:
            for j, w in enumerate(hyp):
                ctm.append(f"file{f} A {start + 0.3 * j:.2f} 0.25 {w}")
    rp, hp = _write(str(tmp_path), stm, ctm)
    fast = score_files(rp, hp, tuning=EngineTuning(engine="chain", max_cells=5000, ctm_sample_min=64))
    slow = _general(read_stm(rp), read_ctm(hp), ref_name=rp, hyp_name=hp)
    _same(fast, slow)


@pytest.mark.slow
@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
def test_many_chain_cases_equal_sclite():
    """400 more random chain-reference cases (1-best words and ALT blocks) through the columnar
    reader and the chain engine, against Debian sclite with and without -D."""
    for seed in range(20000, 20400):
        rng = random.Random(seed)
        stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 6))
        if not ctm:
            continue                                              # sclite rejects an empty CTM
        flags = [[], ["-D"]][seed % 2]
        with tempfile.TemporaryDirectory() as tmp:
            rp, hp = _write(tmp, stm, ctm)
            rows, pra = run_sclite(rp, "stm", hp, "ctm", flags, workdir=tmp)
            res = score_files(rp, hp, optional_deletable="-D" in flags, allow_missing=True)
            t = res.total
            assert rows["Sum"][:2] == [t.segments, t.ref_words], seed
            blocks = {b["id"]: b for b in parse_pra(pra)}
            assert len(blocks) == len(res.segments), seed
            for seg in res.segments:
                b = blocks[seg.id]
                c = seg.counts
                assert b["Scores:"] == f"Scores: (#C #S #D #I) {c.correct} {c.substitutions} {c.deletions} {c.insertions}"
                assert [b[k] for k in ("REF:", "HYP:", "Eval:") if k in b] == alignment_lines(seg.alignment), seed


@pytest.mark.skipif(SCLITE is None, reason="Debian sclite (sctk) not installed")
@pytest.mark.parametrize("seed", range(30))
def test_sausage_ctm_in_file_order_equals_sclite(seed):
    """Blocks whose alternatives start before the previous slot: scored in file order like sclite
    (columnar reader, object path and general engine alike)."""
    rng = random.Random(7000 + seed)
    stm, ctm = random_sausage_case(rng, n_segs=rng.randint(1, 4))
    if not ctm:
        return
    flags = [[], ["-D"]][seed % 2]
    with tempfile.TemporaryDirectory() as tmp:
        rp, hp = _write(tmp, stm, ctm)
        rows, pra = run_sclite(rp, "stm", hp, "ctm", flags, workdir=tmp)
        kw = dict(optional_deletable="-D" in flags, allow_missing=True)
        via_file = score_files(rp, hp, **kw)
        via_objects = score_stm_ctm(read_stm(rp), read_ctm(hp), **kw)
        general = _general(read_stm(rp), read_ctm(hp), ref_name=rp, hyp_name=hp, **kw)
        blocks = {b["id"]: b for b in parse_pra(pra)}
    _same(via_file, general)
    _same(via_objects, general)
    assert rows["Sum"][:2] == [via_file.total.segments, via_file.total.ref_words]
    assert len(blocks) == len(via_file.segments)
    for seg in via_file.segments:
        b = blocks[seg.id]
        c = seg.counts
        assert b["Scores:"] == f"Scores: (#C #S #D #I) {c.correct} {c.substitutions} {c.deletions} {c.insertions}"
        assert [b[k] for k in ("REF:", "HYP:", "Eval:") if k in b] == alignment_lines(seg.alignment), seg.id


def test_ctm_types_apply_whatever_reader_reads_the_file(tmp_path):
    # a canonical CTM (columnar reader) and the same words with an unusual number (object reader):
    # --ctm-type must select tokens in both (it was ignored on the columnar path: 0% instead of 100% WER)
    rp = tmp_path / "r.stm"
    rp.write_text("f A s 0.0 5.0 a b c\n")
    canonical, unusual = tmp_path / "h1.ctm", tmp_path / "h2.ctm"
    canonical.write_text("f A 0.5 0.1 a\nf A 1.5 0.1 b\nf A 2.5 0.1 c\n")
    unusual.write_text("f A 0.5 0.1 a\nf A 1.5 1e-1 b\nf A 2.5 0.1 c\n")
    assert read_ctm_columns(str(canonical), str.lower) is not None
    for hp in (canonical, unusual):
        assert score_files(str(rp), str(hp), ctm_types=("frag",)).total.deletions == 3
        assert score_files(str(rp), str(hp), ctm_types=("lex",)).total.correct == 3


def test_compiled_scanner_on_random_bytes():
    """Any bytes: the compiled scanner does not crash, and what it reads equals the numpy tokenizer's columns."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from lattice_tools._ext import native
    from lattice_tools.scoring import ctm_columns as C

    pieces = st.sampled_from(["f", "A", "B", " ", "  ", "\t", "\n", "\r\n", "\r", "0.5", "-1", "*", "1e3", ";;",
                              "<ALT_BEGIN>", "<ALT>", "<ALT_END>", "@", "w", "\xe9", "\x00", "\x0b", "12345678",
                              "123456789", ".5", "x" * 300])

    @settings(max_examples=300, deadline=None)
    @given(st.lists(pieces, max_size=60))
    def check(parts):
        body = ("".join(parts) + "\n").encode()
        data = bytearray(body + bytes(137))
        got = native("ctm_scan").scan(data, len(body))
        if got is None:
            return
        want = C._data_lines_numpy(data, len(body), "utf-8", C.DEFAULT_TUNING)
        assert want is not None
        import numpy as np

        a, b = _columns_as_text(C._data_lines(data, len(body), "utf-8", C.DEFAULT_TUNING)), _columns_as_text(want)
        assert a[:4] == b[:4]
        assert all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a[4:], b[4:], strict=True))

    check()
