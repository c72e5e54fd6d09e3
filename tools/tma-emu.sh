#!/usr/bin/env bash
# tma-emu.sh — run templates/gemm_tma.cu (TMA loads, mbarrier ring, producer / consumer
# warpgroups, persistent schedule) in the CPU emulator of tools/tma-emu/tma_emu.cpp for several
# tile configurations and awkward sizes (M, N not multiples of the tile; K of 0 .. 9 K tiles;
# grids of fewer CTAs than tiles, so every CTA runs several tiles through the same ring), also
# segmented (HOT_SEGS = 1) with 1, 2, 3 and 5 segments, comparing with a reference GEMM bit for
# bit; then mutants of the kernel that the emulator must catch (a wrong result, or an error it
# reports: a deadlock, a race on a stage). Every check runs under the deterministic schedules of
# tools/kernel-emu/emu_sched.h (EMU_SEEDS, default "0 1 2 3"); a mutant counts as caught when
# some schedule or check fails it, and then fails it on every run.
# The overflow flag of CONTRACT.md 19 is checked by every run (raised exactly when some output is
# not finite), at the edge of fp32 by the over=J / under=J runs and by mutants of the epilogue's
# checks (as in tools/gemm-emu.sh).
# Three completion modes: TMA by the TMA fiber + wgmma late (at the wait_group retiring it), TMA
# at issue + wgmma at issue, TMA at issue + wgmma late.
# Needs python3 and a C++17 compiler (CXX, default g++; PYTHON, default python3). One build at a
# time. Usage: tools/tma-emu.sh
set -u
case "${1:-}" in
  "") ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "tma-emu: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
CXX=${CXX:-g++}
PY=${PYTHON:-python3}
. "$here/tools/lib/num.sh" # the one parser of numbers: the emulators get the seeds in decimal
EMU_SEEDS=$(num_list EMU_SEEDS "${EMU_SEEDS:-0 1 2 3}" 0 1000000000000000000 2>&1) || { echo "tma-emu: $EMU_SEEDS" >&2; exit 2; }
export EMU_SEEDS
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-tma-emu.XXXXXX")
trap 'rm -rf "$work"' EXIT
start=$SECONDS
fail=0
echo "tma-emu: schedules EMU_SEEDS='$EMU_SEEDS'"

# build DIR SRC TM TN STAGES SEGS -> DIR/emu (the shared window starts 256 bytes off a 1024
# boundary: the kernel must align its stages itself)
build() {
  local dir=$1 src=$2 sfx=""
  [ "$6" = 1 ] && sfx=_seg
  mkdir -p "$dir"
  "$PY" "$here/tools/tma-emu/mktma.py" "$src" "$dir/kernel.inc" || { echo "FAIL: mktma $src"; return 1; }
  $CXX -std=c++17 -O2 -Wno-psabi -I"$dir" -I"$here/templates" -I"$here/tools/kernel-emu" \
    -DHOT_GENERATED -DHOT_KNAME="emu_tma_$3x$4_s$5$sfx" -DHOT_CODES=0 -DHOT_TILE_M="$3" \
    -DHOT_TILE_N="$4" -DHOT_TILE_K=128 -DHOT_WARPS_M=$(($3 / 16)) -DHOT_WARPS_N=1 \
    -DHOT_STAGES="$5" -DHOT_SEGS="$6" -DEMU_SMEM_SKEW=256 "$here/tools/tma-emu/tma_emu.cpp" \
    -o "$dir/emu" 2>"$dir/cc.log" ||
    { echo "FAIL build: $3x$4 s$5 segs $6"; head -30 "$dir/cc.log"; return 1; }
}
T="$here/templates/gemm_tma.cu"

