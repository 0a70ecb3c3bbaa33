"""CTC decoding graphs: CTC topology (H) ∘ lexicon (L) ∘ grammar (G).

Two builders produce graphs for the two decoders of :mod:`lattice_tools.ctc.decode`:

* ``backend="kaldifst"`` (the ``[decode]`` extra) writes ``HLG.fst`` (or ``HL.fst`` without an LM), an
  OpenFst ``StdVectorFst`` for Kaldi's ``LatticeSimpleDecoder`` (kaldi-decoder).  Its input labels
  are **token id + 1** (the CTC blank, token 0, is input label 1; input label 0 is epsilon, i.e. a
  non-emitting arc), its output labels are word ids of ``words.txt``.
* ``backend="k2"`` (needs k2) runs icefall's ``compile_hlg.py`` recipe and writes ``HLG.pt``
  (``torch.save(HLG.as_dict())``): labels are token ids (0 = blank), ragged ``aux_labels`` are words.

Both follow the same recipe, so they encode the same weighted relation between CTC frame-label
sequences and word sequences (up to float32 rounding): ::

    L  = icefall lexicon_to_fst (optional silence, word id on the first token, #0:#0 self-loop)
    LG = det(L ∘ G)                    # tropical; disambiguation symbols make L ∘ G functional
    LG = rmeps(LG with token #k -> ε and word #0/<s>/</s> -> ε)
    HLG = H ∘ LG                       # H = standard CTC topology over tokens 0..max_token_id

Semiring: tropical for every graph operation; weights are costs (``-ln p``) in OpenFst files and
scores (``ln p``) in k2 files.  G weights are taken as given (arpa2fst writes ``-ln`` of the
base-10 ARPA log-probabilities).

Caveats:
  * Determinization and epsilon removal are tropical operations (as in Kaldi and k2): each output
    path carries the *best* L∘G weight for its label sequence, which is what both decoders expect.
  * The lexicon is ``word token token ...`` (no pronunciation probabilities).  Words of the lexicon
    missing from ``words.txt`` raise :class:`SymbolError`.
"""
from __future__ import annotations

import math
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core.errors import FormatError, LatticeToolsError, SymbolError, require
from ..core.files import atomic_write, read_text_lines
from ..core.symbols import SymbolTable
from ._fst import FstArrays, arrays_to_fst, fst_to_arrays, make_arrays

AUTO = "auto"
GRAPH_FILES = {"kaldifst": ("HLG.fst", "HL.fst"), "k2": ("HLG.pt", "HL.pt")}


# ----------------------------------------------------------------------------------------------
# Language: tokens, lexicon with disambiguation symbols, words
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lang:
    """Tokens, words and the disambiguated lexicon a graph is built from.

    ``tokens`` contains the blank (id 0), the real tokens ``1..max_token_id`` and the
    disambiguation tokens ``#0..#K`` (ids above ``max_token_id``); ``words`` contains ``#0``.
    ``lexicon`` pairs each word with its token sequence, disambiguation tokens appended.
    """

    tokens: SymbolTable
    words: SymbolTable
    lexicon: tuple[tuple[str, tuple[str, ...]], ...]
    max_token_id: int
    token_disambig_ids: tuple[int, ...]
    word_disambig_id: int
    sil_token: str | None

    @property
    def word_ids_to_epsilon(self) -> tuple[int, ...]:
        """Word ids that G may emit but that are not words (#0, <s>, </s>): removed from LG."""
        out = [i for w, i in self.words if w.startswith("#") and i != 0]
        out += [self.words.id(w) for w in ("<s>", "</s>") if w in self.words]
        return tuple(sorted(set(out)))


def read_lexicon(path) -> list[tuple[str, tuple[str, ...]]]:
    """Read ``word token token ...`` lines (a Kaldi/icefall ``lexicon.txt``)."""
    out = []
    for lineno, line in read_text_lines(str(path)):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2:
            raise FormatError(f"expected 'word token [token ...]', got {line!r}", path=str(path), line=lineno)
        out.append((parts[0], tuple(parts[1:])))
    if not out:
        raise FormatError("lexicon is empty", path=str(path))
    return out


