"""One process of test_repro.py: trains a small converted transformer (attention and MLP through
hot) with Adam for STEPS steps and writes its final parameters, hot steps and layer ids.

    python repro_worker.py OUT STEPS [--noise K] [--save-at S CKPT] [--resume CKPT]

--noise K: before the model, make K hot layers and K HOTLinear modules (with backwards) in the
process, as another part of a program would: the model's random streams must not move.
--save-at S CKPT: after step S, save model and optimizer state dicts to CKPT and stop.
--resume CKPT: build the model, load CKPT, continue from the step it was saved at."""

import argparse
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import hot.torch as ht

D, HEADS, L, B, V = 32, 4, 64, 2, 16


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Linear(V, D)
        self.block = nn.TransformerEncoderLayer(D, HEADS, 2 * D, dropout=0.0, batch_first=True)
        self.head = nn.Linear(D, V)

    def forward(self, x):
        return self.head(self.block(self.emb(x)))


def data(step):
    g = torch.Generator().manual_seed(1000 + step)
    x = torch.cumsum(torch.randn(B, L, V, generator=g), dim=1) / 8
    return x, torch.randint(0, V, (B, L), generator=g)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("steps", type=int)
    p.add_argument("--noise", type=int, default=0)
    p.add_argument("--save-at", nargs=2)
    p.add_argument("--resume")
    a = p.parse_args()
    torch.set_num_threads(1)
    keep = []
    for k in range(a.noise):
        ctx = ht.context_for("cpu")
        keep.append(ctx.create_layer(8, 8, 1, 4 + k))
        m = ht.HOTLinear(8, 8, tag=f"noise{k}")
        m(torch.randn(3, 8, requires_grad=True)).sum().backward()
        keep.append(m)
    torch.manual_seed(0)
    model = ht.convert(Tiny())
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    start = 0
    if a.resume:
        ck = torch.load(a.resume, weights_only=False)
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["opt"])
        start = ck["step"]
    stop = int(a.save_at[0]) if a.save_at else a.steps
    for step in range(start, stop):
        x, t = data(step)
        opt.zero_grad()
        F.cross_entropy(model(x).reshape(-1, V), t.reshape(-1)).backward()
        opt.step()
    if a.save_at:
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": stop},
                   a.save_at[1])
    mods = {n: m for n, m in model.named_modules() if isinstance(m, ht.HOTLinear)}
    mods.update({f"{n}.in_proj.{r}": p for n, m in model.named_modules()
                 if isinstance(m, ht.HOTMultiheadAttention) for r, p in m._hot_in.items()})
    torch.save({"params": [q.detach().clone() for q in model.parameters()],
                "steps": {n: m.hot_step for n, m in mods.items()},
                "ids": {n: [lay.info().layer_id for lay in m.hot_layers()]
                        for n, m in mods.items()}}, a.out)


if __name__ == "__main__":
    main()
    sys.stdout.flush()
    os._exit(0)
