"""The k2 lattice loader/writer against real k2 output (tests/data/k2-fixtures) and malformed files.

Every fixture lattice is read with k2 blocked (and, for the zip engine, torch blocked too) and
compared with what k2 itself decoded (k2_decoded.json, bit for bit) and computed
(expected.json: total scores, arc posteriors, best paths).
"""
from __future__ import annotations

import gzip
import json
import pickle
import pickletools
import sys
import zipfile

import numpy as np
import pytest
from _algo_helpers import random_lattice

from lattice_tools.algorithms import arc_posteriors, best_path, lattice_depth, total_log_prob
from lattice_tools.core.errors import FormatError, SymbolError
from lattice_tools.core.symbols import SymbolTable
from lattice_tools.io.lattices.k2file import (
    Ragged,
    load_k2_dict,
    read_k2_lattices,
    read_k2_lattices_with_maps,
    write_k2_lattice,
)

LATTICE_FILES = ["hlg_lattice.pt", "ctc_lattice.pt", "word_lattice.pt"]
ENGINES = ["numpy", "torch"]


@pytest.fixture(scope="module")
def k2dir(test_data_dir):
    d = test_data_dir / "k2-fixtures"
    if not (d / "expected.json").exists():
        pytest.skip("k2-fixtures not available")
    return d


@pytest.fixture(scope="module")
def expected(k2dir):
    return json.loads((k2dir / "expected.json").read_text())["files"]


@pytest.fixture(scope="module")
def decoded(k2dir):
    return json.loads((k2dir / "k2_decoded.json").read_text())["files"]


@pytest.fixture
def no_k2(monkeypatch):
    monkeypatch.setitem(sys.modules, "k2", None)
    monkeypatch.setitem(sys.modules, "_k2", None)


@pytest.fixture(params=ENGINES)
def engine(request, monkeypatch, no_k2):
    if request.param == "numpy":
        # The zip engine must not need torch at all.
        monkeypatch.setitem(sys.modules, "torch", None)
    else:
        pytest.importorskip("torch")
    return request.param


def _symbols(k2dir, name):
    return k2dir / ("tokens.txt" if name == "ctc_lattice.pt" else "words.txt")


@pytest.mark.parametrize("name", LATTICE_FILES)
def test_raw_dict_equals_k2_decoding_bit_for_bit(k2dir, decoded, name, engine):
    ref = decoded[name]
    d = load_k2_dict(k2dir / name, engine=engine)
    arcs = d["arcs"]
    assert arcs.dtype == np.int32
    if arcs.ndim == 2:
        body = arcs
    else:
        n = int(arcs[0])
        assert arcs[2:3 + n].tolist() == ref["state_splits"]
        assert arcs[3 + n:4 + 2 * n].tolist() == ref["arc_splits"]
        body = arcs[4 + 2 * n:].reshape(-1, 4)
    assert body[:, 0].tolist() == ref["src"]
    assert body[:, 1].tolist() == ref["dst"]
    assert body[:, 2].tolist() == ref["label"]
    scores = body[:, 3].copy().view(np.float32).astype(np.float64)
    assert scores.tolist() == ref["score"]  # exact: float32 -> float64 is exact
    for key in set(ref) - {"src", "dst", "label", "score", "state_splits", "arc_splits"}:
        value = d[key]
        if isinstance(value, Ragged):
            assert value.tolist() == ref[key]
        else:
            assert value.astype(np.float64).tolist() == ref[key], key
    assert set(d) - {"arcs"} == set(ref) - {"src", "dst", "label", "score", "state_splits", "arc_splits"}


