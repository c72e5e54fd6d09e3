#!/usr/bin/env bash
# hot-tune-standin.sh — a stand-in for hot-tune with the same command line, used to test the
# Slurm harness itself (tools/slurm) independently of the tuner: tests/slurm/test_slurm.sh runs it
# when HOT_TUNE_EXE names it. It writes deterministic rows into an SQLite file with the sqlite3 CLI:
# 6 variants per layer of the spec (the names of its hot.linear layers) and per kind, and with
# --shard I/N only the variants whose global index k satisfies k % N == I, exactly like a sharded
# sweep. The date column differs between runs, as in the real tuner.
#   hot-tune-standin.sh SPEC [--layer NAME] [--db FILE] [--shard I/N] [--kind accuracy|speed|all]
#                            [--resume] [--budget SECONDS] [--json]
#   hot-tune-standin.sh merge OUT.db IN.db...
#   hot-tune-standin.sh show DB [--rows]
# Exit status 0 on success, 1 with a one-line error otherwise.
set -euo pipefail
me=hot-tune-standin
die() { echo "$me: error: $*" >&2; exit 1; }
command -v sqlite3 >/dev/null 2>&1 || die "sqlite3 not found on PATH"
schema="CREATE TABLE IF NOT EXISTS results (model TEXT, layer TEXT, kind TEXT, variant TEXT,
  status TEXT, gx_err REAL, date TEXT, PRIMARY KEY (model, layer, kind, variant));"
sq() { sqlite3 -bail -batch "$@"; }

[ $# -ge 1 ] || die "usage: $me SPEC [options] | merge OUT.db IN.db... | show DB [--rows]"
case $1 in
  merge)
    [ $# -ge 3 ] || die "usage: $me merge OUT.db IN.db..."
    out=$2; shift 2
    sq "$out" "$schema" || die "$out: cannot create"
    for f in "$@"; do
      [ -r "$f" ] || die "$f: cannot read"
      sq "$out" "ATTACH '$f' AS s; INSERT OR REPLACE INTO results SELECT * FROM s.results;" ||
        die "$f: cannot merge"
    done
    exit 0 ;;
  show)
    [ $# -ge 2 ] || die "usage: $me show DB [--rows]"
    [ -r "$2" ] || die "$2: cannot read"
    if [ "${3:-}" = --rows ]; then
      sq -separator ' ' "$2" "SELECT model, layer, kind, variant, status, printf('%.6e', gx_err)
        FROM results ORDER BY model, layer, kind, variant;"
    else
      sq -separator ' ' "$2" "SELECT kind, status, count(*) || ' rows' FROM results
        GROUP BY kind, status ORDER BY kind, status;"
    fi
    exit 0 ;;
esac

spec=$1; shift
[ -r "$spec" ] || die "$spec: no such spec"
db=tune.db layer="" shard=0/1 kind=all
while [ $# -gt 0 ]; do
  case $1 in
    --layer) layer=${2:?}; shift 2 ;;
    --db) db=${2:?}; shift 2 ;;
    --shard) shard=${2:?}; shift 2 ;;
    --kind) kind=${2:?}; shift 2 ;;
    --budget) shift 2 ;;
    --resume|--json) shift ;;
    *) die "unknown argument '$1'" ;;
  esac
done
case $shard in *[!0-9/]*|*/*/*|/*|*/) die "--shard '$shard': expected I/N" ;; esac
si=${shard%/*} sn=${shard#*/}
[ "$sn" -ge 1 ] && [ "$si" -lt "$sn" ] || die "--shard '$shard': expected 0 <= I < N"
case $kind in accuracy) kinds=accuracy ;; speed) kinds=speed ;; all) kinds="accuracy speed" ;;
  *) die "--kind '$kind': expected accuracy, speed or all" ;; esac
model=$(sed -n 's/^[[:space:]]*name[[:space:]]*=[[:space:]]*"\([^"]*\)".*/\1/p' "$spec" | head -n1)
layers=$(grep -o 'hot\.linear[[:space:]]*{[[:space:]]*name[[:space:]]*=[[:space:]]*"[^"]*"' "$spec" |
  sed 's/.*"\([^"]*\)"$/\1/')
[ -n "$layers" ] || die "$spec: no hot.linear layer found"
if [ -n "$layer" ]; then
  printf '%s\n' $layers | grep -qx -- "$layer" || die "--layer '$layer': no such layer in $spec"
  layers=$layer
fi
date=$(date -u +%Y-%m-%dT%H:%M:%S.%NZ)
sql="$schema BEGIN;"
k=0
for l in $layers; do
  for kd in $kinds; do
    for v in 0 1 2 3 4 5; do
      if [ $((k % sn)) -eq "$si" ]; then
        sql+="INSERT OR REPLACE INTO results VALUES ('$model', '$l', '$kd', 'tile_m=$((32 << (v % 3)));stages=$((2 + v / 3))', 'ok', $((k * 37 % 101 + 1)).0e-4, '$date');"
      fi
      k=$((k + 1))
    done
  done
done
sq "$db" "$sql COMMIT;" || die "$db: cannot write"
