"""hot.torch: HOTLinear's forward is torch's exact linear and keeps only hot's compressed
activation; its gradients equal the object API's (and so the C API's) bit for bit, step after
step; they lie within the reference error bands (templates/CONTRACT.md, tests/ref/test_ref_bands.c)
of exact autograd; bad input raises a clear error; convert() swaps nn.Linear modules."""

import gc
import os
import weakref

import numpy as np
import pytest
from conftest import need

torch = need("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

SEED = 0x1234ABCD


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


def new_ctx(hot):
    return hot.Context("cpu", seed=SEED)


def api_grads(hot, x, w, gys, dtype, bias=True, stream=None):
    """The object API on the same inputs: a fresh context with the same seed and the module's
    stream (its tag), calibrated on the first g_y, then save + backward per step."""
    npdt = {torch.float32: np.float32, torch.float16: np.float16, torch.bfloat16: np.uint16}[dtype]
    name = {torch.float32: "f32", torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]

    def arr(t):
        t = t.detach().contiguous()
        if dtype == torch.bfloat16:
            return t.view(torch.int16).numpy().view(np.uint16)
        return t.numpy().astype(npdt, copy=False)

    I, O = x.shape[-1], w.shape[0]
    B, L = (int(np.prod(x.shape[:-2])), x.shape[-2]) if x.dim() >= 3 else (1, x.shape[0])
    out = []
    with new_ctx(hot) as ctx:
        layer = ctx.create_layer(I, O, B, L, dtype=name, bias=bias, stream=stream)
        for step, gy in enumerate(gys):
            g = arr(gy).reshape(B * L, O)
            if step == 0:
                layer.calibrate(g, step=0)
            layer.save(arr(x).reshape(B * L, I))
            out.append(layer.backward(g, arr(w), step=step))
    return out


def bits_equal(a, b):
    a = torch.as_tensor(a).contiguous()
    b = torch.as_tensor(b).contiguous()
    assert a.shape == b.shape and a.dtype == b.dtype
    if a.dtype == torch.float32:
        return torch.equal(a.view(torch.int32), b.view(torch.int32))
    return torch.equal(a.view(torch.int16), b.view(torch.int16))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16],
                         ids=["f32", "bf16", "f16"])
def test_grads_equal_api_bit_for_bit_two_steps(hot, ht, dtype):
    torch.manual_seed(0)
    B, L, I, O = 2, 80, 48, 40
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(I, O, dtype=dtype, context=ctx, tag="fc")
        x = torch.randn(B, L, I).to(dtype).requires_grad_()
        gys = [torch.randn(B, L, O).to(dtype) for _ in range(2)]
        got = []
        for gy in gys:
            m.zero_grad()
            x.grad = None
            y = m(x)
            assert bits_equal(y, F.linear(x, m.weight, m.bias)), "forward must be torch's linear"
            y.backward(gy)
            got.append((x.grad.clone(), m.weight.grad.clone(), m.bias.grad.clone()))
        assert m.hot_step == 2
        layer = m.hot_layers()[0]
        info = layer.info()
        assert info.calibrated and info.layer_id == hot.layer_id_for("fc")
        assert info.seed == hot.stream_key("fc", SEED)
    want = api_grads(hot, x, m.weight, gys, dtype, stream="fc")
    for step, ((gx, gw, gb), (ax, aw, ab)) in enumerate(zip(got, want)):
        ax = torch.from_numpy(ax).reshape(B, L, I).to(dtype)
        assert bits_equal(gx, ax), f"g_x differs from the API at step {step}"
        assert bits_equal(gw, torch.from_numpy(aw).to(dtype)), f"g_w differs at step {step}"
        assert bits_equal(gb, torch.from_numpy(ab).to(dtype)), f"g_b differs at step {step}"
    # The step counter matters: step 1 used new draws (not a replay of step 0's).
    again = api_grads(hot, x, m.weight, [gys[1]], dtype, stream="fc")[0]
    assert not np.array_equal(again[0], want[1][0])


def rel(a, b):
    a, b = a.double(), b.double()
    return float((a - b).norm() / b.norm())


