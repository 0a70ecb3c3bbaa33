"""The main job: the whole pipeline on the bundled real speech, in a few minutes on 2 cores.

1. decode the bundled LibriVox and "cards" recordings with pocketsphinx into word lattices (SLF) at two
   lattice densities (pocketsphinx's default beams, and wider beams);
2. score the decoder's 1-best CTM against the references exactly like sclite (``%WER`` line, ``.sys``,
   ``.pra``, JSON);
3. derive N-best lists, sausages and phrase alternatives and write them as alt-CTM files;
4. run the oracle study (Faria et al., Tables 3-6 in structure: oracle WER, N, N_max, N_.9, N_.5, MB,
   bootstrap intervals) over both densities, with the whole-lattice oracle, and plot it;
5. the study both ways: the recordings joined into one side with a multi-segment STM, decoded whole, every
   representation scored segmented (as Faria et al.) and segment-free, the words that moved across a segment
   boundary counted;
6. run the spoken-term-detection study (:mod:`lattice_tools.kws.study`) on the default-beam lattices:
   every representation indexed, a keyword list searched and scored like F4DE (ATWV, MTWV, OTWV, STWV),
   appended to study.md with its invariants.
"""
from __future__ import annotations

import json
import math
import os
import wave
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core._budget import DEFAULT_MAX_MEMORY, memory_budget
from ..core.errors import LatticeToolsError

# pocketsphinx search settings: its defaults, and a denser lattice from the first (tree) pass alone
# with wider beams (about 8x the arcs on the bundled LibriVox clips: 119k against 15k).
DENSITIES: dict[str, dict[str, Any]] = {
    "default": {},
    "dense": {"fwdflat": False, "beam": 1e-60, "wbeam": 1e-40, "pbeam": 1e-60},
}
DEMO_NS = (1, 2, 10, 100, 1000)
# The KWS study's keyword list: `lattice-tools kws kwlist --ctm kws/reference.ctm --num-terms 60 --seed 0`.
KWS_NUM_TERMS = 60
KWS_SEED = 0
# study.md's KWS section starts here (a rerun replaces it).
KWS_MARKER = "<!-- kws study -->"


@dataclass(frozen=True)
class DemoOutputs:
    """Where :func:`run_demo` wrote what: the ``reference`` STM; per lattice density the ``lattices`` directory
    and the sclite reports of the decoder's 1-best (``scores``); the files of the oracle ``study``, of the study
    ``both_ways`` (empty without ``segment_free``) and of the ``kws`` study (empty without it), each by name as
    that study names them; the ``view`` page (None without it)."""

    reference: str
    lattices: Mapping[str, str]
    scores: Mapping[str, str]
    study: Mapping[str, str] = field(default_factory=dict)
    both_ways: Mapping[str, str] = field(default_factory=dict)
    kws: Mapping[str, str] = field(default_factory=dict)
    view: str | None = None

    def to_dict(self) -> dict[str, str]:
        """Every output by one name (``reference``, ``lattices/<density>``, ``score/<density>.1best``,
        ``study/<name>``, ``study-both-ways/<name>``, ``kws/<name>``, ``view``), as the demo lists them."""
        out = {"reference": self.reference}
        for density, directory in self.lattices.items():
            out[f"lattices/{density}"] = directory
            if density in self.scores:
                out[f"score/{density}.1best"] = self.scores[density]
        for prefix, files in (("study", self.study), ("study-both-ways", self.both_ways), ("kws", self.kws)):
            out.update({f"{prefix}/{k}": v for k, v in files.items()})
        if self.view is not None:
            out["view"] = self.view
        return out


def _bundled(corpus: str) -> tuple[list[str], str]:
    from ..decode.pocketsphinx import bundled_audio, bundled_corpus_dir

    return bundled_audio(corpus), os.path.join(bundled_corpus_dir(corpus), "transcription.trn")


