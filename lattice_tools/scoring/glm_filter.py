"""Apply a NIST GLM exactly like SCTK's ``csrfilt.sh`` (version 1.17, which runs ``rfilter1``).

:func:`csrfilt_text` reproduces csrfilt.sh byte for byte on STM, CTM, trn and plain text: the same
line clean-up, the same split of a record into its transcript and the rest, the same validation of
optional-deletion parentheses, upper-casing, rfilter1's left-to-right rewriting, ``-dh`` hyphen
deletion, propagation of ``( a b )`` into ``(a) (b)``, and for CTM the conversion of alternations
into ``<ALT_BEGIN>``/``<ALT>``/``<ALT_END>`` blocks with the duration split evenly.  All of it works
on bytes (text is carried as latin-1 code points internally), as csrfilt's Perl and C do, so any
encoding gives identical output.

The repairs sclite users need (seed 001 sections 2.3 and 3.5) are separate, opt-in functions:

* :func:`flatten_ctm_alternations` -- csrfilt turns a word inside an existing ALT block that a rule
  expands into a *nested* block, and a nested alternation ``{a/b {c/d}}`` into a wrong flat one;
  sclite mis-scores both.  Flattening takes the Cartesian product (first listed first, duplicates
  dropped, bounded by a budget).
* :func:`repair_optional_alternations` -- an alternation that contains an optional word, e.g.
  ``{ (I'M) / (I AM) }`` (what a contraction rule makes of an optional contraction in an STM),
  crashes sclite; it is rewritten into the equivalent alternation with an explicit empty
  alternative ``{ I'M / I AM / @ }``.
* :func:`optionalize_words` / :func:`drop_ctm_words` -- make hesitations and/or backchannels
  optional deletions in a reference (``(%HESITATION)`` or ``@``), and exclude them from a
  hypothesis CTM.

``apply_glm(glm, items_or_path, fmt=...)`` and ``filter_file(glm_path, in_path, out_path, fmt)`` are
the public entry points.
"""
from __future__ import annotations

import os
import re
from typing import Iterable, Sequence

from ..errors import BudgetExceededError, FormatError, LatticeToolsError
from ..io.common import atomic_write, open_binary_input
from ..io.ctm import CtmAltBlock, CtmItems, CtmWord, parse_ctm_lines
from ..io.glm import Glm, read_glm
from ..io.stm import Stm, parse_stm_line
from ..io.trn import parse_trn_line

FORMATS = ("stm", "ctm", "trn", "txt")

_A = re.ASCII
_WS_RUN = re.compile(r"[ \t]+")
_STM_WITH_LABEL = re.compile(r"^(\s*\S+\s*\S+\s*\S+\s*\S+\s*\S+\s*<\S+>)(.*)$", _A)
_STM_PLAIN = re.compile(r"^(\s*\S+\s*\S+\s*\S+\s*\S+\s*\S+)(.*)$", _A)
_TRN = re.compile(r"^(.*)(\(.*\))\s*$", _A)
_OPT_GROUP = re.compile(r"\s\([^()]+\)", _A)
_HYPHEN = re.compile(r"([^( ])-(?=[^) ])", _A)
_PROPAGATE = re.compile(r"(\(\s+[^()\s]+\s+)([^()\s]+)", _A)
_OPEN_SPACE = re.compile(r"\(\s+", _A)
_SPACE_CLOSE = re.compile(r"\s+\)", _A)
_LEAD_WS = re.compile(r"^\s+", _A)
_BRACES = re.compile(r"([{}])")
_CONF = re.compile(r"^[0-9.-]*$")
_PERL_NUM = re.compile(r"^[ \t\n\r\f\v]*([+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))", _A)
_ASCII_UPPER = {c: c - 32 for c in range(ord("a"), ord("z") + 1)}
_EXT_UPPER = {c: c - 32 for c in range(0xE0, 0x100)}


# ----------------------------------------------------------------------------------------------
# Small Perl/C emulation helpers (strings are latin-1 code points standing for bytes).

def _perl_split_ws(line: str) -> list[str]:
    """Perl ``split(/\\s+/, $line)``: a leading empty field if the line starts with blanks,
    trailing empty fields removed."""
    fields = re.split(r"\s+", line, flags=_A)
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _perl_split_awk(line: str) -> list[str]:
    """Perl ``split`` without arguments (awk mode): leading blanks ignored."""
    return line.split(None) if line.strip() else []


def _perl_split_slash(data: str) -> list[str]:
    fields = data.split("/")
    while fields and fields[-1] == "":
        fields.pop()
    return fields


def _perl_num(s: str) -> float:
    """Perl's numeric value of a string: the leading decimal number, else 0."""
    m = _PERL_NUM.match(s)
    return float(m.group(1)) if m else 0.0


def _perl_splice_insert(fields: list[str], offset: int, value: str) -> list[str]:
    out = list(fields)
    out.insert(min(offset, len(out)), value)
    return out


