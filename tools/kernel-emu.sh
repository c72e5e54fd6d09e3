#!/usr/bin/env bash
# kernel-emu.sh — run templates/hadamard_quant.cu, hla_project.cu, lqs.cu and sawb.cu in the CPU
# SIMT model (tools/kernel-emu/kemu.h: one OS thread per CUDA thread, barriers, warp shuffles,
# shared memory, atomics) against their CPU twins (templates/*_ref.c, compiled here from source),
# bit for bit, on awkward sizes (T = 197*3, O = 100, I = 137), both layouts, f32/bf16/f16,
# p = 1, 2, 8, 16, 64, 128, 512, 1024; plus mutants (a barrier removed, a wrong stage order) that
# the check must catch. Needs a C11 and a C++17 compiler (CC, CXX). One compile at a time.
# Usage: tools/kernel-emu.sh [quick]
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
quick=${1:-}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-kemu.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fail=0
CFL="-O2 -ffp-contract=off -I$here/gen -I$here/templates"

# the twins, from source (no dependency on a build tree)
for f in quant_ref hla_project_ref lqs_ref hadamard_quant_ref; do
  $CC -std=c11 $CFL -c "$here/templates/$f.c" -o "$work/$f.o" || { echo "FAIL: build $f.c"; exit 1; }
done
# the twins take buffer sizes from the planner (plan_buffer_bytes)
for f in plan basis diag; do
  $CC -std=c11 $CFL -c "$here/gen/$f.c" -o "$work/gen_$f.o" || { echo "FAIL: build gen/$f.c"; exit 1; }
