"""Recipe nvfp4 from Python (templates/CONTRACT.md 20): HQ in NVFP4, HLA and ABC in MXFP8, on the
CPU backend. hot.torch.convert and HOTLinear take recipe="nvfp4"; a small model trains with it;
its gradients are near the exact ones (the bands of the twin's tests); a context planning for a GPU
arch refuses the recipe naming the arch. Bit-exactness against the twins is the C tests' (test_fast,
test_ref_nvfp4)."""

import copy

import pytest
from conftest import need

torch = need("torch")
import torch.nn as nn  # noqa: E402


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


def rel(a, b):
    return float((a - b).norm() / b.norm())


def test_hotlinear_nvfp4_gradients(hot, ht):
    """g_x within NVFP4's band of the exact product (CONTRACT.md 20.7 / test_ref_nvfp4: 0.12-0.25 on
    Gaussian data), g_w under the full basis within MXFP8's (< 0.06), the bias exact."""
    torch.manual_seed(0)
    spec = hot.LayerSpec(64, 96, recipe="nvfp4")
    spec.c.hla.selection = int(hot.Selection.FULL)  # no rank cut: what is left is MXFP8's
    lin = nn.Linear(64, 96)
    m = ht.HOTLinear.from_linear(copy.deepcopy(lin), spec=spec, recipe="nvfp4", tag="fc")
    x = torch.randn(2, 64, 64, requires_grad=True)
    x0 = x.detach().clone().requires_grad_(True)
    m(x).pow(2).sum().backward()
    lin(x0).pow(2).sum().backward()
    e_gx, e_gw = rel(x.grad, x0.grad), rel(m.weight.grad, lin.weight.grad)
    print(f"nvfp4 HOTLinear 128x64->96: g_x rel err {e_gx:.4f}, g_w (full basis) {e_gw:.4f}")
    assert 0.05 < e_gx < 0.3, e_gx
    assert e_gw < 0.06, e_gw
    assert rel(m.bias.grad, lin.bias.grad) < 1e-6


def test_convert_nvfp4_trains(hot, ht):
    """A small MLP converted with recipe="nvfp4" learns a regression task: its loss falls as the
    exact model's does (within a factor), every gradient finite."""
    def run(recipe):
        torch.manual_seed(1)
        model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))
        if recipe:
            model = ht.convert(model, recipe=recipe)
        torch.manual_seed(2)
        w_true = torch.randn(32, 8)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        losses = []
        for step in range(40):
            x = torch.randn(4, 16, 32)
            loss = (model(x) - x @ w_true).pow(2).mean()
            opt.zero_grad()
            loss.backward()
            assert all(torch.isfinite(p.grad).all() for p in model.parameters())
            opt.step()
            losses.append(float(loss.detach()))
        return losses
    exact, nv = run(None), run("nvfp4")
    print(f"40 SGD steps: exact {exact[0]:.3f} -> {exact[-1]:.3f}, nvfp4 {nv[0]:.3f} -> {nv[-1]:.3f}")
    assert nv[-1] < 0.6 * nv[0]
    assert nv[-1] < 1.5 * exact[-1] + 0.05


def test_nvfp4_refused_for_a_gpu_arch(hot):
    """A context that plans for a GPU arch (forced on the CPU backend) refuses the recipe in one
    line naming the arch and the recipe; the same layer plans on the plain CPU backend."""
    ctx = hot.Context("cpu", arch="sm_90")
    with pytest.raises(hot.HotError) as e:
        ctx.create_layer(64, 96, batch=2, tokens=16, recipe="nvfp4")
    msg = str(e.value)
    assert "recipe nvfp4" in msg and "sm_90" in msg and "\n" not in msg, msg
    ok = hot.Context("cpu").create_layer(64, 96, batch=2, tokens=16, recipe="nvfp4")
    assert ok is not None
