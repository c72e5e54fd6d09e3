"""hot.torch beyond a single nn.Linear: nn.MultiheadAttention converted (the forward equals
torch's bit for bit in every layout and mask configuration, the projections run hot), convert()'s
report (nn.Linear subclasses, what is skipped and why), HOT_BACKEND honoured and checked, the
state dict (hot_step and the LQS choices), torch.autocast with bf16, activation checkpointing and
torch.compile."""

import copy
import io
import os

import pytest
from conftest import need

torch = need("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


def bits_equal(a, b):
    return a.shape == b.shape and a.dtype == b.dtype and \
        torch.equal(a.contiguous().view(torch.int32), b.contiguous().view(torch.int32))


def rel(a, b):
    return float((a - b).norm() / b.norm())


# ---- attention --------------------------------------------------------------------------------

MHA_CASES = {
    # name: (constructor kwargs, how query/key/value relate, call kwargs)
    "self_batch_first": (dict(batch_first=True), "self", dict(need_weights=False)),
    "self_seq_first_weights": (dict(), "self", dict()),
    "self_causal": (dict(batch_first=True), "self", dict(need_weights=False, causal=True)),
    "self_padding_mask": (dict(batch_first=True), "self", dict(need_weights=False, kpm=True)),
    "cross_kv_same": (dict(batch_first=True), "kv", dict(need_weights=False)),
    "cross_all_different": (dict(), "qkv", dict(need_weights=True, average_attn_weights=False)),
    "kdim_vdim": (dict(kdim=12, vdim=20, batch_first=True), "qkv", dict(need_weights=False)),
    "bias_kv_zero_attn": (dict(add_bias_kv=True, add_zero_attn=True), "self", dict()),
    "no_bias": (dict(bias=False, batch_first=True), "self", dict(need_weights=False)),
    "unbatched": (dict(), "self", dict(need_weights=False, unbatched=True)),
}


@pytest.mark.parametrize("case", list(MHA_CASES))
def test_attention_forward_equals_torch_and_backward_runs_hot(hot, ht, case):
    ctor, rel_kind, call = MHA_CASES[case]
    call = dict(call)
    causal, kpm, unbatched = call.pop("causal", False), call.pop("kpm", False), \
        call.pop("unbatched", False)
    torch.manual_seed(11)
    E, H, N, L, S = 32, 4, 2, 24, 16
    ref = nn.MultiheadAttention(E, H, **ctor)
    bf = ctor.get("batch_first", False)
    with hot.Context("cpu", seed=3) as ctx:
        m = ht.convert(copy.deepcopy(ref), context=ctx)
        assert isinstance(m, ht.HOTMultiheadAttention) and isinstance(m.out_proj, ht.HOTLinear)

        def shaped(n, d):
            if unbatched:
                return torch.randn(n, d)
            return torch.randn(N, n, d) if bf else torch.randn(n, N, d)
        q = shaped(L, E)
        if rel_kind == "self":
            k = v = q
        elif rel_kind == "kv":
            k = v = shaped(S, E)
        else:
            k, v = shaped(S, ctor.get("kdim", E)), shaped(S, ctor.get("vdim", E))
        if causal:
            call.update(attn_mask=nn.Transformer.generate_square_subsequent_mask(L), is_causal=True)
        if kpm:
            pad = torch.zeros(N, L, dtype=torch.bool)
            pad[1, -5:] = True
            call.update(key_padding_mask=pad)
        outs = []
        for mod in (ref, m):
            qq = q.clone().requires_grad_()
            kk = qq if k is q else k.clone().requires_grad_()
            vv = kk if v is k else v.clone().requires_grad_()
            y, w = mod(qq, kk, vv, **call)
            y.backward(torch.ones_like(y))
            outs.append((y.detach(), w, qq.grad))
        (y0, w0, g0), (y1, w1, g1) = outs
        assert bits_equal(y0, y1), f"{case}: output differs from nn.MultiheadAttention"
        assert (w0 is None) == (w1 is None) and (w0 is None or bits_equal(w0, w1))
        assert rel(g1, g0) < 0.8, f"{case}: query gradient far from exact ({rel(g1, g0):.3f})"
        for (n, p), (_, p_ref) in zip(m.named_parameters(), ref.named_parameters()):
            assert p.grad is not None, f"{case}: no gradient for {n}"
            if p.dim() == 2:
                assert not bits_equal(p.grad, p_ref.grad), f"{case}: {n}'s gradient is exact"
        roles = sorted(m._hot_in)
        want = {"self": ["qkv"], "kv": ["kv", "q"], "qkv": ["k", "q", "v"]}[rel_kind]
        if unbatched:  # torch unsqueezes query, key and value apart: three projections
            want = ["k", "q", "v"]
        assert roles == want, roles
        for role, p in m._hot_in.items():
            assert p.hot_step == 1 and p.hot_tag == f"{m.hot_tag}.in_proj.{role}"
            info = p.hot_layers()[0].info()
            assert info.layer_id == hot.layer_id_for(p.hot_tag)
            # the tokens of each sequence are HLA's axis, whichever the layout
            tokens = L if role in ("q", "qkv") or rel_kind == "self" else S
            assert (info.B, info.L) == (1 if unbatched else N, tokens)
        with torch.no_grad():  # no grad: nn.MultiheadAttention's own path, hot not called
            saves = ctx.stats().saves
            y2, _ = m(q, k, v, **call)
            assert bits_equal(y2, y0) and ctx.stats().saves == saves


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_output_contiguous_as_torch(hot, ht, batch_first, need_weights):
    """Sequence first, nn.MultiheadAttention's output is contiguous (code reshapes it with
    .view); the HOT forward gives the same layout, not a transposed view of [N, L, E]."""
    torch.manual_seed(5)
    ref = nn.MultiheadAttention(16, 2, batch_first=batch_first)
    with hot.Context("cpu") as ctx:
        m = ht.convert(copy.deepcopy(ref), context=ctx)
        x = torch.randn(7, 3, 16, requires_grad=True)
        y0, _ = ref(x, x, x, need_weights=need_weights)
        y1, _ = m(x, x, x, need_weights=need_weights)
        assert bits_equal(y1, y0)
        if y0.is_contiguous():
            assert y1.is_contiguous(), (y0.stride(), y1.stride())
            y1.view(-1, 16).sum().backward()


BAD_ATTENTION_CALLS = {
    # name: (constructor kwargs, query, key, value shapes, call kwargs)
    "embed_dim": (dict(), (5, 2, 16), (5, 2, 16), (5, 2, 16), dict()),
    "key_value_shapes": (dict(), (5, 2, 32), (5, 2, 32), (6, 2, 32), dict()),
    "packed_key_dim": (dict(), (5, 2, 32), (5, 2, 16), (5, 2, 16), dict()),
    "separate_key_value_lengths": (dict(kdim=12, vdim=20), (5, 2, 32), (5, 2, 12), (6, 2, 20),
                                   dict()),
    "separate_key_value_batch": (dict(kdim=12, vdim=20), (5, 2, 32), (5, 2, 12), (5, 3, 20),
                                 dict()),
    "kdim": (dict(kdim=12, vdim=20), (5, 2, 32), (5, 2, 13), (5, 2, 20), dict()),
    "vdim": (dict(kdim=12, vdim=20), (5, 2, 32), (5, 2, 12), (5, 2, 21), dict()),
    "key_padding_mask": (dict(), (5, 2, 32), (6, 2, 32), (6, 2, 32),
                         dict(key_padding_mask=torch.zeros(2, 7, dtype=torch.bool))),
}


@pytest.mark.parametrize("case", list(BAD_ATTENTION_CALLS))
def test_attention_bad_arguments_refused_as_torch(hot, ht, case):
    """A call nn.MultiheadAttention refuses raises the same kind of error (AssertionError from
    F.multi_head_attention_forward's checks, RuntimeError from its F.linear on the packed
    weight)."""
    ctor, qs, ks, vs, call = BAD_ATTENTION_CALLS[case]
    torch.manual_seed(2)
    ref = nn.MultiheadAttention(32, 4, **ctor)
    with hot.Context("cpu") as ctx:
        m = ht.convert(copy.deepcopy(ref), context=ctx)
        q, k, v = (torch.randn(s, requires_grad=True) for s in (qs, ks, vs))
        with pytest.raises(Exception) as want:
            ref(q, k, v, **call)
        with pytest.raises(type(want.value)):
            m(q, k, v, **call)


@pytest.mark.parametrize("need_weights", [False, True])
def test_attention_out_proj_hooks_as_torch(hot, ht, need_weights):
    """nn.MultiheadAttention reads out_proj's weight and bias (F.linear), never calls out_proj:
    hooks on it do not run. The HOT forward runs out_proj's hot linear map the same way, so a
    hook on out_proj neither runs nor changes the output, with grad as without."""
    torch.manual_seed(6)
    ref = nn.MultiheadAttention(16, 2, batch_first=True)
    calls = []

    def pre(mod, args):
        calls.append("pre")

    def post(mod, args, out):
        calls.append("post")
        return out * 2

    ref.out_proj.register_forward_pre_hook(pre)
    ref.out_proj.register_forward_hook(post)
    with hot.Context("cpu") as ctx:
        m = ht.convert(copy.deepcopy(ref), context=ctx)
        x = torch.randn(3, 7, 16, requires_grad=True)
        y0, _ = ref(x, x, x, need_weights=need_weights)
        assert calls == []
        y1, _ = m(x, x, x, need_weights=need_weights)
        assert calls == [] and bits_equal(y1, y0)
        y1.sum().backward()
        assert m.out_proj.weight.grad is not None and m.out_proj.hot_step == 1


def test_transformer_layer_converted_fully(hot, ht):
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    ref = copy.deepcopy(layer)
    with hot.Context("cpu") as ctx:
        # hla_basis="spec": one backward per layer (auto measures the basis at the first one)
        m, report = ht.convert(layer, context=ctx, return_report=True, hla_basis="spec")
        assert [n for n, _, _ in report.converted] == ["self_attn", "linear1", "linear2",
                                                       "activation"]  # ReLU -> HOTReLU
        assert report.skipped == []
        x = torch.randn(3, 20, 32)
        assert bits_equal(m(x.requires_grad_()), ref(x))
        m(x).sum().backward()
        assert ctx.stats().backwards == 4  # in_proj (packed), out_proj, linear1, linear2


class Scaled(nn.Linear):
    """A subclass with a forward of its own: convert cannot know what it computes."""

    def forward(self, x):
        return 2 * super().forward(x)


class Tagged(nn.Linear):
    """A subclass that keeps nn.Linear's forward: converted."""
    note = "mine"


class OwnAttention(nn.MultiheadAttention):
    def forward(self, *a, **k):
        return super().forward(*a, **k)


def test_convert_report(hot, ht, capsys):
    model = nn.ModuleDict({"a": Tagged(8, 8), "b": Scaled(8, 8), "c": nn.MultiheadAttention(8, 2),
                           "d": OwnAttention(8, 2), "e": nn.Linear(8, 4),
                           "f": ht.HOTLinear(4, 4, tag="keep"), "g": ht.HOTLinear(4, 4)})
    with hot.Context("cpu") as ctx:
        out = ht.convert(model, context=ctx, verbose=True, include=lambda n, mod: n != "e")
        assert out is model
    printed = capsys.readouterr().out
    assert printed.startswith("hot.torch.convert: 2 converted, 6 skipped")
    assert type(model["a"]) is ht.HOTLinear and model["a"].hot_tag == "a"
    assert type(model["b"]) is Scaled and type(model["d"]) is OwnAttention
    assert type(model["c"]) is ht.HOTMultiheadAttention and model["c"].out_proj.hot_tag == "c.out_proj"
    assert type(model["e"]) is nn.Linear
    assert model["f"].hot_tag == "keep" and model["g"].hot_tag == "g"  # untagged: named now
    for what in ("b ", "a subclass of nn.Linear with a forward of its own",
                 "a subclass of nn.MultiheadAttention with a forward of its own",
                 "d.out_proj", "refused by include()", "already HOT (tag 'keep')",
                 "already HOT; random stream tagged 'g'", "Tagged -> HOTLinear",
                 "MultiheadAttention -> HOTMultiheadAttention"):
        assert what in printed, f"{what!r} missing from the report:\n{printed}"
    _, report = ht.convert(nn.Sequential(nn.Linear(4, 4)), return_report=True)
    assert len(report.converted) == 1 and "1 converted, 0 skipped" in str(report)


def test_stream_ids_stable_and_collisions_resolved(hot, ht, monkeypatch):
    assert hot.layer_id_for("blocks.0.fc1") == hot.layer_id_for("blocks.0.fc1")
    assert 0 <= hot.layer_id_for("x") < hot.LAYER_ID_LIMIT
    # FNV-1a 64 of "a" is 0xaf63dc4c8601ec8c; folded to 27 bits:
    h = 0xAF63DC4C8601EC8C
    assert hot.stream_hash("a") == h
    assert hot.layer_id_for("a") == (h ^ (h >> 27) ^ (h >> 54)) & ((1 << 27) - 1)
    for bad in ("", "a\0b"):
        with pytest.raises(ValueError):
            hot.layer_id_for(bad)
        with pytest.raises(ValueError, match="tag"):
            ht.HOTLinear(4, 4, tag=bad)
    # two names of one 64-bit stream identity: the second is tagged "name#1" (and reported)
    real = hot.api.stream_hash
    monkeypatch.setattr(hot.api, "stream_hash", lambda tag: 5 if tag in ("0", "1") else real(tag))
    _, report = ht.convert(nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), return_report=True)
    assert "stream tag '1#1' (its name's stream is taken)" in str(report)


