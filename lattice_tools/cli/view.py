"""``lattice-tools view``: a thin wrapper over :func:`lattice_tools.viewer.view`."""
from __future__ import annotations

import click

from ._inputs import allow_untimed_option, lattice_input_options
from ._options import DEPTH, LATTICE_FORMATS, json_option, out_option


@click.command("view")
@click.argument("inputs", nargs=-1)
@out_option("The HTML file to write (one self-contained page).", required=True)
@click.option("--alt-ctm", "alt_ctm", multiple=True, type=click.Path(dir_okay=False),
              help="An (alt-)CTM file to show as one more representation (repeatable).")
@click.option("-r", "--ref", "reference", default=None, help="Reference: STM, trn or Kaldi text (optional).")
@click.option("--ref-format", type=click.Choice(["stm", "trn", "text"]), default=None,
              help="Reference format (default: .stm/.trn extension, else detected from the content).")
@click.option("--glm", "glm", multiple=True,
              help="GLM applied like csrfilt.sh to both sides, as score and oracle do (repeatable, in order; not with "
                   "the lattice representation).")
@click.option("--kwslist", default=None, type=click.Path(dir_okay=False),
              help="Keyword-search detections (NIST kwslist, e.g. from 'kws search') drawn on the time axis.")
@click.option("--kwlist", default=None, type=click.Path(dir_okay=False),
              help="The NIST KWlist (XML) naming the keywords (with --index: the keywords searched).")
@click.option("--index", default=None, type=click.Path(dir_okay=False),
              help="A term index (kws index) searched for the --kwlist keywords as 'kws search' does by default.")
@click.option("--representations", default="nbest,sausage,phrase,lattice", show_default=True,
              help="Comma-separated: nbest, sausage, phrase, lattice (computed from the lattices).")
@click.option("-n", "n", type=DEPTH, default="10", show_default=True,
              help="Depth N of N-best/sausage/phrase: an integer >= 1 or 'inf'.")
@click.option("--posterior-threshold", default=0.1, show_default=True, type=float, help="Phrase boundary threshold.")
@click.option("--acoustic-scale", default=1.0, show_default=True, type=float)
@click.option("--lm-scale", default=1.0, show_default=True, type=float)
@click.option("--word-penalty", default=0.0, show_default=True, type=float)
@click.option("-D", "optional_deletable", is_flag=True,
              help="Optional (parenthesised) words are deletable (sclite -D).")
@click.option("--mode", type=click.Choice(["sclite", "levenshtein"]), default="sclite", show_default=True,
              help="sclite weights and tie rules, or plain Levenshtein (fewest errors).")
@click.option("--max-arcs", default=5000, show_default=True, type=click.IntRange(min=1),
              help="Most probable word arcs of each lattice kept in the page (plus the best path).")
@click.option("--top-k", default=300, show_default=True, type=click.IntRange(min=1),
              help="Arcs drawn when the page opens (adjustable in the page).")
@click.option("--max-alternatives", default=10, show_default=True, type=click.IntRange(min=1),
              help="Alternatives listed per slot (the oracle's choice is added when deeper).")
@click.option("--title", default=None, help="Page title (default: 'lattice-tools view').")
@click.option("--format", "format", type=click.Choice(LATTICE_FORMATS), default=None,
              help="Lattice format (default: from the name).")
@lattice_input_options
@allow_untimed_option
@click.option("--encoding", default="utf-8", show_default=True,
              help="Text encoding of the reference, GLM, CTM and KWlist files.")
@json_option("Also write the summary (utterances, bytes, total counts) as JSON here.")
def view_command(inputs, out, alt_ctm, reference, ref_format, glm, kwslist, kwlist, index, representations, n,
                 posterior_threshold, acoustic_scale, lm_scale, word_penalty, optional_deletable, mode, max_arcs,
                 top_k, max_alternatives, title, format, words, frame_shift, frame_subsampling_factor, keys,
                 max_memory, allow_untimed, encoding, json_out):
    """Write one self-contained HTML page of INPUTS (lattices) and/or --alt-ctm files: per utterance the
    1-best aligned with the reference, the alternatives with posteriors and the oracle's choice, the
    lattice on a time axis and keyword hits. It opens from file:// with no network."""
    from ..core.files import write_json
    from ..viewer import view

    reps = tuple(r.strip() for r in representations.split(",") if r.strip())
    summary = view(list(inputs), out, alt_ctm=alt_ctm, reference=reference, ref_format=ref_format, glm=list(glm),
                   kwslist=kwslist, kwlist=kwlist, index=index, representations=reps, n=n,
                   posterior_threshold=posterior_threshold, acoustic_scale=acoustic_scale, lm_scale=lm_scale,
                   word_penalty=word_penalty, optional_deletable=optional_deletable, mode=mode, max_arcs=max_arcs,
                   top_k=top_k, max_alternatives=max_alternatives, title=title, format=format, words=words,
                   frame_shift=frame_shift, frame_subsampling_factor=frame_subsampling_factor, keys=keys,
                   allow_untimed=allow_untimed, max_memory=max_memory, encoding=encoding)
    if json_out:
        write_json(json_out, summary.to_dict(), indent=1, sort_keys=False)
    if json_out != "-":
        click.echo(f"wrote {summary.out}: {summary.utterances} utterance(s), {summary.bytes} bytes")
