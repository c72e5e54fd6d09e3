"""hot.torch at its edges: a graph of the gradient requested through a hot op (refused, never
dropped), convert() on shared modules, lazy modules and long non-ASCII names, the Philox stream
identity of every tag, the state dict's hot entries validated one by one, and HOT_LIBRARY
resolved as a path; what convert() cannot take over (parametrized or computed weights, extra
parameters) and the hooks it keeps, an activation's output changed in place, an attention's
basis choice through a state dict, plain_state_dict, the no-grad forward, arguments by name."""

import ast
import glob
import math
import os
import subprocess
import sys

import pytest
from conftest import need

torch = need("torch")
import torch.nn as nn  # noqa: E402

PKG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hot")


@pytest.fixture(scope="module")
def ht(hot):
    import hot.torch as ht_mod
    return ht_mod


# ---- double backward ----------------------------------------------------------------------------

def _autograd_functions():
    """(file, class name, backward's first call) of every torch.autograd.Function subclass in
    the package's sources."""
    out = []
    for path in sorted(glob.glob(os.path.join(PKG, "*.py"))):
        tree = ast.parse(open(path, encoding="utf-8").read())
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            if not any(ast.unparse(b).endswith("autograd.Function") for b in node.bases):
                continue
            bw = [f for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "backward"]
            calls = [ast.unparse(n.func) for n in ast.walk(bw[0]) if isinstance(n, ast.Call)] \
                if bw else []
            ok = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") ==
                                                       "differentiable_backward" for t in n.targets)
                     and ast.unparse(n.value) == "True" for n in node.body)
            out.append((os.path.basename(path), node.name, calls + (["<differentiable>"] if ok else [])))
    return out


def test_every_autograd_function_refuses_a_graph_of_its_gradient():
    found = _autograd_functions()
    assert found, "no torch.autograd.Function found in python/hot (the scan is broken)"
    for path, name, calls in found:
        assert "_refuse_double_backward" in calls or "<differentiable>" in calls, \
            f"{path}: {name}.backward neither calls _refuse_double_backward nor declares " \
            "differentiable_backward = True (a backward of differentiable ops)"


def test_hot_relu_double_backward_equals_torch():
    from hot import memory
    torch.manual_seed(1)
    x = torch.randn(6, 16, requires_grad=True)
    ref = x.detach().clone().requires_grad_(True)
    for f, inp in ((memory.HOTReLU(), x), (torch.nn.ReLU(), ref)):
        y = (f(inp) ** 2 * torch.linspace(-1, 1, 16)).sum()
        (g,) = torch.autograd.grad(y, inp, create_graph=True)
        (g * g).sum().backward()
    assert torch.equal(x.grad, ref.grad)


def _sites(ht):
    """(what, module, forward(x) -> output through exactly that hot op) for every module kind
    that runs the custom Function."""
    torch.manual_seed(0)
    lin = ht.HOTLinear(8, 8, tag="db.lin")
    mha = ht.HOTMultiheadAttention(8, 2, batch_first=True, tag="db.mha")
    sep = ht.HOTMultiheadAttention(8, 2, kdim=4, vdim=6, batch_first=True, tag="db.sep")
    E = 8

    def proj(m, role):
        def f(x):  # [N, L, E] batch first -> the projection of x through hot, sequence first
            w = m.in_proj_weight if m._qkv_same_embed_dim else \
                {"q": m.q_proj_weight, "k": m.k_proj_weight, "v": m.v_proj_weight}[role]
            rows = ht._ROWS[role] if m._qkv_same_embed_dim else None
            b = m.in_proj_bias
            if not m._qkv_same_embed_dim:
                b = b[ht._ROWS[role][0] * E:ht._ROWS[role][1] * E]
            return m._proj(role, x.transpose(0, 1), w, b, rows)
        return f

    out = [("HOTLinear", lin, 8, lin),
           ("HOTMultiheadAttention", mha, 8, lambda x: mha(x, x, x, need_weights=False)[0]),
           ("out_proj", mha.out_proj, 8, mha.out_proj)]
    out += [(f"in_proj.{r}", mha, 8, proj(mha, r)) for r in ("qkv", "q", "kv", "k", "v")]
    out += [(f"separate {r}_proj", sep, w, proj(sep, r)) for r, w in (("q", 8), ("k", 4),
                                                                      ("v", 6))]
    return out


