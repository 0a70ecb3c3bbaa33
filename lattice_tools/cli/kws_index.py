"""``lattice-tools kws index|merge|search``: build a term index, merge shards, search a keyword list.

Thin wrappers over :func:`lattice_tools.kws.build.build_lattice_index`,
:func:`~lattice_tools.kws.build.build_alternatives_index`, :func:`lattice_tools.kws.store.merge_indexes`
and :func:`lattice_tools.kws.search.search`.
"""
from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import click

from ..core.errors import FormatError, MismatchError, SymbolError
from ..core.files import atomic_write
from ._inputs import channel_option, lattice_input_options
from ._options import parallel_options

_REPRESENTATIONS = ("lattice", "1best", "nbest", "sausage", "phrase")


def _is_ctm(path: str) -> bool:
    return path.endswith((".ctm", ".ctm.gz"))


def _alternatives(inputs: Sequence[str], representation: str, n: int | None, posterior_threshold: float,
                  format: str | None, words: str | None, segments: dict | None, scales: dict, channel: str,
                  frame_shift: float | None, frame_subsampling_factor: int | None, keys: str | None) -> Iterator:
    """Alternatives from alt-CTM files (``*.ctm``), in their order, then computed in memory from the lattice
    inputs, all read in one :func:`~lattice_tools.io.read_lattice_inputs` (keys unique across them, one word
    table for SLF, ``keys`` naming them in order)."""
    from ..io import read_lattice_inputs
    from ..io.transcripts.altctm import read_alternatives_ctm
    from ..kws.study import Representation, representation_alternatives

    for spec in inputs:
        if _is_ctm(spec):
            for alts in read_alternatives_ctm(spec, kind=representation):
                # one utterance per recording side: the key names both
                yield alts.__class__(key=f"{alts.file}:{alts.channel}", slots=alts.slots, kind=alts.kind,
                                     file=alts.file, channel=alts.channel)
    specs = [spec for spec in inputs if not _is_ctm(spec)]
    if keys is not None and not specs:
        raise click.UsageError("--keys names lattices; the inputs are alt-CTM files")
    if specs:
        for lat in read_lattice_inputs(specs, format=format, words=words, frame_shift=frame_shift,
                                       frame_subsampling_factor=frame_subsampling_factor, keys=keys):
            rep = Representation(representation, n, posterior_threshold if representation == "phrase" else None)
            alts = representation_alternatives(lat, rep, **scales)
            alts.meta["vocabulary"] = [w for w, _ in lat.symbols]
            if segments is not None:
                if lat.key not in segments:
                    raise MismatchError(f"utterance {lat.key!r} is not in the segments file", key=lat.key)
                alts = alts.with_location(*segments[lat.key])
            else:
                alts = alts.with_location(lat.key, channel)
            yield alts


def _depth(value: str) -> int | None:
    return None if value.lower() in ("inf", "all", "0") else int(value)


def _write_json(result: dict, json_out: str | None) -> None:
    text = json.dumps(result, indent=2, sort_keys=True) + "\n"
    if json_out == "-":
        sys.stdout.write(text)
    elif json_out:
        with atomic_write(json_out, "w") as out:
            out.write(text)


@click.command("index")
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="The SQLite index to write.")
@click.option("--from", "representation", type=click.Choice(_REPRESENTATIONS), default="lattice", show_default=True,
              help="What to index: the whole lattice, or alternatives (read from *.ctm alt-CTM files, or "
                   "computed from the lattice inputs with -n / --posterior-threshold; 1best = the consensus "
                   "1-best with bin posteriors as confidences).")
@click.option("-n", "n", default="inf", show_default=True, help="N-best/sausage/phrase depth when computed from lattices.")
@click.option("--posterior-threshold", type=float, default=0.1, show_default=True,
              help="Phrase boundary threshold (--from phrase, computed from lattices).")
@click.option("--max-length", type=int, default=3, show_default=True, help="Longest word sequence indexed.")
@click.option("--max-silence", type=float, default=0.5, show_default=True,
              help="Longest silence (seconds) between two words of a term; negative = no limit.")
