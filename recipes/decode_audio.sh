#!/usr/bin/env bash
# Stage script: decode audio into word lattices (SLF) and a 1-best CTM with pocketsphinx, Kaldi style.
#
#   recipes/decode_audio.sh [--nj N] [--cmd CMD] [--decode-opts "..."] <wav-list> <out-dir>
#
# <wav-list>: one 16 kHz wav/flac file per line (the utterance id is the file name without extension).
# Writes <out-dir>/lat/<utt>.slf, <out-dir>/1best.ctm, <out-dir>/lattices.list; logs in <out-dir>/log/.
# A finished stage (<out-dir>/.done) is not redone; every output is written atomically.
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
decode_opts=""
help_message="usage: $0 [--nj N] [--cmd CMD] [--decode-opts '--beam 1e-60'] <wav-list> <out-dir>"
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 2 ]; then echo "$help_message" 1>&2; exit 1; fi
list=$1; dir=$2
[ -f "$list" ] || { echo "$0: no such wav list: $list" 1>&2; exit 1; }
if [ -f "$dir/.done" ]; then echo "$0: $dir is done, skipping"; exit 0; fi
mkdir -p "$dir/log" "$dir/lat" "$dir/split$nj" "$dir/parts"
lattice-tools split-list --nj "$nj" "$list" "$dir/split$nj/wav.JOB.list" > /dev/null
# shellcheck disable=SC2086
$cmd JOB=1:"$nj" "$dir/log/decode.JOB.log" \
  lattice-tools decode --list "$dir/split$nj/wav.JOB.list" --out-dir "$dir/lat" \
    --ctm "$dir/parts/1best.JOB.ctm" $decode_opts
parts=(); for ((j = 1; j <= nj; j++)); do parts+=("$dir/parts/1best.$j.ctm"); done
lattice-tools merge -o "$dir/1best.ctm" "${parts[@]}"
find "$dir/lat" -name '*.slf' | LC_ALL=C sort > "$dir/lattices.list.tmp" && mv "$dir/lattices.list.tmp" "$dir/lattices.list"
rm -rf "$dir/parts"
touch "$dir/.done"
echo "$0: $(wc -l < "$dir/lattices.list") lattices in $dir/lat, 1-best CTM $dir/1best.ctm"
