"""The per-layer table of docs/nvfp4.md from layer_errors.py's JSON: mean over seeds of the
relative errors, "g_x / g_w" per variant, then the goal: each variant's gap to bf16 as a fraction
of NVIDIA's NVFP4 gap to bf16, (err - err_bf16) / (err_nvidia - err_bf16), per cell; the goal
(within half of plain NVFP4's gap) is a fraction <= 0.5.

    python3 dev/nvfp4/layer_table.py build/nvfp4/layers.json
"""
import json
import sys

COLS = [("bf16", "bf16"), ("hot_int", "hot INT (lib)"),
        ("hot_nvfp4_lib", "hot NVFP4 (lib, tri)"), ("hot_nvfp4_lib_full", "hot NVFP4 (lib, full)"),
        ("hot_nvfp4/hla_mxfp8", "hot NVFP4 (fake, tri)"),
        ("hot_nvfp4/hla_nvfp4", "HLA in NVFP4 (fake, tri)"),
        ("hot_nvfp4/hla_none", "HLA unquantised (fake, tri)"), ("nvidia", "NVIDIA NVFP4 (fake)")]
GOAL = ("hot_int", "hot_nvfp4_lib", "hot_nvfp4_lib_full", "hot_nvfp4/hla_mxfp8")


def mean_of(res, key, v, f):
    rs = [r[f] for r in res if (r["layer"], r["kind"]) == key and r["variant"] == v]
    return sum(rs) / len(rs)


def goal(res, keys, names):
    """Per variant and gradient: min … max over the cells of the fraction of NVIDIA's gap, and the
    cells (with their data kinds) where it is <= 0.5."""
    print("\nGap to bf16 as a fraction of NVIDIA NVFP4's gap, (err - err_bf16) / (err_nvidia - "
          "err_bf16), min … max over the cells; goal: <= 0.5:\n")
    print("| variant | g_x | g_x cells <= 0.5 | g_w | g_w cells <= 0.5 |")
    print("|---|---|---|---|---|")
    for v in GOAL:
        if v not in names:
            continue
        cells = []
        for f in ("gx", "gw"):
            fr = [(mean_of(res, k, v, f) - mean_of(res, k, "bf16", f)) /
                  (mean_of(res, k, "nvidia", f) - mean_of(res, k, "bf16", f)) for k in keys]
            met = [k for k, x in zip(keys, fr) if x <= 0.5]
            kinds = ", ".join(dict.fromkeys(k[1] for k in met))
            cells += [f"{min(fr):.2f} … {max(fr):.2f}",
                      f"{len(met)}/{len(keys)}" + (f" ({kinds})" if met else "")]
        print(f"| {names[v]} | " + " | ".join(cells) + " |")


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
        cells = [f"{mean_of(res, k, v, 'gx'):.3f} / {mean_of(res, k, v, 'gw'):.3f}"
                 for v, _ in cols]
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    spread = max(max(r[f] for r in res if (r["layer"], r["kind"], r["variant"]) == (a, b, v)) -
                 min(r[f] for r in res if (r["layer"], r["kind"], r["variant"]) == (a, b, v))
                 for (a, b) in keys for v, _ in cols for f in ("gx", "gw"))
    print(f"\nlargest seed-to-seed spread of one cell: {spread:.3f}")
    names = dict(cols)
    if "bf16" in names and "nvidia" in names:
        goal(res, keys, names)


if __name__ == "__main__":
    main(sys.argv[1])
