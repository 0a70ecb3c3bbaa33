"""csrfilt.sh (SCTK 1.17) on text, byte for byte: its stages, written once.

csrfilt.sh is a pipe of small Perl and C filters.  Here it is four steps over the records of the
input (strings of latin-1 code points standing for bytes):

0/1. :func:`split_record` -- clean up each line and separate the transcript from the rest of the
     record (STM: after the five fields and the optional ``<labels>``; trn: before ``(utterance-id)``;
     CTM: the sixth field; txt: all of it);
2.   :func:`check_optional_deletions` -- refuse unbalanced or nested optional-deletion parentheses;
3.   :class:`TranscriptStages` -- upper-casing, rfilter1, ``-dh``, propagation of ``( a b )`` into
     ``(a) (b)``, edge clean-up, over all transcripts;
4.   :func:`join_record` -- put each record back together; for CTM, :func:`ctm_alternations` turns a
     word that became several words or an alternation into one line per word (the duration shared
     evenly) and ``<ALT_BEGIN>``/``<ALT>``/``<ALT_END>`` blocks; then the final blank clean-up.

Speed comes from doing each distinct thing once, never from a second implementation: the stages
are computed once per distinct line (a CTM repeats few words), rfilter1 once per distinct
blank-separated piece (:class:`~.rfilter.PiecewiseRewriter`), and a CTM record of the common shape
(5 or 6 plain fields whose filtered word is still one plain word) is split and joined by one
regular expression instead of Perl's field splitting -- with the same result.
"""
from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence

from ...core.errors import FormatError, LatticeToolsError
from ...io.transcripts.glm import Glm
from . import perl
from .options import FORMATS, GlmFilterOptions
from .repairs import expand_alternation
from .rfilter import CompiledGlm, PiecewiseRewriter

_A = re.ASCII
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

# A CTM record in its common shape: 5 or 6 fields separated by blanks/tabs only, first field not
# starting with ';' (no comment, no ';' line for the final clean-up), no brace outside the word
# (csrfilt's CTM post-processor spaces out braces on the whole line).  The fields are runs of
# characters that are neither ASCII blanks nor the latin-1 code points Python's str.split() also
# takes for blanks (\x1c-\x1f, \x85, \xa0), so Perl's split, awk-mode split and str.split()
# all cut such a line at the same places.  The word itself only goes through the transcript
# stages (any non-blank characters; its filtered form is checked again by join_record).
_CTM_FIELD = r"[^\s\x1c-\x1f\x85\xa0{}]+"
_CTM_SIMPLE = re.compile(rf"[ \t]*([^\s\x1c-\x1f\x85\xa0{{}};][^\s\x1c-\x1f\x85\xa0{{}}]*)[ \t]+({_CTM_FIELD})"
                         rf"[ \t]+({_CTM_FIELD})[ \t]+({_CTM_FIELD})[ \t]+(\S+)"
                         rf"(?:[ \t]+([0-9.-]+))?[ \t]*", _A)
# A filtered CTM word that stays one plain word: no blank of any kind, no brace, no '/'.
_CTM_PLAIN_WORD = re.compile(r"[^\s\x1c-\x1f\x85\xa0{}/]+", _A)


class OptionalDeletionError(FormatError):
    """Unbalanced or nested optional-deletion parentheses (csrfilt.sh refuses to filter)."""

    def __init__(self, message: str, lines: Sequence[str], *, path=None, line=None):
        super().__init__(message, path=path, line=line)
        self.report_lines = list(lines)


# ----------------------------------------------------------------------------------------------
# Steps 0 and 1: one record -> (rest of the record, transcript)

def _ctm_rest(fields: tuple) -> str:
    """The rest of a CTM record of the common shape (what Perl's field splitting leaves of it)."""
    file, chan, start, dur, conf = fields
    return " ".join(["", file, chan, start, dur] + ([] if conf is None else [conf])) + "\n"


def _join_plain_ctm_word(fields: tuple, word: str) -> str:
    """The output line of a CTM record of the common shape whose filtered word is one plain word:
    csrfilt's post-processor keeps a 5-field line as it is and writes ``%.3f`` times for 6 fields."""
    file, chan, start, dur, conf = fields
    if conf is None:
        return f"{file} {chan} {start} {dur} {word}\n"
    begin, share = perl.perl_number(start), perl.perl_number(dur) / 1
    return f"{file} {chan} {begin + share * 0:.3f} {share:.3f} {word} {conf}\n"