@pytest.mark.parametrize("data", ["gaussian", "random_walk"])
def test_error_bands_against_exact_autograd(hot, ht, data):
    """Bands of tests/ref/test_ref_bands.c (B=2, L=256, O=128, I=64, Gaussian g_y and w): g_x
    HQ per tensor (LQS picks it on Gaussian g_y) 0.26-0.31; g_w HLA tri 50 % at p = 64 within
    0.04 of sqrt(1 - 36/64) = 0.661 plus at most 0.02 for INT8 on Gaussian data, at most
    0.05 + 0.02 when x and g_y are token-smooth (independent random walks along L); g_b exact
    fp32 sums."""
    g = torch.Generator().manual_seed(1234)
    B, L, I, O = 2, 256, 64, 128
    x = torch.randn(B, L, I, generator=g)
    gy = torch.randn(B, L, O, generator=g)
    if data == "random_walk":
        x, gy = torch.cumsum(x, dim=1), torch.cumsum(gy, dim=1)
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(I, O, context=ctx)
        with torch.no_grad():
            m.weight.copy_(torch.randn(O, I, generator=g))
        xh = x.clone().requires_grad_()
        m(xh).backward(gy)
        assert m.hot_layers()[0].info().gran == hot.Gran.SAMPLE  # auto with B = 2: per sample
    ref = nn.Linear(I, O).double()
    with torch.no_grad():
        ref.weight.copy_(m.weight.double())
    xr = x.double().requires_grad_()
    ref(xr).backward(gy.double())
    e_gx, e_gw, e_gb = rel(xh.grad, xr.grad), rel(m.weight.grad, ref.weight.grad), \
        rel(m.bias.grad, ref.bias.grad)
    print(f"{data}: g_x {e_gx:.4f}, g_w {e_gw:.4f}, g_b {e_gb:.2e}")
    if data == "gaussian":
        assert 0.26 <= e_gx <= 0.31
        assert abs(e_gw - (1 - 36 / 64) ** 0.5) <= 0.06
    else:
        assert e_gx < 0.5  # HQ's bands are for Gaussian g_y; here only a sanity bound
        assert e_gw <= 0.07
    assert e_gb < 1e-6


def test_forward_keeps_no_copy_of_x(hot, ht):
    """Only hot's saved buffer (ABC) is kept for the backward: x can be freed after the forward
    (nn.Linear keeps x alive; the test checks that it notices)."""
    with new_ctx(hot) as ctx:
        for cls, keeps in ((nn.Linear, True), (ht.HOTLinear, False)):
            m = cls(64, 32, context=ctx) if cls is ht.HOTLinear else cls(64, 32)
            x = torch.randn(2, 64, 64)
            ref = weakref.ref(x)
            y = m(x)
            del x
            gc.collect()
            assert (ref() is not None) == keeps, f"{cls.__name__}: x kept = {ref() is not None}"
            y.sum().backward()
        layer = m.hot_layers()[0]
        assert 0 < layer.saved_bytes < layer.info().fp32_bytes / 3


