"""ECF, KWlist, kwslist and RTTM readers/writers: round trips, safe XML, and every bad input named by file
and line; the ``lattice-tools kws`` commands exit 2 without leaving partial output."""
from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from _kws_helpers import DATA

from lattice_tools.core.errors import FormatError
from lattice_tools.io.keyword_search.ecf import Ecf, EcfExcerpt, file_id_of, read_ecf, write_ecf
from lattice_tools.io.keyword_search.kwlist import KeywordTerm, read_kwlist, read_kwlist_file, write_kwlist
from lattice_tools.io.keyword_search.kwslist import Detection, read_kwslist, write_kwslist
from lattice_tools.io.keyword_search.rttm import RttmRecord, check_overlaps, lexemes_from_ctm, read_rttm, write_rttm
from lattice_tools.kws.kwlist_make import make_kwlist

COMMON = DATA / "common"


def test_read_f4de_inputs():
    ecf = read_ecf(COMMON / "test6.ecf.xml")
    assert [(e.file, e.channel, e.tbeg, e.dur, e.source_type) for e in ecf.excerpts] == \
        [("FILE01", "1", 0.0, 50.0, "bnews"), ("FILE02", "2", 50.0, 50.0, "bnews")]
    kwl = read_kwlist_file(COMMON / "test6.kwlist.xml")
    assert [t.kwid for t in kwl.terms] == ["TERM-01", "TERM-02", "TERM-03", "TERM-04"]
    assert kwl.terms[2] == KeywordTerm("TERM-03", "why not") and kwl.compare_normalize == "lowercase"
    assert kwl.info["TERM-01"]["Characters"] == "3"
    kws = read_kwslist(COMMON / "test6.kwslist.xml")
    assert kws.detections[0] == Detection("TERM-01", "FILE01", "1", 0.0, 1.0, 0.912, True)
    assert kws.raw[0] == ("0.000", "1.000", "0.912") and kws.oov_kwids == {"TERM-02"}
    rttm = read_rttm(COMMON / "test6.rttm")
    assert rttm[1] == RttmRecord("LEXEME", "FILE01", "1", 0.0, 1.0, "yes", "lex", "Woman", "<NA>", 2)
    cant = read_kwlist(COMMON / "test8.cantonese.kwlist.xml")
    assert cant[0].text == "听到"


def test_file_ids():
    assert file_id_of("audio/eval03/x/fsh_60262_exA.sph") == "fsh_60262_exA"
    assert file_id_of("FILE01.sph") == "FILE01" and file_id_of("FILE01") == "FILE01"


def test_round_trips(tmp_path):
    ecf = Ecf((EcfExcerpt("a/F1.sph", "1", 0.5, 10.25, "cts"), EcfExcerpt("F2.wav", "2", 0.0, 3.0, "bnews")),
              language="english", version="1")
    write_ecf(tmp_path / "e.xml", ecf)
    back = read_ecf(tmp_path / "e.xml")
    assert back.excerpts == tuple(EcfExcerpt(e.audio_filename, e.channel, e.tbeg, e.dur, e.source_type, line=i + 2)
                                  for i, e in enumerate(ecf.excerpts))
    terms = [KeywordTerm("KW-1", "a & b"), KeywordTerm("KW-2", "naïve <x>")]
    write_kwlist(tmp_path / "k.xml", terms, ecf_filename="e.xml", language="english")
    assert read_kwlist(tmp_path / "k.xml") == terms
    dets = [Detection("KW-1", "F1", "1", 0.1 + 0.2, 0.33, 1 / 3, True), Detection("KW-1", "F1", "1", 5.0, 0.2, 0.01, False)]
    write_kwslist(tmp_path / "s.xml", dets, kwlist_filename="k.xml", kwids=["KW-1", "KW-2", "KW-3"], oov_kwids=["KW-3"])
    kws = read_kwslist(tmp_path / "s.xml")
    # times: the intended decimal (0.1 + 0.2 is 0.30000000000000004 as a double); scores: every digit
    assert list(kws.detections) == [dataclasses.replace(dets[0], tbeg=0.3), dets[1]]
    assert 'tbeg="0.3" dur="0.33" score="0.3333333333333333"' in (tmp_path / "s.xml").read_text()
    assert kws.kwids == ["KW-1", "KW-2", "KW-3"] and kws.oov_kwids == {"KW-3"}
    recs = read_rttm(COMMON / "test6.rttm")
    write_rttm(tmp_path / "r.rttm", recs)
    assert (tmp_path / "r.rttm").read_text() == (COMMON / "test6.rttm").read_text()


