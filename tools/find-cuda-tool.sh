#!/usr/bin/env bash
# Prints the path of a CUDA binary utility that disassembles CUBINs: cuobjdump or nvdisasm
# (cuobjdump -sass runs nvdisasm, found on PATH or beside cuobjdump). The first executable one of:
#   1. PATH;
#   2. the CUDA toolkit: $HOT_CUDA_HOME/bin, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin;
#   3. the PyPI wheels nvidia-cuda-cuobjdump / nvidia-cuda-nvdisasm (installed by
#      tools/install-python-deps.sh) in the site-packages of $PYTHON (default python3), system
#      and user: <site-packages>/nvidia/<cuNN or cuda_*>/bin/<tool>, the newest cuNN first.
#
# Usage: tools/find-cuda-tool.sh cuobjdump|nvdisasm
# Exit 0 with the path on stdout; 1 (nothing printed) when not found; 2 on a usage error.
set -uo pipefail
case "${1:-}" in
  cuobjdump | nvdisasm) tool=$1 ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *)
    echo "usage: tools/find-cuda-tool.sh cuobjdump|nvdisasm" >&2
    exit 2
    ;;
esac
if p=$(command -v "$tool" 2>/dev/null) && [ -x "$p" ]; then
  echo "$p"
  exit 0
fi
for home in "${HOT_CUDA_HOME:-}" "${CUDA_HOME:-}" "${CUDA_PATH:-}" /usr/local/cuda; do
  if [ -n "$home" ] && [ -x "$home/bin/$tool" ]; then
    echo "$home/bin/$tool"
    exit 0
  fi
done
py="${PYTHON:-python3}"
command -v "$py" >/dev/null 2>&1 || exit 1
sites=$("$py" -c 'import site, sys
dirs = list(site.getsitepackages()) if hasattr(site, "getsitepackages") else []
dirs.append(site.getusersitepackages())
dirs += [p for p in sys.path if p.endswith("-packages")]
print("\n".join(dict.fromkeys(dirs)))' 2>/dev/null) || exit 1
while IFS= read -r sp; do
  [ -d "$sp/nvidia" ] || continue
  # cu13 before cu12 (version order, newest first), then the older cuda_<name> layout
  cands=$({ ls -d "$sp"/nvidia/cu[0-9]*/bin/"$tool" | sort -rV
            ls -d "$sp"/nvidia/cuda_*/bin/"$tool"; } 2>/dev/null)
  while IFS= read -r p; do
    if [ -n "$p" ] && [ -x "$p" ]; then
      echo "$p"
      exit 0
    fi
  done <<<"$cands"
done <<<"$sites"
exit 1
