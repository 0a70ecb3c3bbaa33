"""Oracle paths and entity containment over alternatives, against brute-force path enumeration."""
# The imports after require_metrics_extras() need the metrics extras: the module is skipped first without them.
# ruff: noqa: E402
from _metrics_helpers import require_metrics_extras

require_metrics_extras()

import random

from _metrics_helpers import all_paths, brute_edit_distance, random_network

from lattice_tools.core.alternatives_network import Alternative, Alternatives, Slot
from lattice_tools.metrics.alternatives import alternative_coverage, network_contains, oracle_path


def test_oracle_equals_brute_force():
    rng = random.Random(5)
    for _ in range(300):
        net = random_network(rng)
        ref = [rng.choice("abcd") for _ in range(rng.randint(0, 6))]
        for k in (1, 2, None):
            best = min(brute_edit_distance(ref, p) for p in all_paths(net, k))
            errors, words, picked = oracle_path(ref, net, k)
            assert errors == best == brute_edit_distance(ref, words)
            assert len(picked) == len(net.slots)


def test_network_contains_equals_brute_force():
    rng = random.Random(6)
    for _ in range(300):
        net = random_network(rng)
        ent = [rng.choice("abcd") for _ in range(rng.randint(1, 3))]
        for k in (1, None):
            expect = any(any(p[i:i + len(ent)] == ent for i in range(len(p) - len(ent) + 1))
                         for p in all_paths(net, k))
            assert network_contains(net, ent, k) is expect


def _sausage(*slots):
    return Alternatives("u", [Slot(float(i), float(i + 1), [Alternative(tuple(w.split())) for w in s])
                              for i, s in enumerate(slots)], kind="sausage")


def test_alternative_coverage_rows():
    ref = "new york is big".split()
    net = _sausage(["knew", "new"], ["work", "yolk", "york"], ["is"], ["pig", "big"])
    rows = alternative_coverage("sausage", {"u": ref}, {"u": net}, ks=(1, 2, 3, None),
                                entities={"u": [["new", "york"]]})
    by_k = {r.k: r for r in rows}
    assert by_k[1].errors_1best == 3 and by_k[1].errors_oracle == 3 and by_k[1].error_recovery == 0.0
    assert by_k[2].errors_oracle == 1 and by_k[2].error_recovery == 2 / 3     # new, big recovered
    assert by_k[3].errors_oracle == 0 and by_k[None].error_recovery == 1.0
    assert by_k[2].entities_missed_1best == 1 and by_k[2].entities_recovered == 0
    assert by_k[3].entities_recovered == 1 and by_k[3].entity_recovery == 1.0


def test_spaceless_containment_spans_words():
    net = _sausage(["北", "南"], ["京大", "经大"], ["学"])
    assert network_contains(net, list("北京大学"), None, spaceless=True)
    assert network_contains(net, list("北京大学"), 1, spaceless=True)
    assert not network_contains(_sausage(["南", "北"], ["京大"], ["学"]), list("北京大学"), 1, spaceless=True)
    assert network_contains(_sausage(["南", "北"], ["京大"], ["学"]), list("北京大学"), 2, spaceless=True)
    assert not network_contains(_sausage(["南"], ["京大"], ["学"]), list("北京大学"), None, spaceless=True)


def test_oracle_properties_hypothesis():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    words = st.sampled_from("abc")
    alt = st.lists(words, max_size=3).map(lambda ws: Alternative(tuple(ws)))
    slot = st.lists(alt, min_size=1, max_size=3)
    nets = st.lists(slot, min_size=1, max_size=4).map(
        lambda ss: Alternatives("u", [Slot(float(i), float(i + 1), s) for i, s in enumerate(ss)]))

    @settings(max_examples=150, deadline=None)
    @given(nets, st.lists(words, max_size=6))
    def check(net, ref):
        errs = [oracle_path(ref, net, k)[0] for k in (1, 2, 3)]
        # deeper alternatives never hurt; depth 1 is the 1-best
        assert errs[0] >= errs[1] >= errs[2]
        assert errs[0] == brute_edit_distance(ref, net.one_best())
        assert oracle_path(ref, net, None)[0] == errs[2]          # max depth here is 3

    check()


def test_oracle_path_is_the_oracle_engine_in_levenshtein_mode():
    """Differential: the metrics' oracle path, the dispatcher (batched engine or network DP), the network
    DP alone and brute force agree on the error count; the chosen alternatives spell the oracle words."""
    from lattice_tools.oracle import alternatives_oracle
    from lattice_tools.oracle.api import network_alternatives_oracle

    rng = random.Random(11)
    for _ in range(300):
        net = random_network(rng, vocab="abcD")
        ref = [rng.choice("abcD") for _ in range(rng.randint(0, 6))]
        for k in (1, 2, None):
            errors, words, picked = oracle_path(ref, net, k)
            cut = net.truncated(k)
            best = min(brute_edit_distance(ref, p) for p in all_paths(net, k))
            opts = dict(mode="levenshtein", case_sensitive=True)
            assert errors == best == alternatives_oracle(cut, ref, **opts).cost
            assert network_alternatives_oracle(cut, ref, **opts).cost == best
            assert [w for s, a in zip(cut.slots, picked, strict=True) for w in s.alternatives[a].words] == words
            assert brute_edit_distance(ref, words) == errors
