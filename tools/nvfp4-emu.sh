#!/usr/bin/env bash
# nvfp4-emu.sh — run recipe nvfp4's sm_120a kernels in the CPU SIMT emulators of tools/gemm-emu/
# against their twins (templates/nvfp4_ref.c, compiled here) bit for bit, under the deterministic
# schedules of EMU_SEEDS (default "0 1 2 3"), each followed by the mutants the emulator must
# catch:
# - templates/gemm_nvfp4.cu (the NVFP4 g_x GEMM, nvfp4_emu.cpp) against nvfp4_gemm for several
#   tile configurations and awkward sizes; mutants: a wrong scale-factor lane, a swapped E4M3
#   byte order in the scale word, the A fragment's two K halves swapped, a missing K-tile
#   barrier, the epilogue's x4 dropped, the overflow flag never raised;
# - templates/hq_nvfp4.cu (HQ's NVFP4 quantisers: g' SR and RTN, w' RTN) against
#   nvfp4_hq_quant_g / _w, with their mutants (SR index, scale rounding, the transform, w's
#   layout);
# - templates/gemm_mxfp8.cu (the MXFP8 g_w GEMM, mxfp8_emu.cpp) against mxfp8_gemm (tiles, ragged
#   sizes, raw, quantised and subnormal-product operands; K padded to the tile, and the twin's
#   own buffers with Kpad a multiple of 32 but not of the tile, nonzero bytes past them); mutants:
#   a wrong scale-factor lane, the E4M3 bytes of a B register swapped, A's K halves swapped, a
#   missing K-tile barrier, every K step taking its tile's first block scale, the last K tile
#   loading past Kpad instead of zeros, the overflow flag never raised;
# - templates/hla_mxfp8.cu (HLA's MXFP8 quantisers: x^ RTN, g^ SR and RTN, hla_mxfp8_emu.cpp)
#   against nvfp4_hla_quant with hla_fmt MXFP8 for several bases, token layouts and awkward
#   sizes; mutants: the SR index, the E8M0 exponent, the projection's rows, the codes' byte
#   order, the per-sample token offset.
# Only each GEMM template's one PTX wrapper (hot_mma_bs, hot_mma_mx) is replaced (by the
# emulator's model of the instruction) and its overflow check HOT_RANGE_CHECK redirected to the
# emulator's flag word (tools/gemm-emu/range_edge.h); everything else is the template's code,
# compiled unchanged. Every GEMM run compares that flag with "some output of the twin is not
# finite", with a mode whose finite inputs overflow fp32 (huge scales) among the runs. What the
# emulators cannot check is in their headers.
# Needs python3, a C11 and a C++17 compiler (CC, default gcc; CXX, default g++; PYTHON).
# First the layout tests (nvfp4_emu --layout, mxfp8_emu --layout: the fragment and scale maps
# against CuTe's SM120 block-scaled MMA traits, with mutants of the maps).
# Usage: tools/nvfp4-emu.sh            (everything: layouts, NVFP4 GEMM, quantisers, MXFP8 GEMM)
#        tools/nvfp4-emu.sh layout     (the two layout tests alone)
#        tools/nvfp4-emu.sh nvfp4      (the NVFP4 GEMM and HQ's quantisers, without the layouts)
#        tools/nvfp4-emu.sh mxfp8      (the MXFP8 GEMM, without the layouts)
#        tools/nvfp4-emu.sh hla        (HLA's MXFP8 quantisers)
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
mode=${1:-all}
case $mode in
  all | layout | nvfp4 | mxfp8 | hla) ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "nvfp4-emu: unknown argument '$mode' (none, layout, nvfp4, mxfp8 or hla)" >&2; exit 2 ;;
esac
want() { [ "$mode" = all ] || [ "$mode" = "$1" ]; } # WHAT: run that part
echo "nvfp4-emu: schedules EMU_SEEDS='$EMU_SEEDS'"
fail=0

