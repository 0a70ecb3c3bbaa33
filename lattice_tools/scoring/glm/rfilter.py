"""rfilter1, the rewriting engine csrfilt.sh runs: :class:`CompiledGlm` applies a NIST1 GLM to one
record; :class:`PiecewiseRewriter` gives the same result blank-separated piece by piece, memoized."""
from __future__ import annotations

import re

from ...core.errors import FormatError
from ...io.transcripts.glm import Glm
from .perl import ASCII_UPPER


def to_bytes_text(s: str, encoding: str) -> str:
    """``s`` encoded, as latin-1 code points (one per byte): what rfilter1 compares."""
    return s.encode(encoding).decode("latin-1")


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
        spanning = []
        for rule in glm.rules:
            lhs = self.fold(to_bytes_text(rule.lhs, enc))
            if not lhs:
                continue
            left = self.fold(to_bytes_text(rule.left_context, enc))
            right = self.fold(to_bytes_text(rule.right_context, enc))
            rule_id = len(self.rules)
            self.rules.append((len(lhs), left, right, to_bytes_text(rule.rhs, enc)))
            node = self.trie
            for ch in lhs:
                node = node.setdefault(ch, {})
            node.setdefault(None, []).append(rule_id)
            if " " in lhs or any(" " in c and c != " " for c in (rule.left_context, rule.right_context)):
                spanning.append(lhs)
        first = sorted(self.trie)
        self.first_chars = re.compile("[" + "".join(re.escape(c) for c in first) + "]") if first else None
        # the folded left-hand sides of the rules that can match over a space (PiecewiseRewriter)
        self.spanning = re.compile("|".join(re.escape(x) for x in sorted(set(spanning)))) if spanning else None

    def fold(self, s: str) -> str:
        return s if self.case_sensitive else s.translate(ASCII_UPPER)

    def apply(self, line: str) -> str:
        """Rewrite one input record (including its newline, as rfilter1 reads it)."""
        if self.first_chars is None:
            return line if self.copy_no_hit else ""
        folded = self.fold(line)
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
            # the first rule (file order) firing at i: walk the trie along the input
            best = -1
            node = root
            j = i
            while j < n:
                child = node.get(folded[j])
                if child is None:
                    break
                node = child
                j += 1
                ids = node.get(None)
                if ids is not None:
                    for rule_id in ids:
                        if best != -1 and rule_id > best:
                            break
                        _, left, right, _ = rules[rule_id]
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


class PiecewiseRewriter:
    """``CompiledGlm.apply`` computed blank-separated piece by piece, memoized per piece.

    Call a rule *spanning* when its left-hand side contains a space, or a context contains a
    space and is not exactly ``" "``.  No other rule can match over a space: its left-hand side
    has none, and a context without spaces must lie inside the piece (it would have to contain
    the space otherwise), while a ``" "`` context only asks whether the piece has a space
    before/after it.  So on a line where no spanning rule's left-hand side occurs (then no
    spanning rule matches anywhere, and rfilter1 runs as if they did not exist), spaces are
    never rewritten (``copy_no_hit = T``: copied) and each piece is rewritten on its own,
    knowing only whether a space precedes and follows it.  Lines where a spanning left-hand
    side occurs get the whole-line ``apply``.  With ``copy_no_hit = F`` spaces are dropped, so
    every line gets the whole-line ``apply``.
    """

    def __init__(self, compiled: CompiledGlm):
        self.compiled = compiled
        self.piecewise = compiled.copy_no_hit and compiled.first_chars is not None
        self.edge_memo: dict[tuple[str, bool, bool], str] = {}
        self.middle: dict[str, str] = {}  # pieces with a space on both sides

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
        compiled = self.compiled
        if not self.piecewise or (compiled.spanning is not None and compiled.spanning.search(compiled.fold(line))):
            return compiled.apply(line)
        pieces = line.split(" ")
        if len(pieces) == 1:
            return self._edge(line, False, False)
        middle = self.middle
        out = [middle[p] if p in middle else self._middle(p) for p in pieces[1:-1]]
        return " ".join([self._edge(pieces[0], False, True), *out, self._edge(pieces[-1], True, False)])