def add_disambig_symbols(lexicon) -> tuple[list[tuple[str, tuple[str, ...]]], int]:
    """Append ``#1, #2, ...`` to pronunciations that are prefixes of others or shared by several
    words, exactly like Kaldi's ``add_lex_disambig.pl`` (and icefall's ``add_disambig_symbols``).

    Returns the new lexicon and the largest disambiguation index used (0 if none was needed;
    ``#0`` is always reserved for G's backoff arcs).
    """
    count: dict[tuple, int] = {}
    for _, pron in lexicon:
        count[pron] = count.get(pron, 0) + 1
    is_prefix = set()
    for _, pron in lexicon:
        for i in range(1, len(pron)):
            is_prefix.add(pron[:i])
    last: dict[tuple, int] = {}
    max_disambig = 0
    out = []
    for word, pron in lexicon:
        if pron in is_prefix or count[pron] > 1:
            last[pron] = last.get(pron, 0) + 1
            max_disambig = max(max_disambig, last[pron])
            out.append((word, pron + (f"#{last[pron]}",)))
        else:
            out.append((word, pron))
    return out, max_disambig


def prepare_lang(tokens, lexicon, words=None, sil_token: str | None = AUTO) -> Lang:
    """Load ``tokens.txt``, ``lexicon.txt`` and (optionally) ``words.txt`` into a :class:`Lang`.

    Args:
      tokens: path of ``tokens.txt`` (``symbol id``; id 0 is the CTC blank, whatever its name), or
        a :class:`SymbolTable`.  Disambiguation tokens ``#0..#K`` are appended when missing.
      lexicon: path of ``lexicon.txt`` or a list of ``(word, tokens)``; if it already carries
        ``#k`` tokens (a ``lexicon_disambig.txt``) it is used as is.
      words: path of ``words.txt`` or a table; default: ``<eps>``, the sorted lexicon words,
        ``#0``, ``<s>``, ``</s>`` (icefall's layout).  ``#0`` is appended when missing.
      sil_token: token for optional silence between words (icefall's ``lexicon_to_fst``);
        ``"auto"`` means ``SIL`` if the token table has it, ``None`` disables optional silence.
    """
    tok = tokens if isinstance(tokens, SymbolTable) else SymbolTable.read(str(tokens))
    lex = list(lexicon) if not isinstance(lexicon, (str, os.PathLike)) else read_lexicon(lexicon)
    lex_path = str(lexicon) if isinstance(lexicon, (str, os.PathLike)) else "<lexicon>"
    has_disambig = any(t.startswith("#") for _, pron in lex for t in pron)
    if has_disambig:
        max_disambig = max([int(t[1:]) for _, pron in lex for t in pron if t.startswith("#")] + [0])
    else:
        lex, max_disambig = add_disambig_symbols(lex)
    real = [(w, i) for w, i in tok if i != 0 and not w.startswith("#")]
    if not real:
        raise FormatError("token table has no tokens besides the blank", path=None if isinstance(tokens, SymbolTable) else str(tokens))
    max_token_id = max(i for _, i in real)
    tok = tok.with_words([f"#{k}" for k in range(max_disambig + 1)])
    disambig_ids = tuple(tok.id(f"#{k}") for k in range(max_disambig + 1))
    if min(disambig_ids) <= max_token_id:
        raise FormatError(f"disambiguation tokens must have ids above the largest real token id ({max_token_id})",
                          path=None if isinstance(tokens, SymbolTable) else str(tokens))
    for word, pron in lex:
        for t in pron:
            if t not in tok or tok.id(t) == 0:
                raise SymbolError(f"word {word!r}: token {t!r} is not in the token table (or is the blank)",
                                  path=lex_path)
    if words is None:
        names = sorted({w for w, _ in lex})
        wt = SymbolTable.from_words(names + ["#0", "<s>", "</s>"])
    else:
        wt = words if isinstance(words, SymbolTable) else SymbolTable.read(str(words))
        wt = wt.with_words(["#0"])
    for word, _ in lex:
        if word not in wt:
            raise SymbolError(f"lexicon word {word!r} is not in the word table", path=lex_path)
    if sil_token == AUTO:
        sil_token = "SIL" if "SIL" in tok else None
    if sil_token is not None and sil_token not in tok:
        raise SymbolError(f"silence token {sil_token!r} is not in the token table")
    return Lang(tokens=tok, words=wt, lexicon=tuple(lex), max_token_id=max_token_id,
                token_disambig_ids=disambig_ids, word_disambig_id=wt.id("#0"), sil_token=sil_token)


