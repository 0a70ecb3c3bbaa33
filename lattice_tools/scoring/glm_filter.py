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

import math
import os
import re
from collections.abc import Iterable, Sequence

from ..errors import BudgetExceededError, FormatError, LatticeToolsError
from ..io.common import atomic_write, decode_error, open_binary_input
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
                    raise BudgetExceededError(f"expanding {text!r} needs more than {max_alternatives} alternatives "
                                              f"(raise max_alternatives)")
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


def _optional_deletion_error(bad: list, path: str) -> OptionalDeletionError:
    """What csrfilt's "Can not filter text with illegally formatted optional deletion tags" becomes:
    ``bad`` holds (line number, report) of every offending line."""
    return OptionalDeletionError(
        "cannot filter text with illegally formatted optional deletion tags (csrfilt refuses too); "
        "unbalanced or nested parentheses on line(s) " + ", ".join(str(n) for n, _ in bad[:20])
        + (" ..." if len(bad) > 20 else ""), [r for _, r in bad], path=path, line=bad[0][0])


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
                 ctm_nested: str = "csrfilt", max_alternatives: int = 10000, fast: bool = True) -> str:
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
    if fast:
        return _csrfilt_text_fast(text, compiled, fmt, delete_hyphens, upcase, extended_ascii, path,
                                  ctm_nested, max_alternatives)
    return _csrfilt_text_reference(text, compiled, fmt, delete_hyphens, upcase, extended_ascii, path,
                                   ctm_nested, max_alternatives)


def _csrfilt_text_reference(text: str, compiled: CompiledGlm, fmt: str, delete_hyphens: bool, upcase: bool,
                            extended_ascii: bool, path: str, ctm_nested: str, max_alternatives: int) -> str:
    """The straightforward transcription of csrfilt.sh, stage by stage over the whole text (each
    stage a flat-map over lines, as csrfilt's pipe of Perl/C filters).  Kept as the oracle of
    :func:`_csrfilt_text_fast` (``csrfilt_text(..., fast=False)``)."""
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
        raise _optional_deletion_error(bad, path)
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


# A CTM record in its common shape: 5 or 6 fields separated by blanks/tabs only, first field not
# starting with ';' (no comment, no ';' line for the final clean-up), no brace outside the word
# (csrfilt's CTM post-processor spaces out braces on the whole line).  The fields are runs of
# characters that are neither ASCII blanks nor the latin-1 code points Python's str.split() also
# takes for blanks (\x1c-\x1f, \x85, \xa0), so Perl's split, awk-mode split and str.split()
# all cut such a line at the same places.  The word itself only goes through the transcript
# pipeline (any non-blank characters; its filtered form is checked again).
_CTM_FIELD = r"[^\s\x1c-\x1f\x85\xa0{}]+"
_CTM_SIMPLE = re.compile(rf"[ \t]*([^\s\x1c-\x1f\x85\xa0{{}};][^\s\x1c-\x1f\x85\xa0{{}}]*)[ \t]+({_CTM_FIELD})"
                         rf"[ \t]+({_CTM_FIELD})[ \t]+({_CTM_FIELD})[ \t]+(\S+)"
                         rf"(?:[ \t]+([0-9.-]+))?[ \t]*", _A)
# A filtered CTM word that stays one plain word: no blank of any kind, no brace, no '/'.
_CTM_PLAIN_WORD = re.compile(r"[^\s\x1c-\x1f\x85\xa0{}/]+", _A)