def test_bad_input_raises_clear_errors(hot, ht):
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(16, 8, context=ctx, name="fc")
        x = torch.randn(4, 16)
        with pytest.raises(TypeError, match=r"HOTLinear\(fc\): input dtype torch.float64 is not"):
            m(x.double())
        with pytest.raises(TypeError, match="differs from the weight"):
            m(x.half())
        with pytest.raises(ValueError, match="must end in in_features = 16"):
            m(torch.randn(4, 15))
        # no token (an expert nothing was routed to): torch's linear map and backward
        e = torch.randn(0, 16, requires_grad=True)
        m.zero_grad()
        m(e).sum().backward()
        assert e.grad.shape == (0, 16) and not m.weight.grad.any() and not m.bias.grad.any()
        # a non-contiguous input is made contiguous in the graph, as F.linear takes it
        xt = torch.randn(16, 128).t().requires_grad_()
        xc = xt.detach().contiguous().requires_grad_()
        grads = []
        for inp in (xt, xc):
            m.zero_grad()
            m.hot_step = 0  # the same Philox step for both
            m(inp).square().sum().backward()
            grads.append((inp.grad, m.weight.grad.clone(), m.bias.grad.clone()))
        assert not xt.is_contiguous() and all(torch.equal(a, b) for a, b in zip(*grads))
        with pytest.raises(ValueError, match="meta"):
            m(torch.empty(4, 16, device="meta"))
        with pytest.raises(TypeError, match="torch.Tensor"):
            m(np.zeros((4, 16), np.float32))
        # NaN or Inf in x or g_y: NaN gradients, as torch's own linear map gives non-finite ones
        # (torch.amp.GradScaler then skips the step); under anomaly detection hot's error
        bad = torch.randn(128, 16)  # codes smaller than x: made in the forward
        bad[1, 2] = float("nan")
        with torch.autograd.set_detect_anomaly(True), pytest.raises(hot.HotError) as e:
            m(bad)
        assert e.value.status == hot.Status.ERR_NONFINITE and "hot_layer_save" in str(e.value)
        bad_kept = x.clone()  # 4 tokens: the codes (a 64-token block) are not smaller than x, so
        bad_kept[1, 2] = float("nan")  # x is kept and the codes are made in the backward
        y = m(bad_kept.clone().requires_grad_())
        with torch.autograd.set_detect_anomaly(True), pytest.raises(hot.HotError) as e:
            y.sum().backward()
        assert e.value.status == hot.Status.ERR_NONFINITE and "hot_layer_save" in str(e.value)
        y = m(x)
        with torch.autograd.set_detect_anomaly(True), pytest.raises(hot.HotError) as e:
            y.backward(torch.full_like(y, float("inf")))
        assert e.value.status == hot.Status.ERR_NONFINITE
        for inp, gy in ((bad, None), (bad_kept, None), (x, float("inf")), (x, float("nan"))):
            m.zero_grad()
            xi = inp.clone().requires_grad_()
            y = m(xi)
            step = m.hot_step
            y.backward(torch.ones_like(y) if gy is None else torch.full_like(y, gy))
            assert m.hot_step == step + 1  # the step is used, as by a backward that ran
            for g in (xi.grad, m.weight.grad, m.bias.grad):
                assert g is not None and g.dtype == torch.float32 and torch.isnan(g).all()
        m.zero_grad()
        m(x).sum().backward()  # and the next backward runs as before
        assert torch.isfinite(m.weight.grad).all()
        with pytest.raises(TypeError, match="spec must be"):
            ht.HOTLinear(16, 8, spec=3)
        with pytest.raises(ValueError, match="spec describes 32 -> 8"):
            ht.HOTLinear(16, 8, spec=hot.LayerSpec(32, 8))
        with pytest.raises(ValueError, match="needs spec_layer"):
            ht.HOTLinear(16, 8, spec="x.lua")


def test_unaligned_views_give_the_same_grads(hot, ht, monkeypatch):
    """A contiguous view at an offset that is not a multiple of 16 bytes (hot.h asks 16-byte
    aligned tensors) is copied for the call: hot only sees aligned addresses, and the gradients
    equal those of an aligned copy."""
    seen = []
    # input addresses: save_ptr(x, dtype, saved, ...), backward_ptr(g_y, w, dtype, g_x, g_w,
    # g_b, saved, ...)
    for name, pos in (("save_ptr", (0, 2)), ("backward_ptr", (0, 1, 3, 4, 5, 6))):
        orig = getattr(hot.Layer, name)

        def spy(self, *a, _orig=orig, _pos=pos, **k):
            seen.extend(a[i] % 16 for i in _pos)
            return _orig(self, *a, **k)
        monkeypatch.setattr(hot.Layer, name, spy)
    torch.manual_seed(2)
    base = torch.randn(1 + 6 * 32)
    x_view = base[1:].view(6, 32)
    assert x_view.data_ptr() % 16 != 0 and x_view.is_contiguous()
    grads = []
    for x in (x_view, x_view.clone()):
        with new_ctx(hot) as ctx:
            m = ht.HOTLinear(32, 8, context=ctx, tag="u")
            with torch.no_grad():
                m.weight.copy_(torch.linspace(-1, 1, 8 * 32).reshape(8, 32))
            xg = x.detach().requires_grad_()
            m(xg).backward(torch.linspace(-2, 2, 6 * 8).reshape(6, 8))
            grads.append((xg.grad, m.weight.grad))
    assert bits_equal(grads[0][0], grads[1][0]) and bits_equal(grads[0][1], grads[1][1])
    assert len(seen) == 16 and not any(seen), f"unaligned addresses reached hot: {seen}"


def test_no_grad_and_frozen_paths_skip_hot(hot, ht):
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(16, 8, context=ctx)
        x = torch.randn(4, 16)
        with torch.no_grad():
            y = m(x)
        m.requires_grad_(False)
        y2 = m(x)
        assert torch.equal(y, F.linear(x, m.weight, m.bias)) and torch.equal(y, y2)
        assert ctx.stats().saves == 0 and m.hot_layers() == []


