"""One process of test_fsdp.py: trains the same small MLP twice — exact (nn.Linear) and
converted to HOTLinear — from the same initial weights on one global batch per step, either
alone on the whole batch (WORLD = 1) or as one rank of FSDP2 (torch.distributed.fsdp.fully_shard,
gloo, CPU) on its half of the samples; writes the final full weights and what the test checks to
a JSON file.

    python fsdp_worker.py RANK WORLD PORT OUT.json"""

import json
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

import hot.torch as ht

STEPS, B, L, I, H, C = 4, 4, 32, 32, 64, 8


def make(seed):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(I, H), nn.ReLU(), nn.Linear(H, C))


def batch(step):
    g = torch.Generator().manual_seed(500 + step)
    x = torch.cumsum(torch.randn(B, L, I, generator=g), dim=1) / 4  # token-smooth, as text is
    return x, torch.randint(0, C, (B, L), generator=g)


def main(rank, world, port, out):
    torch.set_num_threads(1)
    if rank == 1:
        # this rank makes hot layers before the model: the model's streams must not move
        ctx = ht.context_for("cpu")
        extra = [ctx.create_layer(16, 16, 1, 8) for _ in range(3)]
        ht.HOTLinear(8, 8, tag="unrelated")(torch.randn(2, 8, requires_grad=True)).sum().backward()
        del extra
    models = {"exact": make(7), "hot": ht.convert(make(7))}
    if world > 1:
        import torch.distributed as dist
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import fully_shard
        dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                                world_size=world)
        mesh = init_device_mesh("cpu", (world,))
        for m in models.values():
            for sub in m:
                if isinstance(sub, nn.Linear):
                    fully_shard(sub, mesh=mesh)
            fully_shard(m, mesh=mesh)
    opts = {k: torch.optim.SGD(m.parameters(), lr=0.2) for k, m in models.items()}
    per = B // world
    for step in range(STEPS):
        x, t = batch(step)
        x, t = x[rank * per:(rank + 1) * per], t[rank * per:(rank + 1) * per]
        for k, m in models.items():
            opts[k].zero_grad()
            # the mean over this rank's tokens; FSDP averages the ranks' gradients, which is the
            # gradient of the mean over the global batch (equal halves)
            F.cross_entropy(m(x).reshape(-1, C), t.reshape(-1)).backward()
            opts[k].step()
    res = {"weights": {}}
    for k, m in models.items():
        res["weights"][k] = [(p.full_tensor() if hasattr(p, "full_tensor") else p.detach())
                             .flatten().tolist() for p in m.parameters()]
    hot_mods = [m for m in models["hot"].modules() if isinstance(m, ht.HOTLinear)]
    res["hot_steps"] = [m.hot_step for m in hot_mods]
    res["layer_ids"] = {m.hot_tag: [lay.info().layer_id for lay in m.hot_layers()]
                        for m in hot_mods}
    res["backwards"] = ht.context_for("cpu").stats().backwards
    if world > 1:
        import torch.distributed as dist
        dist.barrier()
    with open(out, "w") as f:
        json.dump(res, f)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # as ddp_worker.py: skip gloo's teardown race at exit
