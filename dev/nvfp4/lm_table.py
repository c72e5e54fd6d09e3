"""The table of docs/nvfp4.md from train.py's JSON files (one per seed, or one of several):

    python3 dev/nvfp4/lm_table.py build/nvfp4/lm_s0.json build/nvfp4/lm_s1.json build/nvfp4/lm_s2.json
"""
import json
import sys


def main(paths):
    res = []
    for p in paths:
        with open(p) as f:
            res += json.load(f)["results"]
    res.sort(key=lambda r: r["seed"])
    variants = list(res[0]["val_loss"])
    mean = {v: sum(r["val_loss"][v] for r in res) / len(res) for v in variants}
    bf = mean.get("bf16")
    print("| variant | " + " | ".join(f"seed {r['seed']}" for r in res) + " | mean | − bf16 |")
    print("|---|" + "---|" * (len(res) + 2))
    for v in variants:
        gap = f"{mean[v] - bf:+.4f}" if bf is not None else "—"
        print(f"| {v} | " + " | ".join(f"{r['val_loss'][v]:.4f}" for r in res) +
              f" | {mean[v]:.4f} | {gap} |")
    if bf is not None and "nvidia" in mean and "hot_nvfp4" in mean:
        g_nv, g_hot = mean["nvidia"] - bf, mean["hot_nvfp4"] - bf
        per_seed = [(r["val_loss"]["hot_nvfp4"] - r["val_loss"]["bf16"],
                     r["val_loss"]["nvidia"] - r["val_loss"]["bf16"]) for r in res]
        print(f"\ngap to bf16: nvidia {g_nv:+.4f}, hot_nvfp4 {g_hot:+.4f}; per seed (hot, nvidia): " +
              ", ".join(f"({a:+.4f}, {b:+.4f})" for a, b in per_seed))


if __name__ == "__main__":
    main(sys.argv[1:])
