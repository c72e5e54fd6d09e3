#!/usr/bin/env bash
# kernel-emu.sh — run templates/hadamard_quant.cu, hla_project.cu, lqs.cu, sawb.cu and abc_unpack.cu
# in the CPU
# SIMT model (tools/kernel-emu/kemu.h: every CUDA thread a fiber of the deterministic scheduler of
# tools/kernel-emu/emu_sched.h; barriers, warp shuffles, shared memory, atomics) against their CPU
# twins (templates/*_ref.c, the build's hot_ref library), bit for bit, on awkward sizes
# (T = 197*3, O = 100, I = 137), both layouts, f32/bf16/f16, p = 1, 2, 8, 16, 64, 128, 512, 1024;
# the HLA scale groups (g^ and x^ per sample, absmax and SAWB, SR and RTN; one per sample and the
# other per tensor; B = 1; padded segments; group_k_pad > group_k and = group_k; x^ in the save's
# compact layout, k_pad = K), sawb.cu with several groups and abc_unpack.cu (rows 1, 3, 137,
# groups 1 ... 5, group_k 1 ... 255 padded to 16 ... 128, unaligned sources, guard bytes); plus
# mutants (barriers removed, a wrong stage order, a wrong butterfly
# sign, a missing zero tail, a wrong amax word or scale entry, SAWB chunks not started at the
# group) that the check must catch. Every run repeats its check under the schedules of EMU_SEEDS
# (default "0 1 2 3": lowest-first, highest-first, warp priorities, random); the same seeds give
# the same interleavings and results on every run, at any machine load, so a mutant caught once
# is caught every time. Needs a C11 and a C++17 compiler (CC, CXX) and python3 (PYTHON). One compile at a time.
# Usage: tools/kernel-emu.sh [quick]   (quick: the configurations of the test suite; one line
#        per configuration and schedule, flushed, and the time taken)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
quick=${1:-}
. "$here/tools/lib/num.sh" # the one parser of numbers: the emulators get the seeds in decimal
EMU_SEEDS=$(num_list EMU_SEEDS "${EMU_SEEDS:-0 1 2 3}" 0 1000000000000000000 2>&1) || { echo "kernel-emu: $EMU_SEEDS" >&2; exit 2; }
export EMU_SEEDS
start=$SECONDS
echo "kernel-emu: schedules EMU_SEEDS='$EMU_SEEDS'${quick:+ (quick)}"
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-kemu.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fail=0
CFL="-O2 -ffp-contract=off -I$here/base -I$here/gen -I$here/templates"

# the twins (hot_ref) and the planner under them (hot_gen, hot_base): the libraries the build
# made, named by CMake in hot-emu-libs.txt (HOT_EMU_LIBS_FILE; default: build/'s), so this
# script lists no source file of theirs. Static archives: only the objects the emulators call are
# linked (the planner's, not the Lua spec loader's).
libs_file=${HOT_EMU_LIBS_FILE:-$here/build/hot-emu-libs.txt}
if [ ! -r "$libs_file" ]; then
  echo "FAIL: $libs_file not found: configure and build first (cmake -S . -B build && cmake --build build), or set HOT_EMU_LIBS_FILE"
  exit 1
fi
read -r -a EMU_LIBS <"$libs_file"
for l in "${EMU_LIBS[@]}"; do
  [ -r "$l" ] || { echo "FAIL: $l (from $libs_file) not built: cmake --build ${libs_file%/*}"; exit 1; }
done
# basis rows of the planner (gen/basis.c) for a selection
cat >"$work/rows.c" <<'C'
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
$CC -std=c11 $CFL "$work/rows.c" "${EMU_LIBS[@]}" -o "$work/rows" -lm || { echo "FAIL: rows"; exit 1; }