def split_record(line: str, number: int, fmt: str, path: str) -> tuple:
    """csrfilt's clean-up of one line (without its newline) and its split into the transcript and
    the rest: ``(rest, transcript, None)``, both newline-terminated, or for a CTM record of the
    common shape ``(None, transcript, (file, channel, start, duration, confidence or None))``.
    FormatError where csrfilt's Perl dies (an STM or trn line it cannot parse)."""
    if fmt == "ctm":
        m = _CTM_SIMPLE.fullmatch(line)
        if m is not None:
            file, chan, start, dur, word, conf = m.groups()
            return None, word + "\n", (file, chan, start, dur, conf)
    if line.startswith(";;"):
        return line + "\n", "\n", None
    if not line or "\t" in line or "  " in line or line.startswith(" ") or line.endswith(" "):
        orig = perl.WS_RUN.sub(" ", perl.add_edge_spaces(line + "\n"))
    else:  # no run of blanks to collapse
        orig = " " + line + " \n"
    body = perl.chomp(orig)
    if fmt == "ctm":
        fields = perl.split_ws(orig)
        word = fields.pop(5) if len(fields) > 5 else ""
        return " ".join(fields) + "\n", word + "\n", None
    if fmt == "stm":
        m = _STM_WITH_LABEL.match(body) or _STM_PLAIN.match(body)
        if not m:
            raise FormatError("expected an STM record '<file> <channel> <speaker> <start> <end> ...' "
                              "(csrfilt: Parse of stm line failed)", path=path, line=number)
        return m.group(1) + "\n", m.group(2) + "\n", None
    if fmt == "trn":
        m = _TRN.match(body)
        if not m:
            raise FormatError("expected a trn record ending with '(utterance-id)' "
                              "(csrfilt: Parse of trn line failed)", path=path, line=number)
        return m.group(2) + "\n", m.group(1) + "\n", None
    return "\n", orig, None


# ----------------------------------------------------------------------------------------------
# Step 2: optional-deletion tags must be well formed

def _invalid_optional_deletion(line: str) -> str | None:
    """csrfilt's getInvalidOptDelTags on one transcript: what it reports if a parenthesis is left
    once every well-formed ``(...)`` group is removed, else None."""
    # csrfilt's validation form: s/\(/( /g; s/\)/ )/g; s/^/ /; s/$/ /
    s = perl.add_edge_spaces(line.replace("(", "( ").replace(")", " )"))
    s = s.replace("(", "   (")
    s = s.replace(")", ")  ", 1)
    s = _OPT_GROUP.sub("", s)
    return s if ("(" in s or ")" in s) else None


def check_optional_deletions(transcripts: Sequence[str], path: str) -> None:
    """Raise :class:`OptionalDeletionError` (csrfilt's "Can not filter text with illegally formatted
    optional deletion tags"; ``report_lines`` holds what it prints after "Look for:")."""
    bad = []
    checked: dict[str, str | None] = {}
    for number, line in enumerate(transcripts, 1):
        if "(" not in line and ")" not in line:
            continue
        try:
            report = checked[line]
        except KeyError:
            report = checked[line] = _invalid_optional_deletion(line)
        if report is not None:
            bad.append((number, report))
    if bad:
        raise OptionalDeletionError(
            "cannot filter text with illegally formatted optional deletion tags (csrfilt refuses too); "
            "unbalanced or nested parentheses on line(s) " + ", ".join(str(n) for n, _ in bad[:20])
            + (" ..." if len(bad) > 20 else ""), [r for _, r in bad], path=path, line=bad[0][0])


# ----------------------------------------------------------------------------------------------
# Step 3: the filter proper

def _space_parens(line: str) -> str:
    return perl.add_edge_spaces(line.replace("(", "( ").replace(")", " )"))


def _delete_hyphens(line: str) -> str:
    if "-" not in line:
        return line  # (the common case: a regex search costs more than this scan)
    return _HYPHEN.sub(r"\1 ", line)