def _resplit(chunks: Iterable[str]) -> list[str]:
    """Join stage outputs and cut them into lines again (a stage may eat or add newlines)."""
    text = "".join(chunks)
    if not text:
        return []
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def _chomp(s: str) -> str:
    return s[:-1] if s.endswith("\n") else s


# ----------------------------------------------------------------------------------------------
# rfilter1

class CompiledGlm:
    """A GLM compiled for rfilter1's rewriting.

    rfilter1 moves a cursor over the input record; at each position the first rule (file order)
    whose left-hand side matches there -- with its left context matching the *input* just before
    and its right context the input just after -- fires: its right-hand side is output and the
    cursor jumps past the left-hand side.  Otherwise the character is copied (``copy_no_hit``) or
    dropped and the cursor advances by one.  Matching folds ASCII case only when the GLM is
    case-insensitive (C's ``strncasecmp``); a left context never matches before the start of the
    record (rfilter1 would read memory before its buffer there); rules with an empty left-hand
    side never fire (rfilter1 indexes them under the NUL character).

    The left-hand sides are stored in a trie, so each position costs the length of the longest
    left-hand side matching there rather than the number of rules.
    """

    def __init__(self, glm: Glm):
        if glm.format != "NIST1":
            raise FormatError(f"GLM format {glm.format!r} cannot be applied (rfilter1 only applies NIST1)",
                              path=glm.path)
        self.glm = glm
        self.copy_no_hit = glm.copy_no_hit
        self.case_sensitive = glm.case_sensitive
        enc = glm.encoding
        self.rules: list[tuple[int, str, str, str]] = []  # (len(lhs), left, right, rhs), folded
        self.trie: dict = {}
        for index, rule in enumerate(glm.rules):
            lhs = self._fold(_to_bytes_text(rule.lhs, enc))
            if not lhs:
                continue
            left = self._fold(_to_bytes_text(rule.left_context, enc))
            right = self._fold(_to_bytes_text(rule.right_context, enc))
            rule_id = len(self.rules)
            self.rules.append((len(lhs), left, right, _to_bytes_text(rule.rhs, enc)))
            node = self.trie
            for ch in lhs:
                node = node.setdefault(ch, {})
            node.setdefault(None, []).append(rule_id)
        first = sorted(self.trie)
        self.first_chars = re.compile("[" + "".join(re.escape(c) for c in first) + "]") if first else None

    def _fold(self, s: str) -> str:
        return s if self.case_sensitive else s.translate(_ASCII_UPPER)

    def apply(self, line: str) -> str:
        """Rewrite one input record (including its newline, as rfilter1 reads it)."""
        if self.first_chars is None:
            return line if self.copy_no_hit else ""
        folded = self._fold(line)
        n = len(folded)
        out: list[str] = []
        copy_from = 0  # start of the not yet output run of copied characters
        i = 0
        search = self.first_chars.search
        rules = self.rules
        root = self.trie
        while i < n:
            m = search(folded, i)
            if m is None:
                break
            i = m.start()
            best = -1
            node = root
            j = i
            while j < n:
                node = node.get(folded[j])
                if node is None:
                    break
                j += 1
                ids = node.get(None)
                if ids is not None:
                    for rule_id in ids:
                        if best != -1 and rule_id > best:
                            break
                        length, left, right, _ = rules[rule_id]
                        if left and (i < len(left) or folded[i - len(left):i] != left):
                            continue
                        if right and folded[j:j + len(right)] != right:
                            continue
                        best = rule_id
                        break
            if best == -1:
                i += 1
                continue
            if self.copy_no_hit:
                out.append(line[copy_from:i])
            length, _, _, rhs = rules[best]
            out.append(rhs)
            i += length
            copy_from = i
        if self.copy_no_hit:
            out.append(line[copy_from:])
        return "".join(out)


def _to_bytes_text(s: str, encoding: str) -> str:
    return s.encode(encoding).decode("latin-1")


# ----------------------------------------------------------------------------------------------
# csrfilt.sh

class OptionalDeletionError(FormatError):
    """Unbalanced or nested optional-deletion parentheses (csrfilt.sh refuses to filter)."""

    def __init__(self, message: str, lines: Sequence[str], *, path=None, line=None):
        super().__init__(message, path=path, line=line)
        self.report_lines = list(lines)


def _validation_form(text: str) -> str:
    # csrfilt: s/\(/( /g; s/\)/ )/g; s/^/ /; s/$/ /
    text = text.replace("(", "( ").replace(")", " )")
    return _add_edge_spaces(text)


def _add_edge_spaces(line: str) -> str:
    """Perl ``s/^/ /; s/$/ /`` on a line that may end with a newline."""
    if line.endswith("\n"):
        return " " + line[:-1] + " \n"
    return " " + line + " "


def _invalid_opt_del(line: str) -> str | None:
    """csrfilt's getInvalidOptDelTags on one (validation-form) line: the transformed line if it
    still has a parenthesis once every well-formed ``(...)`` group is removed, else None."""
    s = line.replace("(", "   (")
    s = s.replace(")", ")  ", 1)
    s = _OPT_GROUP.sub("", s)
    return s if ("(" in s or ")" in s) else None


