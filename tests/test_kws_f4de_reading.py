"""Where F4DE's Perl reads texts differently from the XML and Unicode standards, the scorer reads them as F4DE
does by default (its numbers are the published ones) and as the standards say with ``xml_correct``:

* Perl's ``lc`` lower-cases a word-final capital sigma to σ (Python's ``lower()`` gives ς);
* F4DE takes ``<kwtext>`` from xmllint's re-serialisation and does not decode entities (``&amp;`` stays);
* F4DE cuts a kwslist ``file`` name at its first dot and removes only an extension of exactly ``sph``.

The real F4DE (found through $LATTICE_TOOLS_F4DE) scores the same case as the default reading."""
from __future__ import annotations

from pathlib import Path

import pytest
from _kws_helpers import compare_reports, f4de_root, f4de_skip_reason, run_kwseval

from lattice_tools.io.keyword_search.kwslist import kwslist_file_id
from lattice_tools.kws.f4de_report import f4de_stdout
from lattice_tools.kws.references import f4de_kwtext, perl_lc
from lattice_tools.kws.score import score_kws_files

ECF = """<ecf source_signal_duration="200.000" language="greek" version="1">
  <excerpt audio_filename="audio/F01.sph" channel="1" tbeg="0.000" dur="100.000" source_type="bnews"/>
  <excerpt audio_filename="audio/F02.a.sph" channel="1" tbeg="0.000" dur="100.000" source_type="bnews"/>
</ecf>
"""
RTTM = """LEXEME F01 1 1.000 0.500 σοφος lex s1 <NA>
LEXEME F01 1 5.000 0.300 a lex s1 <NA>
LEXEME F01 1 5.300 0.200 & lex s1 <NA>
LEXEME F01 1 5.500 0.300 b lex s1 <NA>
LEXEME F01 1 9.000 0.400 ΑΛΦΑ lex s1 <NA>
LEXEME F02.a 1 2.000 0.500 σοφος lex s2 <NA>
LEXEME F02.a 1 7.000 0.400 άλφα lex s2 <NA>
"""
KWLIST = """<?xml version="1.0" encoding="UTF-8"?>
<kwlist ecf_filename="e.ecf.xml" version="1" language="greek" encoding="UTF-8" compareNormalize="lowercase">
  <kw kwid="KW-SIGMA"><kwtext>ΣΟΦΟΣ</kwtext></kw>
  <kw kwid="KW-AMP"><kwtext>a &amp; b</kwtext></kw>
  <kw kwid="KW-ALPHA"><kwtext>ΑΛΦΑ</kwtext></kw>
</kwlist>
"""
KWSLIST = """<kwslist kwlist_filename="k.kwlist.xml" language="greek" system_id="sys">
  <detected_kwlist kwid="KW-SIGMA" search_time="1" oov_count="0">
    <kw file="F01.sph" channel="1" tbeg="1.0" dur="0.5" score="0.9" decision="YES"/>
    <kw file="F02.a.sph" channel="1" tbeg="2.0" dur="0.5" score="0.8" decision="YES"/>
  </detected_kwlist>
  <detected_kwlist kwid="KW-AMP" search_time="1" oov_count="0">
    <kw file="F01.sph" channel="1" tbeg="5.0" dur="0.8" score="0.7" decision="YES"/>
  </detected_kwlist>
  <detected_kwlist kwid="KW-ALPHA" search_time="1" oov_count="0">
    <kw file="F01.sph" channel="1" tbeg="9.0" dur="0.4" score="0.6" decision="YES"/>
    <kw file="F02.a.sph" channel="1" tbeg="20.0" dur="0.4" score="0.2" decision="NO"/>
  </detected_kwlist>
</kwslist>
"""


@pytest.fixture
def case(tmp_path) -> dict[str, Path]:
    files = {"ecf": ("e.ecf.xml", ECF), "rttm": ("r.rttm", RTTM), "kwlist": ("k.kwlist.xml", KWLIST),
             "kwslist": ("s.kwslist.xml", KWSLIST)}
    out = {}
    for key, (name, text) in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        out[key] = tmp_path / name
    return out


def test_the_three_readings():
    assert perl_lc("ΣΟΦΟΣ") == "σοφοσ" and "ΣΟΦΟΣ".lower() == "σοφος" and perl_lc("σοφος") == "σοφος"
    assert f4de_kwtext("a & b <c>") == "a &amp; b &lt;c&gt;"
    assert kwslist_file_id("audio/F02.a.sph") == "F02.a.sph" and kwslist_file_id("F02.a.sph", True) == "F02.a"
    assert kwslist_file_id("dir/F01.sph") == "F01" == kwslist_file_id("dir/F01.sph", True)


def _blocks(ev):
    return {k: (b.n_true, b.n_corr, b.n_fa) for k, b in ev.overall.blocks.items()}


def test_default_reads_like_f4de_and_xml_correct_like_the_standards(case):
    args = dict(rttm=str(case["rttm"]), include_no_targets=True, outside_ecf="ignore")
    f4de = score_kws_files(str(case["ecf"]), str(case["kwlist"]), str(case["kwslist"]), **args)
    xml = score_kws_files(str(case["ecf"]), str(case["kwlist"]), str(case["kwslist"]), xml_correct=True, **args)
    # F4DE: 'σοφοσ' matches no 'σοφος'; 'a &amp; b' matches nothing; hits in 'F02.a.sph' are outside the ECF
    assert _blocks(f4de) == {"KW-SIGMA": (0, 0, 1), "KW-AMP": (0, 0, 1), "KW-ALPHA": (1, 1, 0)}
    assert _blocks(xml) == {"KW-SIGMA": (2, 2, 0), "KW-AMP": (1, 1, 0), "KW-ALPHA": (1, 1, 0)}
    assert f4de.texts["KW-AMP"] == "a &amp; b" and xml.texts["KW-AMP"] == "a & b"


def test_without_ignore_the_outside_hit_is_an_error_that_says_f4de_drops_it(case):
    from lattice_tools.core.errors import MismatchError

    with pytest.raises(MismatchError, match="F4DE drops such hits silently") as info:
        score_kws_files(str(case["ecf"]), str(case["kwlist"]), str(case["kwslist"]), rttm=str(case["rttm"]))
    assert "F02.a.sph" in str(info.value) and "--ignore-outside-ecf" in str(info.value)


@pytest.mark.skipif(f4de_root() is None, reason=f4de_skip_reason())
def test_f4de_scores_the_case_as_the_default_reading(case, tmp_path):
    ev = score_kws_files(str(case["ecf"]), str(case["kwlist"]), str(case["kwslist"]), rttm=str(case["rttm"]),
                         include_no_targets=True, outside_ecf="ignore")
    p = run_kwseval(f4de_root(), ["-e", str(case["ecf"]), "-r", str(case["rttm"]), "-s", str(case["kwslist"]),
                                  "-t", str(case["kwlist"]), "-o", "-b", "-f", "-", "-inc"], tmp_path)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    got = f4de_stdout(ev, ecf=str(case["ecf"]), rttm=str(case["rttm"]), kwslist=str(case["kwslist"]),
                      kwlist=str(case["kwlist"]), summary=True, block=True, optimum=False, supremum=False)
    problems, _ = compare_reports(p.stdout, got)
    assert not problems, problems[:5]
    xml = score_kws_files(str(case["ecf"]), str(case["kwlist"]), str(case["kwslist"]), rttm=str(case["rttm"]),
                          include_no_targets=True, outside_ecf="ignore", xml_correct=True)
    assert xml.overall.atwv.twv != ev.overall.atwv.twv  # the option changes the number
