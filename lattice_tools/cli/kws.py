"""``lattice-tools kws ...``: keyword search (spoken term detection).

The group loads its sub-commands lazily from :data:`KWS_COMMANDS` (name -> ``"module:attribute"``
relative to ``lattice_tools.cli``, and a one-line help), so that adding a sub-command is one entry there.
"""
from __future__ import annotations

import json

import click

from ._inputs import lattice_input_options
from ._lazy import LazyCommandGroup

KWS_COMMANDS: dict[str, tuple[str, str]] = {
    "score": ("kws:score_command", "Score a kwslist exactly like NIST F4DE KWSEval (ATWV, MTWV, OTWV, STWV)."),
    "kwlist": ("kws:kwlist_command", "Make a keyword list (words and multi-word terms) from reference word times."),
    "index": ("kws_index:index_command", "Index every word sequence of lattices or alternatives into an SQLite term index."),
    "merge": ("kws_index:merge_command", "Merge term-index shards into one (Kaldi's kws-index-union)."),
    "search": ("kws_index:search_command", "Search a keyword list in a term index: detections, scores, YES/NO."),
    "study": ("kws:study_command", "The STD study: index, search and score every representation (ATWV..STWV, sizes, times)."),
    "align": ("kws_index:align_command", "Reference word times (CTM, RTTM, ECF) by forced alignment with pocketsphinx."),
    "ecf": ("kws_index:ecf_command", "Write an ECF covering whole audio files."),
}


class _LazyKwsGroup(LazyCommandGroup):
    command_table = KWS_COMMANDS


@click.group("kws", cls=_LazyKwsGroup)
def kws_group():
    """Keyword search: make keyword lists, index lattices or alternatives, search, and score system output
    like NIST F4DE."""


def _parse_groups(items):
    out = {}
    for item in items:
        name, sep, types = item.partition(":")
        if not sep:
            name, types = item, item
        out[name] = [t for t in types.split(",") if t]
    return out


@click.command("score")
@click.option("-e", "--ecf", required=True, help="ECF: the excerpts the evaluation covers (its duration gives T).")
@click.option("-t", "--kwlist", required=True, help="KWlist XML: the keywords.")
@click.option("-s", "--kwslist", required=True, help="kwslist XML: the system's detections.")
@click.option("-r", "--rttm", default=None, help="Reference RTTM (LEXEME lines).")
@click.option("--ctm", default=None, help="Reference word times as a CTM (instead of --rttm).")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the inputs.")
@click.option("--include-no-targets", is_flag=True, help="Average over keywords without reference occurrences too (F4DE -inc).")
@click.option("--just-system-terms", is_flag=True, help="Only keywords present in the kwslist (F4DE -j).")
@click.option("--find-threshold", default=0.5, show_default=True, type=float,
              help="Largest gap (s) between the words of a reference occurrence (F4DE -F).")
@click.option("--similarity-threshold", default=0.5, show_default=True, type=float,
              help="A hit's midpoint may lie this far (s) outside a reference occurrence (F4DE -S).")
@click.option("--trials-per-second", default=1.0, show_default=True, type=float, help="F4DE -n.")
@click.option("--prob-of-term", default=0.0001, show_default=True, type=float, help="P_target (F4DE -p).")
@click.option("--cost", default=0.1, show_default=True, type=float, help="Cost of a false alarm (F4DE -k).")
@click.option("--value", default=1.0, show_default=True, type=float, help="Value of a correct detection (F4DE -K).")
@click.option("--char-split", is_flag=True, help="Split words into characters (F4DE -x charsplit).")
@click.option("--not-ascii", is_flag=True, help="With --char-split: keep ASCII words whole (F4DE -x notASCII).")
@click.option("--delete-hyphens", is_flag=True, help="With --char-split: hyphens separate (F4DE -x deleteHyphens).")
@click.option("--source-type", "source_types", multiple=True,
              help="Conditional scores for a group of ECF source types, NAME:type,type (F4DE -Y; repeatable).")
@click.option("--query", "queries", multiple=True,
              help="Conditional scores per KWlist attribute value, e.g. 'NGram' or 'Chars:regex=^[35]$' (F4DE -q).")