def _propagate_optional_deletion(line: str) -> str:
    if "(" not in line:
        return line  # nothing to propagate
    while True:
        line, n = _PROPAGATE.subn(r"\1) ( \2", line, count=1)
        if not n:
            return line


def _strip_one_edge_space(line: str) -> str:
    # s/^ //; s/ $//
    if line.startswith(" "):
        line = line[1:]
    if line.endswith(" \n"):
        return line[:-2] + "\n"
    return line[:-1] if line.endswith(" ") else line


def _tighten_parens(line: str) -> str:
    if "(" not in line and ")" not in line:
        return line
    return _SPACE_CLOSE.sub(")", _OPEN_SPACE.sub("(", line))


class TranscriptStages:
    """Step 3 of csrfilt.sh: its stages over all transcript lines, as its pipe runs them.

    A stage reads lines and writes text that the next stage reads as lines again.  While every
    stage writes exactly one line for each line it reads, the stages are a function of each line on
    its own, computed once per distinct line.  A stage may eat or add a newline (rfilter1 with
    ``copy_no_hit = F``; a rule writing ``(`` that the last stage joins to the next line): the lines
    are then coupled, and the same stages run one after the other over the whole text, each output
    cut into lines again, exactly as the pipe does.
    """

    def __init__(self, compiled: CompiledGlm, options: GlmFilterOptions):
        self.upcase, self.extended_ascii, self.delete_hyphens = options.upcase, options.extended_ascii, \
            options.delete_hyphens
        self.rewrite = PiecewiseRewriter(compiled)
        # csrfilt's stages in order (the sequence _line follows too, unrolled: it runs once per distinct line)
        stages: list[Callable[[str], str]] = []
        if options.upcase:
            stages.append(functools.partial(perl.upper, extended_ascii=options.extended_ascii))
        stages += [_space_parens, self.rewrite]
        if options.delete_hyphens:
            stages.append(_delete_hyphens)
        stages += [_propagate_optional_deletion, _strip_one_edge_space, _tighten_parens]
        self.stages = stages

    def run(self, lines: list[str]) -> list[str]:
        memo: dict[str, str | None] = {}
        out: list[str] = []
        append = out.append
        for line in lines:
            try:
                result = memo[line]
            except KeyError:
                result = memo[line] = self._line(line)
            if result is None:
                return self._whole_text(lines)
            append(result)
        return out

    def _line(self, line: str) -> str | None:
        """All stages on one line, or None as soon as one does not write exactly one line (only rfilter1,
        the propagation and the parenthesis clean-up can eat or add a newline; the other stages keep
        the line's newline where it is)."""
        if self.upcase:
            line = perl.upper(line, self.extended_ascii)
        line = self.rewrite(_space_parens(line))
        if not line.endswith("\n") or line.count("\n") != 1:
            return None
        if self.delete_hyphens:
            line = _delete_hyphens(line)
        line = _propagate_optional_deletion(line)
        if not line.endswith("\n") or line.count("\n") != 1:
            return None
        line = _tighten_parens(_strip_one_edge_space(line))
        if not line.endswith("\n") or line.count("\n") != 1:
            return None
        return line

    def _whole_text(self, lines: list[str]) -> list[str]:
        for stage in self.stages:
            lines = perl.resplit([stage(line) for line in lines])
        return lines


# ----------------------------------------------------------------------------------------------
# Step 4: the records put back together

def ctm_alternations(line: str, path: str, nested: str = "csrfilt", max_alternatives: int = 10000) -> list[str]:
    """csrfilt's CTM post-processor: a record whose word field became several words or an
    alternation is split into one line per word, the duration shared evenly, alternations
    written as ALT blocks.  ``nested='csrfilt'`` splits on every '/' like csrfilt (wrong for
    nested alternations); ``'flatten'`` expands them properly."""
    if line.startswith(";;"):
        return [line]
    line = _LEAD_WS.sub("", line, count=1)
    line = _BRACES.sub(r" \1 ", line)
    fields = perl.split_awk(line)
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
        sets = perl.split_slash(data)
    file = fields[0] if fields else ""
    chan = fields[1] if len(fields) > 1 else ""
    start = perl.perl_number(fields[2]) if len(fields) > 2 else 0.0
    duration = perl.perl_number(fields[3]) if len(fields) > 3 else 0.0
    out = []
    if len(sets) > 1:
        out.append(f"{file} {chan} * *  <ALT_BEGIN>\n")
    for k, one in enumerate(sets):
        one = re.sub(r"[{}]", "", one)
        one = _LEAD_WS.sub("", one, count=1)
        words = perl.split_ws(one)
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


