"""Kaldi archives: specifiers, text/binary Lattice and CompactLattice, against kaldifst/kaldi-decoder."""
from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from _io_helpers import (
    canonical_arcs,
    decoded_pocketsphinx,
    kaldi_raw_lattice,
    small_word_lattice,
    total_log_prob_reference,
    word_sequences,
)

from lattice_tools.core.errors import FormatError, LatticeError, MismatchError, SymbolError
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io.lattices._kaldi_text import parse_text_block
from lattice_tools.io.lattices.kaldi import (
    _Reader,
    format_binary_fst,
    format_text_fst,
    iter_raw,
    lattice_to_raw,
    parse_specifier,
    raw_to_lattice,
    read_binary_fst,
    read_kaldi_lattices,
    transition_ids,
    write_kaldi_lattices,
)
from lattice_tools.io.lattices.slf import format_slf, read_slf

kaldifst = pytest.importorskip("kaldifst")


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    return decoded_pocketsphinx(tmp_path_factory)


def _text_rows(fst_text: str):
    """Rows of an OpenFst/Kaldi text dump as (labels, weights) sorted by labels."""
    rows = []
    for line in fst_text.strip().splitlines():
        cols = line.split()
        if "," in cols[-1]:
            rows.append((tuple(cols[:-1]), [float(x) for x in cols[-1].split(",")]))
        else:
            rows.append((tuple(cols), [0.0, 0.0]))  # weight One is omitted by OpenFst
    return sorted(rows)


def _same_rows(a: str, b: str, rtol: float = 2e-6) -> bool:
    ra, rb = _text_rows(a), _text_rows(b)
    return len(ra) == len(rb) and all(x[0] == y[0] and np.allclose(x[1], y[1], rtol=rtol, atol=1e-5)
                                      for x, y in zip(ra, rb, strict=False))


# ------------------------------------------------------------------------------------------------
def test_specifier_parsing():
    sp = parse_specifier("ark,s,cs:lat.1.ark")
    assert (sp.kind, sp.path, sp.text) == ("ark", "lat.1.ark", False) and sp.options == {"s", "cs"}
    assert parse_specifier("ark,t:-").text and parse_specifier("ark,t:-").path == "-"
    sp = parse_specifier("ark:gunzip -c exp/lat.1.gz |")
    assert sp.path == "exp/lat.1.gz" and sp.gzip_pipe
    assert parse_specifier("scp:a.scp").kind == "scp"
    sp = parse_specifier("ark,scp,t:a.ark,a.scp", write=True)
    assert (sp.kind, sp.path, sp.scp_path, sp.text) == ("ark,scp", "a.ark", "a.scp", True)
    assert parse_specifier("ark:| gzip -c > out.gz", write=True).gzip_pipe
    for bad in ("lat.ark", "foo:lat.ark", "ark,zz:lat.ark", "ark:cat lat.ark |", "ark:rm -rf / |"):
        with pytest.raises(FormatError):
            parse_specifier(bad)


def test_binary_reader_matches_kaldifst_writer_and_text(tmp_path):
    k = kaldi_raw_lattice(seed=1)
    path = tmp_path / "raw.fst"
    k.write(str(path))
    with open(path, "rb") as f:
        raw = read_binary_fst(_Reader(f, str(path)), None)
    assert raw.kind == "lattice" and raw.num_states == k.num_states and raw.start == k.start
    # every arc and final weight equals kaldifst's own text dump (to_str)
    ours = format_text_fst(raw)
    assert _same_rows(ours, k.to_str())
    # and the text parser reads that dump to the same arrays
    raw2 = parse_text_block(k.to_str().encode(), 1, "to_str", None)
    assert raw2.kind == "lattice"
    for name in ("src", "dst", "ilabel", "olabel"):
        assert np.array_equal(getattr(raw, name), getattr(raw2, name))
    assert np.allclose(raw.w1, raw2.w1, atol=1e-4) and np.allclose(raw.w2, raw2.w2, atol=1e-4)


def test_binary_writer_is_read_back_by_kaldifst(tmp_path):
    k = kaldi_raw_lattice(seed=2)
    path = tmp_path / "raw.fst"
    k.write(str(path))
    with open(path, "rb") as f:
        raw = read_binary_fst(_Reader(f, str(path)), None)
    ours = tmp_path / "ours.fst"
    ours.write_bytes(format_binary_fst(raw))
    back = kaldifst.Lattice.read(str(ours))
    assert back.to_str() == k.to_str()
    # via the hub (renumbered): same number of states/arcs and the same rows up to numbering
    lat = raw_to_lattice(raw, "u")
    hub_file = tmp_path / "hub.fst"
    hub_file.write_bytes(format_binary_fst(lattice_to_raw(lat)))
    back2 = kaldifst.Lattice.read(str(hub_file))
    assert back2.num_states == lat.num_states
    assert sum(back2.num_arcs(s) for s in range(back2.num_states)) == lat.num_arcs


