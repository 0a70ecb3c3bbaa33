"""Kaldi's best path (lattice_tools/_ext/kaldi_order.c: ``best_path`` on a hub lattice's stored order,
``compact_best_path`` on an archive's bytes) against the engine it replaced (tests/_reference/kaldi_best_path.py:
the numpy stored-order view and the plain-Python search): the same words, arcs, float32 costs and frames, or
the same error, on random binary CompactLattices -- stored numberings that are not topological, epsilons,
ties of equal weights, final strings, dead ends, unreachable states, cycles, paths reaching a state at
different frames -- read through the hub lattice and straight from the bytes; and ``best-path``'s outputs
byte for byte with and without the compiled reader.  (Kaldi's own outputs: tests/test_kaldi_parity.py.)"""
from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest
from _reference.kaldi_best_path import best_path_kaldi as reference_best_path
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.algorithms import kaldi_ops
from lattice_tools.algorithms.kaldi_ops import best_path_kaldi, compact_best_path_reader
from lattice_tools.core._budget import memory_budget
from lattice_tools.core.errors import BudgetExceededError, LatticeError, LatticeToolsError
from lattice_tools.core.lattice import Lattice
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io.lattices._kaldi_text import RawFst
from lattice_tools.io.lattices.kaldi import CompiledRecord, format_binary_fst, read_kaldi_lattices
from lattice_tools.pipelines import latbin

_WEIGHTS = (0.0, 0.5, 1.0, 1.5, 2.0, 2.5)  # few values: many ties between paths


@st.composite
def compact_lattices(draw):
    """A RawFst CompactLattice: a DAG under a random renumbering of its states (or, sometimes, any arcs:
    cycles), weights from a few float32 values; strings that mostly agree with one frame per state (the
    reader keeps such lattices in their stored order), sometimes not (paths reach a state at different
    frames); finals with and without strings."""
    n = draw(st.integers(1, 8))
    cyclic = draw(st.integers(0, 9)) == 0
    synchronous = draw(st.integers(0, 4)) > 0
    frames = sorted(draw(st.lists(st.integers(0, 4), min_size=n, max_size=n)))
    frames = [f - frames[0] for f in frames]
    end = frames[-1] + draw(st.integers(0, 2))
    perm = draw(st.permutations(range(n))) if draw(st.booleans()) else list(range(n))
    arcs = []
    for _ in range(draw(st.integers(0, 16))):
        s = draw(st.integers(0, n - 1))
        d = draw(st.integers(0, n - 1)) if cyclic else (draw(st.integers(s + 1, n - 1)) if s < n - 1 else None)
        if d is None:
            continue
        length = frames[d] - frames[s] if synchronous and frames[d] >= frames[s] else draw(st.integers(0, 3))
        arcs.append((perm[s], perm[d], draw(st.sampled_from([0, 0, 1, 2, 3])), draw(st.sampled_from(_WEIGHTS)),
                     draw(st.sampled_from(_WEIGHTS)), length))
    arcs.sort(key=lambda a: a[0])
    start = perm[0] if draw(st.integers(0, 5)) else draw(st.integers(0, n - 1))
    finals = {}
    for s in range(n):
        if draw(st.integers(0, 2)) == 0 or (s == n - 1 and draw(st.booleans())):
            length = end - frames[s] if synchronous and draw(st.booleans()) else draw(st.integers(0, 2))
            finals[perm[s]] = (draw(st.sampled_from(_WEIGHTS)), draw(st.sampled_from(_WEIGHTS)), length)
    col = lambda i, dt: np.array([a[i] for a in arcs], dt)  # noqa: E731
    fw1 = np.array([finals[s][0] if s in finals else np.inf for s in range(n)])
    fw2 = np.array([finals[s][1] if s in finals else np.inf for s in range(n)])
    raw = RawFst("compact", start, n, col(0, np.int64), col(1, np.int64), col(2, np.int64), col(2, np.int64),
                 col(3, np.float64), col(4, np.float64), fw1, fw2)
    raw.set_strings([np.arange(1, a[5] + 1, dtype=np.int32) for a in arcs])
    raw.final_strings = {s: np.full(f[2], 7, np.int32) for s, f in finals.items() if f[2]}
    return raw


