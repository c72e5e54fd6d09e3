#!/usr/bin/env bash
# gemm-emu.sh — run templates/gemm_int.cu, templates/gemm_wgmma.cu and templates/bias.cu in the CPU
# SIMT emulator (tools/gemm-emu/emu.cpp, bias_emu.cpp) for several tile configurations and
# awkward sizes, comparing with a reference GEMM / bias sum bit for bit, plus mutants the
# emulator must catch.
# Every check runs under the deterministic schedules of tools/kernel-emu/emu_sched.h (EMU_SEEDS,
# default "0 1 2 3": lowest-first, highest-first, warp priorities, random): the same seeds give
# the same interleavings and results on every run, at any machine load. A mutant counts as caught
# when at least one schedule fails it; being deterministic, it is then caught on every run.
# Checks the kernel's own index arithmetic and pipeline order without a GPU (see emu.cpp for what
# it cannot check). Needs python3 and a C++17 compiler (CXX, default g++; PYTHON, default python3). One build at a time.
# Usage: tools/gemm-emu.sh            (prints one line per configuration and schedule, flushed)
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
export EMU_SEEDS=${EMU_SEEDS:-0 1 2 3}
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
  defs="$defs -DHOT_TILE_N=$3 -DHOT_TILE_K=$4 -DHOT_WARPS_M=$5 -DHOT_WARPS_N=$6 -DHOT_STAGES=$7"
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
# gemm_wgmma.cu (sm_90a): the shared window starts 256 bytes off a 1024 boundary (the kernel aligns
# its stages itself). Three completion modes: copies late + wgmma early (a stage read before it
# landed), copies early + wgmma late (a stage overwritten under a pending wgmma; accumulators
# read early), both late.
mkdir -p "$work/wg"
"$PY" "$here/tools/gemm-emu/mkemu.py" "$here/templates/gemm_wgmma.cu" "$work/wg/kernel.inc" || exit 1
# build_wg DIR TM TN STAGES -> DIR/emu
build_wg() {
  $CXX -std=c++17 -O2 -I"$1" "${EMU_INC[@]}" -DHOT_GENERATED \
    -DHOT_KNAME=emu_wgmma_$2x$3_s$4 -DHOT_CODES=0 -DHOT_TILE_M=$2 -DHOT_TILE_N=$3 -DHOT_TILE_K=128 \
    -DHOT_WARPS_M=$(($2 / 16)) -DHOT_WARPS_N=1 -DHOT_STAGES=$4 -DEMU_WGMMA -DEMU_SMEM_SKEW=256 \
    "$here/tools/gemm-emu/emu.cpp" -o "$1/emu" 2>"$1/cc.log" ||
    { echo "FAIL build: wgmma $2x$3 s$4"; head -30 "$1/cc.log"; return 1; }
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
done

# shellcheck source=tools/emu-common.sh
. "$here/tools/emu-common.sh"
# mutate SRC DST ANCHOR REPLACEMENT: DST = SRC with the first ANCHOR replaced
mutate() {
  "$PY" - "$@" <<'PY'
import sys
s = open(sys.argv[1]).read()
if sys.argv[3] not in s:
    sys.exit("gemm-emu: mutation anchor not found: %r (update tools/gemm-emu.sh)" % sys.argv[3])
open(sys.argv[2], "w").write(s.replace(sys.argv[3], sys.argv[4], 1))
PY
}

# Mutants of gemm_wgmma.cu: each must fail in the completion mode named (anchor -> replacement).
wg_mutant() { # WHAT CP_LATE WG_LATE ANCHOR REPLACEMENT
  mkdir -p "$work/wgm"
  mutate "$here/templates/gemm_wgmma.cu" "$work/wgm/mut.cu" "$4" "$5" || return 1
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$work/wgm/mut.cu" "$work/wgm/kernel.inc" || return 1
  build_wg "$work/wgm" 128 128 4 || return 1
  if "$work/wgm/emu" 197 137 $((10 * 128)) 139 1 "$2" "$3" >"$work/wgm/log" 2>&1; then
    echo "FAIL: the emulator did not detect the wgmma mutant: $1"; return 1
  fi
  echo "wgmma mutant detected, as it must be: $1 ($(caught "$work/wgm/log"))"
}
wg_mutant "no fence.proxy.async" 1 0 "    hot_fence_proxy_async();" "" || fail=1
wg_mutant "no barrier per K tile" 1 0 "    __syncthreads();" "" || fail=1
wg_mutant "two wgmma groups in flight" 0 1 "hot_wgmma_wait<1>();" "hot_wgmma_wait<2>();" || fail=1
wg_mutant "prefetch one stage too far" 0 1 "#define HOT_LEAD (HOT_STAGES - 2)" "#define HOT_LEAD (HOT_STAGES - 1)" || fail=1
wg_mutant "no final wait" 1 1 "  hot_wgmma_wait<0>();" "" || fail=1
wg_mutant "K step of 16 bytes" 1 0 "hot_wgmma_desc(ta + 32 * k)" "hot_wgmma_desc(ta + 16 * k)" || fail=1
wg_mutant "stages aligned to 128 only" 1 0 "& ~1023u;" "& ~127u;" || fail=1
wg_mutant "64B swizzle descriptor" 1 0 "(1ull << 62)" "(2ull << 62)" || fail=1

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
  for sz in "1 1" "0 5" "197 100" "2100 70" "4099 33"; do
    # shellcheck disable=SC2086
    "$work/bias_emu" $sz || fail=1
  done
done
bias_mutant() { # WHAT ANCHOR REPLACEMENT
  mutate "$here/templates/bias.cu" "$work/bias_mut.cu" "$2" "$3" || return 1
  build_bias "$work/bias_mut.cu" 0 || return 1
  if "$work/bias_emu" 4099 70 >"$work/bias.log" 2>&1; then
    echo "FAIL: the emulator did not detect the bias mutant: $1"; return 1
  fi
  echo "bias mutant detected, as it must be: $1 ($(caught "$work/bias.log"))"
}
bias_mutant "no barrier between the partials and the fold" \
  "    part[j & 1][warp][lane] = p;
    __syncthreads();" "    part[j & 1][warp][lane] = p;" || fail=1
bias_mutant "one partial buffer instead of two" "part[j & 1][warp][lane] = p;" "part[0][warp][lane] = p;" || fail=1

# gemm_int.cu: the emulator must notice a broken pipeline in each copy mode named.
gemm_mutant() { # WHAT CP_MODES ANCHOR REPLACEMENT
  mutate "$here/templates/gemm_int.cu" "$work/mut.cu" "$3" "$4" || return 1
  "$PY" "$here/tools/gemm-emu/mkemu.py" "$work/mut.cu" "$work/kernel.inc" || return 1
  $CXX -std=c++17 -O2 -I"$work" "${EMU_INC[@]}" -DHOT_GENERATED -DHOT_KNAME=emu_mutant \
    -DHOT_CODES=0 -DHOT_TILE_M=128 -DHOT_TILE_N=128 -DHOT_TILE_K=64 -DHOT_WARPS_M=2 -DHOT_WARPS_N=2 \
    -DHOT_STAGES=3 "$here/tools/gemm-emu/emu.cpp" -o "$work/emu" 2>"$work/cc.log" ||
    { echo "FAIL build: gemm mutant $1"; head -30 "$work/cc.log"; return 1; }
  local late rc=0
  for late in $2; do
    if "$work/emu" 197 137 640 139 1 $late >"$work/mut.log" 2>&1; then
      echo "FAIL: the emulator did not detect the mutant: $1 (cp late=$late)"; rc=1
    else
      echo "mutant detected, as it must be: $1 (cp late=$late; $(caught "$work/mut.log"))"
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

echo "gemm-emu: $((SECONDS - start)) s"
if [ $fail = 0 ]; then echo "gemm-emu: all OK"; else echo "gemm-emu: FAILED"; fi
exit $fail
