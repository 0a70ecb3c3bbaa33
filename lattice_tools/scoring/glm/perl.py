"""The few Perl and C behaviours csrfilt.sh relies on, emulated on strings of latin-1 code points
standing for bytes (csrfilt's Perl and rfilter1 work on bytes, so any encoding filters the same)."""
from __future__ import annotations

import re
from collections.abc import Iterable

ASCII = re.ASCII
WS_RUN = re.compile(r"[ \t]+")
_PERL_NUM = re.compile(r"^[ \t\n\r\f\v]*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))", ASCII)
ASCII_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_EXT_UPPER = {c: c - 32 for c in range(0xE0, 0x100)}


def split_ws(line: str) -> list[str]:
    """Perl ``split(/\\s+/, $line)``: a leading empty field if the line starts with blanks,
    trailing empty fields removed."""
    fields = re.split(r"\s+", line, flags=ASCII)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def split_awk(line: str) -> list[str]:
    """Perl ``split`` without arguments (awk mode): leading blanks ignored."""
    return line.split(None) if line.strip() else []


def split_slash(data: str) -> list[str]:
    """Perl ``split(/\\//, $data)``: trailing empty fields removed."""
    fields = data.split("/")
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def perl_number(s: str) -> float:
    """Perl's numeric value of a string: the leading decimal number, else 0."""
    m = _PERL_NUM.match(s)
    return float(m.group(1)) if m else 0.0


def splice_insert(fields: list[str], offset: int, value: str) -> list[str]:
    """Perl ``splice(@fields, $offset, 0, $value)`` (an offset past the end appends)."""
    out = list(fields)
    out.insert(min(offset, len(out)), value)
    return out


def resplit(chunks: Iterable[str]) -> list[str]:
    """Join stage outputs and cut them into lines again (a stage of a pipe may eat or add newlines)."""
    text = "".join(chunks)
    if not text:
        return []
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def chomp(s: str) -> str:
    return s[:-1] if s.endswith("\n") else s


def upper(line: str, extended_ascii: bool) -> str:
    """csrfilt's upper-casing: ASCII letters (and Latin-1 ones with ``-e``), not ';;' lines."""
    if line.startswith(";;"):
        return line
    line = line.translate(ASCII_UPPER)
    return line.translate(_EXT_UPPER) if extended_ascii else line


def add_edge_spaces(line: str) -> str:
    """Perl ``s/^/ /; s/$/ /`` on a line that may end with a newline."""
    if line.endswith("\n"):
        return " " + line[:-1] + " \n"
    return " " + line + " "


def final_normalize(line: str) -> str:
    """csrfilt's last stage, ``perl -pe 'if ($_ !~ /^;/) {s/^[ \\t]+//; s/[ \\t]+$//; s/[ \\t]+/ /g}'``."""
    if line.startswith(";"):
        return line
    if line.endswith("\n") and "\n" not in line[:-1]:
        if line[0] not in " \t" and line[-2:-1] not in (" ", "\t") and "\t" not in line and "  " not in line:
            return line  # nothing to clean up (the common case)
        # strip the blanks at both ends, then each run of blanks -> one space
        return " ".join([part for part in line[:-1].replace("\t", " ").split(" ") if part]) + "\n"
    line = re.sub(r"^[ \t]+", "", line, count=1)
    line = re.sub(r"[ \t]+$", "", line, count=1)
    return WS_RUN.sub(" ", line)
