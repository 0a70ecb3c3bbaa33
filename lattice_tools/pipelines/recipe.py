"""Helpers behind the Kaldi-style recipe stages (``recipes/``): deterministic job splitting and
merging, passing list items to a command, and mapping CTMs from utterances to recordings.

Recipes split their inputs into ``nj`` contiguous chunks of a sorted list, run one job per chunk and
concatenate the per-job outputs in job order.  Because every per-lattice output is written in input
order and gzip output is produced by the same sequence of compressor calls whatever the number of
parts (fixed 1 MiB blocks, mtime 0), ``--nj 2`` gives byte-identical results to ``--nj 1``.  All
writes are atomic, so a killed job leaves no output a rerun would trust.
"""
from __future__ import annotations

import json
import os
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ..core.errors import FormatError, LatticeToolsError, MismatchError
from ..core.files import atomic_write, open_binary_input, read_text_lines, write_json

_BLOCK = 1 << 20  # merge writes fixed-size blocks so gzip output does not depend on part boundaries


def read_list(path: str) -> list[str]:
    """Non-empty, non-comment lines of a list file (one lattice spec or file per line), stripped.

    Raises:
      FormatError if the list has no items (a job with no input would silently produce nothing).
    """
    items = []
    for _lineno, line in read_text_lines(path):
        line = line.strip()
        if line and not line.startswith("#"):
            items.append(line)
    if not items:
        raise FormatError("the list is empty (expected one lattice file or rspecifier per line)", path=path)
    return items


def split_list(list_path: str, nj: int | None, out_pattern: str, *, chunk_size: int | None = None) -> list[str]:
    """Split ``list_path`` into contiguous chunks written to ``out_pattern`` with ``JOB`` replaced by
    1, 2, ...: either ``nj`` nearly equal chunks (the first ``len % nj`` get one item more), or,
    with ``chunk_size``, chunks of ``chunk_size`` items (the last may be shorter) -- a split that
    does not depend on how many jobs run at once.

    Returns:
      The chunk paths, in job order.
    Raises:
      LatticeToolsError if neither or both of ``nj``/``chunk_size`` are given, either is < 1, the
      pattern lacks ``JOB``, or there are fewer items than jobs.
    """
    if (nj is None) == (chunk_size is None):
        raise LatticeToolsError("give exactly one of --nj and --chunk-size")
    if nj is not None and nj < 1:
        raise LatticeToolsError(f"--nj must be >= 1, got {nj}")
    if chunk_size is not None and chunk_size < 1:
        raise LatticeToolsError(f"--chunk-size must be >= 1, got {chunk_size}")
    if "JOB" not in out_pattern:
        raise LatticeToolsError(f"output pattern {out_pattern!r} must contain JOB")
    items = read_list(list_path)
    if chunk_size is not None:
        sizes = [min(chunk_size, len(items) - i) for i in range(0, len(items), chunk_size)]
    else:
        assert nj is not None  # exactly one of them: checked above
        if len(items) < nj:
            raise LatticeToolsError(f"{len(items)} items cannot be split into {nj} jobs; use --nj {len(items)} or less",
                                    path=list_path)
        base, extra = divmod(len(items), nj)
        sizes = [base + (1 if job <= extra else 0) for job in range(1, nj + 1)]
    outs = []
    start = 0
    for job, n in enumerate(sizes, 1):
        out = out_pattern.replace("JOB", str(job))
        with atomic_write(out) as f:
            f.writelines(x + "\n" for x in items[start:start + n])
        outs.append(out)
        start += n
    return outs


def command_with_list(list_path: str, command: Sequence[str]) -> list[str]:
    """The argument vector ``command + items of list_path`` (each line one argument, spaces kept).

    This is how recipe jobs hand their chunk of lattice specs (e.g. ``ark:gunzip -c lat.1.gz|``,
    which contains spaces) or audio files to a ``lattice-tools`` command that takes them as
    arguments, without word splitting by a shell and without ``xargs`` ever splitting the items
    over several invocations (which would overwrite the job's output).
    """
    if not command:
        raise LatticeToolsError("no command given (usage: lattice-tools with-list LIST COMMAND [ARGS...])")
    return [*command, *read_list(list_path)]