# build_hla MODE DTYPE P SEL RANK [TEMPLATE_DIR] -> $work/hla (returns non-zero on failure)
build_hla() {
  local mode=$1 dt=$2 p=$3 sel=$4 rank=$5 tdir=${6:-$here/templates} rows r
  if [ "$p" = 1 ]; then rows=0; else rows=$("$work/rows" "$sel" "$p" "$rank") || return 1; fi
  r=$(echo "$rows" | tr ',' '\n' | wc -l)
  cat >"$work/params.h" <<H
#define HOT_GENERATED
#define HOT_STR2(x) #x
#define HOT_STR(x) HOT_STR2(x)
#define HOT_KNAME_HLA emu_hla_m${mode}_dt${dt}_p${p}_r${r}
#define HOT_KNAME HOT_KNAME_HLA
#define HOT_MODE $mode
#define HOT_ROUND ${ROUND:-$mode}
#define HOT_DTYPE $dt
#define HOT_P $p
#define HOT_R $r
#define HOT_BITS_VALUE 8
#define HOT_BITS HOT_BITS_VALUE
#define HLA_BITS_FOR_SAWB HOT_BITS_VALUE
#define HOT_ROWS $rows
H
  $CXX -std=c++17 -O2 -I"$tdir" $CFL -I"$work" "$here/tools/kernel-emu/hla_emu.cpp" \
    "${EMU_LIBS[@]}" -o "$work/hla" -lm 2>"$work/cc.log" || { head -30 "$work/cc.log"; return 1; }
}
run() { "$@" || fail=1; }

# HLA / ABC: mode (0 x^ RTN over I = 137, 1 g^ SR over O = 100) x dtype x p
SEL_TRI=0; SEL_PREFIX=1; SEL_FULL=2
HLA_SETS=(
  "16 $SEL_TRI 0" "64 $SEL_TRI 0"
)
[ -n "$quick" ] || HLA_SETS+=("2 $SEL_FULL 0" "8 $SEL_PREFIX 5" "128 $SEL_TRI 0" "512 $SEL_PREFIX 7" "1024 $SEL_TRI 0")
for mode in 0 1; do
  cols=$([ $mode = 0 ] && echo 137 || echo 100)
  for dt in 0 1 2; do
    for s in "${HLA_SETS[@]}"; do
      # shellcheck disable=SC2086
      set -- $s
      if ! build_hla $mode $dt $1 $2 $3; then echo "FAIL build hla mode=$mode dt=$dt p=$1"; fail=1; continue; fi
      #          B L   cols layout rule ld+ kpad seed step layer
      run "$work/hla" 3 197 $cols 0 0 0 64 0x1234abcd 7 5
      run "$work/hla" 3 197 $cols 1 0 3 32 0x1234abcd 7 5
      if [ "$dt" = 0 ] || [ "$1" = 16 ]; then
        run "$work/hla" 3 197 $cols 0 1 0 64 0xfeedbeef12345 9 2   # SAWB through sawb.cu
        run "$work/hla" 2 40 $cols 1 1 1 32 42 1 0                 # SAWB, flat, short
        # scale groups (last two arguments: this tensor per sample, the other per sample):
        # padded segments (L = 197), group_k_pad > group_k (kpad step 64)
        run "$work/hla" 3 197 $cols 0 0 0 64 0x1234abcd 7 5 1 0   # this one per sample
        run "$work/hla" 3 197 $cols 0 0 3 64 0x1234abcd 7 5 0 1   # per tensor, segmented codes
        run "$work/hla" 3 197 $cols 0 1 0 64 0xfeedbeef12345 9 2 1 1  # SAWB per sample
        run "$work/hla" 3 197 $cols 0 1 0 64 0xfeedbeef12345 9 2 0 1  # SAWB per tensor, groups 3
        run "$work/hla" 1 197 $cols 0 0 0 64 0x1234abcd 7 5 1 1   # B = 1: one group
        run "$work/hla" 2 256 $cols 0 0 0 2 0x1234abcd 7 5 1 0    # group_k_pad = group_k
      fi
      if [ $mode = 0 ] && { [ "$dt" = 0 ] || [ "$1" = 16 ]; }; then
        # x^ as the save writes it (kpad step 1): k_pad = ld_codes = K, group_k_pad = group_k
        # (p = 16: K = 390, group_k = 130, not multiples of 16); per tensor and per sample,
        # sample and flat
        run "$work/hla" 3 197 $cols 0 0 0 1 0x1234abcd 7 5 0 0    # per tensor
        run "$work/hla" 3 197 $cols 0 0 0 1 0x1234abcd 7 5 1 0    # per sample: groups 3
        run "$work/hla" 3 197 $cols 0 0 0 1 0x1234abcd 7 5 0 1    # per tensor, groups 3
        run "$work/hla" 2 40 $cols 1 0 0 1 42 1 0 0 0             # flat, per tensor
        run "$work/hla" 2 40 $cols 1 0 0 1 42 1 0 1 0             # flat, per sample (one group)
      fi
    done
  done
  if [ $mode = 1 ]; then # g^ rounded to nearest (the plan's hla.g.round = rtn): HOT_ROUND 0
    if ROUND=0 build_hla 1 0 64 $SEL_TRI 0; then
      run "$work/hla" 3 197 $cols 0 0 0 64 0x1234abcd 7 5
      run "$work/hla" 3 197 $cols 1 0 3 32 0x1234abcd 7 5
      run "$work/hla" 3 197 $cols 0 0 0 64 0x1234abcd 7 5 1 0   # per sample
    else
      echo "FAIL build hla rtn"; fail=1
    fi
  fi
  # determinism: the same schedules twice give identical interleavings (trace) and results
  if [ $mode = 1 ] && build_hla 1 0 64 $SEL_TRI 0; then
    "$work/hla" 3 197 100 0 0 0 64 5 5 5 >"$work/det1" 2>&1
    "$work/hla" 3 197 100 0 0 0 64 5 5 5 >"$work/det2" 2>&1
    if cmp -s "$work/det1" "$work/det2" && grep -q "trace" "$work/det1"; then
      echo "determinism: two runs of the same schedules gave identical interleavings and results"
    else
      echo "FAIL: determinism: two runs of the same schedules differ"; fail=1
    fi
  fi