@click.option("--silence-rule", type=click.Choice(["gap", "kaldi"]), default="gap", show_default=True,
              help="What --max-silence bounds: the whole gap between two words, or each silence arc of the "
                   "lattice separately (Kaldi's lattice-to-kws-index --max-silence-frames; lattices only).")
@click.option("--min-posterior", type=float, default=0.0, show_default=True,
              help="Drop hits below this posterior (and do not extend partial terms below it); 0 = exact, complete.")
@click.option("--format", "format", default=None, help="Lattice format (default: from the file name).")
@lattice_input_options
@channel_option
@click.option("--segments", type=click.Path(dir_okay=False), default=None,
              help="Kaldi segments file 'utt file start end' (default: file = utterance, offset 0).")
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
@click.option("--word-penalty", type=float, default=0.0, show_default=True)
@click.option("--append", is_flag=True, help="Add the inputs' utterances to an existing index (same settings).")
@click.option("--json", "json_out", default=None, help="Write the counts as JSON (PATH or - for stdout).")
@parallel_options
def index_command(inputs, out, representation, n, posterior_threshold, max_length, max_silence, silence_rule,
                  min_posterior, format,
                  words, frame_shift, frame_subsampling_factor, keys, max_memory, channel, segments, acoustic_scale,
                  lm_scale, word_penalty, append, json_out, jobs, scheduler):
    """Index every word sequence (up to --max-length words) of INPUTS into an SQLite term index.

    --words is also the vocabulary of the out-of-vocabulary check (default: the lattices' words, or
    the words an alt-CTM holds)."""
    from ..core._budget import memory_budget

    with memory_budget(max_memory):
        _index(inputs, out, representation, n, posterior_threshold, max_length, max_silence, silence_rule,
               min_posterior, format, words, frame_shift, frame_subsampling_factor, keys, channel, segments,
               acoustic_scale, lm_scale, word_penalty, append, json_out, jobs, scheduler, max_memory)


def _index(inputs, out, representation, n, posterior_threshold, max_length, max_silence, silence_rule, min_posterior,
           format, words, frame_shift, frame_subsampling_factor, keys, channel, segments, acoustic_scale, lm_scale,
           word_penalty, append, json_out, jobs, scheduler, max_memory):
    from ..alternatives.lattices_to_ctm import read_segments
    from ..io import read_lattice_inputs
    from ..kws.build import build_alternatives_index, build_lattice_index

    seg = read_segments(segments, channel) if segments else None
    max_sil = None if max_silence < 0 else max_silence
    scales = dict(acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty)
    common = dict(max_length=max_length, max_silence=max_sil, min_posterior=min_posterior, append=append)
    if representation == "lattice":
        ctms = [i for i in inputs if _is_ctm(i)]
        if ctms:
            raise FormatError("a CTM holds alternatives, not a lattice: use --from 1best|nbest|sausage|phrase", path=ctms[0])

        def lattices():
            yield from read_lattice_inputs(inputs, format=format, words=words, frame_shift=frame_shift,
                                           frame_subsampling_factor=frame_subsampling_factor, keys=keys)
        from ..core.parallel import open_executor, shard_dir_for

        with open_executor(jobs=jobs, scheduler=scheduler) as executor:
            summary = build_lattice_index(_progress(lattices(), "kws index"), out, segments=seg, channel=channel,
                                          silence_rule=silence_rule, executor=executor,
                                          shard_dir=shard_dir_for(out, executor), max_memory=max_memory,
                                          **scales, **common)
    else:
        if silence_rule != "gap":
            raise click.UsageError("--silence-rule kaldi bounds a lattice's silence arcs: it needs --from lattice")
        if jobs is not None or scheduler is not None:
            raise click.UsageError(f"--jobs/--scheduler index whole lattices; for --from {representation}, compute the "
                                   f"alternatives in parallel ('lattice-tools sausage|nbest|phrases --jobs N') and "
                                   f"index the alt-CTM")
        vocab = None
        if words:
            from ..core.symbols import SymbolTable
            vocab = [w for w, _ in SymbolTable.read(words)]
        alts = _alternatives(inputs, representation, _depth(n), posterior_threshold, format, words, seg, scales,
                             channel, frame_shift, frame_subsampling_factor, keys)
        summary = build_alternatives_index(_progress(alts, f"kws index ({representation})"), out, representation,
                                           vocabulary=vocab, max_memory=max_memory, **common)
    result = {**summary.to_dict(), "representation": representation, "index": out}
    click.echo(json.dumps(result, sort_keys=True), err=True)
    _write_json(result, json_out)


