"""``lattice-tools oracle`` and ``lattice-tools study``: thin wrappers over
:func:`lattice_tools.oracle.report.oracle_wer` and :func:`lattice_tools.oracle.study.run_study`."""
from __future__ import annotations

import click

from ._inputs import allow_untimed_option, lattice_input_options
from ._options import DEPTH, DEPTHS, LATTICE_FORMATS, json_option, out_option, parallel_options


def reference_and_lattice_options(command):
    """The options oracle and study share: the reference, its format, and how lattices are read."""
    for option in reversed([
        click.option("-r", "--ref", "reference", required=True, help="Reference: STM, trn or Kaldi text ('key words')."),
        click.option("--ref-format", type=click.Choice(["stm", "trn", "text"]), default=None,
                     help="Reference format (default: .stm/.trn extension, else detected from the content)."),
        click.option("--format", "format", type=click.Choice(LATTICE_FORMATS), default=None,
                     help="Lattice format (default: from the name)."),
        lattice_input_options,
    ]):
        command = option(command)
    return command


def segments_option(f):
    """``--segments`` (parameter ``segments``): utterance-keyed lattices against an STM."""
    return click.option("--segments", type=click.Path(dir_okay=False), default=None,
                        help="Kaldi segments file 'utt recording start end': lattices keyed by utterance against an "
                             "STM keyed by recording (each STM segment is the reference of the utterance it overlaps "
                             "most).")(f)


@click.command("oracle")
@click.argument("inputs", nargs=-1, required=True)
@reference_and_lattice_options
@click.option("--allow-missing", is_flag=True, help="Leave reference utterances without a lattice out of the WER.")
@allow_untimed_option
@click.option("--glm", "glm", multiple=True,
              help="GLM applied like csrfilt.sh to the reference and to the hypothesis words (the alt-CTM, or the "
                   "alternatives built from the lattices), as 'score --glm' (repeatable, in order).")
@click.option("-D", "optional_deletable", is_flag=True, help="Optional (parenthesised) words are deletable (sclite -D).")
@click.option("--mode", type=click.Choice(["sclite", "levenshtein"]), default="sclite", show_default=True,
              help="sclite weights and tie rules, or plain Levenshtein (fewest errors).")
@click.option("--representation", type=click.Choice(["lattice", "1best", "nbest", "sausage", "phrase"]),
              default="lattice", show_default=True, help="What to take the oracle over (lattice inputs).")
@click.option("-n", "n", type=DEPTH, default=None,
              help="Depth N of N-best/sausage/phrase: an integer >= 1 or 'inf' (default: all).")
@click.option("--posterior-threshold", default=0.1, show_default=True, type=float, help="Phrase boundary threshold.")
@click.option("--acoustic-scale", default=1.0, show_default=True, type=float)
@click.option("--lm-scale", default=1.0, show_default=True, type=float)
@click.option("--word-penalty", default=0.0, show_default=True, type=float)
@click.option("--segment-free", is_flag=True,
              help="Whole-side lattices (keys file-channel, file_channel or file) against all the STM segments "
                   "of their side: the lattice's oracle path, or the segment-free alignment of a representation's "
                   "alternatives (= score --segment-free of their alt-CTM).")
@click.option("--collar", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="With --segment-free: a word pairs only with a reference word whose span widened by SECONDS "
                   "holds its midpoint (meeteval's tcpWER convention).")
@click.option("--bootstrap", "bootstrap", default=0, show_default=True, type=int,
              help="Utterance-bootstrap replications for a 95% interval (0: none).")
@click.option("--seed", default=0, show_default=True, type=int, help="Bootstrap seed.")
@json_option("Also write the report (per-utterance counts) as JSON here ('-' = stdout instead of the table).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the reference, GLM and CTM files (e.g. latin-1, gb2312).")
@segments_option
@parallel_options
def oracle_command(inputs, reference, ref_format, format, words, frame_shift, frame_subsampling_factor, keys,
                   allow_missing, allow_untimed, glm, optional_deletable, mode, representation, n,
                   posterior_threshold, acoustic_scale, lm_scale, word_penalty, segment_free, collar, bootstrap, seed,
                   json_out, encoding, max_memory, segments, jobs, scheduler):
    """Exact oracle WER of INPUTS (lattices: SLF dirs/files, ark:..., .pt ...; or one alt-CTM file)."""
    from ..core.parallel import open_executor, shard_dir_for
    from ..oracle.report import format_report, oracle_wer

    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        report = oracle_wer(list(inputs), reference, glm=list(glm), optional_deletable=optional_deletable, mode=mode,
                            representation=representation, n=n, posterior_threshold=posterior_threshold,
                            acoustic_scale=acoustic_scale, lm_scale=lm_scale, word_penalty=word_penalty,
                            bootstrap=bootstrap, seed=seed, json_out=json_out, ref_format=ref_format, format=format,
                            words=words, frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor,
                            keys=keys, allow_missing=allow_missing, allow_untimed=allow_untimed, max_memory=max_memory,
                            encoding=encoding, segments=segments, segment_free=segment_free, collar=collar,
                            executor=executor, shard_dir=shard_dir_for(json_out or "", executor))
    for w in report.warnings:
        click.echo(f"lattice-tools: warning: {w}", err=True)
    if json_out != "-":
        click.echo(format_report(report))


@click.command("study")
@click.argument("lattice_sets", nargs=-1, required=True)
@reference_and_lattice_options
@out_option("Output directory (tables, plots, per-cell cache).", hidden_aliases=("--out-dir",), required=True)
@click.option("-n", "ns", type=DEPTHS, default="1,2,10,100,1000,10000", show_default=True,
              help="Comma-separated depths N (integers >= 1; 'inf' is added unless --no-infinity).")
