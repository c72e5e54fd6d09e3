"""hot.memory: saved bytes by distinct storage; HOT linear maps that keep a reference where a
neighbour keeps their input (the same gradient bits as with codes made in the forward); HOTReLU
and HOTGELU; the HLA basis chosen by measurement; convert(example=) never keeping more."""

import copy

import pytest

from conftest import need  # noqa: E402

torch = need("torch")
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


@pytest.fixture(scope="module")
def hm(hot):
    import hot.memory as hm_mod
    return hm_mod


def bits(t):
    return t.detach().contiguous().view(torch.int32) if t.dtype == torch.float32 else \
        t.detach().contiguous().view(torch.int16)


def test_saved_bytes_counts_distinct_storages(hm):
    x = torch.randn(64, 32, requires_grad=True)

    def fn():
        y = x * 2
        return (y * y.t().t()).sum() + (y[:32] * y[32:]).sum()  # y saved as itself and views
    _o, n = hm.saved_bytes(fn, exclude=[x])
    assert n == 64 * 32 * 4  # one storage
    _o, n2 = hm.saved_bytes(lambda: (x * x.exp()).sum())  # x counts when not excluded
    assert n2 == 2 * 64 * 32 * 4


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_hot_relu_same_bits_and_one_bit_mask(hm, dtype):
    """HOTReLU's gradient is torch's ReLU's bit for bit (a NaN and signed zeros among the inputs,
    a NaN in the gradient) and it keeps one bit an element; the mask round-trips for a bool
    tensor that is a view at an odd offset."""
    torch.manual_seed(4)
    x = torch.randn(8, 100, 33, dtype=dtype)  # numel not a multiple of 8
    x.view(-1)[:4] = torch.tensor([float("nan"), -0.0, 0.0, -1.0], dtype=dtype)
    x.requires_grad_()
    x2 = x.detach().clone().requires_grad_()
    g = torch.randn(8, 100, 33, dtype=dtype)
    g.view(-1)[0] = float("nan")
    y, n = hm.saved_bytes(lambda: hm.HOTReLU()(x), exclude=[x])
    y.backward(g)
    torch.relu(x2).backward(g)
    assert torch.equal(bits(x.grad), bits(x2.grad))
    assert torch.equal(bits(y), bits(torch.relu(x2)))
    assert n == (x.numel() + 7) // 8
    m = torch.randn(101) > 0
    for v in (m, m[3:90], m[:1]):
        assert torch.equal(hm.unpack_mask(hm.pack_mask(v), v.shape), v)


def _pair(ht, hot, ctx, prefix, x, build):
    """g_x, g_w of one HOTLinear (fixed tag, fresh context seed) on x built by build(x)."""
    torch.manual_seed(3)
    m = ht.HOTLinear(x.shape[-1], 24, context=ctx, tag="t")
    xx = x.detach().clone().requires_grad_()
    inp, keep = build(xx)
    out, n = prefix(lambda: m(inp), [m.weight, m.bias, xx])
    out.backward(torch.randn(out.shape, generator=torch.Generator().manual_seed(1)))
    return xx.grad, m.weight.grad, n, keep


@pytest.mark.parametrize("kind", ["relu", "gelu", "sigmoid"])
def test_reference_instead_of_codes_same_bits(hot, ht, hm, kind):
    """A HOT linear map after a neighbour that keeps its input (ReLU keeps its output, HOTGELU's
    output is rebuilt from GELU's input) keeps no codes: no storage beyond the neighbour's, and
    the gradients are the bits of the codes made in the forward."""
    x = torch.randn(4, 128, 32)
    act = {"relu": torch.relu, "gelu": hm.HOTGELU(), "sigmoid": torch.sigmoid}[kind]
    plain = {"relu": torch.relu, "gelu": F.gelu, "sigmoid": torch.sigmoid}[kind]

    def kept(xx):
        return act(xx), None

    def fresh(xx):  # the same values, kept by nobody: the codes are made in the forward
        return plain(xx).detach().clone().requires_grad_(), None
    with hot.Context("cpu", seed=5) as c1, hot.Context("cpu", seed=5) as c2:
        gx1, gw1, n1, _ = _pair(ht, hot, c1, hm.saved_bytes, x, kept)
        _gx2, gw2, n2, _ = _pair(ht, hot, c2, hm.saved_bytes, x, fresh)
    assert torch.equal(bits(gw1), bits(gw2))
    # the linear map keeps what the activation keeps (ReLU, sigmoid: its output, measured
    # here; GELU: its input xx, excluded), nothing on top of it
    neighbour = 0 if kind == "gelu" else x.numel() * 4
    assert n1 == neighbour, (n1, neighbour)
    assert n2 < x.numel() * 4 / 3  # codes: about one byte per element



