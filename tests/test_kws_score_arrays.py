"""The array implementation of F4DE's occurrence alignment and measures (kws/occurrence_alignment.py,
occurrence_trials.py, measures.evaluate) against the one-hit-at-a-time oracle it replaced
(tests/_reference/kws_scoring.py) on random cases with ties, overlapping hits and overlapping excerpts:
the same trials, the same alignment rows and the same numbers, bit for bit.  Also the kwslist reader's
plain-layout scanner against its event parser on every layout variant."""
from __future__ import annotations

import pytest
from _kws_helpers import random_case
from _reference.kws_scoring import evaluate_reference, reference_trials

from lattice_tools.core.errors import FormatError, MismatchError
from lattice_tools.io.keyword_search.ecf import read_ecf
from lattice_tools.io.keyword_search.kwlist import read_kwlist_file
from lattice_tools.io.keyword_search.kwslist import read_kwslist
from lattice_tools.io.keyword_search.rttm import read_rttm
from lattice_tools.kws.measures import Metric
from lattice_tools.kws.references import ReferenceIndex
from lattice_tools.kws.score import KwsEvaluation, score_kws


def _block_fields(blocks) -> dict:
    return {k: (b.text, sorted(b.targ), sorted(b.nontarg), b.yes_targ, b.no_targ, b.omitted, b.yes_nontarg,
                b.no_nontarg, b.min_yes, b.max_no) for k, b in blocks.items()}


def _score_fields(s) -> tuple:
    return (s.title, s.tot_trials, s.atwv, s.mtwv, s.otwv, s.stwv, s.terms, s.det_points, _block_fields(s.blocks))


@pytest.mark.parametrize("seed", range(36))
def test_array_scorer_equals_reference(seed, tmp_path):
    c = random_case(seed, tmp_path, size=1 + seed % 3)
    ecf, kwl, kws = read_ecf(c["ecf"]), read_kwlist_file(c["kwlist"]), read_kwslist(c["kwslist"])
    records = read_rttm(c["rttm"], types=("LEXEME",))
    groups = {"tel": ["cts", "splitcts"], "other": ["bnews", "confmtg"]} if seed % 2 else None
    options = {"include_no_targets": c["inc"], "source_type_groups": groups}
    try:
        ev = score_kws(ecf, records, kwl, kws, outside_ecf="ignore", **options)
    except MismatchError as exc:
        assert "not fewer than the number of trials" in str(exc)
        return
    texts = {t.kwid: t.text for t in kwl.terms}
    refs = ReferenceIndex(records, lowercase=kwl.compare_normalize == "lowercase")
    main, conds, rows = reference_trials(ecf, refs, kwl, kws, texts, **options)
    metric = (0.1, 1.0, 0.0001)
    expected = evaluate_reference(main, Metric(main.tot_trials, *metric), "")
    assert _score_fields(ev.overall) == _score_fields(expected)
    assert sorted(ev.conditions) == sorted(conds)
    for g, tr in conds.items():
        assert _score_fields(ev.conditions[g]) == _score_fields(evaluate_reference(tr, Metric(tr.tot_trials, *metric), ""))
    reference = KwsEvaluation(expected, {}, lambda: rows, kwl.language, kws.system_id, kws, texts)
    assert ev.alignment == reference.alignment


