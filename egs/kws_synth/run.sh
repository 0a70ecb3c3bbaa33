#!/usr/bin/env bash
# egs/kws_synth: a keyword-search corpus made from scratch: public-domain text (local/text.txt) spoken by
# six espeak-ng voices (6.7 min, 47 utterances), decoded by pocketsphinx into lattices, references by
# forced alignment, a keyword list, a term index, search and F4DE-exact scores.  See README.md here.
#
#   ./run.sh [--exp exp] [--stage N] [--stop-stage N] [--nj N] [--cmd CMD] [--max-utts N]
#            [--decode-opts "..."] [--num-terms 200] [--index-opts "--max-length 3 --min-posterior 1e-7"] [--search-opts "..."]
# Stages: 0 synthesize (espeak-ng + sox), 1 lattices (pocketsphinx), 2 keyword search (recipes/kws.sh:
#         references, kwlist, index, search, score).  A finished stage is skipped on rerun.
set -euo pipefail
cd "$(dirname "$0")"
recipes=../../recipes

exp=exp
stage=0
stop_stage=2
nj=2
cmd="$recipes/utils/local_run.sh"
max_utts=0
voices="en-us en-gb+f3 en-gb-scotland en-us+m3 en-029 en-gb-x-rp+f2"
. conf/kws.conf
help_message="$(sed -n '2,10p' "$0")"
. "$recipes/utils/parse_options.sh"
[ $# -eq 0 ] || { echo "$0: unexpected arguments: $*" 1>&2; echo "$help_message" 1>&2; exit 1; }
mkdir -p "$exp"
data=$exp/data
lat=$exp/lattices

if [ "$stage" -le 0 ] && [ "$stop_stage" -ge 0 ]; then
  echo "== stage 0: synthesize local/text.txt with espeak-ng"
  if [ -f "$data/.done" ]; then
    echo "$0: $data is done, skipping"
  else
    python3 local/synthesize.py --voices "$voices" --max-utts "$max_utts" local/text.txt "$data"
  fi
fi

if [ "$stage" -le 1 ] && [ "$stop_stage" -ge 1 ]; then
  echo "== stage 1: lattices (pocketsphinx)"
  [ -f "$data/.done" ] || { echo "$0: run stage 0 first ($data/.done is missing)" 1>&2; exit 1; }
  "$recipes/decode_audio.sh" --nj "$nj" --cmd "$cmd" --decode-opts "$decode_opts" "$data/wav.list" "$lat"
fi

if [ "$stage" -le 2 ] && [ "$stop_stage" -ge 2 ]; then
  echo "== stage 2: keyword search"
  [ -f "$lat/.done" ] || { echo "$0: run stage 1 first ($lat/.done is missing)" 1>&2; exit 1; }
  "$recipes/kws.sh" --nj "$nj" --cmd "$cmd" --wav-list "$data/wav.list" --transcript "$data/text" \
    --num-terms "$num_terms" --kwlist-opts "$kwlist_opts" --index-opts "$index_opts" --search-opts "$search_opts" \
    "$lat/lattices.list" "$exp/kws"
fi
