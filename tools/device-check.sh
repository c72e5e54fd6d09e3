#!/usr/bin/env bash
# tools/device-check.sh — the one GPU check of hot, sized for one command of at most 600 s on a
# GPU machine (CUDA toolkit, CMake, a C compiler, python3 with torch; no package registry).
# Documentation: docs/device-check.md. Preparation (here, where a registry and NVRTC are):
# tools/device-prep.sh fills .deps/debs and the kernel cache .kcache-device (every kernel the
# steps below launch, for sm_90 and sm_90a), both carried to the GPU machine.
#
# Steps, in order of value (each with an estimate; a step that would end past the deadline is
# skipped and says so; every command runs under a timeout that ends at the deadline):
#   deps        Lua/Check from .deps/debs when the machine lacks them (unpacked, never into /)
#   build       only the targets the steps need
#   gpu         what the machine has (nvidia-smi)
#   kernels ARCH  test_gpu_kernels with HOT_ARCH=ARCH: every kernel against its CPU twin, bit for
#               bit; the device's arch, then (9.0 device) sm_90a (wgmma GEMMs)
#   api         every other test labelled gpu (runtime_api_gpu, ...): whole layers through the
#               API against the CPU backend; on a 9.0 device once more with HOT_ARCH=sm_90a
#   torch       torch_hotlinear: HOTLinear on CUDA tensors (current stream, a non-default
#               stream, a thread with no current context) against the CPU backend
#   sass        IMMA / IGMMA in one GEMM per arch path (hot-gen --dump-cubin + cuobjdump)
#   nvfp4 sm_120  recipe nvfp4's NVFP4 GEMM (templates/gemm_nvfp4.cu) against its twin on an
#               sm_120 GPU: bit-identical outputs, the largest difference against CONTRACT.md
#               20.9's bound, the accumulation probe; skipped (saying so) on any other GPU
#   bench vit_b16, bench bench_large (sm_90a on 9.0)   hot-bench: bit-exactness and speed; then
#               hot-bench --model and tools/model-check.py: every timed kernel's measured median
#               beside its predicted time (measured / predicted, the model's error)
#   gemm paths  hot-bench --gemm-paths on bench_large (9.0): the three GEMM paths (mma_s8,
#               wgmma_s8, tma_s8) bit for bit against each other and the CPU backend, their
#               GEMM kernels timed against cuBLAS BF16 and cuBLASLt FP8 and the INT8 ceiling
#   tune        hot-tune speed sweep of bench_large (budget cut to the time left)
# No CPU-only suite runs here (CI runs them).
#
# Output: each result row is appended to $OUT/summary.txt (and printed) the moment it exists;
# $OUT/device-check.log grows as the run goes; $OUT/device-check.tar.gz (logs, bench tables and
# JSON, the tuning DB) is rewritten after every step. A run killed at any point leaves a
# readable summary.txt. Without $OUT: build-device/out. The column "compiled" counts the kernel
# cache entries a step added: kernels the preparation missed (the goal is 0).
#
# --rehearse (no GPU needed): runs every step here as far as it can — the build (the same
# targets, no ccache), each GPU program's SKIP path, each GPU program's --precompile pass on a
# copy of the cache (its CPU twins and CPU-backend work are what a GPU run does on the host, and
# it counts what would still compile), the torch tests' CPU part, hot-gen's SASS dump, hot-bench
# and the hot-tune sweep against the recording fake driver and fake cuBLAS of the tests (the GPU
# path's host code, kernels not run) — and estimates each step's time on the device:
#   build          configure wall + build CPU time / 12 (16 cores at ~75 % use) + 10 s (the
#                  serial part: generated sources, archives, links)
#   kernels, api   CPU time of the --precompile pass (host work of the GPU run)
#                  + 5 ms per kernel load + 3 s driver start per program run
#   torch          CPU time of the pytest run here + 15 s (torch's CUDA start, the CUDA tests)
#   sass           CPU time here + 2 s
#   bench          CPU time of the fake-driver run + 15 s (CUDA, cuBLAS, ceilings) + 3 s/layer
#   gemm paths     the same rule as bench
#   tune           its budget + 15 s
#   deps           5 s (unpacking 12 .deb files), fixed start 2 s
# CPU time, not wall time, is used where the machine here is shared (its wall time depends on
# the other load). The rehearsal's deadline applies to the sum of these estimates. Its LAST line
# is exactly: device-check estimate: N s on the device, K kernels to compile there
#
# Usage: tools/device-check.sh [--deadline S] [--rehearse] [--cache DIR] [--build-dir DIR]
#                             [--selftest] [--help]   (see usage() below)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. "$root/tools/lib/num.sh"