def test_only_nodes_keeping_their_output_are_references(hot, ht, hm):
    """SAVES_OUTPUT names nodes that keep their output (torch's `_saved_result`); threshold,
    hardtanh (ReLU6) and ELU keep their input, so a HOT linear map after them keeps codes, not
    a reference to an output nobody else keeps."""
    x = torch.randn(4, 128, 32, requires_grad=True)
    keeps_output = [torch.relu(x), torch.sigmoid(x), torch.tanh(x), torch.exp(x),
                    F.softmax(x, -1), F.log_softmax(x, -1), F.elu(x.clone(), inplace=True)]
    for y in keeps_output:
        assert y.grad_fn.name() in hm.SAVES_OUTPUT and hasattr(y.grad_fn, "_saved_result")
        assert hm.kept_source(y) is not None
    keeps_input = [F.threshold(x, 0.1, 0.0), F.hardtanh(x), F.relu6(x), F.elu(x)]
    for y in keeps_input:
        assert not hasattr(y.grad_fn, "_saved_result"), y.grad_fn.name()
        assert hm.kept_source(y) is None, y.grad_fn.name()
    with hot.Context("cpu", seed=5) as ctx:
        m = ht.HOTLinear(32, 24, context=ctx, tag="t")
        for op in (F.elu, F.relu6):
            out, n = hm.saved_bytes(lambda: m(op(x)), exclude=[x, m.weight, m.bias])
            out.sum().backward()
            assert n < x.numel() * 4 / 3, (op.__name__, n)  # codes; the activation keeps x

