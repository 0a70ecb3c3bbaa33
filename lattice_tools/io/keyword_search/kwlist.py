"""NIST KWlist: the keyword list of a keyword-search evaluation.

::

    <kwlist ecf_filename="dev.ecf.xml" version="1" language="english" encoding="UTF-8" compareNormalize="lowercase">
      <kw kwid="KW-0001">
        <kwtext>why not</kwtext>
        <kwinfo><attr><name>NGram</name><value>2</value></attr></kwinfo>
      </kw>
    </kwlist>

:func:`read_kwlist` returns the terms as :class:`KeywordTerm` (the type the index,
the search and the scorer share); :func:`read_kwlist_file` also returns the header attributes and each
term's ``<kwinfo>`` attributes (which F4DE's ``-q`` conditional reports group by).  Duplicate keyword
ids and empty terms are errors naming the line.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import atomic_write
from ._xml import parse_xml, require_attr, xml_escape


@dataclass(frozen=True)
class KeywordTerm:
    """One term of a keyword list: its id (``KW-0001``) and its text as written in the KWlist."""

    kwid: str
    text: str

    @property
    def words(self) -> tuple[str, ...]:
        """The term's words (white-space separated text)."""
        return tuple(self.text.split())


@dataclass(frozen=True)
class KwList:
    """A whole KWlist file: its terms in file order, the header attributes and per-term ``kwinfo``."""

    terms: tuple[KeywordTerm, ...]
    ecf_filename: str = ""
    language: str = ""
    encoding: str = ""
    compare_normalize: str = ""
    version: str = ""
    info: dict[str, dict[str, str]] = field(default_factory=dict, compare=False)
    path: str = field(default="", compare=False)


def _xml_encoding(encoding: str | None) -> str | None:
    # "utf-8" is the default: then a file's own XML declaration decides (F4DE files may declare one).
    if encoding is None or encoding.lower().replace("_", "-") in ("utf-8", "utf8"):
        return None
    return encoding


def read_kwlist_file(path: str, *, encoding: str = "utf-8") -> KwList:
    """Read a KWlist with its header and ``<kwinfo>`` attributes (see :class:`KwList`)."""
    path = str(path)
    root = parse_xml(path, encoding=_xml_encoding(encoding))
    if root.tag != "kwlist":
        raise FormatError(f"expected a <kwlist> root element, got <{root.tag}>", path=path, line=root.line)
    terms: list[KeywordTerm] = []
    info: dict[str, dict[str, str]] = {}
    first_line: dict[str, int] = {}
    for el in root.children:
        if el.tag != "kw":
            raise FormatError(f"unexpected <{el.tag}> in a KWlist (expected <kw>)", path=path, line=el.line)
        kwid = require_attr(el, "kwid", path)
        if not kwid.strip():
            raise FormatError("empty keyword id", path=path, line=el.line)
        if kwid in first_line:
            raise FormatError(f"duplicate keyword id {kwid!r} (first on line {first_line[kwid]})", path=path,
                              line=el.line)
        first_line[kwid] = el.line
        texts = [c for c in el.children if c.tag == "kwtext"]
        if len(texts) != 1:
            raise FormatError(f"<kw kwid={kwid!r}> must have exactly one <kwtext>, has {len(texts)}", path=path,
                              line=el.line)
        text = texts[0].text
        if not text.split():
            raise FormatError(f"empty term for keyword {kwid!r}", path=path, line=texts[0].line)
        attrs: dict[str, str] = {}
        for c in el.children:
            if c.tag == "kwinfo":
                for a in c.children:
                    if a.tag != "attr":
                        continue
                    name = "".join(x.text for x in a.children if x.tag == "name")
                    value = "".join(x.text for x in a.children if x.tag == "value")
                    # F4DE zero-pads syllable counts so that they sort as text.
                    if name == "Syllables":
                        try:
                            value = f"{int(float(value)):02d}"
                        except ValueError:
                            pass
                    attrs[name] = value
            elif c.tag != "kwtext":
                raise FormatError(f"unexpected <{c.tag}> in <kw kwid={kwid!r}>", path=path, line=c.line)
        terms.append(KeywordTerm(kwid, text))
        info[kwid] = attrs
    header = root.attrs
    return KwList(tuple(terms), header.get("ecf_filename", ""), header.get("language", ""),
                  header.get("encoding", ""), header.get("compareNormalize", ""), header.get("version", ""), info, path)


def read_kwlist(path: str, *, encoding: str = "utf-8") -> list[KeywordTerm]:
    """The terms of a KWlist file, in file order.  FormatError (file, line) on malformed XML, a
    duplicate keyword id, an empty term or text that is not in ``encoding``."""
    return list(read_kwlist_file(path, encoding=encoding).terms)


def write_kwlist(path: str, terms: Iterable[KeywordTerm], *, ecf_filename: str = "", language: str = "",
                 version: str = "1", encoding: str = "utf-8", compare_normalize: str = "",
                 info: dict[str, dict[str, str]] | None = None) -> None:
    """Write a KWlist (atomically).  Duplicate ids and empty terms raise FormatError before anything is
    written."""
    terms = list(terms)
    seen: set[str] = set()
    for t in terms:
        if t.kwid in seen:
            raise FormatError(f"duplicate keyword id {t.kwid!r}", path=str(path))
        seen.add(t.kwid)
        if not t.text.split():
            raise FormatError(f"empty term for keyword {t.kwid!r}", path=str(path))
    # F4DE's schema (KWSEval-kwlist.xsd) allows these two encodings and these two normalizations only
    enc_name = {"utf-8": "UTF-8", "utf8": "UTF-8", "gb2312": "GB2312"}.get(encoding.lower().replace("_", "-"))
    if enc_name is None:
        raise FormatError(f"a KWlist in {encoding[:40]!r}: F4DE's schema allows only UTF-8 and GB2312", path=str(path))
    if compare_normalize not in ("", "lowercase"):
        raise FormatError(f"compareNormalize {compare_normalize[:40]!r}: F4DE's schema allows only '' and 'lowercase'",
                          path=str(path))
    with atomic_write(path, encoding=encoding) as f:
        f.write(f'<?xml version="1.0" encoding="{enc_name}"?>\n')
        f.write(f'<kwlist ecf_filename="{xml_escape(ecf_filename)}" version="{xml_escape(version)}" '
                f'language="{xml_escape(language)}" encoding="{enc_name}" '
                f'compareNormalize="{xml_escape(compare_normalize)}">\n')
        for t in terms:
            f.write(f'  <kw kwid="{xml_escape(t.kwid)}">\n    <kwtext>{xml_escape(t.text)}</kwtext>\n')
            attrs = (info or {}).get(t.kwid)
            if attrs:
                f.write("    <kwinfo>\n")
                for name, value in attrs.items():
                    f.write(f"      <attr><name>{xml_escape(name)}</name><value>{xml_escape(str(value))}</value></attr>\n")
                f.write("    </kwinfo>\n")
            f.write("  </kw>\n")
        f.write("</kwlist>\n")


__all__ = ["KwList", "read_kwlist", "read_kwlist_file", "write_kwlist"]
