"""The hub types themselves: Lattice construction/validation, SymbolTable, ErrorCounts, Alternatives."""
import dataclasses
import math

import numpy as np
import pytest

from lattice_tools import Alternative, Alternatives, ErrorCounts, Lattice, Slot, SymbolTable
from lattice_tools.core.alternatives_network import DepthStatistics, depth_statistics
from lattice_tools.core.errors import FormatError, LatticeError, SymbolError
from lattice_tools.core.files import atomic_write, read_text_lines
from lattice_tools.core.lattice import connect, connect_with_maps

INF = math.inf
SYMS = SymbolTable.from_words(["a", "b", "c"])


def _small_args(**kw):
    args = dict(src=[2, 0, 0, 1], dst=[1, 2, 2, 3], word=[1, 2, 1, 3], symbols=SYMS,
                final_graph_cost=[INF, INF, INF, 0.5], t0=[5, 0, 0, 9], t1=[9, 5, 5, 12],
                graph_cost=[1, 2, 3, 4], acoustic_cost=[0.5, 0, 0, 1])
    args.update(kw)
    return args


def small(**kw):
    return Lattice.from_arcs(**_small_args(**kw))


def test_from_arcs_sorts_topologically_and_keeps_arc_data():
    lat, smap, amap = Lattice.from_arcs_with_maps(**_small_args())
    assert lat.equals(small())
    assert lat.num_states == 4 and lat.num_arcs == 4
    assert np.all(lat.src < lat.dst)
    assert list(smap) == [0, 2, 1, 3]
    # every output arc carries the data of the input arc it came from
    assert list(lat.graph_cost) == [[1, 2, 3, 4][i] for i in amap]
    assert lat.words(np.arange(4)) == [SYMS.word(w) for w in lat.word]
    assert lat.final_states.tolist() == [3]
    assert lat.duration == pytest.approx(0.12)


def test_arrays_are_read_only():
    lat = small()
    with pytest.raises(ValueError):
        lat.graph_cost[0] = 7.0


def test_cycle_and_bad_input_are_rejected():
    with pytest.raises(LatticeError, match="cycle"):
        Lattice.from_arcs(src=[0, 1, 2], dst=[1, 2, 1], word=[1, 1, 1], symbols=SYMS, final_graph_cost=[INF, INF, 0])
    with pytest.raises(LatticeError, match="non-finite"):
        small(graph_cost=[1, float("nan"), 3, 4])
    with pytest.raises(LatticeError, match="no final"):
        small(final_graph_cost=[INF] * 4)
    with pytest.raises(LatticeError, match="expected 4"):
        small(word=[1, 2, 3])


def test_from_arcs_drops_unreachable_states_and_dead_ends():
    lat = Lattice.from_arcs(src=[0, 0, 3], dst=[1, 2, 1], word=[1, 2, 3], symbols=SYMS,
                            final_graph_cost=[INF, 0, INF, INF])
    # state 3 is unreachable and the state reached by 'b' is a dead end: only 'a' is on a complete path
    assert lat.num_states == 2 and lat.num_arcs == 1 and lat.words() == ["a"]
    assert lat.trimmed_arcs == 2
    with pytest.raises(LatticeError, match="no complete path"):
        Lattice.from_arcs(src=[0], dst=[1], word=[1], symbols=SYMS, final_graph_cost=[INF, INF, 0])


def test_connect_trims_a_lattice_built_with_the_plain_constructor():
    inf = np.array([INF, 0.0, INF])
    lat = Lattice(num_states=3, src=np.array([0, 0]), dst=np.array([1, 2]), word=np.array([1, 2]),
                  ilabel=np.array([1, 2]), t0=np.array([0, 0]), t1=np.array([1, 1]), graph_cost=np.zeros(2),
                  acoustic_cost=np.zeros(2), final_graph_cost=inf, final_acoustic_cost=inf, symbols=SYMS)
    trimmed, state_map, arc_idx = connect_with_maps(lat)
    assert trimmed.equals(connect(lat))
    assert trimmed.num_arcs == 1 and trimmed.words() == ["a"] and trimmed.trimmed_arcs == 1
    assert state_map.tolist() == [0, 1, -1] and arc_idx.tolist() == [0]
    assert lat.num_arcs == 2                               # input untouched
    assert connect(trimmed) is trimmed


