#!/usr/bin/env bash
# What NVRTC options do to the cold compile work of one layer (dev/log/cold-start.md, "Compile
# options"): dumps the programs the runtime compiles for SPEC's layer LAYER on ARCH
# (HOT_JIT_DEBUG), builds nvrtc_options.c and compiles every program with the runtime's options
# plus each variant, alternated back to back for ROUNDS rounds, with an empty kernel for the
# fixed cost of a program. A benchmark: it prints figures and checks nothing.
#
# Usage: dev/jit-options/run.sh BUILD_DIR [SPEC [LAYER [ARCH [ROUNDS [-- DRIVER_OPTIONS...]]]]]
#   defaults: specs/vit_b16.lua qkv sm_90 3; BUILD_DIR holds gen/hot-gen (built).
#   DRIVER_OPTIONS go to the driver, e.g. -- --batch 2 --variant base= --variant min=-Ofc=min
# Needs a C compiler, the CUDA toolkit's nvrtc.h and libnvrtc ($CUDA_HOME, default
# /usr/local/cuda) and, for the SASS counts, tools/find-cuda-tool.sh's cuobjdump.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:?usage: run.sh BUILD_DIR [SPEC [LAYER [ARCH [ROUNDS [-- DRIVER_OPTIONS...]]]]]}
shift
pos=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  pos+=("$1")
  shift
done
[ $# -gt 0 ] && shift # the "--"
spec=${pos[0]:-$root/specs/vit_b16.lua}
layer=${pos[1]:-qkv}
arch=${pos[2]:-sm_90}
rounds=${pos[3]:-3}
cuda=${CUDA_HOME:-/usr/local/cuda}
lib=$cuda/lib64
[ -d "$lib" ] || lib=$cuda/lib
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-jit-options-XXXXXX")
trap 'rm -rf "$work"' EXIT
cc -O2 -std=c11 -o "$work/nvrtc-options" "$here/nvrtc_options.c" "$build/base/libhot_base.a" \
  -I"$root/base" -I"$cuda/include" -L"$lib" -lnvrtc -lpthread -Wl,-rpath,"$lib"
HOT_JIT_DEBUG=1 HOT_JIT_DEBUG_DIR="$work/dump" "$build/gen/hot-gen" "$spec" --layer "$layer" \
  --compile "$arch" --no-disk-cache >/dev/null
sass=()
if tool=$("$root/tools/find-cuda-tool.sh" cuobjdump); then sass=(--cuobjdump "$tool"); fi
"$work/nvrtc-options" --rounds "$rounds" --empty "$arch" "${sass[@]}" "$@" \
  "$work/dump/$layer.$arch.cu"