usage() {
  cat <<'EOF'
usage: tools/device-check.sh [--deadline S] [--rehearse] [--cache DIR] [--build-dir DIR]
                             [--selftest] [--help]
  --deadline S   global deadline in seconds from the start (default 480): a step whose
                 estimate would end past it is skipped (said in its row); every command is
                 cut at it
  --rehearse     no GPU needed: run every step here as far as it can and estimate the device
                 time; last line: "device-check estimate: N s on the device, K kernels to
                 compile there"
  --cache DIR    the prepared kernel cache (default .kcache-device, from tools/device-prep.sh)
  --build-dir DIR  build folder (default build-device); its keep/ holds the full outputs
  --selftest     the script's own machinery only (rows, log, archive, deadline, estimate):
                 every step is a short stand-in; for tests/device
  --help         this text
Output: $OUT/summary.txt, $OUT/device-check.log, $OUT/device-check.tar.gz ($OUT unset:
BUILD-DIR/out). Exit: 0 nothing failed, 1 a step failed, 2 bad arguments.
EOF
}

deadline=480
rehearse=0
selftest=0
cache=$root/.kcache-device
bdir=$root/build-device
while [ $# -gt 0 ]; do
  case $1 in
    --deadline)
      # tools/lib/num.sh: "08" is 8, never a bad octal number in the arithmetic below
      deadline=$(num_parse --deadline "${2-}" 0 86400 2>&1) ||
        { echo "device-check: $deadline (seconds)" >&2; exit 2; }
      shift 2 ;;
    --rehearse) rehearse=1; shift ;;
    --selftest) selftest=1; shift ;;
    --cache)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "device-check: --cache needs a directory" >&2; exit 2; fi
      cache=$(cd "$(dirname "$2")" 2>/dev/null && echo "$PWD/$(basename "$2")") || {
        echo "device-check: --cache $2: its parent directory does not exist" >&2; exit 2; }
      shift 2 ;;
    --build-dir)
      if [ $# -lt 2 ] || [ -z "$2" ]; then echo "device-check: --build-dir needs a directory" >&2; exit 2; fi
      mkdir -p "$2" 2>/dev/null && bdir=$(cd "$2" && pwd) || {
        echo "device-check: --build-dir $2: cannot create it" >&2; exit 2; }
      shift 2 ;;
    --help|-h) usage; exit 0 ;;
    *) echo "device-check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

t_start=$EPOCHREALTIME
out=${OUT:-$bdir/out}
keep=$bdir/keep
mkdir -p "$out" "$keep" || { echo "device-check: cannot create $out or $keep" >&2; exit 2; }
rm -f "$keep"/* 2>/dev/null
summary=$out/summary.txt
logf=$out/device-check.log
archive=$out/device-check.tar.gz
: >"$logf"

# ---- clock, rows, log, archive ------------------------------------------------------------
elapsed() { awk -v a="$t_start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }'; }
# Children's CPU seconds so far (user + sys of every finished child), from the shell's `times`,
# into CPU. (Not as $(...): `times` in a subshell counts that subshell's children only.)
CPU=0
cpu_now() {
  times >"$bdir/.times"
  CPU=$(awk 'NR == 2 { s = 0; for (i = 1; i <= 2; i++) { split($i, p, "m"); sub("s", "", p[2]); s += p[1] * 60 + p[2] } printf "%.2f", s }' "$bdir/.times")
}
# CPU seconds since c0 (calls cpu_now).
cpu_since() { cpu_now; CPU_D=$(fsub "$CPU" "$1"); }
fsub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }
fadd() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a + b }'; }
fint() { awk -v a="$1" 'BEGIN { printf "%d", a + 0.999 }'; }
log() { printf '%s\n' "$*" >>"$logf"; }
# One result row: appended to summary.txt in one write, printed, logged.
row() {
  local line
  line=$(printf '%-26s %-9s %6s %6s %8s  %s' "$1" "$2" "$3" "$4" "$5" "$6")
  printf '%s\n' "$line" >>"$summary"
  printf '%s\n' "$line"
  log "ROW $line"
}
# The archive: the keep folder and the summary, written beside and renamed into place.
pack() {
  cp "$summary" "$keep/summary.txt" 2>/dev/null
  tar -czf "$archive.part" -C "$bdir" keep 2>/dev/null && mv -f "$archive.part" "$archive"
}
# Kernel cache entries (the compiled-count of a step is the difference).
entries() { find "$HOT_CACHE_DIR" -maxdepth 1 -name '*.hotk' 2>/dev/null | wc -l; }

mode=device
[ $rehearse = 1 ] && mode=rehearse
[ $selftest = 1 ] && mode="selftest, $mode"
{
  echo "== hot device check ($(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $(nproc) CPUs, mode $mode, deadline $deadline s) =="
  printf '%-26s %-9s %6s %6s %8s  %s\n' step result "wall s" "est s" compiled details
} | tee "$summary"
log "device-check: root $root, build $bdir, out $out, cache $cache"
pack

est_total=2 # fixed start
k_total=0
failed=0
step_wall=0 step_est=0 step_k=0 step_cpu=0
# Runs one step: run_step NAME ESTIMATE FUNCTION [ARGS]. The function sets `res` (ok, FAILED, skipped,
# "not run"), `det` (details) and, in a rehearsal, `dev_est` (its estimate of the device time).
# Before: the deadline test (rehearsal: against the estimates so far; device: the real clock).
run_step() {
  local name=$1 est=$2 fn=$3 now left
  shift 3
  if [ $rehearse = 1 ]; then now=$(fint "$est_total"); else now=$(elapsed); fi
  left=$((deadline - now))
  if [ $((now + est)) -gt "$deadline" ]; then
    row "$name" "SKIPPED" "-" "$est" "-" "would end past the deadline ($est s estimated, $left s left)"
    pack
    return
  fi
  res=ok det="" dev_est=$est step_left=$left
  log "---- $name (estimate $est s, $left s left) ----"
  local c0 t0 k0
  cpu_now; c0=$CPU; t0=$EPOCHREALTIME; k0=$(entries)
  "$fn" "$@"
  step_wall=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  cpu_since "$c0"; step_cpu=$CPU_D
  step_k=$(( $(entries) - k0 ))
  [ "$step_k" -lt 0 ] && step_k=0
  k_total=$((k_total + step_k))
  [ "$res" = FAILED ] && failed=1
  if [ $rehearse = 1 ]; then
    est_total=$(fadd "$est_total" "$dev_est")
    row "$name" "$res" "$step_wall" "$(fint "$dev_est")" "$step_k" "$det (cpu ${step_cpu} s)"
  else
    row "$name" "$res" "$step_wall" "$est" "$step_k" "$det"
  fi
  pack
}
# Time left for a command of the current step (device: until the deadline; rehearsal: a
# generous bound, since the machine here is slower and shared).
limit() {
  if [ $rehearse = 1 ]; then echo 1800; return; fi
  local l=$((deadline - $(elapsed)))
  [ $l -lt 1 ] && l=1
  echo $l
}
# Runs a command with the step's time limit, its output into keep/FILE (and the log's tail).
runk() {
  local file=$1; shift
  timeout --kill-after=5 "$(limit)" "$@" >"$keep/$file" 2>&1
  local rc=$?
  { echo "\$ $*  (exit $rc)"; tail -40 "$keep/$file"; } >>"$logf"
  return $rc
}
# ctest summary of a file of ctest -V output: "P passed, S skipped, F failed" (never a bare
# percentage: skipped tests are not passed ones).
ctest_counts() {
  local f=$1 p s fl
  p=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*[. ]Passed +[0-9.]+ sec' "$f")
  s=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*Skipped' "$f")
  fl=$(grep -cE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*\*\*\*(Failed|Timeout|Exception|Not Run)' "$f")
  echo "$p passed, $s skipped, $fl failed"
  [ "$fl" -eq 0 ] && [ "$p$s" != 00 ]
}
# Runs the tests named (exact names) with ctest, each once, with a per-test timeout.
ctest_exact() {
  local file=$1; shift
  local re
  re="^($(IFS='|'; echo "$*"))\$"
  runk "$file" ctest --test-dir "$bdir" -R "$re" --timeout "$(limit)" -V
}
# The text after "SKIP:" in a ctest -V file (why a test skipped), first one.
skip_reason() { grep -oE 'SKIP: .*' "$keep/$1" | head -1 | cut -c7- | sed 's/ (.*//' | cut -c1-60; }