def _steps(m):
    if hasattr(m, "hot_projections"):
        return {k: p.hot_step for k, p in m.hot_projections().items()}
    return m.hot_step


def test_create_graph_through_every_hot_op_raises(hot, ht):
    for what, m, width, f in _sites(ht):
        x = torch.randn(2, 5, width, requires_grad=True)
        before = None
        f(x).sum()  # makes the projections, so that the step snapshot sees them
        before = _steps(m)
        y = f(x)
        with pytest.raises(RuntimeError, match="create_graph=True, double backward") as e:
            torch.autograd.grad((y * y).sum(), x, create_graph=True)
        assert "HOTLinear(" in str(e.value) and "\n" not in str(e.value), (what, e.value)
        assert _steps(m) == before, f"{what}: a refused backward consumed a step"
        # the same call without a graph of the gradient works
        g, = torch.autograd.grad(f(x).square().sum(), x)
        assert g.shape == x.shape and bool(torch.isfinite(g).all()), what


@pytest.mark.filterwarnings("ignore:Using backward.. with create_graph=True")
def test_gradient_penalty_is_refused_not_dropped(hot, ht):
    torch.manual_seed(1)
    model = ht.convert(nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 1)))
    x = torch.randn(4, 6, requires_grad=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        g, = torch.autograd.grad(model(x).sum(), x, create_graph=True)
    with pytest.raises(RuntimeError, match="not differentiable"):
        model(x).sum().backward(create_graph=True)


# ---- state dict entries -------------------------------------------------------------------------

BAD_INTS = [3.7, float("nan"), float("inf"), "abc", torch.tensor([1, 2]), torch.tensor(2.5),
            -1, 1 << 32, True, None, [3], torch.tensor(True)]
GOOD_STEPS = [(3, 3), (3.0, 3), (torch.tensor(3), 3), (torch.tensor(3.0), 3),
              ((1 << 32) - 1, (1 << 32) - 1)]


def _state_sites(ht):
    """(name, model, path of the hot state in model.state_dict()) of every hot state: a
    HOTLinear, an attention module's in-projection (used, and loaded before its first use) and
    its out_proj."""
    torch.manual_seed(2)
    lin = nn.Sequential(nn.Linear(8, 8))
    mha = nn.ModuleDict({"att": nn.MultiheadAttention(8, 2, batch_first=True)})
    ht.convert(lin)
    ht.convert(mha)
    x = torch.randn(2, 4, 8)
    lin(x).sum().backward()
    mha["att"](x, x, x)[0].sum().backward()
    fresh = ht.convert(nn.ModuleDict({"att": nn.MultiheadAttention(8, 2, batch_first=True)}))
    sd = mha.state_dict()
    return [("HOTLinear", lin, ("0._extra_state",)),
            ("out_proj", mha, ("att.out_proj._extra_state",)),
            ("in_proj (made)", mha, ("att._extra_state", "in_proj", "qkv")),
            ("in_proj (pending)", fresh, ("att._extra_state", "in_proj", "qkv"), sd)]


def _with(sd, path, entry, value):
    """A copy of state dict sd whose hot state at `path` has `entry` set (a callable edits it)."""
    import copy
    sd = copy.deepcopy(sd)
    node = sd
    for k in path:
        node = node[k]
    if callable(entry):
        entry(node, value)
    else:
        node[entry] = value
    return sd


def _set_cal_value(node, v):
    node["hot_calibration"] = {"f32,2,4": v}


def _set_cal_key(node, v):
    node["hot_calibration"] = {v: 1}


def _set_cal(node, v):
    node["hot_calibration"] = v


def test_every_state_entry_refuses_bad_values(hot, ht):
    entries = [("hot_step", "hot_step", BAD_INTS),
               ("hot_calibration value", _set_cal_value, BAD_INTS + [2, 4]),
               ("hot_calibration key", _set_cal_key, ["abc", "f64,2,4", "f32,0,4", "f32,2", 3]),
               ("hot_calibration", _set_cal, [[1], "x", 3])]
    for site in _state_sites(ht):
        what, model, path = site[:3]
        base = site[3] if len(site) > 3 else model.state_dict()
        assert base[path[0]] is not None
        for entry_name, entry, bads in entries:
            for bad in bads:
                sd = _with(base, path, entry, bad)
                with pytest.raises(ValueError) as e:
                    model.load_state_dict(sd)
                msg = str(e.value)
                assert "\n" not in msg, (what, entry_name, bad, msg)
                assert path[0] in msg, (what, entry_name, bad, msg)  # the module's path
                key = "hot_calibration" if entry_name.startswith("hot_cal") else entry_name
                assert key in msg, (what, entry_name, bad, msg)
        for v, want in GOOD_STEPS:
            model.load_state_dict(_with(base, path, "hot_step", v))
            sd = model.state_dict()
            node = sd
            for k in path:
                node = node[k]
            assert node["hot_step"] == want and type(node["hot_step"]) is int, (what, v)
        with pytest.raises(ValueError, match="unknown entries hot_stpe"):
            model.load_state_dict(_with(base, path, "hot_stpe", 1))


def test_mha_state_refuses_unknown_projection_and_loads_nothing_partly(hot, ht):
    torch.manual_seed(3)
    m = ht.convert(nn.ModuleDict({"att": nn.MultiheadAttention(8, 2, batch_first=True)}))
    x = torch.randn(2, 4, 8)
    m["att"](x, x, x)[0].sum().backward()
    sd = m.state_dict()
    bad = _with(sd, ("att._extra_state", "in_proj"), "qvk", {"hot_step": 1})
    with pytest.raises(ValueError, match=r"att\._extra_state\['in_proj'\]: unknown projection"):
        m.load_state_dict(bad)
    both = _with(sd, ("att._extra_state", "in_proj"), "q", {"hot_step": 7})
    both["att._extra_state"]["in_proj"]["qkv"]["hot_step"] = 9
    both["att._extra_state"]["in_proj"]["q"]["hot_step"] = 3.5
    with pytest.raises(ValueError, match=r"\['q'\]\['hot_step'\] = 3.5"):
        m.load_state_dict(both)
    assert m["att"]._hot_in["qkv"].hot_step == 1  # nothing applied


# ---- convert(): shared, lazy, long names --------------------------------------------------------

def _all_registrations(model):
    return list(model.named_modules(remove_duplicate=False))


def test_convert_shared_module_converted_once_everywhere(hot, ht):
    torch.manual_seed(5)
    fc, att = nn.Linear(8, 8), nn.MultiheadAttention(8, 2, batch_first=True)
    block = nn.Sequential(nn.Linear(8, 8))
    model = nn.ModuleDict({"a": fc, "b": fc, "att1": att, "att2": att, "blk1": block,
                           "blk2": block, "inner": nn.Sequential(fc)})
    _, report = ht.convert(model, return_report=True)
    regs = _all_registrations(model)
    plain = [n for n, m in regs if type(m) in (nn.Linear, nn.MultiheadAttention)]
    assert not plain, f"still plain after convert: {plain}"
    assert model["a"] is model["b"] is model["inner"][0]
    assert model["att1"] is model["att2"]
    assert model["blk1"][0] is model["blk2"][0]
    by_id = {}
    for n, m in regs:
        if isinstance(m, (ht.HOTLinear, ht.HOTMultiheadAttention)):
            by_id.setdefault(id(m), []).append(n)
    assert sorted(len(v) for v in by_id.values()) == [2, 2, 2, 3], by_id
    text = str(report)
    for n in ("b ", "att2", "inner.0", "blk2.0"):
        assert f"converted  {n}" in text and "(shared)" in text, text
    x = torch.randn(2, 3, 8, requires_grad=True)
    model["a"](x).sum().backward()  # the shared module runs hot


def test_convert_skips_uninitialised_lazy_modules(hot, ht):
    model = nn.Sequential(nn.LazyLinear(32), nn.ReLU(), nn.Linear(32, 4))
    _, report = ht.convert(model, return_report=True)
    assert isinstance(model[0], nn.LazyLinear) and type(model[2]) is ht.HOTLinear
    assert any(n == "0" and "uninitialised lazy module" in d for n, _, d in report.skipped), \
        str(report)
    model(torch.randn(2, 5, 7)).sum().backward()  # the model runs
    with pytest.raises(ValueError, match="uninitialised lazy module"):
        ht.HOTLinear.from_linear(nn.LazyLinear(3))
    ht.convert(model)  # after its first forward it is an nn.Linear and converts
    assert type(model[0]) is ht.HOTLinear and model[0].in_features == 7


NAMES = ["ß" * 40, "€" * 30, "😀" * 20, "a" + "ß" * 31, "x" * 70, "ab" + "😀" * 16]


def test_long_non_ascii_names_cut_at_character_boundaries(hot, ht):
    """Every place a name is bounded: the hot layer name of a HOTLinear (name=), of a module
    converted under its qualified name, of an attention module's projections (from its tag),
    and the layer name libhot reports back."""
    for name in NAMES:
        model = nn.Sequential()
        model.add_module(name, nn.Linear(4, 4))
        model.add_module(name + "_att", nn.MultiheadAttention(4, 2, batch_first=True))
        ht.convert(model)
        lin = ht.HOTLinear(4, 4, name=name)
        att = getattr(model, name + "_att")
        x = torch.randn(1, 3, 4, requires_grad=True)
        (getattr(model, name)(x).sum() + lin(x).sum() + att(x, x, x)[0].sum()).backward()
        mods = [getattr(model, name), lin, att.out_proj] + list(att._hot_in.values())
        for m in mods:
            layer_name = m.hot_spec.name
            b = layer_name.encode("utf-8")
            assert 0 < len(b) <= hot._lib.HOT_NAME_MAX - 1, (name, layer_name)
            full = ht._layer_name(m.hot_tag if m is not lin else name)
            assert full.endswith(layer_name), (name, layer_name)  # the end, whole characters
            assert len(full.encode()) - len(b) < 4 or len(b) == len(full.encode())
            assert m.hot_layers()[0].info().name == layer_name  # libhot keeps it whole


# ---- HOT_LIBRARY is a path ---------------------------------------------------------------------

def _load_in(cwd, env_value, extra_env=None):
    env = dict(os.environ, HOT_LIBRARY=env_value, PYTHONPATH=os.path.dirname(PKG))
    env.update(extra_env or {})
    code = "import hot\ntry:\n    print(hot.library_path())\nexcept hot.HotLibraryError as e:\n" \
           "    print('ERR', e)\n"
    r = subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_hot_library_relative_path_is_a_path(hot, tmp_path):
    import shutil
    real = os.path.realpath(hot._lib.library_path())
    here, other = tmp_path / "here", tmp_path / "other"
    here.mkdir()
    other.mkdir()
    shutil.copy(real, here / "libhot.so")
    shutil.copy(real, other / "libhot.so")
    ld = {"LD_LIBRARY_PATH": str(other)}
    assert _load_in(here, "libhot.so", ld) == str(here / "libhot.so")
    assert _load_in(tmp_path, "here/libhot.so", ld) == str(here / "libhot.so")
    assert _load_in(tmp_path, "./here/../here/libhot.so", ld) == str(here / "libhot.so")
    for bad, why in (("libhot.so", "no such file"), ("here", "is a directory")):
        out = _load_in(tmp_path, bad, ld)  # no libhot.so in tmp_path: not the one in other/
        want = os.path.join(str(tmp_path), bad)
        assert out.startswith("ERR HOT_LIBRARY=" + bad) and want in out and why in out, out
        assert "\n" not in out


# ---- stream identity ----------------------------------------------------------------------------

# Brute-forced: "fc67872285" has the 27-bit layer id of "att.in_proj.qkv" (the FNV-1a 64 fold).
COLLIDER = "fc67872285"


def test_every_stream_tag_has_its_own_key(hot, ht):
    """Two tags of one 27-bit id keep their names (no renaming) and draw from different Philox
    keys: every projection's layer reports id stream_id(tag) and key stream_key(tag, seed), and
    those keys are all different, whichever module comes first."""
    assert ht.stream_id(COLLIDER) == ht.stream_id("att.in_proj.qkv")
    assert hot.stream_key(COLLIDER, 1) != hot.stream_key("att.in_proj.qkv", 1)
    tags = ht._attention_stream_tags("att")
    assert set(tags) == {f"att.in_proj.{r}" for r in ht._ROWS} | {"att.out_proj"}
    for order in ("linear_first", "attention_first"):
        torch.manual_seed(6)
        mods = [(COLLIDER, nn.Linear(8, 8)), ("att", nn.MultiheadAttention(8, 2,
                                                                          batch_first=True))]
        model = nn.Sequential()
        for n, m in (mods if order == "linear_first" else mods[::-1]):
            model.add_module(n, m)
        _, report = ht.convert(model, return_report=True)
        att, lin = model.att, getattr(model, COLLIDER)
        assert lin.hot_tag == COLLIDER and att.hot_tag == "att", str(report)
        x = torch.randn(2, 3, 8, requires_grad=True)
        (att(x, x, x)[0].sum() + lin(x).sum()).backward()
        keys = {}
        # the context's seed: what a layer of hot_layer_create reports
        seed = lin.hot_layers()[0]._ctx.create_layer(8, 4, 1, 8).info().seed
        for m in [lin, att.out_proj] + list(att._hot_in.values()):
            info = m.hot_layers()[0].info()
            assert info.layer_id == m.hot_stream_id == ht.stream_id(m.hot_tag)
            assert info.seed == hot.stream_key(m.hot_tag, seed)
            keys.setdefault(info.seed, []).append(m.hot_tag)
        assert "att.in_proj.qkv" in sum(keys.values(), []), keys
        assert all(len(v) == 1 for v in keys.values()), (order, keys)
        assert "taken" not in str(report), str(report)
    # HOT modules already in the model that hold one tag share a stream: reported
    model = nn.Sequential()
    model.add_module("a", ht.HOTLinear(8, 8, tag="same"))
    model.add_module("b", ht.HOTLinear(8, 8, tag="same"))
    _, report = ht.convert(model, return_report=True)
    assert "random stream of same shared with another module (same tag" in str(report), \
        str(report)
    # a module whose qualified name another module's tag already holds is renamed (reported)
    model = nn.Sequential()
    model.add_module("a", ht.HOTLinear(8, 8, tag="b"))
    model.add_module("b", nn.Linear(8, 8))
    _, report = ht.convert(model, return_report=True)
    assert model.b.hot_tag == "b#1" and "stream tag 'b#1' (its name's stream is taken)" in \
        str(report), str(report)


# ---- what convert() cannot take over; hooks; in-place changes; resumed bases; arguments --------

def _exact_spec(hot):
    s = hot.LayerSpec(recipe="hot")
    s.c.hq.enabled = s.c.hla.enabled = s.c.abc.enabled = 0
    return s


def test_convert_skips_what_hot_cannot_compute_and_keeps_hooks(hot, ht):
    """A parametrized weight (weight_norm, spectral_norm, adapters), a weight computed by a hook
    or extra parameters: convert() skips the module with the reason and from_linear refuses it
    (a HOTLinear would train a frozen copy of a computed weight); forward hooks of a converted
    module keep running, and their handles still remove them."""
    from torch.nn.utils import parametrizations
    torch.manual_seed(0)
    model = nn.Sequential(parametrizations.weight_norm(nn.Linear(8, 8)), nn.Linear(8, 4))
    extra = nn.Linear(4, 4)
    extra.register_parameter("lora_a", nn.Parameter(torch.zeros(2, 4)))
    model.append(extra)
    calls = []
    handle = model[1].register_forward_hook(lambda m, i, o: calls.append(type(m).__name__))
    out, rep = ht.convert(model, activations=False, return_report=True)
    assert isinstance(out[0], nn.Linear) and not isinstance(out[0], ht.HOTLinear)
    assert isinstance(out[1], ht.HOTLinear) and not isinstance(out[2], ht.HOTLinear)
    text = str(rep)
    assert "parametrized" in text and "lora_a" in text, text
    assert any(n.startswith("0.parametrizations") for n, _ in out.named_parameters())
    out(torch.randn(3, 8, requires_grad=True)).sum().backward()
    assert calls == ["HOTLinear"]
    handle.remove()
    out(torch.randn(3, 8))
    assert calls == ["HOTLinear"], "the handle made on nn.Linear no longer removes the hook"
    with pytest.raises(ValueError, match="parametrized"):
        ht.HOTLinear.from_linear(parametrizations.spectral_norm(nn.Linear(4, 4)))
    with pytest.raises(TypeError, match="must be a torch.nn.Linear"):
        ht.HOTLinear.from_linear(nn.ReLU())
    mha = parametrizations.weight_norm(nn.MultiheadAttention(8, 2), name="in_proj_weight")
    out, rep = ht.convert(nn.Sequential(mha), return_report=True)
    assert not isinstance(out[0], ht.HOTMultiheadAttention) and "parametrized" in str(rep)


def test_hot_gelu_output_changed_in_place_is_not_rebuilt(hot, ht):
    """linear2 rebuilds its input from GELU's only while GELU's output is unchanged: an in-place
    change before linear2 reads it voids the mark (the codes are kept), so the gradients are
    exact ones (HQ, HLA off: nn.Linear's up to the order of the fp32 sums; the rebuilt input
    of before was off by the change itself)."""
    from hot.memory import HOTGELU
    torch.manual_seed(0)
    lin = ht.HOTLinear(16, 4, spec=_exact_spec(hot), tag="inplace")
    ref = nn.Linear(16, 4)
    with torch.no_grad():
        ref.weight.copy_(lin.weight)
        ref.bias.copy_(lin.bias)
    x = torch.randn(2, 8, 16)
    for act, layer in ((nn.GELU(), ref), (HOTGELU(), lin)):
        y = act(x.requires_grad_())
        y.mul_(2.0)
        layer(y).square().sum().backward()
    assert torch.allclose(ref.weight.grad, lin.weight.grad, rtol=1e-5, atol=1e-5), \
        float((ref.weight.grad - lin.weight.grad).abs().max())


def test_custom_sequential_forward_keeps_its_activations(hot, ht):
    """An nn.Sequential with a forward of its own may do anything between an activation and the
    next linear map: convert() leaves its GELU a GELU."""
    class Block(nn.Sequential):
        def forward(self, x):
            return self[2](self[1](self[0](x)) * 2)
    out = ht.convert(Block(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4)))
    assert type(out[1]) is nn.GELU and isinstance(out[2], ht.HOTLinear)


