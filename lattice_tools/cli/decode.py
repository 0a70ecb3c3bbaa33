"""``lattice-tools decode``: a thin wrapper over :func:`lattice_tools.decode.pocketsphinx.decode_audio`."""
from __future__ import annotations

import os

import click

from ._options import out_option, parallel_options


@click.command("decode")
@click.argument("audio", nargs=-1)
@out_option("Directory for <key>.lat SLF files.", hidden_aliases=("--out-dir",), required=True,
            type=click.Path(file_okay=False))
@click.option("--ctm", type=click.Path(dir_okay=False), default=None, help="Write the 1-best words here (CTM).")
@click.option("--model", type=click.Path(file_okay=False), default=None, help="Acoustic model dir (default: bundled en-us).")
@click.option("--lm", type=click.Path(dir_okay=False), default=None, help="Language model (default: bundled en-us).")
@click.option("--dict", "dictionary", type=click.Path(dir_okay=False), default=None, help="Pronunciation dictionary.")
@click.option("--beam", type=float, default=None, help="HMM beam (smaller = wider, e.g. 1e-80).")
@click.option("--wbeam", type=float, default=None, help="Word-exit beam.")
@click.option("--pbeam", type=float, default=None, help="Phone-transition beam.")
@click.option("--lw", type=float, default=None, help="Language weight.")
@click.option("--fwdflat/--no-fwdflat", default=None, help="Run the flat-lexicon second pass.")
@click.option("--bestpath/--no-bestpath", default=None, help="Run the lattice best-path pass.")
@click.option("--maxhmmpf", type=int, default=None, help="Max active HMMs per frame.")
@click.option("--channel", default="1", show_default=True, help="CTM channel field (see docs/formats.md: channels).")
@click.option("--independent/--reuse-decoder", default=True, show_default=True,
              help="Fresh decoder per file (outputs independent of file order) or one decoder for all (faster).")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: when stderr is a terminal).")
@parallel_options
def decode_command(audio, out, ctm, model, lm, dictionary, beam, wbeam, pbeam, lw, fwdflat, bestpath,
                   maxhmmpf, channel, independent, progress, jobs, scheduler):
    """Decode 16 kHz audio (WAV; other formats/rates via sox) with pocketsphinx into one SLF lattice
    per file and a 1-best CTM.  AUDIO: files or a directory (default: the bundled LibriVox clips)."""
    from ..core.parallel import open_executor
    from ..decode.pocketsphinx import decode_audio

    paths = None
    if audio:
        paths = list(audio) if len(audio) > 1 else audio[0]
    out_dir = out
    with open_executor(jobs=jobs, scheduler=scheduler) as executor:
        lats = decode_audio(paths, out_dir=out_dir, ctm=ctm, model=model, lm=lm, dictionary=dictionary, beam=beam,
                            wbeam=wbeam, pbeam=pbeam, lw=lw, fwdflat=fwdflat, bestpath=bestpath, maxhmmpf=maxhmmpf,
                            channel=channel, independent=independent, progress=progress, executor=executor,
                            shard_dir=None if executor is None else os.path.join(out_dir, ".shards"))
    arcs = sum(lat.num_arcs for lat in lats)
    click.echo(f"decoded {len(lats)} file(s), {arcs} arcs -> {out_dir}" + (f", {ctm}" if ctm else ""), err=True)
