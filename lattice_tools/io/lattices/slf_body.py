"""The two engines of the SLF body parse (node and link lines -> columns) and the choice between them.

* :func:`split_body_numpy`, the fast engine: the node and link lines with numpy, when every node
  line and every link line has the same one-letter fields in the same order and the lines of each
  kind are contiguous (true of every SLF writer we know: HTK, SRILM, pocketsphinx, Sphinx-III,
  Kaldi).  It raises :class:`NotUniform` on anything else -- other layouts, and anything
  malformed, which it does not try to describe.
* :func:`parse_body_lines`, the general engine: line by line, any field order, quoting, scores on
  nodes, and a precise error (file:line) for anything malformed.

:func:`split_body` chooses: the fast engine when it applies, else the lattice's lines for the
general one.  Both give the same columns (tests/test_slf.py compares them).
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ...core.errors import FormatError
from .slf_text import BODY_PREFIXES, SCORE_KEYS, Block, LineItems, parse_number, split_fields


class NotUniform(Exception):
    """The fast engine does not apply to this lattice's lines (the general one parses them)."""


LINE_ONLY_NODE_FIELDS = ("a", "r", "L")


_NUMERIC_FIELDS = frozenset(b"ItJSEalnrpv")
# v= (a pronunciation variant) is read as a float: Kaldi's convert_slf.pl writes v=0.000000 on links,
# and no lattice field reads it (nodes keep it, links ignore it)
_INTEGER_FIELDS = frozenset(b"IJSE")