# ---- the kernel as shipped ---------------------------------------------------------------------
# tile_m tile_n stages: one and two consumer warpgroups, every N, 2 .. 5 stages
for cfg in "64 64 2" "64 256 4" "128 128 4" "128 256 3" "128 64 5"; do
  # shellcheck disable=SC2086
  set -- $cfg
  build "$work/k" "$T" "$1" "$2" "$3" 0 || { fail=1; continue; }
  for mode in "0 1" "1 0" "1 1"; do
    # shellcheck disable=SC2086
    {
      "$work/k/emu" 197 137 $((3 * 128)) 139 1 $mode sms=3 || fail=1  # ragged, odd ldc, row scale
      "$work/k/emu" 130 300 $((9 * 128)) 300 0 $mode sms=2 || fail=1  # 9 K tiles: stages reused
    }
  done
  "$work/k/emu" 1 9 128 10 1 0 1 || fail=1                      # one row, one K tile
  "$work/k/emu" 33 17 0 20 0 0 1 || fail=1                      # Kpad 0: C = 0
  "$work/k/emu" 200 70 $((5 * 128)) 70 0 0 1 sms=1 || fail=1    # one CTA runs every tile
  "$work/k/emu" 129 257 $((2 * 128)) 258 1 0 1 sms=132 || fail=1 # more SMs than tiles
  # the overflow flag at the edge (row scale: row 35's; none: alpha), output (35, 136)
  "$work/k/emu" 70 137 $((2 * 128)) 139 1 0 1 over=0 || fail=1
  "$work/k/emu" 70 137 $((2 * 128)) 139 1 0 1 under=0 || fail=1
  "$work/k/emu" 70 137 $((2 * 128)) 139 0 0 1 over=0 || fail=1
done

# Determinism: two runs of the same schedules give the same interleavings and results, and the
# schedules differ from one another.
"$work/k/emu" 130 300 $((9 * 128)) 300 0 0 1 sms=2 >"$work/det1" 2>&1
"$work/k/emu" 130 300 $((9 * 128)) 300 0 0 1 sms=2 >"$work/det2" 2>&1
ntr=$(grep -o 'trace [0-9a-f]*' "$work/det1" | sort -u | wc -l)
if cmp -s "$work/det1" "$work/det2" && [ "$ntr" -eq "$(echo $EMU_SEEDS | wc -w)" ]; then
  echo "determinism: two runs of the same schedules gave identical interleavings and results ($ntr distinct schedules)"
else
  echo "FAIL: determinism: two runs differ, or schedules coincide"; diff "$work/det1" "$work/det2" | head; fail=1
fi

# segmented (HOT_SEGS = 1): 1, 2, 3 and 5 segments, of one K tile and of several
for cfg in "128 128 4" "64 64 3" "128 256 4"; do
  # shellcheck disable=SC2086
  set -- $cfg
  build "$work/k" "$T" "$1" "$2" "$3" 1 || { fail=1; continue; }
  for mode in "0 1" "1 0" "1 1"; do
    # shellcheck disable=SC2086
    {
      "$work/k/emu" 197 137 $((3 * 128)) 139 0 $mode segs=3 sms=3 || fail=1 # segments of 1 K tile
      "$work/k/emu" 130 140 $((10 * 128)) 140 0 $mode segs=5 sms=2 || fail=1 # 5 segments of 2
    }
  done
  "$work/k/emu" 1 9 $((6 * 128)) 10 0 0 1 segs=2 || fail=1   # 2 segments of 3 K tiles
  "$work/k/emu" 64 64 $((3 * 128)) 64 0 0 1 segs=1 || fail=1 # one segment: the plain GEMM
  "$work/k/emu" 33 17 0 20 0 0 1 segs=1 || fail=1            # Kpad 0: C = 0 * c_0
  # the overflow flag at the edge: segment 2 of 5 (an added sum), the only segment (a plain store)
  "$work/k/emu" 70 137 $((5 * 128)) 139 0 0 1 segs=5 over=2 || fail=1
  "$work/k/emu" 70 137 $((5 * 128)) 139 0 0 1 segs=5 under=2 || fail=1
  "$work/k/emu" 70 137 $((2 * 128)) 139 0 0 1 segs=1 over=0 || fail=1
