#!/usr/bin/env bash
# gemm-emu.sh — run templates/gemm_int.cu (and templates/bias.cu) in the CPU SIMT emulator (tools/gemm-emu/emu.cpp) for
# several tile configurations and awkward sizes, comparing with a reference GEMM bit for bit.
# Checks the kernel's own index arithmetic and pipeline order without a GPU (see emu.cpp for what
# it cannot check). Needs python3 and a C++17 compiler (CXX, default g++). One build at a time.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-emu.XXXXXX")
trap 'rm -rf "$work"' EXIT
python3 "$here/tools/gemm-emu/mkemu.py" "$here/templates/gemm_int.cu" "$work/kernel.inc" || exit 1
fail=0
# codes tm tn tk wm wn stages | M N Kpad-multiplier
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
  for late in 1 0; do
    # shellcheck disable=SC2086
    if ! $CXX -std=c++17 -O2 -pthread -I"$work" -I"$here/templates" $defs -DEMU_CP_LATE=$late \
        "$here/tools/gemm-emu/emu.cpp" -o "$work/emu" 2>"$work/cc.log"; then
      echo "FAIL build: $cfg"; head -30 "$work/cc.log"; fail=1; continue
    fi
    # sizes: ragged M/N with odd and even ldc, row scale on/off, K of 0..8 tiles (enough tiles
    # that every stage is reused, so the jittered early-copy run can expose a WAR race)
    "$work/emu" 197 137 $((3 * tk)) 139 1 || fail=1
    "$work/emu" 130 70 $((8 * tk)) 70 0 || fail=1
    if [ $late = 1 ]; then
      "$work/emu" 1 9 $((1 * tk)) 10 1 || fail=1
      "$work/emu" 64 64 $((2 * tk)) 64 1 || fail=1
      "$work/emu" 33 17 0 20 0 || fail=1
    fi
  done
done
# bias.cu against the summation order of templates/bias_ref.c (its __shared__ array made static:
# the emulated block's threads share it; blocks run one after another)
sed 's/__shared__ float part/static float part/' "$here/templates/bias.cu" >"$work/bias.inc"
grep -q 'static float part' "$work/bias.inc" || { echo "FAIL: bias.cu shared array not found"; fail=1; }
for dt in 0 1 2; do
  if $CXX -std=c++17 -O2 -pthread -ffp-contract=off -I"$work" -I"$here/templates" -DHOT_GENERATED \
      -DHOT_KNAME=emu_bias -DHOT_DTYPE=$dt "$here/tools/gemm-emu/bias_emu.cpp" -o "$work/bias_emu"; then
    for sz in "1 1" "0 5" "197 100" "2100 70" "4099 33"; do
      # shellcheck disable=SC2086
      "$work/bias_emu" $sz || fail=1
    done
  else
    echo "FAIL build: bias_emu dtype $dt"; fail=1
  fi
done

# The emulator must notice a broken pipeline: drop the per-tile barrier and expect a failure.
python3 - "$here/templates/gemm_int.cu" "$work/mut.cu" <<'PY' || fail=1
import sys
s = open(sys.argv[1]).read()
a = "      __syncthreads();\n      s.rd"
if a not in s:
    sys.exit("gemm-emu: mutation anchor not found (update tools/gemm-emu.sh)")
open(sys.argv[2], "w").write(s.replace(a, "      s.rd", 1))
PY
python3 "$here/tools/gemm-emu/mkemu.py" "$work/mut.cu" "$work/kernel.inc" || fail=1
for late in 1 0; do
  $CXX -std=c++17 -O2 -pthread -I"$work" -I"$here/templates" -DHOT_GENERATED -DHOT_KNAME=emu_mutant \
    -DHOT_CODES=0 -DHOT_TILE_M=128 -DHOT_TILE_N=128 -DHOT_TILE_K=64 -DHOT_WARPS_M=2 -DHOT_WARPS_N=2 \
    -DHOT_STAGES=3 -DEMU_CP_LATE=$late "$here/tools/gemm-emu/emu.cpp" -o "$work/emu" || fail=1
  if "$work/emu" 197 137 640 139 1 >"$work/mut.log" 2>&1; then
    echo "FAIL: the emulator did not detect a missing barrier (cp late=$late)"; fail=1
  else
    echo "mutant without the K-tile barrier (cp late=$late): detected, as it must be"
  fi
done
if [ $fail = 0 ]; then echo "gemm-emu: all OK"; else echo "gemm-emu: FAILED"; fi
exit $fail
