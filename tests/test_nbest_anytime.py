"""The anytime exact N-best search (``best_effort=True``): when a budget stops the search, the sequences it
lists are exact, the ones it calls proven are the top of the lattice in order, and its certified bound is at
least as low as the cost of every sequence it does not list -- all checked against brute-force enumeration
of every path of small random lattices.  The CLI: ``--best-effort`` turns the budget error (exit 2) into the
list with a ``;;`` line in the alt-CTM and a ``best_effort`` entry in the JSON (exit 0)."""
from __future__ import annotations

import gzip
import json
import math
import shutil
from pathlib import Path

import pytest
from _alt_helpers import brute_force_sequences, lattice_strategy
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from lattice_tools.alternatives._common import prepare
from lattice_tools.alternatives.nbest_lists import nbest_search, nbest_sequences
from lattice_tools.cli import main
from lattice_tools.core.errors import BudgetExceededError
from lattice_tools.io.transcripts.altctm import read_alternatives_ctm

DATA = Path(__file__).parent / "data"
TOL = 1e-9


def _check_certificate(lat, n, found, bf):
    results, cert = found.results, found.certificate
    ranked = sorted(bf.values())
    assert len(results) == cert.found <= (len(bf) if n is None else min(n, len(bf)))
    assert len({r.labels for r in results}) == len(results)
    costs = [r.cost for r in results]
    assert costs == sorted(costs)
    for r in results:  # every listed sequence is exact
        assert r.cost == pytest.approx(bf[r.labels], abs=TOL)
    # the proven ones are the top of the brute force, in order (up to exchanges among ties)
    assert 0 <= cert.proven <= len(results)
    for r, c in zip(results[:cert.proven], ranked, strict=False):
        assert r.cost == pytest.approx(c, abs=TOL)
    for r in results[:cert.proven]:
        assert r.cost <= cert.bound_cost + TOL
    for r in results[cert.proven:]:
        assert r.cost > cert.bound_cost
    # the certificate: no sequence outside the list costs less than the bound
    listed = {r.labels for r in results}
    for labels, c in bf.items():
        if labels not in listed:
            assert c >= cert.bound_cost - TOL, (labels, c, cert)
    if not cert.complete:
        assert cert.stopped_by in ("states", "pops", "time")
    if cert.stopped_by is not None:  # complete all the same when all N asked for are proven
        assert cert.complete == (n is not None and cert.proven >= n)
    if results and math.isfinite(cert.bound_cost):
        assert cert.gap_nats(results) == pytest.approx(results[-1].cost - cert.bound_cost)


@settings(max_examples=300, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=18), st.sampled_from([1, 2, 4, 8, None]),
       st.integers(1, 8), st.sampled_from([1, 2, 5, 40, 2_000_000]), st.sampled_from([None, None, 1e-9]))
def test_certificate_against_brute_force(lat, n, max_states, max_pops, time_limit):
    """Stopped by the region's size, the prefix pops or the clock (a limit of 1e-9 s stops the search when
    the clock is first read, after the first expansion), wherever that falls."""
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    try:
        found = nbest_search(lat, n, max_states=max_states, max_pops=max_pops, time_limit=time_limit,
                             best_effort=True)
    except BudgetExceededError as e:  # only when nothing was listed
        assert "none proven" in str(e) or "search nodes after 0" in str(e)
        return
    _check_certificate(lat, n, found, bf)
    if found.certificate.complete:  # then the exact list (up to exchanges among ties at the cut-off)
        exact = nbest_sequences(lat, n)[0]
        assert [r.cost for r in found.results] == pytest.approx([r.cost for r in exact], abs=TOL)


@settings(max_examples=100, deadline=None)
@given(lattice_strategy(max_states=8, max_arcs=18), st.sampled_from([1, 3, None]))
def test_without_budget_stop_the_list_is_complete_and_exact(lat, n):
    labels, cost, final = prepare(lat)
    bf = brute_force_sequences(lat, labels, cost, final)
    found = nbest_search(lat, n, best_effort=True)
    assert found.certificate.complete and found.certificate.stopped_by is None
    assert found.certificate.proven == found.certificate.found == (len(bf) if n is None else min(n, len(bf)))
    _check_certificate(lat, n, found, bf)


def test_budget_error_stays_without_best_effort():
    from _io_helpers import small_word_lattice

    lat = small_word_lattice()
    with pytest.raises(BudgetExceededError, match="determinized states"):
        nbest_search(lat, 5, max_states=1)
    with pytest.raises(ValueError, match="time_limit"):
        nbest_search(lat, 5, time_limit=0)


def _cards_lattice(tmp_path) -> str:
    """The vendored pocketsphinx SLF (tests/data/slf, see its PROVENANCE.md), decompressed."""
    out = tmp_path / "cards.slf"
    with gzip.open(DATA / "slf" / "pocketsphinx_cards_002.lat.gz", "rb") as f, open(out, "wb") as g:
        shutil.copyfileobj(f, g)
    return str(out)