def test_kwslist_times_are_written_as_their_intended_decimals(tmp_path):
    """Frame times (Kaldi's frame k: k * 0.01 s, e.g. 0.6900000000000001 for frame 69) are written with the
    digits Kaldi's write_kwslist.pl prints (sprintf "%.2f", trailing zeros aside); a time given with at most
    15 significant digits is written back as given; any time reads back within 15 significant digits."""
    import random
    from decimal import Decimal

    from lattice_tools.io.keyword_search._xml import decimal_time

    for k in range(0, 400_000, 7):
        assert Decimal(decimal_time(k * 0.01)) == Decimal(f"{k * 0.01:.2f}"), k
    assert decimal_time(69 * 0.01) == "0.69" and repr(69 * 0.01) == "0.6900000000000001"
    rng = random.Random(5)
    for _ in range(20_000):
        digits = rng.randint(1, 15)
        text = str(Decimal(rng.randrange(10 ** digits)).scaleb(-rng.randint(0, digits + 3)))
        assert Decimal(decimal_time(float(text))) == Decimal(text), text     # as given
        x = rng.uniform(0, 10 ** rng.randint(-6, 6))
        assert abs(float(decimal_time(x)) - x) <= 5e-15 * x, x               # 15 significant digits
        assert "e" not in decimal_time(x).lower()                             # an xsd:decimal
    dets = [Detection("K", "F", "1", k * 0.01, (k + 31) * 0.01 - k * 0.01, 0.1 + 0.2, True) for k in (69, 57, 1001)]
    write_kwslist(tmp_path / "s.xml", dets, kwlist_filename="k.xml")
    text = (tmp_path / "s.xml").read_text()
    assert 'tbeg="0.69" dur="0.31" score="0.30000000000000004"' in text and 'tbeg="10.01"' in text


BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<kwlist><kw kwid="a"><kwtext>&lol3;</kwtext></kw></kwlist>
"""


@pytest.mark.parametrize("text,match,line", [
    (BOMB, "DOCTYPE", 2),
    ('<kwlist>\n<kw kwid="a"><kwtext>x</kwtext></kw>\n<kw kwid="a"><kwtext>y</kwtext></kw>\n</kwlist>\n',
     "duplicate keyword id 'a'", 3),
    ('<kwlist>\n<kw kwid="a"><kwtext>  </kwtext></kw>\n</kwlist>\n', "empty term", 2),
    ('<kwlist>\n<kw kwid="a"><kwtext>x</kwtext>\n</kwlist>\n', "malformed XML", 3),
    ('<kwlist>\n<kw><kwtext>x</kwtext></kw>\n</kwlist>\n', "kwid", 2),
])
def test_kwlist_errors(tmp_path, text, match, line):
    p = tmp_path / "k.xml"
    p.write_text(text)
    with pytest.raises(FormatError, match=match) as e:
        read_kwlist(p)
    assert e.value.line == line and e.value.path == str(p)


def test_external_entity_refused(tmp_path):
    p = tmp_path / "e.xml"
    p.write_text('<!DOCTYPE ecf [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n<ecf>&x;</ecf>\n')
    with pytest.raises(FormatError, match="DOCTYPE"):
        read_ecf(p)


def test_non_utf8_needs_encoding(tmp_path):
    p = tmp_path / "k.xml"
    p.write_bytes('<kwlist>\n<kw kwid="a"><kwtext>caf\u00e9</kwtext></kw>\n</kwlist>\n'.encode("latin-1"))
    with pytest.raises(FormatError, match="not valid utf-8.*--encoding") as e:
        read_kwlist(p)
    assert e.value.line == 2
    assert read_kwlist(p, encoding="latin-1") == [KeywordTerm("a", "caf\u00e9")]
    r = tmp_path / "r.rttm"
    r.write_bytes("LEXEME F 1 0 1 caf\u00e9 lex s <NA>\n".encode("latin-1"))
    with pytest.raises(FormatError, match="not valid utf-8") as e:
        read_rttm(r)
    assert e.value.line == 1
    assert read_rttm(r, encoding="latin-1")[0].ortho == "caf\u00e9"


@pytest.mark.parametrize("text,match,line", [
    ('<kwslist kwlist_filename="k">\n<detected_kwlist kwid="a">\n<kw file="F" channel="1" tbeg="0" dur="1" '
     'score="0.5" decision="MAYBE"/>\n</detected_kwlist>\n</kwslist>\n', "YES or NO", 3),
    ('<kwslist kwlist_filename="k">\n<detected_kwlist kwid="a">\n<kw file="F" channel="1" tbeg="x" dur="1" '
     'score="0.5" decision="YES"/>\n</detected_kwlist>\n</kwslist>\n', "must be a number", 3),
    ('<kwslist>\n<detected_kwlist kwid="a"/>\n<detected_kwlist kwid="a"/>\n</kwslist>\n', "two <detected_kwlist>", 3),
    ('<kwslist min_score="0" max_score="1">\n<detected_kwlist kwid="a">\n<kw file="F" channel="1" tbeg="0" '
     'dur="1" score="1.5" decision="YES"/>\n</detected_kwlist>\n</kwslist>\n', "outside the file", 3),
    ('<kwslist>\n<kw file="F" channel="1" tbeg="0" dur="1" score="1" decision="YES"/>\n</kwslist>\n',
     "outside a <detected_kwlist>", 2),
])
def test_kwslist_errors(tmp_path, text, match, line):
    p = tmp_path / "s.xml"
    p.write_text(text)
    with pytest.raises(FormatError, match=match) as e:
        read_kwslist(p)
    assert e.value.line == line


def test_rttm_errors(tmp_path):
    p = tmp_path / "r.rttm"
    p.write_text("LEXEME F 1 0.0 0.5 a lex s <NA>\nLEXEME F 1 0.5 a lex s <NA>\n")
    with pytest.raises(FormatError, match="9 fields") as e:
        read_rttm(p)
    assert e.value.line == 2
    p.write_text(";; comment\nLEXEME F 1 0.0 -0.5 a lex s <NA>\n")
    with pytest.raises(FormatError, match=">= 0") as e:
        read_rttm(p)
    assert e.value.line == 2
    p.write_text("LEXEME F 1 0.0 0.5 a lex s <NA>\nLEXEME F 1 0.3 0.5 b lex s <NA>\nLEXEME F 1 0.3 0.5 c lex t <NA>\n")
    recs = read_rttm(p)
    with pytest.raises(FormatError, match="overlap") as e:
        check_overlaps(recs, str(p))
    assert e.value.line == 2


def test_reference_from_ctm(tmp_path):
    p = tmp_path / "ref.ctm"
    p.write_text("F 1 0.00 0.30 why\nF 1 0.40 0.30 not\n")
    recs = lexemes_from_ctm(p)
    assert [(r.ortho, r.tbeg, r.speaker) for r in recs] == [("why", 0.0, "F_1"), ("not", 0.4, "F_1")]


def test_make_kwlist_rules():
    recs = read_rttm(COMMON / "test6.rttm")
    a = make_kwlist(recs, num_terms=6, seed=3)
    assert a == make_kwlist(recs, num_terms=6, seed=3)          # seeded
    assert len(a) == 6 and len({t.text for t in a}) == 6
    assert sum(1 for t in a if len(t.words) > 1) == 2              # 30 % of 6, rounded
    texts = {t.text for t in a}
    from lattice_tools.kws.kwlist_make import candidate_counts
    counts = candidate_counts(recs)
    assert texts <= set(counts)                                      # every term occurs in the reference
    assert counts["why not"] == 5 and counts["yes"] == 15
    # The maker counts occurrences exactly as the scorer finds them.
    from lattice_tools.kws.score import ReferenceIndex
    index = ReferenceIndex(recs, lowercase=True)
    assert all(len(index.find_occurrences(t)) == n for t, n in counts.items())


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "lattice_tools", "kws", *map(str, args)], capture_output=True,
                          text=True, cwd=cwd)


def test_cli_score_matches_f4de_and_writes_reports(tmp_path):
    out = tmp_path / "rep"
    p = _cli("score", "-e", COMMON / "test6.ecf.xml", "-r", COMMON / "test6.rttm", "-s", COMMON / "test6.kwslist.xml",
             "-t", COMMON / "test6.kwlist.xml", "--no-otwv", "--no-stwv", "-o", out, "--det", tmp_path / "det.png",
             "--alignment", tmp_path / "align.csv")
    assert p.returncode == 0, p.stderr
    expected = (DATA / "expected" / "res_test2a.txt").read_text(encoding="utf-8")
    # The conditional table of test 2a covers all excerpts (both bnews), so its numbers are the overall ones.
    assert "|   Occurrence |          3 |      35 |       10 |     27 |        17 |          0 |    10 |      18 |" \
           "   0.03715 |    0.533 |   -36.6813 |       0.3450 |   0.00000 |    0.800 |   0.2000 |         0.901 |" in p.stdout
    assert "-36.6813" in expected
    assert sorted(x.name for x in out.iterdir()) == ["bsum.txt", "sum.txt"]
    assert (tmp_path / "align.csv").read_text().startswith("language,file,channel,termid,term,ref_bt")
    assert (tmp_path / "det.png").read_bytes()[:4] == b"\x89PNG"


def test_cli_bad_input_exit_2_no_output(tmp_path):
    bad = tmp_path / "bad.kwslist.xml"
    bad.write_text('<kwslist>\n<detected_kwlist kwid="TERM-01">\n<kw file="FILE01" channel="1" tbeg="0" dur="1" '
                   'score="0.5" decision="yes"/>\n</detected_kwlist>\n</kwslist>\n')
    out = tmp_path / "rep"
    js = tmp_path / "s.json"
    p = _cli("score", "-e", COMMON / "test6.ecf.xml", "-r", COMMON / "test6.rttm", "-s", bad,
             "-t", COMMON / "test6.kwlist.xml", "-o", out, "--json", js)
    assert p.returncode == 2
    assert p.stderr.count("\n") == 1 and "bad.kwslist.xml:3" in p.stderr and "Traceback" not in p.stderr
    assert not out.exists() and not js.exists()
    # Hits in a recording the ECF does not name: an error unless --ignore-outside-ecf.
    args = ["score", "-e", COMMON / "test5.short.ecf.xml", "-r", COMMON / "test5.rttm", "-s",
            COMMON / "test5.kwslist.xml", "-t", COMMON / "test5.kwlist.xml"]
    p = _cli(*args)
    assert p.returncode == 2 and "does not name" in p.stderr
    p = _cli(*args, "--ignore-outside-ecf", "--json", "-")
    assert p.returncode == 0
    import json
    assert json.loads(p.stdout)["overall"]["atwv"]["twv"] == pytest.approx(0.6333333333333333)


def test_cli_kwlist(tmp_path):
    out = tmp_path / "k.xml"
    p = _cli("kwlist", "-r", COMMON / "test6.rttm", "-o", out, "--num-terms", "4", "--seed", "1")
    assert p.returncode == 0, p.stderr
    terms = read_kwlist(out)
    assert len(terms) == 4 and [t.kwid for t in terms] == ["KW-0001", "KW-0002", "KW-0003", "KW-0004"]
    p = _cli("kwlist", "-r", COMMON / "test6.rttm", "--ctm", COMMON / "test6.rttm", "-o", out)
    assert p.returncode == 2


def test_kwslist_writer_refuses_a_negative_duration(tmp_path):
    bad = [Detection("KW-1", "f", "1", 1.0, -0.2, 0.5, True)]
    with pytest.raises(FormatError, match="negative duration"):
        write_kwslist(tmp_path / "s.xml", bad, kwlist_filename="k.xml")
    assert not (tmp_path / "s.xml").exists()
