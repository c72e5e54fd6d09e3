"""One rank of test_ddp.py: trains a small HOTLinear MLP under DistributedDataParallel (gloo) on
rank-specific data and writes what the test checks to a JSON file.

    python ddp_worker.py RANK WORLD PORT OUT.json"""

import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import hot.torch as ht


def main(rank, world, port, out):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    torch.manual_seed(100 + rank)  # different initial weights per rank: DDP must broadcast
    model = ht.convert(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8)))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    init = torch.cat([p.detach().flatten() for p in model.parameters()]).clone()

    def batch(step):
        g = torch.Generator().manual_seed(1000 * rank + step)
        return torch.randn(16, 32, generator=g), torch.randint(0, 8, (16,), generator=g)

    # Local gradients of step 0 without synchronisation: they must differ between ranks,
    # otherwise identical final weights would prove nothing.
    x, t = batch(0)
    with ddp.no_sync():
        nn.functional.cross_entropy(ddp(x), t).backward()
    local = torch.cat([p.grad.flatten() for p in model.parameters()]).clone()
    opt.zero_grad()
    for step in range(4):
        x, t = batch(step)
        opt.zero_grad()
        nn.functional.cross_entropy(ddp(x), t).backward()
        opt.step()
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    locals_ = [torch.empty_like(local) for _ in range(world)]
    dist.all_gather(locals_, local)
    stats = ht.context_for("cpu").stats()
    res = {
        "identical": all(torch.equal(g.view(torch.int32), gathered[0].view(torch.int32))
                         for g in gathered),
        "max_diff": max(float((g - gathered[0]).abs().max()) for g in gathered),
        "changed": float((flat - init).abs().max()),
        "local_grads_differ": not torch.equal(locals_[0], locals_[1]),
        "hot_steps": [m.hot_step for m in model if isinstance(m, ht.HOTLinear)],
        "hot_backwards": stats.backwards,
        "backend": stats.backend,
    }
    dist.barrier()  # both ranks are past every collective
    with open(out, "w") as f:
        json.dump(res, f)


def run(argv):
    main(int(argv[1]), int(argv[2]), int(argv[3]), argv[4])
    # End without tearing gloo down: its process-group destruction at exit races with the peer's
    # and aborts now and then ("terminate called without an active exception", SIGABRT, about 1
    # run in 10 here), which says nothing about hot. The results are written and the barrier
    # above has passed, so nothing is left to do.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    run(sys.argv)
