#!/usr/bin/env bash
# gemm-emu.sh — run templates/gemm_int.cu, templates/gemm_wgmma.cu and templates/bias.cu in the CPU
# SIMT emulator (tools/gemm-emu/emu.cpp, bias_emu.cpp) for several tile configurations and
# awkward sizes, comparing with a reference GEMM / bias sum bit for bit, plus mutants the
# emulator must catch. Both GEMM templates also run segmented (HOT_SEGS=1: the g_w GEMM of HLA
# scale groups, CONTRACT.md 14) with 1, 2, 3 and 5 segments of one and of several K tiles, with
# mutants of the segment ends that must be caught.
# Every check runs under the deterministic schedules of tools/kernel-emu/emu_sched.h (EMU_SEEDS,
# default "0 1 2 3": lowest-first, highest-first, warp priorities, random): the same seeds give
# the same interleavings and results on every run, at any machine load. A mutant counts as caught
# when at least one schedule fails it; being deterministic, it is then caught on every run.
# Checks the kernel's own index arithmetic and pipeline order without a GPU (see emu.cpp for what
# it cannot check). The overflow flag of CONTRACT.md 19 (hot_range_flag) is checked by every run
# (raised exactly when some output is not finite), at the edge of fp32 by the over=J / under=J
# runs (one output just past / just below FLT_MAX, in a row scale or a segment's scale), and by
# mutants of the epilogue's checks that must be caught.
# Needs python3 and a C++17 compiler (CXX, default g++; PYTHON, default python3). One build at a time.
# Usage: tools/gemm-emu.sh            (prints one line per configuration and schedule, flushed)
set -u
case "${1:-}" in
  "") ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "gemm-emu: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
. "$here/tools/lib/num.sh" # the one parser of numbers: the emulators get the seeds in decimal
EMU_SEEDS=$(num_list EMU_SEEDS "${EMU_SEEDS:-0 1 2 3}" 0 1000000000000000000 2>&1) || { echo "gemm-emu: $EMU_SEEDS" >&2; exit 2; }
export EMU_SEEDS
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-emu.XXXXXX")
trap 'rm -rf "$work"' EXIT
EMU_INC=(-I"$here/templates" -I"$here/tools/kernel-emu")
start=$SECONDS
echo "gemm-emu: schedules EMU_SEEDS='$EMU_SEEDS'"
"$PY" "$here/tools/gemm-emu/mkemu.py" "$here/templates/gemm_int.cu" "$work/kernel.inc" || exit 1
fail=0
# codes tm tn tk wm wn stages
CONFIGS=(
  "0 128 128 64 2 2 3" "0 128 128 64 2 4 4" "0 64 64 64 2 2 4" "0 64 64 32 2 2 4"
  "0 128 128 96 2 4 3" "0 64 64 64 1 8 2" "0 256 128 64 4 2 3"
  "1 128 128 128 2 2 3" "1 64 64 64 2 2 4" "1 64 64 128 2 2 4"
)
for cfg in "${CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  set -- $cfg
  defs="-DHOT_GENERATED -DHOT_KNAME=emu_gemm_c$1_$2x$3x$4_w$5x$6_s$7 -DHOT_CODES=$1 -DHOT_TILE_M=$2"
  defs="$defs -DHOT_TILE_N=$3 -DHOT_TILE_K=$4 -DHOT_WARPS_M=$5 -DHOT_WARPS_N=$6 -DHOT_STAGES=$7 -DHOT_SEGS=0"
  tk=$4
  # shellcheck disable=SC2086
  if ! $CXX -std=c++17 -O2 -I"$work" "${EMU_INC[@]}" $defs "$here/tools/gemm-emu/emu.cpp" \
      -o "$work/emu" 2>"$work/cc.log"; then
    echo "FAIL build: $cfg"; head -30 "$work/cc.log"; fail=1; continue
  fi
  for late in 1 0; do
    # sizes: ragged M/N with odd and even ldc, row scale on/off, K of 0..8 tiles (enough tiles
    # that every stage is reused, so an early copy under a run-ahead schedule exposes a WAR race)
    "$work/emu" 197 137 $((3 * tk)) 139 1 $late || fail=1
    "$work/emu" 130 70 $((8 * tk)) 70 0 $late || fail=1
    if [ $late = 1 ]; then
      "$work/emu" 1 9 $((1 * tk)) 10 1 $late || fail=1
      "$work/emu" 64 64 $((2 * tk)) 64 1 $late || fail=1
      "$work/emu" 33 17 0 20 0 $late || fail=1
      # the overflow flag at the edge: row 35's scale (row scale) or alpha (none) puts output
      # (35, 136), in the second column tile, just past / just below FLT_MAX
      "$work/emu" 70 137 $((2 * tk)) 139 1 $late over=0 || fail=1
      "$work/emu" 70 137 $((2 * tk)) 139 1 $late under=0 || fail=1
      "$work/emu" 70 137 $((2 * tk)) 139 0 $late over=0 || fail=1
    fi
  done
