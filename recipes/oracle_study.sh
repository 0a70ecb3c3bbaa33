#!/usr/bin/env bash
# Stage script: the lattice-density vs oracle-error study (seed 001 Tables 3-6 and plots).
#
#   recipes/oracle_study.sh [--ns "1 2 10 100 1000"] [--prune-thresholds "0 0.001 0.01"] [--glm G]
#                           [--study-opts "..."] <ref.stm|ref.trn> <out-dir> <name>=<lattice-list> [...]
#
# Each <name>=<lattice-list> is one lattice set (e.g. two decoder beams). Writes <out-dir>/tables.md,
# tables.csv, tables.json and PNG plots; finished cells are cached, so a rerun resumes.
set -euo pipefail
ns="1 2 10 100 1000"
prune_thresholds=""
glm=""
study_opts=""
help_message="usage: $0 [--ns '1 2 10 100'] [--prune-thresholds '0 0.01'] [--glm G] <ref> <out-dir> name=list [...]"
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -lt 3 ]; then echo "$help_message" 1>&2; exit 1; fi
ref=$1; dir=$2; shift 2
opts=(-r "$ref" -o "$dir")
for n in $ns; do opts+=(-n "$n"); done
for t in $prune_thresholds; do opts+=(--prune "$t"); done
[ -n "$glm" ] && opts+=(--glm "$glm")
for set in "$@"; do opts+=(--lattices "$set"); done
# shellcheck disable=SC2086
lattice-tools study "${opts[@]}" $study_opts
