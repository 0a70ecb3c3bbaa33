"""``lattice-tools score`` and ``lattice-tools ladder``: thin wrappers over
:func:`lattice_tools.scoring.sclite.score_files` and :func:`lattice_tools.scoring.ladder.run_ladder`."""
from __future__ import annotations

import click

from ..core.files import write_json
from ._options import check_one_stdout, json_option, max_memory_option, out_option, parallel_options

# '-h' is the hypothesis here (as in sclite), so help is only '--help'.
_CTX = {"help_option_names": ["--help"]}


@click.command("score", context_settings=_CTX)
@click.option("-r", "--ref", "ref", required=True, help="Reference: STM, trn or Kaldi text file ('-' = stdin).")
@click.option("-h", "--hyp", "hyp", required=True,
              help="Hypothesis: CTM (ALT blocks allowed), trn or Kaldi text file ('-' = stdin).")
@click.option("--glm", "glms", multiple=True, help="GLM applied to both sides like csrfilt.sh (repeatable, in order).")
@click.option("--ref-format", type=click.Choice(["stm", "trn", "text"]), default=None,
              help="Reference format (default: .stm/.trn extension, else detected from the content).")
@click.option("--hyp-format", type=click.Choice(["ctm", "trn", "text"]), default=None,
              help="Hypothesis format (default: .ctm/.trn extension, else detected from the content).")
@click.option("-D", "optional_deletable", is_flag=True, help="Optional (parenthesised) words are deletable (sclite -D).")
@click.option("-F", "fragments", is_flag=True, help="Fragments 'pla-'/'-ing' match (sclite -F).")
@click.option("-s", "--case-sensitive", "case_sensitive", is_flag=True, help="Case-sensitive comparison (sclite -s).")
@click.option("--case-language", default=None,
              help="Case folding: ascii (default, like sclite), unicode, turkish, vietnamese, ukrainian.")
@click.option("--single-segment", is_flag=True, help="Merge each speaker/channel's STM segments into one.")
@click.option("--segment-free", is_flag=True,
              help="One alignment per file and channel (ALT blocks may cross STM segments), reported in the "
                   "STM's segments; without --collar the counts of sclite with one segment per side.")
@click.option("--collar", type=click.FloatRange(min=0), default=None, metavar="SECONDS",
              help="With --segment-free: a word pairs only with a reference word whose span widened by SECONDS "
                   "holds its midpoint (meeteval's tcpWER convention).")
@click.option("--mode", type=click.Choice(["sclite", "levenshtein"]), default="sclite", show_default=True)
@click.option("--allow-missing", is_flag=True, help="Tolerate files/channels/utterances missing on one side.")
@click.option("-m", "--reduce", "reduce", multiple=True, type=click.Choice(["ref", "hyp"]),
              help="sclite -m: drop ref segments / hyp words outside the other side's span.")
@click.option("--id-type", default="spu_id", show_default=True, help="trn speaker ids: spu_id, wsj, sp, ...")
@click.option("--nested-alternatives", type=click.Choice(["flatten", "error"]), default="flatten", show_default=True,
              help="ALT blocks a GLM nests inside ALT blocks (sclite mis-scores them): flatten them, "
                   "alternatives in listed order, or refuse.")
@click.option("--speaker-stats", type=click.Choice(["sclite", "corrected"]), default="sclite", show_default=True,
              help="Mean/S.D./Median over speakers: as sclite prints them, or corrected (sclite uses the wrong "
                   "speakers when two or more have no reference words; docs/scoring.md).")
@click.option("--ctm-type", "ctm_types", multiple=True,
              type=click.Choice(["lex", "frag", "fp", "un-lex", "for-lex", "non-lex"]),
              help="NIST RT CTMs (8 fields): score only tokens of this type (repeatable; 'lex' = hubscr -h rt-stt). "
                   "Default: every token, as sclite.")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the reference, hypothesis and GLM files (e.g. latin-1, gb2312); the "
                   ".sys/.raw/.pra reports are written in it too, as sclite does.")
@max_memory_option(help_text="A segment whose alignment table would not fit is refused before it is allocated.")
@out_option("Write the report set <name>.sys/.raw/.pra/.dtl/.json into this directory (see docs/scoring.md: "
            "<name>.json is written last and marks a complete set).", hidden_aliases=("--out-dir",), default=None)
