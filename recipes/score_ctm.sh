#!/usr/bin/env bash
# Stage script: score a CTM or alt-CTM against an STM (with GLMs) exactly like sclite.
#
#   recipes/score_ctm.sh [--glm G]... [--optional-deletions true] [--single-segment false] <stm> <ctm> <out-dir>
#
# Writes <out-dir>/score.sys (sclite-like summary), score.pra (alignments), score.json and prints the
# Kaldi-style %WER line.  Everything is done by `lattice-tools score`.
set -euo pipefail
glm=""
optional_deletions=true
single_segment=false
score_opts=""
help_message="usage: $0 [--glm 'G1 G2'] [--optional-deletions true|false] [--single-segment true|false] [--score-opts '...'] <stm> <ctm> <out-dir>"
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 3 ]; then echo "$help_message" 1>&2; exit 1; fi
stm=$1; ctm=$2; dir=$3
opts=()
for g in $glm; do opts+=(--glm "$g"); done
[ "$optional_deletions" = true ] && opts+=(-D)
[ "$single_segment" = true ] && opts+=(--single-segment)
mkdir -p "$dir"
# shellcheck disable=SC2086
lattice-tools score -r "$stm" -h "$ctm" "${opts[@]}" $score_opts -o "$dir" | tee "$dir/wer.txt"