def _stm_for(paths: Sequence[str], trn_paths: Sequence[str], out: str) -> None:
    """An STM with one segment per bundled utterance (file = utterance id, channel 1 -- the channel every
    CTM of the toolkit has by default -- whole file)."""
    from ..core.files import atomic_write
    from ..io.transcripts.trn import read_trn

    text = {u.utt_id: u.text for p in trn_paths for u in read_trn(p)}
    lines = []
    for p in paths:
        key = os.path.splitext(os.path.basename(p))[0]
        if key not in text:
            raise LatticeToolsError(f"no reference transcript for bundled audio {p}")
        with wave.open(p) as w:
            dur = w.getnframes() / w.getframerate()
        lines.append(f"{key} 1 {key} 0.000 {dur:.3f} {text[key]}")
    with atomic_write(out) as f:
        f.write("\n".join(sorted(lines)) + "\n")


def concatenated_side(paths: Sequence[str], trn_paths: Sequence[str], out_dir: str, *, name: str = "bundled",
                      gap: float = 0.2) -> tuple[str, str]:
    """The recordings ``paths`` joined into one side (``out_dir/<name>.wav``, ``gap`` seconds of silence
    between them) and its STM with one segment per recording (file ``name``, channel 1, the recording's span
    on the side, its transcript from ``trn_paths``), for whole-side decoding and segment-free scoring.
    Returns (wav path, STM path)."""
    from ..core.files import atomic_write
    from ..io.transcripts.trn import read_trn

    text = {u.utt_id: u.text for p in trn_paths for u in read_trn(p)}
    os.makedirs(out_dir, exist_ok=True)
    wav_path, stm_path = os.path.join(out_dir, f"{name}.wav"), os.path.join(out_dir, f"{name}.stm")
    frames: list[bytes] = []
    lines: list[str] = []
    params: tuple[int, int, int] | None = None
    t = 0.0
    for p in paths:
        key = os.path.splitext(os.path.basename(p))[0]
        if key not in text:
            raise LatticeToolsError(f"no reference transcript for bundled audio {p}")
        with wave.open(p) as w:
            here = (w.getnchannels(), w.getsampwidth(), w.getframerate())
            if params is not None and here != params:
                raise LatticeToolsError(f"{p}: {here} (channels, sample width, rate) differs from the first "
                                        f"recording's {params}: cannot join them into one side")
            params = here
            data = w.readframes(w.getnframes())
            dur = w.getnframes() / w.getframerate()
        if frames:
            silence = b"\0" * (int(round(gap * params[2])) * params[0] * params[1])
            frames.append(silence)
            t += len(silence) / (params[0] * params[1] * params[2])
        frames.append(data)
        lines.append(f"{name} 1 {name} {t:.3f} {t + dur:.3f} {text[key]}")
        t += dur
    if params is None:
        raise LatticeToolsError("no recordings to join")
    with atomic_write(wav_path, "wb") as f, wave.open(f, "wb") as w:
        w.setnchannels(params[0])
        w.setsampwidth(params[1])
        w.setframerate(params[2])
        w.writeframes(b"".join(frames))
    with atomic_write(stm_path) as f:
        f.write("\n".join(lines) + "\n")
    return wav_path, stm_path