def _binary(raw):
    """format_binary_fst's bytes with the lattice's start state in the header (the writer writes 0: it writes
    hub lattices, numbered from their start)."""
    data = bytearray(format_binary_fst(raw))
    at = 4 + 4 + len("vector") + 4 + len("compactlattice44") + 4 + 4 + 8
    data[at:at + 8] = struct.pack("<q", raw.start)
    return bytes(data)


def _archive(path, raws):
    path.write_bytes(b"".join(f"u{i} ".encode() + _binary(raw) for i, raw in enumerate(raws)))
    return f"ark:{path}"


def _outcome(fn):
    try:
        return fn()
    except LatticeToolsError as exc:
        return type(exc).__name__, str(exc)


def _reference(lat, scales):
    """(words, starts, durations, graph, acoustic, frames) of the reference engine."""
    bp = reference_best_path(lat, **scales)
    arcs = [a for a in bp.arcs if lat.word[a] != 0]
    return (bp.words, tuple(int(lat.t0[a]) for a in arcs), tuple(int(lat.t1[a] - lat.t0[a]) for a in arcs),
            bp.graph_cost, bp.acoustic_cost, bp.num_frames)


_SCALES = st.fixed_dictionaries({"acoustic_scale": st.sampled_from([1.0, 0.1, 0.5]),
                                  "lm_scale": st.sampled_from([1.0, 1.0, 0.7]),
                                  "word_penalty": st.sampled_from([0.0, 0.0, 0.5])})


@settings(max_examples=400, deadline=None, suppress_health_check=list(HealthCheck))
@given(compact_lattices(), _SCALES)
def test_best_path_equals_the_engine_it_replaced(tmp_path_factory, raw, scales):
    spec = _archive(tmp_path_factory.mktemp("bp") / "a.ark", [raw])
    lat = _outcome(lambda: next(read_kaldi_lattices(spec)))
    if isinstance(lat, tuple):  # the reader refuses it (a cycle, no complete path): so does the compiled reader
        compiled = _outcome(lambda: next(read_kaldi_lattices(spec, compact=compact_best_path_reader(None, **scales))))
        assert compiled == lat
        return
    want = _outcome(lambda: reference_best_path(lat, **scales))
    got = _outcome(lambda: best_path_kaldi(lat, **scales))
    assert got == want
    item = _outcome(lambda: next(read_kaldi_lattices(spec, compact=compact_best_path_reader(None, **scales))))
    if isinstance(item, CompiledRecord):
        assert item.key == "u0" and item.frame_shift == 0.01
        assert item.value == _reference(lat, scales)
    else:  # left to the reader: the same lattice, one without a best path or with paths reaching a state at
        # different frames (the reader splits its states, and Kaldi's stored order no longer applies)
        assert isinstance(item, Lattice) and item.equals(lat)
        assert isinstance(want, tuple) or "kaldi" not in lat.attrs