# p = 1 (paper_code on prime L: the identity), sample and flat
  for dt in 0 2; do
    build_hla $mode $dt 1 0 0 || { echo "FAIL build hla p=1"; fail=1; continue; }
    run "$work/hla" 3 197 $cols 0 0 0 64 77 3 1
    run "$work/hla" 3 197 $cols 1 1 2 32 77 3 1
    run "$work/hla" 3 197 $cols 0 0 0 64 77 3 1 1 0   # per sample: group_k 197 padded to 256
  done
done

# LQS: dtypes x bits, gaussian-like (-> per sample; B = 1: per tensor) and token outliers (-> per
# row), per-sample amax words (B = 2, 3); a grid
# smaller than the chunk count (grid-stride path)
# (dt 3: f32 with g' rounded to nearest, HOT_ROUND 0)
for dt in 0 1 2 3; do
  for bits in 4 8; do
    [ -n "$quick" ] && [ $bits = 8 ] && continue
    rnd=1; d=$dt; [ $dt = 3 ] && { rnd=0; d=0; }
    if ! $CXX -std=c++17 -O2 $CFL -DHOT_GENERATED -DHOT_KNAME=emu_lqs -DHOT_ROUND=$rnd -DHOT_DTYPE=$d \
        -DHOT_BITS=$bits "$here/tools/kernel-emu/lqs_emu.cpp" "${EMU_LIBS[@]}" -o "$work/lqs" -lm \
        2>"$work/cc.log"; then
      head -30 "$work/cc.log"; echo "FAIL build lqs dt=$d round=$rnd bits=$bits"; fail=1; continue
    fi
    run "$work/lqs" 3 197 100 0 0 0x5eed 11 4 0
    run "$work/lqs" 3 197 100 1 3 0x5eed 11 4 0
    run "$work/lqs" 1 1 1 0 0 1 0 0 0
    run "$work/lqs" 2 700 33 1 0 99 2 1 3
  done
done

# SAWB alone: awkward n, the clip <= 0 fallback, grid-stride; groups = 3 (n elements each,
# chunks from each group's start; n = 1, a group shorter than a chunk, several chunks) and
# groups = 300 (phase 1's threads loop over groups t, t + 256)
for bits in 4 8; do
  $CXX -std=c++17 -O2 $CFL -DHOT_GENERATED -DHOT_KNAME=emu_sawb -DHOT_BITS=$bits \
    "$here/tools/kernel-emu/sawb_emu.cpp" "${EMU_LIBS[@]}" -o "$work/sawb" -lm || { fail=1; continue; }
  for a in "1 0 0" "1023 0 0" "1024 0 0" "1025 0 0" "70001 0 0" "70001 0 2" "5000 1 0" \
    "1 0 0 3" "1000 0 0 3" "3000 0 1 3" "5000 1 0 3" "70001 0 0 3" "5 0 0 300"; do
    # shellcheck disable=SC2086
    run "$work/sawb" $a
  done
