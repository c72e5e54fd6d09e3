"""HOTLinear under torch.distributed: DistributedDataParallel with the gloo backend, 2
processes on this machine, each on its own data; the ranks must end with identical weights
(bit for bit), having computed different local gradients with hot."""

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import need

need("torch")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ddp_two_ranks_end_identical(hot, tmp_path):
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    worker = os.path.join(os.path.dirname(__file__), "ddp_worker.py")
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOT_LIBRARY=hot.library_path(), OMP_NUM_THREADS="1")
    port = free_port()
    outs = [tmp_path / f"rank{r}.json" for r in range(2)]
    procs = [subprocess.Popen([sys.executable, worker, str(r), "2", str(port), str(outs[r])],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for r in range(2)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=180)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("a DDP rank did not finish within 180 s")
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"rank {r} failed:\n{logs[r]}"
    res = [json.loads(o.read_text()) for o in outs]
    for r in res:
        assert r["backend"] == "cpu"
        assert r["identical"], f"ranks differ by up to {r['max_diff']}"
        assert r["changed"] > 0, "training did not change the weights"
        assert r["local_grads_differ"], "ranks computed the same local gradients"
        assert r["hot_steps"] == [5, 5]  # the no_sync backward and 4 steps
        # 5 backwards of 2 layers, and at the first one each layer's HLA basis measurement
        # (convert's hla_basis="auto": the rank cut against the exact g_w, one backward more)
        assert r["hot_backwards"] == 12