# SRC [FMT] -> $work/kernel_FMT.inc (FMT nvfp4, the default, or mxfp8): the body of the GEMM's MMA
# wrapper (hot_mma_bs, hot_mma_mx) becomes the emulator's instruction (emu_mma_bs, emu_mma_mx); no
# other inline asm may remain.
mkinc() {
  local fmt=${2:-nvfp4} fn=hot_mma_bs emu=emu_mma_bs
  [ "$fmt" = mxfp8 ] && fn=hot_mma_mx emu=emu_mma_mx
  "$PY" - "$1" "$work/kernel_$fmt.inc" "$fn" "$emu" "templates/gemm_$fmt.cu" <<'PY' || return 1
import re, sys
src = open(sys.argv[1]).read()
fn, emu = sys.argv[3], sys.argv[4]
m = re.search(r"\b%s\s*\(" % fn, src)
if not m:
    sys.exit("nvfp4-emu: %s not found" % fn)
start = src.index("{", m.end())
depth = 0
for i in range(start, len(src)):
    depth += {"{": 1, "}": -1}.get(src[i], 0)
    if depth == 0:
        break
src = (src[:start] + "{ %s(d, a, b, sfa, sfb); }" % emu + "\n" * src.count("\n", start, i) +
       src[i + 1:])
if "asm" in re.sub(r"/\*.*?\*/", "", src, flags=re.S):
    sys.exit("nvfp4-emu: inline asm left outside %s" % fn)
# the overflow flag (hot_math.cuh's HOT_RANGE_CHECK is a no-op off the device): every check the
# kernel makes raises the emulator's flag word (range_edge.h), which the driver compares with
# "some output of the twin is not finite"
math = '#include "hot_math.cuh"'
if src.count(math) != 1:
    sys.exit("nvfp4-emu: %r not found once" % math)
after = src[:src.index(math)].count("\n") + 2  # the line after the include
src = src.replace(math, math + "\n#undef HOT_RANGE_CHECK\n"
                  "#define HOT_RANGE_CHECK(v) emu_range_check(v)\n"
                  '#line %d "%s"' % (after, sys.argv[5]), 1)
open(sys.argv[2], "w").write('#line 1 "%s"\n' % sys.argv[5] + src)
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
build() { # "TM TN TK WM WN" [FMT]: the emulator of FMT (nvfp4, the default, or mxfp8) -> $work/emu
  local fmt=${2:-nvfp4}
  # shellcheck disable=SC2086
  set -- $1
  $CXX -std=c++17 -O2 -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" -I"$here/tools/gemm-emu" -DHOT_GENERATED \
    -DHOT_KNAME=emu_$fmt -DHOT_TILE_M=$1 -DHOT_TILE_N=$2 -DHOT_TILE_K=$3 -DHOT_WARPS_M=$4 \
    -DHOT_WARPS_N=$5 "$here/tools/gemm-emu/${fmt}_emu.cpp" "$work/nvfp4_ref.o" -o "$work/emu" \
    2>"$work/cc.log" || { echo "FAIL build: $fmt $*"; head -30 "$work/cc.log"; return 1; }
}
mkinc "$here/templates/gemm_nvfp4.cu" || exit 1
mkinc "$here/templates/gemm_mxfp8.cu" mxfp8 || exit 1

# The layout tests: each MMA model's fragment and scale maps and the scale rows / columns the
# kernel loads, against CuTe's SM120 block-scaled traits (nvfp4_emu --layout, mxfp8_emu
# --layout), then mutants of the maps they must catch.
layout_run() { # EMU_SRC [FMT] -> 0 when the layout check passes
  local fmt=${2:-nvfp4}
  $CXX -std=c++17 -O2 -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" -I"$here/tools/gemm-emu" -DHOT_GENERATED \
    -DHOT_KNAME=emu_$fmt -DHOT_TILE_M=64 -DHOT_TILE_N=64 -DHOT_TILE_K=128 -DHOT_WARPS_M=2 \
    -DHOT_WARPS_N=2 "$1" "$work/nvfp4_ref.o" -o "$work/lay" 2>"$work/cc.log" ||
    { echo "FAIL build: $fmt layout"; head -30 "$work/cc.log"; return 2; }
  "$work/lay" --layout
}
lay_mutant() { # WHAT ANCHOR REPLACEMENT [FMT]
  local fmt=${4:-nvfp4}
  mutate "$here/tools/gemm-emu/${fmt}_emu.cpp" "$work/lay_mut.cpp" "$2" "$3" || return 1
  local rc=0
  layout_run "$work/lay_mut.cpp" "$fmt" >"$work/lay.log" 2>&1 || rc=$?
  if [ $rc = 0 ]; then echo "FAIL: the layout test did not detect the mutant: $1"; return 1; fi
  [ $rc = 2 ] && { cat "$work/lay.log"; return 1; }
  echo "layout mutant detected, as it must be: $fmt: $1 ($(grep -m1 '^  ' "$work/lay.log" | sed 's/^ *//'))"
}
if want layout; then
layout_run "$here/tools/gemm-emu/nvfp4_emu.cpp" || fail=1
lay_mutant "kernel's SF_A row from t >> 1" "return (lane >> 2) + 8 * (lane & 1); }" \
  "return (lane >> 2) + 8 * ((lane >> 1) & 1); }" || fail=1
lay_mutant "scale bytes in reverse order" "x % 16, (x / 16) / 16);
      if (sfa_row(l) >= 0)" "x % 16, 3 - (x / 16) / 16);
      if (sfa_row(l) >= 0)" || fail=1