LAYOUTS = {
    "plain": '<kwslist kwlist_filename="k.xml" language="english" system_id="s">\n'
             '<detected_kwlist kwid="KW-1" search_time="1" oov_count="0">\n'
             '<kw file="F1" channel="1" tbeg="1.5" dur="0.25" score="0.9" decision="YES"/>\n'
             '<kw file="audio/F2.sph" channel="1" tbeg="2" dur="0.5" score="0.1" decision="NO"/>\n'
             '</detected_kwlist>\n<detected_kwlist kwid="KW-2"/>\n</kwslist>\n',
    "declaration_crlf": '<?xml version="1.0" encoding="utf-8"?>\r\n<kwslist system_id="s">\r\n'
                        '<detected_kwlist kwid="KW-1">\r\n'
                        '<kw file="F1" channel="1" tbeg="1.5" dur="0.25" score="0.9" decision="YES"/>\r\n'
                        '</detected_kwlist>\r\n</kwslist>\r\n',
    "comment": '<kwslist><detected_kwlist kwid="KW-1"><!-- <kw file="X" channel="1" tbeg="1" dur="1" score="1" '
               'decision="YES"/> --><kw file="F1" channel="1" tbeg="1" dur="1" score="0.5" decision="YES"/>'
               '</detected_kwlist></kwslist>',
    "entity": '<kwslist><detected_kwlist kwid="KW&amp;1"><kw file="F&amp;1" channel="1" tbeg="1" dur="1" '
              'score="0.5" decision="YES"/></detected_kwlist></kwslist>',
    "reordered": '<kwslist><detected_kwlist kwid="KW-1"><kw channel="1" file="F1" tbeg="1" dur="1" score="0.5" '
                 'decision="NO"/></detected_kwlist></kwslist>',
    "single_quotes": "<kwslist><detected_kwlist kwid='KW-1'><kw file='F1' channel='1' tbeg='1' dur='1' score='0.5' "
                     "decision='YES'/></detected_kwlist></kwslist>",
    "tab_in_value": '<kwslist><detected_kwlist kwid="KW\t1"><kw file="F1" channel="1\t" tbeg="1" dur="1" '
                    'score="0.5" decision="YES"/></detected_kwlist></kwslist>',
    "multiline_tag": '<kwslist>\n<detected_kwlist\n kwid="KW-1"\n>\n<kw\n file="F1"\n channel="1" tbeg="1" dur="1" '
                     'score="0.5" decision="YES"\n/>\n</detected_kwlist>\n</kwslist>',
    "text_between": '<kwslist>x<detected_kwlist kwid="KW-1">y<kw file="F1" channel="1" tbeg="1" dur="1" score="0.5" '
                    'decision="YES"/>z</detected_kwlist>w</kwslist>',
    "odd_numbers": '<kwslist><detected_kwlist kwid="KW-1"><kw file="F1" channel="1" tbeg="1_0" dur=" 1" '
                   'score="1e-3" decision="YES"/></detected_kwlist></kwslist>',
    "bounds": '<kwslist min_score="0" max_score="1"><detected_kwlist kwid="KW-1"><kw file="F1" channel="1" '
              'tbeg="1" dur="1" score="0.5" decision="YES"/></detected_kwlist></kwslist>',
    "empty": '<kwslist system_id="s"></kwslist>',
    "cdata": '<kwslist><detected_kwlist kwid="KW-1"><![CDATA[<kw>]]><kw file="F1" channel="1" tbeg="1" dur="1" '
             'score="0.5" decision="YES"/></detected_kwlist></kwslist>',
    "trailing_comment": '<kwslist><detected_kwlist kwid="KW-1"/></kwslist>\n<!-- end -->\n',
}

