#!/usr/bin/env bash
# check-templates.sh — compile the GEMM, bias, HLA projection, LQS and SAWB templates standalone, the way the generator will
# instantiate them (-DHOT_GENERATED plus every @hot-params macro), for sm_80, sm_86, sm_89 and
# sm_90, and the wgmma GEMM (gemm_wgmma.cu) for sm_90a, both GEMMs also segmented (HOT_SEGS=1,
# the g_w GEMM of HLA scale groups); print registers and spills (ptxas -v) and check the PTX for
# the instructions each path must use. Exits non-zero on any compile error, any spill, or a
# missing instruction.
#
# Usage: tools/check-templates.sh [arch ...]     (default: 80 86 89 90 90a; 90a = wgmma GEMMs only)
# Env:   NVCC (default: nvcc on PATH, else /usr/local/cuda/bin/nvcc), KEEP=1 keeps the work dir.
# One compile at a time (build machines are shared).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
tdir="$here/templates"
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
for a in "$@"; do
  case $a in
    --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    [0-9][0-9] | [0-9][0-9]a) ;;
    *) echo "check-templates: '$a' is not an arch (80, 86, 89, 90, 90a; see --help)" >&2; exit 2 ;;
  esac
done
archs=${*:-"80 86 89 90 90a"}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-check.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fail=0
rows=()

# count PATTERN FILE -> number of lines matching the extended regex
count() { grep -cE "$1" "$2" 2>/dev/null || true; }

# run_one LABEL TEMPLATE ARCH "DEFINES" "REQUIRED-REGEX ..."
run_one() {
  local label=$1 tpl=$2 arch=$3 defs=$4 req=$5
  local base="$work/${label}_sm$arch" src="$tdir/$tpl"
  # sm_90a: the -gencode form (the -arch shorthand may also run a plain sm_90 pass)
  local cub_arch="-arch=sm_$arch" ptx_arch="-arch=sm_$arch"
  if [ "$arch" = 90a ]; then cub_arch="-gencode=arch=compute_90a,code=sm_90a"; ptx_arch="-arch=compute_90a"; fi
  case $tpl in /*) src=$tpl ;; esac
  # shellcheck disable=SC2086
  if ! "$NVCC" -cubin $cub_arch -I"$tdir" -DHOT_GENERATED $defs -Xptxas -v \
      "$src" -o "$base.cubin" >"$base.log" 2>&1; then
    echo "FAIL compile: $label sm_$arch"; sed 's/^/    /' "$base.log" | head -20; fail=1; return
  fi
  local regs spill_st spill_ld stack
  regs=$(sed -n 's/.*Used \([0-9]*\) registers.*/\1/p' "$base.log" | head -1)
  spill_st=$(sed -n 's/.* \([0-9]*\) bytes spill stores.*/\1/p' "$base.log" | head -1)
  spill_ld=$(sed -n 's/.*stores, \([0-9]*\) bytes spill loads.*/\1/p' "$base.log" | head -1)
  stack=$(sed -n 's/.* \([0-9]*\) bytes stack frame.*/\1/p' "$base.log" | head -1)
  local status=ok
  if [ "${spill_st:-0}" != 0 ] || [ "${spill_ld:-0}" != 0 ] || [ "${stack:-0}" != 0 ]; then
    status="SPILL"; fail=1
  fi
  # shellcheck disable=SC2086
  if ! "$NVCC" -ptx $ptx_arch -I"$tdir" -DHOT_GENERATED $defs "$src" -o "$base.ptx" \
      >>"$base.log" 2>&1; then
    echo "FAIL ptx: $label sm_$arch"; fail=1; return
  fi
  local r n missing=""
  for r in $req; do
    n=$(count "$r" "$base.ptx")
    [ "${n:-0}" -gt 0 ] || missing="$missing $r"
  done
  if [ -n "$missing" ]; then status="MISSING:$missing"; fail=1; fi
  if [ "$(count 'ld\.local|st\.local' "$base.ptx")" != 0 ]; then status="$status local-mem"; fail=1; fi
  rows+=("$(printf '%-34s sm_%-3s regs %3s  spill %s/%s  %s' "$label" "$arch" "${regs:-?}" \
    "${spill_st:-?}" "${spill_ld:-?}" "$status")")
}