def test_layers_cached_per_shape(hot, ht):
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(16, 8, context=ctx, max_cached_shapes=2)
        for shape in [(4, 16), (4, 16), (3, 5, 16), (7, 16), (4, 16)]:
            m(torch.randn(*shape)).sum().backward()
        shapes = [(i.info().B, i.info().L) for i in m.hot_layers()]
        assert shapes == [(1, 7), (1, 4)], shapes
        assert m.hot_step == 5
        assert ctx.stats().layers <= 3  # evicted layers are destroyed once no graph holds them



def test_bias_set_or_removed_after_construction(hot, ht):
    """A bias Parameter given to a HOTLinear made without one (or a bias removed) is what the
    backward computes: g_b is g_y summed over the rows, as nn.Linear's, and no step is lost."""
    with new_ctx(hot) as ctx:
        m = ht.HOTLinear(16, 8, bias=False, context=ctx, tag="late")
        x = torch.randn(3, 5, 16, requires_grad=True)
        g = torch.randn(3, 5, 8)
        m(x).backward(g)
        m.bias = nn.Parameter(torch.zeros(8))
        m(x).backward(g)
        assert torch.allclose(m.bias.grad, g.sum((0, 1)), atol=1e-5)
        m.bias = None
        m(x).backward(g)
        assert m.hot_step == 3 and m.bias is None

def test_convert_swaps_linear_modules(hot, ht, tmp_path):
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(32, 48), nn.ReLU(),
                          nn.Sequential(nn.Linear(48, 48), nn.GELU()), nn.Linear(48, 10))
    params = [p for p in model.parameters()]
    with new_ctx(hot) as ctx:
        out = ht.convert(model, context=ctx)
        assert out is model
        kinds = [type(m).__name__ for m in model.modules() if isinstance(m, nn.Linear)]
        assert kinds == ["HOTLinear"] * 3
        assert [p for p in model.parameters()] == params, "convert must share the Parameters"
        assert model[2][0].hot_spec.name == "2.0"
        model(torch.randn(5, 32)).sum().backward()
        assert all(p.grad is not None for p in params)

        spec = tmp_path / "mlp.lua"
        spec.write_text('local hot = require "hot"\n'
                        'return hot.model { name = "mlp", batch = 1, tokens = 64, layers = {\n'
                        '  hot.linear { name = "2.0", in_features = 48, out_features = 48,\n'
                        '               hq = hot.hq { block = 8 } } } }\n')
        m2 = nn.Sequential(nn.Linear(32, 48), nn.Sequential(nn.Linear(48, 48)))
        m2 = nn.Sequential(m2[0], nn.ReLU(), m2[1])
        ht.convert(m2, spec=str(spec), context=ctx)
        assert type(m2[0]) is nn.Linear and type(m2[2][0]) is ht.HOTLinear
        assert m2[2][0].hot_spec.c.hq.block == 8
        with pytest.raises(ValueError, match="names none of the model's nn.Linear"):
            ht.convert(nn.Sequential(nn.Linear(4, 4)), spec=str(spec), context=ctx)
        only = ht.convert(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), context=ctx,
                          include=lambda n, mod: n == "1")
        assert [type(m).__name__ for m in only] == ["Linear", "HOTLinear"]
        assert isinstance(ht.convert(nn.Linear(4, 4), context=ctx), ht.HOTLinear)


def test_copy_pickle_and_state_dict(hot, ht):
    """deepcopy and pickling drop the per-object layer cache (no C handle is duplicated: a
    double destroy would crash); the state dict is nn.Linear's."""
    import copy
    import io
    torch.manual_seed(5)
    lin = nn.Linear(16, 8)
    m = ht.HOTLinear(16, 8)
    m.load_state_dict(lin.state_dict())
    assert set(m.state_dict()) == {"weight", "bias", "_extra_state"}
    x = torch.randn(3, 16)
    m(x).sum().backward()
    c = copy.deepcopy(m)
    assert c.hot_layers() == [] and len(m.hot_layers()) == 1
    c(x).sum().backward()
    assert c.hot_layers()[0] is not m.hot_layers()[0]
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    p = torch.load(buf, weights_only=False)
    p.zero_grad()
    p(x).sum().backward()
    assert torch.equal(p.weight, m.weight) and p.weight.grad is not None
    del c, p
    gc.collect()
    with hot.Context("cpu") as ctx:
        with pytest.raises(TypeError, match="cannot be pickled"):
            torch.save(ht.HOTLinear(4, 4, context=ctx), io.BytesIO())
        assert copy.deepcopy(ctx) is ctx


