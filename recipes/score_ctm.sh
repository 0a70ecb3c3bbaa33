#!/usr/bin/env bash
# Stage script: score a CTM or alt-CTM against an STM (with GLMs) exactly like NIST sclite.
#
#   recipes/score_ctm.sh [--glm "G1 G2"] [--optional-deletions true] [--single-segment false]
#                        [--score-opts "..."] <stm> <ctm> <out-dir>
#
# Everything is done by `lattice-tools score` (sclite's alignment, weights and ALT-block semantics,
# GLMs applied to both sides like csrfilt.sh).  Writes <out-dir>/score.{sys,raw,pra,json} (sclite-like
# reports), <out-dir>/score.txt (the summary table) and <out-dir>/wer (the Kaldi-style %WER line), and
# prints the %WER line.  Outputs are written atomically; <out-dir>/.done marks a finished scoring,
# which a rerun skips.
set -euo pipefail
glm=""
optional_deletions=true
single_segment=false
score_opts=""
help_message="usage: $0 [--glm 'G1 G2'] [--optional-deletions true|false] [--single-segment true|false] [--score-opts '...'] <stm> <ctm> <out-dir>"
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 3 ]; then echo "$help_message" 1>&2; exit 1; fi
stm=$1; ctm=$2; dir=$3
for f in "$stm" "$ctm" $glm; do [ -f "$f" ] || { echo "$0: no such file: $f" 1>&2; exit 1; }; done
if [ -f "$dir/.done" ]; then echo "$0: $dir is done, skipping"; cat "$dir/wer"; exit 0; fi
opts=(--ref-format stm --hyp-format ctm)
for g in $glm; do opts+=(--glm "$g"); done
[ "$optional_deletions" = true ] && opts+=(-D)
[ "$single_segment" = true ] && opts+=(--single-segment)
mkdir -p "$dir"
# a failed scoring leaves no temporary file behind (a finished one has renamed them)
trap 'rm -f "$dir/.score.txt.tmp" "$dir/.wer.tmp"' EXIT
# shellcheck disable=SC2086
lattice-tools score -r "$stm" -h "$ctm" "${opts[@]}" $score_opts -o "$dir" --name score > "$dir/.score.txt.tmp"
mv "$dir/.score.txt.tmp" "$dir/score.txt"
grep '^%WER' "$dir/score.txt" | tail -n 1 > "$dir/.wer.tmp"
mv "$dir/.wer.tmp" "$dir/wer"
touch "$dir/.done"
cat "$dir/wer"
