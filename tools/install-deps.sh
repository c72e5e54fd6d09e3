#!/usr/bin/env bash
# Installs what hot needs from Debian when it is missing: Lua 5.4, Check, pkg-config, CMake, a C
# compiler. The CUDA toolkit (NVRTC) comes from the machine image and is not installed here.
# Usage: tools/install-deps.sh   (uses sudo when not root; does nothing when all is present)
set -euo pipefail
pkgs=(liblua5.4-dev lua5.4 check pkg-config cmake gcc make)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all present (${pkgs[*]})"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
if ! ls /usr/local/cuda/lib64/libnvrtc.so* >/dev/null 2>&1 && [ -z "${HOT_CUDA_HOME:-}" ]; then
  echo "install-deps: note: no CUDA toolkit at /usr/local/cuda (set HOT_CUDA_HOME); NVRTC compiles and their tests need it" >&2
fi
