#!/usr/bin/env bash
# hot-tune-sweep.sh — runs a hot-tune sweep as a Slurm job array and merges it into one DB.
#
# Usage: tools/slurm/hot-tune-sweep.sh [options] SPEC OUT.db [-- hot-tune arguments...]
#
# Submits tools/slurm/hot-tune.sbatch as an array of N tasks (sbatch --array=0-(N-1)); task I
# runs  hot-tune SPEC --shard I/N --db DIR/shard-I.db [hot-tune arguments]. It waits for the job,
# checks every task's exit status (DIR/shard-I.rc), merges the shards into OUT.db
# (hot-tune merge OUT.db DIR/shard-0.db ...; rows already in OUT.db stay unless a shard has the
# same key) and prints hot-tune show OUT.db. Run it on a login node of the cluster; SPEC, DIR,
# OUT.db and the hot-tune binary must be at the same paths on the compute nodes.
#
# Options:
#   -n, --tasks N        array size = number of shards (default 4)
#   -d, --dir DIR        folder of the shard DBs, their status files and the task logs
#                        (DIR/logs/task-I-jobJ.log); default OUT.db.shards next to OUT.db
#       --resume         resubmit only the tasks of DIR without a successful status (failed,
#                        cancelled, timed out), passing --resume to hot-tune so that each
#                        continues its shard DB; then merge. Give the same SPEC, OUT.db, -n and
#                        hot-tune arguments as the first run
#       --gpu            one GPU per task (sbatch --gres=gpu:1)
#       --sbatch-arg ARG pass ARG to sbatch, repeatable (--sbatch-arg=--partition=gpu
#                        --sbatch-arg=--time=02:00:00); sbatch also reads SBATCH_* variables
#       --hot-tune PATH  the hot-tune binary (default: $HOT_TUNE_EXE, else hot-tune on PATH)
#       --poll SECONDS   how often the job is polled with squeue (default 2)
#   -h, --help           this text
# Without --resume, DIR must not hold shard DBs yet (so that rows of an earlier sweep never leak
# into this one). Ctrl-C (or SIGTERM) cancels the job (scancel).
# Exit status: 0 when every task succeeded and the merge and show did; 1 otherwise, with one
# line per failed task naming it and its log; 2 on a usage error.
set -euo pipefail
me=hot-tune-sweep
die() { echo "$me: error: $*" >&2; exit 1; }
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
bad_usage() { echo "$me: error: $*" >&2; echo "usage: $0 [options] SPEC OUT.db [-- hot-tune arguments...] (--help for more)" >&2; exit 2; }

tasks="" dir="" resume=0 gpu=0 poll=2 bin=${HOT_TUNE_EXE:-hot-tune}
sbatch_args=() pos=() extra=()
need() { [ $# -ge 2 ] || bad_usage "$1 needs a value"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage; exit 0 ;;
    -n|--tasks) need "$@"; tasks=$2; shift 2 ;;
    --tasks=*) tasks=${1#*=}; shift ;;
    -d|--dir) need "$@"; dir=$2; shift 2 ;;
    --dir=*) dir=${1#*=}; shift ;;
    --resume) resume=1; shift ;;
    --gpu) gpu=1; shift ;;
    --sbatch-arg) need "$@"; sbatch_args+=("$2"); shift 2 ;;
    --sbatch-arg=*) sbatch_args+=("${1#*=}"); shift ;;
    --hot-tune) need "$@"; bin=$2; shift 2 ;;
    --hot-tune=*) bin=${1#*=}; shift ;;
    --poll) need "$@"; poll=$2; shift 2 ;;
    --poll=*) poll=${1#*=}; shift ;;
    --) shift; extra=("$@"); break ;;
    -*) bad_usage "unknown option '$1'" ;;
    *) pos+=("$1"); shift ;;
  esac