def _split_record_general(line: str, number: int, fmt: str, path: str) -> tuple[str, str]:
    """Steps 0 and 1 of :func:`_csrfilt_text_reference` on one line (without its newline):
    ``(rest of the record, transcript)``, both newline-terminated."""
    if line.startswith(";;"):
        return line + "\n", "\n"
    if not line or "\t" in line or "  " in line or line.startswith(" ") or line.endswith(" "):
        orig = _WS_RUN.sub(" ", _add_edge_spaces(line + "\n"))
    else:  # no run of blanks to collapse
        orig = " " + line + " \n"
    body = _chomp(orig)
    if fmt == "ctm":
        fields = _perl_split_ws(orig)
        word = fields.pop(5) if len(fields) > 5 else ""
        return " ".join(fields) + "\n", word + "\n"
    if fmt == "stm":
        m = _STM_WITH_LABEL.match(body) or _STM_PLAIN.match(body)
        if not m:
            raise FormatError("expected an STM record '<file> <channel> <speaker> <start> <end> ...' "
                              "(csrfilt: Parse of stm line failed)", path=path, line=number)
        return m.group(1) + "\n", m.group(2) + "\n"
    if fmt == "trn":
        m = _TRN.match(body)
        if not m:
            raise FormatError("expected a trn record ending with '(utterance-id)' "
                              "(csrfilt: Parse of trn line failed)", path=path, line=number)
        return m.group(2) + "\n", m.group(1) + "\n"
    return "\n", orig


class _LinePipeline:
    """Step 3 of csrfilt (upper-casing, rfilter1, ``-dh``, propagation of optional deletions,
    edge clean-up) as a function of one transcript line, memoized per distinct line.

    Every stage reads one line and writes text that is cut into lines again; as long as each
    stage writes exactly one newline-terminated line for each line it reads, the whole pipeline
    is a per-line map, and a line's result depends on nothing else (CompiledGlm.apply keeps no
    state between calls).  ``__call__`` returns None for a line where some stage breaks that
    (e.g. rfilter1 with ``copy_no_hit = F`` drops the newline): the caller then runs the
    reference pipeline over the whole text instead.
    """

    def __init__(self, compiled: CompiledGlm, delete_hyphens: bool, upcase: bool, extended_ascii: bool):
        self.compiled = compiled
        self.delete_hyphens = delete_hyphens
        self.upcase = upcase
        self.extended_ascii = extended_ascii
        self.memo: dict[str, str | None] = {}
        piecewise = _PiecewiseApply(compiled)
        self.apply = piecewise if piecewise.usable else compiled.apply

    def __call__(self, line: str) -> str | None:
        try:
            return self.memo[line]
        except KeyError:
            pass
        result = self.memo[line] = self._run(line)
        return result

    @staticmethod
    def _one_line(s: str) -> bool:
        return s.endswith("\n") and s.count("\n") == 1

    def _run(self, line: str) -> str | None:
        one = self._one_line
        if self.upcase:
            line = _perl_upper(line, self.extended_ascii)
        line = _add_edge_spaces(line.replace("(", "( ").replace(")", " )"))
        line = self.apply(line)
        if not one(line):
            return None
        if self.delete_hyphens:
            line = _HYPHEN.sub(r"\1 ", line)
            if not one(line):
                return None
        parens = "(" in line or ")" in line
        if parens:  # without parentheses these stages cannot match
            line = _propagate_opt_del(line)
            if not one(line):
                return None
        # _strip_one_edge_space on a line ending with its only newline
        if line.startswith(" "):
            line = line[1:]
        if line.endswith(" \n"):
            line = line[:-2] + "\n"
        if parens:
            line = _SPACE_CLOSE.sub(")", _OPEN_SPACE.sub("(", line))
        return line if one(line) else None


