#!/usr/bin/env bash
# nvfp4-emu.sh — run templates/gemm_nvfp4.cu (recipe nvfp4's NVFP4 GEMM for sm_120a) in the CPU
# SIMT emulator tools/gemm-emu/nvfp4_emu.cpp for several tile configurations and awkward sizes,
# against the twin nvfp4_gemm (templates/nvfp4_ref.c, compiled here) bit for bit, under the
# deterministic schedules of EMU_SEEDS (default "0 1 2 3"), then the mutants the emulator must
# catch: a wrong scale-factor lane, a swapped E4M3 byte order in the scale word, the A fragment's
# two K halves swapped, a missing K-tile barrier, and the epilogue's x4 dropped; then HQ's NVFP4
# quantisers (templates/hq_nvfp4.cu: g' SR and RTN, w' RTN) against nvfp4_hq_quant_g / _w, with
# their mutants (SR index, scale rounding, the transform, w's layout).
# Only the template's one PTX wrapper (hot_mma_bs) is replaced (by the emulator's model of the
# instruction); everything else is the template's code, compiled unchanged. What the emulator
# cannot check is in nvfp4_emu.cpp's header.
# Needs python3, a C11 and a C++17 compiler (CC, default gcc; CXX, default g++; PYTHON).
# First the layout test (nvfp4_emu --layout: the fragment and scale maps against CuTe's SM120
# block-scaled MMA traits, with mutants of the maps).
# Usage: tools/nvfp4-emu.sh            (one line per configuration, size, data and schedule)
#        tools/nvfp4-emu.sh layout     (the layout test alone)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CC=${CC:-gcc}
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
. "$here/tools/lib/num.sh"
EMU_SEEDS=$(num_list EMU_SEEDS "${EMU_SEEDS:-0 1 2 3}" 0 1000000000000000000 2>&1) || { echo "nvfp4-emu: $EMU_SEEDS" >&2; exit 2; }
export EMU_SEEDS
. "$here/tools/emu-common.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-nvfp4-emu.XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "nvfp4-emu: schedules EMU_SEEDS='$EMU_SEEDS'"
fail=0

# SRC -> $work/kernel_nvfp4.inc: hot_mma_bs's body becomes the emulator's instruction; no other
# inline asm may remain.
mkinc() {
  "$PY" - "$1" "$work/kernel_nvfp4.inc" <<'PY' || return 1
import re, sys
src = open(sys.argv[1]).read()
m = re.search(r"\bhot_mma_bs\s*\(", src)
if not m:
    sys.exit("nvfp4-emu: hot_mma_bs not found")
start = src.index("{", m.end())
depth = 0
for i in range(start, len(src)):
    depth += {"{": 1, "}": -1}.get(src[i], 0)
    if depth == 0:
        break
src = (src[:start] + "{ emu_mma_bs(d, a, b, sfa, sfb); }" + "\n" * src.count("\n", start, i) +
       src[i + 1:])
if "asm" in re.sub(r"/\*.*?\*/", "", src, flags=re.S):
    sys.exit("nvfp4-emu: inline asm left outside hot_mma_bs")
open(sys.argv[2], "w").write('#line 1 "templates/gemm_nvfp4.cu"\n' + src)
PY
}
mutate() { # SRC DST ANCHOR REPLACEMENT
  "$PY" - "$@" <<'PY'
import sys
s = open(sys.argv[1]).read()
for a, r in zip(sys.argv[3::2], sys.argv[4::2]):
    if s.count(a) != 1:
        sys.exit("nvfp4-emu: mutation anchor found %d times, not once: %r" % (s.count(a), a))
    s = s.replace(a, r, 1)
open(sys.argv[2], "w").write(s)
PY
}
"$CC" -std=c11 -O2 -c -I"$here/templates" "$here/templates/nvfp4_ref.c" -o "$work/nvfp4_ref.o" ||
  { echo "FAIL build: nvfp4_ref.c"; exit 1; }
build() { # "TM TN TK WM WN"
  # shellcheck disable=SC2086
  set -- $1
  $CXX -std=c++17 -O2 -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" -DHOT_GENERATED \
    -DHOT_KNAME=emu_nvfp4 -DHOT_TILE_M=$1 -DHOT_TILE_N=$2 -DHOT_TILE_K=$3 -DHOT_WARPS_M=$4 \
    -DHOT_WARPS_N=$5 "$here/tools/gemm-emu/nvfp4_emu.cpp" "$work/nvfp4_ref.o" -o "$work/emu" \
    2>"$work/cc.log" || { echo "FAIL build: $*"; head -30 "$work/cc.log"; return 1; }
}
mkinc "$here/templates/gemm_nvfp4.cu" || exit 1

