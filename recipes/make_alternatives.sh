#!/usr/bin/env bash
# Stage script: lattices -> (word-aligned) alternatives -> alt-CTM files, Kaldi style.
#
#   recipes/make_alternatives.sh [options] <lattice-list> <out-dir>
#
# <lattice-list>: one lattice file or rspecifier per line (SLF files, "ark:gunzip -c lat.1.gz|", k2 .pt
#                 files, ...), split into --nj contiguous chunks, one job each (`lattice-tools with-list`
#                 hands a job its chunk as arguments, so rspecifiers with spaces are fine).
# Writes, for each kind K in --kinds and depth N in --depths:
#   <out-dir>/K.nN/alt.ctm.gz     the alt-CTM (flat <ALT_BEGIN>/<ALT>/<ALT_END> blocks), in list order
#   <out-dir>/K.nN/stats.json     N, N_max, N_.9, N_.5, blocks, alt_blocks, utterances, bytes, MB
#                                 (MB measured on alt.ctm.gz's text, Faria et al., Tables 3-6)
# and logs under <out-dir>/log/K.nN.JOB.log.
# With --segments (and --reco2file-and-channel), lattice keys are utterance ids: the alt-CTM gets the
# recordings' file/channel ids and absolute times (`lattice-tools convert-ctm`), ready for the STM.
# A finished output (its .done marker) is never recomputed; job outputs go to parts/, the final files
# are written atomically and .done last, so a killed run leaves nothing a rerun would trust.  Any
# failed job fails the stage.  Every lattice is processed alone, so any --nj gives identical bytes.
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
kinds="nbest sausage phrases"
depths="1 10 100"
posterior_threshold=0.1
segments=""
reco2file_and_channel=""
extra_opts=""
stage=0
stop_stage=100
help_message="usage: $0 [--nj N] [--cmd CMD] [--kinds 'nbest sausage phrases'] [--depths '1 10 100']
       [--posterior-threshold 0.1] [--segments data/segments] [--reco2file-and-channel data/reco2file_and_channel]
       [--extra-opts '--lm-scale 1.0'] [--stage S] [--stop-stage S] <lattice-list> <out-dir>
  --cmd takes Kaldi's run.pl / queue.pl / slurm.pl (or our utils/local_run.sh, the default).
  stage 0 splits the list into --nj chunks, stage 1 computes the alternatives."
. "$(dirname "$0")/utils/parse_options.sh"

if [ $# -ne 2 ]; then echo "$help_message" 1>&2; exit 1; fi
list=$1; dir=$2
[ -f "$list" ] || { echo "$0: no such lattice list: $list" 1>&2; exit 1; }
[ -z "$reco2file_and_channel" ] || [ -n "$segments" ] || {
  echo "$0: --reco2file-and-channel needs --segments (lattice keys are utterance ids)" 1>&2; exit 1; }
mkdir -p "$dir/log" "$dir/split$nj"

convert_opts=()
[ -n "$segments" ] && convert_opts+=(--segments "$segments")
[ -n "$reco2file_and_channel" ] && convert_opts+=(--reco2file-and-channel "$reco2file_and_channel")

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  # (re)split only when the list changed since the last split (Kaldi's split_data.sh rule)
  if [ ! -f "$dir/split$nj/.done" ] || [ "$list" -nt "$dir/split$nj/.done" ]; then
    rm -f "$dir/split$nj/.done"
    lattice-tools split-list --nj "$nj" "$list" "$dir/split$nj/lattices.JOB.list" > /dev/null
    touch "$dir/split$nj/.done"
  fi
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  [ -f "$dir/split$nj/.done" ] || { echo "$0: $dir/split$nj is missing; run stage 0" 1>&2; exit 1; }
  for kind in $kinds; do
    case "$kind" in
      nbest|sausage) kind_opts="" ;;
      phrases) kind_opts="--posterior-threshold $posterior_threshold" ;;
      *) echo "$0: unknown kind '$kind' (expected nbest, sausage or phrases)" 1>&2; exit 1 ;;
    esac
    for n in $depths; do
      out="$dir/$kind.n$n"
      if [ -f "$out/.done" ]; then echo "$0: $out is done, skipping"; continue; fi
      rm -rf "$out"
      mkdir -p "$out/parts"
      # shellcheck disable=SC2086
      $cmd JOB=1:"$nj" "$dir/log/$kind.n$n.JOB.log" \
        lattice-tools with-list "$dir/split$nj/lattices.JOB.list" \
          lattice-tools "$kind" -n "$n" $kind_opts $extra_opts \
            -o "$out/parts/alt.JOB.ctm.gz" --json "$out/parts/stats.JOB.json"
      parts=(); sparts=()
      for ((j = 1; j <= nj; j++)); do parts+=("$out/parts/alt.$j.ctm.gz"); sparts+=("$out/parts/stats.$j.json"); done
      if [ ${#convert_opts[@]} -gt 0 ]; then
        lattice-tools merge -o "$out/parts/merged.ctm.gz" "${parts[@]}"
        lattice-tools convert-ctm "${convert_opts[@]}" "$out/parts/merged.ctm.gz" -o "$out/alt.ctm.gz"
      else
        lattice-tools merge -o "$out/alt.ctm.gz" "${parts[@]}"
      fi
      lattice-tools merge --stats --measure "$out/alt.ctm.gz" -o "$out/stats.json" "${sparts[@]}"
      rm -rf "$out/parts"
      touch "$out/.done"
      echo "$0: wrote $out/alt.ctm.gz"
    done
  done
fi
