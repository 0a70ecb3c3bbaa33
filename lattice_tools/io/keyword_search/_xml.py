"""A small, safe XML reader for NIST's keyword-search files (ECF, KWlist, kwslist).

Python's ``xml.etree`` resolves internal entities, so a ``<!DOCTYPE>`` with nested entity definitions
("billion laughs") makes it expand a few hundred bytes into gigabytes (newer expat releases cap the
amplification, older ones do not).  None of NIST's formats needs a DTD, so the parser here refuses any
``<!DOCTYPE>``, entity declaration or external reference outright (what ``defusedxml`` does), and it
reports every problem as a :class:`~lattice_tools.core.errors.FormatError` naming the file and line.

Elements are read into a light tree (:class:`XmlElement`): tag, attributes, text, children and the
line they start on, so that readers can name the line of a bad attribute.
"""
from __future__ import annotations

import codecs
import re
import xml.parsers.expat
from dataclasses import dataclass, field

from ...core.errors import FormatError
from ...core.files import read_text_bytes


@dataclass
class XmlElement:
    tag: str
    attrs: dict[str, str]
    line: int
    children: list[XmlElement] = field(default_factory=list)
    text: str = ""


class _Refused(Exception):
    def __init__(self, message: str, line: int):
        super().__init__(message)
        self.line = line


_DECL = re.compile(rb"^(\xef\xbb\xbf)?<\?xml[^>]*?encoding\s*=\s*[\"']([A-Za-z0-9._-]+)[\"']", re.S)


def read_xml_bytes(path: str) -> bytes:
    try:
        return read_text_bytes(path, what="XML")
    except OSError as exc:
        raise FormatError(f"cannot read ({exc})", path=str(path)) from None


def _line_of_offset(data: bytes, offset: int) -> int:
    return data.count(b"\n", 0, offset) + 1


def check_text_encoding(encoding: str, path: str) -> str:
    """Refuse an ``encoding`` Python does not know or that is not a text encoding; returns its name
    as an error message quotes it (at most 40 characters)."""
    shown = encoding if len(encoding) <= 40 else encoding[:40] + "..."
    try:
        info = codecs.lookup(encoding)
    except LookupError:
        raise FormatError(f"unknown text encoding {shown!r}", path=path) from None
    # Python's codec registry also holds bytes-to-bytes and text-to-text transforms (hex, base64, zlib,
    # rot13): none of them decodes a document
    if not getattr(info, "_is_text_encoding", True):
        raise FormatError(f"{shown!r} is not a text encoding (it is one of Python's codec transforms)", path=path)
    return shown


def decode_xml(data: bytes, path: str, encoding: str | None) -> str:
    """The document as text, its declaration (if any) saying UTF-8 (the encoding :func:`run_parser`
    hands to expat).

    Without ``encoding`` the bytes must be UTF-8 (or declare an encoding Python knows); a file that is
    not gives a FormatError naming the line of the first bad byte and suggesting ``--encoding``."""
    m = _DECL.match(data)
    declared = m.group(2).decode("ascii") if m else None
    enc = encoding or declared or "utf-8"
    shown = check_text_encoding(enc, path)
    try:
        text = data.decode(enc)
    except UnicodeDecodeError as exc:
        line = _line_of_offset(data, exc.start)
        hint = "" if encoding else " (give its encoding with --encoding)"
        raise FormatError(f"not valid {shown} text: byte {data[exc.start]:#04x} at offset {exc.start}{hint}",
                          path=path, line=line) from None
    except (UnicodeError, LookupError, ValueError, TypeError) as exc:
        # codecs that raise something else (punycode, undefined, ...): say so, quoting little of the reason
        reason = str(exc) if len(str(exc)) <= 80 else str(exc)[:80] + "..."
        hint = "" if encoding else " (give its encoding with --encoding)"
        raise FormatError(f"cannot decode the document as {shown} ({reason}){hint}", path=path) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    if m:
        # The text reaches expat as UTF-8, so the declaration must say so.
        text = re.sub(r"^(<\?xml[^>]*?encoding\s*=\s*[\"'])[A-Za-z0-9._-]+([\"'])", r"\g<1>UTF-8\g<2>", text,
                      count=1, flags=re.S)
    return text