def test_shared_context_per_device(hot, ht):
    m = ht.HOTLinear(16, 8)
    m(torch.randn(4, 16)).sum().backward()
    ctx = ht.context_for("cpu")
    assert m.hot_layers()[0].context is ctx and ctx.backend == "cpu"
    with pytest.raises(ValueError, match="cpu context cannot serve cuda"):
        ht.set_context("cuda:0", ctx)


# ---- the CUDA backend (on a GPU only) ---------------------------------------------------------
# The layers the CUDA tests below make: (B, L, I, O, dtype, how). "module": a HOTLinear's layer;
# "api": Context.create_layer with the sizes. precompile() (run as
# `python test_torch.py --precompile sm_90,sm_90a`) compiles their kernels into $HOT_CACHE_DIR
# without a GPU, so that a GPU run finds every kernel in that cache (tests/gpu/README.md).
CUDA_LAYERS = [
    (2, 128, 64, 96, torch.float32, "module"),   # test_cuda_backend_equals_cpu_backend
    (2, 128, 64, 96, torch.bfloat16, "module"),  # test_cuda_non_default_stream
    (2, 128, 64, 96, torch.float32, "api"),      # test_cuda_thread_without_current_context
]


def need_cuda():
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device visible to torch: the CUDA backend is checked on a GPU only")


def test_cuda_backend_equals_cpu_backend(hot, ht):
    need_cuda()
    torch.manual_seed(0)
    B, L, I, O = 2, 128, 64, 96
    x = torch.randn(B, L, I)
    gy = torch.randn(B, L, O)
    res = []
    for dev in ("cpu", "cuda"):
        ctx = hot.Context("cpu" if dev == "cpu" else "cuda", seed=SEED)
        m = ht.HOTLinear(I, O, context=ctx, tag="cmp")
        with torch.no_grad():
            m.weight.copy_(torch.linspace(-1, 1, O * I).reshape(O, I))
        m = m.to(dev)
        xd = x.to(dev).requires_grad_()
        m(xd).backward(gy.to(dev))
        torch.cuda.synchronize()
        res.append((xd.grad.cpu(), m.weight.grad.cpu(), m.bias.grad.cpu()))
        del m
        ctx.close()
    for a, b, what in zip(res[0], res[1], ("g_x", "g_w", "g_b")):
        assert bits_equal(a, b), f"{what}: CUDA backend differs from the CPU backend"


def module_grads(hot, ht, dev, x, gy, w, stream=None):
    """g_x, g_w, g_b of a HOTLinear (bias, weight w) in a fresh context of dev's backend; on
    CUDA the inputs are copied and the module runs inside `stream` (None: the current one)."""
    ctx = hot.Context("cpu" if dev == "cpu" else "cuda", seed=SEED)
    try:
        m = ht.HOTLinear(x.shape[-1], w.shape[0], dtype=x.dtype, context=ctx, tag="cmp")
        with torch.no_grad():
            m.weight.copy_(w)
        m = m.to(dev)
        if dev == "cpu" or stream is None:
            xd = x.to(dev).requires_grad_()
            m(xd).backward(gy.to(dev))
            if dev != "cpu":
                torch.cuda.synchronize()
        else:
            stream.wait_stream(torch.cuda.current_stream())  # the weights' upload
            with torch.cuda.stream(stream):
                # The GPU is kept busy on `stream` before each upload: work that hot put on any
                # other stream would read the inputs before they arrive.
                if hasattr(torch.cuda, "_sleep"):
                    torch.cuda._sleep(20_000_000)
                xd = x.to(dev, non_blocking=True).requires_grad_()
                y = m(xd)
                if hasattr(torch.cuda, "_sleep"):
                    torch.cuda._sleep(20_000_000)
                y.backward(gy.to(dev, non_blocking=True))
            stream.synchronize()
        return xd.grad.cpu(), m.weight.grad.cpu(), m.bias.grad.cpu()
    finally:
        ctx.close()


