#!/usr/bin/env bash
# egs/switchboard: Faria et al.'s experiments ("Toward Zero Oracle WER on the Switchboard Benchmark")
# as a Kaldi-style recipe.  See README.md here for what each stage needs and writes.
#
#   ./run.sh --corpus /path/with/LDC2002S09+LDC2002T43 [--stage N] [--stop-stage N] [--nj N] [--cmd CMD]
#            [--exp exp] [--stm-source ldc|lhotse] [--lattices audio|kaldi:DECODE_DIR|icefall:DIR]
#            [--words words.txt] [--corrected-stm S --corrected-glm G] [--rt03-glm G] [--rt04f-glm G]
#            [--system-ctms "NAME=asr1.ctm ..."] [--nbest-depths "2 10 100 1000"] [--study-ns "1 2 10"]
#            [--study-segment-free true]
# Stages: 0 data, 1 lattices, 2 alternatives (alt-CTM), 3 scoring (ladder + alt-CTM oracle WER),
#         4 oracle study + plots (--study-segment-free true: also scored both ways, segmented and segment-free),
#         5 keyword search (recipes/kws.sh; conf/kws.conf, --kws-rttm R --kws-ecf E).
#         A finished stage is skipped on rerun (delete its .done to redo).
set -euo pipefail
cd "$(dirname "$0")"
recipes=../../recipes

corpus=""
exp=exp
data=""
stage=0
stop_stage=5
nj=2
cmd="$recipes/utils/local_run.sh"
lattices=audio
words=""
lattice_frame_shift=""
stm_source=ldc
corrected_stm=""
corrected_glm=""
rt03_glm=""
rt04f_glm=""
system_ctms=""
. conf/alternatives.conf
. conf/decode.conf
. conf/kws.conf
help_message="$(sed -n '2,12p' "$0")"
. "$recipes/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "$0: unexpected arguments: $*" 1>&2; echo "$help_message" 1>&2; exit 1; }
[ -n "$data" ] || data=$exp/data
mkdir -p "$exp"

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  echo "== stage 0: data (STM, GLMs, segments) from $corpus"
  [ -n "$corpus" ] || { echo "$0: --corpus is required (the folder holding LDC2002S09 and LDC2002T43)" 1>&2; exit 1; }
  if [ -f "$data/.done" ]; then
    echo "$0: $data is done, skipping"
  else
    extra=()
    [ -n "$rt03_glm" ] && extra+=(--extra-glm "$rt03_glm")
    [ -n "$rt04f_glm" ] && extra+=(--extra-glm "$rt04f_glm")
    [ -n "$corrected_stm" ] && extra+=(--corrected-stm "$corrected_stm")
    [ -n "$corrected_glm" ] && extra+=(--corrected-glm "$corrected_glm")
    python3 local/prepare_data.py --stm-source "$stm_source" "${extra[@]}" "$corpus" "$data"
    touch "$data/.done"
  fi
fi