def test_autocast_keeps_no_weight_copies(hot, ht, hm):
    with hot.Context("cpu", seed=1) as ctx:
        m = ht.HOTLinear(64, 64, context=ctx, tag="w")
        x = torch.randn(2, 128, 64, requires_grad=True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y, n = hm.saved_bytes(lambda: m(x), exclude=[x, m.weight, m.bias])
        y.float().sum().backward()
        assert n < x.numel()  # the codes (plus the cast of x is not kept), no bf16 weight copy
        assert m.weight.grad.dtype == torch.float32


def test_hla_basis_auto_by_measurement(hot, ht):
    """Gaussian tokens: the rank cut's g_w error is about 0.66, the module takes the full basis;
    tokens smooth along the sequence (random walks): the cut stays."""
    torch.manual_seed(0)
    with hot.Context("cpu", seed=1) as ctx:
        out = {}
        for kind in ("gaussian", "walk"):
            m = ht.HOTLinear(32, 48, context=ctx, tag=kind)
            m.hot_set_hla_basis("auto")
            x = torch.randn(2, 128, 32)
            if kind == "walk":
                x = x.cumsum(1) / 8
            g = torch.randn(2, 128, 48)
            if kind == "walk":
                g = g.cumsum(1) / 8
            m(x.requires_grad_()).backward(g)
            out[kind] = (m.hot_hla_choice, m.hot_hla_error)
            assert "hot_hla_basis" in m.state_dict()["_extra_state"]
        assert out["gaussian"][0] == "full" and out["gaussian"][1] > 0.4
        assert out["walk"][0] == "cut" and out["walk"][1] < 0.05
        with pytest.raises(ValueError, match="hla_basis"):
            ht.convert(nn.Linear(3, 4), hla_basis="tri")


@pytest.mark.parametrize("frozen_even", [False, True])
def test_hla_basis_cut_measured_again(hot, ht, hm, frozen_even):
    """A kept cut is measured again at hm.BASIS_RECHECK's backwards (x kept by the forward
    before each, codes otherwise): tokens smooth along the sequence keep it, then Gaussian
    tokens at the first re-check switch the module to the full basis, for good. frozen_even:
    the weight is frozen at every even backward but the first (where BASIS_RECHECK's steps
    fall): a re-check due at a backward without g_w is made at the next one with a g_w."""
    torch.manual_seed(0)
    first = hm.BASIS_RECHECK[0]
    assert [s for s in range(first + 1) if hm.basis_recheck_due(s)] == [first]
    assert hm.basis_recheck_due(hm.BASIS_RECHECK_EVERY * 3)
    with hot.Context("cpu", seed=1) as ctx:
        m = ht.HOTLinear(32, 48, context=ctx, tag="recheck")
        m.hot_set_hla_basis("auto")
        walk = torch.randn(2, 128, 32).cumsum(1) / 8, torch.randn(2, 128, 48).cumsum(1) / 8
        rough = torch.randn(2, 128, 32), torch.randn(2, 128, 48)
        for step in range(first + 2):
            x, g = rough if step >= first else walk
            if frozen_even:
                m.weight.requires_grad_(step == 0 or step % 2 == 1)
            m(x.clone().requires_grad_()).backward(g)
            want = "full" if step >= first + frozen_even else "cut"
            assert m.hot_hla_choice == want, (step, m.hot_hla_choice, m.hot_hla_error)
            if not frozen_even:
                assert m._hot_basis_undecided() == (m.hot_step == first and want == "cut")
        assert m.hot_hla_error > 0.4



def test_hla_basis_recheck_due_at_a_backward_without_x(hot, ht, hm):
    """A module called three times a step: its forwards run at one hot_step, its backwards use
    three, so the re-check can fall on a backward whose forward kept codes (no x to measure
    with); it is passed on to the next backward with a g_w, whose forward keeps x for it, rather
    than skipped (it was skipped at every re-check up to step 768)."""
    torch.manual_seed(0)
    first = hm.BASIS_RECHECK[0]
    assert first % 3 == 2  # the re-check falls on the third backward of a step
    walk = torch.randn(2, 128, 32).cumsum(1) / 8, torch.randn(2, 128, 48).cumsum(1) / 8
    rough = torch.randn(2, 128, 32), torch.randn(2, 128, 48)
    with hot.Context("cpu", seed=1) as ctx:
        m = ht.HOTLinear(32, 48, context=ctx, tag="thrice")
        m.hot_set_hla_basis("auto")
        while m.hot_step <= first + 3:
            x, g = rough if m.hot_step + 2 >= first else walk
            before = m.hot_step
            sum((m(x.clone().requires_grad_()) * g).sum() for _ in range(3)).backward()
            want = "full" if before > first else "cut"
            assert m.hot_hla_choice == want, (m.hot_step, m.hot_hla_choice, m.hot_hla_error)
        assert m.hot_hla_error > 0.4


def test_hla_basis_recheck_passed_on_survives_the_state_dict(hot, ht, hm):
    """A re-check passed on (due at a backward without g_w) is part of the state dict: a run
    saved and restored at that point measures at its next backward with a g_w, as the run that
    went on does (here: switches to the full basis, with the same gradients); an attention
    carries it for each in-projection, made or not yet made; a bad value is refused."""
    torch.manual_seed(0)
    first = hm.BASIS_RECHECK[0]
    walk = torch.randn(2, 128, 32).cumsum(1) / 8, torch.randn(2, 128, 48).cumsum(1) / 8
    rough = torch.randn(2, 128, 32), torch.randn(2, 128, 48)

    def make(ctx):
        torch.manual_seed(1)
        m = ht.HOTLinear(32, 48, context=ctx, tag="resume")
        m.hot_set_hla_basis("auto")
        return m
    runs = []
    for resume in (False, True):
        with hot.Context("cpu", seed=1) as ctx:
            m = make(ctx)
            for step in range(first + 2):
                x, g = rough if step >= first else walk
                m.weight.requires_grad_(step != first)  # the re-check's backward has no g_w
                m.weight.grad = None
                m(x.clone().requires_grad_()).backward(g)
                if resume and step == first:
                    sd = copy.deepcopy(m.state_dict())
                    assert sd["_extra_state"]["hot_hla_recheck"] is True
                    m = make(ctx)
                    m.load_state_dict(sd)
            assert m.hot_hla_choice == "full" and "hot_hla_recheck" not in \
                m.state_dict()["_extra_state"], (resume, m.hot_hla_choice)
            runs.append(m.weight.grad)
    assert torch.equal(runs[0], runs[1])
    with pytest.raises(ValueError, match="hot_hla_recheck"):
        m.load_state_dict(dict(sd, _extra_state=dict(sd["_extra_state"], hot_hla_recheck=1)))
    with pytest.raises(ValueError, match="hot_hla_recheck"):
        m.load_state_dict(dict(sd, _extra_state={"hot_step": 1, "hot_hla_recheck": True,
                                                 "hot_hla_basis": ["full", 0.5]}))
    att = ht.HOTMultiheadAttention(32, 4, batch_first=True, tag="a")
    att.hot_set_hla_basis("auto")
    x = torch.randn(2, 128, 32)
    att(x, x, x, need_weights=False)[0].sum().backward()
    p = att.hot_projections()["in_proj.qkv"]
    p.hot_hla_choice, p._hot_recheck_missed = "cut", True
    sd = att.state_dict()
    assert sd["_extra_state"]["in_proj"]["qkv"]["hot_hla_recheck"] is True
    for made in (True, False):
        other = ht.HOTMultiheadAttention(32, 4, batch_first=True, tag="a")
        if made:
            other(x, x, x, need_weights=False)[0].sum().backward()
        other.load_state_dict(sd)
        assert other.state_dict()["_extra_state"] == sd["_extra_state"], made
        if not made:
            other(x, x, x, need_weights=False)
            q = other.hot_projections()["in_proj.qkv"]
            assert q.hot_hla_choice == "cut" and q._hot_recheck_missed


@pytest.mark.parametrize("odd", [False, True])
def test_hla_basis_checkpointed_twice_a_step(hot, ht, hm, odd):
    """A module called in two non-reentrant checkpointed regions of one step: the second
    region's backward measures the basis (the first step), or makes a re-check, or passes one
    on, before the first region is recomputed; the recomputation keeps what its first forward
    kept (torch refuses other tensors: CheckpointError), and every gradient has the bits of the
    same run without checkpointing, through the measurement at step 0, the re-checks (the
    choice turning to full on rough data) and the steps between. odd: one call before the
    first step, so that the forwards run at odd hot_steps and a re-check falls due between the
    second region's backward and the first region's recomputation (which still keeps codes)."""
    from torch.utils.checkpoint import checkpoint
    torch.manual_seed(0)
    first = hm.BASIS_RECHECK[0]
    walk = [torch.randn(2, 128, 32).cumsum(1) / 8 for _ in range(2)] + \
        [torch.randn(2, 128, 48).cumsum(1) / 8]
    rough = [torch.randn(2, 128, 32) for _ in range(2)] + [torch.randn(2, 128, 48)]
    runs = []
    for ckpt in (False, True):
        with hot.Context("cpu", seed=1) as ctx:
            torch.manual_seed(1)
            m = ht.HOTLinear(32, 48, context=ctx, tag="twice")
            m.hot_set_hla_basis("auto")
            grads, choices = [], []
            if odd:
                (m(walk[0].clone().requires_grad_()) * walk[2]).sum().backward()
            while m.hot_step <= first + 4:
                data = rough if m.hot_step + 2 >= first else walk
                xs, g = [x.clone().requires_grad_() for x in data[:2]], data[2]
                ys = [checkpoint(m, x, use_reentrant=False) if ckpt else m(x) for x in xs]
                m.weight.grad = None
                ((ys[0] + ys[1]) * g).sum().backward()
                grads.append([bits(t.grad) for t in (xs[0], xs[1], m.weight, m.bias)])
                choices.append(m.hot_hla_choice)
            runs.append((grads, choices))
    assert runs[0][1][0] == "cut" and runs[0][1][-1] == "full", runs[0][1]
    assert runs[1][1] == runs[0][1]
    for step, (a, b) in enumerate(zip(runs[0][0], runs[1][0])):
        for name, u, v in zip(("g_x0", "g_x1", "g_w", "g_b"), a, b):
            assert torch.equal(u, v), (step, name)


def lm(act):
    torch.manual_seed(0)
    layer = nn.TransformerEncoderLayer(32, 2, 128, dropout=0.0, batch_first=True,
                                       norm_first=True, activation=act)
    return nn.Sequential(nn.TransformerEncoder(layer, 1, enable_nested_tensor=False),
                         nn.Linear(32, 16))


@pytest.mark.parametrize("act", ["relu", "gelu"])
@pytest.mark.parametrize("bf16", [False, True])
def test_convert_never_keeps_more(ht, hm, act, bf16):
    x = torch.randn(2, 64, 32)

    def example(m):
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            return m(x)
    model = lm(act)
    exact = copy.deepcopy(model)
    _o, before = hm.saved_bytes(lambda: example(exact), exact.parameters())
    model, rep = ht.convert(model, return_report=True, example=example)
    b, a = rep.measured_total
    assert b == before and a < 0.85 * b, str(rep)
    assert all(after <= bb for _n, bb, after in rep.measured), str(rep)
    assert "HOTReLU" in str(rep) if act == "relu" else "HOTGELU" in str(rep)
    y = example(model)
    y.float().sum().backward()  # the first backward chooses the basis
    _o, steady = hm.saved_bytes(lambda: example(model), model.parameters())
    assert steady <= a, (steady, a)


def test_convert_example_leaves_buffers_and_random_streams(ht):
    """convert(example=) runs the example several times to measure; batch norm's running
    statistics and torch's random stream (dropout) are as before convert."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(32, 8))
    x = torch.randn(64, 16)
    bn = {k: v.clone() for k, v in model[1].state_dict().items()}
    rng = torch.get_rng_state()
    model, rep = ht.convert(model, return_report=True, example=lambda m: m(x).sum())
    assert rep.measured_total is not None
    assert all(torch.equal(v, model[1].state_dict()[k]) for k, v in bn.items())
    assert torch.equal(rng, torch.get_rng_state())


def test_hla_basis_chosen_by_one_use_serves_the_other(hot, ht):
    """A module used twice in one forward (shared weights) with hla_basis="auto": the backward
    of the second use measures the basis and takes the full one; the first use's backward, which
    runs after it in the same graph, uses the full basis too (the gradients of a module whose
    choice was full from the start, at the same steps)."""
    torch.manual_seed(0)
    x1, x2 = torch.randn(2, 128, 32), torch.randn(2, 128, 32)
    g = torch.randn(2, 128, 48)
    grads = []
    for decided in (False, True):
        with hot.Context("cpu", seed=1) as ctx:  # one each: the same tag, the same stream
            torch.manual_seed(1)  # the same weights
            m = ht.HOTLinear(32, 48, context=ctx, tag="shared")
            m.hot_set_hla_basis("auto")
            if decided:
                m.hot_hla_choice, m.hot_hla_error = "full", 1.0
            a, b = x1.clone().requires_grad_(), x2.clone().requires_grad_()
            (m(a) * g + m(b) * g).sum().backward()
            assert m.hot_hla_choice == "full" and m.hot_step == 2
            grads.append((a.grad, b.grad, m.weight.grad, m.bias.grad))
    for u, v in zip(*grads):
        assert torch.equal(u, v)


def _grads_of(ht, hot, freeze, x_grad, dtype=torch.float32, attention=False):
    """One forward and backward of a fresh HOTLinear (or HOTMultiheadAttention) on fixed data,
    with its parameters frozen where `freeze` says ("weight", "bias", "all") and x requiring a
    gradient or not; returns (x.grad, {name: grad}, saved bytes, the backward calls' outputs
    asked of hot: (g_x, g_w, g_b) given or None)."""
    torch.manual_seed(11)
    with hot.Context("cpu", seed=7) as ctx:
        if attention:
            m = ht.HOTMultiheadAttention(32, 4, batch_first=True, context=ctx, tag="a")
        else:
            m = ht.HOTLinear(32, 24, context=ctx, tag="t")
        for name, p in m.named_parameters():
            if freeze == "all" or name.endswith(freeze or "-"):
                p.requires_grad_(False)
        x = torch.randn(2, 128, 32, generator=torch.Generator().manual_seed(2)).requires_grad_(x_grad)
        asked = []
        real = hot.api.Layer.backward_ptr

        def spy(self, g_y, w, dt, g_x, g_w, g_b=None, saved=None, step=0, stream=None):
            asked.append((g_x is not None, g_w is not None, g_b is not None))
            return real(self, g_y, w, dt, g_x, g_w, g_b, saved, step, stream)
        hot.api.Layer.backward_ptr = spy
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype != torch.float32):
                y, n = hm_saved(lambda: m(x, x, x, need_weights=False)[0] if attention else m(x),
                                [x] + list(m.parameters()))
            y.float().backward(torch.randn(y.shape, generator=torch.Generator().manual_seed(3)))
        finally:
            hot.api.Layer.backward_ptr = real
        grads = {name: p.grad for name, p in m.named_parameters()}
        return x.grad, grads, n, asked


def hm_saved(fn, exclude):
    import hot.memory as hm_mod
    return hm_mod.saved_bytes(fn, exclude=exclude)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_frozen_weight_keeps_nothing_and_computes_only_g_x(hot, ht, dtype):
    """A frozen weight (fine-tuning: torch keeps nothing of x for it) keeps nothing of x either:
    no codes, no reference; hot is asked for g_x alone (and g_b where the bias trains), and g_x
    is the bits of the same layer trained whole."""
    gx_all, g_all, n_all, asked_all = _grads_of(ht, hot, None, True, dtype)
    gx_fw, g_fw, n_fw, asked_fw = _grads_of(ht, hot, "weight", True, dtype)
    gx_fr, g_fr, n_fr, asked_fr = _grads_of(ht, hot, "all", True, dtype)
    assert n_all > 0 and n_fw == 0 and n_fr == 0, (n_all, n_fw, n_fr)
    assert asked_all == [(True, True, True)]
    assert asked_fw == [(True, False, True)] and asked_fr == [(True, False, False)]
    for gx in (gx_fw, gx_fr):
        assert torch.equal(bits(gx), bits(gx_all))
    assert g_fw["weight"] is None and torch.equal(bits(g_fw["bias"]), bits(g_all["bias"]))
    assert g_fr["weight"] is None and g_fr["bias"] is None


def test_input_without_gradient_computes_no_g_x(hot, ht):
    """An input that needs no gradient (the first layer on data): hot is not asked for g_x, and
    g_w, g_b are the bits of the call that computes all three."""
    _gx, g_all, _n, _a = _grads_of(ht, hot, None, True)
    gx, g_nx, _n2, asked = _grads_of(ht, hot, None, False)
    assert gx is None and asked == [(False, True, True)]
    for name in ("weight", "bias"):
        assert torch.equal(bits(g_nx[name]), bits(g_all[name])), name


def test_frozen_attention_projections(hot, ht):
    """HOTMultiheadAttention frozen (adapters trained around it): no projection keeps codes of
    its input and hot computes g_x only; the input's gradient is the bits of the trained one."""
    gx_all, _g, n_all, asked_all = _grads_of(ht, hot, None, True, attention=True)
    gx_fr, g_fr, n_fr, asked_fr = _grads_of(ht, hot, "all", True, attention=True)
    assert all(a == (True, True, True) for a in asked_all) and len(asked_all) >= 2
    assert all(a == (True, False, False) for a in asked_fr) and len(asked_fr) == len(asked_all)
    assert all(v is None for v in g_fr.values())
    assert n_fr < n_all
    assert torch.equal(bits(gx_fr), bits(gx_all))


def test_frozen_weight_defers_the_basis_measurement(hot, ht):
    """hla_basis="auto" measures g_w's error: a frozen weight has none to measure, so nothing of
    x is kept for it; the first backward after the weight is unfrozen measures."""
    torch.manual_seed(0)
    with hot.Context("cpu", seed=1) as ctx:
        m = ht.HOTLinear(32, 48, context=ctx, tag="f")
        m.hot_set_hla_basis("auto")
        m.weight.requires_grad_(False)
        x = torch.randn(2, 128, 32, requires_grad=True)
        import hot.memory as hm_mod
        for _ in range(2):
            y, n = hm_mod.saved_bytes(lambda: m(x), exclude=[x, m.weight, m.bias])
            y.backward(torch.randn(2, 128, 48))
            assert n == 0 and m.hot_hla_choice is None
        m.weight.requires_grad_(True)
        m(x).backward(torch.randn(2, 128, 48))
        assert m.hot_hla_choice in ("cut", "full") and m.weight.grad is not None


def test_convert_report_says_a_frozen_layer_keeps_nothing(ht):
    m = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 4))
    m[0].weight.requires_grad_(False)
    _m, report = ht.convert(m, return_report=True)
    keeps = dict(report.keeps)
    assert keeps["0"].startswith("nothing while its weight is frozen")
    assert keeps["2"].startswith("int8 codes of x^")


