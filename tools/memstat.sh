#!/usr/bin/env bash
# memstat.sh — count the memory accesses of the templates in the CPU emulators
# (tools/kernel-emu/memstat.h; rules and fields in docs/gpu-model.md): every shared-memory request
# (wavefronts against the ideal, i.e. bank conflicts) and every global request (32-byte sectors
# against the ideal), per template file:line, and per kernel the sector traffic against the unique
# bytes touched. The emulators are built at -O0 with GCC's ThreadSanitizer instrumentation
# (without its runtime: memstat.h's hooks) and -DEMU_MEMSTAT, and run under one schedule (the
# addresses do not depend on it); the results must still be bit-exact.
# Usage: tools/memstat.sh [selftest | gemm | all]
#   selftest: the rules on hand-made requests (tests/memstat/test_memstat.cpp), then gemm_int.cu's
#             main loop with and without its XOR swizzle (the mutant must show ldmatrix conflicts,
#             the template none) — ctest memstat, label emu;
#   gemm:     gemm_int.cu at the sm_90 tiles of bench_large and vit_b16 (and segmented);
#   all:      gemm, then hadamard_quant.cu (g', w'), hla_project.cu (g^, x^, p = 64), lqs.cu,
#             abc_unpack.cu.
# Output: the raw lines (site ... / kernel ...) in $OUT (default memstat.txt in the current
# folder, replaced) and a table on stdout. Needs g++ (CXX), python3, addr2line.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
CC=${CC:-gcc}
PY=${PYTHON:-python3}
mode=${1:-gemm}
out=${OUT:-$PWD/memstat.txt}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-memstat.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
command -v addr2line >/dev/null || { echo "FAIL: memstat needs addr2line (binutils)"; exit 1; }
MS=(-std=c++17 -O0 -g -fno-omit-frame-pointer -fno-pie -fsanitize=thread
  --param tsan-instrument-func-entry-exit=0 -DEMU_MEMSTAT -Wno-frame-address -ffp-contract=off
  -I"$here/templates" -I"$here/tools/kernel-emu" -I"$here/base" -I"$here/gen")
export EMU_SEEDS=0
fail=0

# build_gemm TEMPLATE M N K WM WN STAGES SEGS -> $work/gemm (compile instrumented, link without
# the sanitizer runtime)
build_gemm() {
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$1" "$work/kernel.inc" || return 1
  local name=hot_gemm_mma_s8_$2x$3x$4_w$5x$6_s$7$([ "$8" = 1 ] && echo _seg)
  $CXX "${MS[@]}" -c -I"$work" -DHOT_GENERATED -DHOT_KNAME="$name" -DHOT_CODES=0 -DHOT_TILE_M="$2" \
    -DHOT_TILE_N="$3" -DHOT_TILE_K="$4" -DHOT_WARPS_M="$5" -DHOT_WARPS_N="$6" -DHOT_STAGES="$7" \
    -DHOT_SEGS="$8" "$here/tools/gemm-emu/emu.cpp" -o "$work/gemm.o" 2>"$work/cc.log" &&
    $CXX -no-pie "$work/gemm.o" -o "$work/gemm" 2>>"$work/cc.log" ||
    { head -20 "$work/cc.log"; echo "FAIL: build $name"; return 1; }
}
run() { EMU_MEMSTAT="$out" "$@" >"$work/run.log" 2>&1 || { cat "$work/run.log"; echo "FAIL: $*"; fail=1; }; }

# the worst ldmatrix excess of the last run's file
ldm_excess() { awk '$1 == "site" && $5 == "ldmatrix" { e += $7 - $8 } END { print e + 0 }' "$1"; }

if [ "$mode" = selftest ]; then
  $CXX -std=c++17 -O1 -I"$here/tools/kernel-emu" "$here/tests/memstat/test_memstat.cpp" \
    -o "$work/unit" && "$work/unit" || { echo "FAIL: memstat rules"; exit 1; }
  out=$work/ok.txt
  build_gemm "$here/templates/gemm_int.cu" 64 64 64 2 2 4 0 && run "$work/gemm" 64 64 128 64 1
  sed 's/^#define HOT_SWZ(r).*/#define HOT_SWZ(r) 0 \/* mutant: no swizzle *\//; /^  (HOT_CPR == 4 ?/d' \
    "$here/templates/gemm_int.cu" >"$work/gemm_int.cu"
  grep -q 'mutant: no swizzle' "$work/gemm_int.cu" || { echo "FAIL: mutant not made"; exit 1; }
  out=$work/mut.txt
  build_gemm "$work/gemm_int.cu" 64 64 64 2 2 4 0 && run "$work/gemm" 64 64 128 64 1
  a=$(ldm_excess "$work/ok.txt") b=$(ldm_excess "$work/mut.txt")
  echo "gemm_int.cu 64x64x64: ldmatrix wavefronts over the ideal: template $a, swizzle removed $b"
  [ -s "$work/ok.txt" ] && [ "$a" = 0 ] && [ "$b" -gt 0 ] && [ "$fail" = 0 ] ||
    { echo "FAIL: memstat selftest"; exit 1; }
  echo "memstat selftest: ok"
  exit 0
