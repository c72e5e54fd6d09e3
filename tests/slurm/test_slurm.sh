#!/usr/bin/env bash
# test_slurm.sh (label slurm): a sharded hot-tune sweep through a real Slurm job array on a
# one-node cluster started here (tools/slurm/cluster.sh) gives exactly the rows of the same sweep
# run in one process, and the harness reports failures.
#   - tools/slurm/hot-tune-sweep.sh refuses clearly: no sbatch on PATH, a missing spec, 0 tasks;
#     hot-tune.sbatch refuses to run outside an array and a task beyond HOT_TUNE_SHARDS, and
#     configured by environment variables alone makes the same shard as the array's task;
#   - the cluster starts, stops and starts again, uses no default Slurm port, and starting a
#     running cluster is harmless;
#   - a 4-task array of an accuracy sweep of HOT_TUNE_SPEC, merged, prints (hot-tune show --rows)
#     the same non-empty rows as the sweep with no shard; every shard DB is non-empty, the shards
#     are disjoint and together are the merged DB;
#   - a sweep whose task 2 fails exits 1 naming task 2 and its log (which holds the task's
#     error), merges nothing, and --resume reruns task 2 alone and completes the same rows; a
#     fresh sweep into that folder and a --resume with another task count are refused;
#   - SIGTERM to a waiting sweep cancels its job;
#   - stop leaves no process of the cluster behind (also on any failure: trap EXIT).
# Environment: HOT_TUNE_EXE (the hot-tune binary, or tests/slurm/hot-tune-standin.sh to test the
# harness alone), HOT_TUNE_SPEC (the spec swept), HOT_SOURCE_DIR (the source tree),
# HOT_SLURM_TEST_BUDGET (seconds for all steps, default 540; a step past it fails the test).
# Exit status: 0 pass, 1 fail, 77 skipped ("SKIP: ..." when not root or Slurm/munge are absent).
set -uo pipefail
me=test_slurm
fail() { echo "$me: FAIL: $*" >&2; exit 1; }
now() { date +%s.%N; }
# Every step runs under `timeout` within one deadline, well inside CTest's TIMEOUT (600 s), so
# that the EXIT trap always gets to stop the daemons.
deadline=$(($(date +%s) + ${HOT_SLURM_TEST_BUDGET:-540}))
left() {
  local l=$((deadline - $(date +%s)))
  if [ "$l" -le 0 ]; then echo "$me: out of time (HOT_SLURM_TEST_BUDGET); the next step gets 1 s" >&2; l=1; fi
  echo "$l"
}
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

[ -n "${HOT_SOURCE_DIR:-}" ] && [ -d "$HOT_SOURCE_DIR/tools/slurm" ] ||
  fail "HOT_SOURCE_DIR='${HOT_SOURCE_DIR:-}' is not the source tree"
[ -n "${HOT_TUNE_EXE:-}" ] && [ -x "$HOT_TUNE_EXE" ] || fail "HOT_TUNE_EXE='${HOT_TUNE_EXE:-}' is not an executable"
[ -n "${HOT_TUNE_SPEC:-}" ] && [ -r "$HOT_TUNE_SPEC" ] || fail "HOT_TUNE_SPEC='${HOT_TUNE_SPEC:-}' is not a readable spec"
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: not root"; exit 77; fi
for c in munged munge slurmctld slurmd sbatch squeue scancel sinfo; do
  if ! command -v "$c" >/dev/null 2>&1; then
    echo "SKIP: slurm-wlm or munge not installed (no $c on PATH; tools/install-deps.sh --tests installs them)"
    exit 77
  fi
done
if [ "$(basename -- "$HOT_TUNE_EXE")" = hot-tune-standin.sh ] && ! command -v sqlite3 >/dev/null 2>&1; then
  echo "SKIP: sqlite3 not installed (the stand-in for hot-tune needs it; tools/install-deps.sh --tests installs it)"
  exit 77
fi