done

# abc_unpack.cu (the saved codes into the g_w GEMM's layout) with the descriptor's launch: every
# byte of dst against ref_abc_unpack and the round trip through ref_abc_pack; rows x groups, each
# run over group_k 1, 15, 16, 17, 36, 197, 255, group_k_pad = group_k rounded up to 16 ... 128 and
# the source at base + 1 ... + 3
build_unpack() { # [TEMPLATE_DIR] -> $work/unpack (or $work/unpack_mut with a template folder)
  local tdir=${1:-$here/templates} out=$work/unpack
  [ -n "${1:-}" ] && out=$work/unpack_mut
  $CXX -std=c++17 -O2 -I"$tdir" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_abc_unpack \
    "$here/tools/kernel-emu/unpack_emu.cpp" "${EMU_LIBS[@]}" -o "$out" -lm 2>"$work/cc.log" ||
    { head -30 "$work/cc.log"; return 1; }
}
if build_unpack; then
  for rows in 1 3 137; do
    for groups in 1 2 3 4 5; do
      run "$work/unpack" $rows $groups
    done
  done
else
  echo "FAIL build unpack"; fail=1
fi

# HQ operand kernels (hadamard_quant.cu) with plans from the real planner: g' per row, per
# sample (segmented amax, B = 3) and per tensor, w' absmax and SAWB (math tensor + scale_in), packed int4 (sm_80) and int8 (sm_90)
# codes, b = 1 ... 256, O = 100 (padded), O = 1200 (longer than the register-cached chunks).
build_hq() { # OPERAND DTYPE B BITS CODES [ROUND (default: SR for g', RTN for w')]
  $CXX -std=c++17 -O2 $CFL -DHOT_GENERATED -DHOT_KNAME=emu_hq -DHOT_OPERAND=$1 \
    -DHOT_ROUND=${6:-$((1 - $1))} -DHOT_DTYPE=$2 -DHOT_B=$3 -DHOT_BITS=$4 -DHOT_CODES=$5 "$here/tools/kernel-emu/hq_emu.cpp" \
    "${EMU_LIBS[@]}" -o "$work/hq" -lm 2>"$work/cc.log" ||
    { head -30 "$work/cc.log"; echo "FAIL build hq $*"; fail=1; return 1; }
}
HQ_SETS=("0 16 4 1 sm_80" "2 16 4 0 sm_90")
[ -n "$quick" ] || HQ_SETS+=("1 256 4 0 sm_90" "0 2 4 1 sm_86" "1 32 4 1 sm_89" "0 1 4 0 sm_90" "2 64 8 0 sm_90")
for s in "${HQ_SETS[@]}"; do
  # shellcheck disable=SC2086
  set -- $s
  for op in 0 1; do
    build_hq $op $1 $2 $3 $4 || continue
    #        B  L   O    I   arch gran sawb seed      step layer
    if [ $op = 0 ]; then
      run "$work/hq" 3 197 100 137 $5 1 0 0x1234abcd 7 5
      run "$work/hq" 3 197 100 137 $5 0 0 0x1234abcd 7 5
      run "$work/hq" 3 197 100 137 $5 2 0 0x1234abcd 7 5
      run "$work/hq" 1 40 1200 64 $5 1 0 99 1 0
      run "$work/hq" 1 40 1200 64 $5 0 0 99 1 0
    else
      run "$work/hq" 3 197 100 137 $5 0 0 0 0 5
      run "$work/hq" 3 197 100 137 $5 0 1 0 0 5
      run "$work/hq" 1 8 1200 70 $5 0 0 0 0 0
    fi
  done
done
# g' rounded to nearest (the plan's hq.round = rtn), per row, per sample and per tensor
if build_hq 0 0 16 4 0 0; then
  run "$work/hq" 3 197 100 137 sm_90 1 0 0x1234abcd 7 5
  run "$work/hq" 3 197 100 137 sm_90 2 0 0x1234abcd 7 5
  run "$work/hq" 1 40 1200 64 sm_90 0 0 99 1 0
fi

