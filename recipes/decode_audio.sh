#!/usr/bin/env bash
# Stage script: decode audio into word lattices (SLF) and a 1-best CTM with pocketsphinx, Kaldi style.
#
#   recipes/decode_audio.sh [--nj N] [--cmd CMD] [--utts-per-job K] [--decode-opts "--beam 1e-60"] <wav-list> <out-dir>
#
# <wav-list>: one 16 kHz wav/flac file per line (the utterance id is the file name without extension).
# Writes <out-dir>/lat/<utt>.lat (SLF), <out-dir>/1best.ctm (utterance ids, utterance-relative times,
# in list order) and <out-dir>/lattices.list; logs in <out-dir>/log/decode.JOB.log.
#
# The list is cut into tasks of --utts-per-job utterances (default 1), run --nj at a time.  pocketsphinx
# carries state from one utterance to the next within a process (measured: the same utterance decoded
# after another one gives a different lattice), so the split, not --nj, fixes the result: any --nj
# gives byte-identical outputs, and with K = 1 every lattice equals `lattice-tools decode <that file>`.
# A finished stage (<out-dir>/.done) is not redone; every output is written atomically and .done is
# written last, so a killed or failed run is redone from scratch by the next run.
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
utts_per_job=1
decode_opts=""
help_message="usage: $0 [--nj N] [--cmd CMD] [--utts-per-job K] [--decode-opts '--beam 1e-60'] <wav-list> <out-dir>
  --cmd takes Kaldi's run.pl / queue.pl / slurm.pl (or our utils/local_run.sh, the default)."
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 2 ]; then echo "$help_message" 1>&2; exit 1; fi
list=$1; dir=$2
[ -f "$list" ] || { echo "$0: no such wav list: $list" 1>&2; exit 1; }
if [ -f "$dir/.done" ]; then echo "$0: $dir is done, skipping"; exit 0; fi
rm -rf "$dir/parts" "$dir/split"
mkdir -p "$dir/log" "$dir/lat" "$dir/split" "$dir/parts"
ntasks=$(lattice-tools split-list --chunk-size "$utts_per_job" "$list" "$dir/split/wav.JOB.list" | wc -l)
# shellcheck disable=SC2086
$cmd --max-jobs-run "$nj" JOB=1:"$ntasks" "$dir/log/decode.JOB.log" \
  lattice-tools with-list "$dir/split/wav.JOB.list" \
    lattice-tools decode -o "$dir/lat" --ctm "$dir/parts/1best.JOB.ctm" $decode_opts
parts=(); for ((j = 1; j <= ntasks; j++)); do parts+=("$dir/parts/1best.$j.ctm"); done
lattice-tools merge -o "$dir/1best.ctm" "${parts[@]}"
# The lattices in list order (the decoder names them <utt>.lat); no temporary file left on failure.
trap 'rm -f "$dir/lattices.list.tmp"' EXIT
grep -v -e '^[[:space:]]*$' -e '^#' "$list" | sed -E 's:.*/::; s:\.[^.]*$::' \
  | while read -r utt; do echo "$dir/lat/$utt.lat"; done > "$dir/lattices.list.tmp"
mv "$dir/lattices.list.tmp" "$dir/lattices.list"
rm -rf "$dir/parts"
touch "$dir/.done"
echo "$0: $(wc -l < "$dir/lattices.list") lattices in $dir/lat, 1-best CTM $dir/1best.ctm"
