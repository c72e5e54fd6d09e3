"""The study's fake-quant hot_nvfp4 backward (layers.py) against libhot's recipe nvfp4 on the CPU
backend, with the SR draws of both taken from libhot's Philox stream (key = the layer's seed,
tags layer_id*16 + 1 for g' and + 2 for g^, CONTRACT 20.3/20.4): the two must then give the same
g_x and g_w up to the GEMMs' fp32 summation order (the fake-quant GEMM is torch's fp32 GEMM on
dequantised values, libhot's adds exact block products in block order, CONTRACT 20.5).

    PYTHONPATH=python HOT_LIBRARY=build/runtime/libhot.so python3 dev/nvfp4/check_lib.py

Prints, per case, ||lib - fake|| / ||fake|| for g_x and g_w and exits 1 when one exceeds 1e-5
(fp32 round-off is ~1e-7; one E2M1 code off in a 16-value block moves g_x by ~1e-3). Exits 77
(ctest's skip) when numpy or torch is not installed. ctest runs it as `nvfp4_check_lib`.
"""
import argparse
import os
import sys

try:
    import numpy as np
    import torch
except ImportError as e:
    print(f"SKIP: check_lib.py needs numpy and torch ({e})")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

import layers as lay  # noqa: E402
import nvfp4 as q  # noqa: E402

TOL = 1e-5
# name, B, L, I, O, basis (tri: the recipe's default; full)
CASES = [("vit proj, tri", 1, 197, 768, 768, "tri"),
         ("vit proj, full", 1, 197, 768, 768, "full"),
         ("LM qkv (B 8, L 128), full", 8, 128, 128, 384, "full"),
         ("padded O 100, I 72, tri", 2, 50, 72, 100, "tri")]


def words(n, key, tag, step):
    return q.rho_of_words(q.philox_words(np.arange(n, dtype=np.uint64), key, tag, step))


def lib_layer(ctx, B, L, I, O, basis, layer_id):
    import hot
    s = hot.LayerSpec(I, O, recipe="nvfp4")
    if basis == "full":
        s.c.hla.selection = int(hot.Selection.FULL)
    return ctx.create_layer(spec=s, batch=B, tokens=L, layer_id=layer_id)


def fake(x, w, gy, B, L, basis, key, layer_id, step):
    """hot_nvfp4 of layers.py (HLA MXFP8) with libhot's Philox draws."""
    T, O = gy.shape
    p = 64
    rows = q.tri_rows(p) if basis == "tri" else q.prefix_rows(p, p)
    sh = lay.Shape(B, L, p, rows, lay.hla_layout(L, p))
    o_pad = (O + 15) // 16 * 16
    rho_g = words(T * o_pad, key, layer_id * 16 + 1, step).reshape(T, o_pad)
    g_x = lay.hq_gx_nvfp4(gy, w, rho=rho_g)
    xq = lay.hla_quant(lay.hla_operands(x, sh), "mxfp8", False)  # I x K
    K = xq.shape[1]
    k_pad = (K + 31) // 32 * 32
    rho_h = words(K * O, key, layer_id * 16 + 2, step).reshape(K, O).t()  # element (o, k)
    rho_h = torch.nn.functional.pad(rho_h, (0, k_pad - K))
    return g_x, lay.hla_gw(gy, xq, sh, "mxfp8", rho=rho_h)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    import hot
    ctx = hot.Context("cpu", seed=12345)
    bad = 0
    for i, (name, B, L, I, O, basis) in enumerate(CASES):
        g = torch.Generator().manual_seed(i)
        T = B * L
        x, w, gy = (torch.randn(T, I, generator=g), torch.randn(O, I, generator=g),
                    torch.randn(T, O, generator=g))
        layer_id, step = 3 + i, 7 + i
        ly = lib_layer(ctx, B, L, I, O, basis, layer_id)
        key = ly.info().seed
        ly.save(x.numpy())  # ABC: x^'s MXFP8 codes in the layer's own saved buffer
        gx_l, gw_l, _ = ly.backward(gy.numpy(), w.numpy(), step=step)
        ly.destroy()
        gx_f, gw_f = fake(x, w, gy, B, L, basis, key, layer_id, step)
        ex_x, ex_w = gy.double() @ w.double(), gy.double().t() @ x.double()
        r = []
        for lib, fq, ex in ((gx_l, gx_f, ex_x), (gw_l, gw_f, ex_w)):
            lib = torch.from_numpy(lib).double()
            r.append((float((lib - fq.double()).norm() / fq.double().norm()),
                      float((lib - ex).norm() / ex.norm()), float((fq.double() - ex).norm() / ex.norm())))
        ok = all(d <= TOL for d, _, _ in r)
        bad += not ok
        print(f"  {name:28s} lib vs fake-quant: g_x {r[0][0]:.1e}, g_w {r[1][0]:.1e}   "
              f"error vs fp64 (lib / fake): g_x {r[0][1]:.4f} / {r[0][2]:.4f}, "
              f"g_w {r[1][1]:.4f} / {r[1][2]:.4f}  {'ok' if ok else 'DIFFER'}", flush=True)
    print("check_lib: " + ("libhot and the fake-quant agree" if not bad else f"{bad} cases differ"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