def test_raw_lattice_to_hub_times_and_totals(tmp_path):
    k = kaldi_raw_lattice(seed=3, num_frames=25)
    p = tmp_path / "raw.fst"
    k.write(str(p))
    with open(p, "rb") as f:
        lat = raw_to_lattice(read_binary_fst(_Reader(f, str(p)), None), "u", symbols=None)
    assert not lat.word_aligned and lat.num_frames == 25
    emitting = lat.ilabel != 0
    assert np.all(lat.t1[emitting] - lat.t0[emitting] == 1) and np.all(lat.t1[~emitting] == lat.t0[~emitting])
    # every complete path emits exactly one token per frame
    finals = lat.final_states
    assert all(lat.t1[lat.dst == f].max() == 25 for f in finals if np.any(lat.dst == f))
    assert lat.symbols.word(1) == "1"  # numeric symbols without words.txt


def test_archive_text_binary_round_trip_frame_level(tmp_path):
    lats = []
    for seed in range(3):
        k = kaldi_raw_lattice(seed=seed)
        p = tmp_path / f"{seed}.fst"
        k.write(str(p))
        with open(p, "rb") as f:
            lats.append(raw_to_lattice(read_binary_fst(_Reader(f, str(p)), None), f"utt{seed}",
                                       symbols=SymbolTable({"a": 1, "b": 2, "c": 3})))
    syms = lats[0].symbols
    write_kaldi_lattices(lats, f"ark,t:{tmp_path}/a.txt")
    write_kaldi_lattices(read_kaldi_lattices(f"ark,t:{tmp_path}/a.txt", syms), f"ark:{tmp_path}/a.ark")
    back = list(read_kaldi_lattices(f"ark:{tmp_path}/a.ark", syms))
    assert [b.key for b in back] == ["utt0", "utt1", "utt2"]
    for a, b in zip(lats, back, strict=False):
        assert not b.word_aligned
        assert canonical_arcs(a, 3) == canonical_arcs(b, 3)
        assert total_log_prob_reference(a) == pytest.approx(total_log_prob_reference(b), abs=1e-3)
    # the text archive follows Kaldi's framing: "key \n" + lines + empty line
    text = open(f"{tmp_path}/a.txt").read()
    assert text.startswith("utt0 \n0\t") and "\n\nutt1 \n" in text


def test_compact_lattice_text_binary_round_trip(tmp_path):
    lat = small_word_lattice()
    write_kaldi_lattices([lat], f"ark,t:{tmp_path}/c.txt")
    text = open(f"{tmp_path}/c.txt").read()
    # "the": word 1, graph 1.5, acoustic 10.5, 12 frames -> 12 placeholder transition ids
    assert "0\t1\t1\t1.5,10.5," + "_".join(["1"] * 12) + "\n" in text
    write_kaldi_lattices(read_kaldi_lattices(f"ark,t:{tmp_path}/c.txt", lat.symbols), f"ark:{tmp_path}/c.ark")
    with open(f"{tmp_path}/c.ark", "rb") as f:
        data = f.read()
    assert data.startswith(b"utt1 \xd6\xfd\xb2\x7e") and b"compactlattice44" in data
    back = next(read_kaldi_lattices(f"ark:{tmp_path}/c.ark", lat.symbols))
    assert back.word_aligned and canonical_arcs(back) == canonical_arcs(lat)
    tids = transition_ids(back)
    assert tids is not None and [len(t) for t in tids] == (back.t1 - back.t0).tolist()
    assert all(t.dtype == np.int32 and not t.flags.writeable for t in tids)
    assert total_log_prob_reference(back) == pytest.approx(total_log_prob_reference(lat), abs=1e-4)


