#!/usr/bin/env bash
# Stage script: keyword search on decoded lattices, Kaldi style: references, keyword list, term index
# (one shard per job, then merged), search, and NIST F4DE-exact scoring.
#
#   recipes/kws.sh [--nj N] [--cmd CMD] [--stage S] [--stop-stage S]
#                  (--wav-list LIST --transcript TEXT | --rttm RTTM --ecf ECF) [--kwlist KWLIST]
#                  [--num-terms 100] [--kwlist-opts "..."] [--index-opts "--max-length 3"]
#                  [--search-opts "--threshold 0.5"] <lattice-list> <out-dir>
#
# <lattice-list>: one lattice file or rspecifier per line, keys = utterance ids = recording ids of the
# reference (each utterance is one file of the ECF).
# Stages (each skipped when its .done marker exists; outputs written atomically, .done last):
#   0 reference  --wav-list + --transcript (trn or Kaldi text): forced alignment with pocketsphinx, one
#                job per chunk (`lattice-tools kws align`) -> <out-dir>/ref/{ref.ctm,ref.rttm,ecf.xml};
#                or --rttm + --ecf given: copied there.
#   1 kwlist     `lattice-tools kws kwlist` (--num-terms, seed 0; --kwlist-opts) -> kwlist.xml, unless --kwlist.
#   2 index      `lattice-tools kws index` of each job's lattices -> shards/index.JOB.db, merged by
#                `lattice-tools kws merge` -> index.db (any --nj gives the same hits).
#   3 search     `lattice-tools kws search` -> kwslist.xml (+ search.json: OOV / no-hit keywords); with
#                --utter-map (a Babel kws/ dir's utter_id / utter.map) also result.txt: Kaldi's kws-search
#                result lines 'kwid utt start end score' (all hits, raw -log posteriors, frames), what
#                local/search_index.sh writes and write_kwslist.pl / compute-atwv read.
#   4 score      `lattice-tools kws score` -> score/{sum.txt,bsum.txt}, score.json (ATWV, MTWV, OTWV, STWV).
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
stage=0
stop_stage=4
wav_list=""
transcript=""
rttm=""
ecf=""
kwlist=""
num_terms=100
kwlist_opts=""
index_opts=""
search_opts=""
utter_map=""
help_message="usage: $0 [--nj N] [--cmd CMD] [--stage S] [--stop-stage S] (--wav-list L --transcript T | --rttm R --ecf E)
       [--kwlist K] [--num-terms 100] [--kwlist-opts '...'] [--index-opts '...'] [--search-opts '...']
       [--utter-map MAP] <lattice-list> <out-dir>
  --cmd takes Kaldi's run.pl / queue.pl / slurm.pl (or our utils/local_run.sh, the default)."
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 2 ]; then echo "$help_message" 1>&2; exit 1; fi
list=$1; dir=$2
[ -f "$list" ] || { echo "$0: no such lattice list: $list" 1>&2; exit 1; }
[ -z "$utter_map" ] || [ -f "$utter_map" ] || { echo "$0: no such utterance map: $utter_map" 1>&2; exit 1; }
if [ -n "$rttm" ] || [ -n "$ecf" ]; then
  [ -f "$rttm" ] && [ -f "$ecf" ] || { echo "$0: --rttm and --ecf go together (files must exist)" 1>&2; exit 1; }
else
  [ -f "$wav_list" ] && [ -f "$transcript" ] || {
    echo "$0: give --wav-list and --transcript (forced alignment), or --rttm and --ecf" 1>&2; exit 1; }
