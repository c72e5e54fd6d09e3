#!/usr/bin/env bash
# What docs/reliability.md promises, through hot's programs: every example of each class, as an
# outsider would try it. Every command that could block runs under `timeout`: a hang is a failure.
# Usage: test_cli.sh HOT_GEN HOT_TUNE HOT_BENCH SPEC   (SPEC: tests/tune/tiny_sweep.lua)
set -u
GEN=$1 TUNE=$2 BENCH=$3 SPEC=$4
command -v sqlite3 >/dev/null || { echo "SKIP: sqlite3 not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
export HOT_CACHE_DIR=$T/cache HOT_TUNE_DB=$T/unused.db
mkdir -p cache
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
ok() { echo "ok: $*"; }
# run OUT CMD...: stdout+stderr into OUT; 124 when it hung (and says so)
run() {
  local out=$1; shift
  timeout 20 "$@" >"$out" 2>&1; local st=$?
  [ $st -eq 124 ] && echo "  (hung: $*)"
  return $st
}
has() { grep -q -- "$2" "$1" && ok "$3" || { fail "$3: $(head -c 400 "$1")"; }; }

# fixtures: accuracy rows of layer a, and a copy whose as-written row is a usable speed row
"$TUNE" "$SPEC" --layer a --kind accuracy --db a.db --progress plain >/dev/null 2>&1 || fail "accuracy sweep"
cp a.db s.db
sqlite3 s.db "UPDATE results SET kind = 'speed', variant = 'tile_gx.stages=3;tile_gx.tile_m=128',
  timed = 1, bitexact = 1, time_med_ms = 0.1, time_p10_ms = 0.1, time_p90_ms = 0.1,
  time_min_ms = 0.1, repeats = 20, device = 'Test GPU' WHERE variant = ''"
run p.txt "$GEN" "$SPEC" --tune-db s.db --plan
has p.txt "tiles tuned: s.db .* (exact shape)" "fixture: the speed row is applied"

# ---- 1. special files: refused in one line, never waited on ----------------------------------
mkfifo fifo.db fifo.lua fifo.svg fifo.json
run o.txt "$GEN" "$SPEC" --tune-db fifo.db --plan
has o.txt "tiles default (user tuning DB ignored: tuning database fifo.db: not a regular file (a FIFO))" "hot-gen --tune-db FIFO"
HOT_TUNE_DB=$T/fifo.db run o.txt "$GEN" "$SPEC" --plan
has o.txt "fifo.db: not a regular file (a FIFO)" "HOT_TUNE_DB=FIFO"
mkdir c2 && mkfifo c2/tune.db
(unset HOT_TUNE_DB; HOT_CACHE_DIR=$T/c2 run o.txt "$GEN" "$SPEC" --plan)
has o.txt "c2/tune.db: not a regular file (a FIFO)" "a FIFO at the default <cache dir>/tune.db"
run o.txt "$TUNE" show fifo.db
has o.txt "tuning database fifo.db: not a regular file (a FIFO)" "hot-tune show FIFO"
run o.txt "$TUNE" merge m.db fifo.db
has o.txt "fifo.db: not a regular file (a FIFO)" "hot-tune merge OUT FIFO"
run o.txt "$TUNE" merge fifo.db a.db
has o.txt "fifo.db: not a regular file (a FIFO)" "hot-tune merge FIFO IN"
cp a.db w.db && mkfifo w.db-wal
run o.txt "$TUNE" show w.db
has o.txt "its companion w.db-wal is not a regular file (a FIFO)" "a FIFO as the -wal companion"
# a spec is a stream: a FIFO is read once its writer writes (as cat reads it), - is stdin; a
# directory is no stream
(sleep 1; cat "$SPEC" >fifo.lua) &
run o.txt "$GEN" fifo.lua --plan
wait
has o.txt "model tune_tiny ($T/fifo.lua)\|model tune_tiny (fifo.lua)" "spec FIFO read as a stream"
timeout 20 "$GEN" - --plan <"$SPEC" >o.txt 2>&1
has o.txt "model tune_tiny (stdin)" "spec - read from stdin"
run o.txt "$GEN" "$T" --plan
has o.txt "cannot open: not a stream (a directory)" "spec directory refused"
mkdir emit && mkfifo emit/manifest.json
run o.txt "$GEN" "$SPEC" --emit emit
has o.txt "manifest.json: cannot write: not a regular file (a FIFO)" "--emit over a FIFO"
run o.txt "$TUNE" show a.db --plot fifo.svg
has o.txt "hot-tune: --plot fifo.svg: not a regular file (a FIFO)" "--plot FIFO (checked before any work)"
run o.txt "$BENCH" "$SPEC" --out fifo.json --no-jit --iters 1 --warmup 0
has o.txt "hot-bench: --out fifo.json: not a regular file (a FIFO)" "hot-bench --out FIFO"
run o.txt "$TUNE" "$SPEC" --layer a --kind accuracy --capture fifo.db --db cf.db
has o.txt "not a regular file (a FIFO)" "--capture FIFO"

# ---- 2. a hot journal: never read as committed ------------------------------------------------
python3 - <<'EOF'
import shutil, sqlite3
c = sqlite3.connect("s.db", isolation_level=None)
c.execute("PRAGMA journal_mode=DELETE")
c.execute("PRAGMA cache_size=1")
c.execute("BEGIN")
c.execute("UPDATE results SET variant = 'tile_gx.stages=4;tile_gx.tile_m=64' WHERE kind = 'speed'")
c.execute("CREATE TABLE pad(x)")
for _ in range(60):
    c.execute("INSERT INTO pad VALUES(randomblob(3000))")
shutil.copy("s.db", "hot.db")
shutil.copy("s.db-journal", "hot.db-journal")
c.execute("ROLLBACK")
EOF
[ -s hot.db-journal ] && ok "fixture: a hot journal" || fail "no hot journal made"
run o.txt "$GEN" "$SPEC" --tune-db hot.db --plan
has o.txt "tiles default (user tuning DB ignored: tuning database hot.db: a hot journal beside it" "hot-gen --plan refuses a hot journal"
grep -q "tile_gx.stages=4;tile_gx.tile_m=64" o.txt && fail "the uncommitted row was planned" || ok "the uncommitted row is not used"
run o.txt "$TUNE" merge m2.db hot.db
has o.txt "hot journal beside it (hot.db-journal: a writer stopped mid-transaction): open it once read-write to roll back" "merge refuses a hot journal"
[ ! -e m2.db ] || [ "$(sqlite3 m2.db "SELECT count(*) FROM results WHERE variant LIKE '%stages=4%'")" = 0 ] \
  && ok "nothing uncommitted merged" || fail "merge copied the uncommitted row"

# ---- 3. messages: the value and the limit, never cut mid-word --------------------------------
cp a.db txt.db && sqlite3 txt.db "UPDATE meta SET value = '1' WHERE key = 'schema'"
run o.txt "$TUNE" show txt.db
has o.txt 'schema version "1" (stored as text, not as an integer), this hot reads version 1' "schema stored as text"
L=$(printf 'd%.0s' $(seq 1 120)); P=$T; for _ in 1 2 3 4 5; do P=$P/$L; done
mkdir -p "$P" && cp a.db "$P/tune.db"
run o.txt "$TUNE" show "$P/tune.db"
has o.txt "the path is $(( ${#P} + 8 )) bytes long; SQLite opens paths of at most 512 bytes" "a path beyond SQLite's limit"
HOT_TUNE_DB=$P/tune.db run o.txt "$GEN" "$SPEC" --plan
has o.txt "HOT_TUNE_DB: the path is $(( ${#P} + 8 )) bytes long; SQLite opens paths of at most 512 bytes" \
  "HOT_TUNE_DB beyond SQLite's limit refused when the environment is read"
"$GEN" "$SPEC" --plan --tune-db "$P/tune.db" >o.txt 2>&1
grep -m1 "tiles" o.txt | grep -q "SQLite opens paths of at most 512 bytes)$" \
  && ok "--plan's tiles line says it whole" || fail "tiles line: $(grep -m1 tiles o.txt | tail -c 120)"

# ---- 4. output a database cannot forge -------------------------------------------------------
cp s.db esc.db
sqlite3 esc.db "UPDATE results SET note = 'one' || char(10) || 'two' || char(9) || 'x',
  layer = CAST(X'61FF62' AS TEXT), config = '<&>\"' || char(1) WHERE kind = 'speed'"
n=$(sqlite3 esc.db "SELECT count(*) FROM results")
[ "$("$TUNE" show esc.db --rows | wc -l)" -eq "$n" ] && ok "--rows: one line per row ($n)" || fail "--rows: a value added lines"
"$TUNE" show esc.db --rows | awk -F'\t' 'NF != 40 { bad = 1 } END { exit bad }' && ok "--rows: 40 columns each" || fail "--rows: a value added columns"
"$TUNE" show esc.db --json | python3 -c 'import json,sys; d = json.loads(sys.stdin.buffer.read().decode("utf-8", "strict")); assert any("\n" in r["note"] for r in d["rows"])' \
  && ok "--json: valid UTF-8 JSON, newline kept as \\n" || fail "--json invalid"
"$TUNE" show esc.db --sql >esc.sql 2>/dev/null
cp esc.db rebuilt.db && sqlite3 rebuilt.db "DELETE FROM results" && sqlite3 rebuilt.db <esc.sql \
  && [ "$(sqlite3 esc.db "SELECT hex(layer) || hex(note) || hex(config) FROM results WHERE kind = 'speed'")" = \
       "$(sqlite3 rebuilt.db "SELECT hex(layer) || hex(note) || hex(config) FROM results")" ] \
  && ok "--sql: rebuilds the bytes exactly" || fail "--sql does not rebuild the row"
sqlite3 esc.db "UPDATE results SET variant = 'v<&>' || char(1) || CAST(X'FF' AS TEXT) WHERE variant = 'hq.block=8;hq.scale=tensor;hla.keep=25'"
sqlite3 esc.db "UPDATE results SET layer = CAST(X'61FF62' AS TEXT) || char(10)"
run o.txt "$TUNE" show esc.db --plot esc.svg
python3 -c 'import xml.dom.minidom,sys; xml.dom.minidom.parse("esc.svg")' && ok "--plot: well-formed SVG" || fail "--plot SVG not well-formed"
run o.txt "$TUNE" show esc.db
grep -q "$(printf '\x01')" o.txt && fail "show prints a control character raw" || ok "show: control characters escaped"

# ---- 5. limits: per layer, refused before anything is built ----------------------------------
vals() { python3 -c "print('{' + ','.join(str($1 * (i + 1)) for i in range($2)) + '}')"; }
big() { # big FILE N_LAYERS: each layer 16^4 x K + 1 variants
  cat >"$1" <<EOF
local hot = require "hot"
return hot.model { name = "big", batch = 2, tokens = 64, target = hot.target { arch = "sm_90" },
  layers = { hot.linear { name = "a", in_features = 64, out_features = 96 },
             hot.linear { name = "b", in_features = 64, out_features = 64 },
             hot.linear { name = "c", in_features = 64, out_features = 32 } },
  sweep = hot.sweep { ["tile_gx.tile_m"] = $(vals 16 16), ["tile_gx.tile_n"] = $(vals 16 16),
    ["tile_gw.tile_m"] = $(vals 16 16), ["tile_gw.tile_n"] = $(vals 16 16), ["tile_gx.tile_k"] = $(vals 16 "$2") } }
EOF
}
big big16.lua 16 # 2^20 + 1 per layer: refused, naming the layer, before building
/usr/bin/time -f "%M" -o rss.txt timeout 60 "$TUNE" big16.lua --layer a --kind speed --db big.db >o.txt 2>&1
has o.txt "layer a: the space has 1048577 variants, at most 1048576 per layer" "2^20 + 1 variants refused"
rss=$(tail -1 rss.txt); [ "$rss" -lt 200000 ] && ok "refused before building ($rss KB)" || fail "built before refusing: $rss KB"
big big6.lua 6 # 3 layers x 393217: each within the limit
timeout 300 "$TUNE" big6.lua --kind speed --db big6.db --budget 0.001 --progress plain >o.txt 2>&1
has o.txt "1179651 variants in all" "3 layers of 393217 variants each: accepted (per-layer count)"

# ---- 6. a capture of another blocking is refused ---------------------------------------------
cap() { python3 - "$1" "$2" "$3" <<'EOF'
import hashlib, math, struct, sys
path, B, L = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
O, I, T = 96, 64, B * L
vals = lambda n, k: [math.sin(0.37 * i + k) for i in range(n)]
payload = b"".join(struct.pack("<%df" % n, *vals(n, k)) for k, n in enumerate((T * I, O * I, T * O)))
hdr = b"HOTCAP\0\0" + struct.pack("<IIII", 1, 160, 0, 4) + struct.pack("<qqqqq", B, L, O, I, len(payload))
hdr += struct.pack("<I", 1) + b"a".ljust(64, b"\0") + b"\0" * 28
body = hdr + payload
open(path, "wb").write(body + hashlib.sha256(body).digest())
EOF
}
cap a10.cap 1 10 && cap a64.cap 1 64
run o.txt "$TUNE" "$SPEC" --layer a --kind accuracy --capture a10.cap --db c10.db
has o.txt "captured B x L = 1 x 10 blocks differently from layer a at B x L = 2 x 64" "capture B=1 L=10 for a layer of B=2 L=64: refused"
[ ! -e c10.db ] && ok "no rows from the refused capture" || fail "rows written for a refused capture"
run o.txt "$TUNE" "$SPEC" --layer a --kind accuracy --capture a64.cap --db c64.db --progress plain
[ "$(sqlite3 c64.db "SELECT count(*) FROM results WHERE note LIKE '%capture B=1 L=64%' AND gx_err_capture IS NOT NULL")" = 9 ] \
  && ok "capture B=1 L=64: used, its shape in every row's note" || fail "capture of the same blocking: $(sqlite3 c64.db 'SELECT note FROM results LIMIT 1')"

# ---- 7. a write that fails keeps the file it would replace, leaves no torn one ----------------
# (the file-size limit makes the write fail with EFBIG: SIGXFSZ ignored, as the limit's shell does)
printf '{"kept": 1}\n' >keep.json
(trap '' XFSZ; ulimit -f 1; timeout 60 "$BENCH" "$SPEC" --layer a --no-jit --out keep.json >/dev/null 2>o.txt)
st=$?
[ $st -ne 0 ] && ok "hot-bench --out: a failed write fails the run" || fail "hot-bench --out: exit 0 on a failed write"
has o.txt "^hot-bench: --out keep.json: cannot write: File too large" "hot-bench --out: the failed write said in one line"
[ "$(cat keep.json)" = '{"kept": 1}' ] && ok "hot-bench --out: the file before the run kept" \
  || fail "hot-bench --out: the file before the run clobbered: $(head -c 100 keep.json)"
ls keep.json.tmp.* >/dev/null 2>&1 && fail "hot-bench --out: a temporary file left" || ok "hot-bench --out: no temporary file left"

# ---- 8. nearest shape: a cut-off, and how far ------------------------------------------------
cp s.db far.db && sqlite3 far.db "UPDATE results SET batch = 4611686018427387904, tokens = 4611686018427387904 WHERE kind = 'speed'"
run o.txt "$GEN" "$SPEC" --tune-db far.db --plan
has o.txt "tiles default (the nearest tuned shape 4611686018427387904x4611686018427387904x96x64 in far.db is at distance" "a row at 2^62 x 2^62 is not used"
cp s.db near.db && sqlite3 near.db "UPDATE results SET tokens = 32 WHERE kind = 'speed'"
run o.txt "$GEN" "$SPEC" --tune-db near.db --plan
has o.txt "(nearest shape 2x32x96x64, distance 0.69 of at most 2.08)" "a row 2x off in T: used, the distance said"

# ---- 10b. a missing layer names the layers ----------------------------------------------------
run o.txt "$GEN" "$SPEC" --layer fc3 --plan
has o.txt "has no layer 'fc3' (layers: a, b)" "hot-gen --layer fc3"

[ $fails -eq 0 ] && echo "all reliability checks passed" || echo "$fails reliability check(s) failed"
[ $fails -eq 0 ]