def test_create_layer_with_id_refuses_bad_ids(hot):
    import ctypes
    with hot.Context("cpu") as ctx:
        a = ctx.create_layer(8, 4, 1, 8, layer_id=12345)
        assert a.info().layer_id == 12345
        b = ctx.create_layer(8, 4, 1, 8)
        assert b.info().layer_id == 0  # the creation count did not advance
        for bad in (-1, 1 << 27, 2.0, True):
            with pytest.raises(ValueError, match="layer_id"):
                ctx.create_layer(8, 4, 1, 8, layer_id=bad)
        h = ctypes.c_void_p()
        spec = hot.LayerSpec(8, 4)
        st = ctx._L.hot_layer_create_with_id(ctx._h(), ctypes.byref(spec.c), 1, 8, 0, 1 << 27,
                                             ctypes.byref(h))
        assert st == hot.Status.ERR_INVALID and "outside [0, 2^27)" in ctx.errmsg


# ---- HOT_BACKEND ---------------------------------------------------------------------------------

def test_hot_backend_environment(hot, ht, monkeypatch):
    m = ht.HOTLinear(8, 4, tag="env")
    x = torch.randn(2, 8, requires_grad=True)
    monkeypatch.setenv("HOT_BACKEND", "gpuu")
    with pytest.raises(ValueError, match="HOT_BACKEND='gpuu': expected auto, cuda or cpu"):
        m(x)
    monkeypatch.setenv("HOT_BACKEND", "cuda")
    with pytest.raises(ValueError, match="HOT_BACKEND=cuda, but the tensors are on the CPU"):
        m(x)
    for ok in ("cpu", "auto", ""):
        monkeypatch.setenv("HOT_BACKEND", ok)
        ht.HOTLinear(8, 4, tag="env")(x).sum().backward()
    if torch.cuda.is_available():
        monkeypatch.setenv("HOT_BACKEND", "cpu")
        with pytest.raises(ValueError, match="HOT_BACKEND=cpu, but the tensors are on cuda"):
            ht.HOTLinear(8, 4, tag="env").cuda()(x.detach().cuda().requires_grad_())


