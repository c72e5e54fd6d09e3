#!/usr/bin/env bash
# Fetches, on a machine WITH a Debian package registry, the packages tools/device-check.sh needs on
# a GPU machine without one: Lua 5.4 and Check (static libraries and headers) and pkg-config.
# They land as .deb files in .deps/debs (ignored by git; carried to the GPU machine). Called by
# tools/device-prep.sh, which also fills the kernel cache the device check needs
# (docs/device-check.md).
# Usage: tools/fetch-deps.sh
set -euo pipefail
case "${1:-}" in
  "") ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "fetch-deps: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
mkdir -p .deps/debs
cd .deps/debs
pkgs=(liblua5.4-dev liblua5.4-0 lua5.4 check libsubunit-dev libsubunit0 libsqlite3-dev libsqlite3-0 pkg-config pkgconf pkgconf-bin libpkgconf3)
if ! apt-get download "${pkgs[@]}" >/dev/null 2>&1; then
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  apt-get download "${pkgs[@]}"
fi
ls -1 *.deb
echo "fetch-deps: $(ls -1 *.deb | wc -l) packages in .deps/debs"
