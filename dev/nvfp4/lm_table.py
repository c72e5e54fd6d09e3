"""The table of docs/nvfp4.md from train.py's JSON files (one per seed, or one of several), then
the goal per pair (hot's recipe, its anchor): each one's gap to bf16 (mean over seeds), the
fraction hot / anchor, and the per-seed gaps (their scatter is the noise of the measurement):

    python3 dev/nvfp4/lm_table.py build/nvfp4/lm_s0.json build/nvfp4/lm_s1.json build/nvfp4/lm_s2.json
"""
import json
import statistics
import sys

# (hot's NVFP4 recipe, the NVIDIA anchor it is held against, what differs between the two)
PAIRS = [("hot_nvfp4_lib", "nvidia", "libhot, fp32 fprop / fake-quant, NVFP4 fprop"),
         ("hot_nvfp4_lib", "nvidia_fp32", "backward only, both with an fp32 fprop"),
         ("hot_nvfp4", "nvidia", "fake-quant, both with NVIDIA's NVFP4 fprop"),
         ("hot_nvfp4_fp32", "nvidia_fp32", "fake-quant, both with an fp32 fprop")]


def main(paths):
    res = []
    for p in paths:
        with open(p) as f:
            res += json.load(f)["results"]
    res.sort(key=lambda r: r["seed"])
    variants = list(res[0]["val_loss"])
    mean = {v: sum(r["val_loss"][v] for r in res) / len(res) for v in variants}
    bf = mean.get("bf16")
    gaps = {v: [r["val_loss"][v] - r["val_loss"]["bf16"] for r in res] for v in variants} \
        if bf is not None else {}
    print("| variant | " + " | ".join(f"seed {r['seed']}" for r in res) +
          " | mean | − bf16 | per-seed − bf16: sd |")
    print("|---|" + "---|" * (len(res) + 3))
    for v in variants:
        gap = f"{mean[v] - bf:+.4f}" if bf is not None else "—"
        sd = f"{statistics.stdev(gaps[v]):.4f}" if bf is not None and len(res) > 1 else "—"
        print(f"| {v} | " + " | ".join(f"{r['val_loss'][v]:.4f}" for r in res) +
              f" | {mean[v]:.4f} | {gap} | {sd} |")
    if bf is None:
        return
    print("\nGoal (hot's gap to bf16 within half of the anchor's), mean over seeds:\n")
    for hot, anc, what in PAIRS:
        if hot not in mean or anc not in mean:
            continue
        g_h, g_a = mean[hot] - bf, mean[anc] - bf
        frac = f"{g_h / g_a:.2f}" if g_a > 0 else "undefined (anchor gap <= 0)"
        per_seed = ", ".join(f"({a:+.4f}, {b:+.4f})" for a, b in zip(gaps[hot], gaps[anc]))
        print(f"- {hot} vs {anc} ({what}): gaps {g_h:+.4f} / {g_a:+.4f}, fraction {frac}; "
              f"per seed (hot, anchor): {per_seed}")


if __name__ == "__main__":
    main(sys.argv[1:])