lat=$exp/lattices
if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  echo "== stage 1: lattices ($lattices)"
  [ -f "$data/.done" ] || { echo "$0: run stage 0 first ($data/.done is missing)" 1>&2; exit 1; }
  if [ -f "$lat/.done" ]; then
    echo "$0: $lat is done, skipping"
  else
    convert_opts=(--out-format slf)
    [ -n "$words" ] && convert_opts+=(--words "$words")
    [ -n "$lattice_frame_shift" ] && convert_opts+=(--frame-shift "$lattice_frame_shift")
    case "$lattices" in
      audio)
        python3 local/extract_segments.py "$data" "$exp/wav"
        "$recipes/decode_audio.sh" --nj "$nj" --cmd "$cmd" --decode-opts "$decode_opts" "$exp/wav/wav.list" "$lat"
        ;;
      kaldi:*)
        # A Kaldi decode dir (lat.1.gz .. lat.N.gz, keys = utterance ids of data/segments): one conversion
        # job per archive into SLF files, so every later stage reads one format.
        src=${lattices#kaldi:}
        n=$(find "$src" -maxdepth 1 -name 'lat.*.gz' | wc -l)
        [ "$n" -gt 0 ] || { echo "$0: no lat.*.gz in $src" 1>&2; exit 1; }
        [ -f "$src/num_jobs" ] && [ "$(cat "$src/num_jobs")" != "$n" ] && {
          echo "$0: $src/num_jobs says $(cat "$src/num_jobs") but there are $n lat.*.gz" 1>&2; exit 1; }
        [ -n "$words" ] || echo "$0: warning: no --words given; Kaldi word ids will be used as words" 1>&2
        rm -rf "$lat"; mkdir -p "$lat/lat" "$lat/log"
        $cmd --max-jobs-run "$nj" JOB=1:"$n" "$lat/log/convert.JOB.log" \
          lattice-tools convert "${convert_opts[@]}" "ark:gunzip -c $src/lat.JOB.gz|" -o "$lat/lat"
        find "$lat/lat" -name '*.lat' | LC_ALL=C sort > "$lat/lattices.list"
        ;;
      icefall:*)
        # k2 lattices saved by icefall (torch.save(lattice.as_dict()), *.pt): one <utt>.pt per utterance, or a
        # batch with <file>.pt.keys listing its utterance ids (local/icefall_to_slf.py), read without k2.
        src=${lattices#icefall:}
        rm -rf "$lat"; mkdir -p "$lat/lat" "$lat/log" "$lat/split"
        find "$src" -name '*.pt' | LC_ALL=C sort > "$lat/pt.list"
        [ -s "$lat/pt.list" ] || { echo "$0: no *.pt under $src" 1>&2; exit 1; }
        n=$(lattice-tools split-list --chunk-size 1 "$lat/pt.list" "$lat/split/pt.JOB.list" | wc -l)
        icefall_opts=()
        [ -n "$words" ] && icefall_opts+=(--words "$words")
        [ -n "$lattice_frame_shift" ] && icefall_opts+=(--frame-shift "$lattice_frame_shift")
        $cmd --max-jobs-run "$nj" JOB=1:"$n" "$lat/log/convert.JOB.log" \
          python3 local/icefall_to_slf.py "${icefall_opts[@]}" "$lat/split/pt.JOB.list" "$lat/lat"
        find "$lat/lat" -name '*.lat' | LC_ALL=C sort > "$lat/lattices.list"
        ;;
      *) echo "$0: --lattices must be audio, kaldi:DIR or icefall:DIR" 1>&2; exit 1 ;;
    esac
    touch "$lat/.done"
  fi
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  echo "== stage 2: alternatives (N-best, sausages, phrases) as alt-CTM"
  [ -f "$lat/.done" ] || { echo "$0: run stage 1 first ($lat/.done is missing)" 1>&2; exit 1; }
  common=(--nj "$nj" --cmd "$cmd" --segments "$data/segments" --reco2file-and-channel "$data/reco2file_and_channel"
          --extra-opts "$alt_opts")
  "$recipes/make_alternatives.sh" "${common[@]}" --stop-stage 0 "$lat/lattices.list" "$exp/alternatives"
  "$recipes/make_alternatives.sh" "${common[@]}" --stage 1 --kinds nbest --depths "$nbest_depths" \
    "$lat/lattices.list" "$exp/alternatives"
  "$recipes/make_alternatives.sh" "${common[@]}" --stage 1 --kinds sausage --depths "$sausage_depths" \
    "$lat/lattices.list" "$exp/alternatives"
  "$recipes/make_alternatives.sh" "${common[@]}" --stage 1 --kinds phrases --depths "$phrase_depths" \
    --posterior-threshold "$posterior_threshold" "$lat/lattices.list" "$exp/alternatives"
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  echo "== stage 3: scoring ladder (Faria et al., Table 1 structure) and oracle WER of every alt-CTM"
  glms=(); while read -r g; do glms+=("$g"); done < "$data/glms"
  hyps=()
  for s in $system_ctms; do hyps+=(-h "$s"); done
  if [ -f "$lat/1best.ctm" ]; then
    # the decoder's 1-best, from utterance ids and times to the STM's file/channel and absolute times
    [ -f "$exp/1best.ctm" ] || lattice-tools convert-ctm --segments "$data/segments" \
      --reco2file-and-channel "$data/reco2file_and_channel" "$lat/1best.ctm" -o "$exp/1best.ctm"
    hyps+=(-h "pocketsphinx=$exp/1best.ctm")
  fi
  if [ ${#hyps[@]} -gt 0 ]; then
    if [ -f "$exp/ladder/.done" ]; then
      echo "$0: $exp/ladder is done, skipping"
    else
      glm_opts=(); for g in "${glms[@]}"; do glm_opts+=(--glm "$g"); done
      corr=(); [ -n "$corrected_stm" ] && corr+=(--corrected-stm "$corrected_stm")
      mkdir -p "$exp/ladder"
      lattice-tools ladder -r "$data/stm" "${hyps[@]}" "${glm_opts[@]}" "${corr[@]}" \
        -o "$exp/ladder/ladder.md" --json "$exp/ladder/ladder.json"
      touch "$exp/ladder/.done"
    fi
    cat "$exp/ladder/ladder.md"
  else
    echo "$0: no system CTM (--system-ctms, or --lattices audio): skipping the ladder"
  fi
  # The oracle WER of each alt-CTM as sclite scores it (STM and all GLMs, optional deletions).
  for d in "$exp"/alternatives/*.n*/; do
    d=${d%/}; [ -f "$d/.done" ] || continue
    "$recipes/score_ctm.sh" --glm "${glms[*]}" "$data/stm" "$d/alt.ctm.gz" "$exp/scores/$(basename "$d")" > /dev/null
  done
  if ls "$exp"/scores/*/wer > /dev/null 2>&1; then
    trap 'rm -f "$exp/scores/.summary.tmp"' EXIT  # no temporary file left on failure
    for f in "$exp"/scores/*/wer; do echo "$(basename "$(dirname "$f")") $(cat "$f")"; done > "$exp/scores/.summary.tmp"
    # replaced only when it changes, so a rerun of a finished stage modifies nothing
    if cmp -s "$exp/scores/.summary.tmp" "$exp/scores/summary.txt"; then rm "$exp/scores/.summary.tmp"
    else mv "$exp/scores/.summary.tmp" "$exp/scores/summary.txt"; fi
    cat "$exp/scores/summary.txt"
  fi
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  echo "== stage 4: oracle study (Faria et al., Tables 3-6 structure) and plots"
  [ -f "$lat/.done" ] || { echo "$0: run stage 1 first ($lat/.done is missing)" 1>&2; exit 1; }
  # References keyed by utterance id (data/text) match the per-utterance lattices (reference segmentation).
  "$recipes/oracle_study.sh" --ns "$study_ns" --prune-thresholds "$study_prune_thresholds" --study-opts "$study_opts" \
    "$data/text" "$exp/study" "main=$lat/lat"
  echo "study: $exp/study"
  if [ "$study_segment_free" = true ]; then
    # The same lattices' alternatives placed on their sides (data/segments) and scored against the STM two ways:
    # segmented, as the paper does, beside segment-free, with the words that moved across a boundary counted.
    "$recipes/oracle_study.sh" --ns "$study_ns" --prune-thresholds "$study_prune_thresholds" \
      --study-opts "$study_opts --segment-free --segments $data/segments" "$data/stm" "$exp/study-both-ways" \
      "main=$lat/lat"
    echo "study both ways: $exp/study-both-ways"
  fi
fi

if [ "$stage" -le 5 ] && [ "$stop_stage" -ge 5 ]; then
  echo "== stage 5: keyword search (index, search, F4DE-exact scores)"
  [ -f "$lat/.done" ] || { echo "$0: run stage 1 first ($lat/.done is missing)" 1>&2; exit 1; }
  if [ -n "$kws_rttm" ]; then
    ref_opts=(--rttm "$kws_rttm" --ecf "$kws_ecf")
  elif [ -f "$exp/wav/wav.list" ]; then
    # transcripts for the alignment: the words of data/text without transcription marks
    mkdir -p "$exp/kws"
    awk '{ printf "%s", $1; for (i = 2; i <= NF; i++) { w = tolower($i); if (w ~ /^[a-z][a-z'"'"']*$/) printf " %s", w }
           print "" }' "$data/text" > "$exp/kws/align_text.tmp"
    if cmp -s "$exp/kws/align_text.tmp" "$exp/kws/align_text"; then rm "$exp/kws/align_text.tmp"
    else mv "$exp/kws/align_text.tmp" "$exp/kws/align_text"; fi
    ref_opts=(--wav-list "$exp/wav/wav.list" --transcript "$exp/kws/align_text")
  else
    echo "$0: stage 5 needs reference word times: --kws-rttm and --kws-ecf (lattices not decoded from audio)" 1>&2
    exit 1
  fi
  "$recipes/kws.sh" --nj "$nj" --cmd "$cmd" "${ref_opts[@]}" --num-terms "$kws_num_terms" \
    --kwlist-opts "$kws_kwlist_opts" --index-opts "$kws_index_opts" --search-opts "$kws_search_opts" \
    "$lat/lattices.list" "$exp/kws"
fi