done

# ---- mutants -------------------------------------------------------------------------------------
# shellcheck source=tools/emu-common.sh
. "$here/tools/emu-common.sh"
# mutate SRC DST ANCHOR REPLACEMENT [...]: each anchor must occur exactly once in the source
mutate() {
  "$PY" - "$@" <<'PY'
import sys
s = open(sys.argv[1]).read()
for a, r in zip(sys.argv[3::2], sys.argv[4::2]):
    n = s.count(a)
    if n != 1:
        sys.exit("tma-emu: mutation anchor found %d times, not once: %r (update tools/tma-emu.sh)"
                 % (n, a))
    s = s.replace(a, r, 1)
open(sys.argv[2], "w").write(s)
PY
}
# mutant SEGS WHAT ANCHOR REPLACEMENT: built at 128x128, 4 stages, run in the three completion
# modes; caught when at least one of them fails (the modes that did are listed)
mutant() {
  local segs=$1 what=$2 args mode caught_in="" log
  inline_h "$T" "$work/m/src.cu" hot_sm90.inl.cuh || return 1
  mutate "$work/m/src.cu" "$work/m/mut.cu" "$3" "$4" 2>"$work/m.err" || { cat "$work/m.err"; return 1; }
  build "$work/m" "$work/m/mut.cu" 128 128 4 "$segs" || return 1
  if [ "$segs" = 1 ]; then args="130 140 $((10 * 128)) 140 0"; else args="197 137 $((10 * 128)) 139 1"; fi
  for mode in "0 1" "1 0" "1 1"; do
    log="$work/m/log.${mode/ /}"
    # shellcheck disable=SC2086
    if ! "$work/m/emu" $args $mode $([ "$segs" = 1 ] && echo segs=5) sms=2 >"$log" 2>&1; then
      caught_in="$caught_in [tma=$([ "${mode% *}" = 1 ] && echo early || echo unit) wgmma=$([ "${mode#* }" = 1 ] && echo late || echo early): $(caught "$log")]"
    fi
  done
  if [ -z "$caught_in" ]; then
    echo "FAIL: the emulator did not detect the mutant: $what"; return 1
  fi
  echo "mutant detected, as it must be: $what;$caught_in"
}
mkdir -p "$work/m"
mutant 0 "no expect_tx (plain arrive on the full barrier)" \
  "hot_mbar_arrive_expect_tx(hot_full(bars, s), HOT_STAGE_BYTES);" "hot_mbar_arrive(hot_full(bars, s));" || fail=1
mutant 0 "consumer waits on the full barrier with the wrong parity" \
  "hot_mbar_wait(hot_full(bars, s), ph);" "hot_mbar_wait(hot_full(bars, s), ph ^ 1u);" || fail=1
mutant 0 "producer waits on the empty barrier with the wrong parity (deadlock)" \
  "hot_mbar_wait(hot_empty(bars, s), ph ^ 1u);" "hot_mbar_wait(hot_empty(bars, s), ph);" || fail=1
mutant 0 "stage released (empty arrive) before the wait_group that retires its wgmmas" \
  "      hot_wgmma_wait<1>();
      if (pend >= 0) hot_tma_release(bars, pend, lane);
      pend = s;" "      hot_tma_release(bars, s, lane);
      hot_wgmma_wait<1>();
      pend = -1;" || fail=1
mutant 0 "producer a stage ahead of the empty barrier (loads before the empty wait)" \
  "        hot_mbar_wait(hot_empty(bars, s), ph ^ 1u);
        const unsigned st = smem + (unsigned)s * HOT_STAGE_BYTES;
        hot_mbar_arrive_expect_tx(hot_full(bars, s), HOT_STAGE_BYTES);
        hot_tma_load_2d(st, &tmap_a, kt * HOT_KB, m0, hot_full(bars, s));
        hot_tma_load_2d(st + HOT_A_BYTES, &tmap_b, kt * HOT_KB, n0, hot_full(bars, s));" \
  "        const unsigned st = smem + (unsigned)s * HOT_STAGE_BYTES;
        hot_mbar_arrive_expect_tx(hot_full(bars, s), HOT_STAGE_BYTES);
        hot_tma_load_2d(st, &tmap_a, kt * HOT_KB, m0, hot_full(bars, s));
        hot_tma_load_2d(st + HOT_A_BYTES, &tmap_b, kt * HOT_KB, n0, hot_full(bars, s));
        hot_mbar_wait(hot_empty(bars, s), ph ^ 1u);" || fail=1
mutant 0 "tensor map without swizzle under the 128B-swizzle wgmma descriptors" \
  "#define HOT_TMA_SWIZZLE 3 " "#define HOT_TMA_SWIZZLE 0 " || fail=1
mutant 0 "tensor map with the 64B swizzle (box rows wider than its span)" \
  "#define HOT_TMA_SWIZZLE 3 " "#define HOT_TMA_SWIZZLE 2 " || fail=1
mutant 0 "no wgmma.wait_group 0 before the epilogue" \
  "    hot_wgmma_wait<0>();
    hot_acc_fence(acc);
    if (pend >= 0)" "    hot_acc_fence(acc);
    if (pend >= 0)" || fail=1
mutant 0 "empty barrier counting one consumer warp too few" \
  "#define HOT_EMPTY_COUNT (4 * HOT_WGS)" "#define HOT_EMPTY_COUNT (4 * HOT_WGS - 1)" || fail=1
mutant 0 "stages aligned to 128 bytes only" "& ~1023u;" "& ~127u;" || fail=1
mutant 0 "producer keeps 48 registers: the consumers' setmaxnreg.inc finds too few in the pool" \
  "#define HOT_REG_PRODUCER 40" "#define HOT_REG_PRODUCER 48" || fail=1
mutant 1 "accumulators not zeroed at a segment end" \
  "  for (int i = 0; i < HOT_NREG; ++i) acc[i] = 0;
  seg_end += seg_tiles;" "  seg_end += seg_tiles;" || fail=1
mutant 1 "segment end without wgmma.wait_group 0" \
  "  if (kt + 1 != seg_end || kt + 1 >= ktiles) return;
  hot_wgmma_wait<0>();
  hot_acc_fence(acc);" "  if (kt + 1 != seg_end || kt + 1 >= ktiles) return;
  hot_acc_fence(acc);" || fail=1

# overflow-flag mutants (CONTRACT 19): run once on an edge that must fail
flag_mutant() { # SEGS WHAT RUN ANCHOR REPLACEMENT
  local segs=$1 what=$2 run=$3
  inline_h "$T" "$work/m/src.cu" hot_sm90.inl.cuh || return 1
  mutate "$work/m/src.cu" "$work/m/mut.cu" "$4" "$5" 2>"$work/m.err" || { cat "$work/m.err"; return 1; }
  build "$work/m" "$work/m/mut.cu" 128 128 4 "$segs" || return 1
  # shellcheck disable=SC2086
  if "$work/m/emu" $run >"$work/m/log" 2>&1; then
    echo "FAIL: the emulator did not detect the overflow-flag mutant: $what"; return 1
  fi
  echo "overflow-flag mutant detected, as it must be: $what ($(caught "$work/m/log"))"
}
flag_mutant 0 "no row check" "197 137 384 139 1 0 1 over=0" \
  "      hot_row_range_check(amax, factor);" "" || fail=1
flag_mutant 0 "row check with alpha instead of the row's factor" "197 137 384 139 1 0 1 over=0" \
  "      hot_row_range_check(amax, factor);" "      hot_row_range_check(amax, alpha);" || fail=1

echo "tma-emu: $((SECONDS - start)) s"
if [ $fail = 0 ]; then echo "tma-emu: all OK"; else echo "tma-emu: FAILED"; fi
exit $fail