done
ar rcs "$work/libref.a" "$work"/*.o
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
$CC -std=c11 $CFL "$work/rows.c" "$here/gen/basis.c" -o "$work/rows" -lm || { echo "FAIL: rows"; exit 1; }

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
  $CXX -std=c++17 -O2 -pthread -I"$tdir" $CFL -I"$work" "$here/tools/kernel-emu/hla_emu.cpp" \
    "$work/libref.a" -o "$work/hla" -lm 2>"$work/cc.log" || { head -30 "$work/cc.log"; return 1; }
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
      fi
    done
  done
  if [ $mode = 1 ]; then # g^ rounded to nearest (the plan's hla.g.round = rtn): HOT_ROUND 0
    if ROUND=0 build_hla 1 0 64 $SEL_TRI 0; then
      run "$work/hla" 3 197 $cols 0 0 0 64 0x1234abcd 7 5
      run "$work/hla" 3 197 $cols 1 0 3 32 0x1234abcd 7 5
    else
      echo "FAIL build hla rtn"; fail=1
    fi
  fi
  # p = 1 (paper_code on prime L: the identity), sample and flat
  for dt in 0 2; do
    build_hla $mode $dt 1 0 0 || { echo "FAIL build hla p=1"; fail=1; continue; }
    run "$work/hla" 3 197 $cols 0 0 0 64 77 3 1
    run "$work/hla" 3 197 $cols 1 1 2 32 77 3 1
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
    if ! $CXX -std=c++17 -O2 -pthread $CFL -DHOT_GENERATED -DHOT_KNAME=emu_lqs -DHOT_ROUND=$rnd -DHOT_DTYPE=$d \
        -DHOT_BITS=$bits "$here/tools/kernel-emu/lqs_emu.cpp" "$work/libref.a" -o "$work/lqs" -lm \
        2>"$work/cc.log"; then
      head -30 "$work/cc.log"; echo "FAIL build lqs dt=$d round=$rnd bits=$bits"; fail=1; continue
    fi
    run "$work/lqs" 3 197 100 0 0 0x5eed 11 4 0
    run "$work/lqs" 3 197 100 1 3 0x5eed 11 4 0
    run "$work/lqs" 1 1 1 0 0 1 0 0 0
    run "$work/lqs" 2 700 33 1 0 99 2 1 3
  done
done

# SAWB alone: awkward n, the clip <= 0 fallback, grid-stride
for bits in 4 8; do
  $CXX -std=c++17 -O2 -pthread $CFL -DHOT_GENERATED -DHOT_KNAME=emu_sawb -DHOT_BITS=$bits \
    "$here/tools/kernel-emu/sawb_emu.cpp" "$work/libref.a" -o "$work/sawb" -lm || { fail=1; continue; }
  for a in "1 0 0" "1023 0 0" "1024 0 0" "1025 0 0" "70001 0 0" "70001 0 2" "5000 1 0"; do
    # shellcheck disable=SC2086
    run "$work/sawb" $a
  done
done

# HQ operand kernels (hadamard_quant.cu) with plans from the real planner: g' per row, per
# sample (segmented amax, B = 3) and per tensor, w' absmax and SAWB (math tensor + scale_in), packed int4 (sm_80) and int8 (sm_90)
# codes, b = 1 ... 256, O = 100 (padded), O = 1200 (longer than the register-cached chunks).
for f in plan basis diag; do
  $CC -std=c11 $CFL -c "$here/gen/$f.c" -o "$work/gen_$f.o" || { echo "FAIL: build gen/$f.c"; exit 1; }
done
ar rcs "$work/libgen.a" "$work"/gen_*.o
build_hq() { # OPERAND DTYPE B BITS CODES [ROUND (default: SR for g', RTN for w')]
  $CXX -std=c++17 -O2 -pthread $CFL -DHOT_GENERATED -DHOT_KNAME=emu_hq -DHOT_OPERAND=$1 \
    -DHOT_ROUND=${6:-$((1 - $1))} -DHOT_DTYPE=$2 -DHOT_B=$3 -DHOT_BITS=$4 -DHOT_CODES=$5 "$here/tools/kernel-emu/hq_emu.cpp" \
    "$work/libref.a" "$work/libgen.a" -o "$work/hq" -lm 2>"$work/cc.log" ||
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

# Mutants: the check must catch them.
mutant() { # LABEL PYTHON-REPLACEMENT (old, new) -> expects a failure of a p=64 g^ run
  local label=$1 old=$2 new=$3
  mkdir -p "$work/mut"
  cp "$here/templates/hot_math.cuh" "$work/mut/"
  python3 - "$here/templates/hla_project.cu" "$work/mut/hla_project.cu" "$old" "$new" <<'PY' || return 1
import sys
s = open(sys.argv[1]).read()
old, new = sys.argv[3].encode().decode('unicode_escape'), sys.argv[4].encode().decode('unicode_escape')
if old not in s:
    sys.exit("kernel-emu: mutation anchor not found: " + old)
open(sys.argv[2], "w").write(s.replace(old, new, 1))
PY
  cp "$here/templates/sawb.cu" "$work/mut/"
  if ! build_hla 1 0 64 0 0 "$work/mut"; then echo "FAIL: mutant '$label' does not build"; fail=1; return; fi
  if "$work/hla" 3 197 100 0 0 0 64 5 5 5 >"$work/mut.log" 2>&1; then
    echo "FAIL: mutant not detected: $label"; fail=1
  else
    echo "mutant '$label': detected, as it must be"
  fi
}
mutant "no barrier before the pass over token bits 3-5" \
  "    __syncthreads();\n    hla_pass<3" "    hla_pass<3"
mutant "stage order h = 2 before h = 1 in registers" \
  "for (int h = 1; h < E; h <<= 1)" "for (int h = E / 2; h >= 1; h >>= 1)"
mutant "zero tail not written" "if (col < cols) codes[(long long)col * ld_codes + k_real + kk] = 0;" ";"

# An HQ mutant: the upper half of a shuffle butterfly computing b - a instead of a - b.
mkdir -p "$work/mut_hq"
python3 - "$here/templates/hadamard_quant.cu" "$work/mut_hq/hadamard_quant.cu" <<'PY' || fail=1
import sys
s = open(sys.argv[1]).read()
old = "v[j] = upper ? HOT_SUB(other, v[j]) : HOT_ADD(v[j], other);"
if old not in s:
    sys.exit("kernel-emu: HQ mutation anchor not found")
open(sys.argv[2], "w").write(s.replace(old, "v[j] = upper ? HOT_SUB(v[j], other) : HOT_ADD(v[j], other);", 1))
PY
if $CXX -std=c++17 -O2 -pthread -I"$work/mut_hq" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_hq \
     -DHOT_OPERAND=0 -DHOT_ROUND=1 -DHOT_DTYPE=0 -DHOT_B=32 -DHOT_BITS=4 -DHOT_CODES=0 \
     "$here/tools/kernel-emu/hq_emu.cpp" "$work/libref.a" "$work/libgen.a" -o "$work/hq_mut" -lm; then
  if "$work/hq_mut" 1 40 100 64 sm_90 1 0 5 5 5 >"$work/mut.log" 2>&1; then
    echo "FAIL: mutant not detected: HQ shuffle butterfly sign"; fail=1
  else
    echo "mutant 'HQ shuffle butterfly sign': detected, as it must be"
  fi
else
  echo "FAIL: HQ mutant does not build"; fail=1
fi
# A per-sample mutant: phase 1 reading the first sample's amax word for every row (a segmented
# amax that is not used) must differ from the twin on B = 3 samples.
mkdir -p "$work/mut_hq_s"
python3 - "$here/templates/hadamard_quant.cu" "$work/mut_hq_s/hadamard_quant.cu" <<'PY' || fail=1
import sys
s = open(sys.argv[1]).read()
old = "amax = __uint_as_float(amax_bits[row / group_rows]);"
if old not in s:
    sys.exit("kernel-emu: HQ per-sample mutation anchor not found")
open(sys.argv[2], "w").write(s.replace(old, "amax = __uint_as_float(amax_bits[0]);", 1))
PY
if $CXX -std=c++17 -O2 -pthread -I"$work/mut_hq_s" $CFL -DHOT_GENERATED -DHOT_KNAME=emu_hq \
     -DHOT_OPERAND=0 -DHOT_ROUND=1 -DHOT_DTYPE=0 -DHOT_B=16 -DHOT_BITS=4 -DHOT_CODES=0 \
     "$here/tools/kernel-emu/hq_emu.cpp" "$work/libref.a" "$work/libgen.a" -o "$work/hq_mut_s" -lm; then
  if "$work/hq_mut_s" 3 197 100 137 sm_90 2 0 0x1234abcd 7 5 >"$work/mut.log" 2>&1; then
    echo "FAIL: mutant not detected: HQ per-sample scale from sample 0"; fail=1
  else
    echo "mutant 'HQ per-sample scale from sample 0': detected, as it must be"
  fi
else
  echo "FAIL: HQ per-sample mutant does not build"; fail=1
fi

if [ $fail = 0 ]; then echo "kernel-emu: all OK"; else echo "kernel-emu: FAILED"; fi
exit $fail