done
# Determinism: the same seeds give the same interleavings (trace fingerprints) and results; the
# different schedules give different interleavings.
if [ -x "$work/emu" ]; then
  "$work/emu" 130 70 $((8 * tk)) 70 0 0 >"$work/det1" 2>&1
  "$work/emu" 130 70 $((8 * tk)) 70 0 0 >"$work/det2" 2>&1
  ntr=$(grep -o 'trace [0-9a-f]*' "$work/det1" | sort -u | wc -l)
  if cmp -s "$work/det1" "$work/det2" && [ "$ntr" -eq "$(echo $EMU_SEEDS | wc -w)" ]; then
    echo "determinism: two runs of the same schedules gave identical interleavings and results ($ntr distinct schedules)"
  else
    echo "FAIL: determinism: two runs of the same schedules differ, or schedules coincide"; diff "$work/det1" "$work/det2" | head; fail=1
  fi
  # the portable context switch (ucontext) must give the same interleavings as the assembly one
  # shellcheck disable=SC2086
  if $CXX -std=c++17 -O2 -I"$work" "${EMU_INC[@]}" $defs -DEMU_UCONTEXT "$here/tools/gemm-emu/emu.cpp" \
      -o "$work/emu_uc" 2>"$work/cc.log" && "$work/emu_uc" 130 70 $((8 * tk)) 70 0 0 >"$work/det3" 2>&1 &&
      cmp -s "$work/det1" "$work/det3"; then
    echo "determinism: the ucontext build gave the same interleavings and results"
  else
    echo "FAIL: the ucontext build differs or fails"; head -20 "$work/cc.log" "$work/det3"; fail=1
  fi
