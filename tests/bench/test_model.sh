#!/usr/bin/env bash
# test_model.sh HOT_BENCH SOURCE_DIR WORK_DIR — hot-bench SPEC --model (docs/gpu-model.md) and
# tools/model-check.py (docs/device-check.md), without a GPU:
#  1. bench_large and vit_b16 (sm_90 plans): every kernel row has registers, counts (shared
#     wavefronts / ideal, sectors / ideal, bytes / unique: no "?"), waves and both GPUs' times;
#     the tables are the compiled-in ones; the JSON parses, has every column per launch and GPU,
#     and its totals agree with the text; the predicted backward vs cuBLAS BF16 and FP8 on both
#     GPUs, split into HOT's GEMMs and its other kernels (per layer in the text, in total in the
#     JSON, each agreeing with the rows; the other kernels at full waves never above them); the
#     multicast what-if (never above the GEMMs as planned; equal on the sm_90 plans, whose
#     mma.sync GEMMs have no TMA; lower for bench_large's sm_90a GEMMs, which are L2-bound) and
#     the L2 check (the closed form at the model's constants: 8.69 and 5.79 TB/s);
#  2. tables named by HOT_KERNEL_QUALITY / HOT_MEMSTAT_COUNTS that do not exist: said ("absent"),
#     the columns "?", still a prediction (spec names cannot hold a quote: the JSON's escaping
#     is checked statically by reliability_escaping);
#  3. model-check.py on a measurement made from the model (each backward launch measured at twice
#     its H200 prediction, one launch left out): geomean 2.00, the left-out launch listed, exit
#     0; an H100 name picks the H100 column; no matching launch exits 1; bad input (JSON of
#     another shape, --out in a missing folder) exits 2 with one line; --help prints the usage.
set -u
hb=$1 src=$2 work=$3
PY=${PYTHON:-python3}
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$work" && mkdir -p "$work" || fail "cannot create $work"

# 1.
for s in bench_large vit_b16 bench_large@sm_90a; do
  arch=()
  [[ $s == *@* ]] && arch=(--arch "${s#*@}")
  "$hb" "$src/specs/${s%@*}.lua" --model "${arch[@]}" >"$work/$s.txt" 2>"$work/$s.err" || fail "$s --model exited $?: $(cat "$work/$s.err")"
  grep -q 'registers: tests/nvrtc/kernel_quality.txt (compiled in)' "$work/$s.txt" || fail "$s: register table not the compiled-in one"
  grep -q 'access counts: bench/memstat_counts.txt (compiled in)' "$work/$s.txt" || fail "$s: counts not the compiled-in ones"
  rows=$(grep -cE '^  (save|backward|calibrate) ' "$work/$s.txt")
  [ "$rows" -gt 10 ] || fail "$s: only $rows kernel rows"
  bad=$(grep -E '^  (save|backward|calibrate) ' "$work/$s.txt" | grep -c '?')
  [ "$bad" -eq 0 ] || fail "$s: $bad rows with a '?' (not counted or no registers):"$'\n'"$(grep -E '^  (save|backward|calibrate) ' "$work/$s.txt" | grep '?')"
  for g in "H100 SXM" H200; do
    grep -qE "^  $g +HOT +[0-9.]+ us +cuBLAS BF16 \(2 GEMMs\) +[0-9.]+ us \(x[0-9.]+\) +cuBLASLt FP8 +[0-9.]+ us" "$work/$s.txt" ||
      fail "$s: no backward comparison for $g"
    grep -qE "^  $g +what-if, not built: .*HOT's GEMMs [0-9.]+ us, backward [0-9.]+ us \(cuBLAS BF16 x[0-9.]+\)(; no change: .*)?$" "$work/$s.txt" ||
      fail "$s: no multicast what-if for $g"
    if [[ $s == *@sm_90a ]]; then
      ! grep -qE "^  $g +what-if.*; no change" "$work/$s.txt" || fail "$s: what-if says no change on wgmma plans"
    else
      grep -qE "^  $g +what-if.*; no change: these plans' GEMMs are mma.sync" "$work/$s.txt" || fail "$s: what-if does not say why it is unchanged"
    fi
    grep -qE "^  $g +L2 check: cuBLAS BF16 at 0.75 of its peak with 128x256 tiles needs 8.69 TB/s of L2 -> SM, 5.79 with a 2-CTA multicast of B; the model's L2: 5.50 TB/s$" "$work/$s.txt" ||
      fail "$s: no L2 check for $g (or not the closed form)"
  done
  "$PY" - "$work/$s.txt" "$rows" "$s" <<'PY' || fail "$s: JSON"
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("\nJSON ") + 6:])
ks = j["kernels"]
assert len(ks) == 2 * int(sys.argv[2]), (len(ks), sys.argv[2])
need = ("layer call role kernel phase gpu blocks threads registers smem blocks_per_sm limit waves "
        "smem_wavefronts_per_request smem_ideal_per_request sectors_per_request "
        "sectors_ideal_per_request bytes_per_unique smem_wavefronts us compute_us hbm_us l2_us "
        "smem_us bound").split()