def run_demo(out: str = "demo-out", *, corpora: Sequence[str] = ("librivox", "cards"), ns: Sequence[int] = DEMO_NS,
             densities: Sequence[str] = ("default", "dense"), bootstrap: int = 1000, seed: int = 0,
             progress: bool | None = None, kws: bool = True, view_page: bool = True, segment_free: bool = True,
             echo=print, max_memory: int | None = DEFAULT_MAX_MEMORY) -> DemoOutputs:
    """Run decode -> 1-best scoring -> alternatives -> oracle study -> KWS study on the bundled speech.

    ``kws``: run the spoken-term-detection study too (on the default-beam lattices, when decoded).
    ``view_page``: write ``view.html`` (:func:`lattice_tools.viewer.view`) of the default-beam lattices (else
    the first density), with the KWS study's lattice-index hits, and link it from study.md.
    ``segment_free``: the study both ways too: the recordings joined into one side
    (:func:`concatenated_side`), decoded whole at the first density's beams, every representation scored
    segmented and segment-free against the side's multi-segment STM (``study-both-ways/``, its tables
    appended to study.md).
    ``max_memory``: bytes of resident memory every search and table of the run may use (None: no
    bound); a study cell past it (N = inf of a dense lattice) is recorded as skipped with the reason.

    Returns the :class:`DemoOutputs` (where the tables, plots, CTMs and lattices were written).  Everything lands
    under ``out``; finished study cells are reused on a rerun.
    """
    with memory_budget(max_memory):
        return _run_demo(out, corpora=corpora, ns=ns, densities=densities, bootstrap=bootstrap, seed=seed,
                         progress=progress, kws=kws, view_page=view_page, segment_free=segment_free, echo=echo,
                         max_memory=max_memory)


def _run_demo(out: str, *, corpora, ns, densities, bootstrap, seed, progress, kws, view_page, segment_free,
              echo, max_memory) -> DemoOutputs:
    # (every step that sets a budget of its own -- the studies, the view -- is given the run's: their
    # default, None, would lift it)
    from ..decode.pocketsphinx import decode_audio
    from ..io.transcripts.ctm import read_ctm
    from ..io.transcripts.stm import read_stm
    from ..oracle.study import run_study
    from ..scoring.reports import kaldi_line, write_reports
    from ..scoring.sclite import score_stm_ctm

    unknown = set(densities) - set(DENSITIES)
    if unknown:
        raise LatticeToolsError(f"unknown density {sorted(unknown)}; choose from {sorted(DENSITIES)}")
    os.makedirs(out, exist_ok=True)
    paths, trns = [], []
    for corpus in corpora:
        p, t = _bundled(corpus)
        paths += p
        trns.append(t)
    stm_path = os.path.join(out, "reference.stm")
    _stm_for(paths, trns, stm_path)
    lattice_dirs: dict[str, str] = {}
    score_dirs: dict[str, str] = {}

    lattice_sets = {}
    baselines = []  # the decoder's own 1-best per density, shown beside the lattice's best path
    for name in densities:
        lat_dir = os.path.join(out, "lattices", name)
        ctm = os.path.join(out, "lattices", f"{name}.1best.ctm")
        echo(f"[demo] decoding {len(paths)} recordings ({name} beams) -> {lat_dir}")
        lattice_sets[name] = decode_audio(paths, out_dir=lat_dir, ctm=ctm, progress=progress, **DENSITIES[name])
        lattice_dirs[name] = lat_dir
        result = score_stm_ctm(read_stm(stm_path), read_ctm(ctm), optional_deletable=True)
        score_dir = os.path.join(out, "score", f"{name}.1best")
        write_reports(result, score_dir)
        echo(f"[demo] decoder hypothesis (pocketsphinx hyp(), {name} beams): {kaldi_line(result.total)}")
        total = result.total
        baselines.append({"density": name, "name": "decoder hypothesis (pocketsphinx hyp())", "wer": 100 * total.wer,
                          "C": total.correct, "S": total.substitutions, "D": total.deletions, "I": total.insertions,
                          "ref_words": total.ref_words})
        score_dirs[name] = score_dir

    echo("[demo] alternatives + oracle study (N-best, sausage, phrase, whole lattice)")
    study_dir = os.path.join(out, "study")
    data = " + ".join({"librivox": "LibriVox clips", "cards": "'cards' recordings"}.get(c, c) for c in corpora)
    study = run_study(lattice_sets, stm_path, ns=ns, out_dir=study_dir, bootstrap=bootstrap, seed=seed,
                      progress=progress, title=f"bundled speech ({data}), pocketsphinx lattices",
                      baselines=baselines, max_memory=max_memory)
    # Error counts are what the invariants promise; the sclite alignment cost also charges 0.001 per
    # '@' (empty alternative) chosen, so costs can differ by such amounts with equal errors.
    failed = [inv for inv in study.invariants if not getattr(inv, "holds_on_errors", inv.holds)]
    if failed:
        raise LatticeToolsError(f"oracle invariants violated: {[inv.to_dict() for inv in failed]}")
    md = study.files.get("markdown") or os.path.join(study_dir, "study.md")
    both_ways: Mapping[str, str] = {}
    if segment_free and densities:
        both = run_demo_both_ways(paths, trns, out, ns=ns, density=densities[0], progress=progress, echo=echo,
                                  max_memory=max_memory)
        both_ways = both.files
        if os.path.exists(md):
            _append_both_ways_section(md, both.files["markdown"])
    kws_files: Mapping[str, str] = {}
    if kws and "default" in lattice_sets:
        from ..oracle.representations import load_references

        kws_dir = os.path.join(out, "kws")
        timing = lattice_sets.get("dense", lattice_sets["default"])
        kws_result = run_demo_kws(lattice_sets["default"], timing, load_references(stm_path), paths, kws_dir,
                                  progress=progress, echo=echo)
        kws_files = kws_result.files
        if os.path.exists(md):
            _append_kws_section(md, kws_result, kws_dir)
    elif kws:
        echo("[demo] KWS study skipped: it runs on the default-beam lattices (--density default)")
    page = _write_view(out, lattice_sets, lattice_dirs, stm_path, md, echo, max_memory) if view_page and lattice_sets \
        else None
    if os.path.exists(md):
        with open(md, encoding="utf-8") as f:
            echo(f.read())
    outputs = DemoOutputs(stm_path, lattice_dirs, score_dirs, study=study.files, both_ways=both_ways, kws=kws_files,
                          view=page)
    echo("[demo] outputs:")
    for k, v in outputs.to_dict().items():
        echo(f"  {k:28s} {v}")
    return outputs


