#!/usr/bin/env bash
# tools/device-check.sh — the one GPU check of hot. On a GPU machine with the CUDA toolkit
# (nvcc, cuobjdump), CMake and a C compiler but no package registry: unpacks the Debian packages
# that tools/fetch-deps.sh put in .deps/debs into .deps/prefix (never into /), builds hot, runs
# the GPU tests (ctest -L gpu: every kernel against its CPU twin bit for bit — on a 9.0 device
# also the sm_90a plans with the wgmma GEMMs — and a whole layer through the API, again with
# HOT_ARCH=sm_90a there), the CPU suites, disassembles one GEMM per arch path to confirm the
# integer tensor-core instructions (IMMA; IGMMA for wgmma), runs hot-bench on specs/vit_b16.lua
# and specs/bench_large.lua (speed against cuBLAS; the large layers with the sm_90a kernels on a
# 9.0 device), and prints a short table, then the benchmark's speed tables, last. Full outputs
# (per-kernel tables, JSON, the tuning DB) go to build-device/, and packed into
# $OUT/device-check.tar.gz (+ summary.txt) when $OUT is set. On a machine
# without a GPU it runs the CPU part and says that the GPU part did not run.
# Usage: tools/device-check.sh        (about 6 minutes on 16 cores; under 8)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$(date +%s)
rows=()
row() { rows+=("$(printf '%-34s %s' "$1" "$2")"); }
# Files worth keeping are collected in build-device/keep and packed into ONE archive in $OUT at
# the end ($OUT takes at most 8 files).
keepdir=$root/build-device/keep
rm -rf "$keepdir"; mkdir -p "$keepdir"
keep() { cp "$@" "$keepdir/" 2>/dev/null; }
log() { echo "device-check: $*" >&2; }