def _iter_blocks(parts: Sequence[str]) -> Iterable[bytes]:
    """The decompressed bytes of ``parts`` concatenated, re-cut into fixed ``_BLOCK``-size blocks."""
    pending = bytearray()
    for p in parts:
        with open_binary_input(p) as src:
            while True:
                chunk = src.read(_BLOCK)
                if not chunk:
                    break
                pending += chunk
                while len(pending) >= _BLOCK:
                    yield bytes(pending[:_BLOCK])
                    del pending[:_BLOCK]
    if pending:
        yield bytes(pending)


def merge_files(parts: Sequence[str], out: str) -> None:
    """Concatenate text (or gzip) files in the given order into ``out`` (gzip if it ends in .gz).

    The output bytes depend only on the concatenated content, not on how it is split into parts,
    so job outputs merged for ``--nj 1`` and ``--nj 2`` are byte-identical.
    """
    if not parts:
        raise LatticeToolsError("nothing to merge: no input parts given")
    for p in parts:
        if not os.path.exists(p):
            raise LatticeToolsError(f"missing job output {p} (did a job fail?)")
    with atomic_write(out, mode="wb") as dst:
        for block in _iter_blocks(parts):
            dst.write(block)


@dataclass(frozen=True, slots=True)
class CtmSize:
    """The size of a CTM's text (:func:`measure_ctm`): ``bytes``, ``gzip_bytes`` (zlib level 9, gzip wrapper, no
    header mtime) and ``MB`` = gzip_bytes / 10^6 rounded to 6 decimals (Faria et al., Tables 3-6)."""

    bytes: int
    gzip_bytes: int
    MB: float

    def to_dict(self) -> dict:
        """The size as the statistics JSON holds it (``bytes``, ``gzip_bytes``, ``MB``)."""
        return {"bytes": self.bytes, "gzip_bytes": self.gzip_bytes, "MB": self.MB}


def measure_ctm(path: str) -> CtmSize:
    """Size of a (possibly gzipped) CTM's text: ``bytes`` and ``gzip_bytes`` exactly as
    :class:`lattice_tools.io.transcripts.altctm.AlternativesCtmWriter` measures them (zlib level 9, gzip
    wrapper, no header mtime), and ``MB`` = gzip_bytes / 10^6 (Faria et al., Tables 3-6)."""
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    raw = gz = 0
    for block in _iter_blocks([path]):
        raw += len(block)
        gz += len(comp.compress(block))
    gz += len(comp.flush())
    return CtmSize(raw, gz, round(gz / 1e6, 6))


# Fields of the per-job statistics JSON (lattice-tools nbest|sausage|phrases --json) and how they merge.
_SUMMED = ("blocks", "alt_blocks", "utterances", "bytes", "gzip_bytes")
_MAXED = ("N_max",)
_PERCENTILES = ("N_.9", "N_.5")


