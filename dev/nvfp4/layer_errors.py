"""Per-layer gradient errors against fp64 on the ViT-B/16 layer shapes (specs/vit_b16.lua), the
way `hot-tune --kind accuracy` measures them: relative Frobenius error of g_x and g_w of one
backward against the fp64 products, on seeded data (x, w, g_y ~ N(0, 1); g_y with 4 channels or
4 tokens x20; and `walks`: x and g_y independent random walks along each sample's tokens).

    PYTHONPATH=python HOT_LIBRARY=build/runtime/libhot.so \
        python3 dev/nvfp4/layer_errors.py --seeds 0,1,2 --batch 2 --json build/nvfp4/layers.json

Variants (--variants, default all):
  bf16                 operands and output rounded to bf16, fp32 accumulation
  hot_int              libhot's CPU backend, recipe hot: HQ INT4 + LQS, HLA INT8 tri p = 64
  hot_nvfp4_lib        libhot's CPU backend, recipe nvfp4 as its defaults give it (HQ NVFP4, HLA
                       MXFP8 tri p = 64, ABC on)
  hot_nvfp4_lib_full   the same with HLA's full basis (no rank cut)
  hot_nvfp4/hla_mxfp8  fake-quant hot NVFP4 (layers.py), HLA MXFP8 tri: hot_nvfp4_lib's twin, SR
                       from torch's generator (check_lib.py: equal with the same draws)
  hot_nvfp4/hla_nvfp4  fake-quant, HLA in NVFP4
  hot_nvfp4/hla_none   fake-quant, HLA unquantised (the rank cut alone)
  nvidia               the port of NVIDIA's recipe, w from its 16x16 fprop codes
Without libhot, --variants without the lib ones.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import layers as lay  # noqa: E402
import nvfp4 as q  # noqa: E402

VIT = [("qkv", 768, 2304), ("proj", 768, 768), ("fc1", 768, 3072), ("fc2", 3072, 768)]
L = 197


def make_data(kind, B, I, O, seed, li):
    g = torch.Generator().manual_seed(1000 * seed + li)
    T = B * L
    x = torch.randn(T, I, generator=g)
    w = torch.randn(O, I, generator=g)
    gy = torch.randn(T, O, generator=g)
    if kind == "walks":
        x = torch.cumsum(x.reshape(B, L, I), 1).reshape(T, I) / L ** 0.5
        gy = torch.cumsum(gy.reshape(B, L, O), 1).reshape(T, O) / L ** 0.5
    for j in range(4):
        if kind == "channels":
            gy[:, (j * O) // 4 + 1] *= 20
        elif kind == "tokens":
            gy[(j * T) // 4 + 1, :] *= 20
    return x, w, gy


def rel(a, ref):
    return float(torch.linalg.norm(a.double() - ref) / torch.linalg.norm(ref))


LIB_VARIANTS = ("hot_int", "hot_nvfp4_lib", "hot_nvfp4_lib_full")
VARIANTS = ("bf16",) + LIB_VARIANTS + ("hot_nvfp4/hla_mxfp8", "hot_nvfp4/hla_nvfp4",
                                       "hot_nvfp4/hla_none", "nvidia")


def lib_backward(ctx, variant, x, w, gy, B):
    """One backward through libhot's CPU backend (Philox key: the context's seed, step 1)."""
    import hot
    lid = hot.layer_id_for("vit")
    if variant == "hot_int":
        layer = ctx.create_layer(x.shape[1], w.shape[0], batch=B, tokens=L, layer_id=lid)
    else:
        s = hot.LayerSpec(x.shape[1], w.shape[0], recipe="nvfp4")
        if variant == "hot_nvfp4_lib_full":
            s.c.hla.selection = int(hot.Selection.FULL)
        layer = ctx.create_layer(spec=s, batch=B, tokens=L, layer_id=lid)
    gyn, xn, wn = gy.numpy(), x.numpy(), w.numpy()
    if variant == "hot_int":
        layer.calibrate(gyn, step=1)  # LQS (recipe nvfp4 has no calibration: scales are fixed)
    layer.save(xn)  # ABC: the codes of x^ in the layer's own saved buffer
    g_x, g_w, _ = layer.backward(gyn, wn, step=1)
    layer.destroy()
    return torch.from_numpy(g_x), torch.from_numpy(g_w)


def variants(x, w, gy, B, p, rows, gen, ctx, want):
    sh = lay.Shape(B, L, p, rows, lay.hla_layout(L, p))
    out = {}
    if "bf16" in want:
        out["bf16"] = ((gy.bfloat16() @ w.bfloat16()).float(),
                       (gy.t().bfloat16() @ x.bfloat16()).float())
    for v in LIB_VARIANTS:
        if v in want:
            out[v] = lib_backward(ctx, v, x, w, gy, B)
    fmts = [f for f in ("nvfp4", "mxfp8", "none") if f"hot_nvfp4/hla_{f}" in want]
    if fmts:
        gx = lay.hq_gx_nvfp4(gy, w, gen)
    for fmt in fmts:
        xq = lay.hla_quant(lay.hla_operands(x, sh), fmt, False)
        out[f"hot_nvfp4/hla_{fmt}"] = (gx, lay.hla_gw(gy, xq, sh, fmt, gen))
    if "nvidia" in want:
        wq = q.nvfp4_quant_2d(w)
        out["nvidia"] = (lay.nvidia_dgrad(gy, wq, gen), lay.nvidia_wgrad(gy, x, gen))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--kinds", default="gaussian,channels,tokens,walks")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ.setdefault("HOT_CPU_THREADS", str(a.threads))  # libhot's CPU backend
    want = a.variants.split(",")
    bad = set(want) - set(VARIANTS)
    if bad:
        sys.exit(f"layer_errors.py: --variants: unknown {', '.join(sorted(bad))} "
                 f"(known: {', '.join(VARIANTS)})")
    ctx = None
    if set(want) & set(LIB_VARIANTS):
        import hot
        ctx = hot.Context("cpu", seed=1)
    p = 64
    rows = q.tri_rows(p)
    res = []
    t0 = time.time()
    for li, (name, I, O) in enumerate(VIT):
        for kind in a.kinds.split(","):
            for seed in [int(s) for s in a.seeds.split(",")]:
                x, w, gy = make_data(kind, a.batch, I, O, seed, li)
                ex = gy.double() @ w.double()
                ew = gy.double().t() @ x.double()
                gen = torch.Generator().manual_seed(seed)
                for v, (gx, gw) in variants(x, w, gy, a.batch, p, rows, gen, ctx, want).items():
                    res.append(dict(layer=name, kind=kind, seed=seed, variant=v,
                                    gx=rel(gx, ex), gw=rel(gw, ew)))
        print(f"{name}: done ({time.time() - t0:.0f} s)", flush=True)
    # table: mean over seeds (min-max)
    keys = sorted({(r["layer"], r["kind"]) for r in res}, key=lambda k: (
        [n for n, _, _ in VIT].index(k[0]), a.kinds.split(",").index(k[1])))
    vs = list(dict.fromkeys(r["variant"] for r in res))
    print("| layer | data | " + " | ".join(f"{v} g_x | {v} g_w" for v in vs) + " |")
    print("|" + "---|" * (2 + 2 * len(vs)))
    for k in keys:
        cells = []
        for v in vs:
            rs = [r for r in res if (r["layer"], r["kind"]) == k and r["variant"] == v]
            for f in ("gx", "gw"):
                vals = np.array([r[f] for r in rs])
                cells.append(f"{vals.mean():.4f} ±{vals.std():.4f}")
        print(f"| {k[0]} | {k[1]} | " + " | ".join(cells) + " |")
    if a.json:
        os.makedirs(os.path.dirname(a.json) or ".", exist_ok=True)
        with open(a.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