@click.option("--term-set", "term_sets", multiple=True,
              help="Conditional scores for a set of keyword ids, NAME:kwid,kwid (regular expressions matching whole "
                   "ids, any case; F4DE -T; repeatable).")
@click.option("--file-channel", "file_channels", multiple=True,
              help="Score only recordings whose FILE/CHANNEL matches this regular expression (whole string, any "
                   "case; F4DE -N; one pattern per option, repeatable).")
@click.option("--pooled", is_flag=True,
              help="All keywords' trials in one block: occurrence-weighted P_miss, P_FA and DET curve (F4DE -P).")
@click.option("--segment-based", is_flag=True,
              help="Score per speech/non-speech segment of the excerpts (F4DE -g; needs the RTTM's SPEAKER turns).")
@click.option("--ignore-outside-ecf", is_flag=True,
              help="Drop hits for files/channels the ECF does not name (as F4DE does) instead of failing.")
@click.option("--allow-overlapping-reference", is_flag=True,
              help="Accept reference words of one speaker that overlap in time (F4DE does not check).")
@click.option("--xml-correct", is_flag=True,
              help="Read texts as the XML and Unicode standards say, not as F4DE does (default: F4DE's numbers): "
                   "decode entities such as &amp; in <kwtext>, lowercase a final capital sigma to ς, and remove "
                   "only a last .sph from a kwslist file name (docs/kws.md).")
@click.option("--otwv/--no-otwv", default=True, show_default=True, help="Report the optimum (per-keyword) TWV.")
@click.option("--stwv/--no-stwv", default=True, show_default=True, help="Report the supremum TWV (hit-list recall).")
@click.option("--block/--no-block", default=True, show_default=True, help="Print the per-keyword table too.")
@click.option("-o", "--out", default=None,
              help="Directory for F4DE-style report files: sum.txt, bsum.txt (and cond.sum.txt, cond.bsum.txt).")
@click.option("--alignment", default=None, help="Write F4DE's alignment CSV here (one line per pair, miss, false alarm).")
@click.option("--det", default=None, help="Write the DET curve PNG here.")
@click.option("--json", "json_out", default=None, help="Write the scores as JSON here ('-' = stdout).")
def score_command(ecf, kwlist, kwslist, rttm, ctm, encoding, include_no_targets, just_system_terms, find_threshold,
                  similarity_threshold, trials_per_second, prob_of_term, cost, value, char_split, not_ascii,
                  delete_hyphens, source_types, queries, term_sets, file_channels, pooled, segment_based, ignore_outside_ecf, allow_overlapping_reference,
                  xml_correct, otwv, stwv, block, out, alignment, det, json_out):
    """Score a kwslist against reference occurrences exactly like NIST F4DE KWSEval (occurrence or segment scoring).

    Prints F4DE's summary table (and the per-keyword block table); numbers are F4DE's to the last digit."""
    import os

    from ..core.files import atomic_write
    from ..kws.f4de_report import alignment_csv, block_table, summary_table
    from ..kws.score import score_kws_files

    if sum(bool(x) for x in (source_types, queries, term_sets)) > 1:
        raise click.UsageError("--source-type, --query and --term-set cannot be combined (one condition at a time, "
                               "as in F4DE)")
    if alignment and segment_based:
        # (the segment alignment's CSV is not written: refused rather than an empty file)
        raise click.UsageError("--alignment is not available with --segment-based (only the occurrence alignment "
                               "is written)")
    ev = score_kws_files(ecf, kwlist, kwslist, rttm=rttm, ctm=ctm, encoding=encoding,
                         check_reference_overlaps=not allow_overlapping_reference,
                         include_no_targets=include_no_targets, just_system_terms=just_system_terms,
                         find_threshold=find_threshold, similarity_threshold=similarity_threshold,
                         trials_per_second=trials_per_second, prob_of_term=prob_of_term, cost=cost, value=value,
                         char_split_text=char_split, not_ascii=not_ascii, delete_hyphens=delete_hyphens,
                         source_type_groups=_parse_groups(source_types) or None, attribute_queries=list(queries),
                         term_sets=_parse_groups(term_sets) or None, file_channels=list(file_channels), pooled=pooled,
                         outside_ecf="ignore" if ignore_outside_ecf else "error", segment_based=segment_based,
                         xml_correct=xml_correct)
    reports = {"sum.txt": summary_table([ev.overall], optimum=otwv, supremum=stwv),
               "bsum.txt": block_table([ev.overall], optimum=otwv, supremum=stwv)}
    conds = list(ev.conditions.values())
    if conds:
        reports["cond.sum.txt"] = summary_table(conds, optimum=otwv, supremum=stwv)
        reports["cond.bsum.txt"] = block_table(conds)   # F4DE's: no per-keyword optimum/supremum columns
    csv_text = alignment_csv(ev.alignment, ev.language) if alignment else None
    # Every output is complete in memory before the first file is written; each file is renamed into place.
    if out:
        os.makedirs(out, exist_ok=True)
        for name, text in reports.items():
            with atomic_write(os.path.join(out, name)) as f:
                f.write(text)
    if alignment:
        with atomic_write(alignment) as f:
            f.write(csv_text)
    if det:
        from ..kws.det import plot_det

        plot_det({ev.overall.title: ev.overall, **ev.conditions}, det,
                 title="Pooled (occurrence-weighted) DET curve" if pooled else "")
    payload = {"overall": ev.overall.to_json(), "conditions": {k: v.to_json() for k, v in ev.conditions.items()}}
    if json_out:
        text = json.dumps(payload, indent=2, sort_keys=True) + "\n"
        if json_out == "-":
            click.echo(text, nl=False)
            return
        with atomic_write(json_out) as f:
            f.write(text)
    click.echo(reports["sum.txt"], nl=False)
    if block:
        click.echo(reports["bsum.txt"], nl=False)
    for name in ("cond.sum.txt", "cond.bsum.txt"):
        if name in reports and (block or name == "cond.sum.txt"):
            click.echo(reports[name], nl=False)