def _perl_upper(line: str, extended_ascii: bool) -> str:
    if line.startswith(";;"):
        return line
    line = line.translate(_ASCII_UPPER)
    return line.translate(_EXT_UPPER) if extended_ascii else line


def _propagate_opt_del(line: str) -> str:
    while True:
        line, n = _PROPAGATE.subn(r"\1) ( \2", line, count=1)
        if not n:
            return line


def _strip_one_edge_space(line: str) -> str:
    # s/^ //; s/ $//
    if line.startswith(" "):
        line = line[1:]
    return re.sub(r" $", "", line, count=1)


def _final_normalize(line: str) -> str:
    # perl -pe 'if ($_ !~ /^;/) {s/^[ \t]+//; s/[ \t]+$//; s/[ \t]+/ /g}'
    if line.startswith(";"):
        return line
    line = re.sub(r"^[ \t]+", "", line, count=1)
    line = re.sub(r"[ \t]+$", "", line, count=1)
    return _WS_RUN.sub(" ", line)


def expand_alternation(text: str, *, max_alternatives: int = 10000, where: str = "") -> list[list[str]]:
    """All word sequences of a (possibly nested) alternation text such as
    ``{RECURSIVE/RECUR {SIVE / SI VE}}`` -> ``[[RECURSIVE], [RECUR, SIVE], [RECUR, SI, VE]]``.

    Cartesian product in listed order (the first listed alternative stays first, which sclite
    prefers on ties), duplicates removed keeping the first; ``@`` is the empty sequence.
    Unbalanced braces raise FormatError; more than ``max_alternatives`` sequences raise
    BudgetExceededError.
    """
    tokens = _split_alternation_tokens(text)
    pos = 0

    def sequence(top: bool) -> list[tuple[str, ...]]:
        nonlocal pos
        partial: list[tuple[str, ...]] = [()]
        while pos < len(tokens):
            tok = tokens[pos]
            if tok in ("/", "}"):
                if top:
                    raise FormatError(f"unbalanced '{tok}' in the alternation {text!r}", path=where or None)
                return partial
            pos += 1
            if tok == "{":
                options = alternation()
                if len(partial) * len(options) > max_alternatives:
                    raise BudgetExceededError(f"expanding {text!r} needs more than {max_alternatives} alternatives")
                partial = [p + o for p in partial for o in options]
            elif tok != "@":
                partial = [p + (tok,) for p in partial]
        if not top:
            raise FormatError(f"expected '}}' closing the alternation {text!r}", path=where or None)
        return partial

    def alternation() -> list[tuple[str, ...]]:
        nonlocal pos
        options: list[tuple[str, ...]] = []
        while True:
            for seq in sequence(top=False):
                if seq not in options:
                    options.append(seq)
            tok = tokens[pos]
            pos += 1
            if tok == "}":
                return options

    return [list(seq) for seq in dict.fromkeys(sequence(top=True))]


def _ctm_alternations(line: str, path: str, nested: str = "csrfilt", max_alternatives: int = 10000) -> list[str]:
    """csrfilt's CTM post-processor: a record whose word field became several words or an
    alternation is split into one line per word, the duration shared evenly, alternations
    written as ALT blocks.  ``nested='csrfilt'`` splits on every '/' like csrfilt (wrong for
    nested alternations, see the module doc); ``'flatten'`` expands them properly."""
    if line.startswith(";;"):
        return [line]
    line = _LEAD_WS.sub("", line, count=1)
    line = _BRACES.sub(r" \1 ", line)
    fields = _perl_split_awk(line)
    if len(fields) == 5:
        return [line]
    if fields and _CONF.match(fields[-1]):
        limit, conf = len(fields) - 2, fields[-1]
    else:
        limit, conf = len(fields) - 1, ""
    count = limit - 4 + 1
    if count < 0:
        # Perl's splice with a negative length keeps that many elements at the end.
        data_fields = fields[4:len(fields) + count] if len(fields) > 4 else []
    else:
        data_fields = fields[4:4 + count]
    data = " ".join(data_fields)
    if nested == "flatten" and "{" in data:
        sets = [" ".join(seq) if seq else "@"
                for seq in expand_alternation(data, max_alternatives=max_alternatives, where=path)]
    else:
        sets = _perl_split_slash(data)
    file = fields[0] if fields else ""
    chan = fields[1] if len(fields) > 1 else ""
    start = _perl_num(fields[2]) if len(fields) > 2 else 0.0
    duration = _perl_num(fields[3]) if len(fields) > 3 else 0.0
    out = []
    if len(sets) > 1:
        out.append(f"{file} {chan} * *  <ALT_BEGIN>\n")
    for k, one in enumerate(sets):
        one = re.sub(r"[{}]", "", one)
        one = _LEAD_WS.sub("", one, count=1)
        words = _perl_split_ws(one)
        if not words:
            raise FormatError("csrfilt cannot write an empty alternative of a CTM word (Perl dies with "
                              f"'Illegal division by zero'): {line.strip()!r}", path=path)
        share = duration / len(words)
        for i, word in enumerate(words):
            out.append(f"{file} {chan} {start + share * i:.3f} {share:.3f} {word} {conf}\n")
        if len(sets) > 1 and k != len(sets) - 1:
            out.append(f"{file} {chan} * *  <ALT>\n")
    if len(sets) > 1:
        out.append(f"{file} {chan} * *  <ALT_END>\n")
    return out