def _progress(items, desc: str):
    """``items`` with a progress bar on stderr when it is a terminal (never in captured output)."""
    import sys

    from tqdm import tqdm

    return tqdm(items, desc=desc, unit="utt", disable=not sys.stderr.isatty(), file=sys.stderr)


@click.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="The merged index.")
@click.option("--json", "json_out", default=None, help="Write the counts as JSON (PATH or - for stdout).")
def merge_command(shards, out, json_out):
    """Merge shard indexes (one per job) into one (Kaldi's kws-index-union)."""
    from ..kws.store import merge_indexes

    result = merge_indexes(out, list(shards)).to_dict()
    click.echo(json.dumps(result, sort_keys=True), err=True)
    _write_json(result, json_out)


def read_keyword_text(path: str, encoding: str = "utf-8") -> list:
    """A plain keyword list, one ``KWID word [word ...]`` per line (Kaldi's keywords.txt with words)."""
    from ..core.files import read_text_lines
    from ..io.keyword_search.kwlist import KeywordTerm

    terms = []
    for lineno, line in read_text_lines(path, encoding):
        parts = line.split()
        if not parts:
            continue
        if len(parts) < 2:
            raise FormatError("expected 'KWID word [word ...]'", path=path, line=lineno)
        terms.append(KeywordTerm(parts[0], " ".join(parts[1:])))
    return terms


def read_keywords(path: str, encoding: str = "utf-8", words: str | None = None) -> list:
    """A KWlist XML (``*.xml``), Kaldi's keyword FSTs (a binary or text archive, found by its first lines;
    word ids spelled by the ``words`` table, else as decimal ids) or a plain ``KWID words`` list."""
    from ..io.keyword_search.kaldi_kws import is_kaldi_fst_archive, is_kaldi_text_fst_archive

    if is_kaldi_fst_archive(path) or is_kaldi_text_fst_archive(path):
        from ..core.symbols import SymbolTable
        from ..io.keyword_search.kaldi_kws import read_kaldi_keyword_fsts
        from ..io.keyword_search.kwlist import KeywordTerm

        table = SymbolTable.read(words) if words else None
        terms = []
        for kwid, ids in read_kaldi_keyword_fsts(path).items():
            if table is not None:
                try:
                    text = " ".join(table.word(i) for i in ids)
                except SymbolError as exc:
                    raise MismatchError(f"keyword {kwid!r}: {exc} {words}", path=path, key=kwid) from None
            else:
                text = " ".join(map(str, ids))
            terms.append(KeywordTerm(kwid, text))
        return terms
    if path.endswith((".xml", ".xml.gz")):
        from ..io.keyword_search.kwlist import read_kwlist
        return read_kwlist(path, encoding=encoding)
    return read_keyword_text(path, encoding)


@click.command("search")
@click.argument("index", type=click.Path(dir_okay=False))
@click.option("--kwlist", required=True, type=click.Path(dir_okay=False),
              help="Keywords: a NIST KWlist XML (*.xml), Kaldi's keyword FSTs (transcripts-to-fsts archive, word ids "
                   "spelled by --words) or lines 'KWID word [word ...]'.")
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False),
              help="Detections: a NIST kwslist XML (*.xml), else lines 'kwid file channel tbeg dur score YES|NO' "
                   "(see --out-format).")
@click.option("--out-format", type=click.Choice(["auto", "kwslist", "tsv", "kaldi"]), default="auto", show_default=True,
              help="auto = kwslist for *.xml, else tsv; kaldi = kws-search's result lines 'kwid utt start end "
                   "score' (utterance integers from --utter-map, frames, -log posterior).")
