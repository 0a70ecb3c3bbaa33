"""The punctuation- and case-aware alignment engine: the extended-Levenshtein DP and backtrace of
:func:`~lattice_tools.metrics.punctuation.score_orthography_many` (a corpus) and of
:func:`~lattice_tools.metrics.punctuation.score_orthography` / ``extended_align`` (one pair: a
batch of one, whose backtrace also returns the route), with almost no Python per token or per DP
cell.  The rules it applies are :mod:`~lattice_tools.metrics.orthography_rules`; the tokens arrive
as integers (:mod:`~lattice_tools.metrics.orthography_vocabulary`).  The per-pair transcription of
Kuhn et al. (Beyond Levenshtein) it is tested against lives in ``tests/_reference/orthography.py``.

* **DP over a batch.**  The recursion (doubled integer costs) runs for a batch of similar-length
  utterances as one numpy row recursion over padded ``(n+1, m+1, B)`` arrays (utterance axis
  last: each step is one vector operation over the batch; int16 while the costs fit); a cell
  depends only on cells above and to its left, so padding never reaches a real cell.  The
  recursion runs on ``E = D - C`` (``C`` = cumulative insertion costs of the hypothesis prefix),
  which turns a row's insertion chain into a plain prefix minimum.  Substitution costs are
  broadcast comparisons of the id arrays.
* **Compounds only where they can occur.**  :func:`~lattice_tools.metrics.orthography_rules.find_compounds`
  returns matches only when some reference and hypothesis key are equal with different values, or
  one key is a proper suffix of the other; both are tested for the whole batch with array
  operations (key ids vs the interned suffix ids of the other side), and the exact compound
  search runs only on the utterances that pass (a superset test, so nothing is missed).
* **Backtrace over a call.**  The tables of all batches are kept (flattened) and all utterances
  walk back at once, one numpy step per route element, with the preferences ok, compound,
  substitution, deletion, insertion; compound moves (rare) are taken in Python.  Route elements
  are recorded as token-id events and turned into the twelve counters and the class counts with
  ``bincount`` (or, for :meth:`_Tables.routes`, into :class:`RouteElement` lists); substitution
  classes are classified once per distinct (reference, hypothesis) token pair.  A call holds at
  most :data:`CALL_UTTERANCES` utterances' tables (longer calls are split).

Semiring: tropical (min, +) over integer costs; ties are broken by the backtrace order above.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import orthography_rules as rules
from ._columns import INT16_LIMIT, length_batches, padded_ids, prefix_min, shared_counts
from .orthography_rules import (
    OrthographicCounts,
    RouteElement,
    find_compounds,
)
from .orthography_tokens import Token
from .orthography_vocabulary import Vocabulary, tokenize_ids

_VOCAB_KEY = ("orthography_batch.Vocabulary",)


CALL_UTTERANCES = 4096    # utterances whose tables are held at once (~20 MB at 20 tokens each)


def score_many(ref_texts: Sequence[str], hyp_texts: Sequence[str], normalizers: Sequence[str], K: int | None,
               cache: dict, batch_cells: int, call_utterances: int = CALL_UTTERANCES,
               int16_limit: int = INT16_LIMIT) -> list:
    """See :func:`punctuation.score_orthography_many`.  Tuning: ``call_utterances`` bounds the
    utterances whose tables are held at once, ``int16_limit`` the route costs a batch may reach
    and still use int16 tables (a smaller value forces int32 tables)."""
    vocab = cache.get(_VOCAB_KEY)
    if vocab is None:
        vocab = cache[_VOCAB_KEY] = Vocabulary()
    normalizers = tuple(normalizers)
    n = len(ref_texts)
    if len(hyp_texts) != n:
        raise ValueError(f"{n} reference texts but {len(hyp_texts)} hypothesis texts")
    if not n:
        return []
    if n > call_utterances:
        # the DP tables of one call are kept until its backtrace: bound them (memory)
        out = []
        for s in range(0, n, call_utterances):
            out += score_many(ref_texts[s:s + call_utterances], hyp_texts[s:s + call_utterances], normalizers, K,
                              cache, batch_cells, call_utterances, int16_limit)
        return out
    flat, offsets = tokenize_ids(list(ref_texts) + list(hyp_texts), normalizers, vocab, cache)
    tables = _Tables(n, vocab, flat, offsets, K, int16_limit)
    nr, nh = tables.nr, tables.nh
    for batch in length_batches(nr, nh, batch_cells):
        tables.add_batch(batch)
    return tables.counts()


# Costs as int16 (S, ins/del) and DP values as int16 while they fit: a route costs at most
# INS_DEL per token (delete everything, insert everything), so int16 holds any utterance pair of
# fewer than 16,000 tokens; longer batches use int32.  Halves the memory traffic of the DP.
_I16 = np.int16
INS_DEL, INS_DEL_PUNCT = _I16(rules.INS_DEL), _I16(rules.INS_DEL_PUNCT)
SUB_WORD, SUB_CASE, SUB_PUNCT, SUB_CROSS = _I16(rules.SUB_WORD), _I16(rules.SUB_CASE), _I16(rules.SUB_PUNCT), _I16(rules.SUB_CROSS)


_OK, _SUB, _DEL, _INS, _COMPOUND = range(5)      # route operations of the backtrace


class _Tables:
    """DP tables of all batches of one call, flattened and concatenated, so that the backtrace
    walks every utterance of the call at once (a few numpy calls per route step, not per
    utterance).

    A batch's arrays put the utterance axis last -- ``D[i, j, b]``, ``S[i-1, j-1, b]``,
    ``dels[i-1, b]`` -- so that each step of the row recursion (the prefix minimum over ``j``)
    is one vector operation over the batch.  Per utterance ``u``: cell (i, j) of its DP is
    ``D[d_base[u] + i*d_row[u] + j*col[u]]``, the substitution cost of tokens (i-1, j-1) is
    ``S[s_base[u] + (i-1)*s_row[u] + (j-1)*col[u]]``, the deletion cost of reference token i-1
    is ``dels[del_base[u] + (i-1)*col[u]]`` (``col`` = the batch size)."""

    # per utterance (int64; set in __init__): where its tables start, their strides, its route's cost
    d_base: np.ndarray
    d_row: np.ndarray
    s_base: np.ndarray
    s_row: np.ndarray
    del_base: np.ndarray
    col: np.ndarray
    cost: np.ndarray

    def __init__(self, n, vocab: Vocabulary, flat, offsets, K, int16_limit: int = INT16_LIMIT):
        self.n, self.vocab, self.flat, self.offsets, self.K = n, vocab, flat, offsets, K
        self.int16_limit = int16_limit
        lens = np.diff(offsets)
        self.nr, self.nh = lens[:n], lens[n:]
        self.filters = vocab.compound_filters()
        # per-token attributes with a sentinel at the end, which the padding id -1 reads
        self.t_value, self.t_lower, self.t_punct, self.t_key = (np.append(c.array(), pad) for c, pad in (
            (vocab.t_value, -1), (vocab.t_lower, -1), (vocab.t_punct, False), (vocab.t_key, -1)))
        self.D: list = []
        self.S: list = []
        self.dels: list = []
        self.sizes = [0, 0, 0]
        for name in ("d_base", "d_row", "s_base", "s_row", "del_base", "col", "cost"):
            setattr(self, name, np.zeros(n, dtype=np.int64))
        self.comps: dict[int, dict] = {}        # utterance -> punctuation._compounds(...)
        self.comp_cells: list = []              # global D indices of cells with compound matches
        self.compound_moves: dict = {}          # (utterance, i, j) -> (x, y) of a compound the backtrace took

    def add_batch(self, batch):
        B = len(batch)
        n, flat, offsets = self.n, self.flat, self.offsets
        nr, nh = self.nr[batch], self.nh[batch]
        N, M = int(nr.max()), int(nh.max())
        # widths >= 1 so that the clipped indices of the backtrace stay inside the arrays
        Wr, Wh = max(N, 1), max(M, 1)
        R = padded_ids(flat, offsets[batch], nr, Wr)
        H = padded_ids(flat, offsets[n + batch], nh, Wh)
        comps_of = _batch_compounds(batch, R, H, nr, nh, self.t_key[R], self.t_key[H], self.vocab, self.filters,
                                    self.K)
        R, H = R.T, H.T                               # (Wr, B), (Wh, B)
        rp, hp = self.t_punct[R], self.t_punct[H]
        # substitution costs of every (ref, hyp) token pair (punctuation._sub_costs, broadcast)
        S = np.where(self.t_lower[R][:, None, :] == self.t_lower[H][None, :, :], SUB_CASE, SUB_WORD)
        if rp.any() or hp.any():
            rpb, hpb = rp[:, None, :], hp[None, :, :]
            S = np.where(rpb, np.where(hpb, SUB_PUNCT, SUB_CROSS), np.where(hpb, SUB_CROSS, S))
        S[self.t_value[R][:, None, :] == self.t_value[H][None, :, :]] = 0

        comp_rows: dict[int, list] = {}
        for b, comps in comps_of.items():
            for (i, j), xys in comps.items():
                for x, y in xys:
                    comp_rows.setdefault(i, []).append((b, j, x, y))

        # The recursion on E = D - C, C[j] the cost of inserting hyp tokens 1..j: the row's
        # insertion chain D[i][j] = C[j] + min_{k<=j}(T[k] - C[k]) becomes a plain prefix
        # minimum, and the diagonal move absorbs the insertion cost of its column into S.
        ins = np.where(hp, INS_DEL_PUNCT, INS_DEL)[:M]           # (M, B)
        dtype = np.int16 if rules.INS_DEL * (N + M) + rules.SUB_CROSS < self.int16_limit else np.int32
        cins = np.zeros((M + 1, B), dtype=dtype)
        np.cumsum(ins, axis=0, out=cins[1:])
        S_minus_ins = S[:, :M] - ins[None]
        dels = np.where(rp, INS_DEL_PUNCT, INS_DEL)              # (Wr, B)
        E = np.empty((N + 1, M + 1, B), dtype=dtype)
        E[0] = 0
        minimum = np.minimum
        for i in range(1, N + 1):
            prev, t = E[i - 1], E[i]
            np.add(prev, dels[i - 1], out=t)
            minimum(t[1:], prev[:-1] + S_minus_ins[i - 1], out=t[1:])
            rows = comp_rows.get(i)
            if rows:
                bb, jj, xx, yy = (np.array(c, dtype=np.int64) for c in zip(*rows, strict=False))
                np.minimum.at(t, (jj, bb), E[i - xx, jj - yy, bb] + cins[jj - yy, bb] - cins[jj, bb])
            prefix_min(t)
        E += cins
        D = E

        d0, s0, del0 = self.sizes
        b_idx = np.arange(B)
        self.d_base[batch] = d0 + b_idx
        self.d_row[batch] = (M + 1) * B
        self.s_base[batch] = s0 + b_idx
        self.s_row[batch] = Wh * B
        self.del_base[batch] = del0 + b_idx
        self.col[batch] = B
        self.cost[batch] = D[nr, nh, b_idx]
        for b, comps in comps_of.items():
            self.comps[int(batch[b])] = comps
            self.comp_cells.extend(d0 + (i * (M + 1) + j) * B + b for i, j in comps)
        self.D.append(D.ravel())
        self.S.append(S.ravel())
        self.dels.append(dels.ravel())
        self.sizes = [d0 + D.size, s0 + S.size, del0 + dels.size]

    def counts(self) -> list:
        """The :class:`OrthographicCounts` of every utterance's minimum-cost route."""
        return self._route_counts(*self._backtrace())

    def routes(self, refs: Sequence[Sequence[Token]], hyps: Sequence[Sequence[Token]]) -> list:
        """Every utterance's route (:class:`RouteElement` list, first element first), given its
        tokens (the ones this call interned, in order), and its counts: ``[(route, counts)]``."""
        steps, comp_words, comp_count = self._backtrace()
        vocab = self.vocab
        routes: list[list] = [[] for _ in range(self.n)]
        for a, i, j, op in steps:
            for u, ii, jj, o in zip(a.tolist(), i.tolist(), j.tolist(), op.tolist(), strict=True):
                ref, hyp = refs[u], hyps[u]
                if o == _OK:
                    e = RouteElement("ok", (ref[ii - 1],), (hyp[jj - 1],))
                elif o == _SUB:
                    cls = vocab.class_names[vocab.classify(self._token(u, ii), self._token(u, jj, hyp_side=True))]
                    e = RouteElement("sub", (ref[ii - 1],), (hyp[jj - 1],), cls)
                elif o == _DEL:
                    e = RouteElement("del", (ref[ii - 1],), ())
                elif o == _INS:
                    e = RouteElement("ins", (), (hyp[jj - 1],))
                else:
                    x, y = self.compound_moves[(u, ii, jj)]
                    e = RouteElement("compound", tuple(ref[ii - x:ii]), tuple(hyp[jj - y:jj]), "compound")
                routes[u].append(e)
        for r in routes:
            r.reverse()
        return list(zip(routes, self._route_counts(steps, comp_words, comp_count), strict=True))

    def _token(self, u: int, pos: int, hyp_side: bool = False) -> int:
        """Token id at 1-based position ``pos`` of utterance ``u``'s reference (or hypothesis)."""
        return int(self.flat[self.offsets[u + self.n if hyp_side else u] + pos - 1])

    def _backtrace(self):
        """All utterances walk back together with the route preferences ok, compound,
        substitution, deletion, insertion: ``(steps, compound words, compounds)``, ``steps`` a
        list of ``(utterances, i, j, op)`` arrays, one per route step."""
        n = self.n
        Df, Sf, delf = (np.concatenate(x) for x in (self.D, self.S, self.dels))
        self.D, self.S, self.dels = [], [], []     # (the per-block tables are no longer needed: freed)
        has_comp = None
        if self.comp_cells:
            has_comp = np.zeros(len(Df), dtype=bool)
            has_comp[self.comp_cells] = True
        comp_words = np.zeros(n, dtype=np.int64)
        comp_count = np.zeros(n, dtype=np.int64)
        steps: list[tuple] = []                    # (utterance, i, j, op) per route element
        a = np.flatnonzero((self.nr > 0) | (self.nh > 0))
        i, j = self.nr[a], self.nh[a]
        d_base, d_row, s_base, s_row, del_base, col = (
            x[a] for x in (self.d_base, self.d_row, self.s_base, self.s_row, self.del_base, self.col))
        # (clip: the cells left of column 0 / above row 0 are never used, masked by j > 0 /
        # i > 0, but their indices must stay in range)
        while len(a):
            lin = d_base + i * d_row + j * col
            cur = Df[lin]
            diag = (i > 0) & (j > 0)
            dg = Df.take(lin - d_row - col, mode="clip")
            sc = Sf.take(s_base + (i - 1) * s_row + (j - 1) * col, mode="clip")
            ok = diag & (sc == 0) & (dg == cur)
            rest = ~ok
            comp_moves: list[tuple[int, int, int]] = []
            if has_comp is not None:
                cand = np.flatnonzero(rest & has_comp[lin])
                if len(cand):
                    for q in cand.tolist():
                        u, ii, jj = int(a[q]), int(i[q]), int(j[q])
                        base, row, c = int(d_base[q]), int(d_row[q]), int(col[q])
                        for x, y in self.comps[u][(ii, jj)]:
                            if Df[base + (ii - x) * row + (jj - y) * c] == cur[q]:
                                comp_words[u] += x
                                comp_count[u] += 1
                                comp_moves.append((q, x, y))
                                self.compound_moves[(u, ii, jj)] = (x, y)
                                rest[q] = False
                                break
            sub = rest & diag & (dg + sc == cur)
            rest &= ~sub
            up = Df.take(lin - d_row, mode="clip") + delf.take(del_base + (i - 1) * col, mode="clip")
            dl = rest & (i > 0) & (up == cur)
            ins = rest & ~dl
            op = np.full(len(a), _INS, dtype=np.int8)
            op[dl] = _DEL
            op[sub] = _SUB
            op[ok] = _OK
            di = (ok | sub | dl).astype(np.int64)
            dj = (ok | sub | ins).astype(np.int64)
            for q, x, y in comp_moves:
                op[q], di[q], dj[q] = _COMPOUND, x, y
            steps.append((a, i, j, op))
            i, j = i - di, j - dj
            live = (i > 0) | (j > 0)
            if not live.all():
                a, i, j, d_base, d_row, s_base, s_row, del_base, col = (
                    x[live] for x in (a, i, j, d_base, d_row, s_base, s_row, del_base, col))
        return steps, comp_words, comp_count

    def _route_counts(self, steps, comp_words, comp_count) -> list:
        n, vocab, flat, offsets = self.n, self.vocab, self.flat, self.offsets
        # events only carry real token ids (>= 0) where they are read
        t_punct, t_cap, t_value = vocab.t_punct.array(), vocab.t_cap.array(), vocab.t_value.array()
        if steps:
            A, Ii, J, OP = (np.concatenate(x) for x in zip(*steps, strict=False))
        else:
            A = Ii = J = OP = np.zeros(0, dtype=np.int64)
        rt = flat.take(offsets[A] + (Ii - 1), mode="clip")
        ht = flat.take(offsets[n + A] + (J - 1), mode="clip")

        def count(bs, mask=None):
            return np.bincount(bs if mask is None else bs[mask], minlength=n)

        sel = OP == _OK
        ok_b, ok_r = A[sel], rt[sel]
        okp = t_punct[ok_r]
        pc = count(ok_b, okp)
        wc = count(ok_b, ~okp) + comp_words
        kc = count(ok_b, ~okp & t_cap[ok_r])     # equal values: both capitalised alike, or neither

        sel = OP == _SUB
        sub_b, sub_r, sub_h = A[sel], rt[sel], ht[sel]
        cls = np.zeros(len(sub_b), dtype=np.int64)
        if len(sub_b):
            T = len(vocab.tokens)
            codes, inverse = np.unique(sub_r * T + sub_h, return_inverse=True)
            cls = np.array([vocab.classify(c // T, c % T) for c in codes.tolist()], dtype=np.int64)[inverse]
        ap, bp = t_punct[sub_r], t_punct[sub_h]
        cap_cls = vocab.class_id.get("capitalisation", -1)
        words_both = ~ap & ~bp
        case = words_both & (cls == cap_cls)
        ca, cb = t_cap[sub_r], t_cap[sub_h]
        ps = count(sub_b, ap & bp)
        pd = count(sub_b, ap & ~bp)
        wi = count(sub_b, ap & ~bp)
        wd = count(sub_b, ~ap & bp)
        pi = count(sub_b, ~ap & bp)
        wc += count(sub_b, case)
        ws = count(sub_b, words_both & ~case)
        kc += count(sub_b, case & ca & cb & (t_value[sub_r] == t_value[sub_h]))
        ks = count(sub_b, case & ca & cb & (t_value[sub_r] != t_value[sub_h]))
        kd = count(sub_b, case & ca & ~cb)
        ki = count(sub_b, case & ~ca & cb)

        sel = OP == _DEL
        del_b, del_r = A[sel], rt[sel]
        dp = t_punct[del_r]
        pd += count(del_b, dp)
        wd += count(del_b, ~dp)
        sel = OP == _INS
        ins_b, ins_h = A[sel], ht[sel]
        ip = t_punct[ins_h]
        pi += count(ins_b, ip)
        wi += count(ins_b, ~ip)

        # substitution classes (+ compounds) per utterance, sorted by name: class ids ranked by
        # name, so that the sorted (utterance, rank) codes list each utterance's classes in order
        if comp_count.any():
            vocab.class_index("compound")
        names = vocab.class_names
        n_cls = len(names)
        rank = np.argsort(np.argsort(np.array(names, dtype=object))) if n_cls else np.zeros(0, dtype=np.int64)
        by_rank = sorted(names)
        cb = [sub_b * n_cls + rank[cls]] if len(sub_b) else []
        if comp_count.any():
            cu = np.flatnonzero(comp_count)
            cb.append(np.repeat(cu * n_cls + rank[vocab.class_index("compound")], comp_count[cu]))
        classes: list = [()] * n
        if cb:
            codes, num = np.unique(np.concatenate(cb), return_counts=True)
            utt, r = np.divmod(codes, n_cls)
            starts = np.flatnonzero(np.diff(utt, prepend=-1))
            sizes = np.diff(np.append(starts, len(utt)))
            # utterances with one class (most): one shared tuple per (class, count)
            one = starts[sizes == 1]
            memo = vocab.class_tuples
            class_of_rank = np.argsort(rank)      # rank -> class id (stable across calls)
            for u, key in zip(utt[one].tolist(), (class_of_rank[r[one]] * (1 << 32) + num[one]).tolist(), strict=False):
                t = memo.get(key)
                if t is None:
                    t = memo[key] = ((names[key >> 32], key & 0xFFFFFFFF),)
                classes[u] = t
            for k0, size in zip(starts[sizes > 1].tolist(), sizes[sizes > 1].tolist(), strict=False):
                classes[int(utt[k0])] = tuple((by_rank[x], v) for x, v in zip(r[k0:k0 + size].tolist(),
                                                                              num[k0:k0 + size].tolist(), strict=False))

        norm_rows = self._normalization_rows()
        costs = (self.cost / 2.0).tolist()
        words, punct, caps = (shared_counts(*x) for x in ((wc, ws, wd, wi), (pc, ps, pd, pi), (kc, ks, kd, ki)))
        new = object.__new__
        OC = OrthographicCounts
        out: list[OrthographicCounts] = []
        append = out.append
        for w, p, k, c, nm, cost in zip(words, punct, caps, classes, norm_rows, costs, strict=False):
            o = new(OC)
            d = o.__dict__
            d["words"] = w
            d["punctuation"] = p
            d["capitalisation"] = k
            d["classes"] = c
            d["normalizations"] = nm
            d["cost"] = cost
            append(o)
        return out

    def _normalization_rows(self) -> list:
        """Per utterance, sorted ``(normalization, count)`` over its reference and hypothesis tokens."""
        n, flat, offsets, vocab = self.n, self.flat, self.offsets, self.vocab
        rows: list = [()] * n
        pos = np.flatnonzero(vocab.t_norm.array()[flat]) if len(flat) else np.zeros(0, dtype=np.int64)
        if not len(pos):
            return rows
        text = np.searchsorted(offsets, pos, side="right") - 1
        marked: dict[int, list] = {}
        for u, t in zip((text % n).tolist(), flat[pos].tolist(), strict=False):
            marked.setdefault(u, []).append(t)
        tokens = vocab.tokens
        for u, tids in marked.items():
            d: dict[str, int] = {}
            for t in tids:
                for nm in tokens[t].normalizations:
                    d[nm] = d.get(nm, 0) + 1
            rows[u] = tuple(sorted(d.items()))
        return rows


def _batch_compounds(batch, R, H, nr, nh, rk, hk, vocab: Vocabulary, filters, K) -> dict:
    """``{b: punctuation._compounds(ref_b, hyp_b, K)}`` for the utterances where it can be
    non-empty; the others have no compound.

    ``_compounds`` finds a match only at a pair of word/number tokens whose keys are equal with
    different values (then the key has two values in the vocabulary: ``multi``) or one key a
    proper suffix of the other (then the longer token has a suffix that is some token's key:
    ``live``).  Both are tested as (utterance, key id) codes of one side against the other
    side's keys: a superset of the utterances with matches."""
    live, multi = filters
    B = len(batch)
    V = len(vocab.key_id) + 1
    rkv, hkv = rk >= 0, hk >= 0
    codes_of = {}
    for name, keys, valid in (("ref", rk, rkv), ("hyp", hk, hkv)):
        bs, qs = np.nonzero(valid)
        codes_of[name] = bs * V + keys[bs, qs]
    flagged = np.zeros(B, dtype=bool)
    # equal keys (symmetric: the reference side suffices)
    m = rkv & multi[rk]
    if m.any():
        bs, qs = np.nonzero(m)
        flagged[bs[np.isin(bs * V + rk[bs, qs], codes_of["hyp"])]] = True
    t_suffix_start, t_suffix_len, suffix_ids = (vocab.t_suffix_start.array(), vocab.t_suffix_len.array(),
                                                vocab.suffix_ids.array())
    for ids, valid, other in ((R, rkv, codes_of["hyp"]), (H, hkv, codes_of["ref"])):
        m = valid & live[ids]
        if not m.any():
            continue
        bs, qs = np.nonzero(m)
        tids = ids[bs, qs]
        cnt = t_suffix_len[tids]
        total = int(cnt.sum())
        pos = np.repeat(t_suffix_start[tids] - (np.cumsum(cnt) - cnt), cnt) + np.arange(total)
        owner = np.repeat(bs, cnt)
        flagged[owner[np.isin(owner * V + suffix_ids[pos], other)]] = True
    flagged &= (nr > 0) & (nh > 0)
    out = {}
    tokens = vocab.tokens
    for b in np.flatnonzero(flagged).tolist():
        ref = [tokens[t] for t in R[b, :nr[b]].tolist()]
        hyp = [tokens[t] for t in H[b, :nh[b]].tolist()]
        comps = find_compounds(ref, hyp, K)
        if comps:
            out[b] = comps
    return out


def align_tokens(ref: Sequence[Token], hyp: Sequence[Token], K: int | None) -> tuple[list, OrthographicCounts]:
    """The minimum-cost route between two token lists (first element first) and its counts: one
    utterance through the batched DP and backtrace above."""
    vocab = Vocabulary()
    flat = np.array([vocab.intern(t) for t in ref] + [vocab.intern(t) for t in hyp], dtype=np.int64)
    offsets = np.array([0, len(ref), len(ref) + len(hyp)], dtype=np.int64)
    tables = _Tables(1, vocab, flat, offsets, K)
    tables.add_batch(np.zeros(1, dtype=np.int64))
    return tables.routes([ref], [hyp])[0]