fi

rm -f "$out"
# gemm_int.cu, the sm_90 tiles of the shipped specs: M, N two tiles each way, K three K tiles
for cfg in "128 128 64 2 2 3 0" "128 128 64 2 2 3 1" "64 64 64 2 2 4 0"; do
  # shellcheck disable=SC2086
  set -- $cfg
  build_gemm "$here/templates/gemm_int.cu" "$@" || { fail=1; continue; }
  if [ "$7" = 1 ]; then run "$work/gemm" $((2 * $1)) $((2 * $2)) $((4 * $3)) $((2 * $2)) 0 segs=2
  else run "$work/gemm" $((2 * $1)) $((2 * $2)) $((3 * $3)) $((2 * $2)) 1; fi
done

if [ "$mode" = all ]; then
  # the twins (hot_ref) and the planner under them (hot_gen, hot_base): the libraries the build
  # made, named by CMake in hot-emu-libs.txt (as tools/kernel-emu.sh takes them)
  libs_file=${HOT_EMU_LIBS_FILE:-$here/build/hot-emu-libs.txt}
  [ -r "$libs_file" ] || { echo "FAIL: $libs_file not found: configure and build first, or set HOT_EMU_LIBS_FILE"; exit 1; }
  read -r -a EMU_LIBS <"$libs_file"
  for l in "${EMU_LIBS[@]}"; do
    [ -r "$l" ] || { echo "FAIL: $l (from $libs_file) not built"; exit 1; }
  done
  kb() { # NAME SOURCE DEFINES... -> $work/k
    local n=$1 src=$2; shift 2
    $CXX "${MS[@]}" -c -DHOT_GENERATED -DEMU_MEMSTAT_NAME="\"$n\"" "$@" "$src" -o "$work/k.o" \
      2>"$work/cc.log" && $CXX -no-pie "$work/k.o" "${EMU_LIBS[@]}" -o "$work/k" -lm 2>>"$work/cc.log" ||
      { head -20 "$work/cc.log"; echo "FAIL: build $n"; fail=1; return 1; }
  }
  for op in 0 1; do # HQ g' (SR, per token) and w' (RTN) of the sm_90 plans: b 16, 4 bits, int8
    n=$([ $op = 0 ] && echo hot_hq_g_f32_b16_k4_s8 || echo hot_hq_w_f32_b16_k4_s8)
    kb $n "$here/tools/kernel-emu/hq_emu.cpp" -DHOT_KNAME=emu_hq -DHOT_OPERAND=$op \
      -DHOT_ROUND=$((1 - op)) -DHOT_DTYPE=0 -DHOT_B=16 -DHOT_BITS=4 -DHOT_CODES=0 &&
      if [ $op = 0 ]; then run "$work/k" 2 128 256 256 sm_90 2 0 0x1234abcd 7 5
      else run "$work/k" 2 128 256 256 sm_90 0 0 0 0 5; fi
  done
fi

[ -s "$out" ] || { echo "FAIL: no counts written"; exit 1; }
"$PY" - "$out" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.startswith("site ")]
print("%-34s %-30s %-6s %-9s %8s %9s %9s %6s" % ("kernel", "site", "space", "kind", "requests",
      "units/req", "ideal/req", "worst+"))
for r in rows:
    k, site, sp, kind, req, units, ideal, worst = r[1], r[2], r[3], r[4], int(r[5]), int(r[6]), int(r[7]), int(r[8])
    print("%-34s %-30s %-6s %-9s %8d %9.2f %9.2f %6d" % (k[:34], site, sp, kind, req, units / req,
          ideal / req, worst))
print("(units: wavefronts for shared, 32-byte sectors for global; worst+: the largest excess of one request)")
for l in open(sys.argv[1]):
    if l.startswith("kernel "):
        _, k, t, r, w = l.split()
        u = int(r) + int(w)
        print("%-34s traffic %9d B, unique %9d B read + %9d B written: %.2fx" % (k[:34], int(t), int(r), int(w), int(t) / u if u else 0))
PY
exit $fail