fi
# Segmented gemm_int.cu (HOT_SEGS=1): the planner's g_w tiles (2 K steps a tile), 1 and 3 K steps
# a tile (odd: the fragment buffers alternate, and a segment may end on either tile of a pair);
# segments of one K tile and of several, 1, 2, 3 and 5 of them, ragged M/N, odd and even ldc.
# codes tm tn tk wm wn stages
SEG_CONFIGS=("0 128 128 64 2 2 3" "0 64 64 64 2 2 4" "0 64 64 32 2 2 4" "0 128 128 96 2 4 3")
for cfg in "${SEG_CONFIGS[@]}"; do
  # shellcheck disable=SC2086
  set -- $cfg
  defs="-DHOT_GENERATED -DHOT_KNAME=emu_gemm_c$1_$2x$3x$4_w$5x$6_s$7_seg -DHOT_CODES=$1 -DHOT_TILE_M=$2"
  defs="$defs -DHOT_TILE_N=$3 -DHOT_TILE_K=$4 -DHOT_WARPS_M=$5 -DHOT_WARPS_N=$6 -DHOT_STAGES=$7 -DHOT_SEGS=1"
  tk=$4
  # shellcheck disable=SC2086
  if ! $CXX -std=c++17 -O2 -I"$work" "${EMU_INC[@]}" $defs "$here/tools/gemm-emu/emu.cpp" \
      -o "$work/emu" 2>"$work/cc.log"; then
    echo "FAIL build: segmented $cfg"; head -30 "$work/cc.log"; fail=1; continue
  fi
  for late in 1 0; do
    "$work/emu" 197 137 $((3 * tk)) 139 0 $late segs=3 || fail=1 # segments of 1 K tile
    "$work/emu" 130 70 $((10 * tk)) 70 0 $late segs=5 || fail=1 # 5 segments of 2 K tiles
    if [ $late = 1 ]; then
      "$work/emu" 1 9 $((6 * tk)) 10 0 $late segs=2 || fail=1   # 2 segments of 3 K tiles
      "$work/emu" 64 64 $((3 * tk)) 64 0 $late segs=1 || fail=1 # one segment: the plain GEMM
      "$work/emu" 33 17 0 20 0 $late segs=1 || fail=1           # Kpad 0: C = 0 * c_0
      # the overflow flag at the edge: segment 2 of 5 (an added sum), the only segment (a plain store)
      "$work/emu" 70 137 $((5 * tk)) 139 0 $late segs=5 over=2 || fail=1
      "$work/emu" 70 137 $((5 * tk)) 139 0 $late segs=5 under=2 || fail=1
      "$work/emu" 70 137 $((2 * tk)) 139 0 $late segs=1 over=0 || fail=1
    fi
  done
done

# gemm_wgmma.cu (sm_90a): the shared window starts 256 bytes off a 1024 boundary (the kernel aligns
# its stages itself). Three completion modes: copies late + wgmma early (a stage read before it
# landed), copies early + wgmma late (a stage overwritten under a pending wgmma; accumulators
# read early), both late.
mkdir -p "$work/wg"
"$PY" "$here/tools/gemm-emu/mkemu.py" "$here/templates/gemm_wgmma.cu" "$work/wg/kernel.inc" || exit 1
# build_wg DIR TM TN STAGES [SEGS] -> DIR/emu
build_wg() {
  local segs=${5:-0} sfx=""
  [ "$segs" = 1 ] && sfx=_seg
  $CXX -std=c++17 -O2 -I"$1" "${EMU_INC[@]}" -DHOT_GENERATED \
    -DHOT_KNAME=emu_wgmma_$2x$3_s$4$sfx -DHOT_CODES=0 -DHOT_TILE_M=$2 -DHOT_TILE_N=$3 -DHOT_TILE_K=128 \
    -DHOT_WARPS_M=$(($2 / 16)) -DHOT_WARPS_N=1 -DHOT_STAGES=$4 -DHOT_SEGS="$segs" -DEMU_WGMMA \
    -DEMU_SMEM_SKEW=256 "$here/tools/gemm-emu/emu.cpp" -o "$1/emu" 2>"$1/cc.log" ||
    { echo "FAIL build: wgmma $2x$3 s$4 segs $segs"; head -30 "$1/cc.log"; return 1; }
}
for cfg in "64 64 3" "64 256 4" "128 128 4" "128 256 4" "128 64 5"; do
  # shellcheck disable=SC2086
  set -- $cfg
  # shellcheck disable=SC2086
  build_wg "$work/wg" $1 $2 $3 || { fail=1; continue; }
  for mode in "1 0" "0 1" "1 1"; do
    # ragged M/N, odd and even ldc, row scale on/off; K of 0..9 tiles (stages all reused)
    # shellcheck disable=SC2086
    {
      "$work/wg/emu" 197 137 $((3 * 128)) 139 1 $mode || fail=1
      "$work/wg/emu" 130 300 $((9 * 128)) 300 0 $mode || fail=1
      "$work/wg/emu" 1 9 128 10 1 $mode || fail=1
      "$work/wg/emu" 33 17 0 20 0 $mode || fail=1
    }
  done
  # the overflow flag at the edge (row scale: row 35's; none: alpha), output (35, 136)
  "$work/wg/emu" 70 137 256 139 1 1 1 over=0 || fail=1
  "$work/wg/emu" 70 137 256 139 1 1 1 under=0 || fail=1
  "$work/wg/emu" 70 137 256 139 0 1 1 over=0 || fail=1
