"""``lattice-tools build-graph`` and ``lattice-tools decode-ctc``: thin wrappers over
:func:`lattice_tools.ctc.graph.build_graph` and :func:`lattice_tools.ctc.decode.decode_ctc`."""
from __future__ import annotations

import sys

import click

from ._options import LATTICE_FORMATS, option


@click.command("build-graph")
@click.option("--tokens", required=True, type=click.Path(dir_okay=False, exists=True),
              help="tokens.txt ('symbol id'; id 0 = CTC blank).")
@click.option("--lexicon", required=True, type=click.Path(dir_okay=False, exists=True),
              help="lexicon.txt ('word token token ...'); disambiguation symbols are added if missing.")
@click.option("--words", type=click.Path(dir_okay=False, exists=True), default=None,
              help="words.txt (default: <eps>, sorted lexicon words, #0, <s>, </s>).")
@click.option("--lm", type=click.Path(dir_okay=False, exists=True), default=None,
              help="ARPA LM (needs kaldilm) or OpenFst-text G; default: no grammar (free word loop, HL).")
@click.option("--lm-order", type=int, default=-1, show_default=True, help="Use ARPA n-grams up to this order (-1 = all).")
@click.option("-o", "--out", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--backend", type=click.Choice(["kaldifst", "k2"]), default="kaldifst", show_default=True,
              help="kaldifst writes HLG.fst (Kaldi decoder); k2 writes icefall's HLG.pt (needs k2).")
@click.option("--sil-token", default="auto", show_default=True,
              help="Optional-silence token ('auto' = SIL if in tokens.txt, 'none' = no optional silence).")
@click.option("--sil-prob", type=float, default=0.5, show_default=True, help="Optional-silence probability.")
def build_graph_command(tokens, lexicon, words, lm, lm_order, out, backend, sil_token, sil_prob):
    """Build a CTC decoding graph H∘L∘G (with disambiguation symbols) and write it to OUT."""
    from ..ctc.graph import build_graph

    sil = None if sil_token.lower() == "none" else sil_token
    path = build_graph(tokens, lexicon, words=words, lm=lm, out=out, backend=backend, sil_token=sil,
                       sil_prob=sil_prob, lm_order=lm_order)
    click.echo(f"wrote {path}", err=True)


@click.command("decode-ctc")
@click.option("--graph", required=True, type=click.Path(exists=True),
              help="Directory from build-graph, an OpenFst .fst (input = token+1) or a k2 HLG.pt.")
@click.option("--logprobs", required=True,
              help="CTC log-probs: .npy ([T,V] or [N,T,V]), .npz, .pt, or a Kaldi matrix archive (ark:/ark,t:/*.ark).")
@click.option("--lengths", default=None, help="Valid frames per row of a padded [N,T,V] input (.npy or text file).")
@click.option("-o", "--out", required=True,
              help="Output lattices: ark[,t]:FILE (Kaldi), a directory (SLF), FILE.pt (k2), ... (see 'convert').")
@option("--out-format", "out_format", type=click.Choice(LATTICE_FORMATS), default=None, hidden_aliases=("--format",),
        help="Output lattice format (default: guessed from OUT).")
@click.option("--backend", type=click.Choice(["kaldi", "k2"]), default="kaldi", show_default=True)
@click.option("--beam", type=float, default=20.0, show_default=True, help="Search beam (k2: search_beam).")
@click.option("--lattice-beam", type=float, default=8.0, show_default=True, help="Lattice beam (k2: output_beam).")
@click.option("--max-active", type=int, default=None, help="k2 only: max_active_states (default 10000).")
@click.option("--min-active", type=int, default=None, help="k2 only: min_active_states (default 30).")
@click.option("--words", type=click.Path(dir_okay=False, exists=True), default=None,
              help="words.txt (default: the one beside the graph).")
@click.option("--frame-shift", type=float, default=0.04, show_default=True, help="Seconds per log-prob frame.")
@click.option("--word-align/--no-word-align", default=True, show_default=True,
              help="Word-align the frame-level lattices before writing.")
def decode_ctc_command(graph, logprobs, lengths, out, out_format, backend, beam, lattice_beam, max_active,
                       min_active, words, frame_shift, word_align):
    """Decode CTC log-probabilities into lattices (Kaldi LatticeSimpleDecoder or k2 intersect_dense_pruned)."""
    from ..ctc.decode import iter_decode_ctc
    from ..io import write_lattices

    arcs = 0

    def counted(lats):
        nonlocal arcs
        for lat in lats:
            arcs += lat.num_arcs
            yield lat

    # Streamed: one utterance in memory at a time (the writers take iterables).
    lats = iter_decode_ctc(graph, logprobs, backend=backend, beam=beam, lattice_beam=lattice_beam,
                           max_active=max_active, min_active=min_active, words=words, frame_shift=frame_shift,
                           lengths=lengths, word_align=word_align, progress=sys.stderr.isatty())
    n = write_lattices(counted(lats), out, format=out_format)
    click.echo(f"decoded {n} utterance(s), {arcs} arcs -> {out}", err=True)