for k in ks:
    miss = [n for n in need if n not in k]
    assert not miss, (k["kernel"], miss)
    assert k["us"] >= 2.0 and k["registers"] > 0 and k["sectors_per_request"] >= k["sectors_ideal_per_request"] > 0
for b in j["backward"]:
    s = sum(k["us"] for k in ks if k["gpu"] == b["gpu"] and k["call"] == "backward")
    assert abs(s - b["hot_us"]) < 0.01 * len(ks), (b, s)
    g = sum(k["us"] for k in ks if k["gpu"] == b["gpu"] and k["call"] == "backward" and k["role"].startswith("gemm"))
    assert 0 < g < s and abs(g - b["hot_gemm_us"]) < 0.01 * len(ks), (b, g)
    assert abs(b["hot_gemm_us"] + b["hot_other_us"] - b["hot_us"]) < 0.02, b
    assert 0 < b["hot_other_full_waves_us"] <= b["hot_other_us"] + 0.01, b
    # the what-if: the rows' us_multicast summed; never above the GEMMs as planned; the sm_90
    # plans' mma.sync GEMMs unchanged, bench_large's L2-bound wgmma GEMMs lower
    gm = sum(k["us_multicast"] for k in ks if k["gpu"] == b["gpu"] and k["call"] == "backward" and k["role"].startswith("gemm"))
    assert abs(gm - b["hot_gemm_multicast_us"]) < 0.01 * len(ks), (b, gm)
    assert abs(b["hot_multicast_us"] - (b["hot_gemm_multicast_us"] + b["hot_other_us"])) < 0.02, b
    assert all(k["us_multicast"] <= k["us"] + 1e-9 and k["l2_multicast_us"] <= k["l2_us"] + 1e-9 for k in ks), b
    assert all(k["us_multicast"] == k["us"] for k in ks if not k["role"].startswith("gemm")), b
    if sys.argv[3].endswith("@sm_90a"):
        assert b["hot_gemm_multicast_us"] < 0.9 * b["hot_gemm_us"], b
    else:
        assert abs(b["hot_gemm_multicast_us"] - b["hot_gemm_us"]) < 0.01, b
    assert abs(b["cublas_bf16_l2_need_tbs"] - 8.69) < 0.01 and abs(b["cublas_bf16_l2_need_multicast_tbs"] - 5.79) < 0.01, b