# ---- state dict ----------------------------------------------------------------------------------

def test_state_dict_keeps_step_and_calibration(hot, ht):
    torch.manual_seed(4)
    m = ht.HOTLinear(16, 8, tag="sd")
    x = torch.randn(2, 16, 16)
    for _ in range(3):
        m(x).sum().backward()
    sd = m.state_dict()
    assert sd["_extra_state"]["hot_step"] == 3
    assert list(sd["_extra_state"]["hot_calibration"]) == ["f32,2,16"]
    buf = io.BytesIO()
    torch.save(sd, buf)
    buf.seek(0)
    n = ht.HOTLinear(16, 8, tag="sd")
    n.load_state_dict(torch.load(buf, weights_only=True))
    assert n.hot_step == 3 and n._hot_calibration == m._hot_calibration
    n(x).sum().backward()
    assert not n.hot_layers()[0].info().gran_auto  # made with the restored choice
    # an nn.Linear checkpoint loads into a HOTLinear (the hot state stays)
    n.load_state_dict(nn.Linear(16, 8).state_dict())
    assert n.hot_step == 4
    with pytest.raises(ValueError, match="hot_step"):
        n.load_state_dict(dict(sd, _extra_state={"hot_step": -1}))


# ---- autocast, checkpointing, compile ----------------------------------------------------------