done
# segmented (HOT_SEGS=1): the planner's tile and a small one; segments of 1 and of several K
# tiles (each segment end waits for the wgmmas in flight, the loads stay in flight across it)
# (all three completion modes for the planner's tile, both late for the small one)
for cfg in "128 128 4" "64 64 3"; do
  # shellcheck disable=SC2086
  set -- $cfg
  # shellcheck disable=SC2086
  build_wg "$work/wg" $1 $2 $3 1 || { fail=1; continue; }
  modes=("1 0" "0 1" "1 1")
  [ "$1" = 64 ] && modes=("1 1")
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086
    {
      "$work/wg/emu" 197 137 $((3 * 128)) 139 0 $mode segs=3 || fail=1 # segments of 1 K tile
      "$work/wg/emu" 130 140 $((10 * 128)) 140 0 $mode segs=5 || fail=1 # 5 segments of 2 tiles
    }
  done
  "$work/wg/emu" 1 9 $((6 * 128)) 10 0 1 1 segs=2 || fail=1 # 2 segments of 3 K tiles
  "$work/wg/emu" 33 17 0 20 0 1 1 segs=1 || fail=1           # Kpad 0: C = 0 * c_0
  # the overflow flag at the edge: segment 2 of 5 (an added sum), the only segment (a plain store)
  "$work/wg/emu" 70 137 $((5 * 128)) 139 0 1 1 segs=5 over=2 || fail=1
  "$work/wg/emu" 70 137 $((5 * 128)) 139 0 1 1 segs=5 under=2 || fail=1
  "$work/wg/emu" 70 137 256 139 0 1 1 segs=1 over=0 || fail=1
done

# shellcheck source=tools/emu-common.sh
. "$here/tools/emu-common.sh"
# mutate SRC DST ANCHOR REPLACEMENT [ANCHOR REPLACEMENT ...]: DST = SRC with each ANCHOR replaced,
# in order. Every anchor must occur exactly once in the source, so that a mutant cannot land on
# another site (e.g. dead code of the configuration built) and pass unnoticed.
mutate() {
  "$PY" - "$@" <<'PY'
import sys
s = open(sys.argv[1]).read()
for a, r in zip(sys.argv[3::2], sys.argv[4::2]):
    n = s.count(a)
    if n != 1:
        sys.exit("gemm-emu: mutation anchor found %d times, not once: %r (update tools/gemm-emu.sh)"
                 % (n, a))
    s = s.replace(a, r, 1)
open(sys.argv[2], "w").write(s)
PY
}