@click.option("--utter-map", default=None, type=click.Path(dir_okay=False),
              help="Kaldi utter.map 'utterance integer': the utterances of a Kaldi INDEX and of --out-format kaldi.")
@click.option("--segments", default=None, type=click.Path(dir_okay=False),
              help="Kaldi segments file the index was built with: where a Kaldi INDEX's utterances lie in their "
                   "recordings, and where --out-format kaldi counts frames from (each utterance's start).")
@click.option("--normalization", type=click.Choice(["none", "kst", "sum-to-one"]), default="none", show_default=True)
@click.option("--threshold", type=float, default=0.5, show_default=True, help="The global YES/NO threshold.")
@click.option("--duration", type=float, default=None, help="Seconds of searched audio (KST's T; required for kst).")
@click.option("--ntrue-scale", type=float, default=1.0, show_default=True, help="KST: scale of the expected true count.")
@click.option("--beta", type=float, default=999.9, show_default=True, help="KST: the cost of a miss vs a false alarm.")
@click.option("--duptime", type=float, default=0.5, show_default=True,
              help="Remove hits of a term starting within this many seconds of a better one (0 = keep all).")
@click.option("--tune-ecf", default=None, type=click.Path(dir_okay=False),
              help="KST: tune --ntrue-scale first on this dev set (ECF; with --tune-rttm or --tune-ctm): the "
                   "scale with the best ATWV of the keywords' detections (0.1 .. 10) is used.")
@click.option("--tune-rttm", default=None, type=click.Path(dir_okay=False), help="Dev-set reference RTTM (tuning).")
@click.option("--tune-ctm", default=None, type=click.Path(dir_okay=False), help="Dev-set reference CTM (tuning).")
@click.option("--encoding", default="utf-8", show_default=True, help="Encoding of the keyword list.")
@click.option("--system-id", default="lattice-tools", show_default=True, help="kwslist system_id.")
@click.option("--language", default="", help="kwslist language.")
@click.option("--kwlist-filename", default=None,
              help="kwslist kwlist_filename (default: --kwlist's file name; give the KWlist's when --kwlist is "
                   "Kaldi's keyword FSTs).")
@click.option("--lattices", "lattices", multiple=True,
              help="The lattices the index was built from (repeatable; the index's input specs): terms longer than "
                   "its --max-length are searched in the lattices of the utterances holding every piece of them.")
@click.option("--format", "format", default=None, help="Format of --lattices (default: from the file name).")
@lattice_input_options
@click.option("--json", "json_out", default=None,
              help="Write the summary and the out-of-vocabulary / too-long / no-hit keyword ids as JSON (PATH or -).")
@parallel_options
def search_command(index, kwlist, out, out_format, utter_map, segments, normalization, threshold, duration,
                   ntrue_scale, beta, duptime, tune_ecf, tune_rttm, tune_ctm, encoding, system_id, language,
                   kwlist_filename, lattices, format, words, frame_shift, frame_subsampling_factor, keys, max_memory,
                   json_out, jobs, scheduler):
    """Search the keywords of --kwlist in INDEX; write detections with scores and YES/NO decisions.

    INDEX is a term index of 'lattice-tools kws index' (SQLite) or a Kaldi KWS index (lattice-to-kws-index /
    kws-index-union archive, found by its first bytes; with --utter-map, and --words to search words)."""
    from ..core._budget import memory_budget

    with memory_budget(max_memory):
        _search(index, kwlist, out, out_format, utter_map, segments, max_memory, normalization, threshold, duration,
                ntrue_scale, beta, duptime, tune_ecf, tune_rttm, tune_ctm, encoding, system_id, language,
                kwlist_filename, lattices, format, words, frame_shift, frame_subsampling_factor, keys, json_out,
                jobs, scheduler)


