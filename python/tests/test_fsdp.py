"""HOTLinear under FSDP2 (torch.distributed.fsdp.fully_shard), gloo, 2 processes on the CPU, each
on half of the global batch, against the single-process run of the same global batch.

Tolerance: the runs cannot agree bit for bit. hot's stochastic rounding is indexed by an element's
position in the layer's tensor (templates/CONTRACT.md "Random stream") and its scales are taken
over the tensor a call sees, so a rank quantizing samples 2-3 as its rows 0-1 draws other
rounding noise than the single process does for the same samples; FSDP also sums the two ranks'
gradients in another order. Two HOT runs with different noise differ by about sqrt(2) times
HOT's own deviation from exact training, so the FSDP HOT weights must lie within 2x the distance
between the single-process HOT and exact weights of the single-process HOT weights, and FSDP's
exact (nn.Linear) run must equal the single-process exact run to 1e-5 (summation order only)."""

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import need

torch = need("torch")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_workers(hot, tmp_path, world):
    worker = os.path.join(os.path.dirname(__file__), "fsdp_worker.py")
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOT_LIBRARY=hot.library_path(), OMP_NUM_THREADS="1")
    port = free_port()
    outs = [tmp_path / f"w{world}r{r}.json" for r in range(world)]
    procs = [subprocess.Popen([sys.executable, worker, str(r), str(world), str(port),
                               str(outs[r])], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    logs = []
    for p in procs:
        try:
            logs.append(p.communicate(timeout=240)[0])
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            pytest.fail("an FSDP process did not finish within 240 s")
    for r, p in enumerate(procs):
        assert p.returncode == 0, f"process {r} of {world} failed:\n{logs[r]}"
    return [json.loads(o.read_text()) for o in outs]


def flat(ws):
    return torch.cat([torch.tensor(w) for w in ws])


def test_fsdp2_two_ranks_match_single_process(hot, tmp_path):
    import torch.distributed as dist
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this torch build has no gloo backend")
    try:
        from torch.distributed.fsdp import fully_shard  # noqa: F401
    except ImportError:
        pytest.skip("this torch has no FSDP2 (torch.distributed.fsdp.fully_shard)")
    single = run_workers(hot, tmp_path, 1)[0]
    ranks = run_workers(hot, tmp_path, 2)
    s_exact, s_hot = flat(single["weights"]["exact"]), flat(single["weights"]["hot"])
    for r in ranks:
        f_exact, f_hot = flat(r["weights"]["exact"]), flat(r["weights"]["hot"])
        d_exact = float((f_exact - s_exact).abs().max())
        assert d_exact <= 1e-5, f"FSDP's exact run differs from the single process by {d_exact}"
        hot_vs_exact = float((s_hot - s_exact).norm())
        fsdp_vs_single = float((f_hot - s_hot).norm())
        print(f"|single HOT - single exact| = {hot_vs_exact:.3e}, |FSDP HOT - single HOT| = "
              f"{fsdp_vs_single:.3e}")
        assert hot_vs_exact > 0, "HOT equals exact training: hot did not run"
        assert fsdp_vs_single <= 2 * hot_vs_exact, \
            f"FSDP HOT lies {fsdp_vs_single:.3e} from the single-process HOT run, more than " \
            f"2x HOT's distance to exact ({hot_vs_exact:.3e})"
        assert r["hot_steps"] == [4, 4] and r["backwards"] >= 8
    # Both ranks' weights are the same full tensors (FSDP gathers them), and the streams of the
    # modules are their names' on both ranks although rank 1 made other layers first.
    assert ranks[0]["weights"] == ranks[1]["weights"]
    ids = {tag: hot.layer_id_for(tag) for tag in ("0", "2")}
    for r in ranks + [single]:
        assert r["layer_ids"] == {tag: [i] for tag, i in ids.items()}, r["layer_ids"]
