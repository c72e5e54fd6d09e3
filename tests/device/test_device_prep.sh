#!/usr/bin/env bash
# tools/device-prep.sh's prerequisite check: with a prerequisite missing (here the Python module
# numpy, hidden by a PYTHONPATH whose numpy fails to import, as on a fresh clone after the
# README's command 1) it stops at once with one line naming what is missing and the command that
# provides it, and has fetched, built and written nothing.
# Usage: test_device_prep.sh SOURCE_DIR WORK_DIR
set -u
src=$1 work=$2
rm -rf "$work"
mkdir -p "$work/fakepy"
printf 'raise ImportError("No module named %s")\n' "'numpy'" >"$work/fakepy/numpy.py"
bdir=$work/build
PYTHONPATH="$work/fakepy" timeout 120 bash "$src/tools/device-prep.sh" --no-fetch --build-dir "$bdir" \
  >"$work/out.txt" 2>"$work/err.txt"
rc=$?
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
[ $rc -eq 1 ] && echo "ok: exit status 1" || fail "exit status $rc, expected 1"
[ "$(wc -l <"$work/err.txt")" -eq 1 ] && echo "ok: one line: $(cat "$work/err.txt")" ||
  { fail "stderr is not one line:"; cat "$work/err.txt"; }
grep -q "Python module numpy (tools/install-python-deps.sh --python-only)" "$work/err.txt" &&
  echo "ok: names numpy and its command" || fail "numpy or its command not named"
[ ! -s "$work/out.txt" ] && echo "ok: no progress printed (no work)" || { fail "it started work:"; cat "$work/out.txt"; }
[ ! -e "$bdir" ] && echo "ok: nothing built ($bdir absent)" || fail "$bdir was created"
[ ! -e "$src/.kcache-device.new" ] && echo "ok: no cache folder started" || fail ".kcache-device.new exists"
[ $fails -eq 0 ] && echo "device_prep_prereqs: all OK" || echo "device_prep_prereqs: $fails failure(s)"
exit $((fails > 0))
