"""The text-LM demo of examples/train_lm.py (the standard library's .py files, characters), with
every linear map but the head as one variant, from the same initial weights and batches per seed:

    PYTHONPATH=python HOT_LIBRARY=build/runtime/libhot.so \
        python3 dev/nvfp4/train.py --seeds 0,1,2 --json build/nvfp4/lm.json

Variants (hot's recipes use HLA's full basis at p = 64, as examples/train_lm.py trains):
  exact           fp32
  bf16            CPU autocast
  hot_int         hot.torch.convert, recipe hot, through libhot's CPU backend
  hot_nvfp4_lib   hot.torch.convert, recipe nvfp4 (HQ NVFP4, HLA MXFP8), through libhot's CPU
                  backend; fprop is torch's fp32 F.linear, as HOTLinear computes it
  nvidia          fake-quant port of NVIDIA's NVFP4 recipe (fprop x 1x16, w 16x16 RTN)
  nvidia_fp32     its backward alone: fprop in fp32, dgrad against the 16x16 codes of w
  hot_nvfp4       fake-quant hot NVFP4 (HLA MXFP8) with NVIDIA's NVFP4 fprop
  hot_nvfp4_fp32  fake-quant hot NVFP4 with an fp32 fprop: hot_nvfp4_lib's twin, SR drawn from
                  torch's generator instead of libhot's Philox stream
  hot_nvfp4_hla4  fake-quant hot NVFP4 with HLA in NVFP4, NVIDIA's fprop
libhot's Philox key is 7919 + seed (a context per seed); the fake-quant variants draw from a torch
generator seeded with 7919 + seed. The model uses nn.Linear for q/k/v/o and the MLP (not
nn.MultiheadAttention) so that every variant swaps the same maps.
"""
import argparse
import copy
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "python"))
sys.path.insert(0, os.path.join(REPO, "examples"))

import layers as lay  # noqa: E402
import nvfp4 as q  # noqa: E402
from train_lm import load_text  # noqa: E402

VARIANTS = ("exact", "bf16", "hot_int", "hot_nvfp4_lib", "nvidia", "nvidia_fp32", "hot_nvfp4",
            "hot_nvfp4_fp32", "hot_nvfp4_hla4")
LIB = {"hot_int": "hot", "hot_nvfp4_lib": "nvfp4"}  # through libhot: the recipe


