"""Helpers behind the Kaldi-style recipe stages (``recipes/``): deterministic job splitting and merging.

Recipes split their inputs into ``nj`` contiguous chunks of a sorted list, run one job per chunk and
concatenate the per-job outputs in job order.  Because every per-lattice output is written in input
order and gzip output is reproducible (mtime 0), ``--nj 2`` gives byte-identical results to
``--nj 1``.  All writes are atomic, so a killed job leaves no output a rerun would trust.
"""
from __future__ import annotations

import json
import os
from typing import Sequence

from .errors import FormatError, LatticeToolsError
from .io.common import atomic_write, open_binary_input, read_text_lines


def read_list(path: str) -> list[str]:
    """Non-empty, non-comment lines of a list file (one lattice spec or file per line)."""
    items = []
    for lineno, line in read_text_lines(path):
        line = line.strip()
        if line and not line.startswith("#"):
            items.append(line)
    if not items:
        raise FormatError("the list is empty (expected one lattice file or rspecifier per line)", path=path)
    return items


def split_list(list_path: str, nj: int, out_pattern: str) -> list[str]:
    """Split ``list_path`` into ``nj`` contiguous, nearly equal chunks written to ``out_pattern``
    with ``JOB`` replaced by 1..nj.  Fails if there are fewer items than jobs (a job with no input
    would silently produce nothing)."""
    if nj < 1:
        raise LatticeToolsError(f"--nj must be >= 1, got {nj}")
    if "JOB" not in out_pattern:
        raise LatticeToolsError(f"output pattern {out_pattern!r} must contain JOB")
    items = read_list(list_path)
    if len(items) < nj:
        raise LatticeToolsError(f"{list_path}: {len(items)} items cannot be split into {nj} jobs; use --nj {len(items)}")
    outs = []
    base, extra = divmod(len(items), nj)
    start = 0
    for job in range(1, nj + 1):
        n = base + (1 if job <= extra else 0)
        out = out_pattern.replace("JOB", str(job))
        with atomic_write(out) as f:
            f.writelines(x + "\n" for x in items[start:start + n])
        outs.append(out)
        start += n
    return outs


def merge_files(parts: Sequence[str], out: str) -> None:
    """Concatenate text (or gzip) files in the given order into ``out`` (gzip if it ends in .gz)."""
    if not parts:
        raise LatticeToolsError("nothing to merge: no input parts given")
    for p in parts:
        if not os.path.exists(p):
            raise LatticeToolsError(f"missing job output {p} (did a job fail?)")
    with atomic_write(out, mode="wb") as dst:
        for p in parts:
            with open_binary_input(p) as src:
                while True:
                    chunk = src.read(1 << 20)
                    if not chunk:
                        break
                    dst.write(chunk)


def merge_json_stats(parts: Sequence[str], out: str) -> dict:
    """Merge per-job statistics JSON files written by ``lattice-tools nbest|sausage|phrases --stats``.

    Depth statistics (N_max, N_.9, N_.5) are recomputed from the per-job ``depths`` lists, counts are
    summed; the merged file has the same shape as a single job's."""
    from .alternatives.network import depth_statistics

    merged: dict = {}
    depths: list[int] = []
    for p in parts:
        try:
            with open(p, encoding="utf-8") as f:
                d = json.load(f)
        except (OSError, json.JSONDecodeError) as exc:
            raise FormatError(f"cannot read statistics JSON ({exc})", path=p) from None
        if "depths" not in d:
            raise FormatError("statistics JSON has no 'depths' list", path=p)
        depths.extend(int(x) for x in d["depths"])
        for k, v in d.items():
            if k == "depths":
                continue
            if isinstance(v, (int, float)) and not isinstance(v, bool) and k in merged and k not in {"N", "n"}:
                merged[k] = merged[k] + v
            else:
                merged.setdefault(k, v)
    merged.update(depth_statistics(depths))
    merged["depths"] = depths
    with atomic_write(out) as f:
        json.dump(merged, f, indent=1, sort_keys=True)
        f.write("\n")
    return merged