def join_record(filtered: str, record: tuple | None, fmt: str, path: str, nested: str,
                max_alternatives: int) -> list[str]:
    """The output lines of one record (:func:`split_record`): its filtered transcript put back into
    the rest of it (``record`` None: a line a stage added past the last record, with an empty rest)."""
    if fmt == "ctm":
        word = perl.chomp(filtered)
        fields = record[2] if record is not None else None
        if fields is not None and _CTM_PLAIN_WORD.fullmatch(word):
            return [_join_plain_ctm_word(fields, word)]
        rest = (record[0] if fields is None else _ctm_rest(fields)) if record is not None else ""
        if word != "":
            rest = " ".join(perl.splice_insert(perl.split_ws(rest), 5, word)) + "\n"
        return ctm_alternations(rest, path, nested, max_alternatives)
    rest = record[0] if record is not None else ""
    if fmt == "stm":
        return [perl.chomp(rest) + filtered]
    if fmt == "trn":
        return [perl.chomp(filtered) + rest]
    return [filtered]


def csrfilt_text(text: str, glm: Glm | CompiledGlm, fmt: str = "trn", options: GlmFilterOptions | None = None, *,
                 path: str = "<input>") -> str:
    """Filter ``text`` (latin-1 code points standing for bytes) exactly like
    ``csrfilt.sh [-dh] [-s] [-e] -i fmt GLM < text``.

    ``glm`` must already be restricted to the input type (``Glm.select`` / ``read_glm(input_type=)``).
    Of ``options`` this uses ``delete_hyphens``, ``upcase``, ``extended_ascii``, and for CTM
    ``flatten_alternations`` (the repair of csrfilt's expansion of nested alternations in CTM words)
    and ``max_alternatives``.  Raises :class:`OptionalDeletionError` where csrfilt refuses the
    optional-deletion tags, and FormatError where csrfilt's Perl dies (an STM or trn line it
    cannot parse, an empty CTM alternative).  The steps run in csrfilt's order (all records
    split, then all checked, then filtered), so the first error raised is csrfilt's.
    """
    if fmt not in FORMATS:
        raise LatticeToolsError(f"input format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    options = options or GlmFilterOptions()
    compiled = glm if isinstance(glm, CompiledGlm) else CompiledGlm(glm)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records = [split_record(line, number, fmt, path) for number, line in enumerate(lines, 1)]
    transcripts = [r[1] for r in records]
    check_optional_deletions(transcripts, path)
    filtered = TranscriptStages(compiled, options).run(transcripts)
    nested = "flatten" if options.flatten_alternations else "csrfilt"
    n = len(records)
    if len(filtered) > n:
        # a stage added lines past the last record: they join an empty rest and may run into the next
        # line, so the final clean-up reads the whole output cut into lines again, as csrfilt's does
        joined = [x for i, line in enumerate(filtered)
                  for x in join_record(line, records[i] if i < n else None, fmt, path, nested,
                                       options.max_alternatives)]
        return "".join([perl.final_normalize(line) for line in perl.resplit(joined)])
    # Every filtered line has its record, so every output line but the text's last ends with its only
    # newline: the final clean-up is a map over them.
    out: list[str] = []
    plain_word = _CTM_PLAIN_WORD.fullmatch
    for line, record in zip(filtered, records, strict=False):
        if record[2] is not None:
            # (join_record's first case, inline: most lines of a CTM take it; its output has nothing
            # for the final clean-up to change: single spaces, no blank at either end, no ';' first)
            word = line[:-1] if line.endswith("\n") else line
            if plain_word(word):
                out.append(_join_plain_ctm_word(record[2], word))
                continue
        out.extend([perl.final_normalize(x) for x in join_record(line, record, fmt, path, nested,
                                                                options.max_alternatives)])
    return "".join(out)
