#!/usr/bin/env bash
# Stage script: keyword search in a Babel-style kws/ data dir, in place of Kaldi's local/search_index.sh +
# utils/write_kwslist.pl (and local/kws_score.sh), on lattices or on Kaldi's own KWS indexes.
#
#   recipes/kws_search.sh [--nj N] [--cmd CMD] [--stage S] [--stop-stage S] [--words WORDS]
#                         [--segments SEGMENTS] [--duration SECONDS] [--frame-subsampling-factor 1]
#                         [--index-opts "..."]
#                         [--search-opts "..."] [--score-opts "..."] <kws-data-dir> <lattice-list|indices-dir> <out-dir>
#
# <kws-data-dir> (what Babel's local/kws_setup.sh / kws_data_prep.sh make): ecf.xml, kwlist.xml, rttm,
#   utter_id ('utterance integer', Kaldi's utter.map), and keywords.fsts (transcripts-to-fsts, text or binary;
#   word ids, spelled by --words for a lattice-tools index) -- without keywords.fsts, kwlist.xml's words.
# <lattice-list>: one lattice file or rspecifier per line (keys = utterance ids); or <indices-dir>: Kaldi's
#   steps/make_index.sh output (index.JOB.gz and num_jobs), searched as it is.
# --segments: Kaldi segments 'utt recording start end' (default: <kws-data-dir>/../segments when it exists;
#   without one an utterance is its own recording): where the utterances lie in the ECF's recordings.
# --words: words.txt of the lattices (Kaldi lattices hold word ids).  --duration: seconds of searched audio
#   for the KST normalization (default: the sum of the ECF's excerpt durations).  --frame-subsampling-factor:
#   the lattices' (chain models: 3; Kaldi's index frames are lattice frames of 10 ms x this).
# Stages (each skipped when its .done marker exists; outputs written atomically, .done last):
#   0 index   lattices only: `lattice-tools kws index` per job -> index/index.JOB.db (+ --index-opts), merged
#             by `lattice-tools kws merge` -> index/index.db.  An indices dir: nothing to do.
#   1 search  what local/search_index.sh writes: per job, every hit of every keyword as kws-search's lines
#             'kwid utterance start-frame end-frame -log(posterior)' (utterance names, as int2sym.pl maps
#             them with utter_id) -> result.JOB.
#   2 kwslist what write_kwslist.pl writes: `lattice-tools kws search` of all jobs' hits at once (duplicate
#             removal --duptime 0.6, KST normalization, threshold 0.5, as Babel's kws_search.sh; override
#             with --search-opts) -> kwslist.xml (+ search.json: OOV / no-hit keywords).
#   3 score   `lattice-tools kws score` (F4DE-exact; --score-opts, e.g. --ignore-outside-ecf for a dev subset,
#             --term-set, --file-channel) -> score/{sum.txt,bsum.txt}, score.json; prints ATWV MTWV OTWV STWV.
set -euo pipefail

nj=1
cmd="$(dirname "$0")/utils/local_run.sh"
stage=0
stop_stage=3
words=""
segments=""
duration=""
frame_subsampling_factor=1
index_opts=""
search_opts=""
score_opts=""
help_message="$(sed -n '5,8p' "$0")
  --cmd takes Kaldi's run.pl / queue.pl / slurm.pl (or our utils/local_run.sh, the default)."
. "$(dirname "$0")/utils/parse_options.sh"
if [ $# -ne 3 ]; then echo "$help_message" 1>&2; exit 1; fi
kwsdata=$1; source=$2; dir=$3
for f in ecf.xml kwlist.xml rttm utter_id; do
  [ -f "$kwsdata/$f" ] || { echo "$0: $kwsdata/$f is missing (a Babel kws/ data dir)" 1>&2; exit 1; }
done
keywords=$kwsdata/kwlist.xml
[ -s "$kwsdata/keywords.fsts" ] && keywords=$kwsdata/keywords.fsts
[ -n "$segments" ] || { [ -f "$kwsdata/../segments" ] && segments=$kwsdata/../segments; } || true
[ -z "$segments" ] || [ -f "$segments" ] || { echo "$0: no such segments file: $segments" 1>&2; exit 1; }
if [ -d "$source" ]; then
  [ -f "$source/num_jobs" ] || { echo "$0: $source has no num_jobs (expected Kaldi's make_index.sh output)" 1>&2; exit 1; }
  kaldi=true; nj=$(cat "$source/num_jobs")
  for ((j = 1; j <= nj; j++)); do
    [ -f "$source/index.$j.gz" ] || { echo "$0: $source/index.$j.gz is missing" 1>&2; exit 1; }
  done
else
  [ -f "$source" ] || { echo "$0: no such lattice list or indices dir: $source" 1>&2; exit 1; }
  kaldi=false
fi
if [ -z "$duration" ]; then
  duration=$(awk '{ while (match($0, / dur="[0-9.eE+-]+"/)) { s = substr($0, RSTART + 6, RLENGTH - 7); t += s;
                     $0 = substr($0, RSTART + RLENGTH) } } END { printf "%.3f", t }' "$kwsdata/ecf.xml")