def test_the_compiled_reader_takes_the_lattices_the_reader_keeps_in_stored_order(tmp_path):
    """Every lattice of the random sample that has a best path and a stored order comes from the bytes
    (not from the reader): the compiled path is the one that runs."""
    rng = np.random.default_rng(5)
    raws = []
    for _ in range(40):
        n = int(rng.integers(2, 9))
        arcs = [(s, d) for s in range(n) for d in range(s + 1, n) if rng.random() < 0.5] + [(0, n - 1)]
        frames = np.sort(rng.integers(0, 30, n))
        frames[0] = 0
        dur = {(s, d): int(frames[d] - frames[s]) for s, d in arcs}
        perm = rng.permutation(n)
        arcs = sorted(((int(perm[s]), int(perm[d]), dur[s, d]) for s, d in arcs), key=lambda a: a[0])
        m = len(arcs)
        w = rng.choice(_WEIGHTS, size=(2, m))
        fw = np.full(n, np.inf)
        fw[perm[n - 1]] = 0.5
        raw = RawFst("compact", int(perm[0]), n, np.array([a[0] for a in arcs]), np.array([a[1] for a in arcs]),
                     np.ones(m, np.int64), np.ones(m, np.int64), w[0], w[1], fw, fw.copy())
        raw.set_strings([np.ones(a[2], np.int32) for a in arcs])  # time-synchronous
        raws.append(raw)
    spec = _archive(tmp_path / "a.ark", raws)
    items = list(read_kaldi_lattices(spec, compact=compact_best_path_reader(None, acoustic_scale=0.1)))
    lats = list(read_kaldi_lattices(spec))
    assert all(isinstance(i, CompiledRecord) for i in items)
    assert [i.value for i in items] == [_reference(lat, {"acoustic_scale": 0.1}) for lat in lats]


def _random_archive(path, count, seed, gz=False):
    """count synchronous lattices with long strings (so that an archive of a few hundred crosses the reader's
    1 MB chunks inside lattices)."""
    rng = np.random.default_rng(seed)
    raws = []
    for _ in range(count):
        n = int(rng.integers(3, 12))
        frames = np.sort(rng.integers(0, 400, n))
        frames[0] = 0
        arcs = [(s, d) for s in range(n) for d in range(s + 1, n) if rng.random() < 0.4] + [(s, s + 1) for s in
                                                                                            range(n - 1)]
        arcs.sort(key=lambda a: a[0])
        m = len(arcs)
        fw = np.full(n, np.inf)
        fw[n - 1] = float(rng.choice(_WEIGHTS))
        raw = RawFst("compact", 0, n, np.array([a[0] for a in arcs]), np.array([a[1] for a in arcs]),
                     rng.integers(0, 20, m), np.zeros(m, np.int64), rng.choice(_WEIGHTS, m),
                     rng.choice(_WEIGHTS, m) * 10, fw, fw.copy())
        raw.olabel = raw.ilabel.copy()
        raw.set_strings([np.full(int(frames[d] - frames[s]), 5, np.int32) for s, d in arcs])
        raws.append(raw)
    data = b"".join(f"utt{i:04d} ".encode() + _binary(raw) for i, raw in enumerate(raws))
    path.write_bytes(gzip.compress(data, 1) if gz else data)
    return f"ark:{path}"


@pytest.mark.parametrize("gz", [False, True])
def test_best_path_outputs_are_the_same_bytes_with_and_without_the_compiled_reader(tmp_path, monkeypatch, gz):
    spec = _random_archive(tmp_path / ("a.ark.gz" if gz else "a.ark"), 400, 11, gz)
    words = SymbolTable({f"w{i}": i for i in range(20)} | {"<eps>": 0})
    words.write(str(tmp_path / "words.txt"))
    opts = dict(acoustic_scale=0.1, word_penalty=0.5, words=str(tmp_path / "words.txt"))
    new = latbin.best_path(spec, tra=str(tmp_path / "n.tra"), ctm=str(tmp_path / "n.ctm"),
                           costs=str(tmp_path / "n.costs"), **opts)
    monkeypatch.setattr(kaldi_ops, "compact_best_path_reader", lambda *a, **k: None)
    old = latbin.best_path(spec, tra=str(tmp_path / "o.tra"), ctm=str(tmp_path / "o.ctm"),
                           costs=str(tmp_path / "o.costs"), **opts)
    assert new == old and new.lattices == 400
    for x in ("tra", "ctm", "costs"):
        assert (tmp_path / f"n.{x}").read_bytes() == (tmp_path / f"o.{x}").read_bytes(), x


