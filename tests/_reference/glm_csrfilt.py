"""The straightforward transcription of csrfilt.sh, kept as the oracle of the tests of
lattice_tools.scoring.glm (tests/test_glm_csrfilt_reference.py): each stage a flat map over all lines of the
text, as csrfilt's pipe of Perl/C filters, with no memo and no shortcut; records rendered with
``format_ctm_item`` for every CTM item; the GLM read and compiled on each call."""
from __future__ import annotations

import re

from lattice_tools.core.errors import FormatError, LatticeToolsError
from lattice_tools.io.transcripts.ctm import format_ctm_item, parse_ctm_lines
from lattice_tools.scoring.glm import GlmFilterOptions, OptionalDeletionError, perl
from lattice_tools.scoring.glm.csrfilt import ctm_alternations
from lattice_tools.scoring.glm.filtering import load_glm, parse_output, render_input
from lattice_tools.scoring.glm.options import FORMATS
from lattice_tools.scoring.glm.repairs import drop_ctm_words, optionalize_words, repair_optional_alternations

_A = re.ASCII
_STM_WITH_LABEL = re.compile(r"^(\s*\S+\s*\S+\s*\S+\s*\S+\s*\S+\s*<\S+>)(.*)$", _A)
_STM_PLAIN = re.compile(r"^(\s*\S+\s*\S+\s*\S+\s*\S+\s*\S+)(.*)$", _A)
_TRN = re.compile(r"^(.*)(\(.*\))\s*$", _A)
_OPT_GROUP = re.compile(r"\s\([^()]+\)", _A)
_HYPHEN = re.compile(r"([^( ])-(?=[^) ])", _A)
_PROPAGATE = re.compile(r"(\(\s+[^()\s]+\s+)([^()\s]+)", _A)
_OPEN_SPACE = re.compile(r"\(\s+", _A)
_SPACE_CLOSE = re.compile(r"\s+\)", _A)


def _invalid_opt_del(line: str) -> str | None:
    s = perl.add_edge_spaces(line.replace("(", "( ").replace(")", " )"))
    s = s.replace("(", "   (")
    s = s.replace(")", ")  ", 1)
    s = _OPT_GROUP.sub("", s)
    return s if ("(" in s or ")" in s) else None


def _propagate(line: str) -> str:
    while True:
        line, n = _PROPAGATE.subn(r"\1) ( \2", line, count=1)
        if not n:
            return line


def _strip_one_edge_space(line: str) -> str:
    if line.startswith(" "):
        line = line[1:]
    return re.sub(r" $", "", line, count=1)


def _final_normalize(line: str) -> str:
    if line.startswith(";"):
        return line
    line = re.sub(r"^[ \t]+", "", line, count=1)
    line = re.sub(r"[ \t]+$", "", line, count=1)
    return re.sub(r"[ \t]+", " ", line)


def _split(lines, fmt, path):
    """Steps 0 and 1: (rest of each record, its transcript)."""
    orig = [line if line.startswith(";;") else perl.WS_RUN.sub(" ", perl.add_edge_spaces(line)) for line in lines]
    ext: list[str] = []
    txt: list[str] = []
    for number, line in enumerate(orig, 1):
        if line.startswith(";;"):
            ext.append(line)
            txt.append("\n")
            continue
        body = perl.chomp(line)
        if fmt == "ctm":
            fields = perl.split_ws(line)
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
    return ext, txt


