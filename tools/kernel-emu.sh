#!/usr/bin/env bash
# kernel-emu.sh — run templates/hla_project.cu, templates/lqs.cu and templates/sawb.cu in the CPU
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
  # p = 1 (paper_code on prime L: the identity), sample and flat
  for dt in 0 2; do
    build_hla $mode $dt 1 0 0 || { echo "FAIL build hla p=1"; fail=1; continue; }
    run "$work/hla" 3 197 $cols 0 0 0 64 77 3 1
    run "$work/hla" 3 197 $cols 1 1 2 32 77 3 1
  done
done

# LQS: dtypes x bits, gaussian-like (-> per tensor) and token outliers (-> per row); a grid
# smaller than the chunk count (grid-stride path)
for dt in 0 1 2; do
  for bits in 4 8; do
    [ -n "$quick" ] && [ $bits = 8 ] && continue
    if ! $CXX -std=c++17 -O2 -pthread $CFL -DHOT_GENERATED -DHOT_KNAME=emu_lqs -DHOT_DTYPE=$dt \
        -DHOT_BITS=$bits "$here/tools/kernel-emu/lqs_emu.cpp" "$work/libref.a" -o "$work/lqs" -lm \
        2>"$work/cc.log"; then
      head -30 "$work/cc.log"; echo "FAIL build lqs dt=$dt bits=$bits"; fail=1; continue
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

if [ $fail = 0 ]; then echo "kernel-emu: all OK"; else echo "kernel-emu: FAILED"; fi
exit $fail