@click.command("kwlist")
@click.option("-r", "--rttm", default=None, help="Reference RTTM (LEXEME lines).")
@click.option("--ctm", default=None, help="Reference word times as a CTM (instead of --rttm).")
@click.option("-o", "--out", required=True, help="KWlist XML to write.")
@click.option("--num-terms", default=100, show_default=True, type=int, help="How many keywords.")
@click.option("--seed", default=0, show_default=True, type=int, help="Random seed of the draw.")
@click.option("--max-words", default=3, show_default=True, type=int, help="Longest multi-word term.")
@click.option("--multiword-fraction", default=0.3, show_default=True, type=float,
              help="Share of multi-word terms.")
@click.option("--min-count", default=1, show_default=True, type=int, help="Fewest reference occurrences.")
@click.option("--max-count", default=None, type=int, help="Most reference occurrences.")
@click.option("--min-chars", default=3, show_default=True, type=int, help="Shortest single-word term.")
@click.option("--ecf-filename", default="", help="Value of the KWlist's ecf_filename attribute.")
@click.option("--language", default="", help="Value of the KWlist's language attribute.")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the reference.")
def kwlist_command(rttm, ctm, out, num_terms, seed, max_words, multiword_fraction, min_count, max_count, min_chars,
                   ecf_filename, language, encoding):
    """Make a keyword list from reference word times (rules: docs/kws.md, "Making a keyword list")."""
    from ..core.errors import MismatchError
    from ..io.keyword_search.kwlist import write_kwlist
    from ..io.keyword_search.rttm import lexemes_from_ctm, read_rttm
    from ..kws.kwlist_make import make_kwlist

    if (rttm is None) == (ctm is None):
        raise MismatchError("give the reference as exactly one of --rttm or --ctm")
    refs = read_rttm(rttm, encoding=encoding, types=("LEXEME",)) if rttm else lexemes_from_ctm(ctm, encoding=encoding)
    terms = make_kwlist(refs, num_terms=num_terms, seed=seed, max_words=max_words,
                        multiword_fraction=multiword_fraction, min_count=min_count, max_count=max_count,
                        min_chars=min_chars)
    write_kwlist(out, terms, ecf_filename=ecf_filename, language=language, compare_normalize="lowercase")
    click.echo(f"{len(terms)} keywords ({sum(1 for t in terms if len(t.words) > 1)} multi-word) -> {out}", err=True)


@click.command("study")
@click.argument("inputs", nargs=-1, required=True)
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False),
              help="Output directory: kws_study.md/.json/.png, indexes/, kwslist/.")