# ----------------------------------------------------------------------------------------------
# H, L, G as arc lists (shared by the kaldifst and k2 builders)
# ----------------------------------------------------------------------------------------------
def ctc_topo_arrays(max_token_id: int) -> FstArrays:
    """The standard CTC topology (k2 ``ctc_topo(modified=False)``, icefall ``build_standard_ctc_topo``)
    with **OpenFst input labels token + 1** (blank = 1) and output labels = token ids (blank and
    repeats output epsilon).  State ``i`` means "the last frame emitted token i"; all are final."""
    n = max_token_id + 1
    arcs = [(i, k, k + 1, k if i != k else 0, 0.0) for i in range(n) for k in range(n)]
    return make_arrays(n, 0, arcs, {i: 0.0 for i in range(n)})


def lexicon_arrays(lang: Lang, sil_prob: float = 0.5) -> FstArrays:
    """L with disambiguation symbols, as icefall's ``lexicon_to_fst`` builds it (``need_self_loops``):
    optional silence (probability ``sil_prob``) at the start and after each word, the word id on
    the word's first token, and a ``#0:#0`` self-loop on every state that has word outputs (so L∘G
    can pass G's backoff arcs).  Costs are ``-ln p``; the loop state is final."""
    tok, wt = lang.tokens, lang.words
    arcs = []
    if lang.sil_token is not None:
        if not 0.0 < sil_prob < 1.0:
            raise LatticeToolsError(f"sil_prob must be in (0, 1), got {sil_prob}")
        sil_cost, no_sil_cost = -math.log(sil_prob), -math.log(1.0 - sil_prob)
        start, loop, sil_state, nxt = 0, 1, 2, 3
        sil = tok.id(lang.sil_token)
        arcs += [(start, loop, 0, 0, no_sil_cost), (start, sil_state, 0, 0, sil_cost), (sil_state, loop, sil, 0, 0.0)]
    else:
        sil_cost = no_sil_cost = 0.0
        start = loop = 0
        sil_state = None
        nxt = 1
    for word, pron in lang.lexicon:
        w = wt.id(word)
        ids = [tok.id(t) for t in pron]
        cur = loop
        for i in range(len(ids) - 1):
            arcs.append((cur, nxt, ids[i], w if i == 0 else 0, 0.0))
            cur, nxt = nxt, nxt + 1
        last = len(ids) - 1
        out = w if last == 0 else 0
        arcs.append((cur, loop, ids[last], out, no_sil_cost))
        if sil_state is not None:
            arcs.append((cur, sil_state, ids[last], out, sil_cost))
    with_words = sorted({a[0] for a in arcs if a[3] != 0})
    d_tok, d_word = lang.tokens.id("#0"), lang.word_disambig_id
    arcs += [(s, s, d_tok, d_word, 0.0) for s in with_words]
    arcs.sort(key=lambda a: a[0])  # stable: keeps icefall's arc order within a state
    return make_arrays(nxt, start, arcs, {loop: 0.0})


