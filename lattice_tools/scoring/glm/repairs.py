"""The opt-in repairs sclite users need (Faria et al., sections 2.3 and 3.5), and alternation expansion.

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
  hypothesis CTM; :func:`glm_word_classes` finds those words in a GLM.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from ...core._budget import check_allocation
from ...core.errors import BudgetExceededError, FormatError
from ...io.transcripts.ctm import CtmAltBlock, CtmItems, CtmWord, flatten_nested_block
from ...io.transcripts.glm import Glm, backchannel_words, hesitation_words, read_glm

#: Bytes a word of an expanded alternative costs (a tuple slot and a list slot, then a network arc).
_WORD_BYTES = 160


def _short(text: str, n: int = 60) -> str:
    return repr(text if len(text) <= n else text[:n] + "...")


def expand_alternation(text: str, *, max_alternatives: int = 10000, where: str = "") -> list[list[str]]:
    """All word sequences of a (possibly nested) alternation text such as
    ``{RECURSIVE/RECUR {SIVE / SI VE}}`` -> ``[[RECURSIVE], [RECUR, SIVE], [RECUR, SI, VE]]``.

    Cartesian product in listed order (the first listed alternative stays first, which sclite
    prefers on ties), duplicates removed keeping the first; ``@`` is the empty sequence.
    Unbalanced braces raise FormatError; more than ``max_alternatives`` sequences, or more words than the
    memory budget holds (``--max-memory``, counted before they are made), raise BudgetExceededError.
    """
    tokens = _split_alternation_tokens(text)
    pos = 0

    def sequence(top: bool) -> list[tuple[str, ...]]:
        nonlocal pos
        # each partial sequence is a list of runs (tuples): extending it costs a run, not its words
        partial: list[list[tuple[str, ...]]] = [[]]
        run: list[str] = []
        count, words = 1, 0   # partial sequences and their words in all, counted before they are made
        while pos < len(tokens):
            tok = tokens[pos]
            if tok in ("/", "}"):
                if top:
                    raise FormatError(f"unbalanced '{tok}' in the alternation {text!r}", path=where or None)
                return materialize(partial, run, words)
            pos += 1
            if tok == "{":
                options = alternation()
                if count * len(options) > max_alternatives:
                    raise BudgetExceededError(f"expanding {text!r} needs more than {max_alternatives} alternatives "
                                              f"(raise max_alternatives)")
                words = words * len(options) + count * sum(len(o) for o in options)
                count *= len(options)
                head = [tuple(run)] if run else []
                run = []
                partial = [p + head + [o] for p in partial for o in options]
            elif tok != "@":
                run.append(tok)
                words += count
        if not top:
            raise FormatError(f"expected '}}' closing the alternation {text!r}", path=where or None)
        return materialize(partial, run, words)

    def materialize(partial, run, words) -> list[tuple[str, ...]]:
        check_allocation(words * _WORD_BYTES, f"expanding the alternation {_short(text)}"
                         f"{' of ' + where if where else ''} ({len(partial):,} alternatives, {words:,} words)",
                         advice=" or simplify the alternation")
        tail = [tuple(run)] if run else []
        return [tuple(w for r in p + tail for w in r) for p in partial]

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


def flatten_ctm_alternations(items: Iterable, *, max_alternatives: int = 10000) -> CtmItems:
    """Flatten every nested ALT block (see :func:`lattice_tools.io.transcripts.ctm.flatten_nested_block`)."""
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
    """Exclude ``words`` (case-insensitive) from a hypothesis CTM (Faria et al., section 2.3).  Inside
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
    g = glm if isinstance(glm, Glm) else read_glm(glm, encoding=encoding)
    return hesitation_words(g), backchannel_words(g)