def test_cli_best_effort(tmp_path):
    """A time limit too short for any search (the clock is read after the first expansion): exit 2 with one line
    without --best-effort; with it, exit 0, the list, a ';;' line and the JSON entry."""
    lat = _cards_lattice(tmp_path)
    ctm, js = str(tmp_path / "o.ctm"), str(tmp_path / "o.json")
    args = ["nbest", lat, "-n", "20", "-o", ctm, "--json", js, "--time-limit", "1e-9"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 2, r.output
    assert "time limit" in r.output and "Traceback" not in r.output
    assert not Path(ctm).exists()
    r = CliRunner().invoke(main, [*args, "--best-effort"])
    assert r.exit_code == 0, r.output
    stats = json.loads(Path(js).read_text())
    (entry,) = stats["best_effort"]
    assert entry["stopped_by"] == "time" and not entry["complete"]
    assert 1 <= entry["found"] <= 20 and 0 <= entry["proven"] <= entry["found"]
    text = Path(ctm).read_text()
    assert text.startswith(";; best-effort N-best of ")
    alts = read_alternatives_ctm(ctm)
    assert len(alts[0].slots[0].alternatives) == entry["found"]
    # the proven ones are the exact list's first ones
    full = str(tmp_path / "full.ctm")
    r = CliRunner().invoke(main, ["nbest", lat, "-n", "20", "-o", full, "--best-effort"])
    assert r.exit_code == 0
    assert not Path(full).read_text().startswith(";;")
    exact = read_alternatives_ctm(full)[0].slots[0].alternatives
    got = alts[0].slots[0].alternatives
    assert [a.words for a in got[:entry["proven"]]] == [a.words for a in exact[:entry["proven"]]]


def test_sclite_skips_the_comment(tmp_path):
    """sclite reads the best-effort alt-CTM as if the ';;' line were not there (the same counts)."""
    from _oracle_helpers import run_sclite
    from _recipe_helpers import sclite_binary

    sclite = sclite_binary()
    if sclite is None:
        pytest.skip("sclite (Debian sctk) is not installed")
    lat = _cards_lattice(tmp_path)
    ctm = tmp_path / "o.ctm"
    r = CliRunner().invoke(main, ["nbest", lat, "-n", "5", "-o", str(ctm), "--time-limit", "1e-9", "--best-effort"])
    assert r.exit_code == 0, r.output
    text = ctm.read_text()
    assert text.startswith(";;")
    bare = tmp_path / "bare.ctm"
    bare.write_text("".join(line for line in text.splitlines(keepends=True) if not line.startswith(";;")))
    stm = tmp_path / "ref.stm"
    stm.write_text(f"{read_alternatives_ctm(str(bare))[0].file} 1 spk 0.0 5.0 one two three\n")
    assert run_sclite(sclite, str(stm), str(ctm)) == run_sclite(sclite, str(stm), str(bare))


def test_memory_budget_stop_on_a_real_lattice(monkeypatch):
    """Under a memory budget a few tens of kilobytes above what the process holds, the search of a real
    pocketsphinx lattice (tests/data/slf) stops for memory; the list it returns is certified against the
    exact 100-best: its proven prefix is the exact list's, every listed cost is exact, and every sequence of
    the exact list it does not list costs at least the bound.  (The closed rows and bounds built before the
    search count their allocations exactly against the budget, and need more than these few tens of
    kilobytes: here they are let through, so that it is the search that meets the budget.)"""
    from lattice_tools.alternatives import nbest_lists
    from lattice_tools.core._budget import memory_budget, resident_bytes
    from lattice_tools.io.lattices.lattice_files import read_lattices

    (lat,) = read_lattices(str(DATA / "slf" / "pocketsphinx_cards_002.lat.gz"))
    exact = nbest_search(lat, 100).results
    by_labels = {r.labels: r.cost for r in exact}
    stops = 0
    monkeypatch.setattr(nbest_lists, "_max_bytes", lambda: -1)
    for extra in (48 << 10, 64 << 10, 96 << 10, 128 << 10):
        with memory_budget(resident_bytes() + extra):
            try:
                found = nbest_search(lat, 100, best_effort=True)
            except BudgetExceededError:  # the process grew past the budget before the search began
                continue
        cert = found.certificate
        if cert.stopped_by != "memory":
            continue
        stops += 1
        results = found.results
        assert [r.labels for r in results[:cert.proven]] == [r.labels for r in exact[:cert.proven]]
        for r in results:
            if r.labels in by_labels:
                assert r.cost == pytest.approx(by_labels[r.labels], abs=TOL)
            else:  # outside the exact 100-best: no better than its 100th
                assert r.cost >= exact[-1].cost - TOL
        listed = {r.labels for r in results}
        assert all(c >= cert.bound_cost - TOL for labels, c in by_labels.items() if labels not in listed)
    assert stops >= 1
