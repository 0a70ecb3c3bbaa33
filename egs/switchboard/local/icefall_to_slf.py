#!/usr/bin/env python3
"""Stage 1 of egs/switchboard for icefall/k2 lattices: ``*.pt`` files -> SLF files keyed by utterance id.

    icefall_to_slf.py [--words words.txt] [--frame-shift 0.04] <pt-list> <out-dir>

icefall saves lattices with ``torch.save(lattice.as_dict(), path)``; such a file carries no utterance
ids, so the ids come from the file names:

* a file holding one lattice is the utterance ``<file name without .pt>`` (save each utterance's
  lattice ``lattice[i]`` as ``<cut id>.pt``);
* a file holding a batch (an FsaVec) needs ``<file>.keys`` beside it: one utterance id per line, in
  the order of the FSAs (icefall's ``cut_ids`` of the batch).

Writes ``<out-dir>/<utt>.lat`` (standard SLF, written atomically; existing ones are kept, so a rerun does
no work) and prints one line per file.  Frame-level k2 lattices are read as they are (the toolkit word-
aligns them when alternatives are derived).
"""
from __future__ import annotations

import argparse
import os
import sys


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pt_list", help="file with one .pt path per line")
    ap.add_argument("out_dir")
    ap.add_argument("--words", default=None, help="words.txt of the lattices' word ids")
    ap.add_argument("--frame-shift", type=float, default=None, help="seconds per frame (default 0.04)")
    args = ap.parse_args()

    from lattice_tools.core.errors import FormatError, LatticeToolsError, MismatchError
    from lattice_tools.io import read_lattices
    from lattice_tools.io.lattices.slf import write_slf
    from lattice_tools.pipelines.recipe import read_list

    os.makedirs(args.out_dir, exist_ok=True)
    seen: dict[str, str] = {}
    try:
        for pt in read_list(args.pt_list):
            lats = list(read_lattices(pt, format="k2", symbols=args.words, frame_shift=args.frame_shift))
            keys_file = pt + ".keys"
            if os.path.exists(keys_file):
                keys = read_list(keys_file)
                if len(keys) != len(lats):
                    raise MismatchError(f"{len(keys)} utterance ids for {len(lats)} lattices in {pt}", path=keys_file)
            elif len(lats) == 1:
                keys = [os.path.basename(pt)[:-3] if pt.endswith(".pt") else os.path.basename(pt)]
            else:
                raise FormatError(f"{len(lats)} lattices but no {os.path.basename(keys_file)} naming their utterances",
                                  path=pt)
            for key, lat in zip(keys, lats, strict=True):  # lengths checked above
                if key in seen:
                    raise MismatchError(f"utterance {key!r} also in {seen[key]}", path=pt, key=key)
                seen[key] = pt
                out = os.path.join(args.out_dir, f"{key}.lat")
                if not os.path.exists(out):
                    write_slf(lat.with_key(key), out)
            print(f"{pt}: {len(lats)} lattice(s)")
    except LatticeToolsError as exc:
        sys.exit(f"icefall_to_slf.py: error: {exc}")


if __name__ == "__main__":
    main()