@pytest.mark.parametrize("name", LATTICE_FILES)
def test_hub_lattices_match_k2_arcs_and_values(k2dir, decoded, expected, name, engine):
    ref = decoded[name]
    exp = expected[name]
    mapped = read_k2_lattices_with_maps(k2dir / name, symbols=_symbols(k2dir, name), engine=engine)
    lats, maps = [m.lattice for m in mapped], [m.arc_map for m in mapped]
    assert len(lats) == len(exp["utterances"])
    ragged = isinstance(ref.get("aux_labels", [None])[0], list)
    chained = 0  # k2 arcs on complete paths that carry 2+ words
    for lat, arc_map, utt in zip(lats, maps, exp["utterances"], strict=False):
        off = utt["arc_offset"]
        n_arcs = utt["num_arcs"]
        # Every k2 arc on a complete path is represented (only arcs with 2+ words produce extra hub arcs);
        # the arcs trimmed away are exactly those k2's get_arc_post gives posterior 0 (dead ends that
        # intersect_dense_pruned leaves in hlg_lattice.pt)
        on_paths = np.flatnonzero(np.array(utt["arc_post"]) > 0).tolist()
        assert sorted(set(arc_map.tolist())) == on_paths
        assert (lat.trimmed_arcs > 0) == (len(on_paths) < n_arcs) == (name == "hlg_lattice.pt")
        g = arc_map + off
        scores = np.array(ref["score"])[g]
        lm = np.array(ref["lm_scores"])[g] if "lm_scores" in ref else np.zeros(len(g))
        carries = lat.ilabel != 0
        label = np.array(ref["label"])[g]
        # arcs mapped once are k2 arcs unchanged; chains (2+ words) are checked below
        counts = np.bincount(arc_map, minlength=n_arcs)
        assert name == "hlg_lattice.pt" or not np.any(counts > 1)
        chained += int(np.sum(counts > 1))
        single = counts[arc_map] == 1
        assert np.array_equal(lat.graph_cost[single] + lat.acoustic_cost[single], -scores[single])
        assert np.array_equal(lat.graph_cost[single], -lm[single])
        assert np.array_equal(lat.ilabel[single], np.maximum(label[single], 0))
        assert np.array_equal(carries, lat.ilabel > 0)
        # chains: pieces sum to the k2 score, words in order
        for k in np.nonzero(counts > 1)[0]:
            pieces = np.nonzero(arc_map == k)[0]
            total = lat.graph_cost[pieces] + lat.acoustic_cost[pieces]
            assert total.sum() == -ref["score"][off + k]
            chain_words, chain_arcs = [], []
            state = lat.src[pieces].min()
            for _ in pieces:
                p = pieces[lat.src[pieces] == state][0]
                chain_words.append(int(lat.word[p]))
                chain_arcs.append(p)
                state = lat.dst[p]
            assert chain_words == ref["aux_labels"][off + k]
            # the first piece carries the score and the label; all pieces share the frame
            first, rest = chain_arcs[0], chain_arcs[1:]
            assert lat.graph_cost[first] + lat.acoustic_cost[first] == -ref["score"][off + k]
            assert lat.ilabel[first] == max(ref["label"][off + k], 0)
            assert np.all(lat.graph_cost[rest] == 0) and np.all(lat.acoustic_cost[rest] == 0)
            assert np.all(lat.ilabel[rest] == 0)
            # the first piece spans the frame, the others no frame at its end (one frame per state)
            assert lat.t0[first] == ref["frame"][off + k] and lat.t1[first] == ref["frame"][off + k] + 1
            assert np.all(lat.t0[rest] == ref["frame"][off + k] + 1) and np.all(lat.t1[rest] == lat.t0[rest])
            assert np.all(lat.attrs["frame"][chain_arcs] == ref["frame"][off + k])
            assert np.all(lat.attrs["tokens"][rest] == 0)
        # words
        if "aux_labels" in ref:
            for a in np.nonzero(single)[0]:
                aux = ref["aux_labels"][g[a]]
                want = (aux[0] if aux else 0) if ragged else max(aux, 0)
                assert lat.word[a] == want
        else:
            assert np.array_equal(lat.word, np.maximum(label, 0))
        # times and attributes
        if "frame" in ref:
            assert np.array_equal(lat.t0[single], np.array(ref["frame"])[g][single])
            assert np.array_equal(lat.t1[single], lat.t0[single] + 1)
            assert not lat.word_aligned
        else:
            assert lat.word_aligned and not lat.has_times
        for key in set(ref) - {"src", "dst", "label", "score", "state_splits", "arc_splits", "aux_labels"}:
            assert np.array_equal(lat.attrs[key][single].astype(np.float64), np.array(ref[key])[g][single])

        # --- values computed by k2 ---
        assert total_log_prob(lat) == pytest.approx(utt["tot_score_log"], abs=1e-9)
        assert total_log_prob(lat, log_semiring=False) == pytest.approx(utt["tot_score_tropical"], abs=1e-9)
        post = arc_posteriors(lat)
        k2_post = np.zeros(n_arcs)
        k2_post[arc_map] = post  # chain pieces share their arc's posterior
        for k in np.nonzero(counts > 1)[0]:
            assert np.ptp(post[arc_map == k]) < 1e-12
        np.testing.assert_allclose(k2_post, utt["arc_post"], atol=1e-9, rtol=0)
        bp = best_path(lat)
        k2_ids = [int(k) for i, k in enumerate(arc_map[bp]) if i == 0 or arc_map[bp][i - 1] != k]
        want = utt["best_path"]
        assert k2_ids == want["arc_ids"]
        assert lat.words(bp) == want["symbols"]
        assert [int(w) for w in lat.word[bp] if w] == want["ids"]
        if want["start_frames"] is not None:
            frames = lat.attrs["frame"][bp]  # k2's frame of the arc carrying each word (t0 of a later piece is one more)
            assert [int(t) for t, w in zip(frames, lat.word[bp], strict=False) if w] == want["start_frames"]
        assert -lat.acoustic_cost[bp].sum() == pytest.approx(want["am_score"], abs=1e-5)
        assert -(lat.graph_cost[bp] + lat.acoustic_cost[bp]).sum() == pytest.approx(want["score"], abs=1e-9)
    assert (name == "hlg_lattice.pt") == (chained > 0)