MMA_S8='mma\.sync\.aligned\.m16n8k32\.row\.col\.s32\.s8\.s8\.s32'
MMA_S4='mma\.sync\.aligned\.m16n8k64\.row\.col\.s32\.s4\.s4\.s32'
PIPE='cp\.async\.cg\.shared\.global ldmatrix\.sync\.aligned\.m8n8\.x4 cp\.async\.commit_group cp\.async\.wait_group'

# gemm DEFS: codes tm tn tk wm wn stages [segs (HOT_SEGS, default 0)]
gemm_defs() {
  echo "-DHOT_KNAME=hot_gemm_c$1_$2x$3x$4_w$5x$6_s$7 -DHOT_CODES=$1 -DHOT_TILE_M=$2 -DHOT_TILE_N=$3" \
       "-DHOT_TILE_K=$4 -DHOT_WARPS_M=$5 -DHOT_WARPS_N=$6 -DHOT_STAGES=$7 -DHOT_SEGS=${8:-0}"
}

# Parameter sets: the planner's defaults (128x128 / 64x64, 2x2 warps, 3 / 4 stages, K = 2 mma
# steps), the recommended 2x4 warps, odd K steps (1 and 3), wide K, 256-row tiles and a warp
# layout with an odd number of n8 blocks per warp (ldmatrix .x2 path).
S8_SETS=(
  "0 128 128 64 2 2 3" "0 128 128 64 2 2 4" "0 128 128 64 2 4 4" "0 128 128 64 4 2 3"
  "0 64 64 64 2 2 4" "0 64 64 32 2 2 4" "0 128 128 96 2 4 3" "0 128 128 128 2 4 3"
  "0 256 128 64 4 2 3" "0 64 64 64 1 8 3"
)
S4_SETS=(
  "1 128 128 128 2 2 3" "1 128 128 128 2 2 4" "1 128 128 128 2 4 4" "1 64 64 128 2 2 4"
  "1 64 64 64 2 2 4" "1 128 128 256 2 4 3"
)
# Segmented g_w GEMMs (HOT_SEGS=1, int8 codes: HLA is s8 on every arch): the planner's two g_w
# tiles, odd K steps (3 and 1: two segment-end sites in the K loop) and the largest accumulator
# tile. Their PTX must hold the running sum's fp32 addition.
SEG_SETS=("0 128 128 64 2 2 3" "0 64 64 64 2 2 4" "0 128 128 96 2 4 3" "0 64 64 32 2 2 4" "0 256 128 64 4 2 3")
SEG_REQ='add\.rn\.f32'

# hla_project.cu takes HOT_ROWS as a comma list, which nvcc's -D would split: instantiate it
# through a wrapper file, as the generator's prelude does. hla_wrapper MODE DTYPE P R [ROUND]
# -> path (ROUND: 1 = SR, 0 = RTN; default: SR for g^, RTN for x^)
hla_wrapper() {
  local f="$work/hla_m$1_dt$2_p$3_r$4_q${5:-$1}.cu" rows
  rows=$(seq -s, 0 $(($4 - 1)))
  [ "$3" = 16 ] && [ "$4" = 10 ] && rows="0,8,12,4,14,10,2,3,11,1"
  # HOT_COLS: the planner's column count (gen/kernels/hla.c), which the template checks
  printf '#define HOT_KNAME hot_hla_m%s_dt%s_p%s\n#define HOT_MODE %s\n#define HOT_DTYPE %s\n#define HOT_P %s\n#define HOT_R %s\n#define HOT_BITS 8\n#define HOT_ROUND %s\n#define HOT_ROWS %s\n#define HOT_COLS %s\n#include "hla_project.cu"\n' \
    "$1" "$2" "$3" "$1" "$2" "$3" "$4" "${5:-$1}" "$rows" "$(($3 <= 32 ? 256 : 8192 / $3))" >"$f"
  echo "$f"
}
# p dtype r
HLA_SETS=("1 0 1" "16 0 10" "16 1 10" "16 2 10" "64 1 36" "256 1 136" "1024 1 528" "1024 2 4")

