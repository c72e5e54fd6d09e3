#!/usr/bin/env bash
# Installs from Debian/Ubuntu what hot needs when it is missing.
#   tools/install-deps.sh           to build and run hot: CMake, make, a C compiler, pkg-config,
#                                   Lua 5.4, Check, SQLite 3 (what the README's first command needs)
#   tools/install-deps.sh --tests   that, plus the tools only the test suite uses: g++ and python3
#                                   (kernel emulators, label emu), python3-venv (the pip install
#                                   test, label python), valgrind (label spec), slurm-wlm and munge
#                                   (label slurm; system-wide services: the script says so
#                                   before installing them), libclang-rt-14-dev where clang
#                                   is installed (the libFuzzer build)
# tools/install-python-deps.sh runs `tools/install-deps.sh --tests` first, so the README's test
# command (install-deps.sh && install-python-deps.sh && cmake ... && ctest ...) installs all of it.
# The CUDA toolkit (NVRTC) comes from the machine image and is not installed here.
#   Does nothing when everything is present. As root it runs apt-get directly; otherwise through
#   sudo when sudo exists, else it stops with the list of packages to install by hand.
#   Exit status: 0 when everything is installed, 1 when something could not be installed, 2 for a
#   bad argument.
set -euo pipefail
# Two lists; add a package to one of them and nowhere else.
run_pkgs=(cmake make gcc pkg-config liblua5.4-dev lua5.4 check libsqlite3-dev sqlite3)
test_pkgs=(
  g++ python3 python3-venv                             # kernel emulators (emu), pip install (python)
  valgrind                                             # memory check (label spec)
  slurm-wlm munge                                      # Slurm test (label slurm)
)
# with clang present, libFuzzer's runtime for the fuzz build (.ci/run, docs/testing.md)
command -v clang >/dev/null 2>&1 && test_pkgs+=(libclang-rt-14-dev)
case "${1:-}" in
  "") pkgs=("${run_pkgs[@]}") ;;
  --tests) pkgs=("${run_pkgs[@]}" "${test_pkgs[@]}") ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "usage: tools/install-deps.sh [--tests]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
else
  echo "install-deps: installing system-wide with apt-get: ${missing[*]}"
  for p in "${missing[@]}"; do
    case $p in
      slurm-wlm|munge) echo "install-deps: note: $p is a system service (Slurm workload manager / munge authentication), installed system-wide for the slurm test label" ;;
    esac
  done
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