fi
mkdir -p "$dir/log"
ref=$dir/ref

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  if [ -f "$ref/.done" ]; then
    echo "$0: $ref is done, skipping"
  else
    rm -rf "$ref"; mkdir -p "$ref/split" "$ref/parts"
    if [ -n "$rttm" ]; then
      cp "$rttm" "$ref/ref.rttm"; cp "$ecf" "$ref/ecf.xml"
    else
      n=$(lattice-tools split-list --nj "$nj" "$wav_list" "$ref/split/wav.JOB.list" | wc -l)
      $cmd --max-jobs-run "$nj" JOB=1:"$n" "$dir/log/align.JOB.log" \
        lattice-tools with-list "$ref/split/wav.JOB.list" \
          lattice-tools kws align -t "$transcript" -o "$ref/parts/ref.JOB.ctm" --rttm "$ref/parts/ref.JOB.rttm"
      ctms=(); rttms=()
      for ((j = 1; j <= n; j++)); do ctms+=("$ref/parts/ref.$j.ctm"); rttms+=("$ref/parts/ref.$j.rttm"); done
      lattice-tools merge -o "$ref/ref.ctm" "${ctms[@]}"
      lattice-tools merge -o "$ref/ref.rttm" "${rttms[@]}"
      lattice-tools kws ecf -o "$ref/ecf.xml" "$wav_list" 2> "$dir/log/ecf.log"
    fi
    rm -rf "$ref/split" "$ref/parts"
    touch "$ref/.done"
    echo "$0: references in $ref"
  fi
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  [ -f "$ref/.done" ] || { echo "$0: run stage 0 first ($ref/.done is missing)" 1>&2; exit 1; }
  if [ -f "$dir/kwlist.done" ]; then
    echo "$0: $dir/kwlist.xml is done, skipping"
  else
    if [ -n "$kwlist" ]; then
      cp "$kwlist" "$dir/kwlist.xml"
    else
      # shellcheck disable=SC2086
      lattice-tools kws kwlist --rttm "$ref/ref.rttm" -o "$dir/kwlist.xml" --num-terms "$num_terms" \
        --ecf-filename ecf.xml $kwlist_opts 2> "$dir/log/kwlist.log"
    fi
    touch "$dir/kwlist.done"
  fi
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  if [ -f "$dir/index.done" ]; then
    echo "$0: $dir/index.db is done, skipping"
  else
    rm -rf "$dir/shards" "$dir/split$nj"; mkdir -p "$dir/shards" "$dir/split$nj"
    lattice-tools split-list --nj "$nj" "$list" "$dir/split$nj/lattices.JOB.list" > /dev/null
    # shellcheck disable=SC2086
    $cmd --max-jobs-run "$nj" JOB=1:"$nj" "$dir/log/index.JOB.log" \
      lattice-tools with-list "$dir/split$nj/lattices.JOB.list" \
        lattice-tools kws index -o "$dir/shards/index.JOB.db" $index_opts
    shards=(); for ((j = 1; j <= nj; j++)); do shards+=("$dir/shards/index.$j.db"); done
    lattice-tools kws merge -o "$dir/index.db" --json "$dir/index.json" "${shards[@]}" 2> "$dir/log/merge.log"
    rm -rf "$dir/shards"
    touch "$dir/index.done"
    echo "$0: index $dir/index.db"
  fi
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  if [ -f "$dir/search.done" ]; then
    echo "$0: $dir/kwslist.xml is done, skipping"
  else
    # shellcheck disable=SC2086
    lattice-tools kws search "$dir/index.db" --kwlist "$dir/kwlist.xml" -o "$dir/kwslist.xml" \
      --json "$dir/search.json" $search_opts 2> "$dir/log/search.log"
    if [ -n "$utter_map" ]; then
      # kws-search's output: every hit, no duplicate removal or normalization (write_kwslist.pl does those)
      lattice-tools kws search "$dir/index.db" --kwlist "$dir/kwlist.xml" -o "$dir/result.txt" --out-format kaldi \
        --utter-map "$utter_map" --duptime 0 --normalization none 2>> "$dir/log/search.log"
    fi
    touch "$dir/search.done"
  fi
fi

if [ "$stage" -le 4 ] && [ "$stop_stage" -ge 4 ]; then
  if [ -f "$dir/score.done" ]; then
    echo "$0: $dir/score is done, skipping"
  else
    lattice-tools kws score -e "$ref/ecf.xml" -t "$dir/kwlist.xml" -s "$dir/kwslist.xml" -r "$ref/ref.rttm" \
      -o "$dir/score" --json "$dir/score.json" > /dev/null
    touch "$dir/score.done"
  fi
  python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["overall"]
print(" ".join("%s %.4f" % (k.upper(), o[k]["twv"]) for k in ("atwv", "mtwv", "otwv", "stwv")))' "$dir/score.json"
fi