def _search(index, kwlist, out, out_format, utter_map, segments, max_memory, normalization, threshold, duration,
            ntrue_scale, beta, duptime, tune_ecf, tune_rttm, tune_ctm, encoding, system_id, language, kwlist_filename,
            lattices, format, words, frame_shift, frame_subsampling_factor, keys, json_out, jobs, scheduler):
    import os

    from ..io.keyword_search.kaldi_kws import is_kaldi_fst_archive
    from ..kws.search import atwv_metric, search_parts, tune_ntrue_scale

    if out_format == "auto":
        out_format = "kwslist" if out.endswith(".xml") else "tsv"
    kaldi_index = is_kaldi_fst_archive(index)
    # Kaldi's frames are lattice frames: --frame-shift x --frame-subsampling-factor seconds (10 ms when not given)
    frame_time = (0.01 if frame_shift is None else frame_shift) * (frame_subsampling_factor or 1)
    # Kaldi's utterance -> integer map, read when a Kaldi index or Kaldi output needs it (--utter-map)
    utterance_ids: dict[str, int] = {}
    offsets: dict[str, float] | None = None
    places = None
    if out_format == "kaldi" or kaldi_index:
        from ..alternatives.lattices_to_ctm import read_segments
        from ..io.keyword_search.kaldi_kws import read_utterance_map

        if utter_map is None:
            raise click.UsageError("a Kaldi index and --out-format kaldi need --utter-map (Kaldi's utterance -> "
                                   "integer map)")
        utterance_ids = read_utterance_map(utter_map)
        places = read_segments(segments) if segments else None
        offsets = {u: start for u, (_reco, _chan, start) in places.items()} if places else None
    elif utter_map or segments:
        raise click.UsageError("--utter-map and --segments belong to a Kaldi index and --out-format kaldi")
    if kaldi_index and lattices:
        raise click.UsageError("a Kaldi index holds every word sequence of its lattices: --lattices answers long terms "
                               "of a term index only")
    terms = read_keywords(kwlist, encoding, words)
    if kaldi_index:
        from ..core.symbols import SymbolTable
        from ..kws.kaldi_index import KaldiIndex

        table = {w: i for w, i in SymbolTable.read(words)} if words else None
        index = KaldiIndex(index, utterance_ids, segments=places, words=table, frame_time=frame_time,
                           max_memory=max_memory)
    if normalization == "kst" and duration is None:
        raise click.UsageError("--normalization kst needs --duration (seconds of searched audio)")
    lattice_stream = None
    if keys is not None and not lattices:
        raise click.UsageError("--keys names the lattices of --lattices")
    if lattices:
        from ..io import read_lattice_inputs

        def lattice_stream():
            yield from read_lattice_inputs(list(lattices), format=format, words=words, frame_shift=frame_shift,
                                           frame_subsampling_factor=frame_subsampling_factor, keys=keys)
    tuning = None
    if tune_ecf or tune_rttm or tune_ctm:
        if normalization != "kst" or not tune_ecf or not (tune_rttm or tune_ctm):
            raise click.UsageError("tuning needs --normalization kst, --tune-ecf and --tune-rttm or --tune-ctm")
        if not kwlist.endswith((".xml", ".xml.gz")):
            raise click.UsageError("tuning scores the dev set against a KWlist XML: give --kwlist as the KWlist "
                                   "(*.xml; with --words to search a Kaldi index for its words)")
        ntrue_scale, atwv_by_scale = tune_ntrue_scale(
            index, terms, atwv_metric(tune_ecf, kwlist, rttm=tune_rttm, ctm=tune_ctm, encoding=encoding),
            duration=duration, threshold=threshold, beta=beta, duptime=duptime,
            lattices=None if lattice_stream is None else lattice_stream())
        tuning = {"ntrue_scale": ntrue_scale, "atwv_by_scale": atwv_by_scale}
        click.echo(f"lattice-tools: KST tuned on the dev set: ntrue-scale {ntrue_scale:.4g} "
                   f"(ATWV {max(a for _, a in atwv_by_scale):.4f})", err=True)
    from ..core.parallel import open_executor
    from ..kws.search import SearchResult

    res = SearchResult()   # every list but the detections, which go to the file part by part
    yes = detections = 0
    with open_executor(jobs=jobs, scheduler=scheduler) as executor, \
            _DetectionsWriter(out, out_format, kwlist_filename=kwlist_filename or os.path.basename(kwlist),
                              language=language, system_id=system_id, utterance_ids=utterance_ids,
                              frame_shift=frame_time, offsets=offsets) as writer:
        for kwids, part in search_parts(index, terms, normalization=normalization, threshold=threshold,
                                        duration=duration, ntrue_scale=ntrue_scale, beta=beta, duptime=duptime,
                                        lattices=None if lattice_stream is None else lattice_stream(),
                                        executor=executor):
            writer.write(kwids, part)
            detections += len(part.detections)
            yes += sum(d.decision for d in part.detections)
            res.oov.extend(part.oov)
            res.too_long.extend(part.too_long)
            res.no_hits.extend(part.no_hits)
            res.kst_unnormalized.extend(part.kst_unnormalized)
            res.oov_words.update(part.oov_words)
    summary = {**res.summary(), "detections": detections, "yes": yes}
    click.echo(json.dumps(summary, sort_keys=True), err=True)
    for what, listed, hint in (("out of vocabulary", res.oov, ""),
                               ("longer than the index's max length", res.too_long,
                                " (answer them with --lattices: the lattices the index was built from)"),
                               ("without hits", res.no_hits, "")):
        if listed:
            click.echo(f"lattice-tools: {len(listed)} keyword(s) {what}: {' '.join(listed)}{hint}", err=True)
    summary.update(oov=res.oov, oov_words=res.oov_words, too_long=res.too_long, no_hits=res.no_hits,
                   kst_unnormalized=res.kst_unnormalized)
    if tuning is not None:
        summary["tuning"] = tuning
    _write_json(summary, json_out)