def test_cuda_non_default_stream(hot, ht):
    """HOTLinear's save and backward run on torch's current stream: inside a non-default
    torch.cuda.Stream, with that stream busy before every input arrives, the gradients equal the
    CPU backend's bit for bit."""
    need_cuda()
    g = torch.Generator().manual_seed(77)
    B, L, I, O = 2, 128, 64, 96
    x = torch.randn(B, L, I, generator=g).to(torch.bfloat16)
    gy = torch.randn(B, L, O, generator=g).to(torch.bfloat16)
    w = torch.randn(O, I, generator=g).to(torch.bfloat16)
    want = module_grads(hot, ht, "cpu", x, gy, w)
    stream = torch.cuda.Stream()
    assert stream.cuda_stream != torch.cuda.current_stream().cuda_stream
    got = module_grads(hot, ht, "cuda", x, gy, w, stream=stream)
    for a, b, what in zip(got, want, ("g_x", "g_w", "g_b")):
        assert bits_equal(a, b), f"{what}: CUDA backend on a non-default stream differs from the CPU"


def test_cuda_thread_without_current_context(hot):
    """A thread with no current CUDA context (a fresh thread of a framework that never touched
    the driver there): the layer's first save (JIT, module load), its backward and the check run
    in it; hot makes its own context current for the calls and leaves the thread as it found it
    (no current context); the results equal the CPU backend's bit for bit."""
    need_cuda()
    import ctypes
    import threading
    cu = ctypes.CDLL("libcuda.so.1")
    g = torch.Generator().manual_seed(5)
    B, L, I, O = 2, 128, 64, 96
    x = torch.randn(B * L, I, generator=g)
    w = torch.randn(O, I, generator=g)
    gy = torch.randn(B * L, O, generator=g)
    with hot.Context("cpu", seed=SEED) as cpu:
        lc = cpu.create_layer(I, O, B, L, dtype="f32", layer_id=0)
        lc.save(x.numpy())
        want = lc.backward(gy.numpy(), w.numpy(), step=3)
    dev = torch.device("cuda")
    xd, wd, gyd = x.to(dev), w.to(dev), gy.to(dev)
    gx = torch.empty(B * L, I, device=dev)
    gw = torch.empty(O, I, device=dev)
    gb = torch.empty(O, device=dev)
    torch.cuda.synchronize()
    ctx = hot.Context("cuda", seed=SEED)
    layer = ctx.create_layer(I, O, B, L, dtype="f32", layer_id=0)
    seen = {}

    def work():
        try:
            cur = ctypes.c_void_p()
            assert cu.cuCtxSetCurrent(None) == 0
            assert cu.cuCtxGetCurrent(ctypes.byref(cur)) == 0
            seen["before"] = cur.value
            layer.save_ptr(xd.data_ptr(), "f32")
            layer.backward_ptr(gyd.data_ptr(), wd.data_ptr(), "f32", gx.data_ptr(), gw.data_ptr(),
                               gb.data_ptr(), step=3)
            layer.check()
            assert cu.cuCtxGetCurrent(ctypes.byref(cur)) == 0
            seen["after"] = cur.value
        except BaseException as e:  # re-raised in the test's thread
            seen["error"] = e

    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in seen:
        raise seen["error"]
    assert seen["before"] is None, "the worker thread should start without a current context"
    assert seen["after"] is None, "hot left a CUDA context current in the calling thread"
    torch.cuda.synchronize()
    ctx.close()
    for a, b, what in zip((gx.cpu(), gw.cpu(), gb.cpu()), want, ("g_x", "g_w", "g_b")):
        assert bits_equal(a, torch.from_numpy(b)), f"{what}: CUDA backend (worker thread) differs"


def precompile(archs):
    """Compiles the kernels of every CUDA_LAYERS layer for each arch of `archs` into the cache
    of $HOT_CACHE_DIR, in CPU contexts with the arch forced (no GPU needed; the same plans and
    kernels as a CUDA context of that arch). Returns the number compiled now."""
    import hot
    import hot.torch as ht_mod
    compiled = 0
    for arch in archs:
        with hot.Context("cpu", arch=arch, seed=SEED, disk_cache=True) as ctx:
            for B, L, I, O, dtype, how in CUDA_LAYERS:
                if how == "module":
                    m = ht_mod.HOTLinear(I, O, dtype=dtype, context=ctx)
                    layer = m._hot_layer(torch.empty(B, L, I, dtype=dtype)).layer
                else:
                    name = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}[dtype]
                    layer = ctx.create_layer(I, O, B, L, dtype=name)
                layer.compile()
            st = ctx.stats()
            print(f"precompile {arch}: {st.compiles} compiled, {st.disk_hits} disk hits "
                  f"({st.cache_dir})")
            compiled += st.compiles
    return compiled