def test_errors_name_the_key_as_the_reader_does(tmp_path):
    """A truncated archive, a word outside the word table, a lattice without a complete path: the errors
    of the reader, naming the key (the compiled reader leaves such lattices to it)."""
    spec = _random_archive(tmp_path / "a.ark", 30, 3)
    data = (tmp_path / "a.ark").read_bytes()
    (tmp_path / "cut.ark").write_bytes(data[:len(data) - 17])
    small = SymbolTable({"<eps>": 0, **{f"w{i}": i for i in range(1, 10)}})
    for s, table in ((f"ark:{tmp_path / 'cut.ark'}", None), (spec, small)):
        want = _outcome(lambda: list(read_kaldi_lattices(s, table)))  # noqa: B023
        got = _outcome(lambda: list(read_kaldi_lattices(s, table, compact=compact_best_path_reader(table))))  # noqa: B023
        assert isinstance(want, tuple) and got == want
        assert "utt00" in want[1]
    raw = RawFst("compact", 0, 3, np.array([0, 1]), np.array([1, 2]), np.array([1, 2]), np.array([1, 2]),
                 np.zeros(2), np.zeros(2), np.array([np.inf, 1.0, np.inf]), np.array([np.inf, 1.0, np.inf]))
    raw.set_strings([np.ones(2, np.int32)] * 2)
    dead = _archive(tmp_path / "dead.ark", [raw])  # state 2: a dead end, trimmed; state 1 final
    item = next(read_kaldi_lattices(dead, compact=compact_best_path_reader(None)))
    assert item.value == ((1,), (0,), (2,), 1.0, 1.0, 2)
    with pytest.raises(LatticeError, match="no final state"):
        raw.final_w1[:] = np.inf
        next(read_kaldi_lattices(_archive(tmp_path / "none.ark", [raw]), compact=compact_best_path_reader(None)))


def test_best_path_holds_the_memory_budget(tmp_path):
    spec = _random_archive(tmp_path / "a.ark", 5, 4)
    with pytest.raises(BudgetExceededError, match="utt0000"), memory_budget(1 << 20):
        latbin.best_path(spec, tra=str(tmp_path / "o.tra"), max_memory=1 << 20)
    assert not (tmp_path / "o.tra").exists()


def _results(spec, table=None, compiled=True, **scales):
    """[(key, (words, starts, durations, graph, acoustic, frames))] of every lattice of spec, or the error."""
    def run():
        out = []
        reader = compact_best_path_reader(table, **scales) if compiled else None
        for item in read_kaldi_lattices(spec, table, compact=reader):
            out.append((item.key, item.value if isinstance(item, CompiledRecord) else _reference(item, scales)))
        return out
    return _outcome(run)


def test_archive_oddities_read_as_the_reader_reads_them(tmp_path):
    """Records the compiled reader leaves to the reader (a text lattice, a binary marker, a key that is not
    ASCII, an unusual lattice) between usual ones; repeated keys (the same line named); scp offsets."""
    spec = _random_archive(tmp_path / "a.ark", 12, 8)
    data = (tmp_path / "a.ark").read_bytes()
    starts = [data.index(f"utt{i:04d} ".encode()) for i in range(12)]
    text = next(read_kaldi_lattices(spec))
    from lattice_tools.io.lattices.kaldi import format_kaldi_record

    odd = (data[:starts[3]] + b"\n\ntexty " + format_kaldi_record(text.with_key("texty"), binary=False)
           + data[starts[3]:starts[5]] + b"marked \0B" + data[starts[5] + 8:starts[7]]
           + "ütf ".encode() + data[starts[7] + 8:])
    (tmp_path / "odd.ark").write_bytes(odd)
    want = _results(f"ark:{tmp_path / 'odd.ark'}", compiled=False)
    assert len(want) == 13 and want[3][0] == "texty"
    assert _results(f"ark:{tmp_path / 'odd.ark'}") == want
    dup = data[:starts[4]] + b"\n\n" + data[starts[2]:starts[3]] + data[starts[4]:]
    (tmp_path / "dup.ark").write_bytes(dup)
    want = _results(f"ark:{tmp_path / 'dup.ark'}", compiled=False)
    assert want[0] == "MismatchError" and ":3" in want[1] and "utt0002" in want[1]
    assert _results(f"ark:{tmp_path / 'dup.ark'}") == want
    scp = tmp_path / "a.scp"
    scp.write_text("".join(f"k{i} {tmp_path / 'a.ark'}:{starts[i] + 8}\n" for i in (5, 1, 9)))
    want = _results(f"scp:{scp}", compiled=False)
    assert len(want) == 3 and _results(f"scp:{scp}") == want