def csrfilt_text(text: str, glm: Glm | CompiledGlm, fmt: str = "trn", *, delete_hyphens: bool = False,
                 upcase: bool = True, extended_ascii: bool = False, path: str = "<input>",
                 ctm_nested: str = "csrfilt", max_alternatives: int = 10000) -> str:
    """Filter ``text`` (latin-1 code points standing for bytes) exactly like
    ``csrfilt.sh [-dh] [-s] [-e] -i fmt GLM < text``.

    ``glm`` must already be restricted to the input type (``Glm.select`` / ``read_glm(input_type=)``).
    Raises :class:`OptionalDeletionError` where csrfilt prints "Can not filter text with illegally
    formatted optional deletion tags" (``report_lines`` holds what it prints after "Look for:"),
    and FormatError where csrfilt's Perl dies (an STM or trn line it cannot parse).
    ``ctm_nested='flatten'`` is the repair of csrfilt's expansion of nested alternations in CTM
    words (default ``'csrfilt'``: byte-identical to csrfilt).
    """
    if fmt not in FORMATS:
        raise LatticeToolsError(f"input format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    compiled = glm if isinstance(glm, CompiledGlm) else CompiledGlm(glm)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line + "\n" for line in lines]
    # Step 0: capture and clean up the input.
    orig = [line if line.startswith(";;") else _WS_RUN.sub(" ", _add_edge_spaces(line)) for line in lines]
    # Step 1: separate the transcript from the rest of each record.
    ext: list[str] = []
    txt: list[str] = []
    for number, line in enumerate(orig, 1):
        if line.startswith(";;"):
            ext.append(line)
            txt.append("\n")
            continue
        body = _chomp(line)
        if fmt == "ctm":
            fields = _perl_split_ws(line)
            word = fields.pop(5) if len(fields) > 5 else ""
            txt.append(word + "\n")
            ext.append(" ".join(fields) + "\n")
        elif fmt == "stm":
            m = _STM_WITH_LABEL.match(body) or _STM_PLAIN.match(body)
            if not m:
                raise FormatError("expected an STM record '<file> <channel> <speaker> <start> <end> ...' "
                                  "(csrfilt: Parse of stm line failed)", path=path, line=number)
            ext.append(m.group(1) + "\n")
            txt.append(m.group(2) + "\n")
        elif fmt == "trn":
            m = _TRN.match(body)
            if not m:
                raise FormatError("expected a trn record ending with '(utterance-id)' "
                                  "(csrfilt: Parse of trn line failed)", path=path, line=number)
            txt.append(m.group(1) + "\n")
            ext.append(m.group(2) + "\n")
        else:
            ext.append("\n")
            txt.append(line)
    # Step 2: optional-deletion tags must be well formed.
    bad = []
    for number, line in enumerate(txt, 1):
        report = _invalid_opt_del(_validation_form(line))
        if report is not None:
            bad.append((number, report))
    if bad:
        raise OptionalDeletionError(
            "cannot filter text with illegally formatted optional deletion tags (csrfilt refuses too); "
            "unbalanced or nested parentheses on line(s) " + ", ".join(str(n) for n, _ in bad[:20])
            + (" ..." if len(bad) > 20 else ""), [r for _, r in bad], path=path, line=bad[0][0])
    # Step 3: the filter proper.
    stage = [_perl_upper(line, extended_ascii) if upcase else line for line in txt]
    stage = [_add_edge_spaces(line.replace("(", "( ").replace(")", " )")) for line in stage]
    stage = _resplit(compiled.apply(line) for line in stage)
    if delete_hyphens:
        stage = [_HYPHEN.sub(r"\1 ", line) for line in stage]
    stage = _resplit(_propagate_opt_del(line) for line in stage)
    stage = _resplit(_strip_one_edge_space(line) for line in stage)
    stage = _resplit(_SPACE_CLOSE.sub(")", _OPEN_SPACE.sub("(", line)) for line in stage)
    # Step 4: put the records back together.
    out: list[str] = []
    for i, filtered in enumerate(stage):
        rest = ext[i] if i < len(ext) else ""
        if fmt == "ctm":
            word = _chomp(filtered)
            if word != "":
                rest = " ".join(_perl_splice_insert(_perl_split_ws(rest), 5, word)) + "\n"
            out.extend(_ctm_alternations(rest, path, ctm_nested, max_alternatives))
        elif fmt == "stm":
            out.append(_chomp(rest) + filtered)
        elif fmt == "trn":
            out.append(_chomp(filtered) + rest)
        else:
            out.append(filtered)
    return "".join(_final_normalize(line) for line in _resplit(out))


# ----------------------------------------------------------------------------------------------
# Public API

def _load_glm(glm, fmt: str, purpose: str | None, encoding: str) -> Glm:
    if isinstance(glm, Glm):
        return glm.select(fmt, purpose)
    return read_glm(glm, encoding=encoding, input_type=fmt, purpose=purpose)


def filter_text(text: str, glm, fmt: str, *, delete_hyphens: bool = False, upcase: bool = True,
                extended_ascii: bool = False, purpose: str | None = None, encoding: str = "utf-8",
                path: str = "<input>", flatten_alternations: bool = False, repair_optional: str | None = None,
                optional_words: Sequence[str] = (), optional_style: str = "parens",
                exclude_words: Sequence[str] = (), max_alternatives: int = 10000) -> str:
    """csrfilt.sh on a Python string (encoded with ``encoding`` as csrfilt would see the bytes),
    then the opt-in repairs.  With no repair option the result is byte-identical to csrfilt.sh.

    Repairs: ``flatten_alternations`` (ctm): expand nested alternations properly and flatten
    nested ALT blocks; ``repair_optional`` (stm/trn): ``"parens"`` or ``"at"``, rewrite the
    optional alternations that crash sclite (:func:`repair_optional_alternations`);
    ``optional_words`` (stm/trn): make these words optional deletions (:func:`optionalize_words`);
    ``exclude_words`` (ctm): drop these words from the hypothesis (:func:`drop_ctm_words`).
    """
    if fmt == "ctm" and (repair_optional or optional_words):
        raise LatticeToolsError("repair_optional/optional_words apply to stm/trn references, not ctm")
    if fmt != "ctm" and (flatten_alternations or exclude_words):
        raise LatticeToolsError("flatten_alternations/exclude_words apply to ctm hypotheses only")
    g = _load_glm(glm, fmt, purpose, encoding)
    raw = text.encode(encoding).decode("latin-1")
    out = csrfilt_text(raw, g, fmt, delete_hyphens=delete_hyphens, upcase=upcase, extended_ascii=extended_ascii,
                       path=path, ctm_nested="flatten" if flatten_alternations else "csrfilt",
                       max_alternatives=max_alternatives)
    try:
        out = out.encode("latin-1").decode(encoding)
    except UnicodeDecodeError as exc:
        raise FormatError(f"filtered text is not valid {encoding} ({exc.reason}); a GLM rule split a "
                          "multi-byte character", path=path) from None
    if fmt == "ctm" and (flatten_alternations or exclude_words):
        out = _repair_ctm_text(out, path, flatten_alternations, exclude_words, max_alternatives)
    elif fmt in ("stm", "trn", "txt") and (repair_optional or optional_words):
        out = _repair_transcripts(out, fmt, repair_optional, optional_words, optional_style)
    return out


def _text_lines(text: str) -> list[str]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def _repair_ctm_text(out: str, path: str, flatten: bool, exclude_words: Sequence[str], max_alternatives: int) -> str:
    from ..io.ctm import format_ctm_item

    items = parse_ctm_lines(enumerate(_text_lines(out), 1), path + " (filtered)",
                            nested="flatten" if flatten else "error", max_alternatives=max_alternatives)
    if exclude_words:
        items = drop_ctm_words(items, exclude_words)
    by_index: dict[int, list[str]] = {}
    for index, line in items.comments:
        by_index.setdefault(index, []).append(line)
    lines: list[str] = []
    for i, item in enumerate(items):
        lines.extend(by_index.get(i, ()))
        lines.extend(format_ctm_item(item, time_format="%.3f"))
    lines.extend(by_index.get(len(items), ()))
    return "".join(line + "\n" for line in lines)


def _repair_transcripts(out: str, fmt: str, repair_optional: str | None, optional_words: Sequence[str],
                        optional_style: str) -> str:
    fixed = []
    for line in _text_lines(out):
        if line.startswith(";;") or not line.strip():
            fixed.append(line)
            continue
        prefix, transcript, suffix = _split_record(line, fmt)
        if repair_optional:
            transcript = repair_optional_alternations(transcript, style=repair_optional)
        if optional_words:
            transcript = optionalize_words(transcript, optional_words, style=optional_style)
        fixed.append(" ".join(x for x in (prefix, transcript, suffix) if x))
    return "".join(line + "\n" for line in fixed)


def _split_record(line: str, fmt: str) -> tuple[str, str, str]:
    if fmt == "txt":
        return "", line.strip(), ""
    if fmt == "stm":
        m = re.match(r"^(\S+\s+\S+\s+\S+\s+\S+\s+\S+(?:\s+<[^>\s]*>)?)\s*(.*)$", line)
        if not m:
            raise FormatError(f"expected an STM record, got {line!r}")
        return m.group(1), m.group(2).strip(), ""
    m = re.match(r"^(.*?)\s*(\([^()]*\))\s*$", line)
    if not m:
        raise FormatError(f"expected a trn record, got {line!r}")
    return "", m.group(1).strip(), m.group(2)


def _render_input(items_or_path, fmt: str, encoding: str) -> tuple[str, str]:
    """The text csrfilt would read: a file's content, or records written in their format."""
    from ..io.ctm import format_ctm_item
    from ..io.stm import format_stm_segment
    from ..io.trn import format_trn_utterance

    if isinstance(items_or_path, os.PathLike) or (isinstance(items_or_path, str) and fmt != "txt"):
        path = str(items_or_path)
        with open_binary_input(path) as f:
            data = f.read()
        try:
            return data.decode(encoding), path
        except UnicodeDecodeError as exc:
            raise FormatError(f"not valid {encoding} text ({exc.reason} at byte {exc.start})", path=path) from None
    items = items_or_path
    if fmt == "txt":
        if isinstance(items, str):
            return items, "<text>"
        return "".join(line.rstrip("\n") + "\n" for line in items), "<text>"
    lines: list[str] = []
    if fmt == "stm":
        if isinstance(items, Stm):
            lines.extend(items.header)
            items = items.segments
        lines.extend(format_stm_segment(s) for s in items)
    elif fmt == "ctm":
        for item in items:
            # lossless times: csrfilt copies time fields through as text
            lines.extend(format_ctm_item(item, time_format=None, conf_format="%r"))
    elif fmt == "trn":
        lines.extend(format_trn_utterance(u) for u in items)
    return "".join(line + "\n" for line in lines), f"<{fmt} records>"


def _parse_output(out: str, fmt: str, path: str, max_alternatives: int):
    lines = _text_lines(out)
    where = path + " (filtered)"
    if fmt == "txt":
        return out
    if fmt == "ctm":
        return parse_ctm_lines(enumerate(lines, 1), where, nested="error", max_alternatives=max_alternatives)
    if fmt == "stm":
        segments, header, layout = [], [], []
        for n, line in enumerate(lines, 1):
            seg = parse_stm_line(line, where, n)
            if seg is None:
                if line.strip().startswith(";;"):
                    header.append(line)
                layout.append((len(segments), line))
            else:
                segments.append(seg)
        return Stm(tuple(segments), tuple(header), path, tuple(layout))
    from ..io.trn import TrnUtterances

    utts = TrnUtterances(path=path)
    for n, line in enumerate(lines, 1):
        utt = parse_trn_line(line, where, n)
        if utt is None:
            utts.comments.append((len(utts), line))
        else:
            utts.append(utt)
    return utts


def apply_glm(glm, items_or_path, *, fmt: str, delete_hyphens: bool = False, upcase: bool = True,
              extended_ascii: bool = False, purpose: str | None = None, encoding: str = "utf-8",
              utterance_map=None, flatten_alternations: bool = False, repair_optional: str | None = None,
              optional_words: Sequence[str] = (), optional_style: str = "parens",
              exclude_words: Sequence[str] = (), max_alternatives: int = 10000):
    """Apply a GLM like ``csrfilt.sh`` and return parsed records.

    Args:
      glm: a :class:`~lattice_tools.io.glm.Glm` or a GLM file name.
      items_or_path: a file name (for ``txt``: a ``Path``; a ``str`` is the text itself), or
        records: an :class:`Stm` or StmSegments (``fmt='stm'``), CtmWord/CtmAltBlock items
        (``'ctm'``), TrnUtterances (``'trn'``), or a list of lines (``'txt'``).
      fmt: ``stm``, ``ctm``, ``trn`` or ``txt`` (csrfilt's ``-i``).
      delete_hyphens: csrfilt ``-dh``; ``upcase=False`` is ``-s``; ``extended_ascii`` is ``-e``;
        ``purpose`` is ``-t ref|hyp`` (selects INPUT_DEPENDENT_APPLICATION sections too).
      utterance_map: csrfilt's optional second map file.  csrfilt.sh 1.17 checks that it exists and
        then never applies it to stm/ctm/trn/txt input (its only use is in a branch no ``-i``
        value reaches); the same is done here.
      flatten_alternations, repair_optional, optional_words, optional_style, exclude_words,
        max_alternatives: the opt-in repairs of :func:`filter_text`.

    Returns: an :class:`Stm` (stm), a :class:`CtmItems` list (ctm), a ``TrnUtterances`` list
    (trn) or the filtered text (txt).  Without ``flatten_alternations`` a CTM whose filtering
    made nested ALT blocks raises FormatError (sclite would mis-score it).
    """
    if utterance_map is not None and not os.path.isfile(str(utterance_map)):
        raise FormatError("utterance map file does not exist", path=str(utterance_map))
    text, path = _render_input(items_or_path, fmt, encoding)
    out = filter_text(text, glm, fmt, delete_hyphens=delete_hyphens, upcase=upcase, extended_ascii=extended_ascii,
                      purpose=purpose, encoding=encoding, path=path, flatten_alternations=flatten_alternations,
                      repair_optional=repair_optional, optional_words=optional_words,
                      optional_style=optional_style, exclude_words=exclude_words,
                      max_alternatives=max_alternatives)
    return _parse_output(out, fmt, path, max_alternatives)


def filter_file(glm_path, in_path, out_path, fmt: str, delete_hyphens: bool = False, *, upcase: bool = True,
                extended_ascii: bool = False, purpose: str | None = None, utterance_map=None,
                encoding: str = "utf-8", flatten_alternations: bool = False, repair_optional: str | None = None,
                optional_words: Sequence[str] = (), optional_style: str = "parens",
                exclude_words: Sequence[str] = (), max_alternatives: int = 10000) -> None:
    """``csrfilt.sh [-dh] -i fmt glm_path [utterance_map] < in_path > out_path`` plus the opt-in
    repairs of :func:`filter_text`.  Without repairs the output is byte-identical to csrfilt.sh.
    ``in_path``/``out_path`` may be ``-``; the output is written atomically."""
    if utterance_map is not None and not os.path.isfile(str(utterance_map)):
        raise FormatError("utterance map file does not exist", path=str(utterance_map))
    from pathlib import Path

    if str(in_path) == "-":
        text, path = _read_stdin(encoding), "-"
    else:
        text, path = _render_input(Path(in_path), fmt, encoding)
    out = filter_text(text, glm_path, fmt, delete_hyphens=delete_hyphens, upcase=upcase,
                      extended_ascii=extended_ascii, purpose=purpose, encoding=encoding, path=path,
                      flatten_alternations=flatten_alternations, repair_optional=repair_optional,
                      optional_words=optional_words, optional_style=optional_style,
                      exclude_words=exclude_words, max_alternatives=max_alternatives)
    with atomic_write(str(out_path), "w", encoding=encoding) as f:
        f.write(out)


def _read_stdin(encoding: str) -> str:
    with open_binary_input("-") as f:
        data = f.read()
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise FormatError(f"not valid {encoding} text ({exc.reason} at byte {exc.start})", path="-") from None


# ----------------------------------------------------------------------------------------------
# Repairs (seed 001 sections 2.3 and 3.5)

def flatten_ctm_alternations(items: Iterable, *, max_alternatives: int = 10000) -> CtmItems:
    """Flatten every nested ALT block (see :func:`lattice_tools.io.ctm.flatten_nested_block`)."""
    from ..io.ctm import flatten_nested_block

    comments = getattr(items, "comments", [])
    out = []
    for item in items:
        if isinstance(item, CtmAltBlock) and any(isinstance(w, CtmAltBlock) for alt in item.alternatives for w in alt):
            item = flatten_nested_block(item, max_alternatives=max_alternatives)
        out.append(item)
    return CtmItems(out, comments, getattr(items, "path", ""))


def _split_alternation_tokens(text: str) -> list[str]:
    return re.sub(r"([{}/])", r" \1 ", text).split()


def _unwrap_optional_syntax(tokens: list[str]) -> list[str]:
    """Move braces and slashes out of parentheses: csrfilt's ``({I'M) (/) (I) (AM})`` (its
    propagation of an optional deletion over a rule's alternation) -> ``{ (I'M) / (I) (AM) }``."""
    out: list[str] = []
    for tok in tokens:
        if len(tok) > 2 and tok[0] == "(" and tok[-1] == ")":
            inner = tok[1:-1]
            if inner == "/":
                out.append("/")
                continue
            lead = len(inner) - len(inner.lstrip("{"))
            trail = len(inner) - len(inner.rstrip("}"))
            if lead or trail:
                core = inner[lead:len(inner) - trail]
                out.extend("{" * lead)
                if core == "/":
                    out.append("/")
                elif core:
                    out.append(f"({core})")
                out.extend("}" * trail)
                continue
        out.append(tok)
    return out


def repair_optional_alternations(text: str, style: str = "parens") -> str:
    """Rewrite optional-deletion alternations into forms sclite can score.

    csrfilt propagates an optional deletion over what a rule wrote, so ``(I'M)`` with the rule
    ``I'M => {I'M / I AM}`` becomes ``({I'M) (/) (I) (AM})`` -- and sclite (Debian 2.4.10) dies with
    a segmentation fault on it.  ``style='parens'`` moves the braces and slashes out of the
    parentheses, ``{ (I'M) / (I) (AM) }``, which sclite scores as csrfilt meant (each word
    optional with ``-D``).  ``style='at'`` instead turns every alternation holding optional words
    into plain alternatives plus the empty one, ``{ I'M / I AM / @ }`` (optional even without
    ``-D``).  Text without parentheses is returned unchanged.
    """
    if style not in ("parens", "at"):
        raise ValueError("style must be 'parens' or 'at'")
    if "(" not in text:
        return text
    tokens = _unwrap_optional_syntax(_split_alternation_tokens_keep_parens(text))
    if style == "parens" or "{" not in tokens:
        return " ".join(tokens)
    out: list[str] = []
    stack: list[list[list[str]]] = []
    for tok in tokens:
        if tok == "{":
            stack.append([[]])
        elif tok == "/" and stack:
            stack[-1].append([])
        elif tok == "}" and stack:
            alts = stack.pop()
            rendered = _render_alternation(alts)
            (stack[-1][-1] if stack else out).extend(rendered)
        else:
            (stack[-1][-1] if stack else out).append(tok)
    while stack:  # unbalanced: give the tokens back untouched
        alts = stack.pop()
        flat = ["{"] + [t for k, a in enumerate(alts) for t in (["/"] if k else []) + a]
        (stack[-1][-1] if stack else out).extend(flat)
    return " ".join(out)


def _split_alternation_tokens_keep_parens(text: str) -> list[str]:
    """Split on blanks, and split braces/slashes off words that are not parenthesised."""
    out = []
    for tok in text.split():
        if tok.startswith("(") and tok.endswith(")"):
            out.append(tok)
        else:
            out.extend(_split_alternation_tokens(tok))
    return out


def _is_optional(tok: str) -> bool:
    return len(tok) > 2 and tok.startswith("(") and tok.endswith(")")


def _render_alternation(alts: list[list[str]]) -> list[str]:
    has_optional = any(_is_optional(t) for a in alts for t in a)
    if not has_optional:
        return ["{"] + [t for k, a in enumerate(alts) for t in (["/"] if k else []) + a] + ["}"]
    new_alts: list[list[str]] = []
    need_empty = False
    for a in alts:
        if a and all(_is_optional(t) or t == "@" for t in a):
            need_empty = True
        stripped = [t[1:-1] if _is_optional(t) else t for t in a]
        stripped = [t for t in stripped if t != "@"] or ["@"]
        if stripped == ["@"]:
            need_empty = True
            continue
        if stripped not in new_alts:
            new_alts.append(stripped)
    if need_empty:
        new_alts.append(["@"])
    return ["{"] + [t for k, a in enumerate(new_alts) for t in (["/"] if k else []) + a] + ["}"]


def optionalize_words(text: str, words: Sequence[str], *, style: str = "parens") -> str:
    """Make ``words`` (case-insensitive) optional deletions in a reference transcript.

    ``style='parens'`` writes ``(UH)`` (sclite's optional word, counted correct when matched and
    not an error when deleted); ``style='at'`` writes ``{ UH / @ }``.  Words inside alternations
    and already optional words are left alone.
    """
    if style not in ("parens", "at"):
        raise ValueError("style must be 'parens' or 'at'")
    wanted = {w.upper() for w in words}
    out = []
    depth = 0
    for tok in _split_alternation_tokens(text):
        if tok == "{":
            depth += 1
        elif tok == "}":
            depth = max(0, depth - 1)
        elif depth == 0 and tok.upper() in wanted:
            tok = f"({tok})" if style == "parens" else "{ " + tok + " / @ }"
        out.append(tok)
    return " ".join(out)


def drop_ctm_words(items: Iterable, words: Sequence[str]) -> CtmItems:
    """Exclude ``words`` (case-insensitive) from a hypothesis CTM (seed 001 section 2.3).  Inside
    an ALT block the words are removed from each alternative (an emptied alternative becomes
    ``@``); a block left with one alternative is replaced by its words."""
    wanted = {w.upper() for w in words}
    comments = getattr(items, "comments", [])
    old_to_new: dict[int, int] = {}
    out: list = []
    for index, item in enumerate(items):
        old_to_new[index] = len(out)
        if isinstance(item, CtmWord):
            if item.word.upper() not in wanted:
                out.append(item)
            continue
        alts = []
        for alt in item.alternatives:
            kept = tuple(w for w in alt if not (isinstance(w, CtmWord) and w.word.upper() in wanted))
            if kept not in alts:
                alts.append(kept)
        if len(alts) == 1:
            out.extend(alts[0])
        else:
            out.append(CtmAltBlock(item.file, item.channel, tuple(alts), item.lineno))
    old_to_new[len(list(items)) if not isinstance(items, list) else len(items)] = len(out)
    return CtmItems(out, [(old_to_new.get(i, len(out)), line) for i, line in comments], getattr(items, "path", ""))


def glm_word_classes(glm, *, encoding: str = "utf-8") -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(hesitation words, backchannel words) of a GLM: ``%HESITATION`` and every single word the
    GLM maps to it; ``%BCACK``/``%BCNACK`` and every word mapped to them (RT-03 GLM conventions)."""
    from ..io.glm import backchannel_words, hesitation_words

    g = glm if isinstance(glm, Glm) else read_glm(glm, encoding=encoding)
    return hesitation_words(g), backchannel_words(g)
