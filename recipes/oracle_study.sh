#!/usr/bin/env bash
# Stage script: the lattice-density vs oracle-error study (Faria et al., Tables 3-6 and plots).
#
#   recipes/oracle_study.sh [--ns "1 2 10 100 1000"] [--prune-thresholds "0 0.001 0.01"]
#                           [--optional-deletions true] [--study-opts "..."] <references> <out-dir> <name>=<lattices> [...]
#
# <references>: trn, STM or Kaldi "text" file keyed like the lattices (utterance ids for per-utterance
# lattices).  Each <name>=<lattices> is one lattice set (an SLF directory, "ark:...", a .pt file), e.g.
# two decoder beams; each (set, prune threshold) is one density.  Everything is done by
# `lattice-tools study`, which writes <out-dir>/study.{md,csv,json}, oracle_vs_{n,mb}.png and caches
# every finished cell under <out-dir>/cells/, so a killed study resumes where it stopped.  Its output
# goes to <out-dir>/log/study.log.
# <out-dir>/.done marks a finished study, which a rerun skips.
set -euo pipefail
ns="1 2 10 100 1000"
prune_thresholds="0"
optional_deletions=true
study_opts=""
help_message="usage: $0 [--ns '1 2 10 100'] [--prune-thresholds '0 0.01'] [--optional-deletions true|false]
       [--study-opts '--bootstrap 0 --representations nbest,sausage,phrase,lattice'] <references> <out-dir> name=lattices [...]"
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -lt 3 ]; then echo "$help_message" 1>&2; exit 1; fi
ref=$1; dir=$2; shift 2
[ -f "$ref" ] || { echo "$0: no such reference file: $ref" 1>&2; exit 1; }
if [ -f "$dir/.done" ]; then echo "$0: $dir is done, skipping"; exit 0; fi
for set in "$@"; do
  [[ "$set" == *=* ]] || { echo "$0: lattice sets are name=lattices, got '$set'" 1>&2; exit 1; }
done
opts=(-r "$ref" -o "$dir" -n "$(echo $ns | tr ' ' ',')" --prune "$(echo $prune_thresholds | tr ' ' ',')")
[ "$optional_deletions" = true ] && opts+=(-D)
mkdir -p "$dir/log"
# shellcheck disable=SC2086
lattice-tools study "${opts[@]}" $study_opts "$@" > "$dir/log/study.log" 2>&1 || {
  echo "$0: lattice-tools study failed; see $dir/log/study.log" 1>&2; tail -n 5 "$dir/log/study.log" 1>&2; exit 1; }
touch "$dir/.done"
echo "$0: wrote $dir/study.md"