def test_attention_basis_choice_survives_a_state_dict_round_trip(hot, ht):
    """hla_basis="auto": the basis an attention's in-projection chose is in its state dict and
    comes back with load_state_dict (a resumed run does not measure again)."""
    def make():
        torch.manual_seed(0)
        return ht.convert(nn.Sequential(nn.MultiheadAttention(32, 4, batch_first=True)))
    torch.manual_seed(1)
    x = torch.randn(2, 64, 32)
    a, b = make(), make()
    a[0](x, x, x, need_weights=False)[0].square().sum().backward()
    chosen = {k: p.hot_hla_choice for k, p in a[0].hot_projections().items()}
    assert chosen and all(v in ("cut", "full") for v in chosen.values()), chosen
    b.load_state_dict(a.state_dict())
    b[0](x, x, x, need_weights=False)  # makes the projections, which take the pending state
    got = {k: p.hot_hla_choice for k, p in b[0].hot_projections().items()}
    assert got == chosen


def test_plain_state_dict_loads_strictly_into_the_unconverted_model(hot, ht):
    torch.manual_seed(0)
    plain = nn.Sequential(nn.Linear(8, 8), nn.MultiheadAttention(8, 2))
    conv = ht.convert(nn.Sequential(nn.Linear(8, 8), nn.MultiheadAttention(8, 2)))
    with pytest.raises(RuntimeError, match="_extra_state"):
        plain.load_state_dict(conv.state_dict())
    plain.load_state_dict(ht.plain_state_dict(conv))  # strict
    assert torch.equal(plain[0].weight, conv[0].weight)
    with pytest.raises(TypeError, match="plain_state_dict: model must be"):
        ht.plain_state_dict({})