def test_frozen_weight_nan_in_x_leaves_g_x_finite(hot, ht):
    """A frozen weight: x is neither kept nor read, so a NaN in x gives the g_x and g_b of the
    same step without it (torch's linear map gives finite ones too), not NaN gradients."""
    out = []
    for bad in (False, True):
        with hot.Context("cpu", seed=7) as ctx:
            torch.manual_seed(1)
            m = ht.HOTLinear(32, 24, context=ctx, tag="n")
            m.weight.requires_grad_(False)
            x = torch.randn(2, 128, 32, generator=torch.Generator().manual_seed(2))
            if bad:
                x[1, 5, 3] = float("nan")
            x.requires_grad_()
            m(x).backward(torch.randn(2, 128, 24, generator=torch.Generator().manual_seed(3)))
            out.append((x.grad, m.bias.grad))
    for u, v in zip(*out):
        assert torch.isfinite(v).all() and torch.equal(bits(u), bits(v))


# Every attribute of a hot module that names hot: either carried by the state dict (the key that
# carries it), or set by construction and convert() alike in the model that loads it, or of one
# process or call only. A new piece of state must be put in one of the three, so that a run
# restored from a checkpoint goes on as the uninterrupted one does.
_STATE_SAVED = {"hot_step": "hot_step", "_hot_calibration": "hot_calibration",
                "hot_hla_choice": "hot_hla_basis", "hot_hla_error": "hot_hla_basis",
                "_hot_recheck_missed": "hot_hla_recheck"}