def _mutations(data: bytes, rng, count: int):
    """count copies of data, each with one of: a few bytes overwritten (often in a record's header or an
    arc's fields), a cut, a stretch repeated or deleted."""
    for _ in range(count):
        kind = int(rng.integers(0, 4))
        b = bytearray(data)
        at = int(rng.integers(0, len(b)))
        if kind == 0:
            for _ in range(int(rng.integers(1, 5))):
                i = int(rng.integers(max(0, at - 64), min(len(b), at + 64)))
                b[i] = int(rng.choice([0, 1, 0x7F, 0x80, 0xFF, int(rng.integers(0, 256))]))
        elif kind == 1:
            del b[at:]
        elif kind == 2:
            n = int(rng.integers(1, 40))
            b[at:at] = b[at:at + n]
        else:
            del b[at:at + int(rng.integers(1, 40))]
        yield bytes(b)


@pytest.mark.parametrize("source", ["kgraph", "random"])
def test_corrupted_archives_read_the_same_with_and_without_the_compiled_reader(tmp_path, source):
    """Byte flips, cuts, repeated and deleted stretches of a real Kaldi archive and of random lattices: the
    compiled reader gives every lattice's best path as the reader and the engine it replaced do, or the same
    error at the same lattice (it leaves whatever is unusual to the reader), and never crashes."""
    if source == "kgraph":
        data = open("tests/data/kaldi/lats/kgraph_lat.1", "rb").read()[:120000]  # (its first lattices)
        data = data[:data.rindex(b"CVTE")]
    else:
        _random_archive(tmp_path / "r.ark", 6, 21)
        data = (tmp_path / "r.ark").read_bytes()
    rng = np.random.default_rng(17)
    path = tmp_path / "m.ark"
    same = 0
    for mutated in _mutations(data, rng, 250):
        path.write_bytes(mutated)
        want = _results(f"ark:{path}", compiled=False, acoustic_scale=0.1)
        assert _results(f"ark:{path}", acoustic_scale=0.1) == want
        same += isinstance(want, list)
    assert same > 10  # (some mutations leave archives that read)


def test_the_compiled_reader_stays_within_the_bytes_it_is_given(tmp_path):
    """limit: a lattice whose states and arcs need more than the bytes left (256 a state or arc) is left to the
    reader (records: stopped before it; body: (2,)); -1 or enough: computed."""
    spec = _random_archive(tmp_path / "a.ark", 1, 5)
    data = (tmp_path / "a.ark").read_bytes()
    lat = next(read_kaldi_lattices(spec))
    items = lat.num_states + lat.num_arcs
    reader = compact_best_path_reader(None)
    assert reader.records(data, 0, items * 256 // 2) == (1, 0, [])
    for limit in (-1, 2 * items * 256):
        stopped, consumed, records = reader.records(data, 0, limit)
        assert (stopped, consumed, len(records)) == (0, len(data), 1)
        assert records[0][2] == _reference(lat, {})
    at = len(b"utt0000 ") + 74  # the body after the key and the FST header
    assert reader.body(data, at, lat.num_states, 4, 0, 256) == (2,)
    assert reader.body(data, at, lat.num_states, 4, 0, -1)[:2] == (0, len(data) - at)