# wgmma GEMMs (sm_90a): tile_m tile_n stages
WG_SETS=("64 64 3" "64 128 4" "64 256 4" "128 64 5" "128 128 4" "128 256 4" "128 256 3")
WG_SEG_SETS=("64 64 3" "128 128 4" "128 256 4" "64 256 4")
WG_PIPE='wgmma\.fence\.sync\.aligned wgmma\.commit_group\.sync\.aligned wgmma\.wait_group\.sync\.aligned fence\.proxy\.async\.shared::cta cp\.async\.cg\.shared\.global'
for arch in $archs; do
  if [ "$arch" = 90a ]; then
    for s in "${WG_SETS[@]}"; do
      # shellcheck disable=SC2086
      set -- $s
      run_one "gemm_wgmma_$1x$2_s$3" gemm_wgmma.cu 90a \
        "$(gemm_defs 0 "$1" "$2" 128 $(($1 / 16)) 1 "$3")" \
        "wgmma\.mma_async\.sync\.aligned\.m64n$2k32\.s32\.s8\.s8 $WG_PIPE"
    done
    for s in "${WG_SEG_SETS[@]}"; do
      # shellcheck disable=SC2086
      set -- $s
      run_one "gemm_wgmma_$1x$2_s$3_seg" gemm_wgmma.cu 90a \
        "$(gemm_defs 0 "$1" "$2" 128 $(($1 / 16)) 1 "$3" 1)" \
        "wgmma\.mma_async\.sync\.aligned\.m64n$2k32\.s32\.s8\.s8 $WG_PIPE $SEG_REQ"
    done
    continue
  fi
  for s in "${S8_SETS[@]}"; do
    # shellcheck disable=SC2086
    set -- $s
    run_one "gemm_s8_$2x$3x$4_w$5x$6_s$7" gemm_int.cu "$arch" "$(gemm_defs $s)" "$MMA_S8 $PIPE"
  done
  for s in "${SEG_SETS[@]}"; do
    # shellcheck disable=SC2086
    set -- $s
    run_one "gemm_s8_$2x$3x$4_w$5x$6_s$7_seg" gemm_int.cu "$arch" "$(gemm_defs $s 1)" \
      "$MMA_S8 $PIPE $SEG_REQ"
  done
  # Packed int4 runs on sm_80/86/89; sm_90 gets int8 codes from the planner (CONTRACT.md section 7).
  if [ "$arch" != 90 ]; then
    for s in "${S4_SETS[@]}"; do
      # shellcheck disable=SC2086
      set -- $s
      run_one "gemm_s4_$2x$3x$4_w$5x$6_s$7" gemm_int.cu "$arch" "$(gemm_defs $s)" "$MMA_S4 $PIPE"
    done
  fi
  for dt in 0 1 2; do
    run_one "bias_dt$dt" bias.cu "$arch" "-DHOT_KNAME=hot_bias_dt$dt -DHOT_DTYPE=$dt" \
      'add\.rn\.f32|add\.f32'
  done
  # the saved codes into the g_w GEMM's layout: one 16-byte store per thread
  run_one "abc_unpack" abc_unpack.cu "$arch" "-DHOT_KNAME=hot_abc_unpack" 'st\.global\.v4'
  # HLA / ABC projection: p = 1 (paper_code), 16 (tri r = 10), 64 (r = 36), 256 (r = 136),
  # 1024 (r = 528), both modes; row values do not change the code, only r does
  for s in "${HLA_SETS[@]}"; do
    # shellcheck disable=SC2086
    set -- $s
    for mode in 0 1; do
      w=$(hla_wrapper "$mode" "$2" "$1" "$3")
      req='bar\.sync|barrier\.sync'
      [ "$mode" = 1 ] && req="$req mul\.hi\.u32"
      run_one "hla_m${mode}_dt$2_p$1_r$3" "$w" "$arch" "" "$req"
    done
    if [ "$1" = 64 ]; then # g^ rounded to nearest (no Philox)
      run_one "hla_m1_rtn_dt$2_p$1_r$3" "$(hla_wrapper 1 "$2" "$1" "$3" 0)" "$arch" "" 'bar\.sync|barrier\.sync'
    fi
  done
  for dt in 0 1 2; do
    run_one "lqs_dt${dt}_k4" lqs.cu "$arch" "-DHOT_KNAME=hot_lqs_dt$dt -DHOT_DTYPE=$dt -DHOT_BITS=4 -DHOT_ROUND=1" \
      'add\.rn\.f64 mul\.rn\.f64 sqrt\.rn\.f64'
  done
  run_one "lqs_rtn_dt0_k4" lqs.cu "$arch" "-DHOT_KNAME=hot_lqs_rtn -DHOT_DTYPE=0 -DHOT_BITS=4 -DHOT_ROUND=0" \
    'add\.rn\.f64 mul\.rn\.f64 sqrt\.rn\.f64'
  run_one "sawb_k4" sawb.cu "$arch" "-DHOT_KNAME=hot_sawb_k4 -DHOT_BITS=4" 'add\.rn\.f64 sqrt\.rn\.f64'
  run_one "sawb_k8" sawb.cu "$arch" "-DHOT_KNAME=hot_sawb_k8 -DHOT_BITS=8" 'add\.rn\.f64 sqrt\.rn\.f64'