# Mutants of gemm_wgmma.cu: each must fail in the completion mode named (anchor -> replacement).
wg_mutant() { # WHAT CP_LATE WG_LATE ANCHOR REPLACEMENT
  wg_mutant_run 0 "$@"
}
# segmented (HOT_SEGS=1, 5 segments of 2 K tiles)
wg_seg_mutant() { # WHAT CP_LATE WG_LATE ANCHOR REPLACEMENT
  wg_mutant_run 1 "$@"
}
wg_mutant_run() { # SEGS WHAT CP_LATE WG_LATE ANCHOR REPLACEMENT
  local args
  mkdir -p "$work/wgm"
  inline_h "$here/templates/gemm_wgmma.cu" "$work/wgm/src.cu" hot_sm90.inl.cuh || return 1
  mutate "$work/wgm/src.cu" "$work/wgm/mut.cu" "$5" "$6" || return 1
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$work/wgm/mut.cu" "$work/wgm/kernel.inc" || return 1
  build_wg "$work/wgm" 128 128 4 "$1" || return 1
  if [ "$1" = 1 ]; then args="130 140 $((10 * 128)) 140 0 $3 $4 segs=5"
  else args="197 137 $((10 * 128)) 139 1 $3 $4"; fi
  # shellcheck disable=SC2086
  if "$work/wgm/emu" $args >"$work/wgm/log" 2>&1; then
    echo "FAIL: the emulator did not detect the wgmma mutant: $2"; return 1
  fi
  echo "wgmma mutant detected, as it must be: $2 ($(caught "$work/wgm/log"))"
}
wg_mutant "no fence.proxy.async" 1 0 "    hot_fence_proxy_async();" "" || fail=1
wg_mutant "no barrier per K tile" 1 0 "    __syncthreads();" "" || fail=1
wg_mutant "two wgmma groups in flight" 0 1 "hot_wgmma_wait<1>();" "hot_wgmma_wait<2>();" || fail=1
wg_mutant "prefetch one stage too far" 0 1 "#define HOT_LEAD (HOT_STAGES - 2)" "#define HOT_LEAD (HOT_STAGES - 1)" || fail=1
wg_mutant "no final wait" 1 1 "  hot_wgmma_wait<0>();
  hot_acc_fence(acc);
  hot_cp_async_wait<0>();" "  hot_acc_fence(acc);
  hot_cp_async_wait<0>();" || fail=1
wg_mutant "K step of 16 bytes" 1 0 "hot_wgmma_desc(ta + 32 * k)" "hot_wgmma_desc(ta + 16 * k)" || fail=1
wg_mutant "stages aligned to 128 only" 1 0 "& ~1023u;" "& ~127u;" || fail=1
wg_mutant "64B swizzle descriptor" 1 0 "(1ull << 62)" "(2ull << 62)" || fail=1
wg_seg_mutant "segment end without wgmma.wait_group 0" 1 1 "  hot_wgmma_wait<0>();
  hot_acc_fence(acc);
  const int seg_tiles" "  const int seg_tiles" || fail=1
wg_seg_mutant "accumulators not zeroed at a segment end" 0 0 "  for (int i = 0; i < HOT_NREG; ++i) acc[i] = 0;
  seg_end" "  seg_end" || fail=1

# bias.cu against the summation order of templates/bias_ref.c (its __shared__ array made static:
# the emulated block's threads share it; blocks run one after another)
build_bias() { # SRC DTYPE -> $work/bias_emu
  sed 's/__shared__ float part/static float part/' "$1" >"$work/bias.inc"
  grep -q 'static float part' "$work/bias.inc" || { echo "FAIL: bias.cu shared array not found"; return 1; }
  $CXX -std=c++17 -O2 -ffp-contract=off -I"$work" "${EMU_INC[@]}" -DHOT_GENERATED \
    -DHOT_KNAME=emu_bias -DHOT_DTYPE="$2" "$here/tools/gemm-emu/bias_emu.cpp" -o "$work/bias_emu" ||
    { echo "FAIL build: bias_emu dtype $2"; return 1; }
}
for dt in 0 1 2; do
  build_bias "$here/templates/bias.cu" $dt || { fail=1; continue; }
  # 16700 tokens = 66 chunks of 256: two rounds of the 64 slots, so both partial buffers serve
  for sz in "1 1" "0 5" "197 100" "2100 70" "4099 33" "16700 9"; do
    # shellcheck disable=SC2086
    "$work/bias_emu" $sz || fail=1
  done
done
bias_mutant() { # WHAT ANCHOR REPLACEMENT
  mutate "$here/templates/bias.cu" "$work/bias_mut.cu" "$2" "$3" || return 1
  build_bias "$work/bias_mut.cu" 0 || return 1
  if "$work/bias_emu" 16700 9 >"$work/bias.log" 2>&1; then
    echo "FAIL: the emulator did not detect the bias mutant: $1"; return 1
  fi
  echo "bias mutant detected, as it must be: $1 ($(caught "$work/bias.log"))"
}
bias_mutant "no barrier between the partials and the fold" \
  "    part[j & 1][slot][lane] = p;
    __syncthreads();" "    part[j & 1][slot][lane] = p;" || fail=1