def test_plain_state_dict_of_a_shared_module(hot, ht):
    """A module registered under two names has its entries under both in the state dict: both
    hot entries go."""
    def build():
        m = nn.Sequential(nn.Linear(4, 4))
        m.add_module("again", m[0])
        return m
    plain, conv = build(), ht.convert(build())
    assert {"0._extra_state", "again._extra_state"} <= set(conv.state_dict())
    plain.load_state_dict(ht.plain_state_dict(conv))  # strict


def test_no_grad_forward_is_plain_linear(hot, ht):
    """Without a backward hot is not called, so nothing of it is checked: what F.linear takes
    (float64 here) works in evaluation; in training the same input is refused by name."""
    m = ht.HOTLinear(4, 2, tag="nograd").double()
    x = torch.randn(3, 4, dtype=torch.float64)
    with torch.no_grad():
        assert torch.equal(m(x), nn.functional.linear(x, m.weight, m.bias))
    with pytest.raises(TypeError, match=r"HOTLinear\(linear\): input dtype torch.float64"):
        m(x)




def test_no_output_feature_is_plain_linear(hot, ht):
    """out_features = 0 (nothing to compute, as an empty input): torch's linear map and its
    backward, as nn.Linear (hot cannot make a layer without outputs)."""
    m = ht.HOTLinear(4, 0, tag="none")
    x = torch.randn(2, 3, 4, requires_grad=True)
    y = m(x)
    assert y.shape == (2, 3, 0)
    y.sum().backward()
    assert torch.equal(x.grad, torch.zeros_like(x)) and m.hot_step == 0

