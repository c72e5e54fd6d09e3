#!/bin/sh
# check-refs.sh — the repository must stand alone: no file may point outside it. Fails (exit 1),
# naming file:line, on
#   - a path into a sibling folder of the checkout ("../<folder>", ".../<folder>/<Name>.md"), and
#   - a Markdown document named anywhere (text like "NOTES.md" or "docs/x.md") that is not in the
#     tree: looked up relative to the mentioning file, to the root, then by file name.
# Files: those git tracks (plus untracked, not ignored) when SRC is a git checkout, else every
# file under SRC (a tarball), minus .git, .deps, build folders, BUILD_DIR and this script.
# Usage: check-refs.sh SRC [BUILD_DIR]     check-refs.sh --self-test   (the checker on planted
#        good and bad references; run first by the CTest test test_docs_refs)
set -u
if [ "${1:-}" = "--self-test" ]; then
  t=$(mktemp -d "${TMPDIR:-/tmp}/hot-refs.XXXXXX") || exit 1
  trap 'rm -rf "$t"' EXIT
  trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
  mkdir -p "$t/good/docs" "$t/bad1" "$t/bad2" "$t/bad3"
  sib="../""shared" # a sibling folder, spelled so that this script does not name one itself
  echo "see docs/GUIDE.md, GUIDE.md section 2 and README.md" >"$t/good/a.c"
  echo "# guide" >"$t/good/docs/GUIDE.md"
  echo "# readme" >"$t/good/README.md"
  echo "numbers from $sib/NOTES.md" >"$t/bad1/a.c"
  echo "# x" >"$t/bad1/NOTES.md" # present here, yet outside is outside
  printf 'line\nthe law: DESIGN_NOTES.md, section 4\n' >"$t/bad2/b.h"
  echo "see the contract in $sib" >"$t/bad3/c.txt"
  sh "$0" "$t/good" >"$t/out" 2>&1 || { echo "self-test: a clean tree was rejected:"; cat "$t/out"; exit 1; }
  for b in bad1 bad2 bad3; do
    if sh "$0" "$t/$b" >"$t/out" 2>&1; then echo "self-test: $b was not rejected"; exit 1; fi
  done
  sh "$0" "$t/bad2" >"$t/out" 2>&1
  grep -q "b.h:2:" "$t/out" || { echo "self-test: the report does not name file:line"; exit 1; }
  # its scratch file goes also when the run ends by a signal: a reader that closes the pipe
  # at once (SIGPIPE), then a hang-up and a termination mid-run (SIGINT alike, but sh starts a
  # background command with SIGINT ignored, so it is not sent here)
  mkdir "$t/tmp"
  TMPDIR="$t/tmp" sh "$0" "$t/bad2" 2>&1 | head -c 1 >/dev/null
  for sig in HUP TERM; do
    rm -f "$t/ready"
    TMPDIR="$t/tmp" HOT_REFS_STALL="$t/ready" sh "$0" "$t/good" >/dev/null 2>&1 &
    pid=$!
    n=0 # until the run has its scratch file and its traps (it says so in $t/ready)
    while [ ! -e "$t/ready" ] && [ "$n" -lt 400 ]; do sleep 0.05; n=$((n + 1)); done
    kill -s "$sig" "$pid"
    wait "$pid"
  done
  [ -z "$(ls "$t/tmp")" ] || { echo "self-test: scratch files left behind: $(ls "$t/tmp")"; exit 1; }
  echo "check-refs self-test: ok (a clean tree passes, three planted outside references fail, no scratch file outlives a signal)"
  exit 0
fi
src=${1:?usage: check-refs.sh SRC [BUILD_DIR]}
bld=${2:-}
cd "$src" || exit 1
root=$(pwd -P)
# sh runs an EXIT trap on exit and `exit`, not when a signal ends it: each signal exits (the
# traps come first, so that no signal after the scratch file's creation can skip them)
list=""
trap '[ -z "$list" ] || rm -f "$list" "$list.out"' EXIT
trap 'exit 129' HUP; trap 'exit 130' INT; trap 'exit 141' PIPE; trap 'exit 143' TERM
list=$(mktemp "${TMPDIR:-/tmp}/hot-refs-list.XXXXXX") || exit 1
# the self-test's signal case: says it is set up, then waits (at most 20 s) for the signal
[ -z "${HOT_REFS_STALL:-}" ] || { : >"$HOT_REFS_STALL"; for _ in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do sleep 1; done; }
if [ -d .git ] || [ -f .git ]; then
  git ls-files --cached --others --exclude-standard >"$list" 2>/dev/null || rm -f "$list"
fi
if [ ! -s "$list" ]; then
  skip=""
  if [ -n "$bld" ] && [ -d "$bld" ]; then
    b=$(cd "$bld" && pwd -P)
    case "$b" in "$root"/*) skip="./${b#"$root"/}" ;; esac
  fi
  find . \( -name .git -o -name .deps -o -name 'build*' -o -path "${skip:-./.none}" \) -prune -o \
    -type f -print | sed 's|^\./||' >"$list"
fi
bad=0
mds=$(grep -E '\.md$' "$list" | sed 's|.*/||' | sort -u)
while IFS= read -r f; do
  [ -f "$f" ] || continue
  [ "$f" = tests/docs/check-refs.sh ] && continue # its planted examples
  # paths into a sibling of the checkout
  if grep -nIE '\.\./shared|/shared/[A-Za-z_]+\.md' "$f" >/dev/null 2>&1; then
    grep -nIE '\.\./shared|/shared/[A-Za-z_]+\.md' "$f" | while IFS= read -r l; do
      echo "$f:${l%%:*}: refers outside the repository: $(echo "${l#*:}" | cut -c1-120)"
    done
    bad=1
  fi
  # Markdown documents that are not here
  for m in $(grep -noIE '[A-Za-z0-9_][A-Za-z0-9_./-]*\.md\b' "$f" 2>/dev/null); do
    line=${m%%:*} ref=${m#*:}
    d=$(dirname "$f")
    [ -f "$d/$ref" ] || [ -f "$ref" ] && continue
    case "$ref" in ../*) ;; *) echo "$mds" | grep -qxF "${ref##*/}" && continue ;; esac
    echo "$f:$line: names a document that is not in the repository: $ref"
    bad=1
  done
done <"$list" >"$list.out"
cat "$list.out"
if [ -s "$list.out" ]; then
  rm -f "$list.out"
  echo "check-refs: FAIL: the files above point outside the repository (the contract is templates/CONTRACT.md)"
  exit 1
fi
rm -f "$list.out"
echo "check-refs: ok ($(wc -l <"$list") files, no reference outside the repository)"
