#!/usr/bin/env bash
# test_device_check.sh SOURCE_DIR WORK_DIR — tools/device-check.sh's own machinery, with its
# --selftest stand-ins (each step sleeps 1 s, estimated 3 s; nothing is built):
#  1. --help and a bad argument (exit 2, the argument named);
#  2. --deadline 0: every step is skipped, each with its own row saying why, and a total row;
#  3. --rehearse --deadline 20: rows for the steps that fit (2 s start + 3 s each: six), the rest
#     (seven) skipped, and the last line exactly "device-check estimate: 20 s on the device, 0 kernels to
#     compile there";
#  4. a run killed (SIGKILL to its process group) after its third step row: summary.txt is
#     readable (header, complete lines only, no total row: it was cut), the archive lists the
#     summary, and nothing but summary.txt, the log and the archive is in $OUT.
set -u
src=$1 work=$2
dc=$src/tools/device-check.sh
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"

# 1.
"$dc" --help >"$work/help.txt" 2>&1 || fail "--help exited $?"
grep -q -- '--deadline S' "$work/help.txt" || fail "--help does not describe --deadline"
"$dc" --bogus >"$work/bad.txt" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "a bad argument exited $rc, not 2"
grep -q "unknown argument '--bogus'" "$work/bad.txt" || fail "a bad argument is not named: $(cat "$work/bad.txt")"
"$dc" --deadline abc >"$work/bad2.txt" 2>&1
[ $? -eq 2 ] || fail "--deadline abc accepted"

# 2.
mkdir -p "$work/out0"
OUT=$work/out0 "$dc" --selftest --deadline 0 --build-dir "$work/b0" >"$work/run0.txt" 2>&1 || fail "--deadline 0 exited $?"
s=$work/out0/summary.txt
[ -s "$s" ] || fail "no summary.txt"
head -1 "$s" | grep -q '^== hot device check (.*deadline 0 s) ==$' || fail "header: $(head -1 "$s")"
n=$(grep -c ' SKIPPED .*would end past the deadline (3 s estimated, 0 s left)' "$s")
[ "$n" -eq 13 ] || fail "--deadline 0: $n of 13 steps skipped with their reason"
grep -q '^total ' "$s" || fail "--deadline 0: no total row"
cmp -s <(grep -v '^device-check:' "$work/run0.txt") "$s" || fail "stdout and summary.txt differ"
grep -q '^gemm paths  *SKIPPED ' "$s" || fail "--deadline 0: no row for the gemm paths step"
echo "deadline 0: 13 steps skipped, each with its reason"

# 3.
mkdir -p "$work/out1"
OUT=$work/out1 "$dc" --selftest --rehearse --deadline 20 --build-dir "$work/b1" >"$work/run1.txt" 2>&1 ||
  fail "--rehearse exited $?"
last=$(tail -1 "$work/run1.txt")
[ "$last" = "device-check estimate: 20 s on the device, 0 kernels to compile there" ] || fail "last line: $last"
ok=$(grep -cE '^[a-z].* ok +[0-9.]+ +3 +0  stand-in' "$work/out1/summary.txt")
sk=$(grep -c ' SKIPPED ' "$work/out1/summary.txt")
[ "$ok" -eq 6 ] && [ "$sk" -eq 7 ] || fail "rehearsal with deadline 20: $ok steps ran, $sk skipped (want 6 and 7)"
echo "rehearse: $last"

# 4.
mkdir -p "$work/out2"
OUT=$work/out2 setsid "$dc" --selftest --build-dir "$work/b2" >"$work/run2.txt" 2>&1 &
pid=$!
s=$work/out2/summary.txt
oks() { local n; n=$(grep -c ' ok ' "$s" 2>/dev/null); echo "${n:-0}"; }
for _ in $(seq 1 200); do
  [ "$(oks)" -ge 3 ] && break
  sleep 0.1
done
[ "$(oks)" -ge 3 ] || { kill -KILL -- -"$pid" 2>/dev/null; fail "no third row within 20 s"; }
kill -KILL -- -"$pid" || fail "cannot kill the run's process group"
{ wait "$pid"; } 2>/dev/null
[ -s "$s" ] || fail "killed run: no summary.txt"
[ "$(tail -c 1 "$s" | od -An -c | tr -d ' ')" = '\n' ] || fail "killed run: summary.txt ends in a cut line"
head -1 "$s" | grep -q '^== hot device check' || fail "killed run: header missing"
bad=$(sed -n '3,$p' "$s" | grep -vcE '^[a-z][a-z0-9_ ]* +(ok|SKIPPED) +')
[ "$bad" -eq 0 ] || fail "killed run: $bad malformed rows:"$'\n'"$(cat "$s")"
grep -q '^total ' "$s" && fail "the run was not cut: it has its total row"
rows=$(sed -n '3,$p' "$s" | wc -l)
tar -tzf "$work/out2/device-check.tar.gz" | grep -q '^keep/summary.txt$' || fail "killed run: the archive has no summary"
extra=$(ls -A "$work/out2" | grep -vxE 'summary.txt|device-check.log|device-check.tar.gz(.part)?')
[ -z "$extra" ] || fail "killed run: unexpected files in OUT: $extra"
echo "killed after $rows rows: summary.txt readable, archive readable"
echo "PASS"