# Mutants: the check must catch them. kmutant LABEL TEMPLATE OLD NEW BUILD RUN...: a copy of
# templates/TEMPLATE with the first OLD replaced by NEW (\n escapes) shadows the original while
# BUILD (a function of this script, called with the template folder) builds, then RUN must fail.
# shellcheck source=tools/emu-common.sh
. "$here/tools/emu-common.sh"
kmutant() {
  local label=$1 tmpl=$2 old=$3 new=$4 build=$5
  shift 5
  rm -rf "$work/mut" && mkdir -p "$work/mut"
  "$PY" - "$here/templates/$tmpl" "$work/mut/$tmpl" "$old" "$new" <<'PY' || { fail=1; return; }
import sys
s = open(sys.argv[1]).read()
old, new = sys.argv[3].encode().decode('unicode_escape'), sys.argv[4].encode().decode('unicode_escape')
if s.count(old) != 1:
    sys.exit("kernel-emu: mutation anchor found %d times (want once) in %s: %r "
             "(update tools/kernel-emu.sh)" % (s.count(old), sys.argv[1], old))
open(sys.argv[2], "w").write(s.replace(old, new, 1))
PY
  if ! $build "$work/mut"; then echo "FAIL: mutant '$label' does not build"; fail=1; return; fi
  if "$@" >"$work/mut.log" 2>&1; then
    echo "FAIL: mutant not detected: $label"; fail=1
  else
    echo "mutant '$label': detected, as it must be ($(caught "$work/mut.log"))"
  fi
}
b_hla_g64() { build_hla 1 0 64 0 0 "$1"; }
b_hq() { # g' (op 0) b = 32 int8 codes; w' (op 1) b = 16
  $CXX -std=c++17 -O2 -I"$1" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_hq -DHOT_OPERAND=$2 -DHOT_ROUND=$((1 - $2)) -DHOT_DTYPE=0 \
    -DHOT_B=$3 -DHOT_BITS=4 -DHOT_CODES=0 "$here/tools/kernel-emu/hq_emu.cpp" "${EMU_LIBS[@]}" \
    -o "$work/hq_mut" -lm 2>"$work/cc.log" || { head -30 "$work/cc.log"; return 1; }
}
b_hq_g() { b_hq "$1" 0 32; }
b_hq_w() { b_hq "$1" 1 16; }
b_lqs() {
  $CXX -std=c++17 -O2 -I"$1" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_lqs -DHOT_ROUND=1 -DHOT_DTYPE=0 -DHOT_BITS=4 \
    "$here/tools/kernel-emu/lqs_emu.cpp" "${EMU_LIBS[@]}" -o "$work/lqs_mut" -lm 2>"$work/cc.log" ||
    { head -30 "$work/cc.log"; return 1; }
}
b_sawb() {
  $CXX -std=c++17 -O2 -I"$1" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_sawb -DHOT_BITS=8 \
    "$here/tools/kernel-emu/sawb_emu.cpp" "${EMU_LIBS[@]}" -o "$work/sawb_mut" -lm 2>"$work/cc.log" ||
    { head -30 "$work/cc.log"; return 1; }
}
HLA_G=("$work/hla" 3 197 100 0 0 0 64 5 5 5)
kmutant "HLA: no barrier before the pass over token bits 3-5" hla_project.cu \
  "    __syncthreads();\n    hla_pass<3" "    hla_pass<3" b_hla_g64 "${HLA_G[@]}"
kmutant "HLA: no barrier after the tile (before the gather)" hla_project.cu \
  "  __syncthreads(); /* the tile and rows_s are complete */" "" b_hla_g64 "${HLA_G[@]}"
kmutant "HLA: no barrier between the code tile and its store" hla_project.cu \
  "#endif\n  __syncthreads();\n" "#endif\n" b_hla_g64 "${HLA_G[@]}"
kmutant "HLA: stage order h = 2 before h = 1 in registers" hla_project.cu \
  "for (int h = 1; h < E; h <<= 1)" "for (int h = E / 2; h >= 1; h >>= 1)" b_hla_g64 "${HLA_G[@]}"
kmutant "HLA: zero tail not written" hla_project.cu \
  "const int run = HOT_R + (kb + HOT_R == g_first + group_k ? gap : 0);" "const int run = HOT_R;" b_hla_g64 "${HLA_G[@]}"
