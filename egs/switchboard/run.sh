#!/usr/bin/env bash
# egs/switchboard: seed 001's experiments ("Toward Zero Oracle WER on the Switchboard Benchmark")
# as a Kaldi-style recipe.  See README.md here for what each stage needs and writes.
#
#   ./run.sh --corpus /path/with/LDC2002S09+LDC2002T43 [--stage N] [--stop-stage N] [--nj N] [--cmd CMD]
#            [--lattices audio|kaldi:DECODE_DIR|icefall:DIR] [--words words.txt]
#            [--corrected-stm S --corrected-glm G] [--rt03-glm G] [--rt04f-glm G]
#            [--system-ctms "asr1.ctm asr2.ctm"] [--exp exp]
set -euo pipefail
cd "$(dirname "$0")"
recipes=../../recipes

corpus=""
exp=exp
data=""
stage=0
stop_stage=4
nj=2
cmd="$recipes/utils/local_run.sh"
lattices=audio
words=""
stm_source=ldc
corrected_stm=""
corrected_glm=""
rt03_glm=""
rt04f_glm=""
system_ctms=""
. conf/alternatives.conf
. conf/decode.conf
help_message="$(sed -n '2,10p' "$0")"
. "$recipes/utils/parse_options.sh"
[ -n "$data" ] || data=$exp/data
[ -n "$corpus" ] || { echo "$0: --corpus is required (the folder holding LDC2002S09 and LDC2002T43)" 1>&2; exit 1; }
mkdir -p "$exp"

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  echo "== stage 0: data (STM, GLMs, segments) from $corpus"
  extra=()
  [ -n "$rt03_glm" ] && extra+=(--extra-glm "$rt03_glm")
  [ -n "$rt04f_glm" ] && extra+=(--extra-glm "$rt04f_glm")
  [ -n "$corrected_stm" ] && extra+=(--corrected-stm "$corrected_stm")
  [ -n "$corrected_glm" ] && extra+=(--corrected-glm "$corrected_glm")
  python3 local/prepare_data.py --stm-source "$stm_source" "${extra[@]}" "$corpus" "$data"
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  echo "== stage 1: lattices ($lattices)"
  mkdir -p "$exp/lattices"
  case "$lattices" in
    audio)
      python3 local/extract_segments.py "$data" "$exp/wav"
      # shellcheck disable=SC2086
      "$recipes/decode_audio.sh" --nj "$nj" --cmd "$cmd" --decode-opts "$decode_opts" "$exp/wav/wav.list" "$exp/decode"
      cp "$exp/decode/lattices.list" "$exp/lattices/lattices.list"
      cp "$exp/decode/1best.ctm" "$exp/lattices/1best.ctm"
      ;;
    kaldi:*)
      dir=${lattices#kaldi:}
      ls "$dir"/lat.*.gz > /dev/null || { echo "$0: no lat.*.gz in $dir" 1>&2; exit 1; }
      for f in $(ls "$dir"/lat.*.gz | sort -V); do echo "ark:gunzip -c $f|"; done > "$exp/lattices/lattices.list"
      ;;
    icefall:*)
      dir=${lattices#icefall:}
      find "$dir" -name '*.pt' | LC_ALL=C sort > "$exp/lattices/lattices.list"
      ;;
    *) echo "$0: --lattices must be audio, kaldi:DIR or icefall:DIR" 1>&2; exit 1 ;;
  esac
fi

alt_opts="--segments $data/segments --reco2file-and-channel $data/reco2file_and_channel"
[ -n "$words" ] && alt_opts="$alt_opts --words $words"

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  echo "== stage 2: alternatives (N-best, sausages, phrases) as alt-CTM"
  "$recipes/make_alternatives.sh" --nj "$nj" --cmd "$cmd" --kinds nbest --depths "$nbest_depths" \
    --extra-opts "$alt_opts" "$exp/lattices/lattices.list" "$exp/alternatives"
  "$recipes/make_alternatives.sh" --nj "$nj" --cmd "$cmd" --kinds sausage --depths "$sausage_depths" \
    --extra-opts "$alt_opts" "$exp/lattices/lattices.list" "$exp/alternatives"
  "$recipes/make_alternatives.sh" --nj "$nj" --cmd "$cmd" --kinds phrases --depths "$phrase_depths" \
    --posterior-threshold "$posterior_threshold" --extra-opts "$alt_opts" "$exp/lattices/lattices.list" "$exp/alternatives"
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  echo "== stage 3: scoring ladder (seed 001 Table 1 structure)"
  ctms=$system_ctms
  [ -f "$exp/lattices/1best.ctm" ] && ctms="$ctms $exp/lattices/1best.ctm"
  [ -n "${ctms// }" ] || { echo "$0: stage 3 needs --system-ctms (or stage 1 with --lattices audio)" 1>&2; exit 1; }
  glm_opts=()
  while read -r g; do glm_opts+=(--glm "$g"); done < "$data/glms"
  corr=()
  [ -n "$corrected_stm" ] && corr+=(--corrected-stm "$corrected_stm")
  [ -n "$corrected_glm" ] && corr+=(--corrected-glm "$corrected_glm")
  # shellcheck disable=SC2086
  lattice-tools ladder -r "$data/stm" "${glm_opts[@]}" "${corr[@]}" -o "$exp/ladder" $ctms
  echo "ladder: $exp/ladder/ladder.md"
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  echo "== stage 4: oracle study (seed 001 Tables 3-6 structure) and plots"
  "$recipes/oracle_study.sh" --ns "1 2 10 100 1000" --study-opts "$alt_opts" \
    "$data/stm" "$exp/study" "main=$exp/lattices/lattices.list"
  echo "study: $exp/study"
fi