lay_mutant "A's register pairs (rows g, g + 8) swapped" "*m = (lane >> 2) + ((i / 8) & 1) * 8;" \
  "*m = (lane >> 2) + (((i / 8) & 1) ^ 1) * 8;" || fail=1
lay_mutant "B's two registers swapped in K" "*k = 8 * (lane & 3) + (i & 7) + (i >= 8 ? 32 : 0);" \
  "*k = 8 * (lane & 3) + (i & 7) + (i >= 8 ? 0 : 32);" || fail=1
layout_run "$here/tools/gemm-emu/mxfp8_emu.cpp" mxfp8 || fail=1
lay_mutant "kernel's SF_A row from t >> 1" "return (lane >> 2) + 8 * (lane & 1); }" \
  "return (lane >> 2) + 8 * ((lane >> 1) & 1); }" mxfp8 || fail=1
lay_mutant "A's register pairs (rows g, g + 8) swapped" "*m = (lane >> 2) + ((i / 4) & 1) * 8;" \
  "*m = (lane >> 2) + (((i / 4) & 1) ^ 1) * 8;" mxfp8 || fail=1
lay_mutant "A's bytes in reverse order within a register" \
  "*k = 4 * (lane & 3) + (i & 3) + (i >= 8 ? 16 : 0);" \
  "*k = 4 * (lane & 3) + 3 - (i & 3) + (i >= 8 ? 16 : 0);" mxfp8 || fail=1
lay_mutant "B's two registers swapped in K" "*k = 4 * (lane & 3) + (i & 3) + (i >= 4 ? 16 : 0);" \
  "*k = 4 * (lane & 3) + (i & 3) + (i >= 4 ? 0 : 16);" mxfp8 || fail=1
lay_mutant "the model's SF_A rows of lanes t = 0 and t = 1 swapped" \
  "return (lane & 3) < 2 ? (lane >> 2) + 8 * (lane & 3) : -1; }" \
  "return (lane & 3) < 2 ? (lane >> 2) + 8 * (1 - (lane & 3)) : -1; }" mxfp8 || fail=1
fi
[ "$mode" = layout ] && exit $fail
if want nvfp4; then
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
nv_mutant "overflow flag never raised (no range check of the stored values)" \
  "  HOT_RANGE_CHECK(nf);
}" "}" || fail=1
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
fi
if want mxfp8; then
# tm tn tk wm wn: the planner's tiles (gen/plan_tables.c, path mma_mxfp8) and a spread of others
MX_CONFIGS=("64 64 128 2 2" "128 128 128 2 2" "128 128 64 2 4" "64 64 32 1 2" "32 16 64 2 2")
for cfg in "${MX_CONFIGS[@]}"; do
  build "$cfg" mxfp8 || { fail=1; continue; }
  # M N K ldc [div]: ragged M / N, K not a multiple of the tile (nor of 32), K of one block,
  # ldc > N, several blocks in both directions, div 1 .. 1024
  for run in "77 45 200 47" "130 70 512 70 1024" "1 9 32 10" "19 130 1000 131 1"; do
    # shellcheck disable=SC2086
    "$work/emu" $run || fail=1
  done
  # "block": the twin's buffers in place, Kpad = K rounded up to 32 (224, 32, 352, 96: not a
  # multiple of 64 or 128, so the last K tile reaches past Kpad; every Kpad is one of 32)
  for run in "77 45 200 47 64 block" "1 9 32 10 64 block" "19 130 330 131 1 block" \
    "130 70 96 70 1024 block"; do
    # shellcheck disable=SC2086
    "$work/emu" $run || fail=1
  done