# a split line per layer and GPU after the layer's rows: its backward, GEMMs and other kernels
# each the sum of that layer's JSON rows on that GPU, the other kernels at full waves not above
# the other kernels
layers = sorted({k["layer"] for k in ks})
layer, seen = None, 0
for l in t.splitlines():
    if l.startswith(" layer "):
        layer = l.split()[1]
    if not l.startswith("  = backward on "):
        continue
    seen += 1
    gpu = "H100 SXM" if l.startswith("  = backward on H100 SXM") else l.split()[3]
    w = l.replace(",", " ").replace(";", " ").replace(":", " ").replace("(", " ").split()
    tot, gemm = float(w[w.index("us") - 1]), float(w[w.index("GEMMs") + 1])
    other, full = float(w[w.index("kernels") + 1]), float(w[w.index("kernels") + 3])
    rows = [k for k in ks if k["layer"] == layer and k["gpu"] == gpu and k["call"] == "backward"]
    want_g = sum(k["us"] for k in rows if k["role"].startswith("gemm"))
    want_t = sum(k["us"] for k in rows)
    assert rows and abs(tot - want_t) < 0.1 and abs(gemm - want_g) < 0.1, (l, want_t, want_g)
    assert abs(other - (want_t - want_g)) < 0.15 and 0 < full <= other + 0.05, l
assert seen == 2 * len(layers), (seen, layers)
assert any(k["smem_us"] > 0 for k in ks if k["role"].startswith("gemm"))
PY
done
echo "bench_large, vit_b16, bench_large at sm_90a: every row counted, both GPUs, JSON complete"

# 2.
HOT_KERNEL_QUALITY=$work/none.txt HOT_MEMSTAT_COUNTS=$work/none2.txt "$hb" "$src/specs/vit_b16.lua" --model \
  >"$work/absent.txt" 2>&1 || fail "absent tables: exit $?"
grep -q "registers: absent (HOT_KERNEL_QUALITY: " "$work/absent.txt" || fail "absent register table not said"
grep -q "access counts: absent (HOT_MEMSTAT_COUNTS: " "$work/absent.txt" || fail "absent counts not said"
grep -qE '^  backward .* \? ' "$work/absent.txt" || fail "absent tables: no '?' columns"
echo "absent tables said"

# 3.
mc=$src/tools/model-check.py
"$PY" - "$work/vit_b16.txt" "$work/meas.json" <<'PY' || fail "cannot make the measurement"
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("\nJSON ") + 6:])
layers = {}
drop = True
for k in j["kernels"]:
    if k["gpu"] != "H200" or k["call"] != "backward":
        continue
    if drop:  # one launch the device did not time
        drop = False
        continue
    layers.setdefault(k["layer"], []).append({"kernel": k["kernel"], "role": k["role"], "phase": k["phase"],
                                              "call": "backward", "ms": 2 * k["us"] / 1e3})
json.dump({"layers": [{"name": n, "kernels": ks, "hot_bwd": {"n": 30, "median": 0.5}}
                      for n, ks in layers.items()]}, open(sys.argv[2], "w"))
PY
"$PY" "$mc" "$work/vit_b16.txt" "$work/meas.json" "NVIDIA H200, 570.00, 143771 MiB, 9.0" --out "$work/mc.txt" \
  >"$work/mc.out" 2>&1 || fail "model-check exited $?: $(cat "$work/mc.out")"
last=$(tail -1 "$work/mc.txt")
[[ $last == "model error: "*" launches, geomean measured/predicted 2.00, median factor 2.00, worst factor 2.00 ("* ]] ||
  fail "model-check summary: $last"
grep -q 'model column H200$' "$work/mc.txt" || fail "H200 column not picked"
grep -q 'without a counterpart: .*(predicted, not measured)' "$work/mc.txt" || fail "the left-out launch is not listed"
grep -qE '^  qkv +backward: measured 500.0 us, predicted [0-9.]+ us' "$work/mc.txt" || fail "no backward total line"
"$PY" "$mc" "$work/vit_b16.txt" "$work/meas.json" "NVIDIA H100 80GB HBM3" >"$work/mc1.txt" 2>&1 || fail "H100: exit $?"
grep -q 'model column H100 SXM$' "$work/mc1.txt" || fail "H100 column not picked"
echo '{"layers": []}' >"$work/empty.json"
"$PY" "$mc" "$work/vit_b16.txt" "$work/empty.json" H200 >"$work/mc2.txt" 2>&1
[ $? -eq 1 ] || fail "no matching launch did not exit 1"
grep -q '^model error: 0 launches matched' "$work/mc2.txt" || fail "no-match summary"
"$PY" "$mc" "$work/meas.json" "$work/meas.json" H200 >"$work/mc3.txt" 2>&1
[ $? -eq 2 ] || fail "a file that is not --model output did not exit 2"
# JSON of another shape: one line and exit 2, no traceback; an --out in a missing folder likewise
echo '[1]' >"$work/list.json"
"$PY" "$mc" "$work/vit_b16.txt" "$work/list.json" H200 >"$work/mc4.txt" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$work/mc4.txt")" -eq 1 ] && ! grep -q Traceback "$work/mc4.txt" ||
  fail "a measurement that is a JSON list: $(cat "$work/mc4.txt")"