_STATE_CONFIG = {"hot_spec", "hot_context", "hot_tag", "hot_stream_id", "hot_hla_basis",
                 "_hot_warn_untagged", "_hot_opts", "_hot_in"}
_STATE_TRANSIENT = {"_hot_layers",        # compiled layers, made again on use
                    "_hot_lock",          # this process's lock
                    "_hot_capture",       # armed for the next forward only
                    "_hot_task_keeps_x",  # within one backward's graph task
                    "_hot_in_pending"}    # a loaded state waiting for its projection


def test_module_state_is_saved_configured_or_transient(hot, ht):
    """Each hot attribute of HOTLinear, an attention projection and HOTMultiheadAttention, after
    a forward and backward with the measured basis, is classified above; the saved ones round
    trip through the state dict into a fresh module."""
    x = torch.randn(2, 128, 32, requires_grad=True)
    m = ht.HOTLinear(32, 48, tag="state")
    m.hot_set_hla_basis("auto")
    m(x).sum().backward()
    att = ht.HOTMultiheadAttention(32, 4, batch_first=True, tag="state-att")
    att.hot_set_hla_basis("auto")
    att(x, x, x, need_weights=False)[0].sum().backward()
    known = set(_STATE_SAVED) | _STATE_CONFIG | _STATE_TRANSIENT
    for mod in (m, att, att.hot_projections()["in_proj.qkv"]):
        names = {k for k in vars(mod) if "hot" in k}
        assert names <= known, (type(mod).__name__, sorted(names - known))
    m.hot_hla_choice, m._hot_recheck_missed = "cut", True
    sd = m.state_dict()
    assert set(_STATE_SAVED.values()) <= set(sd["_extra_state"]), sd["_extra_state"]
    other = ht.HOTLinear(32, 48, tag="state")
    other.hot_set_hla_basis("auto")
    other.load_state_dict(sd)
    for attr in _STATE_SAVED:
        assert getattr(other, attr) == getattr(m, attr), attr

