#!/usr/bin/env bash
# memstat.sh — count the memory accesses of the templates in the CPU emulators
# (tools/kernel-emu/memstat.h; rules and fields in docs/gpu-model.md): every shared-memory request
# (wavefronts against the ideal, i.e. bank conflicts) and every global request (32-byte sectors
# against the ideal), per template file:line, and per kernel the sector traffic against the unique
# bytes touched. The emulators are built at -O0 with GCC's ThreadSanitizer instrumentation
# (without its runtime: memstat.h's hooks) and -DEMU_MEMSTAT, and run under one schedule (the
# addresses do not depend on it); the results must still be bit-exact.
# Usage: tools/memstat.sh [selftest | gemm | all | table | check | limits]
#   selftest: the rules on hand-made requests (tests/memstat/test_memstat.cpp), then gemm_int.cu's
#             main loop with and without its XOR swizzle (the mutant must show ldmatrix conflicts,
#             the template none) — ctest memstat, label emu;
#   gemm:     gemm_int.cu at the sm_90 tiles of bench_large and vit_b16 (and segmented),
#             gemm_wgmma.cu at their sm_90a tiles (its wgmma core-matrix reads counted) and
#             gemm_tma.cu at 128 x 256 (TMA box rows and wgmma core matrices);
#   all:      gemm, then every other kernel of the sm_90 plans of specs/bench_large.lua and
#             specs/vit_b16.lua: hadamard_quant.cu (g' per sample and per row, w'),
#             hla_project.cu (x^, g^; both specs' layouts), abc_unpack.cu, lqs.cu, bias.cu, and
#             sawb.cu (planned by neither spec);
#   table:    the same runs, summarised per kernel#phase into bench/memstat_counts.txt (TABLE
#             overrides), the table hot-bench --model embeds;
#   check:    table into a temporary file, which must equal bench/memstat_counts.txt (ctest
#             memstat_table, label emu);
#   limits:   every row of bench/memstat_counts.txt (TABLE overrides) against the access targets:
#             the worst site's shared wavefronts and global sectors per request at their ideal,
#             sector traffic <= 1.2x the unique bytes but for the listed exceptions (none now) and
#             the GEMMs (panel re-reads by design: their DRAM bytes are tools/model-limits.py's);
#             the rules are first checked on hand-made rows (ctest memstat_limits, label bench:
#             reads the table only).
# Output: the raw lines (site ... / kernel ... / norm ...) in $OUT (default memstat.txt in the
# current folder, replaced) and the tables on stdout (per site, then per kernel#phase: the worst
# site's shared wavefronts and global sectors per request against their ideal, and the sector
# traffic against the unique bytes). Buffers sit on 256-byte boundaries (memstat.h), as
# cudaMalloc and the runtime's workspace place them. Needs g++ (CXX), python3, addr2line.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
CC=${CC:-gcc}
PY=${PYTHON:-python3}
mode=${1:-gemm}
case $mode in
  selftest | gemm | all | table | check | limits) ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "memstat: unknown mode '$mode' (selftest, gemm, all, table, check or limits; see --help)" >&2; exit 2 ;;