@click.option("-r", "--rttm", default=None, help="Reference word times: an RTTM (LEXEME lines).")
@click.option("--ctm", default=None, help="Reference word times as a CTM (instead of --rttm).")
@click.option("-e", "--ecf", default=None, help="ECF (default: one excerpt per lattice, 0 to its last time).")
@click.option("-t", "--kwlist", default=None,
              help="KWlist XML (default: --num-terms keywords drawn from the reference, written to OUT/kwlist.xml).")
@click.option("--num-terms", default=100, show_default=True, type=int, help="Keywords to draw without --kwlist.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of that draw.")
@click.option("--representation", "representations", multiple=True,
              help="A row: 1best, lattice, nbest:N, sausage[:N], phrase:N:THETA (N an integer or inf; "
                   "repeatable; default: the study's standard rows, see docs/kws.md).")
@click.option("--max-length", type=int, default=3, show_default=True, help="Longest word sequence indexed.")
@click.option("--max-silence", type=float, default=0.5, show_default=True,
              help="Longest silence (seconds) between two words of a term; negative = no limit.")
@click.option("--normalization", type=click.Choice(["none", "kst", "sum-to-one"]), default="none",
              show_default=True, help="Search score normalization (kst uses the ECF duration as T).")
@click.option("--threshold", type=float, default=0.5, show_default=True, help="The global YES/NO threshold.")
@click.option("--duptime", type=float, default=0.5, show_default=True, help="Duplicate-hit removal window (s).")
@click.option("--format", "format", default=None, help="Lattice format (default: from the file name).")
@lattice_input_options
@click.option("--channel", default="1", show_default=True, help="Channel of every lattice's recording.")
@click.option("--acoustic-scale", type=float, default=1.0, show_default=True)
@click.option("--lm-scale", type=float, default=1.0, show_default=True)
@click.option("--word-penalty", type=float, default=0.0, show_default=True)
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of the inputs.")
@click.option("--allow-overlapping-reference", is_flag=True, help="Accept overlapping reference words of one speaker.")
@click.option("--title", default=None, help="What the data is, for the table and plot titles.")
@click.option("--no-plots", is_flag=True, help="Do not draw kws_study.png.")
@click.option("--json", "json_out", default=None, help="Write the rows and invariants as JSON (PATH or -).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
def study_command(inputs, out, rttm, ctm, ecf, kwlist, num_terms, seed, representations, max_length, max_silence,
                  normalization, threshold, duptime, format, words, frame_shift, frame_subsampling_factor, keys,
                  max_memory, channel,
                  acoustic_scale, lm_scale, word_penalty, encoding, allow_overlapping_reference, title, no_plots,
                  json_out, progress):
    """The spoken-term-detection study: index the 1-best, N-best lists, sausages, phrase alternatives and the
    whole lattice of INPUTS, search one keyword list in each and score it like F4DE (ATWV, MTWV, OTWV, STWV),
    with index sizes and times; prints the table and the invariants (docs/kws.md, "The STD study")."""
    from ..core.files import atomic_write
    from ..kws.study import kws_study_files

    if max_length < 1:
        raise click.BadParameter("must be >= 1", param_hint="--max-length")
    result = kws_study_files(inputs, out, rttm=rttm, ctm=ctm, ecf=ecf, kwlist=kwlist, num_terms=num_terms, seed=seed,
                             representations=representations, format=format, words=words, frame_shift=frame_shift,
                             frame_subsampling_factor=frame_subsampling_factor, keys=keys, max_memory=max_memory,
                             encoding=encoding,
                             allow_overlapping_reference=allow_overlapping_reference, max_length=max_length,
                             max_silence=None if max_silence < 0 else max_silence, normalization=normalization,
                             threshold=threshold, duptime=duptime, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                             word_penalty=word_penalty, channel=channel, title=title, plots=not no_plots,
                             progress=progress)
    with open(result.files["markdown"], encoding="utf-8") as f:
        click.echo(f.read(), nl=False)
    if json_out:
        text = json.dumps(result.to_dict(), indent=2, sort_keys=True) + "\n"
        if json_out == "-":
            click.echo(text, nl=False)
        else:
            with atomic_write(json_out) as f:
                f.write(text)