def test_convert_keeps_the_hooks_of_an_activation(ht, hm):
    """An activation turned into HOTReLU / HOTGELU keeps the original's hooks, as a converted
    linear map does: a forward hook (collecting activations) and a full backward hook keep
    running, and a handle made on the original still removes its hook."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16), nn.GELU(),
                          nn.Linear(16, 4))
    seen, grads = [], []
    handles = [model[i].register_forward_hook(lambda m, i, o: seen.append(type(m).__name__))
               for i in (1, 3)]
    model[3].register_full_backward_hook(lambda m, gi, go: grads.append(type(m).__name__))
    model = ht.convert(model)
    assert isinstance(model[1], hm.HOTReLU) and isinstance(model[3], hm.HOTGELU)
    model(torch.randn(2, 64, 16, requires_grad=True)).sum().backward()
    assert seen == ["HOTReLU", "HOTGELU"] and grads == ["HOTGELU"], (seen, grads)
    handles[0].remove()
    model(torch.randn(2, 64, 16))
    assert seen == ["HOTReLU", "HOTGELU", "HOTGELU"], seen


def test_convert_keeps_the_training_flag(ht, hm):
    """convert() of a model in eval mode gives modules in eval mode (HOTLinear, out_proj,
    HOTReLU / HOTGELU), as the modules they replace were; train() afterwards reaches them all."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16),
                          nn.TransformerEncoderLayer(16, 2, 32, activation="gelu",
                                                     batch_first=True))
    model.eval()
    model = ht.convert(model)
    assert isinstance(model[0], ht.HOTLinear) and isinstance(model[1], hm.HOTReLU)
    assert isinstance(model[3].activation, hm.HOTGELU)
    assert [n for n, m in model.named_modules() if m.training] == []
    model.train()
    assert all(m.training for m in model.modules())