fi
word_opts=(--frame-subsampling-factor "$frame_subsampling_factor"); [ -n "$words" ] && word_opts+=(--words "$words")
seg_opts=(); [ -n "$segments" ] && seg_opts=(--segments "$segments")
mkdir -p "$dir/log"
idx=$dir/index

index_of() {  # the index searched by job $1 (0: all jobs)
  if $kaldi; then
    if [ "$1" -eq 0 ]; then echo "$idx/all.index"; else echo "$source/index.$1.gz"; fi
  else
    if [ "$1" -eq 0 ]; then echo "$idx/index.db"; else echo "$idx/index.$1.db"; fi
  fi
}

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  if [ -f "$idx/.done" ]; then
    echo "$0: $idx is done, skipping"
  else
    rm -rf "$idx"; mkdir -p "$idx/split$nj"
    if $kaldi; then
      # one archive of every job's index, for the kwslist's search over all hits (KST sums a keyword's hits)
      for ((j = 1; j <= nj; j++)); do gunzip -cf "$source/index.$j.gz"; done > "$idx/all.index.tmp"
      mv "$idx/all.index.tmp" "$idx/all.index"
    else
      lattice-tools split-list --nj "$nj" "$source" "$idx/split$nj/lattices.JOB.list" > /dev/null
      # shellcheck disable=SC2086
      $cmd --max-jobs-run "$nj" JOB=1:"$nj" "$dir/log/index.JOB.log" \
        lattice-tools with-list "$idx/split$nj/lattices.JOB.list" \
          lattice-tools kws index -o "$idx/index.JOB.db" "${word_opts[@]}" "${seg_opts[@]}" $index_opts
      shards=(); for ((j = 1; j <= nj; j++)); do shards+=("$idx/index.$j.db"); done
      lattice-tools kws merge -o "$idx/index.db" --json "$idx/index.json" "${shards[@]}" 2> "$dir/log/merge.log"
    fi
    rm -rf "$idx/split$nj"
    echo "$nj" > "$idx/num_jobs"
    touch "$idx/.done"
  fi
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  [ -f "$idx/.done" ] || { echo "$0: run stage 0 first ($idx/.done is missing)" 1>&2; exit 1; }
  nj=$(cat "$idx/num_jobs")
  if [ -f "$dir/search.done" ]; then
    echo "$0: $dir/result.* are done, skipping"
  else
    rm -f "$dir"/result.*
    for ((j = 1; j <= nj; j++)); do
      # kws-search's lines (every hit; no duplicate removal or normalization: the kwslist stage does those)
      lattice-tools kws search "$(index_of "$j")" --kwlist "$keywords" --utter-map "$kwsdata/utter_id" \
        "${word_opts[@]}" "${seg_opts[@]}" --out-format kaldi --duptime 0 --normalization none \
        -o "$dir/result.$j.int" 2> "$dir/log/search.$j.log"
      # utterance integers -> names, as search_index.sh's int2sym.pl -f 2 utter_id
      awk 'NR == FNR { name[$2] = $1; next }
           { if (!($2 in name)) { print "utterance " $2 " is not in utter_id" > "/dev/stderr"; exit 1 }
             $2 = name[$2]; print }' "$kwsdata/utter_id" "$dir/result.$j.int" > "$dir/result.$j.tmp"
      mv "$dir/result.$j.tmp" "$dir/result.$j"; rm -f "$dir/result.$j.int"
    done
    touch "$dir/search.done"
  fi
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  [ -f "$idx/.done" ] || { echo "$0: run stage 0 first ($idx/.done is missing)" 1>&2; exit 1; }
  if [ -f "$dir/kwslist.done" ]; then
    echo "$0: $dir/kwslist.xml is done, skipping"
  else
    kaldi_opts=(); $kaldi && kaldi_opts=(--utter-map "$kwsdata/utter_id" "${seg_opts[@]}")
    # shellcheck disable=SC2086
    lattice-tools kws search "$(index_of 0)" --kwlist "$keywords" "${word_opts[@]}" "${kaldi_opts[@]}" \
      -o "$dir/kwslist.xml" --kwlist-filename kwlist.xml --normalization kst --duration "$duration" --duptime 0.6 --threshold 0.5 \
      --json "$dir/search.json" $search_opts 2> "$dir/log/kwslist.log"
    touch "$dir/kwslist.done"
  fi
fi

if [ "$stage" -le 3 ] && [ "$stop_stage" -ge 3 ]; then
  [ -f "$dir/kwslist.done" ] || { echo "$0: run stage 2 first ($dir/kwslist.done is missing)" 1>&2; exit 1; }
  if [ -f "$dir/score.done" ]; then
    echo "$0: $dir/score is done, skipping"
  else
    # shellcheck disable=SC2086
    lattice-tools kws score -e "$kwsdata/ecf.xml" -t "$kwsdata/kwlist.xml" -s "$dir/kwslist.xml" \
      -r "$kwsdata/rttm" -o "$dir/score" --json "$dir/score.json" $score_opts > /dev/null
    touch "$dir/score.done"
  fi
  python3 -c 'import json, sys; o = json.load(open(sys.argv[1]))["overall"]
print(" ".join("%s %.4f" % (k.upper(), o[k]["twv"]) for k in ("atwv", "mtwv", "otwv", "stwv")))' "$dir/score.json"
fi
