"""The chain engine's threaded pieces and the columnar reader's uniform-line path: results equal the
single-threaded run and the exact (object) reader, whatever the thread count."""
from __future__ import annotations

import random

import numpy as np
import pytest
from _chain_scorer_helpers import random_chain_case
from test_chain_scorer import _general, _items_equal, _same, _write

from lattice_tools.io.transcripts.ctm import read_ctm
from lattice_tools.io.transcripts.stm import read_stm
from lattice_tools.scoring.ctm_columns import _find_sorted, read_ctm_columns
from lattice_tools.scoring.ctm_items import items_from_objects
from lattice_tools.scoring.sclite import score_files
from lattice_tools.scoring.segments import fold as fold_case
from lattice_tools.scoring.tuning import EngineTuning


def _uniform(ctm_lines, conf):
    """Keep only lines with 5 fields (no confidence) or 6 (with): the common machine-written file."""
    out = [line for line in ctm_lines if line.strip() and not line.startswith(";;")]
    if conf:                                                      # tag lines get a confidence too
        out = [line + " 1.0" if len(line.split()) == 5 else line for line in out]
    assert all(len(line.split()) == (6 if conf else 5) for line in out)
    return out


@pytest.mark.parametrize("seed", range(16))
def test_uniform_lines_read_equal_object_reader(seed, tmp_path):
    rng = random.Random(500 + seed)
    conf = seed % 2 == 1
    stm, ctm = random_chain_case(rng, n_files=rng.randint(1, 3), n_segs=rng.randint(1, 5), conf=conf)
    ctm = _uniform(ctm, conf)
    if seed % 4 == 2:                                             # a comment with five/six tokens
        ctm.insert(0, ";; c o m m" + (" e" if conf else ""))
    rp, hp = _write(str(tmp_path), stm, ctm)

    def fold(x):
        return fold_case(x, False, None)
    cols = read_ctm_columns(hp, fold)
    assert cols is not None
    _items_equal(cols, items_from_objects(read_ctm(hp), fold))


@pytest.mark.parametrize("seed", range(6))
def test_thread_count_does_not_change_scores(seed, tmp_path, monkeypatch):
    rng = random.Random(700 + seed)
    stm, ctm = random_chain_case(rng, n_files=3, n_segs=8, max_words=8, conf=seed % 2 == 0)
    rp, hp = _write(str(tmp_path), stm, ctm)
    tuning = EngineTuning(engine="chain",
                          min_thread_cells=16, max_cells=200,     # many small chunks
                          ctm_chunk_bytes=61,                     # many tokenization chunks
                          ctm_thread_min_lines=0)                 # columns parsed in threads
    results = []
    for threads in ("1", "2", "3"):
        monkeypatch.setenv("LATTICE_TOOLS_NUM_THREADS", threads)
        results.append(score_files(rp, hp, allow_missing=True, tuning=tuning))
    for r in results[1:]:
        _same(r, results[0])
    _same(results[0], _general(read_stm(rp), read_ctm(hp), allow_missing=True, ref_name=rp, hyp_name=hp))


def test_find_sorted_with_colliding_slots():
    rng = np.random.default_rng(1)
    uniq = np.unique(rng.integers(0, 1 << 63, 5000, dtype=np.int64).astype(np.uint64))
    keys = np.concatenate([uniq[rng.integers(0, len(uniq), 100_000)],
                           rng.integers(0, 1 << 63, 100, dtype=np.int64).astype(np.uint64),
                           np.array([0, (1 << 64) - 1], np.uint64)])
    want = np.searchsorted(uniq, keys)
    want = np.where(uniq[np.minimum(want, len(uniq) - 1)] == keys, want, -1)
    assert np.array_equal(_find_sorted(uniq, keys), want)
    assert (_find_sorted(uniq, keys) >= 0).sum() == 100_000     # the random extras are absent


def test_bad_thread_setting_is_a_clear_error(monkeypatch):
    from lattice_tools.core._threads import num_threads
    from lattice_tools.core.errors import LatticeToolsError

    monkeypatch.setenv("LATTICE_TOOLS_NUM_THREADS", "zero")
    with pytest.raises(LatticeToolsError, match="LATTICE_TOOLS_NUM_THREADS"):
        num_threads()
    monkeypatch.setenv("LATTICE_TOOLS_NUM_THREADS", "3")
    assert num_threads() == 3
