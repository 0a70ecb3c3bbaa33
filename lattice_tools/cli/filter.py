"""``lattice-tools filter``: apply a NIST GLM exactly like csrfilt.sh (thin wrapper over
:func:`lattice_tools.scoring.glm.filter_file`)."""
from __future__ import annotations

import click

from ._options import out_option


@click.command("filter", context_settings={"ignore_unknown_options": False})
@click.option("--glm", "glm_path", required=True, type=click.Path(dir_okay=False),
              help="NIST GLM rule file (e.g. the RT-03 en20030506.glm).")
@click.option("-i", "--input-format", "fmt", type=click.Choice(["stm", "ctm", "trn", "txt"]), default="trn",
              show_default=True, help="Input format (csrfilt -i).")
@click.option("-dh", "--delete-hyphens", is_flag=True, help="Replace hyphens inside words by blanks (csrfilt -dh).")
@click.option("-s", "--no-upcase", is_flag=True, help="Do not upper-case the text (csrfilt -s).")
@click.option("-e", "--extended-ascii", is_flag=True, help="Also upper-case Latin-1 letters (csrfilt -e).")
@click.option("-t", "--purpose", type=click.Choice(["ref", "hyp"]), default=None,
              help="Data purpose for INPUT_DEPENDENT_APPLICATION sections (csrfilt -t).")
@click.option("--utterance-map", type=click.Path(dir_okay=False), default=None,
              help="csrfilt's optional utterance map (checked to exist; csrfilt 1.17 never applies it).")
@click.option("--encoding", default="utf-8", show_default=True, help="Text encoding of input and output.")
@click.option("--flatten-alternations", is_flag=True,
              help="(ctm) Repair: expand nested alternations properly and flatten nested ALT blocks.")
@click.option("--repair-optional", type=click.Choice(["parens", "at"]), default=None,
              help="(stm/trn) Repair optional words inside alternations, which crash sclite.")
@click.option("--optional-word", "optional_words", multiple=True,
              help="(stm/trn) Make this word an optional deletion (repeatable).")
@click.option("--optional-hesitations", is_flag=True,
              help="(stm/trn) Make the GLM's hesitation words (%HESITATION class) optional deletions.")
@click.option("--optional-backchannels", is_flag=True,
              help="(stm/trn) Make the GLM's backchannel words (%BCACK/%BCNACK classes) optional deletions.")
@click.option("--optional-style", type=click.Choice(["parens", "at"]), default="parens", show_default=True,
              help="Optional words as '(UH)' or '{ UH / @ }'.")
@click.option("--exclude-word", "exclude_words", multiple=True, help="(ctm) Drop this word (repeatable).")
@click.option("--exclude-hesitations", is_flag=True, help="(ctm) Drop the GLM's hesitation words.")
@click.option("--exclude-backchannels", is_flag=True, help="(ctm) Drop the GLM's backchannel words.")
@click.option("--max-alternatives", type=int, default=10000, show_default=True,
              help="Budget for flattening alternations.")
@out_option("Output file ('-' = stdout; without -o: the second argument).", default=None,
            type=click.Path(dir_okay=False, allow_dash=True))
@click.argument("in_path", type=click.Path(allow_dash=True))
@click.argument("out_path", type=click.Path(allow_dash=True), required=False)
def filter_command(glm_path, fmt, delete_hyphens, no_upcase, extended_ascii, purpose, utterance_map, encoding,
                   flatten_alternations, repair_optional, optional_words, optional_hesitations,
                   optional_backchannels, optional_style, exclude_words, exclude_hesitations,
                   exclude_backchannels, max_alternatives, out, in_path, out_path):
    """Apply a NIST GLM to IN_PATH (stm, ctm, trn or plain text) and write -o OUT ('-' = stdout).

    Without repair options the output is byte-identical to SCTK's csrfilt.sh.
    """
    if (out is None) == (out_path is None):
        raise click.UsageError("give the output once: -o/--out OUT (or IN_PATH OUT_PATH)")
    out_path = out if out is not None else out_path
    from ..scoring.glm import GlmFilterOptions, filter_file, glm_word_classes

    optional = list(optional_words)
    exclude = list(exclude_words)
    if optional_hesitations or optional_backchannels or exclude_hesitations or exclude_backchannels:
        hesitations, backchannels = glm_word_classes(glm_path, encoding=encoding)
        optional += list(hesitations) * optional_hesitations + list(backchannels) * optional_backchannels
        exclude += list(hesitations) * exclude_hesitations + list(backchannels) * exclude_backchannels
    options = GlmFilterOptions(delete_hyphens=delete_hyphens, upcase=not no_upcase, extended_ascii=extended_ascii,
                               purpose=purpose, encoding=encoding, flatten_alternations=flatten_alternations,
                               repair_optional=repair_optional, optional_words=tuple(optional),
                               optional_style=optional_style, exclude_words=tuple(exclude),
                               max_alternatives=max_alternatives)
    filter_file(glm_path, in_path, out_path, fmt, options, utterance_map=utterance_map)