def safe_parser(path: str):
    """An expat parser (UTF-8 input) that refuses DTDs, entity declarations and external references."""
    parser = xml.parsers.expat.ParserCreate("UTF-8")

    def refuse_doctype(*_args):
        raise _Refused("a <!DOCTYPE> declaration is not allowed (DTDs and entities are refused)",
                       parser.CurrentLineNumber)

    def refuse_entity(*_args):
        raise _Refused("entity declarations are not allowed", parser.CurrentLineNumber)

    def refuse_external(*_args):
        raise _Refused("external entity references are not allowed", parser.CurrentLineNumber)

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_entity
    parser.UnparsedEntityDeclHandler = refuse_entity
    parser.ExternalEntityRefHandler = refuse_external
    parser.buffer_text = True
    return parser


def run_parser(parser, path: str, data: bytes, encoding: str | None) -> None:
    """Feed the document to ``parser``; errors become FormatError naming file and line.  Handlers may
    raise FormatError themselves (it passes through)."""
    run_parser_on_text(parser, path, decode_xml(data, path, encoding))


def run_parser_on_text(parser, path: str, text: str, raw: bytes | None = None) -> None:
    """:func:`run_parser` on a document already decoded by :func:`decode_xml` from ``raw`` (if given)."""
    # ASCII bytes that decoded one character per byte are the text's UTF-8 as they are (expat's UTF-8
    # setting overrides whatever encoding their declaration names): no need to encode a copy.
    ascii_as_is = raw is not None and len(raw) == len(text) and raw.isascii()
    data = raw if ascii_as_is else text.encode("utf-8")
    try:
        parser.Parse(data, True)
    except _Refused as exc:
        raise FormatError(str(exc), path=path, line=exc.line) from None
    except xml.parsers.expat.ExpatError as exc:
        raise FormatError(f"malformed XML: {xml.parsers.expat.errors.messages[exc.code]}"
                          f" (column {exc.offset + 1})", path=path, line=exc.lineno) from None


def parse_xml(path: str, *, encoding: str | None = None, data: bytes | None = None) -> XmlElement:
    """The root element of the XML file ``path`` (``data`` if given).  DTDs and entity declarations are
    refused; malformed XML raises FormatError with the line expat stopped on."""
    path = str(path)
    if data is None:
        data = read_xml_bytes(path)
    parser = safe_parser(path)
    stack: list[XmlElement] = []
    root: list[XmlElement] = []
    texts: list[list[str]] = []

    def start(tag, attrs):
        el = XmlElement(tag, attrs, parser.CurrentLineNumber)
        if stack:
            stack[-1].children.append(el)
        else:
            root.append(el)
        stack.append(el)
        texts.append([])

    def end(tag):
        el = stack.pop()
        el.text = "".join(texts.pop())

    def chars(s):
        if texts:
            texts[-1].append(s)

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    run_parser(parser, path, data, encoding)
    if not root:
        raise FormatError("no XML element found", path=path)
    return root[0]


def xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def require_attr(el: XmlElement, name: str, path: str) -> str:
    try:
        return el.attrs[name]
    except KeyError:
        raise FormatError(f"<{el.tag}> lacks the attribute {name!r}", path=path, line=el.line) from None


def float_attr(el: XmlElement, name: str, path: str) -> float:
    import math

    raw = require_attr(el, name, path)
    try:
        value = float(raw)
    except ValueError:
        raise FormatError(f"<{el.tag} {name}=...> must be a number, got {raw!r}", path=path, line=el.line) from None
    if not math.isfinite(value):
        raise FormatError(f"<{el.tag} {name}=...> must be finite, got {raw!r}", path=path, line=el.line)
    return value


_XSD_INTEGER = re.compile(r"[+-]?[0-9]+")


def decimal_time(x: float) -> str:
    """A time in seconds as an XML Schema ``decimal`` (no exponent: ``1e-05`` -> ``0.00001``): the shortest
    decimal of its value to 15 significant digits, which is what Perl prints for a number (F4DE writes
    times so, and Kaldi's ``write_kwslist.pl`` prints frame times to 2 decimals).  A double holds 15
    significant digits exactly, so only the binary rounding error of a computed time is dropped --
    ``69 * 0.01`` (Kaldi's frame 69) is ``0.6900000000000001`` as a double and written ``0.69`` -- and a
    time read from a file with at most 15 digits is written back as it was."""
    from decimal import Decimal

    text = format(Decimal(format(float(x), ".15g")).normalize(), "f")
    return text if "." in text else text + ".0"


def check_channel(channel: str, what: str, path: str) -> None:
    """F4DE's schemas type a channel as an integer: refuse writing another (its file would be refused)."""
    if not _XSD_INTEGER.fullmatch(str(channel)):
        raise FormatError(f"{what} has channel {str(channel)[:40]!r}: F4DE's schemas require an integer channel "
                          "(e.g. 1)", path=path)