# The layout test: the MMA model's fragment and scale maps and the scale rows / columns the kernel
# loads, against CuTe's SM120 block-scaled traits (nvfp4_emu --layout), then mutants of the maps
# it must catch.
layout_run() { # EMU_SRC -> 0 when the layout check passes
  $CXX -std=c++17 -O2 -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" -DHOT_GENERATED \
    -DHOT_KNAME=emu_nvfp4 -DHOT_TILE_M=64 -DHOT_TILE_N=64 -DHOT_TILE_K=128 -DHOT_WARPS_M=2 \
    -DHOT_WARPS_N=2 "$1" "$work/nvfp4_ref.o" -o "$work/lay" 2>"$work/cc.log" ||
    { echo "FAIL build: layout"; head -30 "$work/cc.log"; return 2; }
  "$work/lay" --layout
}
layout_run "$here/tools/gemm-emu/nvfp4_emu.cpp" || fail=1
lay_mutant() { # WHAT ANCHOR REPLACEMENT
  mutate "$here/tools/gemm-emu/nvfp4_emu.cpp" "$work/lay_mut.cpp" "$2" "$3" || return 1
  local rc=0
  layout_run "$work/lay_mut.cpp" >"$work/lay.log" 2>&1 || rc=$?
  if [ $rc = 0 ]; then echo "FAIL: the layout test did not detect the mutant: $1"; return 1; fi
  [ $rc = 2 ] && { cat "$work/lay.log"; return 1; }
  echo "layout mutant detected, as it must be: $1 ($(grep -m1 '^  ' "$work/lay.log" | sed 's/^ *//'))"
}
lay_mutant "kernel's SF_A row from t >> 1" "return (lane >> 2) + 8 * (lane & 1); }" \
  "return (lane >> 2) + 8 * ((lane >> 1) & 1); }" || fail=1
lay_mutant "scale bytes in reverse order" "x % 16, (x / 16) / 16);
      if (sfa_row(l) >= 0)" "x % 16, 3 - (x / 16) / 16);
      if (sfa_row(l) >= 0)" || fail=1
lay_mutant "A's register pairs (rows g, g + 8) swapped" "*m = (lane >> 2) + ((i / 8) & 1) * 8;" \
  "*m = (lane >> 2) + (((i / 8) & 1) ^ 1) * 8;" || fail=1
lay_mutant "B's two registers swapped in K" "*k = 8 * (lane & 3) + (i & 7) + (i >= 8 ? 32 : 0);" \
  "*k = 8 * (lane & 3) + (i & 7) + (i >= 8 ? 0 : 32);" || fail=1
[ "${1:-}" = layout ] && exit $fail
# tm tn tk wm wn: the planner's tiles (gen/plan_tables.c, path mma_nvfp4) and a spread of others
CONFIGS=("64 64 128 2 2" "128 128 128 2 2" "128 128 64 2 4" "64 64 256 1 2" "32 16 64 2 2")
for cfg in "${CONFIGS[@]}"; do
  build "$cfg" || { fail=1; continue; }
  # M N K ldc [div]: ragged M / N, K not a multiple of the tile (nor of 64), K of one block,
  # ldc > N, several blocks in both directions, HLA's div
  for run in "77 45 200 47" "130 70 512 70 64" "1 9 16 10" "19 130 1000 131 1"; do
    # shellcheck disable=SC2086
    "$work/emu" $run || fail=1
  done
done

# The mutants, each on the 64x64x128 tile with 2x2 warps (two K steps a tile, K of several tiles).
nv_mutant() { # WHAT ANCHOR REPLACEMENT
  mutate "$here/templates/gemm_nvfp4.cu" "$work/mut.cu" "$2" "$3" || return 1
  mkinc "$work/mut.cu" || return 1
  build "64 64 128 2 2" || return 1
  if "$work/emu" 77 45 400 47 >"$work/mut.log" 2>&1; then
    echo "FAIL: the emulator did not detect the mutant: $1"; return 1
  fi
  echo "mutant detected, as it must be: $1 ($(caught "$work/mut.log"))"
}
nv_mutant "wrong scale-factor lane (SF_A row from t >> 1, not t & 1)" \
  "sfa[mi] = hot_lds4(sa_scales, (r + 8 * (t & 1)) * HOT_SB + ks * 4);" \
  "sfa[mi] = hot_lds4(sa_scales, (r + 8 * (t >> 1)) * HOT_SB + ks * 4);" || fail=1