esac
out=${OUT:-$PWD/memstat.txt}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-memstat.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
[ "$mode" = limits ] || command -v addr2line >/dev/null || { echo "FAIL: memstat needs addr2line (binutils)"; exit 1; }
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
# build_wg M N STAGES SEGS -> $work/wg: gemm_wgmma.cu (sm_90a; tile_k 128, one warp column of
# tile_m / 16 warps) in the same emulator (EMU_WGMMA), its window 256 bytes off a 1024 boundary
# as tools/gemm-emu.sh runs it
build_wg() {
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$here/templates/gemm_wgmma.cu" "$work/kernel.inc" || return 1
  local name=hot_gemm_wgmma_s8_$1x$2x128_w$(($1 / 16))x1_s$3$([ "$4" = 1 ] && echo _seg)
  $CXX "${MS[@]}" -c -I"$work" -DHOT_GENERATED -DHOT_KNAME="$name" -DHOT_CODES=0 -DHOT_TILE_M="$1" \
    -DHOT_TILE_N="$2" -DHOT_TILE_K=128 -DHOT_WARPS_M=$(($1 / 16)) -DHOT_WARPS_N=1 -DHOT_STAGES="$3" \
    -DHOT_SEGS="$4" -DEMU_WGMMA -DEMU_SMEM_SKEW=256 "$here/tools/gemm-emu/emu.cpp" -o "$work/wg.o" \
    2>"$work/cc.log" && $CXX -no-pie "$work/wg.o" -o "$work/wg" 2>>"$work/cc.log" ||
    { head -20 "$work/cc.log"; echo "FAIL build $name"; return 1; }
}
# build_tma M N STAGES SEGS -> $work/tma: gemm_tma.cu (sm_90a, TMA + wgmma, persistent) in
# tools/tma-emu/tma_emu.cpp, its TMA box rows and wgmma core matrices counted
build_tma() {
  "$PY" "$here/tools/tma-emu/mktma.py" "$here/templates/gemm_tma.cu" "$work/kernel.inc" || return 1
  local name=hot_gemm_tma_s8_$1x$2x128_w$(($1 / 16))x1_s$3$([ "$4" = 1 ] && echo _seg)
  $CXX "${MS[@]}" -Wno-psabi -c -I"$work" -DHOT_GENERATED -DHOT_KNAME="$name" -DHOT_CODES=0 \
    -DHOT_TILE_M="$1" -DHOT_TILE_N="$2" -DHOT_TILE_K=128 -DHOT_WARPS_M=$(($1 / 16)) -DHOT_WARPS_N=1 \
    -DHOT_STAGES="$3" -DHOT_SEGS="$4" -DEMU_SMEM_SKEW=256 "$here/tools/tma-emu/tma_emu.cpp" \
    -o "$work/tma.o" 2>"$work/cc.log" && $CXX -no-pie "$work/tma.o" -o "$work/tma" 2>>"$work/cc.log" ||
    { head -20 "$work/cc.log"; echo "FAIL build $name"; return 1; }
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

if [ "$mode" = limits ]; then # the checked-in table against the access targets (no emulator run)
  "$PY" - "${TABLE:-$here/bench/memstat_counts.txt}" <<'PY'
import sys
# kernel#phase prefixes allowed above 1.2x sector traffic per unique byte, each with its reason;
# a listed row that meets the target fails too, so the list cannot outlive its reasons (empty
# now: the self-check below keeps the rule tested)
EXCEPT = {}
# The GEMMs' rows (norm "ops") count the L2 -> SM traffic of every block's A and B panels, which
# tiling makes larger than the unique bytes by design (the model's L2 term); their bytes moved
# from DRAM against the compulsory bytes are the L2 model's, held to 1.2x at bench_large's shapes
# by tools/model-limits.py (ctest model_limits). Their per-request targets hold here as for
# every row.

def check(rows, except_, out):
    bad = 0
    for f in rows:
        k, sh_wf, sh_id, gl_se, gl_id = f[0], float(f[4]), float(f[5]), float(f[9]), float(f[10])
        tr, un, gemm = int(f[11]), int(f[12]), f[13] == "ops"
        if sh_wf > sh_id + 1e-6:
            out("FAIL %s: %.3f shared wavefronts per request at its worst site, ideal %.3f (bank "
                "conflicts)" % (k, sh_wf, sh_id))
            bad += 1
        if gl_se > gl_id + 1e-6:
            out("FAIL %s: %.3f global sectors per request at its worst site, ideal %.3f (not "
                "coalesced)" % (k, gl_se, gl_id))
            bad += 1
        ratio = tr / un if un else 0.0
        why = next((v for e, v in except_.items() if k.startswith(e)), None)
        if gemm and why is None:
            out("gemm %s: L2 -> SM traffic %.2fx the unique bytes (panel re-reads of the tiling; "
                "DRAM bytes: tools/model-limits.py)" % (k, ratio))
        elif ratio > 1.2 and why is None:
            out("FAIL %s: sector traffic %.2fx the unique bytes (target <= 1.2)" % (k, ratio))
            bad += 1
        elif ratio <= 1.2 and why is not None:
            out("FAIL %s: meets the traffic target (%.2fx): drop its exception (%s)" % (k, ratio, why))
            bad += 1
        elif why is not None:
            out("exception %s: traffic %.2fx the unique bytes: %s" % (k, ratio, why))
    return bad

# self-check of the rules on hand-made rows (kernel sh_req sh_wf sh_id wsh wsh_id gl_req gl_se
# gl_id wgl wgl_id traffic unique norm_kind norm) with known verdicts
def mk(k, traffic, unique, kind="blocks", wsh=(1, 1), wgl=(4, 4)):
    return [k, "1", "1", "1", str(wsh[0]), str(wsh[1]), "1", "1", "1", str(wgl[0]), str(wgl[1]),
            str(traffic), str(unique), kind, "1"]
cases = [("within", [mk("a#0", 110, 100)], {}, 0),
         ("traffic over, unlisted", [mk("a#0", 130, 100)], {}, 1),
         ("traffic over, listed", [mk("a#0", 130, 100)], {"a#": "r"}, 0),
         ("listed row meets the target", [mk("a#0", 110, 100)], {"a#": "r"}, 1),
         ("2-way bank conflict", [mk("a#0", 100, 100, wsh=(2, 1))], {}, 1),
         ("uncoalesced", [mk("a#0", 100, 100, wgl=(8, 4))], {}, 1),
         ("GEMM panel traffic", [mk("g#0", 160, 100, "ops")], {}, 0),
         ("GEMM bank conflict", [mk("g#0", 100, 100, "ops", wsh=(8, 4))], {}, 1)]
bad = 0
for label, rows, ex, want in cases:
    got = check(rows, ex, lambda m: None)
    if got != want:
        print("FAIL selftest %s: %d failure(s), want %d" % (label, got, want))
        bad += 1
rows = [l.split() for l in open(sys.argv[1]) if not l.startswith("#") and l.strip()]
if not rows:
    print("FAIL: %s has no rows" % sys.argv[1])
    bad += 1
bad += check(rows, EXCEPT, print)
print("memstat limits: %d kernel phases, %d rule self-checks, %d failure(s)" % (len(rows), len(cases), bad))
sys.exit(1 if bad else 0)
PY
  exit $?
fi

if [ "$mode" = check ]; then # bench/memstat_counts.txt is what `table` writes now
  TABLE="$work/new.txt" OUT="$work/raw.txt" bash "$0" table >"$work/table.log" 2>&1 ||
    { tail -20 "$work/table.log"; echo "FAIL: memstat table"; exit 1; }
  if ! diff -u "$here/bench/memstat_counts.txt" "$work/new.txt"; then
    echo "FAIL: bench/memstat_counts.txt is not current: run tools/memstat.sh table (and commit it)"
    exit 1
  fi
  echo "memstat check: bench/memstat_counts.txt is current ($(grep -vc '^#' "$work/new.txt") kernel phases)"
  exit 0
fi

rm -f "$out"
# gemm_int.cu, the sm_90 tiles of the shipped specs: M, N two tiles each way, K three K tiles
for cfg in "128 128 64 2 2 3 0" "128 128 64 2 2 3 1" "64 64 64 2 2 4 0"; do
  # shellcheck disable=SC2086
  set -- $cfg
  build_gemm "$here/templates/gemm_int.cu" "$@" || { fail=1; continue; }
  name=hot_gemm_mma_s8_$1x$2x$3_w$4x$5_s$6$([ "$7" = 1 ] && echo _seg)
  if [ "$7" = 1 ]; then k=$((4 * $3)); run "$work/gemm" $((2 * $1)) $((2 * $2)) $k $((2 * $2)) 0 segs=2
  else k=$((3 * $3)); run "$work/gemm" $((2 * $1)) $((2 * $2)) $k $((2 * $2)) 1; fi
  # the GEMMs' shared traffic scales with their operations (2 M N K), not with their bytes
  echo "norm $name#0 ops $((2 * 2 * $1 * 2 * $2 * k))" >>"$out"
done
# gemm_wgmma.cu at the sm_90a tiles of the shipped specs (128 x 256 and its segmented form:
# bench_large; 128 x 128: vit_b16's g_w), two tiles each way, K three K tiles (segmented: two
# segments of two)
for cfg in "128 256 4 0" "128 256 4 1" "128 128 4 0"; do
  # shellcheck disable=SC2086
  set -- $cfg
  build_wg "$@" || { fail=1; continue; }
  name=hot_gemm_wgmma_s8_$1x$2x128_w$(($1 / 16))x1_s$3$([ "$4" = 1 ] && echo _seg)
  if [ "$4" = 1 ]; then k=512; run "$work/wg" $((2 * $1)) $((2 * $2)) $k $((2 * $2)) 0 segs=2
  else k=384; run "$work/wg" $((2 * $1)) $((2 * $2)) $k $((2 * $2)) 1; fi
  echo "norm $name#0 ops $((2 * 2 * $1 * 2 * $2 * k))" >>"$out"
done
# gemm_tma.cu (planned for a tma_s8 request on sm_90a; no shipped spec asks for it) at its 128 x
# 256 tile, 4 stages: 2 x 2 tiles on 2 persistent CTAs, K three K tiles
if build_tma 128 256 4 0; then
  run "$work/tma" 256 512 384 512 1 sms=2
  echo "norm hot_gemm_tma_s8_128x256x128_w8x1_s4#0 ops $((2 * 256 * 512 * 384))" >>"$out"
else
  fail=1
fi

if [ "$mode" = all ] || [ "$mode" = table ]; then
  # the twins (hot_ref) and the planner under them (hot_gen, hot_base): the libraries the build
  # made, named by CMake in hot-emu-libs.txt (as tools/kernel-emu.sh takes them)
  libs_file=${HOT_EMU_LIBS_FILE:-$here/build/hot-emu-libs.txt}
  [ -r "$libs_file" ] || { echo "FAIL: $libs_file not found: configure and build first, or set HOT_EMU_LIBS_FILE"; exit 1; }
  read -r -a EMU_LIBS <"$libs_file"
  for l in "${EMU_LIBS[@]}"; do
    [ -r "$l" ] || { echo "FAIL: $l (from $libs_file) not built"; exit 1; }
  done
  # the role list plan.h includes is generated by the build from gen/kernels/ (cmake/families.cmake)
  CFL="-O2 -ffp-contract=off -I$here/base -I$here/gen -I$here/templates -I${libs_file%/*}/generated"
  MS+=(-I"${libs_file%/*}/generated")
  kb() { # NAME SOURCE DEFINES... -> $work/k
    local n=$1 src=$2; shift 2
    $CXX "${MS[@]}" -c -I"$work" -DHOT_GENERATED -DEMU_MEMSTAT_NAME="\"$n\"" "$@" "$src" -o "$work/k.o" \
      2>"$work/cc.log" && $CXX -no-pie "$work/k.o" "${EMU_LIBS[@]}" -o "$work/k" -lm 2>>"$work/cc.log" ||
      { head -20 "$work/cc.log"; echo "FAIL: build $n"; fail=1; return 1; }
  }
  # The kernels of the sm_90 plans of specs/bench_large.lua and specs/vit_b16.lua (all f32; their
  # names are those of the plans), at sizes the emulator runs in seconds with the plans' tiles,
  # block sizes and layouts. HQ: b 16, 4 bits, int8 codes; g' SR per sample (phases 0, 1) and per
  # row (phase 2), w' RTN absmax.
  kb hot_hq_g_f32_b16_k4_s8 "$here/tools/kernel-emu/hq_emu.cpp" -DHOT_KNAME=emu_hq -DHOT_OPERAND=0 \
    -DHOT_ROUND=1 -DHOT_DTYPE=0 -DHOT_B=16 -DHOT_BITS=4 -DHOT_CODES=0 &&
    run "$work/k" 2 128 256 256 sm_90 2 0 0x1234abcd 7 5 && run "$work/k" 2 128 256 256 sm_90 1 0 0x1234abcd 7 5
  kb hot_hq_w_f32_b16_k4_s8 "$here/tools/kernel-emu/hq_emu.cpp" -DHOT_KNAME=emu_hq -DHOT_OPERAND=1 \
    -DHOT_ROUND=0 -DHOT_DTYPE=0 -DHOT_B=16 -DHOT_BITS=4 -DHOT_CODES=0 &&
    run "$work/k" 2 128 256 256 sm_90 0 0 0 0 5
  # HLA p 64, tri, keep 50 (r 36), 8 bits: x^ RTN (mode 0), g^ SR (mode 1); bench_large's layout
  # (per sample, L = 1024: whole 64-token blocks; scales per sample) as NAME@sample, vit_b16's
  # (flat, L = 197, per tensor) as NAME@flat
  $CC -std=c11 $CFL -x c - -x none "${EMU_LIBS[@]}" -o "$work/rows" -lm <<'C' || exit 1
#include <stdio.h>
#include <stdlib.h>
#include "basis.h"
int main(int argc, char **argv) {
  uint16_t rows[HOT_MAX_P];
  int r = basis_select((hot_selection)atoi(argv[1]), atoi(argv[2]), 50, atoi(argv[3]), rows);
  for (int i = 0; i < r; ++i) printf("%s%d", i ? "," : "", rows[i]);
  printf("\n");
  return r < 1;
}
C
  rows=$("$work/rows" 0 64 0) || exit 1
  nr=$(echo "$rows" | tr ',' '\n' | wc -l)
  for hm in 0 1; do
    op=$([ $hm = 0 ] && echo x || echo g)
    n=hot_hla_${op}_f32_p64_r${nr}_tri_k8
    cat >"$work/params.h" <<H
#define HOT_GENERATED
#define HOT_STR2(x) #x
#define HOT_STR(x) HOT_STR2(x)
#define HOT_KNAME_HLA emu_hla
#define HOT_KNAME HOT_KNAME_HLA
#define HOT_MODE $hm
#define HOT_ROUND $hm
#define HOT_DTYPE 0
#define HOT_P 64
#define HOT_R $nr
#define HOT_BITS_VALUE 8
#define HOT_BITS HOT_BITS_VALUE
#define HLA_BITS_FOR_SAWB HOT_BITS_VALUE
#define HOT_ROWS $rows
H
    #                         B L    cols layout rule ld+ kpad seed step layer self other
    kb "$n@sample" "$here/tools/kernel-emu/hla_emu.cpp" && run "$work/k" 2 256 256 0 0 0 64 0x1234abcd 7 5 1 1
    kb "$n@flat" "$here/tools/kernel-emu/hla_emu.cpp" && run "$work/k" 3 197 256 1 0 0 64 0x1234abcd 7 5 0 0
  done
  # abc_unpack (vit_b16: K = 3564 codes a row, k_pad 3584, one group), 64 of its rows
  kb hot_abc_unpack "$here/tools/kernel-emu/unpack_emu.cpp" -DHOT_KNAME=hot_abc_unpack &&
    run "$work/k" 64 1 3564 3584 0
  # LQS (g' scale "auto": the calibrate call), 4 bits, SR
  kb hot_lqs_f32_k4 "$here/tools/kernel-emu/lqs_emu.cpp" -DHOT_KNAME=emu_lqs -DHOT_ROUND=1 -DHOT_DTYPE=0 \
    -DHOT_BITS=4 && run "$work/k" 2 128 256 0 0 0x5eed 11 4 0
  # SAWB (no layer of the two specs plans it: w' and x^ use absmax), 8 bits, one group
  kb hot_sawb_k8 "$here/tools/kernel-emu/sawb_emu.cpp" -DHOT_KNAME=emu_sawb -DHOT_BITS=8 &&
    run "$work/k" 65536 0 0
  # bias (f32), T 512, O 256
  kb hot_bias_f32 "$here/tools/kernel-emu/bias_count.cpp" -DHOT_KNAME=hot_bias_f32 -DHOT_DTYPE=0 &&
    run "$work/k" 512 256
fi

[ -s "$out" ] || { echo "FAIL: no counts written"; exit 1; }
[ "$fail" = 0 ] || { echo "FAIL: a build or run failed (above)"; exit 1; }
"$PY" - "$out" "$mode" "${TABLE:-$here/bench/memstat_counts.txt}" <<'PY'
import sys
raw, mode, table = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [l.split() for l in open(raw)]
rows = [l for l in lines if l[0] == "site"]
if mode != "table":
    print("%-40s %-30s %-6s %-9s %8s %9s %9s %6s" % ("kernel#phase", "site", "space", "kind",
          "requests", "units/req", "ideal/req", "worst+"))
    for r in rows:
        k, site, sp, kind, req, units, ideal, worst = r[1], r[2], r[3], r[4], int(r[5]), int(r[6]), int(r[7]), int(r[8])
        print("%-40s %-30s %-6s %-9s %8d %9.2f %9.2f %6d" % (k[:40], site, sp, kind, req, units / req,
              ideal / req, worst))
    print("(units: wavefronts for shared, 32-byte sectors for global; worst+: the largest excess of one request)")
# per kernel#phase: totals, the worst site of each space (largest units / ideal, then units / request)
agg = {}
for r in rows:
    k, sp, req, units, ideal = r[1], r[3], int(r[5]), int(r[6]), int(r[7])
    a = agg.setdefault(k, {"shared": [0, 0, 0, None], "global": [0, 0, 0, None]})[sp]
    a[0] += req; a[1] += units; a[2] += ideal
    key = (units / max(ideal, 1), units / req)
    if a[3] is None or key > a[3][0]:
        a[3] = (key, units / req, ideal / req, r[2])
traffic = {l[1]: (int(l[2]), int(l[3]) + int(l[4])) for l in lines if l[0] == "kernel"}
nblocks = {l[1]: int(l[5]) for l in lines if l[0] == "kernel"}
norm = {l[1]: (l[2], int(l[3])) for l in lines if l[0] == "norm"}
out = ["# generated by tools/memstat.sh table from the CPU emulators' counts (docs/gpu-model.md); "
       "do not edit: the test memstat_table checks that it is current",
       "# kernel#phase sh_requests sh_wavefronts sh_ideal worst_sh_wf_per_req worst_sh_ideal_per_req "
       "gl_requests gl_sectors gl_ideal worst_gl_sectors_per_req worst_gl_ideal_per_req "
       "traffic_bytes unique_bytes norm_kind norm   (norm: what sh_wavefronts scale with: the "
       "blocks run (fixed tiles per block), or a GEMM's 2MNK ops)"]
for k in sorted(agg):
    sh, gl = agg[k]["shared"], agg[k]["global"]
    t, u = traffic.get(k, (0, 0))
    nk, nv = norm.get(k, ("blocks", nblocks.get(k, 0)))
    out.append("%s %d %d %d %.3f %.3f %d %d %d %.3f %.3f %d %d %s %d" % (
        k, sh[0], sh[1], sh[2], sh[3][1] if sh[3] else 0, sh[3][2] if sh[3] else 0,
        gl[0], gl[1], gl[2], gl[3][1] if gl[3] else 0, gl[3][2] if gl[3] else 0, t, u, nk, nv))
text = "\n".join(out) + "\n"
if mode == "table":
    open(table, "w").write(text)
    print("memstat: %d kernel phases written to %s" % (len(agg), table))
else:
    print()
    print("%-40s %14s %-28s %16s %-28s %9s" % ("kernel#phase", "shared wf/req", "(worst site)",
          "sectors/req", "(worst site)", "bytes/uniq"))
    for k in sorted(agg):
        sh, gl = agg[k]["shared"], agg[k]["global"]
        t, u = traffic.get(k, (0, 0))
        print("%-40s %14s %-28s %16s %-28s %9s" % (k[:40],
              "%.2f/%.2f" % (sh[3][1], sh[3][2]) if sh[3] else "-", sh[3][3][:28] if sh[3] else "",
              "%.2f/%.2f" % (gl[3][1], gl[3][2]) if gl[3] else "-", gl[3][3][:28] if gl[3] else "",
              "%.2f" % (t / u) if u else "-"))
    print("(worst site: the largest units/ideal; shown as units per request / ideal per request;"
          " bytes/uniq: sector traffic / unique bytes read and written)")
PY
exit $fail