def test_depth_of_frame_level_lattice_is_arcs_per_frame(k2dir):
    lat = read_k2_lattices(k2dir / "ctc_lattice.pt")[0]
    # 821 arcs, each one frame long, over frames 0..25 (the -1 arc sits on frame 25)
    assert lat.num_frames == 26
    assert lattice_depth(lat) == pytest.approx(821 / 26)


def test_default_symbols_and_keys(k2dir):
    lats = read_k2_lattices(k2dir / "hlg_lattice.pt", keys=["a", "b", "c"], frame_shift=0.03)
    assert [lat.key for lat in lats] == ["a", "b", "c"]
    assert lats[1].frame_shift == 0.03
    assert lats[0].symbols.word(11) == "11"
    assert read_k2_lattices(k2dir / "ctc_lattice.pt")[0].key == "0"


def _dict_globals(path):
    with zipfile.ZipFile(path) as zf:
        pkl = [n for n in zf.namelist() if n.endswith("data.pkl")][0]
        return {arg for op, arg, _ in pickletools.genops(zf.read(pkl)) if op.name == "GLOBAL"}


@pytest.mark.parametrize("name", LATTICE_FILES)
@pytest.mark.parametrize("aux_mode", ["tensor", "ragged"])
def test_write_read_round_trip(k2dir, tmp_path, name, aux_mode, no_k2):
    torch = pytest.importorskip("torch")
    lats = read_k2_lattices(k2dir / name, symbols=_symbols(k2dir, name))
    out = tmp_path / "rt.pt"
    write_k2_lattice(lats[0] if name == "word_lattice.pt" else lats, out, aux_labels=aux_mode)
    for engine in ENGINES:
        back = read_k2_lattices(out, symbols=_symbols(k2dir, name), engine=engine)
        assert len(back) == len(lats)
        for a, b in zip(lats, back, strict=False):
            if name == "hlg_lattice.pt":
                # a multi-word arc's later pieces span no frame (t0 = t1 = its frame + 1); written back they
                # are arcs of their own, which k2 times by their frame attribute: only their times change
                chained = (a.t0 == a.t1) & (a.ilabel == 0)
                assert np.array_equal(b.t0[chained], a.t0[chained] - 1)
                a = a.replace(t0=np.where(chained, b.t0, a.t0), t1=np.where(chained, b.t1, a.t1))
            assert a.equals(b) and a.word_aligned == b.word_aligned and a.key == b.key
            assert set(a.attrs) == set(b.attrs)
            for k in a.attrs:
                assert a.attrs[k].dtype == b.attrs[k].dtype and np.array_equal(a.attrs[k], b.attrs[k])
    # Same pickle globals as k2's own file (so k2.Fsa.from_dict(torch.load(...)) gets the same types).
    original = _dict_globals(k2dir / name)
    written = _dict_globals(out)
    if name == "hlg_lattice.pt" and aux_mode == "tensor":
        original.discard("_k2.ragged RaggedTensor")
    if name == "ctc_lattice.pt" and aux_mode == "ragged":
        written.discard("_k2.ragged RaggedTensor")
    assert written == original
    # A single Fsa keeps the 2-D layout, an FsaVec the 1-D one.
    d = load_k2_dict(out)
    assert d["arcs"].ndim == (2 if name == "word_lattice.pt" else 1)
    # torch.load without the stand-in refuses the ragged class (weights_only), with it it loads
    if aux_mode == "ragged" and "aux_labels" in d:
        with pytest.raises(Exception):  # noqa: B017  (torch's unpickler error type differs across versions)
            torch.load(out, weights_only=True)


def test_write_is_k2_identical_without_multiword_arcs(k2dir, tmp_path):
    """For files without 2-word arcs the written arcs are k2's arcs, reordered by (src, dst)."""
    pytest.importorskip("torch")
    for name in ("ctc_lattice.pt", "word_lattice.pt"):
        lats = read_k2_lattices(k2dir / name)
        out = tmp_path / name
        write_k2_lattice(lats[0] if name == "word_lattice.pt" else lats, out)
        a, b = load_k2_dict(k2dir / name), load_k2_dict(out)
        rows_a = a["arcs"].reshape(-1) if a["arcs"].ndim == 2 else a["arcs"]
        rows_b = b["arcs"].reshape(-1) if b["arcs"].ndim == 2 else b["arcs"]
        head = 0 if a["arcs"].ndim == 2 else 2 + 2 * (int(rows_a[0]) + 1)
        assert np.array_equal(rows_a[:head], rows_b[:head])
        ra, rb = rows_a[head:].reshape(-1, 4), rows_b[head:].reshape(-1, 4)
        ka = np.lexsort(ra.T[::-1])
        kb = np.lexsort(rb.T[::-1])
        assert np.array_equal(ra[ka], rb[kb])
        for key in set(a) - {"arcs"}:
            assert np.array_equal(a[key][ka], b[key][kb]), key


