"""Per-layer gradient errors against fp64 on the ViT-B/16 layer shapes (specs/vit_b16.lua), the
way `hot-tune --kind accuracy` measures them: relative Frobenius error of g_x and g_w of one
backward against the fp64 products, on seeded data (x, w, g_y ~ N(0, 1); g_y with 4 channels or
4 tokens x20; and `walks`: x and g_y independent random walks along each sample's tokens).

    PYTHONPATH=python HOT_LIBRARY=build/runtime/libhot.so \
        python3 dev/nvfp4/layer_errors.py --seeds 0,1,2 --batch 2 --json build/nvfp4/layers.json

Variants: bf16 (operands and output rounded to bf16, fp32 accumulation), hot_int (libhot's CPU
backend, recipe hot: HQ INT4 + LQS, HLA INT8 tri p = 64), hot_nvfp4 with HLA in NVFP4 or MXFP8
(CONTRACT 20; same p and rows), nvidia (the port of NVIDIA's recipe, w from its 16x16 fprop codes).
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


def hot_int(ctx, x, w, gy, B, seed):
    import hot
    lid = hot.layer_id_for("vit")
    layer = ctx.create_layer(x.shape[1], w.shape[0], batch=B, tokens=L, layer_id=lid)
    gyn, xn, wn = gy.numpy(), x.numpy(), w.numpy()
    layer.calibrate(gyn, step=1)
    layer.save(xn)
    g_x, g_w, _ = layer.backward(gyn, wn, step=1)
    layer.destroy()
    return torch.from_numpy(g_x), torch.from_numpy(g_w)


def variants(x, w, gy, B, p, rows, gen, ctx):
    sh = lay.Shape(B, L, p, rows, lay.hla_layout(L, p))
    out = {}
    out["bf16"] = ((gy.bfloat16() @ w.bfloat16()).float(), (gy.t().bfloat16() @ x.bfloat16()).float())
    if ctx is not None:
        out["hot_int"] = hot_int(ctx, x, w, gy, B, 0)
    gx = lay.hq_gx_nvfp4(gy, w, gen)
    for fmt in ("nvfp4", "mxfp8", "none"):
        xq = lay.hla_quant(lay.hla_operands(x, sh), fmt, False)
        out[f"hot_nvfp4/hla_{fmt}"] = (gx, lay.hla_gw(gy, xq, sh, fmt, gen))
    wq = q.nvfp4_quant_2d(w)
    out["nvidia"] = (lay.nvidia_dgrad(gy, wq, gen), lay.nvidia_wgrad(gy, x, gen))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--kinds", default="gaussian,channels,tokens,walks")
    ap.add_argument("--no-hot", action="store_true", help="skip hot_int (no libhot)")
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    torch.set_num_threads(2)
    ctx = None
    if not a.no_hot:
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
                for v, (gx, gw) in variants(x, w, gy, a.batch, p, rows, gen, ctx).items():
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
