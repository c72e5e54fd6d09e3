# tools/emu-common.sh — shell helpers shared by tools/kernel-emu.sh, tools/gemm-emu.sh and
# tools/tma-emu.sh (sourced, not run; they set $PY and $here).

# inline_h SRC DST NAME: SRC with templates/NAME pasted in place of its #include, so that a
# mutant's anchor may lie in either (hot_gemm.cuh: the GEMMs' epilogue helpers; hot_sm90.inl.cuh:
# what both sm_90a GEMMs share, the wgmma wrappers, one K slab, the epilogue, a segment's end)
inline_h() {
  "$PY" - "$1" "$2" "$here/templates/$3" "$3" <<'PY'
import sys
s = open(sys.argv[1]).read()
inc = '#include "%s"' % sys.argv[4]
if s.count(inc) != 1:
    sys.exit("emu: %r not found once in %s" % (inc, sys.argv[1]))
open(sys.argv[2], "w").write(s.replace(inc, open(sys.argv[3]).read(), 1))
PY
}

# caught LOG: the schedules under which a mutant failed (for the report line), else the
# emulator's first error line, else a note that it exited non-zero
caught() {
  local s
  s=$(grep -oE 'schedule [0-9]+ \([a-z-]+\): FAIL' "$1" | sed -E 's/schedule ([0-9]+) .*/\1/' | tr '\n' ' ')
  [ -n "$s" ] && echo "failed under schedule(s) ${s% }" && return
  grep -m1 -E "EMU ERROR" "$1" || echo "exit status non-zero"
}