def test_arc_costs_scales_and_penalty():
    lat = small()
    c = lat.arc_costs(acoustic_scale=0.1, lm_scale=2.0, word_penalty=0.5)
    assert np.allclose(c, 2.0 * lat.graph_cost + 0.1 * lat.acoustic_cost + 0.5)


def test_symbol_table_roundtrip(tmp_path):
    p = tmp_path / "words.txt"
    SYMS.write(str(p))
    assert SymbolTable.read(str(p)) == SYMS
    assert SYMS.id("b") == 2 and SYMS.word(0) == "<eps>"
    with pytest.raises(SymbolError):
        SYMS.id("zzz")
    p.write_text("a 1\nb\n")
    with pytest.raises(FormatError, match=r"words.txt:2"):
        SymbolTable.read(str(p))


def test_error_counts_are_frozen_and_additive():
    a = ErrorCounts(correct=8, substitutions=1, deletions=1, insertions=2, ref_words=10)
    b = ErrorCounts(correct=5, substitutions=0, deletions=0, insertions=0, ref_words=5)
    total = sum([a, b])
    assert total == a + b == ErrorCounts.sum([a, b])
    assert total.wer == pytest.approx(4 / 15)
    assert a.precision == pytest.approx(8 / 11) and a.recall == pytest.approx(8 / 10)
    assert a.kaldi_line() == "%WER 40.00 [ 4 / 10, 2 ins, 1 del, 1 sub ]"
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.correct = 3


def test_error_counts_from_dict_round_trips_and_refuses_unknown_keys():
    a = ErrorCounts(correct=8, substitutions=1, deletions=1, insertions=2, ref_words=10, segments=3)
    assert ErrorCounts.from_dict(a.as_dict()) == a
    assert ErrorCounts.from_dict({"correct": 2, "ref_words": 2}) == ErrorCounts(correct=2, ref_words=2)
    with pytest.raises(ValueError, match="unknown key.*'errros'"):
        ErrorCounts.from_dict({"errros": 3})
    with pytest.raises(ValueError, match="errors=5 but the counts give 4"):
        ErrorCounts.from_dict({**a.as_dict(), "errors": 5})
    with pytest.raises(ValueError, match="whole number"):
        ErrorCounts(correct=2.5)
    assert ErrorCounts(correct=2.0).correct == 2


def test_alternatives_and_depth_statistics():
    slot1 = Slot(0.0, 1.0, (Alternative(("a", "b"), posterior=0.7), Alternative((), posterior=0.3)))
    slot2 = Slot(1.0, 2.0, (Alternative(("c",), starts=(1.2,), durations=(0.3,)),))
    alts = Alternatives("utt1", (slot1, slot2), kind="phrase")
    assert alts.one_best() == ["a", "b", "c"] and alts.depths == [2, 1]
    moved = alts.with_location("rec", "A", 10.0)
    assert moved.slots[1].alternatives[0].starts == (11.2,) and alts.slots[1].alternatives[0].starts == (1.2,)
    assert alts.truncated(1).depths == [1, 1]
    st = depth_statistics(list(range(1, 11)))
    assert st == DepthStatistics(blocks=10, n_max=10, n_90=9, n_50=5)
    assert list(st.to_dict().items()) == [("blocks", 10), ("N_max", 10), ("N_.9", 9), ("N_.5", 5)]
    assert depth_statistics([]).to_dict() == {"blocks": 0, "N_max": 0, "N_.9": 0, "N_.5": 0}
    assert depth_statistics([3]) == DepthStatistics(1, 3, 3, 3)


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    out = tmp_path / "x.txt"
    with pytest.raises(RuntimeError):
        with atomic_write(str(out)) as f:
            f.write("partial")
            raise RuntimeError("boom")
    assert not out.exists() and list(tmp_path.iterdir()) == []
    with atomic_write(str(tmp_path / "y.txt.gz")) as f:
        f.write("hello\n")
    assert list(read_text_lines(str(tmp_path / "y.txt.gz"))) == [(1, "hello")]