def test_write_generic_lattice_adds_super_final_state(tmp_path):
    pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    lats = [random_lattice(rng, 12, 30, final_prob=0.4, key=f"u{i}") for i in range(3)]
    out = tmp_path / "generic.pt"
    write_k2_lattice(lats, out)
    back = read_k2_lattices(out, symbols=lats[0].symbols, keys=[lat.key for lat in lats])
    for a, b in zip(lats, back, strict=False):
        assert b.num_states == a.num_states + 1
        # float32 storage: totals agree to float32 precision
        assert total_log_prob(b) == pytest.approx(total_log_prob(a), rel=1e-5, abs=1e-4)
        assert total_log_prob(b, log_semiring=False) == pytest.approx(total_log_prob(a, log_semiring=False),
                                                                      rel=1e-5, abs=1e-4)
        assert b.words(best_path(b)) == a.words(best_path(a))


def test_gzip_compressed_file(k2dir, tmp_path):
    gz = tmp_path / "ctc.pt.gz"
    gz.write_bytes(gzip.compress((k2dir / "ctc_lattice.pt").read_bytes()))
    a = read_k2_lattices(gz)[0]
    b = read_k2_lattices(k2dir / "ctc_lattice.pt")[0]
    assert a.equals(b)


# ---------------------------------------------------------------------------------------------
# malformed input

