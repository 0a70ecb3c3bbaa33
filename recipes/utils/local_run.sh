#!/usr/bin/env bash
# Minimal local job runner with the interface of Kaldi's run.pl, for machines without Kaldi:
#   local_run.sh [--max-jobs-run N] [JOB=1:N] LOGFILE COMMAND [ARGS...]
# Every "JOB" in LOGFILE and in the command is replaced by the job index. Jobs run in parallel
# (at most --max-jobs-run at once, default all), each logging to its own file with the command,
# start/end times and exit status, as run.pl does. Exits non-zero if any job failed, naming them.
# With Kaldi installed, pass --cmd "$KALDI_ROOT/egs/wsj/s5/utils/run.pl" (or queue.pl / slurm.pl)
# to the recipe scripts instead; the interface is the same.
set -u
max_jobs=0
if [ "${1:-}" = "--max-jobs-run" ]; then max_jobs=$2; shift 2; fi
if [ $# -lt 2 ]; then
  echo "usage: $0 [--max-jobs-run N] [JOB=1:N] LOGFILE COMMAND [ARGS...]" 1>&2; exit 1
fi
var=""; first=1; last=1
if [[ "$1" =~ ^([A-Za-z_]+)=([0-9]+):([0-9]+)$ ]]; then
  var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=${BASH_REMATCH[3]}; shift
elif [[ "$1" =~ ^([A-Za-z_]+)=([0-9]+)$ ]]; then
  var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=$first; shift
fi
logfile=$1; shift
[ $# -ge 1 ] || { echo "$0: no command given" 1>&2; exit 1; }

run_one() {  # $1 = job index
  local j=$1 log cmdline; shift
  if [ -n "$var" ]; then
    log=${logfile//$var/$j}
    cmdline=""
    for a in "$@"; do cmdline+="$(printf '%q' "${a//$var/$j}") "; done
  else
    log=$logfile
    cmdline=""
    for a in "$@"; do cmdline+="$(printf '%q' "$a") "; done
  fi
  mkdir -p "$(dirname "$log")"
  {
    echo "# $cmdline"
    echo "# Started at $(date)"
  } > "$log"
  ( eval "$cmdline" ) >> "$log" 2>&1
  local rc=$?
  {
    echo "# Accounting: status=$rc"
    echo "# Ended (code $rc) at $(date)"
  } >> "$log"
  return $rc
}

shift_args=("$@")
pids=(); jobs_idx=()
failed=()
for ((j = first; j <= last; j++)); do
  run_one "$j" "${shift_args[@]}" &
  pids+=($!); jobs_idx+=($j)
  if [ "$max_jobs" -gt 0 ] && [ ${#pids[@]} -ge "$max_jobs" ]; then
    wait "${pids[0]}" || failed+=("${jobs_idx[0]}")
    pids=("${pids[@]:1}"); jobs_idx=("${jobs_idx[@]:1}")
  fi
done
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || failed+=("${jobs_idx[$i]}")
done
if [ ${#failed[@]} -gt 0 ]; then
  l=$logfile; [ -n "$var" ] && l=${logfile//$var/${failed[0]}}
  echo "$0: ${#failed[@]} / $((last - first + 1)) jobs failed (jobs ${failed[*]}); see $l" 1>&2
  exit 1
fi
exit 0
