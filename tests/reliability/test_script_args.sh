#!/usr/bin/env bash
# test_script_args.sh SOURCE_DIR LIBHOT — every script a user runs (tools/*.sh, tools/*.py,
# bench/*.py, examples/*.py) answers --help with its documentation and exit 0, and an unknown
# argument with a message on stderr and a non-zero exit within seconds, before any work: no
# Python traceback, nothing on stdout but a line naming the hot package an example uses.
# tools/emu-common.sh (sourced) and examples/hot_import.py (a module) are no scripts.
# Also: bench/nvfp4_cpu.py with a --shape whose data cannot be allocated says so in one line.
set -u
src=$1
export HOT_LIBRARY=$2 PYTHONPATH=$src/python
PY=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-script-args.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0 n=0
for s in "$src"/tools/*.sh "$src"/tools/*.py "$src"/bench/*.py "$src"/examples/*.py; do
  name=${s#"$src"/}
  case $name in tools/emu-common.sh | examples/hot_import.py) continue ;; esac
  case $s in *.py) run=("$PY" "$s") ;; *) run=(bash "$s") ;; esac
  n=$((n + 1))
  (cd "$work" && timeout 60 "${run[@]}" --help >"$work/out" 2>"$work/err")
  rc=$?
  if [ $rc -ne 0 ] || [ "$(grep -cv '^hot: ' "$work/out")" -lt 3 ]; then
    echo "FAIL: $name --help: exit $rc, $(wc -l <"$work/out") lines: $(head -c 300 "$work/err")"
    fail=1
  fi
  (cd "$work" && timeout 60 "${run[@]}" --no-such-option >"$work/out" 2>"$work/err")
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ ! -s "$work/err" ] || grep -q Traceback "$work/err" ||
      grep -qv '^hot: ' "$work/out"; then
    echo "FAIL: $name --no-such-option: exit $rc, stdout: $(head -c 200 "$work/out")," \
      "stderr: $(head -c 300 "$work/err")"
    fail=1
  fi
done
# a shape whose data cannot be allocated: one line and exit 1, not numpy's traceback
(cd "$work" && timeout 60 "$PY" "$src/bench/nvfp4_cpu.py" --shape 100000,100000,1000,1000 \
  >"$work/out" 2>"$work/err")
rc=$?
if [ $rc -ne 1 ] || grep -q Traceback "$work/err" || ! grep -q "^nvfp4_cpu.py: --shape .*: out of memory" "$work/err"; then
  echo "FAIL: nvfp4_cpu.py with a shape out of memory: exit $rc, stderr: $(head -c 300 "$work/err")"
  fail=1
fi
[ $fail = 0 ] && echo "script arguments: $n scripts, all answer --help and refuse an unknown argument; a shape out of memory said in one line"
exit $fail