class _DetectionsWriter:
    """The detections of ``kws search`` written as the search's parts come (term order), in one of the formats:
    ``tsv``, ``kwslist`` (every searched term gets its element) or ``kaldi`` (result lines); atomically."""

    def __init__(self, out, out_format, *, kwlist_filename, language, system_id, utterance_ids, frame_shift,
                 offsets):
        self.out, self.out_format = out, out_format
        self.kwslist = dict(kwlist_filename=kwlist_filename, language=language, system_id=system_id)
        self.kaldi = dict(utterance_ids=utterance_ids, frame_shift=frame_shift, offsets=offsets)
        # a KwslistWriter (kwslist) or an atomic_write context (text formats), and what it opened
        self._ctx: Any = None
        self._f: Any = None

    def __enter__(self):
        if self.out_format == "kwslist":
            from ..io.keyword_search.kwslist import KwslistWriter

            self._ctx = KwslistWriter(self.out, **self.kwslist)
        else:
            self._ctx = atomic_write(self.out, "w")
        self._f = self._ctx.__enter__()
        return self

    def __exit__(self, *exc):
        return self._ctx.__exit__(*exc)

    def write(self, kwids, part) -> None:
        if self.out_format == "kwslist":
            by_kwid: dict = {k: [] for k in kwids}
            for d in part.detections:
                by_kwid[d.kwid].append(d)
            oov = set(part.oov)
            for kwid, dets in by_kwid.items():
                self._f.write_term(kwid, dets, oov=kwid in oov)
        elif self.out_format == "kaldi":
            from ..io.keyword_search.kaldi_kws import kaldi_result_lines

            self._f.writelines(kaldi_result_lines(part.detections, self.kaldi["utterance_ids"],
                                                  frame_shift=self.kaldi["frame_shift"],
                                                  offsets=self.kaldi["offsets"]))
        else:
            self._f.write("".join(f"{d.kwid}\t{d.file}\t{d.channel}\t{d.tbeg:.2f}\t{d.dur:.2f}\t{d.score:.6g}\t"
                                  f"{'YES' if d.decision else 'NO'}\n" for d in part.detections))