# ---- self-test stand-ins ---------------------------------------------------------------------
if [ $selftest = 1 ]; then
  HOT_CACHE_DIR=$bdir/selftest-cache
  mkdir -p "$HOT_CACHE_DIR"
  export HOT_CACHE_DIR
  st_step() { sleep 1; echo "selftest stand-in" >"$keep/selftest.txt"; det="stand-in"; dev_est=3; }
  for s in deps build gpu "kernels sm_90" "kernels sm_90a" api torch sass "nvfp4 sm_120" "bench vit_b16" "bench bench_large" \
    "gemm paths" tune; do
    run_step "$s" 3 st_step
  done
  row "total" ok "$(elapsed)" "$(fint "$est_total")" "$k_total" "selftest, deadline $deadline s"
  pack
  echo "device-check: selftest done in $(elapsed) s"
  [ $rehearse = 1 ] && echo "device-check estimate: $(fint "$est_total") s on the device, $k_total kernels to compile there"
  exit 0
fi
# A self-test never goes on to the device steps, even when a command above was cut short (bash
# drops the rest of a compound command after an expansion error and goes on with the next one).
if [ $selftest = 1 ]; then echo "device-check: the selftest stopped early (see above)" >&2; exit 1; fi

# ---- the kernel cache -----------------------------------------------------------------------
if [ ! -d "$cache" ]; then
  log "no kernel cache at $cache: every kernel compiles on the device (run tools/device-prep.sh)"
  mkdir -p "$cache"
fi
if [ $rehearse = 1 ]; then # a copy: the carried folder stays as prepared; misses are counted
  rm -rf "$bdir/kcache-rehearse"
  cp -r "$cache" "$bdir/kcache-rehearse"
  HOT_CACHE_DIR=$bdir/kcache-rehearse
else
  HOT_CACHE_DIR=$cache
fi
export HOT_CACHE_DIR
unset HOT_NO_DISK_CACHE
n_cache=$(entries)
row "kernel cache" "$([ "$n_cache" -gt 0 ] && echo ok || echo MISSING)" "-" "-" "-" \
  "$n_cache entries, $(du -sh "$cache" 2>/dev/null | cut -f1) in $(basename "$cache")"
