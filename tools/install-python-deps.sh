#!/usr/bin/env bash
# Installs what the Python tests (python/tests, CTest labels python and torch) need: first the
# system tools of the test suite (`tools/install-deps.sh --tests`: g++, python3, python3-venv,
# valgrind, slurm-wlm, munge; skipped with --python-only), then with pip from PyPI: torch, numpy,
# pytest, Pillow (the independent PNG reader of the plot_viewer test); with --demo also those of examples/train.py and examples/train_lm.py: scikit-learn (the
# digits data set) and matplotlib (the plots). Also the CUDA disassemblers cuobjdump and nvdisasm
# (wheels nvidia-cuda-cuobjdump, nvidia-cuda-nvdisasm of the CUDA toolkit's major version, 13 when
# nvcc is not found) for the SASS counts of test_nvrtc_sass; those count as present when
# tools/find-cuda-tool.sh finds them (PATH, the CUDA toolkit, or the wheels). Does nothing for
# what is already present. torch is the CPU-capable build from PyPI (about 2.5 minutes, 5.4 GB).
# The pip install test (python_install) fetches scikit-build-core itself, in its own environment.
#
# Usage: tools/install-python-deps.sh [--demo] [--python-only]   (PYTHON=... picks the
#        interpreter; default: python3, the one CMake's find_package(Python3) normally finds first)
#
# Exit status: 2 for a bad argument; 1 when the system tools could not be installed (as
# tools/install-deps.sh), else 0, so that the C test suite still runs when pip fails: it says so
# loudly, and the Python tests then report SKIP (counted as skipped by CTest) with the missing
# module named.
set -uo pipefail
py="${PYTHON:-python3}"
here=$(cd "$(dirname "$0")" && pwd)
# the CUDA major version of the toolkit whose NVRTC compiles the kernels
cuda_major=$({ command -v nvcc >/dev/null 2>&1 && nvcc --version; } 2>/dev/null |
  sed -n 's/.*release \([0-9][0-9]*\)\..*/\1/p' | head -1)
cuda_major=${cuda_major:-13}
# a module name to import, or tool:NAME for a binary that tools/find-cuda-tool.sh must find
mods=(torch numpy pytest PIL tool:cuobjdump tool:nvdisasm)
pkgs=(torch numpy pytest Pillow "nvidia-cuda-cuobjdump==$cuda_major.*" "nvidia-cuda-nvdisasm==$cuda_major.*")
system=1
for arg in "$@"; do
  case "$arg" in
    --demo) mods+=(sklearn matplotlib); pkgs+=(scikit-learn matplotlib) ;;
    --python-only) system=0 ;;
    --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
    *) echo "install-python-deps: unknown argument '$arg' (--demo, --python-only; see --help)" >&2
       exit 2 ;;
  esac
done
if [ $system -eq 1 ]; then
  "$here/install-deps.sh" --tests || exit 1
fi
if ! command -v "$py" >/dev/null 2>&1; then
  echo "install-python-deps: WARNING: no $py interpreter: the Python tests will be skipped" >&2
  exit 0
fi
present() {
  case "$1" in
    tool:*) PYTHON="$py" "$here/find-cuda-tool.sh" "${1#tool:}" ;;
    *) "$py" -c "import $1" ;;
  esac
}
missing=()
for i in "${!mods[@]}"; do
  present "${mods[$i]}" >/dev/null 2>&1 || missing+=("${pkgs[$i]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-python-deps: all present (${pkgs[*]}) for $("$py" -c 'import sys; print(sys.executable)')"
  exit 0
fi
echo "install-python-deps: pip installing ${missing[*]} into $("$py" -c 'import sys; print(sys.executable)')"
case " ${missing[*]} " in
  *" torch "*) echo "install-python-deps: torch is large: about 200 MB for a CPU-only build, about 2.5-3 GB on Linux x86_64 from PyPI (it brings the CUDA libraries as nvidia-* wheels); pip shows each download below" ;;
esac
# no -q: pip's progress bars and the name and size of each file it downloads stay visible
if ! "$py" -m pip install --disable-pip-version-check --progress-bar on "${missing[@]}"; then
  echo "install-python-deps: ************************************************************" >&2
  echo "install-python-deps: FAILED to install ${missing[*]} with pip." >&2
  echo "install-python-deps: the Python/torch tests (and test_nvrtc_sass without cuobjdump)" >&2
  echo "install-python-deps: will print SKIP and count as skipped." >&2
  echo "install-python-deps: ************************************************************" >&2
  exit 0
fi
for i in "${!mods[@]}"; do
  if ! present "${mods[$i]}" >/dev/null 2>&1; then
    echo "install-python-deps: WARNING: ${pkgs[$i]} installed but '${mods[$i]}' is not found; its tests will be skipped" >&2
  fi
done
exit 0
