#!/usr/bin/env python3
"""model-check.py — the GPU model's prediction beside the measurement, per kernel launch.

Usage: tools/model-check.py MODEL BENCH_JSON GPU_NAME [--out FILE]
  MODEL       the output of `hot-bench SPEC --model` (the JSON after its line's "JSON ")
  BENCH_JSON  the --out file of `hot-bench SPEC` on a GPU (layers[].kernels[]: the per-kernel
              medians of the profiled runs, and layers[].hot_bwd)
  GPU_NAME    the device's name (nvidia-smi): "H200" picks the model's H200 column, "H100" its
              H100 SXM column; any other device is compared with the H100 SXM column and says so
Prints one row per measured launch (layer, call, role, phase, kernel, measured us, predicted
us, measured / predicted, the predicted bound), the launches without a counterpart, and a
summary: the geometric mean of measured / predicted, the median and worst factor of error
(max(r, 1/r)), and per layer the measured backward against the predicted sum. Its last line:
  model error: N launches, geomean measured/predicted G, median factor M, worst factor W (KERNEL)
Exit status 0 when at least one launch matched, 1 when none did (nothing tested the model),
2 on unreadable input. Documentation: docs/gpu-model.md, docs/device-check.md.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from hot.files import replace_text  # noqa: E402  (this checkout's package: no libhot needed)


def load_model(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    at = 0 if text.startswith("JSON ") else text.find("\nJSON ") + 1
    if at <= 0 and not text.startswith("JSON "):
        raise ValueError("%s: no line starting with 'JSON ' (not hot-bench --model output)" % path)
    return parse_json(path, text[at + 5:])  # the JSON object runs to the end of the output


def parse_json(path, text):
    try:
        return json.loads(text)
    except ValueError as e:
        raise ValueError("%s: not JSON (%s)" % (path, e)) from None


def load_bench(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("%s: not UTF-8 (byte 0x%02x at offset %d)" % (path, data[e.start], e.start)) from None
    return parse_json(path, text)


def pick_gpu(name):
    n = name.upper()
    if "H200" in n:
        return "H200", ""
    if "H100" in n:
        return "H100 SXM", ""
    return "H100 SXM", " (no model of %s: compared with the H100 SXM column)" % name


def main(argv):
    if any(a in ("-h", "--help") for a in argv[1:]):
        print(__doc__.strip())
        return 0
    args = [a for a in argv[1:] if a != "--out"]
    out = None
    if "--out" in argv:
        i = argv.index("--out")
        if i + 1 >= len(argv):
            print("model-check: --out needs a file", file=sys.stderr)
            return 2
        out = argv[i + 1]
        args.remove(out)
    if len(args) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        model = load_model(args[0])
        bench = load_bench(args[1])
        text, matched = report(model, bench, args[2])
        if out:  # whole or not at all: a failed write leaves an earlier report as it was
            try:
                replace_text(out, text)
            except OSError as e:
                raise ValueError("--out %s: cannot write: %s" % (out, e.strerror or e)) from None
    except (OSError, ValueError) as e:
        print("model-check: %s" % e, file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0 if matched else 1


def report(model, bench, gpu_name):
    """The report's text and whether any launch matched; ValueError naming what is malformed
    when the inputs are JSON of another shape."""
    try:
        return compare(model, bench, gpu_name)
    except (AttributeError, KeyError, TypeError, ZeroDivisionError) as e:
        raise ValueError("the inputs are not hot-bench --model output and a hot-bench --out file "
                         "(%s: %s)" % (type(e).__name__, e)) from None


def compare(model, bench, gpu_name):
    gpu, note = pick_gpu(gpu_name)
    pred = {}
    for k in model.get("kernels", []):
        if k.get("gpu") == gpu:
            key = (k["layer"], k["call"], k["role"], k["phase"])
            if isinstance(k["us"], bool) or not isinstance(k["us"], (int, float)) or \
                    not k["us"] > 0 or k["us"] == float("inf"):
                raise ValueError("the model's launch %s %s %s %s predicts %r us (not a positive "
                                 "time)" % (key + (k["us"],)))
            pred[key] = k
    lines = ["model vs measured on %s, model column %s%s" % (gpu_name, gpu, note),
             "%-10s %-9s %-10s %2s %-42s %10s %10s %7s  %s" % (
                 "layer", "call", "role", "ph", "kernel", "meas us", "pred us", "m/p", "bound")]
    ratios, seen, missing = [], set(), []
    bwd = []
    for layer in bench.get("layers", []):
        name = layer.get("name", "?")
        for k in layer.get("kernels") or []:
            key = (name, k.get("call"), k.get("role"), k.get("phase"))
            p = pred.get(key)
            ms = k.get("ms")
            if p is None or ms is None or ms <= 0:
                missing.append("%s %s %s %s (%s)" % (name, k.get("call"), k.get("role"), k.get("phase"),
                                                     "no prediction" if p is None else "not timed"))
                continue
            seen.add(key)
            r = ms * 1e3 / p["us"]
            ratios.append((r, "%s %s/%s" % (name, k.get("kernel"), k.get("phase"))))
            lines.append("%-10s %-9s %-10s %2d %-42.42s %10.1f %10.1f %7.2f  %s" % (
                name, k["call"], k["role"], k["phase"], k.get("kernel", "?"), ms * 1e3, p["us"], r,
                p["bound"]))
        hb = layer.get("hot_bwd") or {}
        pb = sum(v["us"] for kk, v in pred.items() if kk[0] == name and kk[1] == "backward")
        if hb.get("median") and pb > 0:
            bwd.append("  %-10s backward: measured %.1f us, predicted %.1f us (sum of launches), "
                       "m/p %.2f" % (name, hb["median"] * 1e3, pb, hb["median"] * 1e3 / pb))
    for key in sorted(k for k in pred if k not in seen and k[1] != "calibrate"):
        missing.append("%s %s %s %s (predicted, not measured)" % key)
    if missing:
        lines.append("without a counterpart: " + "; ".join(missing))
    lines += bwd
    if ratios:
        g = math.exp(sum(math.log(r) for r, _ in ratios) / len(ratios))
        fac = sorted((max(r, 1 / r), w) for r, w in ratios)
        med = fac[len(fac) // 2][0] if len(fac) % 2 else (fac[len(fac) // 2 - 1][0] + fac[len(fac) // 2][0]) / 2
        lines.append("model error: %d launches, geomean measured/predicted %.2f, median factor %.2f, "
                     "worst factor %.2f (%s)" % (len(ratios), g, med, fac[-1][0], fac[-1][1]))
    else:
        lines.append("model error: 0 launches matched (no per-kernel measurement to test the model)")
    return "\n".join(lines) + "\n", bool(ratios)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