bias_mutant "one partial buffer instead of two" "part[j & 1][slot][lane] = p;" "part[0][slot][lane] = p;" || fail=1

# gemm_int.cu: the emulator must notice a broken pipeline in each copy mode named.
gemm_mutant() { # WHAT CP_MODES ANCHOR REPLACEMENT [ANCHOR REPLACEMENT ...]
  local what=$1 modes=$2
  shift 2
  gemm_mutant_run "0 128 128 64 2 2 3 0" "$what" "$modes" "1" "$@"
}
# segmented (HOT_SEGS=1): RUN = the sizes and segments after M N Kpad ldc use_rs cp_late
gemm_seg_mutant() { # WHAT TK SEGS ANCHOR REPLACEMENT [ANCHOR REPLACEMENT ...]
  local what=$1 tk=$2 segs=$3 cfg="0 128 128 64 2 2 3 1"
  shift 3
  [ "$tk" = 96 ] && cfg="0 128 128 96 2 4 3 1"
  gemm_mutant_run "$cfg" "$what" 1 "$tk $segs" "$@"
}
gemm_mutant_run() { # "CODES TM TN TK WM WN STAGES SEGS" WHAT CP_MODES ARGS ANCHOR REPLACEMENT ...
  local cfg=$1 what=$2 modes=$3 args=$4
  shift 4
  mutate "$here/templates/gemm_int.cu" "$work/mut.cu" "$@" || return 1
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$work/mut.cu" "$work/kernel.inc" || return 1
  # shellcheck disable=SC2086
  set -- $cfg
  $CXX -std=c++17 -O2 -I"$work" "${EMU_INC[@]}" -DHOT_GENERATED -DHOT_KNAME=emu_mutant \
    -DHOT_CODES=$1 -DHOT_TILE_M=$2 -DHOT_TILE_N=$3 -DHOT_TILE_K=$4 -DHOT_WARPS_M=$5 -DHOT_WARPS_N=$6 \
    -DHOT_STAGES=$7 -DHOT_SEGS=$8 "$here/tools/gemm-emu/emu.cpp" -o "$work/emu" 2>"$work/cc.log" ||
    { echo "FAIL build: gemm mutant $what"; head -30 "$work/cc.log"; return 1; }
  local late rc=0 run segmented=$8
  for late in $modes; do
    if [ "$segmented" = 1 ]; then # args = "TK SEGS": Kpad = 10 K tiles in SEGS segments
      # shellcheck disable=SC2086
      set -- $args
      run="197 137 $((10 * $1)) 139 0 $late segs=$2"
    else
      run="197 137 640 139 1 $late"
    fi
    # shellcheck disable=SC2086
    if "$work/emu" $run >"$work/mut.log" 2>&1; then
      echo "FAIL: the emulator did not detect the mutant: $what (cp late=$late)"; rc=1
    else
      echo "mutant detected, as it must be: $what (cp late=$late; $(caught "$work/mut.log"))"
    fi
  done
  return $rc
}
gemm_mutant "no K-tile barrier" "1 0" "      __syncthreads();
      s.rd" "      s.rd" || fail=1
gemm_mutant "wait_group one group too weak" 1 "      hot_cp_async_wait<HOT_STAGES - 2>();
      __syncthreads();
      s.rd" "      hot_cp_async_wait<HOT_STAGES - 1>();
      __syncthreads();
      s.rd" || fail=1
# segment ends (HOT_SEGS=1), 10 K tiles in 5 segments unless said otherwise
gemm_seg_mutant "accumulators not zeroed at a segment end" 64 5 \
  "  hot_acc_zero(s);
  seg_end" "  seg_end" || fail=1