def mlp(ht, ctx, seed=0):
    torch.manual_seed(seed)
    return ht.convert(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16)), context=ctx,
                      hla_basis="spec")  # one backward per layer and step


def grads(model):
    return [p.grad.clone() for p in model.parameters()]


def test_autocast_bf16(hot, ht):
    torch.manual_seed(6)
    x = torch.randn(2, 64, 32)
    with hot.Context("cpu", seed=1) as ctx:
        m = mlp(ht, ctx)
        ref = copy.deepcopy(m)
        exact = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 16))
        exact.load_state_dict(m.state_dict(), strict=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = m(x)
            y_exact = exact(x)
        assert y.dtype == torch.bfloat16 and bits_equal(y.view(torch.int16).float(),
                                                        y_exact.view(torch.int16).float())
        y.float().sum().backward()
        y_exact.float().sum().backward()
        layers = [lay.info() for mod in (m[0], m[2]) for lay in mod.hot_layers()]
        assert [i.dtype for i in layers] == [hot.DType.BF16] * 2, "hot did not run in bf16"
        for p, q in zip(m.parameters(), exact.parameters()):
            assert p.grad.dtype == torch.float32
            assert rel(p.grad, q.grad) < 0.8
        # bf16 hot equals hot called on the bf16 casts directly (the same layer, the same step)
        ref16 = copy.deepcopy(ref)
        x16 = x.to(torch.bfloat16)
        h = ref16[0]
        y16 = ht._hot_linear(h, x16, h.weight.to(torch.bfloat16), h.bias.to(torch.bfloat16))
        assert bits_equal(y16.view(torch.int16).float(), F.linear(
            x16, h.weight.to(torch.bfloat16), h.bias.to(torch.bfloat16)).view(torch.int16).float())


def test_autocast_gx_in_input_dtype(hot, ht):
    """Under autocast an fp32 input's gradient is hot's fp32 g_x as it is (the cast of x is part
    of the hot function), g_w and g_b the parameters' fp32 ones: the bits of hot's layer called
    directly on the bf16 casts at the same step, g_x not rounded to bf16."""
    torch.manual_seed(7)
    x = torch.randn(2, 64, 32, requires_grad=True)
    gy = torch.randn(2, 64, 16).to(torch.bfloat16)
    with hot.Context("cpu", seed=1) as ctx:
        m = ht.HOTLinear(32, 16, context=ctx, tag="gx")
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = m(x)
        assert y.dtype == torch.bfloat16
        y.backward(gy)
        assert x.grad.dtype == m.weight.grad.dtype == m.bias.grad.dtype == torch.float32
        (lay,) = m.hot_layers()
        x16, w16 = x.detach().to(torch.bfloat16), m.weight.detach().to(torch.bfloat16)
        saved = torch.empty(lay.saved_bytes + 16, dtype=torch.uint8)
        saved = saved.narrow(0, (-saved.data_ptr()) % 16, lay.saved_bytes)
        lay.save_ptr(x16.data_ptr(), hot.DType.BF16, saved.data_ptr())
        gx, gw, gb = torch.empty(128, 32), torch.empty(16, 32), torch.empty(16)
        lay.backward_ptr(gy.data_ptr(), w16.data_ptr(), hot.DType.BF16, gx.data_ptr(),
                         gw.data_ptr(), gb.data_ptr(), saved.data_ptr(), 0)
        assert torch.equal(x.grad.view(128, 32), gx)
        assert torch.equal(m.weight.grad, gw) and torch.equal(m.bias.grad, gb)
        assert not torch.equal(gx, gx.to(torch.bfloat16).float()), "g_x rounded to bf16"


def test_activation_checkpointing_same_grads(hot, ht):
    from torch.utils.checkpoint import checkpoint
    x = torch.randn(2, 64, 32)
    res = []
    for ckpt in (None, False, True):  # plain, non-reentrant, reentrant
        with hot.Context("cpu", seed=2) as ctx:
            m = mlp(ht, ctx)
            xi = x.clone().requires_grad_()
            y = m(xi) if ckpt is None else checkpoint(m, xi, use_reentrant=ckpt)
            y.pow(2).sum().backward()
            res.append((grads(m), xi.grad, [mod.hot_step for mod in (m[0], m[2])],
                        ctx.stats().backwards))
    for got in res[1:]:
        assert all(bits_equal(a, b) for a, b in zip(got[0], res[0][0]))
        assert bits_equal(got[1], res[0][1])
        assert got[2] == [1, 1] and got[3] == 2  # one backward per layer, one step


def test_torch_compile_same_grads(hot, ht):
    if not hasattr(torch, "compile"):
        pytest.skip("this torch has no torch.compile")
    import shutil
    backend = "inductor" if shutil.which(os.environ.get("CXX", "g++")) else "aot_eager"
    x = torch.randn(2, 64, 32)
    gy = torch.randn(2, 64, 16)
    res = []
    for compiled in (False, True):
        with hot.Context("cpu", seed=2) as ctx:
            m = mlp(ht, ctx)
            f = torch.compile(m, backend=backend) if compiled else m
            for _ in range(2):  # the second call runs the compiled graphs
                m.zero_grad()
                xi = x.clone().requires_grad_()
                y = f(xi)
                y.backward(gy)
            res.append((y.detach(), grads(m), xi.grad, ctx.stats().backwards))
    (y0, g0, x0, b0), (y1, g1, x1, b1) = res
    assert b0 == b1 == 4, "hot must run in the compiled model too"
    assert torch.allclose(y0, y1, rtol=1e-5, atol=1e-6)
    for a, b in zip(g0 + [x0], g1 + [x1]):
        assert torch.allclose(a, b, rtol=1e-4, atol=1e-6), float((a - b).abs().max())