def test_compact_text_as_kaldi_prints_it():
    # Shapes of lines as printed by lattice-copy ark,t (weight One omitted; empty tid string).
    text = """0\t1\t4\t14.6843,-224.556,3_12_18
0\t2\t5\t16.5506,-256.026,3_12_18_17
1\t3\t6\t2.84427,-10.4875,
2\t3\t6\t0,0,20
3\t4\t7
4\t1.5,2.5,9_9
"""
    raw = parse_text_block(text.encode(), 1, "t", "k")
    assert raw.kind == "compact" and raw.final_strings[4].tolist() == [9, 9]
    lat = raw_to_lattice(raw, "k")
    # The two paths reach state 3 after 3 and 5 frames (tid strings are not word-aligned), so
    # state 3 is split per arrival frame; the final tid string became a 2-frame epsilon arc
    # carrying the final weight.
    assert canonical_arcs(lat, 4) == [
        ("4", 0, 3, 14.6843, -224.556), ("5", 0, 4, 16.5506, -256.026), ("6", 3, 3, 2.8443, -10.4875),
        ("6", 4, 5, 0.0, 0.0), ("7", 3, 3, 0.0, 0.0), ("7", 5, 5, 0.0, 0.0),
        ("<eps>", 3, 5, 1.5, 2.5), ("<eps>", 5, 7, 1.5, 2.5)]


def test_compact_lattice_not_time_synchronous_is_split_exactly():
    # two paths reach state 2 after 3 and 5 frames; state 2 -> 3 carries a 2-frame word
    text = "0\t1\t1\t1,1,5_5\n1\t2\t2\t1,1,5\n0\t2\t3\t2,2,6_6_6_6_6\n2\t3\t4\t0.5,0.5,7_7\n3\n"
    raw = parse_text_block(text.encode(), 1, "t", "k")
    lat = raw_to_lattice(raw, "k")
    arcs = canonical_arcs(lat)
    assert ("4", 3, 5, 0.5, 0.5) in arcs and ("4", 5, 7, 0.5, 0.5) in arcs
    seqs = word_sequences(lat)
    assert seqs[("1", "2", "4")] == pytest.approx(-5.0) and seqs[("3", "4")] == pytest.approx(-5.0)


def test_frame_level_lattice_must_be_time_synchronous():
    text = "0\t1\t5\t1\t1,1\n1\t2\t5\t0\t1,1\n0\t2\t0\t2\t1,1\n2\t0,0\n"
    raw = parse_text_block(text.encode(), 1, "t", "k")
    with pytest.raises(LatticeError, match="different frames") as err:
        raw_to_lattice(raw, "k")
    assert "[k]" in str(err.value)


def test_slf_to_kaldi_text_to_slf_round_trip(decoded, tmp_path):
    lats = decoded["lattices"][:3]
    syms = lats[0].symbols
    for lat in lats[1:]:
        syms = syms.with_words(w for w, _ in lat.symbols)
    lats = [read_slf(format_slf(lat), symbols=syms) for lat in lats]
    write_kaldi_lattices(lats, f"ark,t:{tmp_path}/x.txt")
    back = list(read_kaldi_lattices(f"ark,t:{tmp_path}/x.txt", lats[-1].symbols))
    for a, b in zip(lats, back, strict=False):
        slf_again = read_slf(format_slf(b))
        assert canonical_arcs(slf_again) == canonical_arcs(a)
        assert total_log_prob_reference(slf_again) == pytest.approx(total_log_prob_reference(a), abs=1e-9)


def test_scp_offsets_gzip_and_pipe(tmp_path):
    lats = [small_word_lattice("u1"), small_word_lattice("u2")]
    write_kaldi_lattices(lats, f"ark,scp:{tmp_path}/a.ark,{tmp_path}/a.scp")
    scp = open(f"{tmp_path}/a.scp").read().splitlines()
    assert [line.split()[0] for line in scp] == ["u1", "u2"]
    by_scp = list(read_kaldi_lattices(f"scp:{tmp_path}/a.scp", lats[0].symbols))
    assert [b.key for b in by_scp] == ["u1", "u2"]
    assert canonical_arcs(by_scp[1]) == canonical_arcs(lats[1])
    write_kaldi_lattices(lats, f"ark:{tmp_path}/a.ark.gz")
    with open(f"{tmp_path}/a.ark.gz", "rb") as f:
        assert f.read(2) == b"\x1f\x8b"
    for spec in (f"ark:{tmp_path}/a.ark.gz", f"ark:gunzip -c {tmp_path}/a.ark.gz |"):
        assert [b.key for b in read_kaldi_lattices(spec, lats[0].symbols)] == ["u1", "u2"]


def test_reads_kaldi_vectorfst_archive_written_by_kaldifst(tmp_path):
    f = kaldifst.compile("0 1 3 3 0.5\n1 2 4 5 1.5\n2 0.25\n", acceptor=False)
    w = kaldifst.VectorFstWriter(f"ark:{tmp_path}/std.ark")
    w.write("utt1", f)
    w.write("utt2", f)
    w.close()
    items = list(iter_raw(f"ark:{tmp_path}/std.ark"))
    assert [k for k, _ in items] == ["utt1", "utt2"]
    raw = items[1][1]
    assert raw.kind == "standard" and raw.w1.tolist() == [0.5, 1.5] and raw.final_w1[2] == 0.25
    assert raw.ilabel.tolist() == [3, 4] and raw.olabel.tolist() == [3, 5]