# 1. dependencies: system ones, else the carried packages
depsflag=()
if ! { pkg-config --exists lua5.4 check 2>/dev/null; }; then
  prefix=$root/.deps/prefix
  if [ ! -d "$prefix/usr/include" ]; then
    debs=("$root"/.deps/debs/*.deb)
    if [ ! -e "${debs[0]}" ]; then
      log "no Lua/Check on this machine and no .deps/debs (run tools/fetch-deps.sh where a registry is reachable)"
      exit 2
    fi
    mkdir -p "$prefix"
    for d in "${debs[@]}"; do
      if command -v dpkg >/dev/null; then dpkg -x "$d" "$prefix"
      else (tmp=$(mktemp -d); cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$prefix"; rm -rf "$tmp"); fi
    done
  fi
  depsflag=(-DHOT_DEPS_PREFIX="$prefix")
  row "dependencies" "unpacked from .deps/debs"
else
  row "dependencies" "system packages"
fi

# 2. build
bdir=$root/build-device
if cmake -S . -B "$bdir" -DCMAKE_BUILD_TYPE=Release "${depsflag[@]}" >"$bdir.configure.log" 2>&1 &&
   cmake --build "$bdir" -j"$(nproc)" >"$bdir.build.log" 2>&1; then
  row "build" "ok"
else
  tail -30 "$bdir.configure.log" "$bdir.build.log" 2>/dev/null >&2
  row "build" "FAILED (see $bdir.build.log)"
  printf '%s\n' "${rows[@]}"
  exit 1
fi

# 3. the GPU
gpu="none"
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | head -1)
fi
row "GPU" "$gpu"

# 4. GPU tests (skip with exit 77 = 'SKIP: no CUDA driver' without one)
cd "$bdir"
gpu_out=$(ctest -L gpu --output-on-failure 2>&1)
echo "$gpu_out" | tail -40 >&2
gsum=$(echo "$gpu_out" | grep -E "tests passed|tests failed" | tail -1)
gskip=$(echo "$gpu_out" | grep -c "\*\*\*Skipped")
if [ "$gpu" = "none" ]; then
  row "ctest -L gpu" "NOT RUN on a GPU (no GPU here; $gskip skipped)"
else
  row "ctest -L gpu" "${gsum:-no gpu tests} ($gskip skipped)"
fi

# a 9.0 device: the layer test again with the sm_90a plans (wgmma GEMMs)
cc=""
[ "$gpu" != "none" ] && cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
if [ "$cc" = "9.0" ]; then
  a_out=$(HOT_ARCH=sm_90a ctest -L gpu -R api --output-on-failure 2>&1)
  echo "$a_out" | tail -20 >&2
  row "ctest -L gpu -R api (sm_90a)" "$(echo "$a_out" | grep -E "tests passed|tests failed" | tail -1)"
fi

# 5. CPU suites (fast ones; the full suite is the README's test command)
cpu_out=$(ctest -L 'ref|plan|emit|runtime|spec' 2>&1)
row "ctest ref|plan|emit|runtime|spec" "$(echo "$cpu_out" | grep -E "tests passed" | tail -1)"
# 5b. Python: the pytest suites, whose torch part compares HOTLinear on CUDA tensors (CUDA
# backend, torch's current stream) with the CPU backend bit for bit when torch sees the GPU
py_out=$(ctest -L 'python|torch' --output-on-failure 2>&1)
echo "$py_out" | grep -E "SKIP|FAIL|Error" | head -20 >&2
row "ctest python|torch" "$(echo "$py_out" | grep -E "tests passed|tests failed" | tail -1)"
cd "$root"
# the digits demo on the CUDA backend (exact nn.Linear vs HOTLinear; 10 epochs, bounded)
if [ "$gpu" != "none" ]; then
  tr_out=$bdir/train-cuda
  if HOT_LIBRARY=$(ls "$bdir"/runtime/libhot.so 2>/dev/null) PYTHONPATH=$root/python \
       timeout 120 python3 examples/train.py --device cuda --epochs 10 --out "$tr_out.png" \
       --json "$tr_out.json" >"$tr_out.txt" 2>&1; then
    row "train.py --device cuda" "$(tail -1 "$tr_out.txt" | cut -c1-80)"
  else
    row "train.py --device cuda" "FAILED: $(tail -1 "$tr_out.txt" | cut -c1-70)"
  fi
  keep "$tr_out".*
fi

# 6. integer tensor-core instructions in the GEMMs of each arch path (IMMA for mma.sync, IGMMA
# for wgmma; a GEMM without them would be on a slower path)
cuobj=$(tools/find-cuda-tool.sh cuobjdump 2>/dev/null) # PATH, the toolkit, or pip's wheel
if [ -n "$cuobj" ]; then
  cub=$(mktemp -d)
  if "$bdir/gen/hot-gen" specs/vit_b16.lua --layer qkv --compile sm_80,sm_89,sm_90,sm_90a --cache-dir "$cub/cache" \
       --dump-cubin "$cub" >/dev/null 2>"$cub/err"; then
    for a in sm_80 sm_89 sm_90 sm_90a; do
      sass=""
      for f in "$cub"/hot_gemm_*."$a".cubin; do
        [ -e "$f" ] && sass+=$("$cuobj" --dump-sass "$f" 2>/dev/null)$'\n'
      done
      n8=$(echo "$sass" | grep -cE "IMMA.*S8")
      n4=$(echo "$sass" | grep -cE "IMMA.*S4")
      ng=$(echo "$sass" | grep -cE "IGMMA")
      row "SASS $a (qkv GEMMs)" "IMMA.S8 x$n8, IMMA.S4 x$n4, IGMMA x$ng"
    done
  else
    row "SASS" "hot-gen --compile failed: $(head -1 "$cub/err")"
  fi
  rm -rf "$cub"
else
  row "SASS" "no cuobjdump (PATH, toolkit, pip wheel): not checked"
fi

# 7. hot-bench: the default spec and the large layers (on a GPU: bit-exactness against the CPU
# backend and speed against cuBLAS; without one: its CPU mode). Each run is bounded so the whole
# script stays under 8 minutes; the speed tables are printed last, after the summary table.
bench_specs=(vit_b16 bench_large)
for s in "${bench_specs[@]}"; do
  out=$bdir/bench-$s
  barch=()
  [ "$s" = bench_large ] && [ "$cc" = "9.0" ] && barch=(env HOT_ARCH=sm_90a)
  timeout 150 "${barch[@]}" "$bdir/bench/hot-bench" "specs/$s.lua" --iters 30 --out "$out.json" \
    >"$out.txt" 2>"$out.log"
  rc=$?
  keep "$out.txt" "$out.json" "$out.log"
  case $rc in
    0) row "hot-bench $s" "ok ($(head -1 "$out.txt" | sed 's/^hot-bench: //; s/ (no GPU.*//' | cut -c1-60))" ;;
    2) row "hot-bench $s" "ran; $(grep '"status": ' "$out.json" | grep -vc '"status": "ok"') layer(s) not ok, $(grep -c '"unsupported": true' "$out.json") of them unsupported (see $out.txt)" ;;
    124) row "hot-bench $s" "TIMED OUT after 150 s (see $out.log)" ;;
    *) row "hot-bench $s" "FAILED, exit $rc: $(tail -1 "$out.log")" ;;
  esac
  if [ -s "$out.json" ]; then # the FP8 baseline (cuBLASLt): on how many layers, else why not
    n8=$(grep -c '^      "fp8_ms": [0-9]' "$out.json"); nl=$(grep -c '^      "fp8_ms": ' "$out.json")
    why=$(grep -o '"fp8_reason": "[^"]\+' "$out.json" | head -1 | cut -d'"' -f4 | cut -c1-90)
    row "hot-bench $s FP8" "cuBLASLt FP8 timed on $n8 of $nl layer(s)${why:+; first reason: $why}"
  fi