tools=$HOT_SOURCE_DIR/tools/slurm
sweep=$tools/hot-tune-sweep.sh
cluster=$tools/cluster.sh
t=$(mktemp -d /tmp/hot-slurm.XXXXXX) || fail "mktemp"
chmod 0755 "$t" # munged runs as the user munge and must enter it
cdir=$t/cluster
cleanup() {
  "$cluster" stop "$cdir" >/dev/null 2>&1
  [ -n "${HOT_SLURM_KEEP:-}" ] && echo "kept $t" || rm -rf -- "$t"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1. Clear refusals, before any cluster exists.
mkdir -p "$t/nobin"
ln -s "$(command -v dirname)" "$(command -v basename)" "$t/nobin/"
out=$(PATH=$t/nobin /bin/bash "$sweep" --hot-tune "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" "$t/x.db" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "sbatch not found on PATH" <<<"$out" ||
  fail "without sbatch on PATH: expected exit 1 and 'sbatch not found on PATH', got $rc: $out"
out=$("$sweep" --hot-tune "$HOT_TUNE_EXE" "$t/missing.lua" "$t/x.db" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "spec $t/missing.lua: no such file" <<<"$out" ||
  fail "missing spec: expected exit 1 naming it, got $rc: $out"
out=$("$sweep" --tasks 0 "$HOT_TUNE_SPEC" "$t/x.db" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -qF -- "--tasks='0': expected an integer in [1, 10000]" <<<"$out" || fail "--tasks 0: expected exit 2, got $rc: $out"

out=$(env -u SLURM_ARRAY_TASK_ID bash "$tools/hot-tune.sbatch" "$HOT_TUNE_SPEC" "$t/hand" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "SLURM_ARRAY_TASK_ID is not set" <<<"$out" ||
  fail "hot-tune.sbatch outside an array: expected exit 2, got $rc: $out"
out=$(SLURM_ARRAY_TASK_ID=4 HOT_TUNE_SHARDS=4 bash "$tools/hot-tune.sbatch" "$HOT_TUNE_SPEC" "$t/hand" 2>&1)
rc=$?
[ $rc -eq 2 ] && grep -q "array task 4 is outside the 4 shards" <<<"$out" ||
  fail "hot-tune.sbatch task 4 of 4: expected exit 2, got $rc: $out"

# 2. The cluster: start, start again (running: a no-op), stop, start (state of the first run).
t0=$(now)
"$cluster" start "$cdir" || fail "cluster start"
t1=$(now)
out=$("$cluster" start "$cdir" 2>&1)
grep -q "already running" <<<"$out" ||
  fail "a second start of a running cluster: $out; status: $("$cluster" status "$cdir" 2>&1 | head -n 5 | tr '\n' ' ')"
"$cluster" stop "$cdir" || fail "cluster stop"
"$cluster" status "$cdir" >/dev/null && fail "status says running after stop"
"$cluster" start "$cdir" || fail "cluster start after a stop"
export SLURM_CONF=$cdir/slurm.conf
for p in SlurmctldPort SlurmdPort; do
  v=$(sed -n "s/^$p=//p" "$SLURM_CONF")
  case $v in ''|6817|6818|6819) fail "$p='$v' in $SLURM_CONF: not a picked free port" ;; esac
done
[ "$(sinfo -h -N -o %T)" = idle ] || fail "the node is not idle: $(sinfo)"

rows() { timeout "$(left)" "$HOT_TUNE_EXE" show "$1" --rows >"$2" || fail "hot-tune show $1 --rows failed"; }

# 3. A 4-task array against the same sweep in one process.
t2=$(now)
timeout "$(left)" "$sweep" --tasks 4 --poll 1 --hot-tune "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" "$t/sharded.db" \
  -- --kind accuracy >"$t/sweep.out" 2>&1
rc=$?
t3=$(now)
cat "$t/sweep.out"
[ $rc -eq 0 ] || fail "the 4-task sweep exited $rc"
timeout "$(left)" "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" --kind accuracy --db "$t/whole.db" || fail "the unsharded sweep failed"
rows "$t/sharded.db" "$t/sharded.rows"
rows "$t/whole.db" "$t/whole.rows"
[ -s "$t/whole.rows" ] || fail "the unsharded sweep wrote no row"
diff "$t/whole.rows" "$t/sharded.rows" >"$t/diff" || fail "sharded and unsharded rows differ: $(head -n 20 "$t/diff")"
: >"$t/all-shards.rows"
for i in 0 1 2 3; do
  rows "$t/sharded.db.shards/shard-$i.db" "$t/shard-$i.rows"
  [ -s "$t/shard-$i.rows" ] || fail "shard $i is empty"
  cat "$t/shard-$i.rows" >>"$t/all-shards.rows"
done
dup=$(sort "$t/all-shards.rows" | uniq -d | head -n 5)
[ -z "$dup" ] || fail "a row is in two shards: $dup"
sort "$t/all-shards.rows" | diff - <(sort "$t/sharded.rows") >/dev/null ||
  fail "the shards together are not the merged rows"
echo "$me: $(wc -l <"$t/whole.rows") rows, identical sharded (4 tasks) and unsharded; shards disjoint"
# The batch script configured by environment alone (no arguments) makes the same shard.
(cd "$t" && SLURM_ARRAY_TASK_ID=1 HOT_TUNE_SHARDS=4 HOT_TUNE_SPEC=$HOT_TUNE_SPEC HOT_TUNE_DB_DIR=hand \
  HOT_TUNE_ARGS="--kind accuracy" timeout "$(left)" bash "$tools/hot-tune.sbatch" >"$t/hand.out" 2>&1) ||
  fail "hot-tune.sbatch from the environment failed: $(cat "$t/hand.out")"
[ "$(cat "$t/hand/shard-1.rc")" = 0 ] || fail "hot-tune.sbatch wrote no status 0 into $t/hand/shard-1.rc"
rows "$t/hand/shard-1.db" "$t/hand.rows"
diff "$t/shard-1.rows" "$t/hand.rows" >/dev/null || fail "shard 1 from the environment differs from the array's"

# 4. Task 2 fails: named with its log, nothing merged; --resume reruns it alone.
cat >"$t/failing-hot-tune" <<EOF
#!/bin/sh
if [ "\${SLURM_ARRAY_TASK_ID:-}" = 2 ]; then echo "injected failure of task 2" >&2; exit 3; fi
exec "$HOT_TUNE_EXE" "\$@"
EOF
chmod +x "$t/failing-hot-tune"
timeout "$(left)" "$sweep" --tasks 4 --poll 1 --hot-tune "$t/failing-hot-tune" "$HOT_TUNE_SPEC" \
  "$t/failed.db" -- --kind accuracy >"$t/failed.out" 2>&1
rc=$?
cat "$t/failed.out"
[ $rc -eq 1 ] || fail "a sweep with a failed task exited $rc, not 1"
line=$(grep "task 2 failed with exit status 3; log: " "$t/failed.out") ||
  fail "the failed task 2 is not named with its exit status and log"
log=${line##*log: }
[ -r "$log" ] && grep -q "injected failure of task 2" "$log" || fail "log '$log' of task 2 lacks its error"
grep -Eq "task [013] (failed|did not)" "$t/failed.out" && fail "a task that succeeded is reported failed"
[ -e "$t/failed.db" ] && fail "a failed sweep merged into $t/failed.db"
out=$("$sweep" --tasks 4 --hot-tune "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" "$t/failed.db" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "already holds shard DBs of an earlier sweep" <<<"$out" ||
  fail "a fresh sweep into a folder with shards: expected exit 1 and a refusal, got $rc: $out"
out=$("$sweep" --resume --tasks 3 --hot-tune "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" "$t/failed.db" 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "has 4 tasks, not 3" <<<"$out" ||
  fail "--resume with another task count: expected exit 1 and a refusal, got $rc: $out"
timeout "$(left)" "$sweep" --resume --poll 1 --hot-tune "$HOT_TUNE_EXE" "$HOT_TUNE_SPEC" "$t/failed.db" \
  -- --kind accuracy >"$t/resume.out" 2>&1
rc=$?
cat "$t/resume.out"
[ $rc -eq 0 ] || fail "--resume exited $rc"
grep -q "running task(s) 2 of" "$t/resume.out" || fail "--resume did not rerun task 2 alone"
rows "$t/failed.db" "$t/resumed.rows"
diff "$t/whole.rows" "$t/resumed.rows" >/dev/null || fail "rows after --resume differ from the unsharded sweep"

# 5. SIGTERM (as Ctrl-C) to a waiting sweep cancels its job: exit 130, the queue empties.
printf '#!/bin/sh\nexec sleep 120\n' >"$t/slow-hot-tune"
chmod +x "$t/slow-hot-tune"
"$sweep" --tasks 2 --poll 1 --hot-tune "$t/slow-hot-tune" "$HOT_TUNE_SPEC" "$t/cancelled.db" \
  >"$t/cancel.out" 2>&1 &
spid=$!
for ((i = 0; i < 100; i++)); do
  [ -n "$(squeue -h -t running -o %i)" ] && break
  sleep 0.2
done
[ -n "$(squeue -h -t running -o %i)" ] || { kill "$spid"; fail "the slow sweep's tasks never ran: $(cat "$t/cancel.out")"; }
kill -TERM "$spid"
wait "$spid"
rc=$?
cat "$t/cancel.out"
[ $rc -eq 130 ] && grep -q "interrupted: cancelling job" "$t/cancel.out" ||
  fail "a terminated sweep exited $rc without cancelling its job"
for ((i = 0; i < 100; i++)); do
  q=$(squeue -h -o '%i %T')
  [ -z "$q" ] && break
  sleep 0.2
done
[ -z "$q" ] || fail "the terminated sweep's job is still queued 20 s later: $q"

# 6. Stop: no process of the cluster survives.
t4=$(now)
"$cluster" stop "$cdir" || fail "cluster stop"
t5=$(now)
for p in /proc/[0-9]*; do
  if tr '\0' ' ' 2>/dev/null <"$p/cmdline" | grep -qF -- "$cdir/"; then
    fail "process ${p#/proc/} of the cluster survived stop: $(tr '\0' ' ' <"$p/cmdline")"
  fi
done
echo "$me: timings: cluster start $(secs "$t0" "$t1") s, 4-task sweep (submit, run, merge, show) $(secs "$t2" "$t3") s, stop $(secs "$t4" "$t5") s"
echo "$me: PASS"