# scale groups: g^ per sample (B = 3, group_k 144 padded to 192), its scale replicated (x^ per
# sample), x^ SAWB per sample
HLA_GS=("$work/hla" 3 197 100 0 0 0 64 5 5 5 1 0)
HLA_GR=("$work/hla" 3 197 100 0 0 0 64 5 5 5 0 1)
kmutant "HLA per sample: every block's amax into word 0" hla_project.cu \
  "atomicMax(amax_bits + word," "atomicMax(amax_bits," b_hla_g64 "${HLA_GS[@]}"
kmutant "HLA per sample: phase 1 scales from amax word 0" hla_project.cu \
  "hot_scale(__uint_as_float(amax_bits[word])" "hot_scale(__uint_as_float(amax_bits[0])" \
  b_hla_g64 "${HLA_GS[@]}"
kmutant "HLA per sample: scale written for the wrong group" hla_project.cu \
  "tid == 0) scale[grp] = s;" "tid == 0) scale[groups - 1 - grp] = s;" b_hla_g64 "${HLA_GS[@]}"
kmutant "HLA per tensor, groups > 1: scale only in the amax word's entry" hla_project.cu \
  "tid == 0) scale[grp] = s;" "tid == 0) scale[word] = s;" b_hla_g64 "${HLA_GR[@]}"
kmutant "HLA per sample: only the last group's tail zeroed" hla_project.cu \
  "(kb + HOT_R == g_first + group_k ? gap : 0)" "(kb + HOT_R == k_real ? gap : 0)" b_hla_g64 "${HLA_GS[@]}"
kmutant "HLA: codes at the math row, not the group's run" hla_project.cu \
  "const int kc0 = kb + grp * gap;" "const int kc0 = kb;" b_hla_g64 "${HLA_GR[@]}"
b_hla_x64() { build_hla 0 0 64 0 0 "$1"; }
kmutant "HLA x^ SAWB per sample: scale_in of group 0 for every group" hla_project.cu \
  "scale_in ? scale_in[word]" "scale_in ? scale_in[0]" b_hla_x64 \
  "$work/hla" 3 197 137 0 1 0 64 5 5 5 1 0
kmutant "HQ: shuffle butterfly sign" hadamard_quant.cu \
  "v[j] = upper ? HOT_SUB(other, v[j]) : HOT_ADD(v[j], other);" \
  "v[j] = upper ? HOT_SUB(v[j], other) : HOT_ADD(v[j], other);" b_hq_g \
  "$work/hq_mut" 1 40 100 64 sm_90 1 0 5 5 5
kmutant "HQ w': no barrier after the transposing tile load" hadamard_quant.cu \
  "  __syncthreads();\n  float amax = 0.0f;" "  float amax = 0.0f;" b_hq_w \
  "$work/hq_mut" 1 8 100 70 sm_90 0 0 0 0 0
kmutant "HQ w': tile read without the swizzle of its stores" hadamard_quant.cu \
  "v[j] = tile[HQ_TILE(lc, lane * 8 + j)];" "v[j] = tile[lc * HQ_CHUNK + lane * 8 + j];" b_hq_w \
  "$work/hq_mut" 1 8 100 70 sm_90 0 0 0 0 0
kmutant "HQ g': coalesced halves shuffled from the wrong half" hadamard_quant.cu \
  "const bool upper = lane >= 16;" "const bool upper = lane >= 8;" b_hq_g \
  "$work/hq_mut" 1 40 100 64 sm_90 1 0 5 5 5
kmutant "LQS: no __syncwarp between the terms and their sum" lqs.cu \
  "        __syncwarp();\n        if (lane == 0) {" "        if (lane == 0) {" b_lqs \
  "$work/lqs_mut" 3 197 100 0 0 0x5eed 11 4 0
kmutant "LQS: no __syncwarp before the next terms are written" lqs.cu \
  "        __syncwarp();\n      }\n      if (lane == 0) {" "      }\n      if (lane == 0) {" b_lqs \
  "$work/lqs_mut" 3 197 100 0 0 0x5eed 11 4 0
kmutant "SAWB: no __syncwarp between the terms and their sum" sawb.cu \
  "        __syncwarp();\n        if (lane == 0) {" "        if (lane == 0) {" b_sawb \
  "$work/sawb_mut" 70001 0 0
