"""Every encoding an XML declaration (or --encoding) may name -- Python's text encodings, its codec
transforms (rot13, hex, base64, zlib), codecs that fail in their own way (punycode, undefined) and names
Python does not know -- gives the keyword-search readers a document or a one-line FormatError naming the
file, never a LookupError or another traceback."""
from __future__ import annotations

import encodings.aliases

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lattice_tools.core.errors import FormatError
from lattice_tools.io.keyword_search.ecf import read_ecf
from lattice_tools.io.keyword_search.kwlist import read_kwlist
from lattice_tools.io.keyword_search.kwslist import read_kwslist
from lattice_tools.io.keyword_search.rttm import read_rttm

CODECS = sorted(set(encodings.aliases.aliases.values()) | set(encodings.aliases.aliases)
                | {"rot13", "hex", "base64", "zlib", "bz2", "uu", "quopri", "punycode", "undefined", "idna",
                   "raw_unicode_escape", "unicode_escape", "utf-7", "utf-16", "utf-32", "no-such-codec"})

KWLIST = '<kwlist ecf_filename="x" version="1" language="english" encoding="UTF-8" compareNormalize="">' \
         '<kw kwid="K1"><kwtext>{word}</kwtext></kw></kwlist>\n'
ECF = '<ecf source_signal_duration="10" version="1"><excerpt audio_filename="a" channel="1" tbeg="0" dur="10" ' \
      'source_type="bnews"/></ecf>\n'
KWSLIST = '<kwslist kwlist_filename="k.xml" language="english" system_id="s"><detected_kwlist kwid="K1" ' \
          'search_time="1" oov_count="0"><kw file="a" channel="1" tbeg="1" dur="0.2" score="0.5" decision="YES"/>' \
          '</detected_kwlist></kwslist>\n'
READERS = {"kwlist": (read_kwlist, KWLIST), "ecf": (read_ecf, ECF), "kwslist": (read_kwslist, KWSLIST)}


def _read(reader, path, encoding):
    try:
        return reader(str(path), encoding=encoding) if encoding is not None else reader(str(path))
    except FormatError as exc:
        text = str(exc)
        assert "\n" not in text and len(text) <= 300 and path.name in text, text
        return None


@pytest.mark.parametrize("name", ["rot13", "hex", "base64", "zlib", "punycode", "undefined", "no-such-codec"])
@pytest.mark.parametrize("kind", sorted(READERS))
def test_declared_codecs_that_decode_no_document(kind, name, tmp_path):
    reader, body = READERS[kind]
    path = tmp_path / "x.xml"
    path.write_bytes(f'<?xml version="1.0" encoding="{name}"?>\n'.encode() + body.format(word="abc").encode())
    with pytest.raises(FormatError) as info:
        reader(str(path))
    assert "x.xml" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name", ["rot13", "hex", "zlib", "punycode", "undefined", "no-such-codec"])
def test_encoding_option_on_rttm(name, tmp_path):
    path = tmp_path / "r.rttm"
    path.write_text("LEXEME F 1 0.10 0.20 abc lex spk <NA>\n")
    with pytest.raises(FormatError, match="r.rttm"):
        read_rttm(str(path), encoding=name)


def _fuzz(tmp_path, kind, declared, option, word, raw):
    reader, body = READERS[kind]
    path = tmp_path / "x.xml"
    head = f'<?xml version="1.0" encoding="{declared}"?>\n'.encode() if declared is not None else b""
    path.write_bytes(head + body.format(word=word).encode("utf-8") + raw)
    _read(reader, path, option)
    if option is not None:
        rttm = tmp_path / "r.rttm"
        rttm.write_bytes(f"LEXEME F 1 0.10 0.20 {word} lex spk <NA>\n".encode() + raw)
        _read(read_rttm, rttm, option)


_NAMES = st.one_of(st.sampled_from(CODECS), st.from_regex(r"[A-Za-z0-9._-]{1,60}", fullmatch=True))
_CASE = dict(kind=st.sampled_from(sorted(READERS)), declared=st.none() | _NAMES, option=st.none() | _NAMES,
             word=st.sampled_from(["abc", "caf\u00e9", "\u03a3\u039f\u03a3", "\u4e2d\u6587", "a+b-c"]),
             raw=st.binary(max_size=20))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**_CASE)
def test_fuzz_xml_encodings(tmp_path, kind, declared, option, word, raw):
    _fuzz(tmp_path, kind, declared, option, word, raw)


@pytest.mark.slow
@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**_CASE)
def test_fuzz_xml_encodings_many(tmp_path, kind, declared, option, word, raw):
    _fuzz(tmp_path, kind, declared, option, word, raw)