@click.command("align")
@click.argument("audio", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-t", "--transcript", required=True, type=click.Path(dir_okay=False),
              help="Transcripts: NIST trn ('words (key)') or Kaldi text ('key words'); key = audio file name "
                   "without extension.")
@click.option("-o", "--out", default=None, type=click.Path(dir_okay=False),
              help="Reference CTM to write ('key channel start dur word').")
@click.option("--rttm", default=None, type=click.Path(dir_okay=False),
              help="Reference RTTM to write (SPEAKER turn + LEXEME lines).")
@click.option("--ecf", default=None, type=click.Path(dir_okay=False),
              help="ECF to write: one excerpt per audio file, all of its audio.")
@channel_option
@click.option("--model", default=None, type=click.Path(file_okay=False),
              help="pocketsphinx acoustic model directory (default: the wheel's en-us).")
@click.option("--dictionary", default=None, type=click.Path(dir_okay=False),
              help="Pronunciation dictionary (default: the wheel's CMUdict).")
@click.option("--check-ctm", default=None, type=click.Path(dir_okay=False),
              help="A CTM of the same audio (e.g. the decoder's 1-best): report how far its word times are "
                   "from the alignment's where the words agree.")
@click.option("--encoding", default="utf-8", show_default=True, help="Encoding of the transcripts.")
@click.option("--json", "json_out", default=None, help="Write the counts (and the check) as JSON (PATH or -).")
def align_command(audio, transcript, out, rttm, ecf, channel, model, dictionary, check_ctm, encoding, json_out):
    """Reference word times by forced alignment of AUDIO (files or directories) to their transcripts
    with pocketsphinx: a CTM, an RTTM and an ECF for keyword search scoring."""
    from ..decode.align import align_audio, ctm_word_times, word_time_agreement, write_alignment

    if not (out or rttm or ecf):
        raise click.UsageError("give at least one output: -o/--out CTM, --rttm or --ecf")
    paths = _expand_audio(audio)
    utts = align_audio(paths, transcript, model=model, dictionary=dictionary, encoding=encoding)
    write_alignment(utts, ctm=out, rttm=rttm, ecf=ecf, channel=channel)
    result = {"utterances": len(utts), "words": sum(len(u.words) for u in utts),
              "seconds": round(sum(u.duration for u in utts), 3),
              "aligned_without_silences": [u.key for u in utts if not u.with_silences]}
    if check_ctm:
        ref = [(w.key, w.start, w.dur, w.word) for u in utts for w in u.words]
        result["check"] = word_time_agreement(ref, ctm_word_times(check_ctm, encoding))
    click.echo(json.dumps(result, sort_keys=True), err=True)
    _write_json(result, json_out)


def _expand_audio(audio) -> list[str]:
    """Audio arguments (files or directories of .wav/.flac) as files; a list file (``*.list``/
    ``*.scp`` with one path per line) is read."""
    from ..decode.pocketsphinx import audio_paths
    from ..pipelines.recipe import read_list

    paths: list[str] = []
    for a in audio:
        paths.extend(read_list(a) if a.endswith((".list", ".scp")) else audio_paths(a))
    return paths


@click.command("ecf")
@click.argument("audio", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False), help="The ECF XML to write.")
@channel_option
@click.option("--language", default="english", show_default=True, help="The ECF's language attribute.")
@click.option("--source-type", type=click.Choice(["bnews", "cts", "splitcts", "confmtg"]), default="bnews",
              show_default=True, help="Every excerpt's source_type, one of the four F4DE's schema allows "
                                      "(bnews for read speech; splitcts makes F4DE count it half).")
def ecf_command(audio, out, channel, language, source_type):
    """Write an ECF with one excerpt per AUDIO file (files, directories or *.list files) covering all of it."""
    from ..decode.align import ecf_for_audio
    from ..io.keyword_search.ecf import write_ecf

    ecf = ecf_for_audio(_expand_audio(audio), channel=channel, language=language, source_type=source_type)
    write_ecf(out, ecf)
    click.echo(f"{len(ecf.excerpts)} excerpts, {ecf.source_signal_duration:.3f} s -> {out}", err=True)