def read_grammar(path, words: SymbolTable, *, max_order: int = -1) -> FstArrays:
    """G from an ARPA file (via kaldilm's ``arpa2fst``, ``#0`` on backoff arcs, ``<s>``/``</s>`` as
    epsilon) or from OpenFst text (``src dst ilabel olabel [cost]`` / ``state [cost]`` lines, labels
    as integers or as words of ``words``)."""
    path = str(path)
    first = ""
    for _, line in read_text_lines(path):
        if line.strip():
            first = line.strip()
            break
    if first.startswith("\\data\\"):
        return _read_arpa(path, words, max_order)
    return _read_openfst_text(path, words)


def _label(tok: str, words: SymbolTable, path: str, lineno: int) -> int:
    if tok.lstrip("-").isdigit():
        v = int(tok)
        if v < 0:
            raise FormatError(f"negative label {v}", path=path, line=lineno)
        return v
    if tok not in words:
        raise SymbolError(f"label {tok!r} is neither an integer nor a word of words.txt", path=path, line=lineno)
    return words.id(tok)


def _cost(tok: str, path: str, lineno: int) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise FormatError(f"expected a cost (float), got {tok!r}", path=path, line=lineno) from None
    if math.isnan(v) or v == -math.inf:
        raise FormatError(f"invalid cost {tok!r}", path=path, line=lineno)
    return v


def _read_openfst_text(path: str, words: SymbolTable) -> FstArrays:
    arcs, finals = [], {}
    start = None
    max_state = -1
    for lineno, line in read_text_lines(path):
        parts = line.split()
        if not parts:
            continue
        if not parts[0].isdigit():
            raise FormatError(f"expected a state number, got {parts[0]!r}", path=path, line=lineno)
        s = int(parts[0])
        if start is None:
            start = s
        if len(parts) in (1, 2):
            finals[s] = _cost(parts[1], path, lineno) if len(parts) == 2 else 0.0
            max_state = max(max_state, s)
        elif len(parts) in (4, 5):
            if not parts[1].isdigit():
                raise FormatError(f"expected a destination state, got {parts[1]!r}", path=path, line=lineno)
            d = int(parts[1])
            arcs.append((s, d, _label(parts[2], words, path, lineno), _label(parts[3], words, path, lineno),
                         _cost(parts[4], path, lineno) if len(parts) == 5 else 0.0))
            max_state = max(max_state, s, d)
        else:
            raise FormatError("expected 'src dst ilabel olabel [cost]' or 'state [cost]' (OpenFst text "
                              f"transducer), got {len(parts)} fields", path=path, line=lineno)
    if start is None:
        raise FormatError("grammar FST is empty", path=path)
    if not finals:
        raise FormatError("grammar FST has no final state", path=path)
    return make_arrays(max_state + 1, start, arcs, finals)


def _read_arpa(path: str, words: SymbolTable, max_order: int) -> FstArrays:
    kaldilm = require("kaldilm", None)
    from ..core._optional import kaldifst as _kaldifst

    kaldifst = _kaldifst()

    with tempfile.TemporaryDirectory() as tmp:
        wpath = os.path.join(tmp, "words.txt")
        # arpa2fst needs <s> and </s> in the table; with a disambiguation symbol it turns both into
        # epsilons, so ids appended here never reach the graph.
        words.with_words(["<s>", "</s>"]).write(wpath)
        fst_path = os.path.join(tmp, "G.fst")
        try:
            kaldilm.arpa2fst(input_arpa=path, output_fst=fst_path, disambig_symbol="#0",
                             read_symbol_table=wpath, max_order=max_order)
        except Exception as exc:  # kaldilm raises RuntimeError with Kaldi's message
            raise FormatError(f"arpa2fst failed: {exc}", path=path) from None
        return fst_to_arrays(kaldifst.StdVectorFst.read(fst_path))