gemm_seg_mutant "segment converted one K tile late" 64 5 \
  "if (kt + 1 != seg_end || kt + 1 >= x.ktiles) return;" "if (kt != seg_end || kt >= x.ktiles) return;" || fail=1
gemm_seg_mutant "scale of the next segment (index off by one)" 64 5 \
  "hot_epilogue_alpha(alpha_a + seg, alpha_b ? alpha_b + seg : nullptr, alpha_div);" \
  "hot_epilogue_alpha(alpha_a + seg + 1, alpha_b ? alpha_b + seg + 1 : nullptr, alpha_div);" || fail=1
gemm_seg_mutant "first segment added to what C held" 64 5 \
  "hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, seg > 0);" \
  "hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, true);" || fail=1
gemm_seg_mutant "later segments stored over the running sum" 64 5 \
  "hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, seg > 0);" \
  "hot_epilogue(s.acc, C, nullptr, c, mb, nb, M, N, ldc, vec, false);" || fail=1
# the same sums and scales, added in reverse segment order: only fp32 rounding tells (3+ segments)
gemm_seg_mutant "segments added in reverse order" 64 5 \
  "const long long koff = (long long)kt * HOT_KB;" "const long long koff = (long long)(x.ktiles - 1 - kt) * HOT_KB;" \
  "seg = seg_end / seg_tiles - 1;" "seg = x.ktiles / seg_tiles - seg_end / seg_tiles;" \
  "N, ldc, vec, seg > 0);" "N, ldc, vec, seg_end > seg_tiles);" \
  "seg_end / (seg_kpad / HOT_TILE_K) - 1" "x.ktiles / (seg_kpad / HOT_TILE_K) - seg_end / (seg_kpad / HOT_TILE_K)" \
  "HOT_SEGS && seg > 0);" "HOT_SEGS && seg_end > seg_kpad / HOT_TILE_K);" || fail=1
# 3 K steps a tile: a segment that ends on the second tile of a pair (segments of 1 K tile)
gemm_seg_mutant "no segment end after the second tile of an odd-K-step pair" 96 10 \
  "      hot_ktile<1>(x, s, kt);
      if (HOT_SEGS)
        hot_seg_boundary(x, s, kt, seg_end, C, alpha_a, alpha_b, alpha_div, M, N, ldc, seg_kpad);" \
  "      hot_ktile<1>(x, s, kt);" || fail=1

# The overflow flag (CONTRACT 19): mutants of the epilogue's checks, each built from the template
# with hot_gemm.cuh inlined (so that an anchor may lie in either) and run on an edge that must
# fail: the flag not raised for an output that is not finite, or raised although all are finite.
flag_mutant() { # int|wgmma SEGS WHAT RUN ANCHOR REPLACEMENT [ANCHOR REPLACEMENT ...]
  local kind=$1 segs=$2 what=$3 run=$4 src=$here/templates/gemm_int.cu
  shift 4
  mkdir -p "$work/fm"
  if [ "$kind" = wgmma ]; then # the epilogue is hot_sm90.inl.cuh's
    inline_h "$here/templates/gemm_wgmma.cu" "$work/fm/src.cu" hot_sm90.inl.cuh || return 1
    src=$work/fm/src.cu
  fi
  inline_h "$src" "$work/fm/inl.cu" hot_gemm.cuh || return 1
  mutate "$work/fm/inl.cu" "$work/fm/mut.cu" "$@" || return 1
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$work/fm/mut.cu" "$work/fm/kernel.inc" || return 1
  if [ "$kind" = wgmma ]; then
    build_wg "$work/fm" 128 128 4 "$segs" || return 1
  else
    $CXX -std=c++17 -O2 -I"$work/fm" "${EMU_INC[@]}" -DHOT_GENERATED -DHOT_KNAME=emu_flag_mutant \
      -DHOT_CODES=0 -DHOT_TILE_M=128 -DHOT_TILE_N=128 -DHOT_TILE_K=64 -DHOT_WARPS_M=2 \
      -DHOT_WARPS_N=2 -DHOT_STAGES=3 -DHOT_SEGS="$segs" "$here/tools/gemm-emu/emu.cpp" \
      -o "$work/fm/emu" 2>"$work/fm/cc.log" ||
      { echo "FAIL build: flag mutant $what"; head -30 "$work/fm/cc.log"; return 1; }
  fi
  # shellcheck disable=SC2086
  if "$work/fm/emu" $run >"$work/fm/log" 2>&1; then
    echo "FAIL: the emulator did not detect the $kind overflow-flag mutant: $what"; return 1
  fi
  echo "$kind overflow-flag mutant detected, as it must be: $what ($(caught "$work/fm/log"))"
}
# gemm_int.cu (128x128x64, 2x2 warps): output (98, 136) past FLT_MAX through row 98's scale;
# column 136 is the thread's second column pair of its row in that tile
flag_mutant int 0 "no row check" "197 137 640 139 1 1 over=0" \
  "        hot_row_range_check(amax, factor);" "" || fail=1