class Block(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, h):
        B, L, d = h.shape
        qkv = self.qkv(self.n1(h)).reshape(B, L, 3, self.heads, d // self.heads)
        qq, kk, vv = qkv.permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(qq, kk, vv, is_causal=True)
        h = h + self.out(a.transpose(1, 2).reshape(B, L, d))
        return h + self.fc2(F.gelu(self.fc1(self.n2(h))))


class CharLM(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.tok, self.pos = nn.Embedding(256, a.d_model), nn.Embedding(a.seq, a.d_model)
        self.blocks = nn.ModuleList(Block(a.d_model, a.heads) for _ in range(a.layers))
        self.norm, self.head = nn.LayerNorm(a.d_model), nn.Linear(a.d_model, 256)

    def forward(self, idx):
        h = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            h = b(h)
        return self.head(self.norm(h))


def convert(model, variant, seed):
    if variant in ("exact", "bf16"):
        return model
    if variant in LIB:
        import hot
        import hot.torch as ht
        s = hot.LayerSpec(0, 0, recipe=LIB[variant])
        s.c.hla.selection = int(hot.Selection.FULL)
        ctx = hot.Context("cpu", seed=7919 + seed)
        return ht.convert(model, spec=s, recipe=LIB[variant], context=ctx,
                          include=lambda n, m: n != "head")
    gen = torch.Generator().manual_seed(7919 + seed)
    p = 64
    fprop = "fp32" if variant.endswith("_fp32") else "nvfp4"
    for blk in model.blocks:
        for name in ("qkv", "out", "fc1", "fc2"):
            lin = getattr(blk, name)
            if variant.startswith("nvidia"):
                new = lay.FakeQuantLinear(lin, "nvidia", fprop=fprop, gen=gen)
            else:
                fmt = "nvfp4" if variant == "hot_nvfp4_hla4" else "mxfp8"
                new = lay.FakeQuantLinear(lin, "hot_nvfp4", fprop=fprop, hla_fmt=fmt, p=p,
                                          rows=q.prefix_rows(p, p), gen=gen)
            setattr(blk, name, new)
    return model


def run_seed(a, seed, data, n_train, variants):
    torch.manual_seed(seed)
    base = CharLM(a)
    models = {v: convert(copy.deepcopy(base), v, seed) for v in variants}
    opts = {v: torch.optim.AdamW(m.parameters(), lr=a.lr, weight_decay=0.01)
            for v, m in models.items()}
    warm = max(1, a.steps // 10)

    def lr_at(step):
        if step < warm:
            return a.lr * (step + 1) / warm
        t = (step - warm) / max(1, a.steps - warm)
        return a.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))

    g = torch.Generator().manual_seed(10_000 + seed)
    L = a.seq
    starts = torch.randint(0, n_train - L - 1, (a.steps, a.batch), generator=g)
    vg = torch.Generator().manual_seed(99)
    vstarts = torch.randint(n_train, len(data) - L - 1, (a.eval_batches, a.batch), generator=vg)

    def batch(st):
        idx = torch.stack([data[s:s + L + 1] for s in st.tolist()])
        return idx[:, :-1], idx[:, 1:]

    def val_loss(m):
        with torch.no_grad():
            return sum(float(F.cross_entropy(m(x).reshape(-1, 256), y.reshape(-1)))
                       for x, y in map(batch, vstarts)) / len(vstarts)

    times = {v: 0.0 for v in variants}
    for step in range(a.steps):
        x, y = batch(starts[step])
        for v, m in models.items():
            for grp in opts[v].param_groups:
                grp["lr"] = lr_at(step)
            t0 = time.perf_counter()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=(v == "bf16")):
                loss = F.cross_entropy(m(x).reshape(-1, 256).float(), y.reshape(-1))
            opts[v].zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opts[v].step()
            times[v] += time.perf_counter() - t0
        if (step + 1) % a.eval_every == 0 and step + 1 < a.steps:
            print(f"  seed {seed} step {step + 1}: " + "  ".join(
                f"{v} {val_loss(m):.4f}" for v, m in models.items()), flush=True)
    final = {v: val_loss(m) for v, m in models.items()}
    print(f"  seed {seed} final: " + "  ".join(f"{v} {final[v]:.4f}" for v in variants), flush=True)
    return {"seed": seed, "val_loss": final,
            "ms_per_step": {v: 1000 * t / a.steps for v, t in times.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--d-model", type=int, default=128)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--eval-every", type=int, default=100)
    ap.add_argument("--eval-batches", type=int, default=8)
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--text-mb", type=float, default=4.0)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    os.environ.setdefault("HOT_CPU_THREADS", str(a.threads))  # libhot's CPU backend
    variants = a.variants.split(",")
    bad = set(variants) - set(VARIANTS)
    if bad:
        sys.exit(f"train.py: --variants: unknown {', '.join(sorted(bad))} (known: {', '.join(VARIANTS)})")
    text, _, _ = load_text(int(a.text_mb * 1e6))
    data = torch.tensor(list(text), dtype=torch.long)
    n_train = int(0.9 * len(data))
    res = [run_seed(a, int(s), data, n_train, variants) for s in a.seeds.split(",")]
    print("| variant | " + " | ".join(f"seed {r['seed']}" for r in res) +
          " | mean | gap to bf16 | ms/step |")
    print("|---|" + "---|" * (len(res) + 3))
    bf = sum(r["val_loss"].get("bf16", float("nan")) for r in res) / len(res)
    for v in variants:
        vals = [r["val_loss"][v] for r in res]
        mean = sum(vals) / len(vals)
        ms = sum(r["ms_per_step"][v] for r in res) / len(res)
        print(f"| {v} | " + " | ".join(f"{x:.4f}" for x in vals) +
              f" | {mean:.4f} | {mean - bf:+.4f} | {ms:.0f} |")
    if a.json:
        os.makedirs(os.path.dirname(a.json) or ".", exist_ok=True)
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "results": res}, f, indent=1)


if __name__ == "__main__":
    main()