# ----------------------------------------------------------------------------------------------
# Builders
# ----------------------------------------------------------------------------------------------
def compile_hlg_kaldifst(lang: Lang, grammar: FstArrays | None, *, sil_prob: float = 0.5):
    """H ∘ det(L ∘ G) with kaldifst (see the module docstring); ``grammar=None`` builds H ∘ det(L).

    Returns a ``kaldifst.StdVectorFst`` (input = token + 1, output = word id), ilabel-sorted.
    """
    from ..core._optional import kaldifst as _kaldifst

    kaldifst = _kaldifst()

    L = arrays_to_fst(lexicon_arrays(lang, sil_prob))
    if grammar is not None:
        G = arrays_to_fst(grammar)
        kaldifst.arcsort(L, sort_type="olabel")
        kaldifst.arcsort(G, sort_type="ilabel")
        LG = kaldifst.compose(L, G, connect=True)
    else:
        LG = L
    if LG.num_states == 0:
        raise LatticeToolsError("L∘G is empty: no word sequence of the grammar can be spelled with the lexicon")
    # Tropical determinization with a small delta: weights stay within 1e-6 of k2's.
    # (its boolean result is a debug flag, not success: non-functional input would not terminate,
    # which the disambiguation symbols rule out)
    kaldifst.determinize_star(LG, delta=1e-6)
    lg = fst_to_arrays(LG)
    il = np.where(np.isin(lg.ilabel, lang.token_disambig_ids), 0, lg.ilabel)
    ol = np.where(np.isin(lg.olabel, lang.word_ids_to_epsilon), 0, lg.olabel)
    LG = arrays_to_fst(lg.relabel(il, ol))
    kaldifst.rmepsilon(LG, connect=True, delta=1e-6)
    kaldifst.arcsort(LG, sort_type="ilabel")
    H = arrays_to_fst(ctc_topo_arrays(lang.max_token_id))
    kaldifst.arcsort(H, sort_type="olabel")
    HLG = kaldifst.compose(H, LG, connect=True)
    kaldifst.arcsort(HLG, sort_type="ilabel")
    return HLG


def compile_hlg_k2(lang: Lang, grammar: FstArrays | None, *, sil_prob: float = 0.5):
    """icefall's ``compile_hlg.py`` with k2 (the recipe of the shared k2 fixtures); returns a k2 Fsa
    with ragged word ``aux_labels`` and token ``labels`` (0 = blank)."""
    k2 = _require_k2()
    torch = require("torch", "k2")

    La = lexicon_arrays(lang, sil_prob)
    L = k2.Fsa.from_str(_k2_text(La), acceptor=False)
    if grammar is not None:
        G = k2.Fsa.from_openfst(_openfst_text(grammar), acceptor=False)
        LG = k2.compose(k2.arc_sort(L), k2.arc_sort(G))
    else:
        LG = L
    LG = k2.connect(LG)
    LG = k2.determinize(LG)
    LG = k2.connect(LG)
    first_disambig = min(lang.token_disambig_ids)
    labels = LG.labels.clone()
    labels[labels >= first_disambig] = 0
    LG.labels = labels
    aux = LG.aux_labels
    drop = torch.tensor(list(lang.word_ids_to_epsilon) or [-2], dtype=torch.int32)
    if isinstance(aux, torch.Tensor):
        aux = aux.clone()
        aux[torch.isin(aux, drop)] = 0
    else:
        vals = aux.values.clone()
        vals[torch.isin(vals, drop)] = 0
        aux = k2.RaggedTensor(aux.shape, vals)
    LG.aux_labels = aux
    LG = k2.remove_epsilon(LG)
    LG = k2.connect(LG)
    LG.aux_labels = LG.aux_labels.remove_values_eq(0)
    LG = k2.arc_sort(LG)
    H = k2.ctc_topo(lang.max_token_id, modified=False)
    HLG = k2.compose(H, LG, inner_labels="tokens")
    HLG = k2.connect(HLG)
    return k2.arc_sort(HLG)