def test_truncated_file(k2dir, tmp_path, no_k2):
    data = (k2dir / "hlg_lattice.pt").read_bytes()
    for cut in (10, 200, len(data) // 2, len(data) - 30):
        p = tmp_path / f"cut{cut}.pt"
        p.write_bytes(data[:cut])
        with pytest.raises(FormatError, match=str(p)):
            read_k2_lattices(p)
        if "torch" in sys.modules and sys.modules["torch"] is not None:
            with pytest.raises(FormatError, match=str(p)):
                load_k2_dict(p, engine="torch")


def test_not_a_zip_and_missing_file(tmp_path):
    p = tmp_path / "junk.pt"
    p.write_bytes(b"hello world")
    with pytest.raises(FormatError, match="not a torch.save zip"):
        load_k2_dict(p)
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(pickle.dumps({"arcs": 1}, protocol=2))
    with pytest.raises(FormatError, match="legacy"):
        load_k2_dict(legacy)
    with pytest.raises(FormatError, match="cannot"):
        load_k2_dict(tmp_path / "missing.pt")


def _zip_with_pickle(path, payload: bytes, extra=None):
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("archive/data.pkl", payload)
        zf.writestr("archive/byteorder", "little")
        for name, data in (extra or {}).items():
            zf.writestr(name, data)


def test_disallowed_global_is_refused_not_executed(tmp_path):
    marker = tmp_path / "pwned"
    payload = (b"\x80\x02cos\nsystem\nq\x00X" + len(f"touch {marker}").to_bytes(4, "little")
               + f"touch {marker}".encode() + b"\x85R.")
    p = tmp_path / "evil.pt"
    _zip_with_pickle(p, payload)
    with pytest.raises(FormatError, match="refusing to load 'os.system'"):
        load_k2_dict(p)
    assert not marker.exists()


def test_wrong_content(tmp_path):
    torch = pytest.importorskip("torch")
    cases = {
        "list.pt": ([1, 2], "expected a dict"),
        "noarcs.pt": ({"lm_scores": torch.zeros(3)}, "no 'arcs'"),
        "threecols.pt": ({"arcs": torch.zeros(4, 3, dtype=torch.int32)}, r"expected \[num_arcs, 4\]"),
        "float_arcs.pt": ({"arcs": torch.zeros(4, 4)}, "expected int32"),
        "bad_vec.pt": ({"arcs": torch.tensor([2, 0, 0, 3, 5, 0, 1, 2], dtype=torch.int32)}, "inconsistent splits"),
        "bad_attr.pt": ({"arcs": torch.tensor([[0, 1, -1, 0]], dtype=torch.int32), "frame": torch.zeros(5, dtype=torch.int32)},
                        "'frame' has shape"),
        "string.pt": ({"arcs": torch.tensor([[0, 1, -1, 0]], dtype=torch.int32), "note": "hi"}, "only tensors"),
        "state_range.pt": ({"arcs": torch.tensor([1, 0, 0, 2, 0, 1, 0, 5, -1, 0], dtype=torch.int32)},
                           "state id outside"),
        "empty_fsa.pt": ({"arcs": torch.tensor([1, 0, 0, 0, 0, 0], dtype=torch.int32)}, "FSA is empty"),
    }
    for fname, (obj, message) in cases.items():
        p = tmp_path / fname
        torch.save(obj, p)
        with pytest.raises(FormatError, match=message) as info:
            read_k2_lattices(p)
        assert str(p) in str(info.value)


def test_missing_storage_record(k2dir, tmp_path):
    src = zipfile.ZipFile(k2dir / "ctc_lattice.pt")
    p = tmp_path / "nostorage.pt"
    with zipfile.ZipFile(p, "w") as zf:
        for item in src.namelist():
            if not item.endswith("data/1"):
                zf.writestr(item, src.read(item))
    with pytest.raises(FormatError, match="storage record 'ctc_lattice/data/1' is missing"):
        load_k2_dict(p)


def test_cyclic_decoding_graph_is_not_a_lattice(k2dir):
    d = load_k2_dict(k2dir / "HLG.pt")  # raw loading works (ragged aux_labels, tokens)
    assert d["arcs"].shape == (772, 4) and isinstance(d["aux_labels"], Ragged)
    with pytest.raises(FormatError, match="cycle"):
        read_k2_lattices(k2dir / "HLG.pt")


def test_symbol_and_key_errors(k2dir):
    small = SymbolTable.from_words(["SEE"])
    with pytest.raises(SymbolError, match=r"word id \d+ .*not in the symbol table"):
        read_k2_lattices(k2dir / "hlg_lattice.pt", symbols=small)
    with pytest.raises(FormatError, match="2 keys given for 3 FSAs"):
        read_k2_lattices(k2dir / "hlg_lattice.pt", keys=["a", "b"])


def test_write_rejects_mixed_attributes(tmp_path, k2dir):
    pytest.importorskip("torch")
    a = read_k2_lattices(k2dir / "ctc_lattice.pt")[0]
    b = a.replace(attrs={})
    from lattice_tools.core.errors import LatticeError

    with pytest.raises(LatticeError, match="same attributes"):
        write_k2_lattice([a, b], tmp_path / "x.pt")
    assert not (tmp_path / "x.pt").exists()


def test_zip_reader_handles_views_dtypes_and_shared_storage(tmp_path):
    """Tensors saved as views (offset, strides) of a shared storage, and every numeric dtype,
    come out of the torch-free reader exactly as torch.load gives them."""
    torch = pytest.importorskip("torch")
    base = torch.arange(40, dtype=torch.float64).reshape(8, 5)
    obj = {
        "arcs": torch.tensor([[0, 1, 3, 0], [1, 2, -1, 0]], dtype=torch.int32),
        "offset_view": base[2:6, 1],          # storage offset 11, stride 5
        "transposed": base.t()[1:3],          # non-contiguous 2-D
        "same_storage": base[7],
        "f16": torch.tensor([1.5, -2.25], dtype=torch.float16),
        "bf16": torch.tensor([1.5, -2.25, 3e38], dtype=torch.bfloat16),
        "i64": torch.tensor([2**40, -3]), "i16": torch.tensor([7, -7], dtype=torch.int16),
        "i8": torch.tensor([-1, 1], dtype=torch.int8), "u8": torch.tensor([255, 0], dtype=torch.uint8),
        "flag": torch.tensor([True, False]),
    }
    p = tmp_path / "views.pt"
    torch.save(obj, p)
    ours = load_k2_dict(p)
    ref = torch.load(p, weights_only=True)
    for k, v in ref.items():
        want = v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy()
        assert ours[k].shape == want.shape and ours[k].dtype == want.dtype, k
        assert np.array_equal(ours[k], want), k


def test_non_topological_k2_numbering_is_renumbered(tmp_path):
    torch = pytest.importorskip("torch")
    scores = np.array([-1.0, -2.0, -0.5, -4.0], dtype=np.float32)
    # 0 -> 2 -> 1 -> 3(final) plus 0 -> 1; acyclic but arc 2->1 goes "backwards"
    rows = np.array([[0, 2, 5, 0], [0, 1, 6, 0], [1, 3, -1, 0], [2, 1, 7, 0]], dtype=np.int32)
    rows[:, 3] = scores.view(np.int32)
    p = tmp_path / "nontop.pt"
    torch.save({"arcs": torch.from_numpy(rows)}, p)
    ((lat, arc_map),) = read_k2_lattices_with_maps(p)
    assert np.all(lat.src < lat.dst)
    assert sorted(arc_map.tolist()) == [0, 1, 2, 3]
    assert np.array_equal(-(lat.graph_cost + lat.acoustic_cost), scores[arc_map].astype(np.float64))
    # paths: 0-2-1-3 (-1 -4 -0.5) and 0-1-3 (-2 -0.5)
    assert total_log_prob(lat) == pytest.approx(np.logaddexp(-5.5, -2.5), abs=1e-12)
    assert arc_map[best_path(lat)].tolist() == [1, 2]


def test_mbr_decode_and_sausage_on_a_pruned_k2_lattice_give_k2s_words(k2dir, expected):
    """hlg_lattice.pt comes from k2's intersect_dense_pruned, which leaves dead-end arcs: read and trimmed,
    the MBR words and the sausage's most probable words are k2's best path, the words spoken (a dead-end
    word used to take a whole bin with posterior 1: "SEE THE RED AN", "A", "THE EAT")."""
    from lattice_tools.alternatives.sausages import mbr_decode, sausage

    lats = read_k2_lattices(k2dir / "hlg_lattice.pt", symbols=k2dir / "words.txt")
    for lat, utt in zip(lats, expected["hlg_lattice.pt"]["utterances"], strict=True):
        want = utt["best_path"]["symbols"]
        assert want == utt["spoken_words"].split()
        assert lat.trimmed_arcs > 0
        assert [lat.symbols.word(w) for w in mbr_decode(lat).words] == want
        cn = sausage(lat)
        top = [slot.alternatives[0].words for slot in cn.slots]
        assert [w for words in top for w in words] == want
        for slot in cn.slots:  # every bin's posteriors sum to 1 (a dead end does not)
            assert sum(a.posterior for a in slot.alternatives) == pytest.approx(1.0, abs=1e-5)


def test_a_pruned_k2_lattice_with_multi_word_arcs_converts_to_kaldi_and_slf(k2dir, expected, tmp_path):
    """hlg_lattice.pt has arcs carrying 2 words: the later words span no frame at the arc's end, so every
    state has one frame and `convert --to kaldi` writes an archive Kaldi accepts (it used to refuse: 'arc
    starts at frame 15 but its source state is at frame 16').  Read back, the Kaldi and SLF lattices keep
    k2's total probability and best path; Kaldi's lattice-mbr-decode on the archive gives the spoken words
    and the tables lattice-tools' mbr-decode writes for the same archive."""
    import subprocess

    from _kaldi_helpers import kaldi_bin, kaldi_env
    from click.testing import CliRunner

    from lattice_tools.cli import main
    from lattice_tools.io import read_lattices
    from lattice_tools.pipelines import latbin

    pt, words = str(k2dir / "hlg_lattice.pt"), str(k2dir / "words.txt")
    ark, slf = tmp_path / "h.ark", tmp_path / "slf"
    for out in (f"ark,t:{ark}", str(slf)):
        extra = ["--out-format", "slf"] if out == str(slf) else []
        result = CliRunner().invoke(main, ["convert", pt, "--words", words, "-o", out, *extra])
        assert result.exit_code == 0, result.output
    utts = expected["hlg_lattice.pt"]["utterances"]
    from_ark = list(read_lattices(f"ark:{ark}", symbols=SymbolTable.read(words)))
    from_slf = [next(iter(read_lattices(str(slf / f"{u['index']}.lat")))) for u in utts]
    for lats in (from_ark, from_slf):
        assert [lat.key for lat in lats] == [str(u["index"]) for u in utts]
        for lat, utt in zip(lats, utts, strict=True):
            assert total_log_prob(lat) == pytest.approx(utt["tot_score_log"], abs=1e-4)
            assert lat.words(best_path(lat)) == utt["best_path"]["symbols"]
    decode = kaldi_bin("lattice-mbr-decode")
    if decode is None:
        pytest.skip("Kaldi's lattice-mbr-decode not on PATH or in $LATTICE_TOOLS_KALDI_BIN")
    names = ("tra", "risk", "saus", "times")
    subprocess.run([decode, f"ark:{ark}", *(f"ark,t:{tmp_path / ('kaldi.' + n)}" for n in names)], check=True,
                   env=kaldi_env(), capture_output=True)
    latbin.mbr_decode(f"ark:{ark}", **{k: str(tmp_path / f"ours.{n}") for k, n in
                                       zip(("tra", "bayes_risk", "sausage_stats", "times"), names, strict=True)})
    for n in names:
        assert (tmp_path / f"ours.{n}").read_text() == (tmp_path / f"kaldi.{n}").read_text(), n
    table = SymbolTable.read(words)
    spoken = [line.split()[1:] for line in (tmp_path / "kaldi.tra").read_text().splitlines()]
    assert [[table.word(int(w)) for w in ids] for ids in spoken] == [u["spoken_words"].split() for u in utts]


def test_convert_names_a_pt_files_lattices_with_keys(k2dir, tmp_path):
    """--keys FILE names the lattices of a .pt (numbered 0, 1, ... by position) in input order, e.g. with
    icefall cut ids; a count that does not match, a blank or spaced key, or a key given twice is one error
    line naming the file (and the line), exit 2, and nothing is written."""
    from click.testing import CliRunner

    from lattice_tools.cli import main
    from lattice_tools.io import read_lattices

    pt, words = str(k2dir / "hlg_lattice.pt"), str(k2dir / "words.txt")
    keys, out = tmp_path / "cuts.txt", tmp_path / "out.ark"
    cuts = ["1089-134686-0000-0", "1089-134686-0001-1", "1089-134686-0002-2"]
    keys.write_text("\n".join(cuts) + "\n")
    result = CliRunner().invoke(main, ["convert", pt, "--words", words, "--keys", str(keys), "-o", f"ark,t:{out}"])
    assert result.exit_code == 0, result.output
    got = list(read_lattices(f"ark:{out}", symbols=SymbolTable.read(words)))
    plain = read_k2_lattices(pt, symbols=words)
    assert [lat.key for lat in got] == cuts
    assert [lat.words(best_path(lat)) for lat in got] == [lat.words(best_path(lat)) for lat in plain]
    out.unlink()
    for text, message, line in [
            ("\n".join(cuts[:2]) + "\n", "has 2 keys but the inputs hold more lattices", None),
            ("\n".join([*cuts, "extra"]) + "\n", "has 4 keys but the inputs hold 3 lattices", None),
            (f"{cuts[0]}\n\n{cuts[2]}\n", "one key per line", 2),
            (f"{cuts[0]}\nspeaker 1\n{cuts[2]}\n", "one key per line", 2),
            (f"{cuts[0]}\n{cuts[1]}\n{cuts[0]}\n", "given twice (lines 1 and 3)", 3)]:
        keys.write_text(text)
        result = CliRunner().invoke(main, ["convert", pt, "--words", words, "--keys", str(keys), "-o", f"ark,t:{out}"])
        assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output
        assert str(keys) + (f":{line}" if line else "") in result.output
        assert sorted(p.name for p in tmp_path.iterdir()) == ["cuts.txt"]  # no output, no temporary


def test_info_counts_the_trimmed_arcs(k2dir, expected):
    """`lattice-tools info` shows how many arcs of each lattice lay on no complete path: at least the k2 arcs
    k2 gives posterior 0 (more where such an arc carried 2+ words), and none for lattices without dead ends."""
    from lattice_tools.algorithms.statistics import lattice_info

    for name in ("hlg_lattice.pt", "word_lattice.pt"):
        info = lattice_info([str(k2dir / name)], words=str(k2dir / "words.txt"), progress=False)
        dead = [sum(p == 0 for p in utt["arc_post"]) for utt in expected[name]["utterances"]]
        rows = info["lattices"]
        assert [r["trimmed_arcs"] >= d for r, d in zip(rows, dead, strict=True)] == [True] * len(rows)
        assert [r["trimmed_arcs"] > 0 for r in rows] == [d > 0 for d in dead]
        assert info["total"]["trimmed_arcs"] == sum(r["trimmed_arcs"] for r in rows)
    assert dead == [0]  # (word_lattice.pt: nothing to trim)


def test_a_kaldi_archive_converts_to_k2_and_back_by_its_keys(tmp_path):
    """Lattices read from a Kaldi archive carry the pool of their transition-id strings (Python objects, no
    tensor form): converting them to a k2 file writes their words, times, costs and keys, and read back they
    have the archive's keys, best paths and total probabilities; --keys still renames them."""
    pytest.importorskip("torch")
    from pathlib import Path

    from click.testing import CliRunner

    from lattice_tools.cli import main
    from lattice_tools.io.lattices.inputs import read_lattice_inputs

    archive = str(Path(__file__).resolve().parent / "data" / "kaldi" / "lats" / "bundled.ark.gz")
    lats = list(read_lattice_inputs([archive]))
    assert any(lat.attrs["tid_pool"].dtype == object for lat in lats)
    r = CliRunner().invoke(main, ["convert", archive, "-o", str(tmp_path / "lats.pt")])
    assert r.exit_code == 0, r.output
    back = list(read_lattice_inputs([str(tmp_path / "lats.pt")], frame_shift=0.01, frame_subsampling_factor=1))
    assert [lat.key for lat in back] == [lat.key for lat in lats]
    for a, b in zip(lats, back, strict=True):
        assert [a.symbols.word(int(a.word[i])) for i in best_path(a) if a.word[i] != 0] == \
            [b.symbols.word(int(b.word[i])) for i in best_path(b) if b.word[i] != 0]
        assert total_log_prob(b) == pytest.approx(total_log_prob(a), abs=1e-4)
    keys = tmp_path / "keys.txt"
    keys.write_text("".join(f"new-{lat.key}\n" for lat in lats))
    renamed = list(read_lattice_inputs([str(tmp_path / "lats.pt")], keys=str(keys)))
    assert [lat.key for lat in renamed] == [f"new-{lat.key}" for lat in lats]


def test_oracle_of_a_converted_k2_file_equals_the_archives(tmp_path):
    """`convert x.ark -o x.pt` then `oracle x.pt` scores every utterance by its key, as `oracle x.ark` does."""
    pytest.importorskip("torch")
    from pathlib import Path

    from click.testing import CliRunner

    from lattice_tools.cli import main

    lats_dir = Path(__file__).resolve().parent / "data" / "kaldi" / "lats"
    archive = str(lats_dir / "bundled.ark.gz")
    ref = str(lats_dir / "bundled.ref.txt")
    pt = str(tmp_path / "lats.pt")
    assert CliRunner().invoke(main, ["convert", archive, "-o", pt]).exit_code == 0
    reports = []
    for spec in (archive, pt):
        out = tmp_path / f"{len(reports)}.json"
        r = CliRunner().invoke(main, ["oracle", spec, "-r", ref, "--ref-format", "text", "--json", str(out)])
        assert r.exit_code == 0, r.output
        report = json.loads(out.read_text())
        assert report.pop("input") == spec
        reports.append(report)
    assert reports[0] == reports[1]


def test_keys_are_written_and_read_back(tmp_path, no_k2):
    """write_k2_lattice stores the keys (``keys`` + per-arc ``key_index``) and every reader gives them back; a
    key given to the reader wins; lattices without keys are written without them and numbered 0, 1, ..."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(3)
    lats = [random_lattice(rng, 6, 12, key=f"utt-{i}") for i in range(3)]
    out = tmp_path / "keyed.pt"
    write_k2_lattice(lats, out)
    for engine in ENGINES:
        back = read_k2_lattices(out, symbols=lats[0].symbols, engine=engine)
        assert [lat.key for lat in back] == ["utt-0", "utt-1", "utt-2"]
        assert all("key_index" not in lat.attrs and "keys" not in lat.attrs for lat in back)
    d = torch.load(out, weights_only=True)  # a list of str and an int tensor: what k2 users load
    assert d["keys"] == ["utt-0", "utt-1", "utt-2"] and d["key_index"].dtype == torch.int32
    assert [lat.key for lat in read_k2_lattices(out, keys=["a", "b", "c"])] == ["a", "b", "c"]
    write_k2_lattice(lats[1], tmp_path / "one.pt")
    assert read_k2_lattices(tmp_path / "one.pt")[0].key == "utt-1"
    write_k2_lattice([lat.with_key("") for lat in lats], tmp_path / "unnamed.pt")
    assert "keys" not in load_k2_dict(tmp_path / "unnamed.pt")
    assert [lat.key for lat in read_k2_lattices(tmp_path / "unnamed.pt")] == ["0", "1", "2"]
    from lattice_tools.core.errors import MismatchError

    with pytest.raises(MismatchError, match="'utt-0' is given twice"):
        write_k2_lattice([lats[0], lats[0]], tmp_path / "twice.pt")
    assert not (tmp_path / "twice.pt").exists()


def test_bad_keys_entries_are_refused(tmp_path, no_k2):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(4)
    out = tmp_path / "keyed.pt"
    write_k2_lattice([random_lattice(rng, 5, 10, key=f"u{i}") for i in range(2)], out)
    good = torch.load(out, weights_only=True)

    def variant(**changes):
        d = dict(good)
        for name, value in changes.items():
            if value is None:
                del d[name]
            else:
                d[name] = value
        p = tmp_path / f"bad{len(list(tmp_path.iterdir()))}.pt"
        torch.save(d, p)
        return p

    index = good["key_index"]
    cases = [
        (variant(key_index=None), "has a 'keys' entry but no 'key_index'"),
        (variant(key_index=index[:-1]), "one entry per arc"),
        (variant(key_index=torch.where(torch.arange(len(index)) == 0, 1, index)), "do not name one key"),
        (variant(key_index=index + 5), "outside the 2 keys"),
        (variant(key_index=torch.zeros_like(index)), "have the same key 'u0'"),
        (variant(keys=["u 0", "u1"]), "empty or contains whitespace"),
    ]
    for path, message in cases:
        with pytest.raises(FormatError, match=message):
            read_k2_lattices(path)
        # keys given for every FSA replace the file's
        assert [lat.key for lat in read_k2_lattices(path, keys=["x", "y"])] == ["x", "y"]
    with pytest.raises(FormatError, match="expected a list of str"):
        read_k2_lattices(variant(keys=[1, 2]), keys=["x", "y"])
    # a key_index alone (the keys deleted, as k2 users do to join FSAs of several files) names nothing
    unnamed = read_k2_lattices(variant(keys=None))
    assert [lat.key for lat in unnamed] == ["0", "1"] and all("key_index" not in lat.attrs for lat in unnamed)
