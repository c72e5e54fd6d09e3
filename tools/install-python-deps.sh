#!/usr/bin/env bash
# Installs the Python modules of the Python tests (python/tests, CTest labels python and torch)
# with pip from PyPI: torch, numpy, pytest; with --demo also those of examples/train.py:
# scikit-learn (the digits data set) and matplotlib (the plot). Does nothing for modules that
# already import. torch is the CPU-capable build from PyPI (about 2.5 minutes, 5.4 GB).
#
# Usage: tools/install-python-deps.sh [--demo]    (PYTHON=... picks the interpreter; default:
#        python3, the one CMake's find_package(Python3) normally finds first on PATH)
#
# Always exits 0, so that the C test suite still runs: on a failure it says so loudly, and the
# Python tests then report SKIP (counted as skipped by CTest) with the missing module named.
set -uo pipefail
py="${PYTHON:-python3}"
mods=(torch numpy pytest)
pkgs=(torch numpy pytest)
if [ "${1:-}" = "--demo" ]; then
  mods+=(sklearn matplotlib)
  pkgs+=(scikit-learn matplotlib)
elif [ $# -gt 0 ]; then
  echo "usage: tools/install-python-deps.sh [--demo]" >&2
  exit 0
fi
if ! command -v "$py" >/dev/null 2>&1; then
  echo "install-python-deps: WARNING: no $py interpreter: the Python tests will be skipped" >&2
  exit 0
fi
missing=()
for i in "${!mods[@]}"; do
  "$py" -c "import ${mods[$i]}" >/dev/null 2>&1 || missing+=("${pkgs[$i]}")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-python-deps: all present (${pkgs[*]}) for $("$py" -c 'import sys; print(sys.executable)')"
  exit 0
fi
echo "install-python-deps: pip installing ${missing[*]} into $("$py" -c 'import sys; print(sys.executable)')"
if ! "$py" -m pip install --disable-pip-version-check -q "${missing[@]}"; then
  echo "install-python-deps: ************************************************************" >&2
  echo "install-python-deps: FAILED to install ${missing[*]} with pip." >&2
  echo "install-python-deps: the Python/torch tests will print SKIP and count as skipped." >&2
  echo "install-python-deps: ************************************************************" >&2
  exit 0
fi
for i in "${!mods[@]}"; do
  if ! "$py" -c "import ${mods[$i]}" >/dev/null 2>&1; then
    echo "install-python-deps: WARNING: ${pkgs[$i]} installed but 'import ${mods[$i]}' fails; its tests will be skipped" >&2
  fi
done
exit 0