def _write_view(out: str, lattice_sets: Mapping, lattice_dirs: Mapping[str, str], stm_path: str, md: str, echo,
                max_memory: int | None) -> str:
    """The demo's browser view: one density's lattices against the reference, with the whole-lattice
    index's keyword hits when the KWS study ran; linked from study.md."""
    from ..viewer.build import link_view, view

    name = "default" if "default" in lattice_sets else next(iter(lattice_sets))
    page = os.path.join(out, "view.html")
    kwslist = os.path.join(out, "kws", "kwslist", "lattice.kwslist.xml")
    kwlist = os.path.join(out, "kws", "kwlist.xml")
    have_kws = os.path.exists(kwslist) and os.path.exists(kwlist)
    summary = view([lattice_dirs[name]], page, reference=stm_path, optional_deletable=True,
                   kwslist=kwslist if have_kws else None, kwlist=kwlist if have_kws else None,
                   title=f"lattice-tools demo: {name}-beam lattices", max_memory=max_memory)
    echo(f"[demo] browser view ({summary.utterances} utterances, {summary.bytes / 2**20:.1f} MB) -> {page}")
    if os.path.exists(md):
        link_view(md, page, f"the {name}-beam lattices, their alternatives, oracles and keyword hits")
    return page


def run_demo_both_ways(paths: Sequence[str], trn_paths: Sequence[str], out: str, *, ns: Sequence[int] = DEMO_NS,
                       density: str = "default", progress: bool | None = None, echo=print,
                       max_memory: int | None = DEFAULT_MAX_MEMORY):
    """The demo's study both ways: ``paths`` joined into one side with a multi-segment STM
    (``out/side/``), decoded whole with the ``density`` beams, then :func:`lattice_tools.oracle.study.run_study`
    with ``segment_free=True`` into ``out/study-both-ways``.  Returns its result."""
    from ..decode.pocketsphinx import decode_audio
    from ..oracle.study import run_study

    side_dir = os.path.join(out, "side")
    wav, stm = concatenated_side(paths, trn_paths, side_dir)
    echo(f"[demo] study both ways: {len(paths)} recordings joined into one side ({wav}, STM {stm}), decoded whole "
         f"({density} beams)")
    lats = decode_audio([wav], out_dir=os.path.join(side_dir, "lattices", density), progress=progress,
                        **DENSITIES[density])
    return run_study({density: lats}, stm, ns=ns, out_dir=os.path.join(out, "study-both-ways"), segment_free=True,
                     max_memory=max_memory, progress=progress,
                     title=f"bundled speech joined into one side, pocketsphinx {density}-beam lattice")