done

# Illegal parameter combinations must be rejected at compile time (static_assert).
neg() { # LABEL DEFINES [TEMPLATE (default gemm_int.cu)]
  local label=$1 defs=$2 tpl=${3:-gemm_int.cu}
  # shellcheck disable=SC2086
  if "$NVCC" -cubin -arch=sm_80 -I"$tdir" -DHOT_GENERATED $defs "$tdir/$tpl" \
      -o "$work/neg.cubin" >"$work/neg.log" 2>&1; then
    echo "FAIL: illegal parameters accepted: $label"; fail=1
  elif ! grep -q 'static assertion failed\|static_assert' "$work/neg.log"; then
    echo "FAIL: $label rejected without a static_assert"; sed 's/^/    /' "$work/neg.log" | head; fail=1
  else
    rows+=("$(printf '%-34s rejected by static_assert (expected)' "$label")")
  fi
}
neg "gemm tile_k=48 (s8)" "$(gemm_defs 0 128 128 48 2 2 3)"
neg "gemm tile_m=96 w4x2" "$(gemm_defs 0 96 128 64 4 2 3)"
neg "gemm stages=1" "$(gemm_defs 0 128 128 64 2 2 1)"
neg "gemm segs=2" "$(gemm_defs 0 128 128 64 2 2 3 2)"
neg "wgmma segs=2" "$(gemm_defs 0 128 128 128 8 1 4 2)" gemm_wgmma.cu
neg "wgmma tile_k=64" "$(gemm_defs 0 128 128 64 8 1 4)" gemm_wgmma.cu
neg "wgmma warps 2x2" "$(gemm_defs 0 128 128 128 2 2 4)" gemm_wgmma.cu
neg "wgmma int4 codes" "$(gemm_defs 1 128 128 128 8 1 4)" gemm_wgmma.cu

printf '%s\n' "${rows[@]}"
if [ $fail = 0 ]; then echo "check-templates: all OK"; else echo "check-templates: FAILED"; fi
exit $fail