done
[ ${#pos[@]} -eq 2 ] || bad_usage "expected SPEC and OUT.db, got ${#pos[@]} argument(s)"
spec=${pos[0]} out=${pos[1]}
numsh=$(cd -- "$(dirname -- "$0")/../lib" && pwd -P)/num.sh # the one parser of numbers
. "$numsh"
poll=$(num_parse --poll "$poll" 1 3600 2>&1) || bad_usage "$poll (seconds)"
if [ -n "$tasks" ]; then tasks=$(num_parse --tasks "$tasks" 1 10000 2>&1) || bad_usage "$tasks"; fi

[ -f "$spec" ] && [ -r "$spec" ] || die "spec $spec: no such file"
spec=$(cd -- "$(dirname -- "$spec")" && pwd -P)/$(basename -- "$spec")
outdir=$(dirname -- "$out")
[ -d "$outdir" ] || die "OUT.db $out: folder $outdir does not exist"
out=$(cd -- "$outdir" && pwd -P)/$(basename -- "$out")
[ -n "$dir" ] || dir=$out.shards
for c in sbatch squeue scancel; do
  command -v "$c" >/dev/null 2>&1 ||
    die "$c not found on PATH: run on a Slurm login node (or start a local test cluster: tools/slurm/cluster.sh start DIR, then export SLURM_CONF=DIR/slurm.conf)"
done
binpath=$(command -v -- "$bin" 2>/dev/null) || die "hot-tune binary '$bin' not found (--hot-tune, HOT_TUNE_EXE or PATH)"
case $binpath in /*) ;; *) binpath=$(cd -- "$(dirname -- "$binpath")" && pwd -P)/$(basename -- "$binpath") ;; esac
[ -x "$binpath" ] || die "hot-tune binary $binpath is not executable"
script=$(cd -- "$(dirname -- "$0")" && pwd -P)/hot-tune.sbatch
[ -r "$script" ] || die "$script is missing (it ships next to this script)"

mkdir -p -- "$dir/logs" || die "cannot create $dir/logs"
dir=$(cd -- "$dir" && pwd -P)
state=$dir/sweep.txt
if [ "$resume" -eq 0 ]; then
  if compgen -G "$dir/shard-*.db" >/dev/null; then
    die "$dir already holds shard DBs of an earlier sweep: continue it with --resume, or choose another --dir"
  fi
  [ -n "$tasks" ] || tasks=4
  printf 'tasks=%s\nspec=%s\n' "$tasks" "$spec" >"$state"
  todo=()
  for ((i = 0; i < tasks; i++)); do todo+=("$i"); done
else
  [ -r "$state" ] || die "--resume: $state is missing (no earlier sweep in $dir)"
  prev_tasks=$(sed -n 's/^tasks=//p' "$state")
  prev_spec=$(sed -n 's/^spec=//p' "$state")
  [ -z "$tasks" ] || [ "$tasks" = "$prev_tasks" ] ||
    die "--resume: the sweep in $dir has $prev_tasks tasks, not $tasks (-n)"
  [ "$spec" = "$prev_spec" ] || die "--resume: the sweep in $dir ran $prev_spec, not $spec"
  tasks=$(num_parse "$state: tasks" "$prev_tasks" 1 10000 2>&1) || die "$tasks"
  todo=()
  for ((i = 0; i < tasks; i++)); do
    [ "$(cat "$dir/shard-$i.rc" 2>/dev/null)" = 0 ] || todo+=("$i")
  done
  extra+=(--resume)
fi

if [ ${#todo[@]} -gt 0 ]; then
  if [ "$resume" -eq 1 ]; then array=$(IFS=,; echo "${todo[*]}"); else array=0-$((tasks - 1)); fi
  for i in "${todo[@]}"; do rm -f -- "$dir/shard-$i.rc"; done
  [ "$gpu" -eq 0 ] || sbatch_args+=(--gres=gpu:1)
  submit_err=$(mktemp)
  if ! jobid=$(HOT_TUNE_EXE=$binpath HOT_TUNE_SHARDS=$tasks HOT_NUM_SH=$numsh sbatch --parsable --array="$array" \
      --job-name=hot-tune --output="$dir/logs/task-%a-job%A.log" "${sbatch_args[@]}" \
      "$script" "$spec" "$dir" "${extra[@]}" 2>"$submit_err"); then
    msg=$(tr '\n' ' ' <"$submit_err"); rm -f "$submit_err"
    die "sbatch refused the job: $msg"
  fi
  rm -f "$submit_err"
  jobid=${jobid%%;*}
  echo "$me: job $jobid: $tasks shard(s), running task(s) $array of $spec; shards in $dir"
  trap 'echo "$me: interrupted: cancelling job $jobid" >&2; scancel "$jobid" 2>/dev/null; exit 130' INT TERM
  fails=0 last=""
  while :; do
    if left=$(squeue -h -r -j "$jobid" -o %i 2>"$dir/logs/squeue.err"); then
      fails=0
      [ -n "$left" ] || break
      n_left=$(printf '%s\n' "$left" | wc -l)
      if [ "$n_left" != "$last" ]; then
        echo "$me: job $jobid: $((${#todo[@]} - n_left)) of ${#todo[@]} task(s) done"
        last=$n_left
      fi
    else
      # A job purged from the controller's memory is reported as an invalid id: it is over.
      grep -qi 'invalid job id' "$dir/logs/squeue.err" && break
      fails=$((fails + 1))
      [ "$fails" -lt 30 ] || die "squeue keeps failing for job $jobid: $(tr '\n' ' ' <"$dir/logs/squeue.err")"
    fi
    sleep "$poll"
  done
  trap - INT TERM
  rm -f "$dir/logs/squeue.err"
fi

failed=0
for ((i = 0; i < tasks; i++)); do
  log=$(ls -t "$dir/logs/task-$i-job"*.log 2>/dev/null | head -n1 || true)
  [ -n "$log" ] || log="$dir/logs/task-$i-job${jobid:-?}.log (missing: the task never started)"
  if [ ! -r "$dir/shard-$i.rc" ]; then
    echo "$me: error: task $i did not finish (no exit status: cancelled, timed out, out of memory or its node failed); log: $log" >&2
    failed=$((failed + 1))
  elif [ "$(cat "$dir/shard-$i.rc")" != 0 ]; then
    echo "$me: error: task $i failed with exit status $(cat "$dir/shard-$i.rc"); log: $log" >&2
    failed=$((failed + 1))
  elif [ ! -s "$dir/shard-$i.db" ]; then
    echo "$me: error: task $i succeeded but wrote no $dir/shard-$i.db; log: $log" >&2
    failed=$((failed + 1))
  fi
done
if [ "$failed" -gt 0 ]; then
  echo "$me: error: $failed of $tasks task(s) failed; nothing merged into $out. Rerun them with: $0 --resume [same options] $spec $out" >&2
  exit 1
fi

shards=()
for ((i = 0; i < tasks; i++)); do shards+=("$dir/shard-$i.db"); done
"$binpath" merge "$out" "${shards[@]}" || die "hot-tune merge $out failed (shards kept in $dir)"
echo "$me: merged $tasks shard(s) into $out"
"$binpath" show "$out" || die "hot-tune show $out failed"