if __name__ == "__main__":
    import os
    import sys
    if len(sys.argv) != 3 or sys.argv[1] != "--precompile":
        sys.exit("usage: test_torch.py --precompile ARCHS   (HOT_LIBRARY, HOT_CACHE_DIR set; "
                 "PYTHONPATH with python/)")
    if not os.environ.get("HOT_CACHE_DIR"):
        sys.exit("test_torch.py: --precompile needs HOT_CACHE_DIR (the cache directory to fill)")
    n = precompile([a for a in sys.argv[2].split(",") if a])
    print(f"kernel cache (precompile): {n} compiled")


def _gomp_loaded():
    with open("/proc/self/maps") as f:
        return any("libgomp" in line for line in f)


def test_cpu_backend_on_torchs_openmp_workers(hot, ht):
    """With torch imported (GNU OpenMP loaded), the CPU backend runs on that runtime's workers
    unless HOT_CPU_OPENMP=off keeps hot's own threads; HOTLinear's
    gradients are the same bits there and on hot's own threads, at 1, 2 and 3 threads; bad
    runtime names raise and leave the setting alone."""
    if not _gomp_loaded():
        pytest.skip("this torch build does not load GNU OpenMP (libgomp): nothing to attach to")
    want = "libgomp.so.1" if os.environ.get("HOT_CPU_OPENMP", "").strip().lower() in ("", "auto") \
        else None
    assert hot.cpu_openmp() == want, "hot.torch follows HOT_CPU_OPENMP (default: GNU OpenMP)"
    torch.manual_seed(3)
    B, L, I, O = 3, 70, 64, 96
    x = torch.randn(B, L, I).requires_grad_()
    gy = torch.randn(B, L, O)
    got = {}
    try:
        for runtime in ("libgomp.so.1", None):
            hot.cpu_use_openmp(runtime)
            assert hot.cpu_openmp() == runtime
            for threads in (1, 2, 3):
                os.environ["HOT_CPU_THREADS"] = str(threads)
                with new_ctx(hot) as ctx:
                    m = ht.HOTLinear(I, O, context=ctx, tag="omp")
                    with torch.no_grad():
                        m.weight.copy_(torch.linspace(-0.05, 0.05, O * I).reshape(O, I))
                    x.grad = None
                    m(x).backward(gy)
                    got[runtime, threads] = (x.grad.clone(), m.weight.grad.clone(),
                                             m.bias.grad.clone())
        base = got["libgomp.so.1", 1]
        for key, val in got.items():
            for a, b, what in zip(val, base, ("g_x", "g_w", "g_b")):
                assert bits_equal(a, b), f"{what} differs on {key[0] or 'own threads'}, {key[1]} threads"
        with pytest.raises(hot.HotError) as e:
            hot.cpu_use_openmp("libhot-no-such-runtime.so.9")
        assert e.value.status == hot.Status.ERR_NOT_FOUND
        with pytest.raises(hot.HotError) as e:
            hot.cpu_use_openmp("libm.so.6")  # loaded, but not an OpenMP runtime
        assert e.value.status == hot.Status.ERR_NOT_FOUND
        with pytest.raises(hot.HotError) as e:
            hot.cpu_use_openmp("")
        assert e.value.status == hot.Status.ERR_INVALID
        with pytest.raises(TypeError):
            hot.cpu_use_openmp(7)
        assert hot.cpu_openmp() is None  # unchanged by the refused names
        falls = hot.cpu_openmp_fallbacks()  # a counter of the process: an int, never negative
        assert isinstance(falls, int) and falls >= 0
    finally:
        os.environ.pop("HOT_CPU_THREADS", None)
        hot.cpu_use_openmp("libgomp.so.1")