def test_truncated_gzip_names_file(tmp_path):
    import gzip
    p = tmp_path / "t.gz"
    p.write_bytes(gzip.compress(b"line one\nline two\n" * 100)[:40])
    with pytest.raises(FormatError, match="t.gz"):
        list(read_text_lines(str(p)))


def test_lattice_attrs_are_read_only_and_pickle():
    import pickle

    import numpy as np
    lat = Lattice.from_arcs(src=[0, 1], dst=[1, 2], word=[1, 2], symbols=SymbolTable.from_words(["a", "b"]),
                            final_graph_cost=[np.inf, np.inf, 0.0], attrs={"conf": [0.5, 0.25]})
    with pytest.raises(TypeError, match="read-only"):
        lat.attrs["conf"] = np.zeros(5)
    with pytest.raises(TypeError, match="read-only"):
        lat.attrs.update(other=np.zeros(5))
    with pytest.raises(ValueError):
        lat.attrs["conf"][0] = 1.0
    back = pickle.loads(pickle.dumps(lat))
    assert list(back.attrs["conf"]) == [0.5, 0.25]
    with pytest.raises(TypeError, match="read-only"):
        back.attrs["x"] = 1


@pytest.mark.parametrize("change,match", [
    (dict(attrs={"conf": [0.5]}), r"arc array 'conf' has 1 entries, expected 2"),
    (dict(word=[1]), r"arc array 'word' has 1 entries, expected 2"),
    (dict(graph_cost=[0.0, 1.0, 2.0]), r"arc array 'graph_cost' has 3 entries, expected 2"),
    (dict(final_graph_cost=[0.0], num_states=3), r"final_graph_cost has 1 entries, expected 3"),
    (dict(dst=[1, 3]), r"arc state id outside 0\.\.2"),
    (dict(start=3), r"start state 3 outside 0\.\.2"),
])
def test_from_arcs_checks_its_arguments_when_building(change, match):
    """Lengths, state ids and the start are checked when the lattice is built (attrs included): a wrong
    length never reaches an algorithm, and once built the arrays cannot change."""
    import numpy as np
    args = dict(src=[0, 1], dst=[1, 2], word=[1, 2], symbols=SymbolTable.from_words(["a", "b"]),
                final_graph_cost=[np.inf, np.inf, 0.0], attrs={"conf": [0.5, 0.25]}, key="utt")
    args.update(change)
    with pytest.raises(LatticeError, match=match):
        Lattice.from_arcs(**args)
    with pytest.raises(LatticeError, match=match):
        Lattice.from_arcs_with_maps(**args)


def test_the_plain_constructor_checks_attrs_lengths():
    import dataclasses

    import numpy as np
    lat = small(attrs={"conf": [0.1, 0.2, 0.3, 0.4]})
    with pytest.raises(LatticeError, match=r"arc attribute 'conf' has 3 entries, expected 4"):
        dataclasses.replace(lat, attrs={"conf": np.zeros(3)})
    with pytest.raises(LatticeError, match=r"arc attribute 'conf' has 5 entries, expected 4"):
        lat.replace(attrs={"conf": np.zeros(5)})


