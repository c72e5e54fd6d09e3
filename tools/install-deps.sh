#!/usr/bin/env bash
# Installs from Debian/Ubuntu what hot and its whole test suite need when it is missing: the build
# (CMake, make, a C compiler, pkg-config, Lua 5.4, Check) and the test tools (g++ and python3 for
# the kernel emulators of label emu, valgrind for test_spec_valgrind of label spec). The CUDA
# toolkit (NVRTC) comes from the machine image and is not installed here.
# Usage: tools/install-deps.sh
#   Does nothing when everything is present. As root it runs apt-get directly; otherwise through
#   sudo when sudo exists, else it stops with the list of packages to install by hand.
#   Exit status: 0 when everything is installed, 1 when something could not be installed.
set -euo pipefail
# One list; add a package here and nowhere else.
pkgs=(
  cmake make gcc pkg-config liblua5.4-dev lua5.4 check libsqlite3-dev sqlite3 # build
  g++ python3                                          # tests: kernel emulators (label emu)
  valgrind                                             # tests: memory check (label spec)
  slurm-wlm munge sqlite3                              # tests: Slurm test (label slurm)
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
else
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -eq 0 ]; then
    run=()
  elif command -v sudo >/dev/null 2>&1; then
    run=(sudo)
  else
    echo "install-deps: error: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "install-deps: error: no apt-get here; install these packages (Debian names): ${missing[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${run[@]}" apt-get update -qq
  "${run[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if ! ls /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1 && [ -z "${HOT_CUDA_HOME:-}" ]; then
  echo "install-deps: note: no CUDA toolkit at /usr/local/cuda (set HOT_CUDA_HOME); NVRTC compiles and their tests need it" >&2
fi