def test_cpu_threads_follow_torch(hot, ht, monkeypatch):
    """hot.torch's CPU calls take torch's thread count (torch.set_num_threads) unless
    HOT_CPU_THREADS pins the context's: at 1 thread a backward of 2^19 values runs no parallel
    region, at 2 it does, and both give the same bits (fresh contexts with the same seed, so the
    same step and draws); pinned, torch's count is not followed. The setter's bounds and types."""
    monkeypatch.delenv("HOT_CPU_THREADS", raising=False)
    torch.manual_seed(5)
    B, L, I, O = 8, 128, 128, 256
    x = torch.randn(B, L, I).requires_grad_()
    gy = torch.randn(B, L, O)
    w = torch.randn(O, I) * 0.05
    old = torch.get_num_threads()

    def one_backward(ctx):
        m = ht.HOTLinear(I, O, context=ctx, tag="threads")
        with torch.no_grad():
            m.weight.copy_(w)
        x.grad = None
        r0 = hot.cpu_regions()
        m(x).backward(gy)
        return hot.cpu_regions() - r0, (x.grad.clone(), m.weight.grad.clone(), m.bias.grad.clone())

    got = {}
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            with new_ctx(hot) as ctx:
                start = ctx.cpu_threads
                assert start >= 1 and not ctx.cpu_threads_pinned
                regions, got[n] = one_backward(ctx)
                assert ctx.cpu_threads == n
                assert (regions == 0) if n == 1 else (regions > 0), (n, regions)
                with pytest.raises(ValueError):
                    ctx.set_cpu_threads(-1)
                with pytest.raises(ValueError):
                    ctx.set_cpu_threads(hot._lib.HOT_MAX_CPU_THREADS + 1)
                with pytest.raises(TypeError):
                    ctx.set_cpu_threads(True)
                with pytest.raises(TypeError):
                    ctx.set_cpu_threads(1.0)
                ctx.set_cpu_threads(np.int64(1))  # an integer of numpy's, as everywhere else
                assert ctx.cpu_threads == 1
                ctx.set_cpu_threads(0)
                assert ctx.cpu_threads == start
        for a, b, what in zip(got[1], got[2], ("g_x", "g_w", "g_b")):
            assert bits_equal(a, b), f"{what} differs between 1 and 2 threads"
        monkeypatch.setenv("HOT_CPU_THREADS", "1")
        torch.set_num_threads(2)
        with new_ctx(hot) as ctx:
            assert ctx.cpu_threads == 1 and ctx.cpu_threads_pinned
            regions, _ = one_backward(ctx)
            assert regions == 0 and ctx.cpu_threads == 1
    finally:
        torch.set_num_threads(old)


@pytest.mark.parametrize("value,want,warns", [(None, "libgomp.so.1", False),
                                              ("", "libgomp.so.1", False),
                                              ("off", None, False), ("auto", "libgomp.so.1", False),
                                              ("libhot-no-such-runtime.so.9", None, True)])
def test_hot_cpu_openmp_environment(hot, value, want, warns):
    """HOT_CPU_OPENMP, read when libhot is loaded: unset (the default), empty or auto attaches to
    GNU OpenMP when loaded, off keeps hot's own threads, an unusable name warns and keeps hot's
    own threads."""
    import subprocess
    import sys
    if want and not _gomp_loaded():
        pytest.skip("this torch build does not load GNU OpenMP (libgomp): nothing to attach to")
    code = ("import warnings, torch, hot, hot.torch\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always')\n"
            "    hot._lib.find_library()\n"
            "    hot._lib.reattach_openmp()\n"
            "print(hot.cpu_openmp(), any('HOT_CPU_OPENMP' in str(x.message) for x in w))\n")
    env = dict(os.environ)
    env.pop("HOT_CPU_OPENMP", None)
    if value is not None:
        env["HOT_CPU_OPENMP"] = value
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    runtime, warned = r.stdout.split()
    assert runtime == str(want), r.stdout
    assert warned == str(warns), r.stdout + r.stderr


def test_grad_scaler_skips_an_overflowed_step(hot, ht):
    """torch.amp.GradScaler's dynamic loss scaling: a scale so large that the scaled gradient
    overflows gives non-finite gradients (NaN from hot, as non-finite ones from nn.Linear), the
    scaler skips that optimizer step and lowers its scale, and the next step trains."""
    torch.manual_seed(3)
    m = ht.HOTLinear(16, 8, tag="scaler")
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 127, growth_interval=1000)
    x = torch.randn(128, 16)
    w0 = m.weight.detach().clone()
    for _ in range(2):
        opt.zero_grad()
        scaler.scale(m(x).square().sum()).backward()
        scaler.step(opt)
        scaler.update()
        if scaler.get_scale() < 2.0 ** 127:
            break
    assert scaler.get_scale() < 2.0 ** 127 and torch.equal(m.weight, w0)  # skipped, scale lowered
    scaler = torch.amp.GradScaler("cpu", init_scale=1.0)
    opt.zero_grad()
    scaler.scale(m(x).square().sum()).backward()
    scaler.step(opt)
    scaler.update()
    assert torch.isfinite(m.weight).all() and not torch.equal(m.weight, w0)