def _arrays():
    """The arrays of a 3-state, 3-arc lattice in the dtypes a Lattice stores (int32 ids and frames, float64 costs)."""
    return dict(num_states=3, src=np.array([0, 0, 1], np.int32), dst=np.array([1, 2, 2], np.int32),
                word=np.array([1, 2, 1], np.int32), ilabel=np.array([1, 2, 1], np.int32),
                t0=np.array([0, 0, 2], np.int32), t1=np.array([2, 4, 4], np.int32),
                graph_cost=np.array([0.5, 1.0, 0.25]), acoustic_cost=np.array([1.0, 2.0, 3.0]),
                final_graph_cost=np.array([INF, INF, 0.0]), final_acoustic_cost=np.zeros(3))


def test_constructor_adopts_and_freezes_the_callers_arrays_in_place():
    """As the docstring says: arrays of the stored dtype are kept (no copy) and made read-only in place, the
    caller's too; other dtypes are converted and the caller's stay writable; attrs are copied."""
    arrays = _arrays()
    conf = np.array([0.5, 0.25, 1.0])
    lat = Lattice(symbols=SYMS, attrs={"conf": conf}, **arrays)
    for name in ("src", "dst", "word", "ilabel", "t0", "t1", "graph_cost", "acoustic_cost", "final_graph_cost",
                 "final_acoustic_cost"):
        assert getattr(lat, name) is arrays[name] and not arrays[name].flags.writeable, name
    with pytest.raises(ValueError, match="read-only"):
        arrays["graph_cost"][0] = 7.0
    assert conf.flags.writeable and not np.shares_memory(conf, lat.attrs["conf"])
    conf[0] = 9.0
    assert lat.attrs["conf"][0] == 0.5
    wide = {**_arrays(), "src": np.array([0, 0, 1], np.int64), "graph_cost": [0.5, 1.0, 0.25]}
    lat = Lattice(symbols=SYMS, **wide)
    assert lat.src.dtype == np.int32 and wide["src"].flags.writeable and not np.shares_memory(lat.src, wide["src"])


def test_constructor_copies_a_writable_view():
    """A slice of a writable array is copied: writing through its base cannot change a validated lattice."""
    base = np.array([0, 0, 1, 9], np.int32)
    costs = np.array([0.5, 1.0, 0.25, 7.0])
    lat = Lattice(symbols=SYMS, **{**_arrays(), "src": base[:3], "graph_cost": costs[:3]})
    base[1] = 1  # would put two arcs out of source order
    costs[0] = np.nan
    assert lat.src.tolist() == [0, 0, 1] and lat.graph_cost.tolist() == [0.5, 1.0, 0.25]
    assert base.flags.writeable and costs.flags.writeable
    frozen = np.array([0, 0, 1], np.int32)
    frozen.setflags(write=False)
    assert Lattice(symbols=SYMS, **{**_arrays(), "src": frozen}).src is frozen  # read-only: nothing to protect


def test_attrs_are_checked_and_stay_valid_after_construction():
    with pytest.raises(LatticeError, match="'conf' is a scalar"):
        Lattice(symbols=SYMS, attrs={"conf": np.float64(1.0)}, **_arrays())
    with pytest.raises(LatticeError, match="'conf' has 2 entries, expected 3"):
        Lattice(symbols=SYMS, attrs={"conf": np.ones(2)}, **_arrays())
    lat = Lattice(symbols=SYMS, attrs={"conf": np.ones(3)}, **_arrays())
    for change in (lambda a: a.__setitem__("x", np.ones(5)), lambda a: a.update(x=np.ones(5)),
                   lambda a: a.pop("conf"), lambda a: a.setdefault("x", np.ones(5)), lambda a: a.clear()):
        with pytest.raises(TypeError, match="read-only"):
            change(lat.attrs)
    with pytest.raises(ValueError, match="read-only"):
        lat.attrs["conf"][0] = 2.0
    assert list(lat.attrs) == ["conf"] and lat.attrs["conf"].tolist() == [1.0, 1.0, 1.0]
    lat.validate()
    with pytest.raises(LatticeError, match="'conf' has 5 entries"):
        lat.replace(attrs={"conf": np.ones(5)})