def _append_both_ways_section(study_md: str, both_md: str) -> None:
    """Append the study-both-ways tables to study.md (headings one level down), with where they are."""
    from ..core.files import atomic_write

    with open(study_md, encoding="utf-8") as f:
        text = f.read().rstrip("\n")
    with open(both_md, encoding="utf-8") as f:
        section = ["#" + line if line.startswith("#") else line for line in f.read().splitlines()]
    rel = os.path.relpath(both_md, os.path.dirname(os.path.dirname(study_md)))
    with atomic_write(study_md) as f:
        f.write(text + "\n\n" + "\n".join(section) + f"\n\n(Tables also in `{rel}`.)\n")


def oracle_reference_times(lattices: Sequence, transcripts: Mapping[str, str], *, channel: str = "1") -> list:
    """Reference word times for the bundled recordings, which have transcripts but no times: the reference
    aligned to each lattice's oracle path (the lattice path closest to it, Levenshtein).  A reference word
    matched or substituted takes that lattice word's time; the words of a deletion run share the gap
    between their timed neighbours evenly.  Returns LEXEME records (file = lattice key)."""
    from ..io.keyword_search.rttm import RttmRecord
    from ..oracle import lattice_oracle

    out = []
    for lat in lattices:
        if lat.key not in transcripts:
            raise LatticeToolsError(f"no reference transcript for lattice {lat.key!r}")
        res = lattice_oracle(lat, transcripts[lat.key], mode="levenshtein", sclite_ties=False)
        words: list[str] = []
        span: list[tuple[float, float] | None] = []  # reference words' (start, end) or None
        for p in res.alignment:
            if p.op in ("C", "S", "D") and p.ref is not None:
                timed = p.op != "D" and math.isfinite(p.start) and math.isfinite(p.duration)
                words.append(p.ref)
                span.append((p.start, p.start + p.duration) if timed else None)
        i = 0
        while i < len(words):
            if span[i] is not None:
                i += 1
                continue
            j = i
            while j < len(words) and span[j] is None:
                j += 1
            before = span[i - 1] if i > 0 else None
            after = span[j] if j < len(words) else None
            lo = before[1] if before is not None else 0.0
            hi = after[0] if after is not None else max(lat.duration, lo)
            step = max(hi - lo, 0.0) / (j - i)
            for k in range(i, j):
                span[k] = (lo + (k - i) * step, lo + (k - i + 1) * step)
            i = j
        for k, (w, pair) in enumerate(zip(words, span, strict=True)):
            assert pair is not None  # every gap was filled above
            t0 = round(pair[0], 3)
            t1 = max(t0, round(pair[1], 3))
            out.append(RttmRecord("LEXEME", lat.key, channel, t0, round(t1 - t0, 3), w, "lex",
                                  f"{lat.key}_{channel}", "<NA>", k + 1))
    return out


def _write_reference_ctm(records: Sequence, path: str) -> None:
    from ..core.files import atomic_write

    with atomic_write(path) as f:
        for r in records:
            f.write(f"{r.file} {r.channel} {r.tbeg:.3f} {r.dur:.3f} {r.ortho}\n")


