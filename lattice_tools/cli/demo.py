"""``lattice-tools demo``: the whole pipeline on the bundled real speech."""
from __future__ import annotations

import click

from ._options import DEPTH, max_memory_option


@click.command("demo")
@click.option("-o", "--out", default="demo-out", show_default=True, help="Output directory.")
@click.option("--corpus", "corpora", multiple=True, default=("librivox", "cards"), show_default=True,
              type=click.Choice(["librivox", "cards"]), help="Bundled recordings to use (repeatable).")
@click.option("-n", "ns", multiple=True, type=DEPTH, default=("1", "2", "10", "100", "1000"), show_default=True,
              help="Depths N of the alternatives, integers >= 1 (repeatable; N = inf is always added).")
@click.option("--density", "densities", multiple=True, default=("default", "dense"), show_default=True,
              type=click.Choice(["default", "dense"]), help="Decoder beam settings, one lattice set each.")
@click.option("--bootstrap", type=int, default=1000, show_default=True, help="Bootstrap replications (0: none).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--kws/--no-kws", default=True, show_default=True,
              help="Run the spoken-term-detection study too (default-beam lattices; appended to study.md).")
@click.option("--view/--no-view", "view_page", default=True, show_default=True,
              help="Write view.html, the browser view of the lattices (linked from study.md).")
@click.option("--segment-free/--no-segment-free", default=True, show_default=True,
              help="Run the study both ways too: the recordings joined into one side, scored segmented and "
                   "segment-free (appended to study.md).")
@click.option("--progress/--no-progress", default=None, help="Progress bars (default: when stderr is a terminal).")
@max_memory_option(help_text="A study cell at N = inf past it is recorded as stopped by the budget.")
def demo_command(out, corpora, ns, densities, bootstrap, seed, kws, view_page, segment_free, progress, max_memory):
    """Decode the bundled speech into lattices, score the 1-best like sclite, derive N-best lists, sausages
    and phrase alternatives as alt-CTM files, run the oracle study (Faria et al., Tables 3-6, plots), the study
    both ways (the recordings joined into one side, scored segmented and segment-free) and the
    spoken-term-detection study (every representation indexed, searched and scored like F4DE).

    Prints the tables and where every output is.  A few minutes on 2 cores.
    """
    from ..pipelines.demo import run_demo

    run_demo(out, corpora=corpora, ns=tuple(n for n in ns if n is not None), densities=densities, bootstrap=bootstrap, seed=seed,
             kws=kws, view_page=view_page, segment_free=segment_free, progress=progress, echo=click.echo,
             max_memory=max_memory)