pack

# ---- 1. dependencies ------------------------------------------------------------------------
depsflag=()
step_deps() {
  dev_est=5
  if pkg-config --exists lua5.4 check 2>/dev/null; then det="system packages"; return; fi
  local prefix=$root/.deps/prefix
  if [ ! -d "$prefix/usr/include" ]; then
    local debs=("$root"/.deps/debs/*.deb)
    if [ ! -e "${debs[0]}" ]; then
      res=FAILED; det="no Lua/Check here and no .deps/debs (tools/device-prep.sh where a registry is)"; return
    fi
    mkdir -p "$prefix"
    for d in "${debs[@]}"; do
      if command -v dpkg >/dev/null; then dpkg -x "$d" "$prefix"
      else (tmp=$(mktemp -d); cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$prefix"; rm -rf "$tmp"); fi
    done
  fi
  depsflag=(-DHOT_DEPS_PREFIX="$prefix")
  det="unpacked from .deps/debs"
}
run_step deps 5 step_deps
[ "$res" = FAILED ] && { echo "device-check: cannot build without Lua and Check" >&2; exit 1; }

# ---- 2. build -------------------------------------------------------------------------------
gpu_tests=()
step_build() {
  local py c0 cw t0
  py=$(command -v python3 || true)
  t0=$EPOCHREALTIME
  runk configure.log cmake -S "$root" -B "$bdir" -DCMAKE_BUILD_TYPE=Release -UCMAKE_C_COMPILER_LAUNCHER \
    ${py:+-DPython3_EXECUTABLE="$py"} -DHOT_TEST_CACHE_DIR="$HOT_CACHE_DIR" "${depsflag[@]}" ||
    { res=FAILED; det="configure failed (keep/configure.log)"; return; }
  cw=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f", b - a }')
  mapfile -t gpu_tests < <(ctest --test-dir "$bdir" -N -L gpu | sed -n 's/^ *Test *#[0-9]*: *//p')
  local targets=(hot-gen hot-bench hot-tune hot_shared hot_py_helper "${gpu_tests[@]}")
  [ $rehearse = 1 ] && targets+=(hot_fake_cuda hot_fake_cublaslt)
  cpu_now; c0=$CPU
  local clean=()
  [ $rehearse = 1 ] && clean=(--clean-first) # the device builds from nothing: so does the estimate
  runk build.log cmake --build "$bdir" -j"$(nproc)" "${clean[@]}" --target "${targets[@]}" ||
    { res=FAILED; det="build failed (keep/build.log)"; return; }
  cpu_since "$c0"; local bc=$CPU_D
  det="${#targets[@]} targets, gpu tests: ${gpu_tests[*]}"
  dev_est=$(awk -v w="$cw" -v c="$bc" 'BEGIN { printf "%.1f", w + c / 12 + 10 }')
}
run_step build 60 step_build
if [ "$res" != ok ]; then
  tail -30 "$keep/configure.log" "$keep/build.log" 2>/dev/null >&2
  echo "device-check: build failed" >&2; exit 1
fi

# ---- 3. the GPU -----------------------------------------------------------------------------
gpu=none cc=""
step_gpu() {
  dev_est=1
  if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
    gpu=$(nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader | head -1)
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)
    det=$gpu
  else
    res="none"; det="no GPU here: the GPU steps run their SKIP paths only"
  fi
}
run_step gpu 2 step_gpu
# The archs of the GPU steps: the device's, and sm_90a on a 9.0 device. A rehearsal takes those
# of an H200 (9.0): sm_90 and sm_90a.
dev_arch=""
[ -n "$cc" ] && dev_arch="sm_${cc/./}"
[ $rehearse = 1 ] && dev_arch=sm_90 && cc=9.0
arch_steps=()
[ -n "$dev_arch" ] && arch_steps+=("$dev_arch")
[ "$cc" = "9.0" ] && arch_steps+=(sm_90a)
[ ${#arch_steps[@]} -eq 0 ] && arch_steps=(device)

# In a rehearsal: the --precompile pass of one GPU program (ARGS: the program and its arguments,
# the arch list last); its CPU time feeds the estimate, its "compiled" count the K.
pre_cpu=0
precompile_pass() {
  local file=$1; shift
  local c0; cpu_now; c0=$CPU
  runk "$file" "$@" || { res=FAILED; det="${det:+$det; }--precompile failed (keep/$file)"; }
  cpu_since "$c0"; pre_cpu=$CPU_D
}

# ---- 4. every kernel against its CPU twin, one step per arch --------------------------------
step_kernels() {
  local arch=$1 file="kernels-$1.txt"
  if [ "$arch" = device ]; then # no GPU: the program's SKIP path
    ctest_exact "$file" test_gpu_kernels; det=$(ctest_counts "$keep/$file") || res=FAILED
    det="$det: $(skip_reason "$file")"; return
  fi
  HOT_ARCH=$arch ctest_exact "$file" test_gpu_kernels
  det=$(ctest_counts "$keep/$file") || res=FAILED
  if grep -q '\*\*\*Skipped' "$keep/$file"; then det="$det: $(skip_reason "$file")"; fi
  if [ $rehearse = 1 ]; then
    precompile_pass "pre-kernels-$arch.txt" "$bdir/tests/gpu/test_gpu_kernels" --precompile "$arch"
    local loads; loads=$(grep -oE '[0-9]+ kernel loads' "$keep/pre-kernels-$arch.txt" | head -1 | cut -d' ' -f1)
    dev_est=$(awk -v c="$pre_cpu" -v n="${loads:-150}" 'BEGIN { printf "%.1f", c + n * 0.005 + 3 }')
    det="$det; twins $pre_cpu s cpu, ${loads:-?} loads"
  fi
}
for a in "${arch_steps[@]}"; do run_step "kernels $a" 20 step_kernels "$a"; done

# ---- 5. whole layers through the API: every other test labelled gpu -------------------------
api_tests=()
for t in "${gpu_tests[@]}"; do [ "$t" != test_gpu_kernels ] && api_tests+=("$t"); done
step_api() {
  local arch=$1 file="api-$1.txt"
  if [ ${#api_tests[@]} -eq 0 ]; then res="not run"; det="no test labelled gpu besides test_gpu_kernels"; return; fi
  if [ "$arch" = sm_90a ]; then HOT_ARCH=sm_90a ctest_exact "$file" "${api_tests[@]}"
  else ctest_exact "$file" "${api_tests[@]}"; fi
  det=$(ctest_counts "$keep/$file") || res=FAILED
  if grep -q '\*\*\*Skipped' "$keep/$file"; then det="$det: $(skip_reason "$file")"; fi
  if [ $rehearse = 1 ]; then
    local t cpu=0
    for t in "${api_tests[@]}"; do
      local exe; exe=$(find "$bdir/tests" -maxdepth 2 -type f -name "$t" -perm -u+x | head -1)
      if [ -z "$exe" ]; then res=FAILED; det="$det; no program $t"; continue; fi
      precompile_pass "pre-api-$arch-$t.txt" "$exe" --precompile "$arch"
      cpu=$(fadd "$cpu" "$pre_cpu")
    done
    dev_est=$(awk -v c="$cpu" -v n="${#api_tests[@]}" 'BEGIN { printf "%.1f", c + 3 * n }')
    det="$det; host work $cpu s cpu"
  fi
}
for a in "${arch_steps[@]}"; do
  [ "$a" = device ] && a=""
  run_step "api${a:+ $a}" 15 step_api "${a:-device}"
done

# ---- 6. HOTLinear on CUDA tensors ----------------------------------------------------------
step_torch() {
  local file=torch.txt c0 cpu py
  cpu_now; c0=$CPU
  ctest_exact "$file" torch_hotlinear
  det=$(ctest_counts "$keep/$file") || res=FAILED
  py=$(grep -oE '[0-9]+ (passed|failed)[^=]*' "$keep/$file" | tail -1 | sed 's/ in [0-9.]*s.*//')
  [ -n "$py" ] && det="$det; pytest: $py"
  if grep -q '\*\*\*Skipped' "$keep/$file"; then det="$det: $(skip_reason "$file")"; fi
  cpu_since "$c0"; cpu=$CPU_D
  if [ $rehearse = 1 ]; then
    precompile_pass pre-torch.txt env HOT_LIBRARY="$bdir/runtime/libhot.so" PYTHONPATH="$root/python" \
      python3 "$root/python/tests/test_torch.py" --precompile sm_90
    dev_est=$(awk -v c="$cpu" 'BEGIN { printf "%.1f", c + 15 }')
  fi
}
run_step torch 40 step_torch

# ---- 7. integer tensor-core instructions in the GEMMs of each arch path ----------------------
step_sass() {
  local cub="$bdir/sass" cuobj c0
  cpu_now; c0=$CPU
  rm -rf "$cub"; mkdir -p "$cub"
  runk sass-gen.txt "$bdir/gen/hot-gen" "$root/specs/vit_b16.lua" --layer qkv --compile sm_80,sm_89,sm_90,sm_90a \
    --cache-dir "$HOT_CACHE_DIR" --dump-cubin "$cub" ||
    { res=FAILED; det="hot-gen --compile failed: $(tail -1 "$keep/sass-gen.txt" | cut -c1-80)"; return; }
  cuobj=$("$root/tools/find-cuda-tool.sh" cuobjdump 2>/dev/null)
  if [ -z "$cuobj" ]; then
    res="not run"; det="cubins dumped; no cuobjdump (PATH, toolkit, pip wheel)"
    cpu_since "$c0"; dev_est=$(fadd "$CPU_D" 2); return
  fi
  local a f sass n8 n4 ng
  for a in sm_80 sm_89 sm_90 sm_90a; do
    sass=""
    for f in "$cub"/hot_gemm_*."$a".cubin; do
      [ -e "$f" ] && sass+=$("$cuobj" --dump-sass "$f" 2>/dev/null)$'\n'
    done
    n8=$(grep -cE "IMMA.*S8" <<<"$sass"); n4=$(grep -cE "IMMA.*S4" <<<"$sass"); ng=$(grep -cE "IGMMA" <<<"$sass")
    det="$det${det:+; }$a IMMA.S8 x$n8 IMMA.S4 x$n4 IGMMA x$ng"
    case $a in
      sm_90a) [ "$ng" -gt 0 ] || res=FAILED ;;
      *) [ $((n8 + n4)) -gt 0 ] || res=FAILED ;;
    esac
  done
  cpu_since "$c0"; dev_est=$(fadd "$CPU_D" 2)
}
run_step sass 10 step_sass

# ---- 7b. recipe nvfp4's NVFP4 GEMM on sm_120 (templates/gemm_nvfp4.cu, CONTRACT.md 20.9) ------
# Only on an sm_120 GPU (compute capability 12.0): the kernel is sm_120a's. Elsewhere the row says
# skipped, with the reason. The program (tests/gpu/nvfp4_gemm_check.cu, built here with nvcc)
# prints how many outputs equal the twin bit for bit, the largest difference as a fraction of
# 20.9's bound, and the probe of the instruction's accumulation order; it fails past the bound.
step_nvfp4() {
  if [ "$cc" != "12.0" ]; then # costs nothing: a rehearsal adds 1 s, not the 30 s of a run
    dev_est=1; res=skipped; det="needs an sm_120 GPU (compute capability 12.0); this one: ${cc:-none}"; return
  fi
  local nvcc="" h
  for h in "${HOT_CUDA_HOME:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
    [ -n "$h" ] && [ -x "$h/bin/nvcc" ] && { nvcc=$h/bin/nvcc; break; }
  done
  [ -z "$nvcc" ] && nvcc=$(command -v nvcc 2>/dev/null)
  [ -z "$nvcc" ] && { res="not run"; det="no nvcc (CUDA toolkit) to build the check"; return; }
  mkdir -p "$bdir/nvfp4"
  runk nvfp4-build.txt sh -c "cc -std=c11 -O2 -c -I'$root/templates' '$root/templates/nvfp4_ref.c' \
      -o '$bdir/nvfp4/ref.o' && '$nvcc' -gencode arch=compute_120a,code=sm_120a -std=c++17 -O2 \
      -I'$root/templates' '$root/tests/gpu/nvfp4_gemm_check.cu' '$bdir/nvfp4/ref.o' -o '$bdir/nvfp4/check'" ||
    { res=FAILED; det="build failed: $(tail -1 "$keep/nvfp4-build.txt" | cut -c1-80)"; return; }
  runk nvfp4.txt "$bdir/nvfp4/check"
  case $? in
    0) det=$(grep -E '^nvfp4 (probe|gemm)' "$keep/nvfp4.txt" | sed -E 's/.*gives ([^ ]+).*/probe \1/; s/.*: ([0-9]+ of [0-9]+) outputs bit-identical.*= ([^,]+),.*/\1 identical, max\/bound \2/' | paste -sd';' -) ;;
    77) res=skipped; det=$(grep -m1 '^SKIP' "$keep/nvfp4.txt" | cut -c7-90) ;;
    *) res=FAILED; det="$(grep -m1 -E 'FAIL|error' "$keep/nvfp4.txt" | cut -c1-100)" ;;
  esac
}
run_step "nvfp4 sm_120" 30 step_nvfp4