BAD_LAYOUTS = {
    "negative_dur": '<kwslist>\n<detected_kwlist kwid="KW-1">\n<kw file="F1" channel="1" tbeg="1" dur="0.5" '
                    'score="0.5" decision="YES"/>\n<kw file="F1" channel="1" tbeg="1" dur="-1" score="0.5" '
                    'decision="YES"/>\n</detected_kwlist>\n</kwslist>\n',
    "bad_number": '<kwslist>\n<detected_kwlist kwid="KW-1">\n\n<kw file="F1" channel="1" tbeg="x" dur="1" '
                  'score="0.5" decision="YES"/>\n</detected_kwlist>\n</kwslist>\n',
    "infinite": '<kwslist>\n<detected_kwlist kwid="KW-1">\n<kw file="F1" channel="1" tbeg="1e999" dur="1" '
                'score="0.5" decision="YES"/>\n</detected_kwlist>\n</kwslist>\n',
    "out_of_bounds": '<kwslist min_score="0" max_score="1">\n<detected_kwlist kwid="KW-1">\n<kw file="F1" '
                     'channel="1" tbeg="1" dur="1" score="1.5" decision="YES"/>\n</detected_kwlist>\n</kwslist>\n',
    "duplicate_kwid": '<kwslist>\n<detected_kwlist kwid="KW-1"/>\n<detected_kwlist kwid="KW-1"/>\n</kwslist>\n',
    "bad_decision": '<kwslist>\n<detected_kwlist kwid="KW-1">\n<kw file="F1" channel="1" tbeg="1" dur="1" '
                    'score="0.5" decision="MAYBE"/>\n</detected_kwlist>\n</kwslist>\n',
    "kw_outside": '<kwslist>\n<kw file="F1" channel="1" tbeg="1" dur="1" score="0.5" decision="YES"/>\n</kwslist>\n',
    "wrong_root": '<kwlist>\n</kwlist>\n',
    "nested": '<kwslist>\n<detected_kwlist kwid="A">\n<detected_kwlist kwid="B"/>\n</detected_kwlist>\n</kwslist>\n',
    "malformed": '<kwslist>\n<detected_kwlist kwid="KW-1">\n<kw file="F1" channel="1" tbeg="1" dur="1" '
                 'score="0.5" decision="YES">\n</detected_kwlist>\n</kwslist>\n',
    "doctype": '<!DOCTYPE kwslist [<!ENTITY a "aaaa">]>\n<kwslist system_id="&a;"/>\n',
    "no_header": '<kwslist/>\n',
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_plain_layout_scanner_equals_event_parser(name, tmp_path):
    path = tmp_path / "k.kwslist.xml"
    path.write_bytes(LAYOUTS[name].encode("utf-8"))
    fast, events = read_kwslist(path), read_kwslist(path, plain_layout=False)
    assert fast == events
    assert list(fast.raw) == list(events.raw)
    assert [d.line for d in fast.lists] == [d.line for d in events.lists]
    assert list(fast.lines) == list(events.lines)
    cols = fast.columns
    assert list(zip(cols.kwid, cols.file, cols.channel, cols.tbeg, cols.dur, cols.score, cols.decision,
                    strict=True)) == [(d.kwid, d.file, d.channel, d.tbeg, d.dur, d.score, d.decision)
                                   for d in events.detections]


def test_plain_layout_is_the_one_scanned(tmp_path):
    path = tmp_path / "k.kwslist.xml"
    path.write_text(LAYOUTS["plain"], encoding="utf-8")
    kws = read_kwslist(path)
    assert type(kws.detections).__name__ == "_DetectionView"     # the columns, no Detection built
    assert [d.line for d in kws.lists] == [2, 6] and list(kws.lines) == [3, 4]
    assert kws.detections[1].file == "F2"


@pytest.mark.parametrize("name", sorted(BAD_LAYOUTS))
def test_errors_name_the_same_line_either_way(name, tmp_path):
    path = tmp_path / "k.kwslist.xml"
    path.write_text(BAD_LAYOUTS[name], encoding="utf-8")
    with pytest.raises(FormatError) as fast:
        read_kwslist(path)
    with pytest.raises(FormatError) as events:
        read_kwslist(path, plain_layout=False)
    assert str(fast.value) == str(events.value)
    assert "k.kwslist.xml" in str(fast.value)


@pytest.mark.parametrize("name", ["2a", "2b.518"])
def test_reference_conditions_equal_the_scorer_on_f4de_inputs(name, monkeypatch):
    """The conditional trials of F4DE's test 2a (-Y source-type groups) and 2b (-q kwinfo attribute queries):
    the oracle's own condition logic gives the scorer's conditions, trial for trial (the scorer's are held to
    F4DE's golden reports in tests/test_kws_score.py)."""
    from _kws_helpers import DATA
    from test_kws_score import _parse_command

    o, flags, _ = _parse_command(name)
    monkeypatch.chdir(DATA / "expected")
    ecf, kwl, kws = read_ecf(o["e"]), read_kwlist_file(o["t"]), read_kwslist(o["s"])
    records = read_rttm(o["r"], types=("LEXEME",))
    options = {"include_no_targets": "-inc" in flags, "source_type_groups": o["Y"] or None,
               "attribute_queries": o["q"]}
    ev = score_kws(ecf, records, kwl, kws, outside_ecf="ignore", **options)
    texts = {t.kwid: t.text for t in kwl.terms}
    refs = ReferenceIndex(records, lowercase=kwl.compare_normalize == "lowercase")
    main, conds, _rows = reference_trials(ecf, refs, kwl, kws, texts, **options)
    assert conds and sorted(ev.conditions) == sorted(conds)
    metric = (0.1, 1.0, 0.0001)
    for g, tr in conds.items():
        assert _score_fields(ev.conditions[g]) == _score_fields(evaluate_reference(tr, Metric(tr.tot_trials, *metric), ""))
