#!/usr/bin/env bash
# tools/device-prep.sh — prepares, on a machine with a Debian package registry and NVRTC (no GPU
# needed), everything tools/device-check.sh needs on a GPU machine that has neither the registry
# nor time to spare: the Lua/Check packages (.deps/debs, tools/fetch-deps.sh) and the kernel
# cache .kcache-device holding every kernel the device check launches, compiled here for
# sm_90 and sm_90a (or --archs), so that the GPU machine compiles none. Both folders are
# ignored by git and must travel with the tree (the `carry` list: .deps/debs, .kcache-device).
#
# What fills the cache (HOT_CACHE_DIR=.kcache-device for all of them):
#   - every test labelled gpu (ctest -L gpu) run as `PROGRAM --precompile ARCHS`: the convention
#     of tests/gpu/README.md — a GPU test program compiles every kernel it would launch, for each
#     arch, into the cache of HOT_CACHE_DIR, without a driver, and exits 0;
#   - python/tests/test_torch.py --precompile ARCHS: the layers of its CUDA tests;
#   - hot-gen --compile ARCHS of specs/vit_b16.lua and specs/bench_large.lua (the plans hot-bench
#     runs; the same keys as the runtime's), and of vit_b16's qkv for sm_80 and sm_89 too (the
#     SASS step dumps those);
#   - hot-tune's speed sweep of specs/bench_large.lua for sm_90a without a budget (every variant
#     the device sweep can reach; without a GPU they are compiled and not timed);
#   - hot-bench specs/bench_large.lua --gemm-paths --precompile: the three GEMM paths of the
#     device check's "gemm paths" step (mma_s8 on sm_90, wgmma_s8 and tma_s8 on sm_90a, at the
#     benchmark and the check size), whatever --archs says (the step runs on 9.0 only).
# First of all it checks every prerequisite (programs, the Lua/Check/SQLite development packages,
# the Python modules numpy and torch, NVRTC, 2 GiB of free disk) and, when one is missing, stops
# with one line naming each missing one and the command that provides it (tools/install-deps.sh,
# tools/install-python-deps.sh --python-only, ...), before fetching or building anything.
# Then every program is run again on the filled cache and must compile nothing (the check the
# device repeats and counts). Prints the sizes of what travels (tree, .deps, cache; the limit
# is 64 MiB).
#
# Usage: tools/device-prep.sh [--archs sm_90,sm_90a] [--no-fetch] [--build-dir DIR]
#   --no-fetch      keep .deps/debs as it is (no registry access)
#   --build-dir DIR where to build the programs (default build-prep; ccache when installed)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
archs=sm_90,sm_90a
fetch=1
bdir=$root/build-prep
while [ $# -gt 0 ]; do
  case $1 in
    --archs) [ $# -ge 2 ] && [ -n "$2" ] || { echo "device-prep: --archs needs a list (sm_90,sm_90a)" >&2; exit 2; }
             archs=$2; shift 2 ;;
    --no-fetch) fetch=0; shift ;;
    --build-dir) [ $# -ge 2 ] && [ -n "$2" ] || { echo "device-prep: --build-dir needs a directory" >&2; exit 2; }
                 bdir=$2; shift 2 ;;
    --help|-h) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "device-prep: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
cache=$root/.kcache-device
say() { echo "device-prep: $*"; }
die() { echo "device-prep: $*" >&2; [ -n "${new:-}" ] && rm -rf "$new"; exit 1; }
t0=$(date +%s)

# 0. every prerequisite, checked before any work; each missing one named with the command that
# provides it, all in one line (then exit 1, nothing fetched, built or written)
missing=()
need() { missing+=("$1 ($2)"); }
for p in cmake make git du; do
  command -v "$p" >/dev/null 2>&1 || need "program $p" "tools/install-deps.sh"
done
command -v "${CC:-cc}" >/dev/null 2>&1 || command -v gcc >/dev/null 2>&1 || need "a C compiler" "tools/install-deps.sh"
if [ $fetch = 1 ]; then
  command -v apt-get >/dev/null 2>&1 || need "program apt-get (to fetch .deps/debs)" "a Debian machine, or --no-fetch"
fi
if command -v pkg-config >/dev/null 2>&1; then
  for m in lua5.4 check sqlite3; do
    pkg-config --exists "$m" 2>/dev/null || need "development package of $m" "tools/install-deps.sh"
  done
else
  need "program pkg-config" "tools/install-deps.sh"
fi
if command -v python3 >/dev/null 2>&1; then
  # python/tests/test_torch.py --precompile imports these
  pymiss=$(python3 - numpy torch 2>/dev/null <<'PY'
import importlib, sys
miss = []
for m in sys.argv[1:]:
    try:
        importlib.import_module(m)
    except Exception:
        miss.append(m)
print(" ".join(miss))
PY
) || pymiss="numpy torch"
  for m in $pymiss; do need "Python module $m" "tools/install-python-deps.sh --python-only"; done
else
  need "program python3" "tools/install-deps.sh --tests"
fi
cuda_home=${HOT_CUDA_HOME:-/usr/local/cuda}
ls "$cuda_home"/lib64/libnvrtc.so* "$cuda_home"/lib/libnvrtc.so* >/dev/null 2>&1 ||
  need "NVRTC (libnvrtc.so under $cuda_home)" "the CUDA toolkit: install it or set HOT_CUDA_HOME"
free_kb=$(df -Pk "$root" 2>/dev/null | awk 'NR == 2 { print $4 }')
[ -n "$free_kb" ] && [ "$free_kb" -lt $((2 * 1024 * 1024)) ] &&
  need "2 GiB free disk at $root (has $((free_kb / 1024)) MiB)" "free some space"
