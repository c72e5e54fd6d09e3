"""The per-layer table of docs/nvfp4.md from layer_errors.py's JSON: mean over seeds of the
relative errors, "g_x / g_w" per variant.

    python3 dev/nvfp4/layer_table.py build/nvfp4/layers.json
"""
import json
import sys

COLS = [("bf16", "bf16"), ("hot_int", "hot INT"), ("hot_nvfp4/hla_mxfp8", "hot NVFP4 (HLA MXFP8)"),
        ("hot_nvfp4/hla_nvfp4", "hot NVFP4 (HLA NVFP4)"), ("hot_nvfp4/hla_none", "HLA unquantised"),
        ("nvidia", "NVIDIA NVFP4")]


def main(path):
    with open(path) as f:
        res = json.load(f)
    keys = list(dict.fromkeys((r["layer"], r["kind"]) for r in res))
    seeds = sorted({r["seed"] for r in res})
    cols = [c for c in COLS if any(r["variant"] == c[0] for r in res)]
    print(f"g_x / g_w, relative Frobenius error against fp64, mean of seeds {seeds}:\n")
    print("| layer | data | " + " | ".join(n for _, n in cols) + " |")
    print("|---|---|" + "---|" * len(cols))
    for k in keys:
        cells = []
        for v, _ in cols:
            rs = [r for r in res if (r["layer"], r["kind"]) == k and r["variant"] == v]
            gx = sum(r["gx"] for r in rs) / len(rs)
            gw = sum(r["gw"] for r in rs) / len(rs)
            cells.append(f"{gx:.3f} / {gw:.3f}")
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    spread = max(max(r[f] for r in res if (r["layer"], r["kind"], r["variant"]) == (a, b, v)) -
                 min(r[f] for r in res if (r["layer"], r["kind"], r["variant"]) == (a, b, v))
                 for (a, b) in keys for v, _ in cols for f in ("gx", "gw"))
    print(f"\nlargest seed-to-seed spread of one cell: {spread:.3f}")


if __name__ == "__main__":
    main(sys.argv[1])