"$PY" "$mc" "$work/vit_b16.txt" "$work/meas.json" H200 --out "$work/none/mc.txt" >"$work/mc5.txt" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$work/mc5.txt")" -eq 1 ] && ! grep -q Traceback "$work/mc5.txt" ||
  fail "--out in a missing folder: $(cat "$work/mc5.txt")"
# input that is no JSON (cut short, not UTF-8): one line naming the file, exit 2
printf '{"layers": [' >"$work/cut.json"
printf '{"layers": "\xff"}' >"$work/bytes.json"
printf 'JSON {"kernels": [' >"$work/cut.txt"
for pair in "vit_b16.txt cut.json" "vit_b16.txt bytes.json" "cut.txt meas.json"; do
  set -- $pair
  "$PY" "$mc" "$work/$1" "$work/$2" H200 >"$work/mc7.txt" 2>&1
  rc=$?
  bad=$([ "$1" = cut.txt ] && echo "$1" || echo "$2")
  [ $rc -eq 2 ] && [ "$(wc -l <"$work/mc7.txt")" -eq 1 ] && grep -q "^model-check: $work/$bad: not " "$work/mc7.txt" ||
    fail "$bad, no JSON: the message does not name it: $(cat "$work/mc7.txt")"
done
# a model whose predicted time is not positive: one line naming the launch, exit 2
"$PY" - "$work/vit_b16.txt" "$work/neg.txt" <<'PY' || fail "cannot make the bad model"
import json, sys
t = open(sys.argv[1]).read()
j = json.loads(t[t.index("\nJSON ") + 6:])
next(k for k in j["kernels"] if k["gpu"] == "H200")["us"] = -1.0
open(sys.argv[2], "w").write("JSON " + json.dumps(j))
PY
"$PY" "$mc" "$work/neg.txt" "$work/meas.json" H200 >"$work/mc9.txt" 2>&1
[ $? -eq 2 ] && [ "$(wc -l <"$work/mc9.txt")" -eq 1 ] && grep -q "predicts -1.0 us (not a positive time)" "$work/mc9.txt" ||
  fail "a negative predicted time: $(cat "$work/mc9.txt")"
# --out whole or not at all: a write that fails (past a file-size limit) leaves the earlier
# report as it was and no partial file, with one line naming --out
mkdir "$work/out" && echo "earlier report" >"$work/out/mc.txt"
(trap '' XFSZ; ulimit -f 1; "$PY" "$mc" "$work/vit_b16.txt" "$work/meas.json" H200 --out "$work/out/mc.txt" \
  >"$work/mc8.txt" 2>&1)
[ $? -eq 2 ] && grep -q "^model-check: --out $work/out/mc.txt: cannot write" "$work/mc8.txt" ||
  fail "a failed --out write: $(tail -1 "$work/mc8.txt")"
[ "$(cat "$work/out/mc.txt")" = "earlier report" ] && [ "$(ls -A "$work/out")" = mc.txt ] ||
  fail "a failed --out write changed the folder: $(ls -A "$work/out")"
"$PY" "$mc" --help >"$work/mc6.txt" 2>&1 && grep -q '^Usage: tools/model-check.py MODEL' "$work/mc6.txt" ||
  fail "model-check --help"
echo "model-check: $last"
echo PASS