def test_convert_example_puts_back_an_activation_function(ht, hm):
    """A transformer layer's activation given as a function (activation="relu", the default,
    or "gelu": F.relu / F.gelu, no module) that would keep more converted (a sequence shorter
    than HLA's block: linear2 keeps x itself, HOTReLU's mask comes on top) is put back as that
    function, not refused by nn.Module's setattr halfway through convert()."""
    for act, fn in (("relu", F.relu), ("gelu", F.gelu)):
        torch.manual_seed(0)
        layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation=act,
                                           batch_first=True)
        exact = copy.deepcopy(layer)
        x = torch.randn(2, 8, 32)
        layer, rep = ht.convert(layer, example=lambda m: m(x), return_report=True)
        assert isinstance(layer.linear2, ht.HOTLinear), str(rep)
        if layer.activation is fn:  # put back: a function again, no module left in its place
            assert "activation" not in dict(layer.named_children()), str(rep)
            assert "activation put back" in str(rep), str(rep)
            assert all(n != "activation" for n, *_ in rep.converted + rep.keeps), str(rep)
        assert act == "gelu" or layer.activation is fn, str(rep)  # the mask comes on top
        assert torch.equal(layer(x), exact(x))
        layer(x.requires_grad_()).sum().backward()


def test_convert_example_measures_a_model_that_is_itself_converted(ht, hm):
    """convert(m, example=) where m itself is converted (an nn.MultiheadAttention or nn.Linear
    passed as the model) measures it as it measures a submodule: an attention module that keeps
    more converted (a sequence shorter than HLA's block) is returned as it was, reported."""
    torch.manual_seed(0)
    mha = nn.MultiheadAttention(32, 4, batch_first=True)
    x = torch.randn(2, 8, 32)

    def example(m):
        return m(x, x, x, need_weights=False)[0]
    out, rep = ht.convert(mha, example=example, return_report=True)
    assert rep.measured_total is not None and rep.measured, str(rep)
    assert out is mha and "put back" in str(rep), str(rep)
    assert not rep.converted and not rep.keeps, str(rep)  # nothing left converted
    lin = nn.Linear(32, 32)
    out, rep = ht.convert(lin, example=lambda m: m(torch.randn(2, 256, 32)), return_report=True)
    assert isinstance(out, ht.HOTLinear), str(rep)
    b, a = rep.measured_total
    assert a < b and rep.measured == [("(model)", b, a)], str(rep)


def test_convert_keeps_a_linear_maps_own_attributes(ht):
    """Attributes set on an nn.Linear beyond its own (a user's flag, a library's marker) are on
    the HOTLinear that replaces it, as an attention module's are on its HOT module; nn.Module's
    own tables are the HOTLinear's, not the replaced module's."""
    lin = nn.Linear(16, 8)
    lin.my_flag, lin._is_marked = 7, True
    model = ht.convert(nn.Sequential(lin))
    m = model[0]
    assert isinstance(m, ht.HOTLinear) and m.my_flag == 7 and m._is_marked is True
    assert m._parameters is not lin._parameters and m._modules is not lin._modules