# ------------------------------------------------------------------------------------------------
# malformed input
# ------------------------------------------------------------------------------------------------
def test_malformed_text_names_file_line_and_key(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("u1 \n0\t1\t2\t2\t1,2\n1\t2\t3\tx\t1,2\n2\t0,0\n\n")
    with pytest.raises(FormatError) as err:
        list(read_kaldi_lattices(f"ark,t:{p}"))
    assert f"{p}:3 [u1]" in str(err.value)
    p.write_text("u1 \n0\t1\t2\t2\tnan,2\n1\t0,0\n\n")
    with pytest.raises(FormatError, match="NaN") as err:
        list(read_kaldi_lattices(f"ark,t:{p}"))
    assert f"{p}:2 [u1]" in str(err.value)
    p.write_text("u1 \n\n")
    with pytest.raises(FormatError, match="empty lattice") as err:
        list(read_kaldi_lattices(f"ark,t:{p}"))
    assert "[u1]" in str(err.value)
    p.write_text("u1 \n0\t1\t2\t2\t1,2\n1\t0\t3\t3\t1,2\n1\t0,0\n\n")
    with pytest.raises(LatticeError, match="cycle") as err:
        list(read_kaldi_lattices(f"ark,t:{p}"))
    assert "[u1]" in str(err.value)


def test_duplicate_keys_unknown_ids_truncation(tmp_path):
    lat = small_word_lattice("same")
    raw_bytes = b"same " + format_binary_fst(lattice_to_raw(lat))
    p = tmp_path / "dup.ark"
    p.write_bytes(raw_bytes + raw_bytes)
    with pytest.raises(MismatchError, match="duplicate key") as err:
        list(read_kaldi_lattices(f"ark:{p}", lat.symbols))
    assert "[same]" in str(err.value)
    p.write_bytes(raw_bytes)
    with pytest.raises(SymbolError, match="not in the symbol table") as err:
        list(read_kaldi_lattices(f"ark:{p}", SymbolTable({"the": 1})))
    assert "[same]" in str(err.value)
    p.write_bytes(raw_bytes[:-7])
    with pytest.raises(FormatError, match="truncated archive: end of file") as err:
        list(read_kaldi_lattices(f"ark:{p}", lat.symbols))
    assert "[same]" in str(err.value) and str(p) in str(err.value)
    p.write_bytes(b"same " + b"\xd6\x00\x00\x00junk")
    with pytest.raises(FormatError, match="magic"):
        list(read_kaldi_lattices(f"ark:{p}"))
    gz = tmp_path / "t.ark.gz"
    data = gzip.compress(raw_bytes * 20)
    gz.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match="gzip|end of file") as err:
        list(read_kaldi_lattices(f"ark:{gz}", lat.symbols))
    assert str(gz) in str(err.value)
    with pytest.raises(MismatchError, match="duplicate"):
        write_kaldi_lattices([lat, lat], f"ark:{tmp_path}/w.ark")
    assert not os.path.exists(f"{tmp_path}/w.ark")  # atomic: nothing left behind


@pytest.mark.parametrize("spec", ["ark:", "ark,t:"])
def test_corrupted_archives_raise_only_lattice_tools_errors(tmp_path, spec):
    """Random byte damage and truncation: always a LatticeToolsError (never a crash or a huge malloc)."""
    import random

    from lattice_tools.core.errors import LatticeToolsError

    good = tmp_path / "good.ark"
    write_kaldi_lattices([small_word_lattice("a"), small_word_lattice("b")], f"{spec}{good}")
    data = good.read_bytes()
    rng = random.Random(7)
    bad = tmp_path / "bad.ark"
    outcomes = {"ok": 0, "error": 0}
    for _ in range(300):
        b = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[: rng.randrange(len(b))]
        bad.write_bytes(bytes(b))
        try:
            list(read_kaldi_lattices(f"{spec}{bad}", small_word_lattice().symbols))
            outcomes["ok"] += 1
        except LatticeToolsError:
            outcomes["error"] += 1
    assert outcomes["error"] > 50


def _raws(data: bytes, path):
    """Every lattice of a binary archive's bytes (key, RawFst), or the FormatError message."""
    path.write_bytes(data)
    try:
        return list(iter_raw(f"ark:{path}"))
    except FormatError as exc:
        return str(exc)