kmutant "SAWB: no __syncwarp before the next terms are written" sawb.cu \
  "        __syncwarp();\n      }\n      if (lane == 0) {" "      }\n      if (lane == 0) {" b_sawb \
  "$work/sawb_mut" 70001 0 0
kmutant "SAWB groups: chunks started at the tensor instead of the group" sawb.cu \
  "const long long i0 = g0 + (j - g * nchunks) * SAWB_CHUNK;" \
  "const long long i0 = j * SAWB_CHUNK;" b_sawb "$work/sawb_mut" 3000 0 0 3
kmutant "SAWB groups: every group sums group 0's partials" sawb.cu \
  "const double *pg = partials + 2 * (long long)g * nchunks;" "const double *pg = partials;" \
  b_sawb "$work/sawb_mut" 3000 0 0 3
kmutant "SAWB groups: phase 1 threads stride 512 (groups 256 ... 299 never written)" sawb.cu \
  "g += SAWB_THREADS) {" "g += 2 * SAWB_THREADS) {" b_sawb "$work/sawb_mut" 5 0 0 300
kmutant "SAWB groups: the fallback from amax word 0" sawb.cu \
  "__uint_as_float(amax_bits[g])" "__uint_as_float(amax_bits[0])" b_sawb \
  "$work/sawb_mut" 5000 1 0 3
b_hq_g16() { b_hq "$1" 0 16; }
# per sample: phase 1 reading the first sample's amax word for every row (a segmented amax that
# is not used) must differ from the twin on B = 3 samples
kmutant "HQ: per-sample scale from sample 0" hadamard_quant.cu \
  "amax = __uint_as_float(amax_bits[row / group_rows]);" "amax = __uint_as_float(amax_bits[0]);" \
  b_hq_g16 "$work/hq_mut" 3 197 100 137 sm_90 2 0 0x1234abcd 7 5

# abc_unpack: every mutant runs over rows 3, groups 3 (all group_k, group_k_pad and offsets)
b_unpack() { build_unpack "$1"; }
UNP=("$work/unpack_mut" 3 3)
kmutant "ABC unpack: zero tail not written (bytes past group_k copied)" abc_unpack.cu \
  "const int vb = nv - 4 * j;" "const int vb = 16 - 4 * j;" b_unpack "${UNP[@]}"
kmutant "ABC unpack: the group's source at grp * group_k_pad" abc_unpack.cu \
  "(long long)grp * group_k +" "(long long)grp * group_k_pad +" b_unpack "${UNP[@]}"
kmutant "ABC unpack: source row stride k_real + 16" abc_unpack.cu \
  "row * (long long)k_real +" "row * (long long)(k_real + 16) +" b_unpack "${UNP[@]}"
kmutant "ABC unpack: the last span of every row skipped" abc_unpack.cu \
  "  const int off0 = pos0 -" "  if (pos0 + 16 == k_pad) return;\n  const int off0 = pos0 -" \
  b_unpack "${UNP[@]}"
kmutant "ABC unpack: bound check one span late (writes past dst)" abc_unpack.cu \
  "if (id > id_last) return;" "if (id > id_last + 1) return;" b_unpack "${UNP[@]}"
kmutant "ABC unpack: dst row stride k_real" abc_unpack.cu \
  "*(uint4 *)(dst + row * (long long)k_pad + pos0)" "*(uint4 *)(dst + row * (long long)k_real + pos0)" \
  b_unpack "${UNP[@]}"
kmutant "ABC unpack: unaligned words shifted the wrong way" abc_unpack.cu \
  "(x[j] >> sh) | (x[j + 1] << (32 - sh))" "(x[j] << sh) | (x[j + 1] >> (32 - sh))" \
  b_unpack "${UNP[@]}"
kmutant "ABC unpack: staged without the swizzle the gather applies" abc_unpack.cu \
  "stage_b[UNPACK_SWZ(b >> 2) * 4" "stage_b[(b >> 2) * 4" b_unpack "${UNP[@]}"
kmutant "ABC unpack: no barrier between the staging and the gather" abc_unpack.cu \
  "  __syncthreads();\n  if (id > id_last) return;" "  if (id > id_last) return;" \
  b_unpack "${UNP[@]}"

echo "kernel-emu: $((SECONDS - start)) s"
if [ $fail = 0 ]; then echo "kernel-emu: all OK"; else echo "kernel-emu: FAILED"; fi
exit $fail