class _PiecewiseApply:
    """``CompiledGlm.apply`` computed blank-separated piece by piece, memoized per piece.

    Call a rule *spanning* when its left-hand side contains a space, or a context contains a
    space and is not exactly ``" "``.  No other rule can match over a space: its left-hand side
    has none, and a context without spaces must lie inside the piece (it would have to contain
    the space otherwise), while a ``" "`` context only asks whether the piece has a space
    before/after it.  So on a line where no spanning rule's left-hand side occurs (then no
    spanning rule matches anywhere, and rfilter1 runs as if they did not exist), spaces are
    never rewritten (``copy_no_hit = T``: copied) and each piece is rewritten on its own,
    knowing only whether a space precedes and follows it.  Lines where a spanning left-hand
    side occurs get the full ``apply``.  Needs ``copy_no_hit = T`` (else spaces are dropped
    and :meth:`usable` is False).
    """

    def __init__(self, compiled: CompiledGlm):
        self.compiled = compiled
        self.usable = compiled.copy_no_hit and compiled.first_chars is not None
        self.spanning = self._spanning_pattern(compiled)
        self.edge_memo: dict[tuple[str, bool, bool], str] = {}
        self.middle: dict[str, str] = {}  # pieces with a space on both sides

    @staticmethod
    def _spanning_pattern(compiled: CompiledGlm):
        """A regex finding the (folded) left-hand sides of the spanning rules, or None; kept on
        the CompiledGlm (which the GLM cache keeps too)."""
        try:
            return compiled._spanning_pattern
        except AttributeError:
            pass
        glm = compiled.glm
        spanning = []
        for rule in glm.rules:
            lhs = _to_bytes_text(rule.lhs, glm.encoding)
            if not lhs:
                continue  # never fires
            if " " in lhs or any(" " in c and c != " " for c in (rule.left_context, rule.right_context)):
                spanning.append(compiled._fold(lhs))
        pattern = re.compile("|".join(re.escape(x) for x in sorted(set(spanning)))) if spanning else None
        compiled._spanning_pattern = pattern
        return pattern

    def _piece(self, piece: str, before: bool, after: bool) -> str:
        padded = (" " if before else "") + piece + (" " if after else "")
        text = self.compiled.apply(padded)
        # the pad spaces are never part of a match and are copied through
        return text[1 if before else 0:len(text) - 1 if after else len(text)]

    def _middle(self, piece: str) -> str:
        text = self.middle[piece] = self._piece(piece, True, True)
        return text

    def _edge(self, piece: str, before: bool, after: bool) -> str:
        key = (piece, before, after)
        text = self.edge_memo.get(key)
        if text is None:
            text = self.edge_memo[key] = self._piece(piece, before, after)
        return text

    def __call__(self, line: str) -> str:
        if self.spanning is not None and self.spanning.search(self.compiled._fold(line)):
            return self.compiled.apply(line)
        pieces = line.split(" ")
        if len(pieces) == 1:
            return self._edge(line, False, False)
        middle = self.middle
        out = [middle[p] if p in middle else self._middle(p) for p in pieces[1:-1]]
        return " ".join([self._edge(pieces[0], False, True)] + out + [self._edge(pieces[-1], True, False)])