def merge_json_stats(parts: Sequence[str], out: str, measure: str | None = None) -> dict:
    """Merge per-job statistics JSON files written by ``lattice-tools nbest|sausage|phrases --json``.

    * With a per-slot ``depths`` list in every part, N_max, N_.9, N_.5 and blocks are recomputed
      exactly from all depths (:func:`~lattice_tools.core.alternatives_network.depth_statistics`).
    * Without it, block counts are summed and N_max is the maximum (both exact), but the
      percentiles N_.9/N_.5 cannot be recovered from per-job percentiles: they are written as
      ``null`` with a ``note`` -- for every number of parts, so ``--nj 1`` and ``--nj N`` agree.
    * Other numbers (``utterances``, ``bytes``, ``gzip_bytes``) are summed; everything else (``N``,
      ``kind``, ``posterior_threshold``) must be equal in all parts.
    * ``measure``: the merged CTM actually delivered; its ``bytes``/``gzip_bytes``/``MB`` are
      measured (:func:`measure_ctm`) instead of summed, so MB is exact and independent of nj.

    Returns the merged dictionary (also written to ``out``, sorted keys).  It stays a plain mapping: it is the
    statistics document the alternatives commands write (``AlternativesCtmWriter.stats``), whose fields it
    carries over, not a record of its own.
    """
    from ..core.alternatives_network import depth_statistics

    if not parts:
        raise LatticeToolsError("nothing to merge: no statistics JSON given")
    loaded = []
    for p in parts:
        try:
            with open(p, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as exc:
            raise LatticeToolsError(f"missing job output ({exc.strerror}; did a job fail?)", path=p) from None
        except json.JSONDecodeError as exc:
            raise FormatError(f"not valid statistics JSON ({exc})", path=p) from None
        if not isinstance(d, dict):
            raise FormatError("statistics JSON must be an object", path=p)
        loaded.append((p, d))
    have_depths = all("depths" in d for _, d in loaded)
    merged: dict = {}
    for p, d in loaded:
        for k, v in d.items():
            if k in ("depths", "note") or k in _PERCENTILES:
                continue
            if k in _SUMMED:
                merged[k] = merged.get(k, 0) + v
            elif k in _MAXED:
                merged[k] = max(merged.get(k, v), v)
            elif k == "MB":
                continue  # recomputed from gzip_bytes below
            elif k in merged and merged[k] != v:
                raise MismatchError(f"field {k!r} differs between job statistics ({merged[k]!r} vs {v!r})", path=p)
            else:
                merged[k] = v
    if have_depths:
        depths = [int(x) for _, d in loaded for x in d["depths"]]
        merged.update(depth_statistics(depths).to_dict())
        merged["depths"] = depths
    else:
        for k in _PERCENTILES:
            merged[k] = None
        merged["note"] = ("N_.9/N_.5 need the per-slot 'depths' list in each job's statistics JSON "
                          "(written by lattice-tools nbest|sausage|phrases --json)")
    if measure is not None:
        merged.update(measure_ctm(measure).to_dict())
    elif "gzip_bytes" in merged:
        merged["MB"] = round(merged["gzip_bytes"] / 1e6, 6)
    write_json(out, merged, indent=1)
    return merged


def _shift_time(field: str, offset: float) -> str:
    """``field + offset`` printed with the field's own number of decimals (``*`` stays ``*``)."""
    if field == "*":
        return field
    decimals = len(field.split(".", 1)[1]) if "." in field else 0
    return f"{float(field) + offset:.{max(decimals, 2)}f}"


def convert_ctm(ctm: str, out: str, *, segments: str | None = None, reco2file_and_channel: str | None = None,
                encoding: str = "utf-8") -> int:
    """Map a CTM (or alt-CTM) whose ``file`` field is an utterance id and whose times are relative
    to the utterance to recording ``file``/``channel`` ids and absolute times -- Kaldi's
    ``utils/convert_ctm.pl`` semantics, extended to ``<ALT_BEGIN>``/``<ALT>``/``<ALT_END>`` tag
    lines (their ``*`` times are kept).

    Args:
      ctm: input CTM (``-`` = stdin, gzip detected).
      out: output CTM (``.gz`` compressed, ``-`` = stdout), written atomically.
      segments: ``utt recording start end``; the utterance start is added to every time and the
        recording replaces the utterance id.  Without it the file field is taken as the recording.
      reco2file_and_channel: ``recording file channel``; replaces the file and channel fields.
        Without it the file is the recording and the channel is kept.
      encoding: text encoding of the CTM (the output is written in it too).
    Returns:
      The number of lines written.  Lines keep their order and all fields after the times.
    Raises:
      MismatchError naming the CTM line whose utterance/recording the mappings lack;
      FormatError for lines with fewer than 5 fields.
    """
    from ..io.transcripts.kaldi_data import read_reco2file_and_channel, read_segments

    seg = {u: (reco, start) for u, (reco, start, _end) in read_segments(segments).items()} if segments else None
    r2fc = read_reco2file_and_channel(reco2file_and_channel) if reco2file_and_channel else None
    written = 0
    with atomic_write(out, encoding=encoding) as dst:
        for lineno, line in read_text_lines(ctm, encoding):
            stripped = line.strip()
            if not stripped or stripped.startswith(";;"):
                dst.write(line + "\n")
                continue
            fields = stripped.split()
            if len(fields) < 5:
                raise FormatError(f"expected 'file channel start duration word [confidence]', got {len(fields)} fields",
                                  path=ctm, line=lineno)
            name, channel, start = fields[0], fields[1], fields[2]
            offset = 0.0
            if seg is not None:
                if name not in seg:
                    raise MismatchError(f"utterance {name!r} is not in the segments file {segments}", path=ctm,
                                        line=lineno)
                name, offset = seg[name]
            if r2fc is not None:
                if name not in r2fc:
                    raise MismatchError(f"recording {name!r} is not in {reco2file_and_channel}", path=ctm, line=lineno)
                name, channel = r2fc[name]
            try:
                new_start = _shift_time(start, offset)
            except ValueError:
                raise FormatError(f"start time must be a number or '*', got {start!r}", path=ctm, line=lineno) from None
            dst.write(" ".join([name, channel, new_start, *fields[3:]]) + "\n")
            written += 1
    return written