@click.option("--representations", default="nbest,sausage,phrase,lattice", show_default=True,
              help="Comma-separated: nbest, sausage, phrase, lattice (the 1-best is always added).")
@click.option("--prune", "prune_thresholds", default="0", show_default=True,
              help="Comma-separated posterior-pruning thresholds (each is one density).")
@click.option("--no-infinity", is_flag=True, help="Do not add N=inf.")
@click.option("-D", "optional_deletable", is_flag=True, help="Optional (parenthesised) words are deletable (sclite -D).")
@click.option("--mode", type=click.Choice(["sclite", "levenshtein"]), default="sclite", show_default=True)
@click.option("--posterior-threshold", default=0.1, show_default=True, type=float, help="Phrase boundary threshold.")
@click.option("--acoustic-scale", default=1.0, show_default=True, type=float)
@click.option("--lm-scale", default=1.0, show_default=True, type=float)
@click.option("--bootstrap", default=1000, show_default=True, type=int, help="Bootstrap replications (0: none).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--no-plots", is_flag=True)
@click.option("--title", default=None, help="What the data is, for table and plot titles (default: set names and "
                                           "reference file name).")
@click.option("--allow-missing", is_flag=True, help="Leave reference utterances without a lattice out of the WER.")
@allow_untimed_option
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the reference and GLM files (e.g. latin-1).")
@click.option("--glm", "glm", multiple=True,
              help="GLM applied like csrfilt.sh to the reference and to the words of every representation's "
                   "alternatives (repeatable, in order; not with the lattice representation).")
@segments_option
@click.option("--no-view", is_flag=True, help="Do not write view.html (the browser view of the first lattice set, "
                                             "linked from study.md; see 'lattice-tools view').")
@click.option("--segment-free", is_flag=True,
              help="Whole-side lattices (keys file-channel, file_channel or file) against a multi-segment STM: every "
                   "cell's alt-CTM scored both ways, segmented (as sclite) and segment-free, with the words that "
                   "moved across a segment boundary counted (no intervals or plots); with --segments, "
                   "per-utterance lattices placed on their recording's side at the utterance's start.")
@click.option("--collar", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="With --segment-free: a word pairs only with a reference word whose span widened by SECONDS "
                   "holds its midpoint (meeteval's tcpWER convention).")
@parallel_options
def study_command(lattice_sets, reference, ref_format, format, words, frame_shift, frame_subsampling_factor, keys,
                  out, ns, representations, prune_thresholds, no_infinity, optional_deletable, mode,
                  posterior_threshold, acoustic_scale, lm_scale, bootstrap, seed, no_plots, title, allow_missing,
                  allow_untimed, encoding, glm, max_memory, segments, no_view, segment_free, collar, jobs, scheduler):
    """Density vs oracle WER (Tables 3-6 of "Toward Zero Oracle Word Error Rate on the Switchboard Benchmark"
    by Faria et al.).  LATTICE_SETS: NAME=SPEC ... (or SPEC, named by itself); NAME=a NAME=b or a quoted
    pattern (NAME='lat.*.gz') joins several inputs into one set."""
    from ..oracle.study import run_study

    sets: dict = {}
    for item in lattice_sets:  # NAME=a NAME=b (or a pattern) join one set: never one silently replaced
        name, _, spec = item.partition("=") if "=" in item else (item, "", item)
        sets.setdefault(name, []).append(spec)
    n_list = [n for n in ns if n is not None]
    try:
        thresholds = [float(x) for x in prune_thresholds.split(",") if x.strip()]
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--prune") from None
    from ..core.parallel import open_executor

    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        result = run_study(sets, reference, ns=n_list, representations=[r.strip() for r in representations.split(",")],
                           prune_thresholds=thresholds, out_dir=out, mode=mode, optional_deletable=optional_deletable,
                           include_infinity=not no_infinity or None in ns, posterior_threshold=posterior_threshold,
                           acoustic_scale=acoustic_scale, lm_scale=lm_scale, bootstrap=bootstrap, seed=seed,
                           plots=not no_plots, title=title, ref_format=ref_format, format=format, words=words,
                           frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                           allow_untimed=allow_untimed, encoding=encoding, allow_missing=allow_missing, glm=list(glm),
                           max_memory=max_memory, segments=segments, segment_free=segment_free, collar=collar,
                           executor=executor)
    if not no_view and not segments and not segment_free and "markdown" in result.files:
        # (the view keys per-utterance lattices as oracle does)
        import os

        from ..viewer.build import link_view, view

        first = next(iter(sets))
        page = os.path.join(out, "view.html")
        view(sets[first], page, reference=reference, ref_format=ref_format, mode=mode,
             optional_deletable=optional_deletable, posterior_threshold=posterior_threshold,
             acoustic_scale=acoustic_scale, lm_scale=lm_scale, format=format, words=words, frame_shift=frame_shift,
             frame_subsampling_factor=frame_subsampling_factor, keys=keys, encoding=encoding, title=title,
             glm=list(glm), max_memory=max_memory,
             representations=[r.strip() for r in representations.split(",")])
        link_view(result.files["markdown"], page, f"the lattice set {first!r}, its alternatives and oracles")
        result.files["view"] = page
    held = sum(i.holds for i in result.invariants)
    click.echo(f"{len(result.rows)} cells; invariants: {held}/{len(result.invariants)} hold")
    for k, v in result.files.items():
        click.echo(f"{k}: {v}")