flag_mutant int 0 "row check with alpha instead of the row's factor" "197 137 640 139 1 1 over=0" \
  "        hot_row_range_check(amax, factor);" "        hot_row_range_check(amax, alpha);" || fail=1
flag_mutant int 0 "row maximum over the first column pair only" "197 137 640 139 1 1 over=0" \
  "          amax = hot_row_amax_pair(amax, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
        hot_row_range_check(amax, factor);" \
  "          if (ni == 0) amax = hot_row_amax_pair(amax, acc[mi][ni][2 * h], acc[mi][ni][2 * h + 1]);
        }
        hot_row_range_check(amax, factor);" || fail=1
flag_mutant int 0 "row check one ulp high (a false alarm just below FLT_MAX)" "197 137 640 139 1 1 under=0" \
  "  HOT_RANGE_CHECK(HOT_MUL(amax, fabsf(factor)));" \
  "  HOT_RANGE_CHECK(HOT_MUL(HOT_MUL(amax, 1.00000012f), fabsf(factor)));" || fail=1
# segmented (hot_store_or_add_pair, shared by the three templates): an added sum past FLT_MAX
# (segment 2 of 5), then the plain store of a single segment
flag_mutant int 1 "segmented: vector stores of added sums not checked" "130 70 640 70 0 1 segs=5 over=2" \
  "      v1 = HOT_ADD(old.y, v1);
    }
    HOT_RANGE_CHECK(v0);
    HOT_RANGE_CHECK(v1);" "      v1 = HOT_ADD(old.y, v1);
    }" || fail=1
flag_mutant int 1 "segmented: scalar stores not checked (ldc odd)" "130 69 384 69 0 1 segs=1 over=0" \
  "      if (add) v0 = HOT_ADD(crow[n], v0);
      HOT_RANGE_CHECK(v0);" "      if (add) v0 = HOT_ADD(crow[n], v0);" \
  "      if (add) v1 = HOT_ADD(crow[n + 1], v1);
      HOT_RANGE_CHECK(v1);" "      if (add) v1 = HOT_ADD(crow[n + 1], v1);" || fail=1
# gemm_wgmma.cu (128x128, 4 stages)
flag_mutant wgmma 0 "no row check" "197 137 384 139 1 1 1 over=0" \
  "      hot_row_range_check(amax, factor);" "" || fail=1
flag_mutant wgmma 0 "row check with alpha instead of the row's factor" "197 137 384 139 1 1 1 over=0" \
  "      hot_row_range_check(amax, factor);" "      hot_row_range_check(amax, alpha);" || fail=1

echo "gemm-emu: $((SECONDS - start)) s"
if [ $fail = 0 ]; then echo "gemm-emu: all OK"; else echo "gemm-emu: FAILED"; fi
exit $fail