def _csrfilt_text_fast(text: str, compiled: CompiledGlm, fmt: str, delete_hyphens: bool, upcase: bool,
                       extended_ascii: bool, path: str, ctm_nested: str, max_alternatives: int) -> str:
    """:func:`_csrfilt_text_reference` with the same output and errors, faster.

    The reference runs csrfilt's stages one after the other over the whole text.  All of them
    are per-line maps as long as no stage eats or adds a newline, so here each record goes
    through all steps at once: the transcript pipeline and the optional-deletion check are
    memoized per distinct transcript (a CTM repeats few words), and CTM records of the common
    shape (5 or 6 plain fields, the filtered word still one plain word) are written directly.
    Anything else takes the reference's per-record code; a transcript some stage would merge
    with the next line (only a GLM with ``copy_no_hit = F`` or a rule writing ``(`` at the end)
    sends the whole text through the reference.  The phases keep the reference's order (all
    records split, then all checked, then filtered), so the first error raised is the same.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    n = len(lines)
    # Steps 0 and 1.  simple[i] = (file, channel, start, duration, conf or None) for CTM records
    # of the common shape (their rest of record is rebuilt only if needed).
    rest: list[str | None] = [None] * n
    txt: list[str] = [""] * n
    simple: list[tuple | None] = [None] * n
    ctm_match = _CTM_SIMPLE.fullmatch if fmt == "ctm" else None
    for i, line in enumerate(lines):
        if ctm_match is not None:
            m = ctm_match(line)
            if m is not None:
                file, chan, start, dur, word, conf = m.groups()
                simple[i] = (file, chan, start, dur, conf)
                txt[i] = word + "\n"
                continue
        rest[i], txt[i] = _split_record_general(line, i + 1, fmt, path)
    # Step 2: optional-deletion tags must be well formed (only lines with a parenthesis can fail).
    bad = []
    checked: dict[str, str | None] = {}
    for number, line in enumerate(txt, 1):
        if "(" not in line and ")" not in line:
            continue
        try:
            report = checked[line]
        except KeyError:
            report = checked[line] = _invalid_opt_del(_validation_form(line))
        if report is not None:
            bad.append((number, report))
    if bad:
        raise _optional_deletion_error(bad, path)
    # Step 3.
    pipeline = _LinePipeline(compiled, delete_hyphens, upcase, extended_ascii)
    filtered = [pipeline(line) for line in txt]
    if None in filtered:
        return _csrfilt_text_reference(text, compiled, fmt, delete_hyphens, upcase, extended_ascii, path,
                                       ctm_nested, max_alternatives)
    # Step 4 and the final clean-up.
    out: list[str] = []
    for i in range(n):
        flt = filtered[i]
        shape = simple[i]
        if shape is not None:
            word = flt[:-1]
            file, chan, start, dur, conf = shape
            if _CTM_PLAIN_WORD.fullmatch(word):
                if conf is None:
                    out.append(f"{file} {chan} {start} {dur} {word}\n")
                else:
                    begin, share = _perl_num(start), _perl_num(dur) / 1
                    out.append(f"{file} {chan} {begin + share * 0:.3f} {share:.3f} {word} {conf}\n")
                continue
            rest_i = " ".join(["", file, chan, start, dur] + ([] if conf is None else [conf])) + "\n"
        else:
            rest_i = rest[i]
        if fmt == "ctm":
            word = _chomp(flt)
            if word != "":
                rest_i = " ".join(_perl_splice_insert(_perl_split_ws(rest_i), 5, word)) + "\n"
            chunk = _ctm_alternations(rest_i, path, ctm_nested, max_alternatives)
        elif fmt == "stm":
            chunk = [_chomp(rest_i) + flt]
        elif fmt == "trn":
            chunk = [_chomp(flt) + rest_i]
        else:
            chunk = [flt]
        if chunk and not chunk[-1].endswith("\n"):
            # would run into the next record's line in the reference's final pass
            return _csrfilt_text_reference(text, compiled, fmt, delete_hyphens, upcase, extended_ascii, path,
                                           ctm_nested, max_alternatives)
        out.extend(_final_normalize_fast(line) for line in _resplit(chunk))
    return "".join(out)


def _final_normalize_fast(line: str) -> str:
    """:func:`_final_normalize` with a shortcut for a line with nothing to clean up."""
    if line.startswith(";") or not line.endswith("\n") or "\n" in line[:-1]:
        return _final_normalize(line)
    if line[0] not in " \t" and line[-2:-1] not in (" ", "\t") and "\t" not in line and "  " not in line:
        return line  # nothing to clean up
    # strip the blanks at both ends, then each run of blanks -> one space
    return " ".join([part for part in line[:-1].replace("\t", " ").split(" ") if part]) + "\n"


# ----------------------------------------------------------------------------------------------
# Public API

def _load_glm(glm, fmt: str, purpose: str | None, encoding: str) -> Glm:
    if isinstance(glm, Glm):
        return glm.select(fmt, purpose)
    return read_glm(glm, encoding=encoding, input_type=fmt, purpose=purpose)


# (key) -> (source, selected Glm, CompiledGlm); a few entries, most recently used last.
_GLM_CACHE: dict[tuple, tuple] = {}
_GLM_CACHE_SIZE = 8


def _glm_cache_key(glm, fmt: str, purpose: str | None, encoding: str):
    """Identity of what :func:`_load_glm` would return: the Glm object itself, or a regular
    file's (path, device, inode, size, modification time in ns).  None: do not cache."""
    if isinstance(glm, Glm):
        return ("glm", id(glm), fmt, purpose, encoding)
    path = str(glm)
    if path == "-":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None  # read_glm reports it
    import stat as stat_mod

    if not stat_mod.S_ISREG(st.st_mode):
        return None
    return ("file", os.path.abspath(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, fmt, purpose, encoding)


def _load_compiled_glm(glm, fmt: str, purpose: str | None, encoding: str) -> Glm | CompiledGlm:
    """:func:`_load_glm` followed by compilation for rfilter1, cached per process (the same GLM
    is applied to the reference and the hypothesis, and again by every ``ladder`` rung).

    A file is read again when its size or modification time changes.  For an unknown ``fmt``
    the Glm is returned uncompiled so that :func:`csrfilt_text` reports the format first, as
    it does without the cache."""
    key = _glm_cache_key(glm, fmt, purpose, encoding)
    if key is not None:
        hit = _GLM_CACHE.pop(key, None)
        if hit is not None and (key[0] == "file" or hit[0] is glm):
            _GLM_CACHE[key] = hit
            return hit[2]
    selected = _load_glm(glm, fmt, purpose, encoding)
    if fmt not in FORMATS:
        return selected
    compiled = CompiledGlm(selected)
    if key is not None:
        _GLM_CACHE[key] = (glm if key[0] == "glm" else None, selected, compiled)
        while len(_GLM_CACHE) > _GLM_CACHE_SIZE:
            del _GLM_CACHE[next(iter(_GLM_CACHE))]
    return compiled


def filter_text(text: str, glm, fmt: str, *, delete_hyphens: bool = False, upcase: bool = True,
                extended_ascii: bool = False, purpose: str | None = None, encoding: str = "utf-8",
                path: str = "<input>", flatten_alternations: bool = False, repair_optional: str | None = None,
                optional_words: Sequence[str] = (), optional_style: str = "parens",
                exclude_words: Sequence[str] = (), max_alternatives: int = 10000, fast: bool = True) -> str:
    """csrfilt.sh on a Python string (encoded with ``encoding`` as csrfilt would see the bytes),
    then the opt-in repairs.  With no repair option the result is byte-identical to csrfilt.sh.
    ``fast=False`` runs the straightforward reference implementation (no caches, no shortcuts;
    the oracle of the fast path's tests) -- same output, same errors.

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
    g = _load_compiled_glm(glm, fmt, purpose, encoding) if fast else _load_glm(glm, fmt, purpose, encoding)
    raw = text.encode(encoding).decode("latin-1")
    out = csrfilt_text(raw, g, fmt, delete_hyphens=delete_hyphens, upcase=upcase, extended_ascii=extended_ascii,
                       path=path, ctm_nested="flatten" if flatten_alternations else "csrfilt",
                       max_alternatives=max_alternatives, fast=fast)
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


def _same_ctm_number(token: str, value, allow_star: bool) -> bool:
    """``io.ctm._parse_number(token) == value`` without raising (a token it rejects: False)."""
    if token == "*":
        return allow_star and value is None
    try:
        number = float(token)
    except ValueError:
        return False
    return math.isfinite(number) and number == value


def _render_ctm_word(w: CtmWord) -> str:
    """``format_ctm_item(w, time_format=None, conf_format="%r")[0]`` for a CtmWord: its source
    line when ``parse_ctm_line(w.raw) == w`` (the same test, without building a CtmWord),
    else the canonical line."""
    from ..io.ctm import format_ctm_word

    raw = w.raw
    if raw is not None:
        parts = raw.rstrip("\r\n").split()
        n = len(parts)
        if (n == 5 or n == 6) and parts[0] == w.file and parts[1] == w.channel and parts[4] == w.word \
                and not parts[0].startswith(";;") \
                and _same_ctm_number(parts[2], w.start, True) and _same_ctm_number(parts[3], w.duration, True) \
                and (_same_ctm_number(parts[5], w.confidence, False) if n == 6 else w.confidence is None):
            return raw
    return format_ctm_word(w, time_format=None, conf_format="%r")


def _render_input(items_or_path, fmt: str, encoding: str, fast: bool = False) -> tuple[str, str]:
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
            raise decode_error(path, encoding, exc, data) from None
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
            if fast and type(item) is CtmWord:
                lines.append(_render_ctm_word(item))
            else:
                lines.extend(format_ctm_item(item, time_format=None, conf_format="%r"))
    elif fmt == "trn":
        lines.extend(format_trn_utterance(u) for u in items)
    return "".join(line + "\n" for line in lines), f"<{fmt} records>"


def count_nested_blocks(lines: Iterable[str]) -> int:
    """Number of ``<ALT_BEGIN>`` lines inside an open ALT block (what csrfilt makes when a GLM rule
    with an alternation rewrites a word that is already inside an ALT block)."""
    depth = nested = 0
    for line in lines:
        parts = line.split()
        if len(parts) < 5:
            continue
        if parts[4] == "<ALT_BEGIN>":
            nested += depth > 0
            depth += 1
        elif parts[4] == "<ALT_END>":
            depth = max(0, depth - 1)
    return nested


def _parse_output(out: str, fmt: str, path: str, max_alternatives: int, nested: str = "error"):
    lines = _text_lines(out)
    where = path + " (filtered)"
    if fmt == "txt":
        return out
    if fmt == "ctm":
        items = parse_ctm_lines(enumerate(lines, 1), where, nested=nested, max_alternatives=max_alternatives)
        # how many blocks were flattened (a caller warns about them)
        items.nested_blocks = count_nested_blocks(lines) if nested == "flatten" and "<ALT_BEGIN>" in out else 0
        return items
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
              exclude_words: Sequence[str] = (), max_alternatives: int = 10000, fast: bool = True,
              nested: str = "error"):
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
      fast: False runs the reference implementation (same result; the tests' oracle).
      nested: (ctm) what to do with the nested ALT blocks csrfilt's output can have:
        ``"error"`` raises FormatError (sclite would mis-score them), ``"flatten"`` reads each
        outer block as the Cartesian product of its alternatives in listed order (so sclite's
        ties still favour the earlier alternative; :func:`~lattice_tools.io.ctm.flatten_nested_block`),
        keeping csrfilt's times.  ``flatten_alternations`` implies ``"flatten"``.

    Returns: an :class:`Stm` (stm), a :class:`CtmItems` list (ctm), a ``TrnUtterances`` list
    (trn) or the filtered text (txt).
    """
    if nested not in ("error", "flatten"):
        raise ValueError(f"nested must be 'error' or 'flatten', not {nested!r}")
    if utterance_map is not None and not os.path.isfile(str(utterance_map)):
        raise FormatError("utterance map file does not exist", path=str(utterance_map))
    text, path = _render_input(items_or_path, fmt, encoding, fast=fast)
    out = filter_text(text, glm, fmt, delete_hyphens=delete_hyphens, upcase=upcase, extended_ascii=extended_ascii,
                      purpose=purpose, encoding=encoding, path=path, flatten_alternations=flatten_alternations,
                      repair_optional=repair_optional, optional_words=optional_words,
                      optional_style=optional_style, exclude_words=exclude_words,
                      max_alternatives=max_alternatives, fast=fast)
    return _parse_output(out, fmt, path, max_alternatives, nested)


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
        raise decode_error("-", encoding, exc, data) from None


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
