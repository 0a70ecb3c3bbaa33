#!/usr/bin/env bash
# Minimal local job runner with the interface of Kaldi's utils/run.pl, for machines without Kaldi:
#
#   local_run.sh [--max-jobs-run N | -tc N] [other queue options, ignored] [JOB=1:N] LOGFILE COMMAND [ARGS...]
#
# Same conventions as run.pl, so recipe scripts behave the same with either (or with queue.pl/slurm.pl):
#  * the arguments are joined into one bash command line: an argument without whitespace is used as is
#    (so an escaped \| or \> in the caller builds a pipeline or redirection), one containing a double
#    quote is wrapped in single quotes, any other one in double quotes;
#  * every occurrence of the job variable (e.g. JOB) in the command line and in LOGFILE is replaced by
#    the job index; LOGFILE must contain it when more than one job is run;
#  * each job logs "# <command>", "# Started at ...", its stdout+stderr, "# Accounting: ..." and
#    "# Ended (code N) at ..." to its own LOGFILE (directories are created);
#  * at most --max-jobs-run jobs run at once (default: the number of processors);
#  * the exit status is 0 only if every job succeeded; otherwise "K / N failed, log is in LOG*" is
#    printed and the status is 1.  A job that dies without writing its "# Ended" line counts as failed.
# With Kaldi installed, pass --cmd "$KALDI_ROOT/egs/wsj/s5/utils/run.pl" (or queue.pl / slurm.pl with
# your cluster's conf) to the recipe scripts instead; nothing else changes.
set -u
prog=$(basename "$0")
max_jobs=0
while [ $# -ge 2 ] && [[ "$1" == -* ]]; do
  case "$1" in
    --max-jobs-run|-tc)
      [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$prog: invalid option $1 $2 (expected a positive integer)" 1>&2; exit 1; }
      if [ "$max_jobs" -eq 0 ] || [ "$2" -lt "$max_jobs" ]; then max_jobs=$2; fi
      shift 2 ;;
    -V) shift ;;
    -pe) shift 3 ;;  # -pe smp N (GridEngine), ignored
    *) shift 2 ;;    # --mem 4G, --num-threads 2, --gpu 0, ... : meaningful to queues only
  esac
done
if [ $# -lt 2 ]; then
  echo "usage: $prog [--max-jobs-run N] [JOB=1:N] LOGFILE COMMAND [ARGS...]" 1>&2; exit 1
fi
var=""; first=1; last=1
if [[ "$1" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+):([0-9]+)$ ]]; then
  var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=${BASH_REMATCH[3]}; shift
  if [ "$first" -lt 1 ] || [ "$first" -gt "$last" ]; then
    echo "$prog: invalid job range $var=$first:$last (need 1 <= start <= end)" 1>&2; exit 1
  fi
elif [[ "$1" =~ ^([A-Za-z_][A-Za-z0-9_]*)=([0-9]+)$ ]]; then
  var=${BASH_REMATCH[1]}; first=${BASH_REMATCH[2]}; last=$first; shift
fi
logfile=$1; shift
[ $# -ge 1 ] || { echo "$prog: no command given" 1>&2; exit 1; }
if [ -n "$var" ] && [ "$last" -gt "$first" ] && [[ "$logfile" != *"$var"* ]]; then
  echo "$prog: $((last - first + 1)) jobs would all write one log file $logfile (put $var in its name)" 1>&2; exit 1
fi
if [ "$max_jobs" -eq 0 ]; then
  max_jobs=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 4)
fi

# Join the arguments exactly as run.pl does.
cmd=""
for a in "$@"; do
  if [[ "$a" =~ ^[^[:space:]]+$ ]]; then cmd+="$a "
  elif [[ "$a" == *\"* ]]; then cmd+="'$a' "
  else cmd+="\"$a\" "
  fi
done

log_of() { if [ -n "$var" ]; then echo "${logfile//$var/$1}"; else echo "$logfile"; fi; }

run_one() {  # $1 = job index
  local j=$1 log this rc t0
  log=$(log_of "$j")
  this=$cmd; [ -n "$var" ] && this=${cmd//$var/$j}
  mkdir -p "$(dirname "$log")" || return 1
  t0=$(date +%s)
  printf '# %s\n# Started at %s\n#\n' "$this" "$(date)" > "$log" || return 1
  bash -c "( $this) 2>>'${log//\'/\'\\\'\'}' >> '${log//\'/\'\\\'\'}'"
  rc=$?
  printf '# Accounting: time=%s threads=1\n# Ended (code %s) at %s, elapsed time %s seconds\n' \
    "$(($(date +%s) - t0))" "$rc" "$(date)" "$(($(date +%s) - t0))" >> "$log"
  return $rc
}

for ((j = first; j <= last; j++)); do
  while [ "$(jobs -rp | wc -l)" -ge "$max_jobs" ]; do wait -n; done
  run_one "$j" &
done
wait

# A job succeeded only if its log ends with "# Ended (code 0)" (a killed job never writes that line).
failed=()
for ((j = first; j <= last; j++)); do
  ended=$(grep '^# Ended (code ' "$(log_of "$j")" 2>/dev/null | tail -n 1)
  [[ "$ended" == "# Ended (code 0)"* ]] || failed+=("$j")
done
if [ ${#failed[@]} -gt 0 ]; then
  n=$((last - first + 1))
  if [ "$n" -eq 1 ]; then
    echo "$prog: job failed, log is in $(log_of "$first")" 1>&2
  else
    echo "$prog: ${#failed[@]} / $n failed (jobs ${failed[*]}), log is in ${logfile//$var/*}" 1>&2
  fi
  exit 1
fi
exit 0