def _ecf_for(paths: Sequence[str], channel: str = "1"):
    from ..io.keyword_search.ecf import Ecf, EcfExcerpt

    out = []
    for p in paths:
        with wave.open(p) as w:
            dur = w.getnframes() / w.getframerate()
        out.append(EcfExcerpt(os.path.splitext(os.path.basename(p))[0], channel, 0.0, round(dur, 3)))
    return Ecf(tuple(sorted(out, key=lambda e: e.audio_filename)))


def run_demo_kws(lattices: Sequence, timing_lattices: Sequence, transcripts: Mapping[str, str], paths: Sequence[str],
                 out: str, *, progress: bool | None = None, echo=print):
    """The demo's KWS study: reference times (:func:`oracle_reference_times` on ``timing_lattices``), an ECF
    from the audio durations, a keyword list (``kws kwlist``'s rules, seed :data:`KWS_SEED`), then
    :func:`lattice_tools.kws.study.run_kws_study` on ``lattices``.  Returns its result."""
    from ..io.keyword_search.ecf import write_ecf
    from ..io.keyword_search.kwlist import write_kwlist
    from ..io.keyword_search.rttm import check_overlaps, lexemes_from_ctm
    from ..kws.kwlist_make import make_kwlist
    from ..kws.study import run_kws_study

    os.makedirs(out, exist_ok=True)
    ref_ctm, ecf_path, kwlist_path = (os.path.join(out, n) for n in ("reference.ctm", "ecf.xml", "kwlist.xml"))
    _write_reference_ctm(oracle_reference_times(timing_lattices, transcripts), ref_ctm)
    refs = lexemes_from_ctm(ref_ctm)  # read back: the study uses exactly what the file says
    check_overlaps(refs, ref_ctm)
    ecf = _ecf_for(paths)
    write_ecf(ecf_path, ecf)
    terms = make_kwlist(refs, num_terms=KWS_NUM_TERMS, seed=KWS_SEED)
    write_kwlist(kwlist_path, terms, compare_normalize="lowercase")
    echo(f"[demo] KWS study: {len(terms)} keywords, every representation indexed, searched and scored -> {out}")
    return run_kws_study(lattices, refs, terms, ecf=ecf, out_dir=out, kwlist_filename="kwlist.xml",
                         title="bundled speech, pocketsphinx default-beam lattices", progress=progress)


def _append_kws_section(study_md: str, kws_result, kws_dir: str) -> None:
    """Replace study.md's KWS section (everything from :data:`KWS_MARKER`) by this run's."""
    from ..core.files import atomic_write
    from ..kws.study import study_markdown

    with open(study_md, encoding="utf-8") as f:
        text = f.read()
    text = text.split(KWS_MARKER)[0].rstrip("\n") + "\n\n"
    with open(kws_result.files["json"], encoding="utf-8") as f:
        settings = json.load(f)["settings"]
    rel = os.path.relpath(kws_dir, os.path.dirname(os.path.dirname(study_md)))
    section = study_markdown(kws_result.rows, kws_result.invariants, settings,
                             title="bundled speech, pocketsphinx default-beam lattices", heading="##")
    note = (f"Reference word times: the bundled recordings have transcripts only, so each reference is aligned "
            f"to its dense-beam lattice's oracle path (`{rel}/reference.ctm`); keyword list: `{rel}/kwlist.xml` "
            f"(`lattice-tools kws kwlist --ctm {rel}/reference.ctm --num-terms {KWS_NUM_TERMS} --seed {KWS_SEED}`). "
            f"Plot: `{rel}/kws_study.png`. The same study from the demo's output directory: `lattice-tools kws study "
            f"lattices/default --ctm {rel}/reference.ctm --ecf {rel}/ecf.xml --kwlist {rel}/kwlist.xml -o kws-study`.\n")
    with atomic_write(study_md) as f:
        f.write(text + KWS_MARKER + "\n" + section + "\n" + note)