@click.option("--name", default=None, help="Base name of the report files (default: hypothesis file name).")
@json_option("Write the JSON report here ('-' = stdout instead of the table).")
@parallel_options
def score_command(ref, hyp, glms, ref_format, hyp_format, optional_deletable, fragments, case_sensitive,
                  case_language, single_segment, segment_free, collar, mode, allow_missing, reduce, id_type,
                  nested_alternatives, speaker_stats, ctm_types, encoding, max_memory, out, name, json_out, jobs,
                  scheduler):
    """Score a CTM/alt-CTM/trn against an STM/trn reference exactly like NIST sclite."""
    from ..scoring.reports import json_report, sys_report, write_reports
    from ..scoring.sclite import score_files

    if collar is not None and not segment_free:
        raise click.UsageError("--collar applies to --segment-free scoring only")
    if segment_free and (single_segment or reduce):
        raise click.UsageError("--segment-free does not combine with --single-segment or -m")
    from ..core.parallel import open_executor

    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        result = score_files(ref, hyp, glms=glms, ref_format=ref_format, hyp_format=hyp_format,
                             optional_deletable=optional_deletable, fragments=fragments, case_sensitive=case_sensitive,
                             mode=mode, single_segment=single_segment, allow_missing=allow_missing, reduce=reduce,
                             id_type=id_type, case_language=case_language, nested_alternatives=nested_alternatives,
                             ctm_types=ctm_types, encoding=encoding, segment_free=segment_free, collar=collar,
                             max_memory=max_memory, executor=executor)
    for w in result.warnings:
        click.echo(f"lattice-tools: warning: {w}", err=True)
    if out:
        write_reports(result, out, name, speaker_stats=speaker_stats)
    if json_out:
        write_json(json_out, json_report(result))
    if json_out != "-":
        click.echo(sys_report(result, speaker_stats=speaker_stats), nl=False)
        click.echo(result.total.kaldi_line())
        click.echo(result.total.kaldi_ser_line())


@click.command("ladder", context_settings=_CTX)
@click.option("-r", "--ref", "ref", required=True, help="Reference STM.")
@click.option("-h", "--hyp", "hyps", required=True, multiple=True, help="System CTM (repeatable; NAME=PATH to label).")
@click.option("--glm", "glms", multiple=True, required=True,
              help="GLMs: the first is the base GLM, each further one is added in turn (repeatable).")
@click.option("--corrected-stm", default=None, help="Corrected reference STM (Faria et al., 'STM with corrections').")
@click.option("--reference-segmentation", "ref_seg_hyps", multiple=True,
              help="NAME=PATH CTM of a system run on the reference segmentation (last row).")
@out_option("Write the Markdown table here ('-' = stdout, default).", default=None)
@json_option("Write the JSON results here ('-' = stdout instead of the table).")
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the STM, CTM and GLM files (e.g. latin-1, gb2312).")
@click.option("--allow-missing", is_flag=True, help="Tolerate files/channels missing on one side (as score).")
def ladder_command(ref, hyps, glms, corrected_stm, ref_seg_hyps, out, json_out, encoding, allow_missing):
    """WER under successive scoring configurations (Faria et al., Table 1)."""
    from ..core.files import atomic_write
    from ..scoring.ladder import ladder_markdown, run_ladder

    def parse(items):
        out_list = []
        for h in items:
            label, sep, path = h.partition("=")
            out_list.append((label, path) if sep else (h.rsplit("/", 1)[-1], h))
        return out_list

    result = run_ladder(ref, parse(hyps), list(glms), corrected_stm=corrected_stm,
                        reference_segmentation=dict(parse(ref_seg_hyps)), encoding=encoding,
                        allow_missing=allow_missing)
    for w in result["warnings"]:
        click.echo(f"lattice-tools: warning: {w}", err=True)
    table = ladder_markdown(result)
    check_one_stdout(**{"-o/--out": out, "--json": json_out})
    if out and out != "-":
        with atomic_write(out) as f:
            f.write(table)
    elif json_out != "-":
        click.echo(table, nl=False)
    if json_out:
        write_json(json_out, result, sort_keys=False)