done
mx_mutant() { # WHAT "RUN" ANCHOR REPLACEMENT [ANCHOR REPLACEMENT...]
  local what=$1 run=$2
  shift 2
  mutate "$here/templates/gemm_mxfp8.cu" "$work/mut.cu" "$@" || return 1
  mkinc "$work/mut.cu" mxfp8 || return 1
  build "64 64 128 2 2" mxfp8 || return 1
  # shellcheck disable=SC2086
  if "$work/emu" $run >"$work/mut.log" 2>&1; then
    echo "FAIL: the emulator did not detect the mutant: $what"; return 1
  fi
  echo "mutant detected, as it must be: $what ($(caught "$work/mut.log"))"
}
MX_RUN="77 45 400 47"
mx_mutant "wrong scale-factor lane (SF_A row from t >> 1, not t & 1)" "$MX_RUN" \
  "sfa[mi] = sa_scales[(r + 8 * (t & 1)) * HOT_SB + ks];" \
  "sfa[mi] = sa_scales[(r + 8 * (t >> 1)) * HOT_SB + ks];" || fail=1
mx_mutant "E4M3 bytes of B's first register in swapped order" "$MX_RUN" \
  "        bf[ni][0] = hot_lds4(sb_codes, r * HOT_KB + kb);" \
  "        bf[ni][0] = __builtin_bswap32(hot_lds4(sb_codes, r * HOT_KB + kb));" || fail=1
mx_mutant "A fragment's K halves swapped" "$MX_RUN" \
  "        af[mi][2] = hot_lds4(sa_codes, r * HOT_KB + kb + 16);" \
  "        af[mi][2] = hot_lds4(sa_codes, r * HOT_KB + kb);
        af[mi][0] = hot_lds4(sa_codes, r * HOT_KB + kb + 16);" || fail=1
mx_mutant "no barrier at the end of a K tile" "$MX_RUN" \
  "    }
    __syncthreads();
  }" "    }
  }" || fail=1
mx_mutant "every K step takes its tile's first block scale of B" "$MX_RUN" \
  "sfb[ni] = sb_scales[r * HOT_SB + ks];" "sfb[ni] = sb_scales[r * HOT_SB];" || fail=1
mx_mutant "the last K tile loads codes and scales past Kpad (no zero-fill)" "77 45 200 47 64 block" \
  "if (r < left && c * 16 < kleft)" "if (r < left)" \
  "if (r < left && c * 32 < kleft)" "if (r < left)" || fail=1
mx_mutant "overflow flag never raised (no range check of the stored values)" "$MX_RUN" \
  "  HOT_RANGE_CHECK(nf);
}" "}" || fail=1
fi
if want hla; then
# templates/hla_mxfp8.cu (HLA's MXFP8 quantisers) against nvfp4_hla_quant (hla_fmt MXFP8): codes,
# E8M0 scales, nothing written past them, the non-finite flag.
build_h() { # SRC MODE ROUND P R ROWS
  cp "$1" "$work/kernel_hla_mxfp8.inc" || return 1
  $CXX -std=c++17 -O2 -ffp-contract=off -I"$work" -I"$here/templates" -I"$here/tools/kernel-emu" \
    -DHOT_GENERATED -DHOT_KNAME=emu_hla_mxfp8 -DHOT_MODE="$2" -DHOT_ROUND="$3" -DHOT_P="$4" \
    -DHOT_R="$5" -DHOT_ROWS="$6" "$here/tools/gemm-emu/hla_mxfp8_emu.cpp" "$work/nvfp4_ref.o" \
    -o "$work/hla" 2>"$work/cc.log" ||
    { echo "FAIL build: hla_mxfp8 mode $2 round $3 p $4 r $5"; head -30 "$work/cc.log"; return 1; }
}
# MODE ROUND P R ROWS: g^ SR, g^ RTN, x^ RTN; bases with K = blocks * r not a multiple of 32,
# r > 32, the identity (p = 1)
H_CONFIGS=("1 1 16 10 0,8,12,4,14,10,2,3,11,1" "1 0 16 10 0,8,12,4,14,10,2,3,11,1"
  "0 0 16 10 0,8,12,4,14,10,2,3,11,1" "1 1 64 40 $(seq -s, 0 39)" "0 0 4 3 0,2,3" "1 1 1 1 0")
