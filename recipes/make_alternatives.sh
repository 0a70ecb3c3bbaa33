#!/usr/bin/env bash
# Stage script: lattices -> (word-aligned) alternatives -> alt-CTM files, Kaldi style.
#
#   recipes/make_alternatives.sh [options] <lattice-list> <out-dir>
#
# <lattice-list>: one lattice file or rspecifier per line (SLF files, "ark:gunzip -c lat.1.gz|",
#                 icefall .pt files, ...), split into --nj contiguous chunks.
# Writes, for each kind K in --kinds and depth N in --depths:
#   <out-dir>/K.nN/alt.ctm.gz     the alt-CTM (flat <ALT_BEGIN>/<ALT>/<ALT_END> blocks)
#   <out-dir>/K.nN/stats.json     N requested, N_max, N_.9, N_.5, blocks, MB (seed 001 Tables 3-6)
# and logs under <out-dir>/log/. A finished output (its .done marker) is never recomputed; outputs are
# written atomically, so a killed run leaves nothing a rerun would trust. Any failed job fails the stage.
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
kinds="nbest sausage phrases"
depths="1 10 100"
posterior_threshold=0.1
segments=""
extra_opts=""
stage=0
stop_stage=100
help_message="usage: $0 [--nj N] [--cmd CMD] [--kinds 'nbest sausage phrases'] [--depths '1 10 100']
       [--posterior-threshold 0.1] [--segments data/segments] [--extra-opts '--lm-scale 1.0']
       [--stage S] [--stop-stage S] <lattice-list> <out-dir>
  --cmd takes Kaldi's run.pl / queue.pl / slurm.pl (or our utils/local_run.sh, the default)."
. "$(dirname "$0")/utils/parse_options.sh"

if [ $# -ne 2 ]; then echo "$help_message" 1>&2; exit 1; fi
list=$1; dir=$2
[ -f "$list" ] || { echo "$0: no such lattice list: $list" 1>&2; exit 1; }
mkdir -p "$dir/log" "$dir/split$nj"

seg_opt=()
[ -n "$segments" ] && seg_opt=(--segments "$segments")

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  lattice-tools split-list --nj "$nj" "$list" "$dir/split$nj/lattices.JOB.list" > /dev/null
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  for kind in $kinds; do
    for n in $depths; do
      out="$dir/$kind.n$n"
      if [ -f "$out/.done" ]; then echo "$0: $out is done, skipping"; continue; fi
      mkdir -p "$out/parts"
      # shellcheck disable=SC2086
      $cmd JOB=1:"$nj" "$dir/log/$kind.n$n.JOB.log" \
        lattice-tools "$kind" --list "$dir/split$nj/lattices.JOB.list" -n "$n" \
          --posterior-threshold "$posterior_threshold" "${seg_opt[@]}" $extra_opts \
          --ctm "$out/parts/alt.JOB.ctm.gz" --stats "$out/parts/stats.JOB.json" --no-progress
      parts=(); sparts=()
      for ((j = 1; j <= nj; j++)); do parts+=("$out/parts/alt.$j.ctm.gz"); sparts+=("$out/parts/stats.$j.json"); done
      lattice-tools merge -o "$out/alt.ctm.gz" "${parts[@]}"
      lattice-tools merge --stats -o "$out/stats.json" "${sparts[@]}"
      rm -rf "$out/parts"
      touch "$out/.done"
      echo "$0: wrote $out/alt.ctm.gz"
    done
  done
fi