def _digits_to_int(buf: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Parse the unsigned decimal integers ``buf[start:end]`` (vectorized); NotUniform unless
    every span is 1-15 digits."""
    length = end - start
    if len(length) and (length.min() < 1 or length.max() > 15):
        raise NotUniform("integer length")
    value = np.zeros(len(start), dtype=np.int64)
    for j in range(int(length.max()) if len(length) else 0):
        has = length > j
        digit = buf[np.where(has, end - 1 - j, 0)].astype(np.int64) - 48
        if np.any(has & ((digit < 0) | (digit > 9))):
            raise NotUniform("not a digit")
        value += np.where(has, digit, 0) * (10 ** j)
    return value.astype(np.float64)
_WS = (9, 10, 13, 32)


def _uniform_numpy(sub: np.ndarray, n: int) -> dict:
    """Parse ``n`` consecutive lines (bytes ``sub``) whose fields all have one-letter names in the
    same order.  Numbers are parsed in C by ``np.fromstring``; NotUniform if anything is unusual."""
    eq = np.flatnonzero(sub == 61)  # '='
    if n == 0 or len(eq) == 0 or len(eq) % n:
        raise NotUniform("field count")
    k = len(eq) // n
    if eq[0] != 1:
        raise NotUniform("line start")
    before = sub[eq[1:] - 2]
    if not np.all((before == 32) | (before == 9) | (before == 10)):
        raise NotUniform("multi-letter field names or '=' inside a value")
    names = sub[eq - 1].reshape(n, k)
    if not np.all(names == names[0]):
        raise NotUniform("field order differs between lines")
    letters = names[0].tolist()
    if len(set(letters)) != k:
        raise NotUniform("duplicate field")
    ws = np.flatnonzero((sub == 32) | (sub == 9) | (sub == 10) | (sub == 13))
    ws = np.append(ws, len(sub))
    vstart = (eq + 1).reshape(n, k)
    vend = ws[np.searchsorted(ws, eq + 1)].reshape(n, k)
    integers = [j for j, c in enumerate(letters) if c in _INTEGER_FIELDS]
    numeric = [j for j, c in enumerate(letters) if c in _NUMERIC_FIELDS and c not in _INTEGER_FIELDS]
    strings = [j for j, c in enumerate(letters) if c not in _NUMERIC_FIELDS]
    out: dict[str, np.ndarray | list[str]] = {}
    for j in integers:
        out[chr(letters[j])] = _digits_to_int(sub, vstart[:, j], vend[:, j])
    blank = sub.copy()
    blank[eq] = 32
    blank[eq - 1] = 32
    if strings or integers:
        a = vstart[:, strings + integers].ravel()
        b = vend[:, strings + integers].ravel()
        d = np.bincount(a, minlength=len(sub) + 1)[: len(sub) + 1] - np.bincount(b, minlength=len(sub) + 1)[: len(sub) + 1]
        blank[np.cumsum(d)[: len(sub)] > 0] = 32
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            nums = np.fromstring(blank.tobytes().decode("latin-1"), dtype=np.float64, sep=" ")
        except (DeprecationWarning, ValueError):
            raise NotUniform("unparsable number") from None
    if len(nums) != n * len(numeric) or np.isnan(nums).any():
        raise NotUniform("number count")
    nums = nums.reshape(n, len(numeric))
    for col, j in enumerate(numeric):
        out[chr(letters[j])] = nums[:, col]
    if strings:
        raw = sub.tobytes()
        for j in strings:
            spans = zip(vstart[:, j].tolist(), vend[:, j].tolist(), strict=False)
            try:
                out[chr(letters[j])] = [raw[x:y].decode("utf-8") for x, y in spans]
            except UnicodeDecodeError:
                raise NotUniform("utf-8") from None
    return out


def split_body_numpy(block: Block, base: int):
    """Fast path of the SLF parser: header lines in Python, node and link lines with numpy.

    Needs node lines and link lines each to be contiguous with uniform one-letter fields (every
    SLF writer we know does that); raises NotUniform otherwise and the caller parses line by line.
    """
    data = block.text.encode("utf-8")
    buf = np.frombuffer(data, np.uint8)
    if len(buf) == 0:
        raise NotUniform("empty")
    nl = np.flatnonzero(buf == 10)
    starts = np.concatenate(([0], nl + 1))
    ends = np.concatenate((nl, [len(buf)]))
    c0 = np.zeros(len(starts), np.uint8)
    c1 = np.zeros(len(starts), np.uint8)
    ok0 = starts < len(buf)
    ok1 = starts + 1 < len(buf)
    c0[ok0] = buf[starts[ok0]]
    c1[ok1] = buf[starts[ok1] + 1]
    if np.any((c0 == 32) | (c0 == 9)):
        raise NotUniform("indented lines")
    is_node = (c0 == 73) & (c1 == 61)  # "I="
    is_link = (c0 == 74) & (c1 == 61)  # "J="
    other = np.flatnonzero(~is_node & ~is_link & (ends > starts) & (c0 != 35))  # not '#', not empty
    header_items = []
    for i in other.tolist():
        line = data[starts[i]:ends[i]].decode("utf-8").strip()
        if line.startswith(("NODE=", "LINK=")):
            raise NotUniform("long field names")
        if line:
            header_items.append((base + i, line))
    parsed: list[dict] = []
    for mask in (is_node, is_link):
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            parsed.append({})
            continue
        if idx[-1] - idx[0] + 1 != len(idx):
            raise NotUniform("not contiguous")
        parsed.append(_uniform_numpy(buf[starts[idx[0]]:ends[idx[-1]]], len(idx)))
    node, link = parsed
    n_nodes, n_links = int(is_node.sum()), int(is_link.sum())
    for col in (node.get("W"), link.get("W")):
        if col and any(w[:1] in ("'", '"') and len(w) > 1 and w[-1] == w[0] for w in col):
            raise NotUniform("quoted values")

    def ints(x):
        if x is None:
            return np.zeros(0, np.int64)
        if not np.all(x == np.rint(x)):
            raise NotUniform("not an integer")
        return x.astype(np.int64)

    if (n_nodes and "I" not in node) or (n_links and ("S" not in link or "E" not in link or "J" not in link)):
        raise NotUniform("missing ids")
    if any(k in node for k in LINE_ONLY_NODE_FIELDS):
        raise NotUniform("scores or sub-lattices on nodes")
    ints(link.get("J"))
    nodes = {"I": ints(node.get("I")), "t": node.get("t"), "W": node.get("W"), "v": node.get("v")}
    links = {"S": ints(link.get("S")), "E": ints(link.get("E")), "W": link.get("W")}
    for k in SCORE_KEYS + ("p",):
        links[k] = link.get(k)
    node_items = LineItems(block, base, ("I=", "NODE="), count=n_nodes)
    link_items = LineItems(block, base, ("J=", "LINK="), count=n_links)
    return header_items, node_items, link_items, (nodes, links)


def parse_body_lines(node_items, link_items, path):
    """Line-by-line parse with precise errors (file:line); same output as the fast parse."""
    # a column's values: word strings (W), version strings (v) or numbers
    nodes: dict[str, list[Any]] = {"I": [], "t": [], "W": [], "v": [], "a": [], "r": []}
    # per optional field: None until the first node, then whether the nodes have it
    seen_node: dict[str, bool | None] = {k: None for k in ("t", "W", "a", "r")}
    for lineno, line in node_items:
        f = split_fields(line, path, lineno)
        if "L" in f:
            raise FormatError("node refers to a sub-lattice (L=); SLF sub-lattices (grammar networks) are not "
                              "supported", path=path, line=lineno)
        nodes["I"].append(parse_number(f["I"], "I", path, lineno, int))
        # HTK (HNet.c ReadOneLattice): a node without W= holds !NULL; SRILM: a node without a score
        # adds nothing to its links
        for key, absent in (("W", "!NULL"), ("a", "0"), ("r", "0")):
            if key not in f and seen_node[key]:
                f[key] = absent
            elif key in f and seen_node[key] is False:
                nodes[key] = [absent if key == "W" else 0.0] * (len(nodes["I"]) - 1)
                seen_node[key] = True
        for key in ("t", "W", "a", "r"):
            present = key in f
            if seen_node[key] is None:
                seen_node[key] = present
            elif seen_node[key] != present:
                raise FormatError(f"node {'lacks' if not present else 'has'} {key}= unlike earlier nodes",
                                  path=path, line=lineno)
            if present:
                nodes[key].append(f[key] if key == "W" else parse_number(f[key], key, path, lineno))
        if "v" in f:
            nodes["v"].append(f["v"])
    link_keys = ("W",) + SCORE_KEYS + ("p",)
    links: dict[str, list[Any]] = {k: [] for k in ("S", "E") + link_keys}
    seen: dict[str, bool | None] = {k: None for k in link_keys}
    for lineno, line in link_items:
        f = split_fields(line, path, lineno)
        for k in ("J", "S", "E"):
            if k not in f:
                raise FormatError(f"link line has no {k}= field", path=path, line=lineno)
        parse_number(f["J"], "J", path, lineno, int)
        links["S"].append(parse_number(f["S"], "S", path, lineno, int))
        links["E"].append(parse_number(f["E"], "E", path, lineno, int))
        for k in link_keys:
            present = k in f
            if seen[k] is None:
                seen[k] = present
            elif seen[k] != present:
                raise FormatError(f"link {'lacks' if not present else 'has'} {k}= unlike earlier links",
                                  path=path, line=lineno)
            if present:
                links[k].append(f[k] if k == "W" else parse_number(f[k], k, path, lineno))
    n_nodes = len(node_items)
    out_nodes = {"I": np.array(nodes["I"], dtype=np.int64),
                 "t": np.array(nodes["t"], dtype=np.float64) if seen_node["t"] else None,
                 "W": nodes["W"] if seen_node["W"] else None,
                 "v": nodes["v"] if len(nodes["v"]) == n_nodes and n_nodes else None}
    for k in ("a", "r"):
        if seen_node[k]:
            out_nodes[k] = np.array(nodes[k], dtype=np.float64)
    out_links = {"S": np.array(links["S"], dtype=np.int64), "E": np.array(links["E"], dtype=np.int64),
                 "W": links["W"] if seen["W"] else None}
    for k in SCORE_KEYS + ("p",):
        out_links[k] = np.array(links[k], dtype=np.float64) if seen[k] else None
    return out_nodes, out_links


def split_body(block: Block, base: int):
    """``(header lines, node lines, link lines, columns or None)`` of one lattice: the fast
    engine's columns when it applies, else None and :func:`parse_body_lines` parses the lines
    (after the header is checked).  ``base`` is the file line number of the block's first line."""
    try:
        return split_body_numpy(block, base)
    except NotUniform:
        lines = block.lines
        link_items = LineItems(lines, base, ("J=", "LINK="))
        node_items = LineItems(lines, base, ("I=", "NODE="))
        header_items = [(base + i, line.strip()) for i, line in enumerate(lines)
                        if line.strip() and line[0] != "#" and not line.startswith(BODY_PREFIXES)]
        return header_items, node_items, link_items, None
