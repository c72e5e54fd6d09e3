"""Captures from PyTorch: hot.capture of torch tensors, and hot.torch.capture_next_backward,
which saves the x, w and g_y of a HOTLinear's next backward (as hot receives them) — read back
by the C reader (hot_py_helper capture) and the Python reader, value for value."""

import os

import numpy as np
import pytest
from conftest import need

from conftest import run_helper

torch = need("torch")
import torch.nn as nn  # noqa: E402


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


def f32_of(t):
    return t.detach().to(torch.float32).contiguous().numpy()


def c_read(helper, path, tmp_path):
    out = tmp_path / "c_read.bin"
    head = run_helper(helper, "capture", path, out).strip().split("|")
    name, (B, L, O, I, T, dt) = head[0], map(int, head[1:])
    raw = np.fromfile(out, dtype=np.float32)
    x, w, gy = np.split(raw, [T * I, T * I + O * I])
    return (name, B, L, O, I, T, dt), x.reshape(T, I), w.reshape(O, I), gy.reshape(T, O)


def same(a, b):
    a = np.ascontiguousarray(a, np.float32)
    b = np.ascontiguousarray(b, np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_capture_of_tensors(hot, helper, tmp_path, dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(2, 7, 5, generator=g).to(dtype)
    w = torch.randn(3, 5, generator=g).to(dtype).requires_grad_()
    gy = torch.randn(2, 7, 3, generator=g).to(dtype)
    path = str(tmp_path / "t.hotcap")
    hot.capture(path, "attn.proj", x, w, gy)
    head, cx, cw, cgy = c_read(helper, path, tmp_path)
    dt = {torch.float32: 0, torch.bfloat16: 1, torch.float16: 2}[dtype]
    assert head == ("attn.proj", 2, 7, 3, 5, 14, dt)
    assert same(cx, f32_of(x).reshape(14, 5)) and same(cw, f32_of(w))
    assert same(cgy, f32_of(gy).reshape(14, 3))
    c = hot.read_capture(path)
    assert same(c.float32("x"), cx) and same(c.float32("w"), cw) and same(c.float32("g_y"), cgy)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("shape", [(2, 8, 16), (12, 16)])
def test_capture_next_backward(hot, ht, helper, tmp_path, dtype, shape):
    torch.manual_seed(11)
    m = ht.HOTLinear(16, 24, name="blocks.0.fc1").to(dtype)
    path = str(tmp_path / "fc1.hotcap")
    ht.capture_next_backward(m, path)
    assert m.hot_capture_pending == path
    x = torch.randn(*shape).to(dtype).requires_grad_()
    y = m(x)
    assert m.hot_capture_pending is None  # claimed by this forward
    gy = torch.randn(y.shape).to(dtype)
    assert not os.path.exists(path)
    y.backward(gy)
    assert x.grad is not None and m.weight.grad is not None and torch.isfinite(x.grad).all()
    B, L = (shape[0], shape[1]) if len(shape) == 3 else (1, shape[0])
    head, cx, cw, cgy = c_read(helper, path, tmp_path)
    dt = 0 if dtype == torch.float32 else 1
    assert head == ("blocks.0.fc1", B, L, 24, 16, B * L, dt)
    assert same(cx, f32_of(x).reshape(B * L, 16))
    assert same(cw, f32_of(m.weight))
    assert same(cgy, f32_of(gy).reshape(B * L, 24))
    assert sorted(os.listdir(tmp_path)) == ["c_read.bin", "fc1.hotcap"]
    # once: the next step writes nothing
    os.remove(path)
    m(x).backward(gy)
    assert not os.path.exists(path)
    # once per forward: the same graph run backward a second time (retain_graph) writes nothing
    ht.capture_next_backward(m, path)
    y = m(x)
    y.backward(gy, retain_graph=True)
    os.remove(path)
    y.backward(2 * gy)
    assert not os.path.exists(path)


def test_capture_in_a_converted_model(hot, ht, tmp_path):
    torch.manual_seed(5)
    model = ht.convert(nn.Sequential(nn.Linear(8, 12), nn.ReLU(), nn.Linear(12, 4)))
    path = tmp_path / "second.hotcap"
    ht.capture_next_backward(model[2], path)  # a PathLike works too
    x = torch.randn(3, 6, 8)
    out = model(x)
    g = torch.ones_like(out)
    out.backward(g)
    c = hot.read_capture(str(path))
    assert (c.name, c.batch, c.tokens, c.out_features, c.in_features) == ("2", 3, 6, 4, 12)
    h = torch.relu(nn.functional.linear(x, model[0].weight, model[0].bias)).detach()
    assert same(c.float32("x"), h.reshape(18, 12).numpy())
    assert same(c.float32("g_y"), np.ones((18, 4), np.float32))


def test_arming_errors_and_a_failing_write(hot, ht, tmp_path):
    with pytest.raises(TypeError, match="needs a HOTLinear"):
        ht.capture_next_backward(nn.Linear(4, 4), str(tmp_path / "a.hotcap"))
    m = ht.HOTLinear(4, 6, name="fc")
    with pytest.raises(ValueError, match="does not exist"):
        ht.capture_next_backward(m, str(tmp_path / "missing" / "a.hotcap"))
    assert m.hot_capture_pending is None
    # the path becomes a non-empty folder before the backward: the write fails loudly
    path = tmp_path / "taken"
    ht.capture_next_backward(m, str(path))
    y = m(torch.randn(5, 4, requires_grad=True))
    path.mkdir()
    (path / "keep").write_text("x")
    with pytest.raises(hot.HotError, match="not a regular file") as e:
        y.backward(torch.randn(5, 6))
    assert e.value.status == hot.Status.ERR_IO
    assert sorted(os.listdir(tmp_path)) == ["taken"]
    # no grad, no graph: the capture stays armed for a forward that records one
    ht.capture_next_backward(m, str(tmp_path / "later.hotcap"))
    with torch.no_grad():
        m(torch.randn(5, 4))
    assert m.hot_capture_pending == str(tmp_path / "later.hotcap")
    # a deepcopy does not inherit the pending capture
    import copy
    assert copy.deepcopy(m).hot_capture_pending is None


@pytest.mark.parametrize("reentrant", [False, True])
def test_capture_inside_a_checkpointed_region(hot, ht, helper, tmp_path, reentrant):
    """capture_next_backward armed before a checkpointed region: the recomputation (no capture
    armed then) saves the tensors the first forward saved, so torch accepts it, the capture
    holds the forward's x, w and g_y, and the gradients have the bits of the same steps without
    capture; x changed in place after the forward is refused, as autograd refuses it."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(3)
    x = torch.randn(2, 64, 16)
    gy = torch.randn(2, 64, 24)
    grads = []
    for cap in (False, True):
        with hot.Context("cpu", seed=1) as ctx:
            torch.manual_seed(4)
            m = ht.HOTLinear(16, 24, context=ctx, name="ckpt", tag="ckpt")
            path = str(tmp_path / f"ckpt{int(cap)}.hotcap")
            for step in range(2):  # the basis measured at step 0, codes kept at step 1
                if cap and step == 1:
                    ht.capture_next_backward(m, path)
                xi = x.clone().requires_grad_()
                checkpoint(m, xi, use_reentrant=reentrant).backward(gy)
                grads.append((step, cap, xi.grad, m.weight.grad.clone()))
                m.weight.grad = None
    for (s0, _, gx0, gw0), (s1, _, gx1, gw1) in zip(grads[:2], grads[2:]):
        assert s0 == s1 and torch.equal(gx0, gx1) and torch.equal(gw0, gw1), s0
    head, cx, cw, cgy = c_read(helper, str(tmp_path / "ckpt1.hotcap"), tmp_path)
    assert head[:5] == ("ckpt", 2, 64, 24, 16)
    assert same(cx, f32_of(x).reshape(128, 16)) and same(cgy, f32_of(gy).reshape(128, 24))
    m = ht.HOTLinear(16, 24, tag="inplace")
    p2 = str(tmp_path / "inplace.hotcap")
    ht.capture_next_backward(m, p2)
    b = torch.randn(2, 64, 16)
    out = m(b)  # the weight needs a gradient: hot's forward, which captures b
    b.add_(1.0)
    with pytest.raises(RuntimeError, match="modified (in place|by an inplace)"):
        out.backward(torch.randn(2, 64, 24))
    assert not os.path.exists(p2)