nv_mutant "E4M3 scale bytes of the word in swapped order" \
  "        sfb[ni] = hot_lds4(sb_scales, r * HOT_SB + ks * 4);" \
  "        sfb[ni] = __builtin_bswap32(hot_lds4(sb_scales, r * HOT_SB + ks * 4));" || fail=1
nv_mutant "A fragment's K halves swapped" \
  "        af[mi][2] = hot_lds4(sa_codes, r * HOT_KB + kb + 16);" \
  "        af[mi][2] = hot_lds4(sa_codes, r * HOT_KB + kb);
        af[mi][0] = hot_lds4(sa_codes, r * HOT_KB + kb + 16);" || fail=1
nv_mutant "no barrier at the end of a K tile" \
  "    }
    __syncthreads();
  }" "    }
  }" || fail=1
nv_mutant "epilogue without the x4 of the doubled E2M1 values" \
  "HOT_MUL(HOT_MUL(acc[mi][ni][i], 4.0f), c)" "HOT_MUL(acc[mi][ni][i], c)" || fail=1
# templates/hq_nvfp4.cu (HQ's NVFP4 quantisers, g' SR / RTN and w' RTN) against nvfp4_hq_quant_g
# and nvfp4_hq_quant_w: codes, block scales, tensor scale, the non-finite flag.
build_q() { # SRC OPERAND ROUND
  cp "$1" "$work/kernel_hq_nvfp4.inc" || return 1
  $CXX -std=c++17 -O2 -ffp-contract=off -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" \
    -DHOT_GENERATED -DHOT_KNAME=emu_hq_nvfp4 -DHOT_OPERAND="$2" -DHOT_ROUND="$3" \
    "$here/tools/gemm-emu/hq_nvfp4_emu.cpp" "$work/nvfp4_ref.o" -o "$work/hq" 2>"$work/cc.log" ||
    { echo "FAIL build: hq_nvfp4 operand $2 round $3"; head -30 "$work/cc.log"; return 1; }
}
for q in "0 1" "0 0" "1 0"; do
  # shellcheck disable=SC2086
  build_q "$here/templates/hq_nvfp4.cu" $q || { fail=1; continue; }
  # ROWS O DATA: O not a multiple of 16, O of one block, more threads than one CUDA block; all
  # zero (s_t = 0); a NaN (the flag, the twin's -4)
  for run in "37 100 0" "300 16 0" "5 1000 0" "9 40 1" "7 50 2"; do
    # shellcheck disable=SC2086
    "$work/hq" $run || fail=1
  done
done
q_mutant() { # WHAT OPERAND ROUND ANCHOR REPLACEMENT
  mutate "$here/templates/hq_nvfp4.cu" "$work/qmut.cu" "$4" "$5" || return 1
  build_q "$work/qmut.cu" "$2" "$3" || return 1
  if "$work/hq" 37 100 0 >"$work/qmut.log" 2>&1; then
    echo "FAIL: the emulator did not detect the mutant: $1"; return 1
  fi
  echo "mutant detected, as it must be: $1 ($(caught "$work/qmut.log"))"
}
q_mutant "SR index over O, not o_pad" 0 1 "(hot_u64)(r * o_pad + j * 16) >> 2" \
  "(hot_u64)(r * O + j * 16) >> 2" || fail=1
q_mutant "block scale rounded to nearest, not up" 0 0 "ceilf(HOT_DIV(d, ulp))" \
  "rintf(HOT_DIV(d, ulp))" || fail=1
q_mutant "no Hadamard transform" 1 0 "  hot_fwht(v, 16);" "" || fail=1
q_mutant "w' read row-major like g'" 1 0 ": src[(long long)o * rows + r];" ": src[r * O + o];" || fail=1
[ $fail = 0 ] && echo "nvfp4-emu: all configurations equal the twin, every mutant caught"
exit $fail