def _k2_text(a: FstArrays) -> str:
    """k2 ``from_str`` text (scores = -cost; a super-final state reached by -1 arcs)."""
    if a.start != 0:
        raise LatticeToolsError("k2 graphs need start state 0")
    final_state = a.num_states
    rows = [(s, f"{s} {d} {i} {o} {-w + 0.0!r}") for s, d, i, o, w in
            zip(a.src.tolist(), a.dst.tolist(), a.ilabel.tolist(), a.olabel.tolist(), a.weight.tolist(), strict=False)]
    rows += [(int(s), f"{s} {final_state} -1 -1 {-float(a.final[s]) + 0.0!r}")
             for s in np.nonzero(np.isfinite(a.final))[0]]
    rows.sort(key=lambda r: r[0])  # stable: a state's final arc follows its other arcs (icefall's order)
    return "\n".join([r[1] for r in rows] + [str(final_state)])


def _openfst_text(a: FstArrays) -> str:
    order = np.argsort(a.src != a.start, kind="stable")  # start state's arcs first
    lines = [f"{a.src[k]} {a.dst[k]} {a.ilabel[k]} {a.olabel[k]} {float(a.weight[k])!r}" for k in order]
    lines += [f"{s} {float(a.final[s])!r}" for s in np.nonzero(np.isfinite(a.final))[0]]
    return "\n".join(lines)


def _require_k2():
    try:
        import k2  # noqa: F401
    except ImportError as exc:
        from ..core.errors import MissingDependencyError

        raise MissingDependencyError(
            "the k2 backend needs k2, which has no PyPI wheel for this Python: build it from source "
            f"(see docs/k2-and-ctc.md) or use the kaldifst/kaldi backend ({exc})") from None
    return k2


def build_graph(tokens, lexicon, words=None, lm=None, out=None, *, backend: str = "kaldifst",
                sil_token: str | None = AUTO, sil_prob: float = 0.5, lm_order: int = -1) -> Path:
    """Build a CTC decoding graph and write it, with its symbol tables, to the directory ``out``.

    Args:
      tokens, lexicon, words, sil_token: see :func:`prepare_lang`.
      lm: ``None`` (no grammar: a free word loop, ``HL``), an ARPA file (needs kaldilm) or an
        OpenFst text G over ``words`` (e.g. icefall's ``G.fst.txt``).
      out: output directory; it receives ``HLG.fst`` (kaldifst) or ``HLG.pt`` (k2) -- ``HL.*``
        without an LM -- plus ``tokens.txt``, ``words.txt`` (with disambiguation symbols) and
        ``lexicon_disambig.txt``.
      backend: ``"kaldifst"`` or ``"k2"``.
      lm_order: use n-grams up to this order of an ARPA LM (-1 = all).

    Returns the path of the graph file.
    """
    if backend not in GRAPH_FILES:
        raise LatticeToolsError(f"unknown graph backend {backend!r}; expected 'kaldifst' or 'k2'")
    if out is None:
        raise LatticeToolsError("build_graph needs an output directory (out=...)")
    lang = prepare_lang(tokens, lexicon, words, sil_token=sil_token)
    grammar = read_grammar(lm, lang.words, max_order=lm_order) if lm is not None else None
    name = GRAPH_FILES[backend][0 if grammar is not None else 1]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if backend == "kaldifst":
        graph = compile_hlg_kaldifst(lang, grammar, sil_prob=sil_prob)
        with atomic_write(str(out / name), "wb") as f:
            # kaldifst writes to a file name only: write beside, then stream the bytes through.
            with tempfile.TemporaryDirectory(dir=str(out)) as tmp:
                tmp_path = os.path.join(tmp, name)
                if not graph.write(tmp_path):
                    raise LatticeToolsError(f"could not write {tmp_path}")
                with open(tmp_path, "rb") as g:
                    f.write(g.read())
    else:
        torch = require("torch", "k2")
        graph = compile_hlg_k2(lang, grammar, sil_prob=sil_prob)
        with atomic_write(str(out / name), "wb") as f:
            torch.save(graph.as_dict(), f)
    lang.tokens.write(str(out / "tokens.txt"))
    lang.words.write(str(out / "words.txt"))
    with atomic_write(str(out / "lexicon_disambig.txt")) as f:
        for word, pron in lang.lexicon:
            f.write(f"{word} {' '.join(pron)}\n")
    return out / name