done

# 8. a short speed sweep of the large layers (hot-tune): each tile variant compiled, checked bit
# for bit against the CPU twins and timed on the GPU; the rows that qualify become the system
# tuning DB for this GPU (tune/system.sql, from `hot-tune show DB --sql`). Without a GPU the
# variants are compiled and recorded as not timed.
tdb=$bdir/tune-bench_large.db
rm -f "$tdb"
tarch=()
[ "$cc" = "9.0" ] && tarch=(--arch sm_90a)
timeout 120 "$bdir/tune/hot-tune" specs/bench_large.lua --kind speed --db "$tdb" --budget 75 \
  --repeats 10 --progress plain "${tarch[@]}" >"$bdir/tune.log" 2>&1
trc=$?
"$bdir/tune/hot-tune" show "$tdb" >"$bdir/tune-show.txt" 2>&1
"$bdir/tune/hot-tune" show "$tdb" --sql >"$bdir/tune-system.sql" 2>>"$bdir/tune.log"
keep "$tdb" "$bdir/tune.log" "$bdir/tune-show.txt" "$bdir/tune-system.sql"
nrows=$("$bdir/tune/hot-tune" show "$tdb" --rows 2>/dev/null | wc -l)
ntimed=$(grep -c '^INSERT' "$bdir/tune-system.sql" 2>/dev/null)
case $trc in
  0) row "hot-tune bench_large (speed)" "$nrows variants, ${ntimed:-0} timed and bit-exact (system rows)" ;;
  124) row "hot-tune bench_large (speed)" "TIMED OUT (see tune.log); $nrows rows kept" ;;
  *) row "hot-tune bench_large (speed)" "FAILED, exit $trc: $(tail -1 "$bdir/tune.log" | cut -c1-60)" ;;
esac

row "wall time" "$(( $(date +%s) - start )) s"
echo
echo "== hot device check ($(date -u +%Y-%m-%d), $(uname -n)) =="
printf '%s\n' "${rows[@]}"
if [ "$gpu" = "none" ]; then
  echo "NOTE: no GPU on this machine: the GPU part did not run; nothing above proves GPU results."
fi
printf '%s\n' "${rows[@]}" >"$keepdir/summary.txt"
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
  tar -czf "$OUT/device-check.tar.gz" -C "$root/build-device" keep && cp "$keepdir/summary.txt" "$OUT/"
fi
# The benchmark's verdicts last: per spec its first line (backend), the layers that did not run,
# the ceilings and the speed table (or the CPU backend's "speed: not measured"); the per-kernel
# tables stay in the files (build-device/bench-*.txt, $OUT/device-check.tar.gz).
for s in "${bench_specs[@]}"; do
  out=$bdir/bench-$s.txt
  [ -s "$out" ] || continue
  echo
  echo "== hot-bench specs/$s.lua =="
  head -1 "$out"
  awk '/^per kernel/ {on = 0} /^layers that did not run completely|^ceilings measured|^speed: not measured/ {on = 1} on' "$out"
done