def reference_csrfilt_text(text: str, compiled, fmt: str, options: GlmFilterOptions, path: str) -> str:
    if fmt not in FORMATS:
        raise LatticeToolsError(f"input format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    ext, txt = _split([line + "\n" for line in lines], fmt, path)
    # Step 2: optional-deletion tags must be well formed.
    bad = [(number, report) for number, line in enumerate(txt, 1)
           if (report := _invalid_opt_del(line)) is not None]
    if bad:
        raise OptionalDeletionError(
            "cannot filter text with illegally formatted optional deletion tags (csrfilt refuses too); "
            "unbalanced or nested parentheses on line(s) " + ", ".join(str(n) for n, _ in bad[:20])
            + (" ..." if len(bad) > 20 else ""), [r for _, r in bad], path=path, line=bad[0][0])
    # Step 3: the filter proper.
    stage = [perl.upper(line, options.extended_ascii) if options.upcase else line for line in txt]
    stage = [perl.add_edge_spaces(line.replace("(", "( ").replace(")", " )")) for line in stage]
    stage = perl.resplit(compiled.apply(line) for line in stage)
    if options.delete_hyphens:
        stage = [_HYPHEN.sub(r"\1 ", line) for line in stage]
    stage = perl.resplit(_propagate(line) for line in stage)
    stage = perl.resplit(_strip_one_edge_space(line) for line in stage)
    stage = perl.resplit(_SPACE_CLOSE.sub(")", _OPEN_SPACE.sub("(", line)) for line in stage)
    # Step 4: put the records back together.
    nested = "flatten" if options.flatten_alternations else "csrfilt"
    out: list[str] = []
    for i, filtered in enumerate(stage):
        rest = ext[i] if i < len(ext) else ""
        if fmt == "ctm":
            word = perl.chomp(filtered)
            if word != "":
                rest = " ".join(perl.splice_insert(perl.split_ws(rest), 5, word)) + "\n"
            out.extend(ctm_alternations(rest, path, nested, options.max_alternatives))
        elif fmt == "stm":
            out.append(perl.chomp(rest) + filtered)
        elif fmt == "trn":
            out.append(perl.chomp(filtered) + rest)
        else:
            out.append(filtered)
    return "".join(_final_normalize(line) for line in perl.resplit(out))


def reference_filter_text(text: str, glm, fmt: str, options: GlmFilterOptions | None = None, *,
                          path: str = "<input>") -> str:
    """``filter_text`` with :func:`reference_csrfilt_text`."""
    options = options or GlmFilterOptions()
    options.check_repairs(fmt)
    compiled = load_glm(glm, fmt, options)
    encoding = options.encoding
    out = reference_csrfilt_text(text.encode(encoding).decode("latin-1"), compiled, fmt, options, path)
    try:
        out = out.encode("latin-1").decode(encoding)
    except UnicodeDecodeError as exc:
        raise FormatError(f"filtered text is not valid {encoding} ({exc.reason}); a GLM rule split a "
                          "multi-byte character", path=path) from None
    if fmt == "ctm" and (options.flatten_alternations or options.exclude_words):
        out = _repaired_ctm(out, path, options)
    elif fmt in ("stm", "trn", "txt") and (options.repair_optional or options.optional_words):
        out = _repaired_transcripts(out, fmt, options)
    return out


# The repairs after csrfilt (lattice-tools' own, not csrfilt's: flattened or excluded CTM words, optional
# alternations and words in references) are the package's public functions (tested against sclite in
# tests/test_glm_filter.py); what applies them to the filtered text is written here again.

def _lines(text: str) -> list[str]:
    """The lines of a text, without the empty one after its last newline."""
    lines = text.split("\n")
    return lines[:-1] if lines[-1] == "" else lines


def _repaired_ctm(out: str, path: str, options: GlmFilterOptions) -> str:
    """The filtered CTM read back (nested blocks flattened or refused), the excluded words dropped, and
    written again with its comment lines where they were."""
    lines = _lines(out)
    items = parse_ctm_lines(list(enumerate(lines, 1)), path + " (filtered)",
                            nested="flatten" if options.flatten_alternations else "error",
                            max_alternatives=options.max_alternatives)
    if options.exclude_words:
        items = drop_ctm_words(items, options.exclude_words)
    comments = list(items.comments)
    text = []
    for i, item in enumerate([*items, None]):
        text += [line for index, line in comments if index == i]
        if item is not None:
            text += format_ctm_item(item, time_format="%.3f")
    return "".join(line + "\n" for line in text)


def _repaired_transcripts(out: str, fmt: str, options: GlmFilterOptions) -> str:
    """Each record's transcript (after the STM's five fields and label, before the trn's id) repaired."""
    lines = _lines(out)
    fixed = []
    for line in lines:
        if line.startswith(";;") or not line.strip():
            fixed.append(line)
            continue
        head, words, tail = "", line.strip(), ""
        if fmt == "stm":
            m = re.match(r"^(\S+\s+\S+\s+\S+\s+\S+\s+\S+(?:\s+<[^>\s]*>)?)\s*(.*)$", line)
            if not m:
                raise FormatError(f"expected an STM record, got {line!r}")
            head, words = m.group(1), m.group(2).strip()
        elif fmt == "trn":
            m = re.match(r"^(.*?)\s*(\([^()]*\))\s*$", line)
            if not m:
                raise FormatError(f"expected a trn record, got {line!r}")
            words, tail = m.group(1).strip(), m.group(2)
        if options.repair_optional:
            words = repair_optional_alternations(words, style=options.repair_optional)
        if options.optional_words:
            words = optionalize_words(words, options.optional_words, style=options.optional_style)
        fixed.append(" ".join(x for x in (head, words, tail) if x))
    return "".join(line + "\n" for line in fixed)


def reference_apply_glm(glm, items_or_path, *, fmt: str, options: GlmFilterOptions | None = None,
                        nested: str = "error"):
    """``apply_glm`` with every CTM item rendered by ``format_ctm_item`` and :func:`reference_filter_text`."""
    options = options or GlmFilterOptions()
    if fmt == "ctm" and not isinstance(items_or_path, str) and not hasattr(items_or_path, "__fspath__"):
        lines = [line for item in items_or_path for line in format_ctm_item(item, time_format=None, conf_format="%r")]
        text, path = "".join(line + "\n" for line in lines), "<ctm records>"
    else:
        text, path = render_input(items_or_path, fmt, options.encoding)
    out = reference_filter_text(text, glm, fmt, options, path=path)
    return parse_output(out, fmt, path, options.max_alternatives, nested)