for cfg in "${H_CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  build_h "$here/templates/hla_mxfp8.cu" $cfg || { fail=1; continue; }
  # B L COLS FLAT DATA: L not a multiple of p per sample and flat, several CUDA blocks in both
  # phases, one column; all zero; a NaN
  for run in "3 37 70 0 0" "2 50 45 1 0" "1 300 1 0 0" "2 20 9 0 1" "2 30 17 1 2"; do
    # shellcheck disable=SC2086
    "$work/hla" $run || fail=1
  done
done
h_mutant() { # WHAT "MODE ROUND P R ROWS" ANCHOR REPLACEMENT
  mutate "$here/templates/hla_mxfp8.cu" "$work/hmut.cu" "$3" "$4" || return 1
  # shellcheck disable=SC2086
  build_h "$work/hmut.cu" $2 || return 1
  if "$work/hla" 3 37 70 0 0 >"$work/hmut.log" 2>&1; then
    echo "FAIL: the emulator did not detect the mutant: $1"; return 1
  fi
  echo "mutant detected, as it must be: $1 ($(caught "$work/hmut.log"))"
}
H_G="1 1 16 10 0,8,12,4,14,10,2,3,11,1"
h_mutant "SR index over the stored layout (c * k_pad + kk), not kk * cols + c" "$H_G" \
  "(unsigned long long)(kk * cols + c)" "(unsigned long long)(c * k_pad + kk)" || fail=1
h_mutant "E8M0 exponent rounded down (no + 1 above 448 * 2^e)" "$H_G" \
  "ex - 9 + (fr > 0.875f ? 1 : 0)" "ex - 9" || fail=1
h_mutant "the projection's first r natural rows, not HOT_ROWS" "$H_G" \
  "v[i] = work[(blk * HOT_P + hot_mx_rows[j])" "v[i] = work[(blk * HOT_P + j)" || fail=1
h_mutant "codes in reverse byte order within each word" "0 0 16 10 0,8,12,4,14,10,2,3,11,1" \
  "code << (8 * (i & 3))" "code << (8 * (3 - (i & 3)))" || fail=1
h_mutant "per-sample token offset from the padded segment, not L" "0 0 16 10 0,8,12,4,14,10,2,3,11,1" \
  "(flat ? 0 : s * L)" "(flat ? 0 : s * per * HOT_P)" || fail=1
h_mutant "E4M3 RTN as truncation" "0 0 16 10 0,8,12,4,14,10,2,3,11,1" \
  "q = HOT_RINT(q);" "q = HOT_FLOOR(q);" || fail=1
h_mutant "-0.0 and negative values that round to 0 coded +0" "1 1 16 10 0,8,12,4,14,10,2,3,11,1" \
  "  if (!(a > 0.0f)) return sign;" "  if (!(a > 0.0f)) return 0u;" || fail=1
h_mutant "E8M0 exponent not clamped at -127" "1 1 16 10 0,8,12,4,14,10,2,3,11,1" \
  "return e < -127 ? -127 : (e > 127 ? 127 : e);" "return e > 127 ? 127 : e;" || fail=1
fi
[ $fail = 0 ] && echo "nvfp4-emu: all configurations equal the twin, every mutant caught"
exit $fail