if [ ${#missing[@]} -gt 0 ]; then
  echo "device-prep: missing before any work: $(IFS=';'; echo "${missing[*]}" | sed 's/;/; /g')" >&2
  exit 1
fi

# 1. the packages
if [ $fetch = 1 ]; then
  tools/fetch-deps.sh >/dev/null || die "tools/fetch-deps.sh failed (no registry? --no-fetch keeps .deps/debs)"
fi
n_debs=$(ls "$root"/.deps/debs/*.deb 2>/dev/null | wc -l)
say "$n_debs packages in .deps/debs"

# 2. the programs
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
py=$(command -v python3 || true)
mkdir -p "$bdir" || die "cannot create $bdir"
cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" ${py:+-DPython3_EXECUTABLE="$py"} \
  >"$bdir/prep-configure.log" 2>&1 || die "configure failed (see $bdir/prep-configure.log)"
mapfile -t gpu_tests < <(ctest --test-dir "$bdir" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *//p')
cmake --build "$bdir" -j"$(nproc)" --target hot-gen hot-tune hot-bench hot_shared "${gpu_tests[@]}" \
  >"$bdir/prep-build.log" 2>&1 || die "build failed (see $bdir/prep-build.log)"
say "built; GPU test programs: ${gpu_tests[*]}"

# The command of a ctest test (its program and fixed arguments), one word per line.
test_command() {
  ctest --test-dir "$bdir" --show-only=json-v1 -R "^$1\$" | python3 -c '
import json, sys
t = json.load(sys.stdin)["tests"]
print("\n".join(t[0]["command"]) if t else "")'
}

# 3. the cache: filled in a new folder, which replaces the old one at the end (stale entries of
# older sources do not travel)
new=$cache.new
rm -rf "$new"
mkdir -p "$new"
export HOT_CACHE_DIR=$new
unset HOT_NO_DISK_CACHE HOT_ARCH
fill() { # fill LABEL COMMAND...: runs it, its output to the log, a line with what it compiled
  local label=$1; shift
  local before; before=$(ls "$HOT_CACHE_DIR" | grep -c '\.hotk$')
  "$@" >>"$bdir/prep-precompile.log" 2>&1 || die "$label failed (see $bdir/prep-precompile.log)"
  say "$(printf '%-34s %4d new entries' "$label" $(( $(ls "$HOT_CACHE_DIR" | grep -c '\.hotk$') - before )))"
}
: >"$bdir/prep-precompile.log"
precompile_all() {
  local t cmd
  for t in "${gpu_tests[@]}"; do
    mapfile -t cmd < <(test_command "$t")
    [ ${#cmd[@]} -gt 0 ] && [ -n "${cmd[0]}" ] || die "no command for test $t"
    fill "$t --precompile $archs" "${cmd[@]}" --precompile "$archs"
  done
  fill "test_torch.py --precompile $archs" env HOT_LIBRARY="$bdir/runtime/libhot.so" PYTHONPATH="$root/python" \
    python3 "$root/python/tests/test_torch.py" --precompile "$archs"
  fill "hot-gen vit_b16 --compile $archs" "$bdir/gen/hot-gen" specs/vit_b16.lua --compile "$archs" --cache-dir "$HOT_CACHE_DIR"
  fill "hot-gen vit_b16 qkv (SASS archs)" "$bdir/gen/hot-gen" specs/vit_b16.lua --layer qkv \
    --compile sm_80,sm_89,sm_90,sm_90a --cache-dir "$HOT_CACHE_DIR"
  fill "hot-gen bench_large --compile $archs" "$bdir/gen/hot-gen" specs/bench_large.lua --compile "$archs" --cache-dir "$HOT_CACHE_DIR"
  local tarch=sm_90a
  [[ ,$archs, == *,sm_90a,* ]] || tarch=${archs%%,*}
  rm -f "$bdir/prep-tune.db"
  fill "hot-tune bench_large speed ($tarch)" "$bdir/tune/hot-tune" specs/bench_large.lua --kind speed --no-gpu \
    --arch "$tarch" --db "$bdir/prep-tune.db" --progress plain
  fill "hot-bench bench_large --gemm-paths" "$bdir/bench/hot-bench" specs/bench_large.lua \
    --gemm-paths --precompile
}
precompile_all
n1=$(ls "$HOT_CACHE_DIR" | grep -c '\.hotk$')
say "second pass on the filled cache (must add nothing):"
precompile_all
n2=$(ls "$HOT_CACHE_DIR" | grep -c '\.hotk$')
[ "$n2" -eq "$n1" ] || die "the second pass compiled $((n2 - n1)) kernels: a program's --precompile is not deterministic"
rm -rf "$cache"
mv "$new" "$cache"

# 4. what travels
tree_b=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
deps_b=$(du -sb .deps/debs 2>/dev/null | cut -f1)
cache_b=$(du -sb "$cache" | cut -f1)
total=$((tree_b + ${deps_b:-0} + cache_b))
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }
say "kernel cache: $n2 entries, $(mib "$cache_b") in .kcache-device"
say "travels: tree $(mib "$tree_b") + .deps/debs $(mib "${deps_b:-0}") + .kcache-device $(mib "$cache_b") = $(mib "$total") (limit 64 MiB)"
[ "$total" -lt $((64 * 1048576)) ] || die "more than 64 MiB would travel"
say "done in $(( $(date +%s) - t0 )) s; carry: .deps/debs .kcache-device; then on the GPU machine: tools/device-check.sh"