# ---- 8. hot-bench: bit-exactness against the CPU backend and speed against cuBLAS -----------
# A rehearsal runs the GPU path on the tests' recording fake driver and fake cuBLAS/cuBLASLt
# (tests/runtime/fake_cuda.c, tests/bench/fake_cublaslt.c): the host code, the kernel cache and
# the CPU check run for real, no kernel runs (its "bit-exact" and speed figures mean nothing).
fake_env=()
if [ $rehearse = 1 ]; then
  fk=$(find "$bdir/tests" -maxdepth 1 -name 'libhot_fake_cuda.so' | head -1)
  fl=$(find "$bdir/tests/bench" -maxdepth 1 -name 'libhot_fake_cublaslt.so' 2>/dev/null | head -1)
  if [ -n "$fk" ] && [ -n "$fl" ]; then
    mkdir -p "$bdir/fakehome/lib64"
    ln -sf "$fl" "$bdir/fakehome/lib64/libcublasLt.so.13"
    ln -sf "$fl" "$bdir/fakehome/lib64/libcublas.so.13"
    fake_env=(env HOT_CUDA_DRIVER="$fk" HOT_CUDA_HOME="$bdir/fakehome")
  fi
fi
bench_specs=(vit_b16 bench_large)
step_bench() {
  local s=$1 o="bench-$1" barch=() c0 rc
  [ "$s" = bench_large ] && [ "$cc" = "9.0" ] && barch=(HOT_ARCH=sm_90a)
  local args=("$root/specs/$s.lua" --iters 30 --no-jit --out "$keep/$o.json")
  [ $rehearse = 1 ] && [ ${#fake_env[@]} -eq 0 ] && args+=(--backend cpu)
  cpu_now; c0=$CPU
  timeout --kill-after=5 "$(limit)" "${fake_env[@]:-env}" "${barch[@]}" "$bdir/bench/hot-bench" "${args[@]}" \
    >"$keep/$o.txt" 2>"$keep/$o.log"
  rc=$?
  { echo "\$ hot-bench ${args[*]} (${barch[*]}) exit $rc"; tail -20 "$keep/$o.log"; } >>"$logf"
  local nl; nl=$(grep -c '"fp8_ms": ' "$keep/$o.json" 2>/dev/null)
  case $rc in
    0) det="$(head -1 "$keep/$o.txt" | sed 's/^hot-bench: //' | cut -c1-60)" ;;
    2) det="$(grep '"status": ' "$keep/$o.json" | grep -vc '"status": "ok"') layer(s) not ok (keep/$o.txt)"
       [ $rehearse = 1 ] || res=FAILED ;;
    124|137) res=FAILED; det="cut at the deadline (keep/$o.log)" ;;
    *) res=FAILED; det="exit $rc: $(tail -1 "$keep/$o.log" | cut -c1-70)" ;;
  esac
  if [ -s "$keep/$o.json" ] && [ $rehearse = 0 ]; then
    local n8 why
    n8=$(grep -c '^      "fp8_ms": [0-9]' "$keep/$o.json")
    why=$(grep -o '"fp8_reason": "[^"]\+' "$keep/$o.json" | head -1 | cut -d'"' -f4 | cut -c1-60)
    det="$det; cuBLASLt FP8 timed on $n8 of $nl layer(s)${why:+ ($why)}"
  fi
  model_check "$s" "${barch[@]}"
  [ ${#fake_env[@]} -gt 0 ] && det="$det; fake driver"
  cpu_since "$c0"
  dev_est=$(awk -v c="$CPU_D" -v n="${nl:-4}" 'BEGIN { printf "%.1f", c + 15 + 3 * n }')
}
# The GPU model beside the measurement: hot-bench SPEC --model (the same arch; no GPU, a second)
# and tools/model-check.py against the bench JSON's per-kernel medians, for the device's GPU
# (H100 / H200 column); keep/model-check-SPEC.txt, its last line in the step's details. A model
# that matched no launch (fake driver, no per-kernel figures) is said, never a failure.
model_check() {
  local s=$1 m="$keep/model-$1.txt" o="$keep/bench-$1.json" mc="$keep/model-check-$1.txt" last
  shift
  if ! timeout 60 env "$@" "$bdir/bench/hot-bench" "$root/specs/$s.lua" --model >"$m" 2>"$m.log"; then
    det="$det; model: hot-bench --model failed (keep/model-$s.txt.log)"; return
  fi
  if [ ! -s "$o" ]; then det="$det; model: no bench JSON to compare"; return; fi
  python3 "$root/tools/model-check.py" "$m" "$o" "${gpu:-none}" --out "$mc" >/dev/null 2>"$mc.log"
  last=$(tail -1 "$mc" 2>/dev/null | sed 's/^model error: //' | cut -c1-110)
  det="$det; model: ${last:-model-check failed (keep/model-check-$s.txt.log)}"
}
run_step "bench vit_b16" 50 step_bench vit_b16
run_step "bench bench_large" 90 step_bench bench_large

# ---- 9. the three sm_90 GEMM paths side by side (hot-bench --gemm-paths) ---------------------
# bench_large's layers planned as mma_s8 (sm_90), wgmma_s8 (sm_90a, warps_n 1) and tma_s8
# (sm_90a, warps_n 2): the same inputs, g_x and g_w compared across the paths and with the CPU
# backend (at hot-bench's check size), the two GEMM launches of each path timed beside cuBLAS
# BF16 and cuBLASLt FP8 GEMMs of the same sizes, TOP/s against the INT8 ceiling of the run. A
# device that is not 9.0 skips it (its row says so). The kernels come from the prepared cache
# (tools/device-prep.sh runs the same command with --precompile).
paths_iters=20
step_paths() {
  local o=gemm-paths c0 rc
  local args=("$root/specs/bench_large.lua" --gemm-paths --iters "$paths_iters" --warmup 3 --out "$keep/$o.json")
  if [ $rehearse = 1 ] && [ ${#fake_env[@]} -eq 0 ]; then
    res="not run"; det="no fake driver in this build (hot_fake_cuda, hot_fake_cublaslt)"; dev_est=0; return
  fi
  cpu_now; c0=$CPU
  timeout --kill-after=5 "$(limit)" "${fake_env[@]:-env}" "$bdir/bench/hot-bench" "${args[@]}" \
    >"$keep/$o.txt" 2>"$keep/$o.log"
  rc=$?
  { echo "\$ hot-bench ${args[*]} exit $rc"; tail -20 "$keep/$o.log"; } >>"$logf"
  local j="$keep/$o.json" skipped nl np nid ncpu nbad
  skipped=$(grep -o '"gemm_paths_skipped": "[^"]*' "$j" 2>/dev/null | cut -d'"' -f4 | cut -c1-90)
  nl=$(grep -c '^    {"name": ' "$j" 2>/dev/null)
  np=$(grep -c '{"path": ' "$j" 2>/dev/null)
  nid=$(grep -c '"identical": true' "$j" 2>/dev/null)
  ncpu=$(grep -c '"cpu_equal": true' "$j" 2>/dev/null)
  nbad=$(grep '{"path": ' "$j" 2>/dev/null | grep -vc '"status": ""')
  case $rc in
    0|2)
      if [ -n "$skipped" ]; then
        res=skipped; det="$skipped"
      else
        # each path row appears once per product: np = layers x 3 paths x 2 products
        det="$nl layer(s) x 3 paths: identical to the first path $nid of $((np * 2 / 3)), CPU-equal $ncpu of $np, failed $nbad (product rows)"
        if [ $rc = 2 ]; then
          if [ $rehearse = 1 ]; then det="$det; kernels do not run on the fake driver"
          else res=FAILED; fi
        fi
      fi ;;
    124|137) res=FAILED; det="cut at the deadline (keep/$o.log)" ;;
    *) res=FAILED; det="exit $rc: $(tail -1 "$keep/$o.log" | cut -c1-70)" ;;
  esac
  [ ${#fake_env[@]} -gt 0 ] && det="$det; fake driver"
  cpu_since "$c0"
  dev_est=$(awk -v c="$CPU_D" -v n="${nl:-3}" 'BEGIN { printf "%.1f", c + 15 + 3 * n }')
}
if [ "$cc" = "9.0" ] || [ -z "$cc" ]; then
  run_step "gemm paths" 70 step_paths
else
  row "gemm paths" skipped - - - "compute capability $cc: the three sm_90 GEMM paths need a 9.0 device"
  pack
fi

# ---- 10. a speed sweep of the large layers (hot-tune) ------------------------------------------
step_tune() {
  local tdb="$keep/tune-bench_large.db" budget=75 tarch=() trc
  if [ $rehearse = 0 ]; then
    budget=$(( $(limit) - 20 ))
    [ $budget -gt 75 ] && budget=75
    [ $budget -lt 5 ] && budget=5
  fi
  rm -f "$tdb"
  [ "$cc" = "9.0" ] && tarch=(--arch sm_90a)
  timeout --kill-after=5 "$(limit)" "${fake_env[@]:-env}" "$bdir/tune/hot-tune" "$root/specs/bench_large.lua" \
    --kind speed --db "$tdb" --budget "$budget" --repeats 10 --progress plain "${tarch[@]}" >"$keep/tune.log" 2>&1
  trc=$?
  tail -5 "$keep/tune.log" >>"$logf"
  "$bdir/tune/hot-tune" show "$tdb" >"$keep/tune-show.txt" 2>&1
  "$bdir/tune/hot-tune" show "$tdb" --sql >"$keep/tune-system.sql" 2>>"$keep/tune.log"
  local nrows ntimed
  nrows=$("$bdir/tune/hot-tune" show "$tdb" --rows 2>/dev/null | wc -l)
  ntimed=$(grep -c '^INSERT' "$keep/tune-system.sql" 2>/dev/null)
  case $trc in
    0) det="$nrows variants, ${ntimed:-0} timed and bit-exact (system rows), budget $budget s" ;;
    124|137) res=FAILED; det="cut at the deadline; $nrows rows kept" ;;
    *) res=FAILED; det="exit $trc: $(tail -1 "$keep/tune.log" | cut -c1-60)" ;;
  esac
  [ ${#fake_env[@]} -gt 0 ] && det="$det; fake driver"
  dev_est=$((budget + 15))
}
run_step tune 40 step_tune

# ---- the end -------------------------------------------------------------------------------
row "total" "$([ $failed = 0 ] && echo ok || echo FAILED)" "$(elapsed)" "$(fint "$est_total")" "$k_total" \
  "deadline $deadline s; kernels compiled during the steps: $k_total"
pack
if [ "$gpu" = none ] && [ $rehearse = 0 ]; then
  echo "NOTE: no GPU on this machine: the GPU steps did not run; nothing above proves GPU results."
fi
# The benchmark's verdicts: per spec its first line, the layers that did not run, the ceilings
# and the speed table (the per-kernel tables stay in the archive).
if [ $rehearse = 0 ]; then
  for s in "${bench_specs[@]}"; do
    o=$keep/bench-$s.txt
    [ -s "$o" ] || continue
    echo
    echo "== hot-bench specs/$s.lua =="
    head -1 "$o"
    awk '/^per kernel/ {on = 0} /^layers that did not run completely|^ceilings measured|^speed: not measured/ {on = 1} on' "$o"
  done
  for s in "${bench_specs[@]}"; do
    [ -s "$keep/model-check-$s.txt" ] || continue
    echo
    echo "== predicted (hot-bench specs/$s.lua --model) beside measured =="
    cat "$keep/model-check-$s.txt"
  done
  if [ -s "$keep/gemm-paths.txt" ]; then
    echo
    echo "== hot-bench specs/bench_large.lua --gemm-paths =="
    cat "$keep/gemm-paths.txt"
  fi
  echo "device-check: done in $(elapsed) s, $k_total kernels compiled on the device"
else
  echo "device-check estimate: $(fint "$est_total") s on the device, $k_total kernels to compile there"
fi
exit $failed