def test_autocast_leaves_float64_alone(hot, ht):
    """Autocast casts no float64 tensor, so nn.Linear under it refuses a float64 input with a
    float32 weight (and a float32 input with a float64 weight); HOTLinear does the same instead of
    casting the float64 tensor to bf16, with and without a backward."""
    for xd, wd in ((torch.float64, torch.float32), (torch.float32, torch.float64)):
        plain = nn.Linear(4, 2).to(wd)
        m = ht.HOTLinear(4, 2, tag="f64").to(wd)
        x = torch.randn(3, 4, dtype=xd)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            with pytest.raises(RuntimeError):
                plain(x)
            with torch.no_grad(), pytest.raises(RuntimeError):
                m(x)
            with pytest.raises(TypeError, match=r"HOTLinear\(linear\): input dtype"):
                m(x)
    m = ht.HOTLinear(4, 2, tag="f64").double()  # all float64: autocast casts nothing
    x = torch.randn(3, 4, dtype=torch.float64)
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        assert torch.equal(m(x), nn.functional.linear(x, m.weight, m.bias))

def test_arguments_are_checked_by_name(hot, ht):
    with pytest.raises(TypeError, match="include must be None or a callable"):
        ht.convert(nn.Linear(4, 4), include=5)
    with pytest.raises(TypeError, match="activations must be True or False"):
        ht.convert(nn.Linear(4, 4), activations="no")
    with pytest.raises(TypeError, match="max_cached_shapes must be an int"):
        ht.HOTLinear(4, 4, max_cached_shapes="x")
    with pytest.raises(TypeError, match="name must be a str"):
        ht.HOTLinear(4, 4, name=5)
    with pytest.raises(TypeError, match="tag must be a str"):
        ht.HOTLinear(4, 4, name="a", tag=5)
    with pytest.raises(TypeError, match="check: model must be"):
        ht.check(None)
    import pathlib
    with pytest.raises(Exception) as e:  # a path object is a spec file path, like a str
        ht.convert(nn.Linear(4, 4), spec=pathlib.Path("/nonexistent/spec.lua"))
    assert "PosixPath" not in str(e.value) and "spec.lua" in str(e.value)


def test_bias_gradient_in_the_bias_dtype(hot, ht):
    """g_b goes back in the bias's own dtype, not through the weight's: a float16 weight beside a
    float32 bias under bf16 autocast keeps a bias gradient above float16's range finite."""
    m = ht.HOTLinear(4, 2, tag="gbdtype")
    m.weight.data = m.weight.data.half()
    x = torch.randn(16, 4, requires_grad=True)
    g = torch.full((16, 2), 1e4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = m(x)
    y.backward(g.to(y.dtype))
    assert m.bias.grad.dtype == torch.float32
    want = g.to(torch.bfloat16).float().sum(0)
    assert torch.isfinite(m.bias.grad).all() and torch.equal(m.bias.grad, want), m.bias.grad
