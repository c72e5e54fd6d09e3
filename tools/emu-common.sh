# tools/emu-common.sh — shell helpers shared by tools/kernel-emu.sh and tools/gemm-emu.sh
# (sourced, not run).

# caught LOG: the schedules under which a mutant failed (for the report line), else the
# emulator's first error line, else a note that it exited non-zero
caught() {
  local s
  s=$(grep -oE 'schedule [0-9]+ \([a-z-]+\): FAIL' "$1" | sed -E 's/schedule ([0-9]+) .*/\1/' | tr '\n' ' ')
  [ -n "$s" ] && echo "failed under schedule(s) ${s% }" && return
  grep -m1 -E "EMU ERROR" "$1" || echo "exit status non-zero"
}
