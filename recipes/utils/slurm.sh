#!/usr/bin/env bash
# Job runner for Slurm with the interface of Kaldi's utils/run.pl (and of utils/local_run.sh):
#
#   slurm.sh [--max-jobs-run N | -tc N] [--mem 4G] [--num-threads N] [--time T] [--gpu N]
#            [--partition P] [JOB=1:N] LOGFILE COMMAND [ARGS...]
#
# The jobs are one `sbatch --array=1-N[%max] --wait` submission; each array task runs its job through
# utils/local_run.sh, so the command line is joined, the job variable replaced and the log written exactly
# as run.pl does ("# <command>", "# Started at", output, "# Accounting", "# Ended (code N)").  The exit
# status is 0 only if every job's log ends with "# Ended (code 0)"; otherwise "K / N failed, log is in
# LOG*" is printed and the status is 1 (a job Slurm killed, e.g. past --mem or --time, never writes that
# line, so it counts as failed).  The batch script and Slurm's own output go to LOGDIR/q/.
# Use it as a recipe's --cmd: `recipes/make_alternatives.sh --cmd recipes/utils/slurm.sh ...`.
set -u
prog=$(basename "$0")
here=$(cd "$(dirname "$0")" && pwd)
command -v sbatch >/dev/null || { echo "$prog: sbatch not found (is Slurm installed and SLURM_CONF set?)" 1>&2; exit 1; }
sbatch_opts=(); max_jobs=""
while [ $# -ge 2 ] && [[ "$1" == -* ]]; do
  case "$1" in
    --max-jobs-run|-tc)
      [[ "$2" =~ ^[1-9][0-9]*$ ]] || { echo "$prog: invalid option $1 $2 (expected a positive integer)" 1>&2; exit 1; }
      max_jobs=$2 ;;
    --mem) sbatch_opts+=("--mem=$2") ;;
    --num-threads) sbatch_opts+=("--cpus-per-task=$2") ;;
    --time) sbatch_opts+=("--time=$2") ;;
    --gpu) [ "$2" = 0 ] || sbatch_opts+=("--gres=gpu:$2") ;;
    --partition) sbatch_opts+=("--partition=$2") ;;
    -V) shift; continue ;;
    -pe) shift 3; continue ;;
    *) ;;   # other queue options: meaningful to other schedulers only
  esac
  shift 2
done
if [ $# -lt 2 ]; then
  echo "usage: $prog [--max-jobs-run N] [--mem M] [--num-threads N] [JOB=1:N] LOGFILE COMMAND [ARGS...]" 1>&2; exit 1
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
[ -n "$var" ] || var=JOB   # a single job: the array index is not used in the log or the command

logdir=$(dirname "$logfile"); qdir="$logdir/q"
mkdir -p "$qdir" || exit 1
base=$(basename "$logfile"); base=${base//$var/@}
script="$qdir/${base%.log}.sh"
log_of() { echo "${logfile//$var/$1}"; }
for ((j = first; j <= last; j++)); do rm -f "$(log_of "$j")"; done

# The batch script: the array task runs job $SLURM_ARRAY_TASK_ID through local_run.sh (same log format).
{
  echo '#!/usr/bin/env bash'
  printf 'cd %q || exit 1\n' "$PWD"
  printf 'exec %q %q %q' "$here/local_run.sh" "$var=\$SLURM_ARRAY_TASK_ID" "$logfile" | sed 's/\\\$SLURM_ARRAY_TASK_ID/$SLURM_ARRAY_TASK_ID/'
  for a in "$@"; do printf ' %q' "$a"; done
  echo
} > "$script"
array="$first-$last"; [ -n "$max_jobs" ] && array+="%$max_jobs"
sbatch --array="$array" --wait --job-name="lt-${base%.log}" --output="$qdir/${base%.log}.%a.out" \
  --export=ALL "${sbatch_opts[@]}" "$script" > "$qdir/${base%.log}.submit" 2>&1
submit_rc=$?
if [ $submit_rc -ne 0 ] && ! grep -q '^Submitted batch job' "$qdir/${base%.log}.submit"; then
  echo "$prog: sbatch failed: $(tail -n 3 "$qdir/${base%.log}.submit")" 1>&2; exit 1
fi

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
