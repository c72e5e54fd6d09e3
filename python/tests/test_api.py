"""The object API (hot.Context, hot.Layer) against the C API: the same layer run by
hot_py_helper (C, linked with libhot's runtime) and by Python gives the same saved buffer and
g_x, g_w, g_b bit for bit, for f32, bf16 and f16; errors come back as hot.HotError with hot's
status and message, bad Python arguments as TypeError/ValueError naming the argument."""

import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import need

from conftest import SOURCE_DIR, run_helper

SEED = 0x5EED1234ABCD


def f32_to_bf16_bits(a):
    """Round-to-nearest-even fp32 -> bf16 bit patterns (finite values)."""
    u = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def make_inputs(dtype, T, O, I, seed=7):
    r = np.random.default_rng(seed)
    x = r.standard_normal((T, I), dtype=np.float32)
    w = r.standard_normal((O, I), dtype=np.float32) * 0.1
    gy = r.standard_normal((T, O), dtype=np.float32)
    if dtype == 1:
        return f32_to_bf16_bits(x), f32_to_bf16_bits(w), f32_to_bf16_bits(gy)
    if dtype == 2:
        return x.astype(np.float16), w.astype(np.float16), gy.astype(np.float16)
    return x, w, gy


@pytest.mark.parametrize("dtype", [0, 1, 2], ids=["f32", "bf16", "f16"])
def test_layer_equals_c_api_bit_for_bit(hot, helper, tmp_path, dtype):
    B, L, O, I, step = 2, 97, 72, 40, 3
    T = B * L
    x, w, gy = make_inputs(dtype, T, O, I)
    inp, out = tmp_path / "in.bin", tmp_path / "out.bin"
    with open(inp, "wb") as f:
        f.write(x.tobytes() + w.tobytes() + gy.tobytes())
    run_helper(helper, "run", dtype, B, L, O, I, SEED, step, inp, out)

    with hot.Context("cpu", seed=SEED) as ctx:
        layer = ctx.create_layer(I, O, B, L, dtype=["f32", "bf16", "f16"][dtype])
        info = layer.info()
        assert (info.T, info.O, info.I, info.B, info.L) == (T, O, I, B, L)
        assert info.seed == SEED and info.gran_auto and not info.calibrated
        info = layer.calibrate(gy, step=step)
        assert info.calibrated
        saved = layer.new_saved_buffer()
        layer.save(x, saved=saved)
        gx, gw, gb = layer.backward(gy, w, step=step, saved=saved)
        st = ctx.stats()
        assert st.backend == "cpu" and st.saves == 1 and st.backwards == 1 and st.calibrations == 1

    c = np.fromfile(out, dtype=np.uint8)
    n = saved.size
    assert c.size == n + 4 * (T * I + O * I + O)
    assert np.array_equal(c[:n], saved), "saved buffer (ABC) differs from C"
    cgx = c[n:n + 4 * T * I].view(np.float32).reshape(T, I)
    cgw = c[n + 4 * T * I:n + 4 * (T * I + O * I)].view(np.float32).reshape(O, I)
    cgb = c[n + 4 * (T * I + O * I):].view(np.float32)
    assert np.array_equal(gx.view(np.uint32), cgx.view(np.uint32)), "g_x differs from C"
    assert np.array_equal(gw.view(np.uint32), cgw.view(np.uint32)), "g_w differs from C"
    assert np.array_equal(gb.view(np.uint32), cgb.view(np.uint32)), "g_b differs from C"
    # Not a vacuous comparison: the outputs are the quantized products, close to exact ones.
    exact = gy.astype(np.float64) @ w.astype(np.float64) if dtype != 1 else None
    if exact is not None:
        rel = np.linalg.norm(gx - exact) / np.linalg.norm(exact)
        assert 0.05 < rel < 0.5


def test_own_buffer_and_out_arrays(hot):
    with hot.Context("cpu", seed=1) as ctx:
        layer = ctx.create_layer(24, 16, 1, 64)
        x, w, gy = make_inputs(0, 64, 16, 24)
        layer.save(x)  # the layer's own buffer
        a = layer.backward(gy, w, step=5)
        out = (np.empty((64, 24), np.float32), np.empty((16, 24), np.float32),
               np.empty(16, np.float32))
        b = layer.backward(gy, w, step=5, out=out)
        assert all(p is q for p, q in zip(b, out))
        assert all(np.array_equal(p, q) for p, q in zip(a, b))
        c = layer.backward(gy, w, step=6)
        assert not np.array_equal(a[0], c[0]), "a new step must change the SR draws"
        np.testing.assert_allclose(a[2], gy.sum(0), rtol=1e-5, atol=1e-5)


def test_backward_outputs_subsets(hot):
    """Layer.backward(outputs=...): every non-empty subset gives the bits of the full call for
    what it asks and None for the rest; without g_w no save is needed first; bad subsets are
    refused by name."""
    with hot.Context("cpu", seed=1) as ctx:
        layer = ctx.create_layer(24, 16, 1, 64)
        x, w, gy = make_inputs(0, 64, 16, 24)
        fresh = ctx.create_layer(24, 16, 1, 64, layer_id=1)
        gx0, _gw0, gb0 = fresh.backward(gy, w, step=5, outputs=("g_x", "g_b"))  # no save
        with pytest.raises(hot.HotError, match="no saved activations"):
            fresh.backward(gy, w, step=5, outputs="g_w")
        layer.save(x)
        full = layer.backward(gy, w, step=5)
        names = ("g_x", "g_w", "g_b")
        for m in range(1, 8):
            want = tuple(n for k, n in enumerate(names) if m >> k & 1)
            got = layer.backward(gy, w, step=5, outputs=want)
            for n, a, f in zip(names, got, full):
                assert (a is None) == (n not in want), (want, n)
                if a is not None:
                    assert np.array_equal(a.view(np.int32), f.view(np.int32)), (want, n)
        for bad in ((), ("g_y",), "gx"):
            with pytest.raises(ValueError, match="outputs must be"):
                layer.backward(gy, w, step=5, outputs=bad)
        nob = ctx.create_layer(24, 16, 1, 64, bias=False, layer_id=2)
        with pytest.raises(ValueError, match="without bias"):
            nob.backward(gy, w, outputs=("g_b",))
        # g_b named with out[2] None: refused (not left out as when outputs is not given)
        gx, gw = np.empty((64, 24), np.float32), np.empty((16, 24), np.float32)
        assert layer.backward(gy, w, step=5, out=(gx, gw, None))[2] is None
        for want in (("g_x", "g_b"), ("g_b",)):
            with pytest.raises(ValueError, match=r"out\[2\]"):
                layer.backward(gy, w, step=5, out=(gx, gw, None), outputs=want)
        # out arrays by the inputs' rule: the matrix's elements with its rows' length last (a
        # transposed g_x of as many elements would be filled in the wrong order)
        gb = np.empty((16,), np.float32)
        for k, bad in ((0, np.empty((24, 64), np.float32)), (1, np.empty((24, 16), np.float32)),
                       (2, np.empty((16, 1), np.float32)), (0, np.empty((64, 24), np.float64)),
                       (1, np.empty((24, 16), np.float32).T), (0, np.float32(0))):
            arrays = [gx, gw, gb]
            arrays[k] = bad
            with pytest.raises(ValueError, match=r"out\[%d\] \(g_[xwb]\) must be" % k):
                layer.backward(gy, w, step=5, out=tuple(arrays))
        assert layer.backward(gy, w, step=5, out=(gx.reshape(1, 64, 24), gw, gb))[0].shape == \
            (1, 64, 24)
        for bad in ((gx, gw), (gx, gw, gb, gb), gx):
            with pytest.raises(ValueError, match=r"^out must be a tuple \(g_x, g_w, g_b\)"):
                layer.backward(gy, w, step=5, out=bad)


def test_layer_spec_from_recipe_and_fields(hot):
    s = hot.LayerSpec(64, 32, recipe="paper_code", name="fc")
    assert s.c.hq.pad == 0 and s.c.hla.block == 0 and s.c.hq.w.rule == hot.Rule.SAWB
    s2 = hot.LayerSpec(64, 32)
    assert s2.c.hq.block == 16 and s2.c.hla.block == 64 and s2.c.hla.layout == hot.Layout.AUTO
    s2.c.hq.g.gran = hot.Gran.ROW
    with hot.Context("cpu") as ctx:
        layer = ctx.create_layer(spec=s2, batch=2, tokens=64)
        i = layer.info()
        assert i.gran == hot.Gran.ROW and not i.gran_auto
        assert layer.spec().c.hq.g.gran == hot.Gran.ROW
        with pytest.raises(hot.HotError) as e:
            layer.calibrate(np.zeros((128, 32), np.float32))
        assert e.value.status == hot.Status.ERR_MISUSE


def test_dtype_arguments(hot):
    """as_dtype: a DType, its value or a name; anything else (a value no DType has, a bool, an
    unknown name) is a ValueError naming the argument and the choices."""
    assert [hot.api.as_dtype(v) for v in (0, "bf16", hot.DType.F16, "float32")] == \
        [hot.DType.F32, hot.DType.BF16, hot.DType.F16, hot.DType.F32]
    for bad in (3, -1, True, "f64", None):
        with pytest.raises(ValueError, match=r"^dtype must be one of f32, bf16, f16"):
            hot.api.as_dtype(bad)


def test_layer_spec_fields_refuse_what_c_would_cut(hot):
    """LayerSpec.c's integer fields, nested ones included, refuse a value their C type cannot
    hold (ctypes would store 2**40 in an int as 0) and a non-integer, naming the field; values
    that fit, enums and numpy integers are stored as given."""
    s = hot.LayerSpec(32, 16)
    s.c.hq.block, s.c.hla.keep, s.c.tokens = 32, np.int64(25), 2**40
    s.c.hq.g.gran = hot.Gran.ROW
    assert (s.c.hq.block, s.c.hla.keep, s.c.tokens, s.c.hq.g.gran) == (32, 25, 2**40, 1)
    for obj, field, bad, err in ((s.c.hq, "block", 2**40, ValueError),
                                 (s.c.hla, "keep", -2**31 - 1, ValueError),
                                 (s.c.hq.g, "bits", 2.5, TypeError),
                                 (s.c.tile_gx, "stages", "3", TypeError),
                                 (s.c, "in_features", 2**63, ValueError)):
        before = getattr(obj, field)
        with pytest.raises(err, match=r"\.%s" % field):
            setattr(obj, field, bad)
        assert getattr(obj, field) == before


def test_layer_from_spec_file(hot):
    path = os.path.join(SOURCE_DIR, "specs", "vit_b16.lua")
    with hot.Context("cpu") as ctx:
        layer = ctx.layer_from_spec(path, "fc1", batch=1)
        i = layer.info()
        assert (i.name, i.O, i.I, i.B, i.L) == ("fc1", 3072, 768, 1, 197)
        assert layer.saved_bytes == i.saved_bytes > 0
        assert layer.spec().name == "fc1"
        with pytest.raises(hot.HotError) as e:
            ctx.layer_from_spec(path, "fc9")
        assert e.value.status == hot.Status.ERR_NOT_FOUND and "fc1" in e.value.message
        with pytest.raises(hot.HotError) as e:
            ctx.layer_from_spec(os.path.join(SOURCE_DIR, "no", "such.lua"), "fc1")
        assert e.value.status in (hot.Status.ERR_SPEC, hot.Status.ERR_IO)
        assert "such.lua" in str(e.value)


def test_errors_carry_status_and_message(hot):
    with hot.Context("cpu") as ctx:
        with pytest.raises(hot.HotError) as e:
            ctx.create_layer(0, 8)
        assert e.value.status == hot.Status.ERR_SHAPE
        assert e.value.status_name == "HOT_ERR_SHAPE"
        assert "in_features" in e.value.message and "HOT_ERR_SHAPE" in str(e.value)
        assert ctx.errmsg == e.value.message
        layer = ctx.create_layer(16, 8, 1, 32)
        x, w, gy = make_inputs(0, 32, 8, 16)
        with pytest.raises(hot.HotError) as e:
            layer.backward(gy, w)  # backward before any save
        assert e.value.status == hot.Status.ERR_MISUSE
        bad = x.copy()
        bad[3, 5] = np.nan
        with pytest.raises(hot.HotError) as e:
            layer.save(bad)
        assert e.value.status == hot.Status.ERR_NONFINITE
        with pytest.raises(TypeError, match="x must be float32"):
            layer.save(x.astype(np.float64))
        with pytest.raises(ValueError, match="x must hold 32 x 16"):
            layer.save(x[:16])
        with pytest.raises(ValueError, match="C-contiguous"):
            layer.save(np.asfortranarray(x))
        with pytest.raises(TypeError, match="numpy array"):
            layer.save([1.0] * 512)
        with pytest.raises(ValueError, match="step"):
            layer.backward(gy, w, step=-1)
        with pytest.raises(ValueError, match="saved must be"):
            layer.save(x, saved=np.empty(3, np.uint8))
        with pytest.raises(ValueError, match="backend"):
            hot.Context("gpu")
        with pytest.raises(hot.HotError) as e:
            ctx.set_profiling(True)
        assert e.value.status == hot.Status.ERR_UNSUPPORTED
    with pytest.raises(ValueError, match="closed"):
        ctx.create_layer(16, 8)
    with pytest.raises(ValueError, match="destroyed"):
        layer.save(x)


def test_integer_arguments_are_never_cut_to_the_c_type(hot):
    """A size, count, seed or step that ctypes would cut to the C type's bits (batch=2**64 + 16
    as 16) is refused, as is one that is not an integer (1.5 would become 1); numpy integers
    are integers."""
    with hot.Context("cpu") as ctx:
        for kw in ({"batch": 2**64 + 16}, {"tokens": 2**64 + 16}):
            with pytest.raises(ValueError, match="is not in"):
                ctx.create_layer(16, 8, **kw)
        for kw in ({"batch": 1.5}, {"tokens": "4"}, {"batch": True}):
            with pytest.raises(TypeError, match="must be an int"):
                ctx.create_layer(16, 8, **kw)
        with pytest.raises(ValueError, match="in_features = 18446744073709551632 is not in"):
            hot.LayerSpec(2**64 + 16, 8)
        with pytest.raises(TypeError, match="out_features must be an int"):
            hot.LayerSpec(16, 8.0)
        with pytest.raises(ValueError, match="batch = 18446744073709551617 is not in"):
            ctx.layer_from_spec("nowhere.lua", "a", batch=2**64 + 1)
        layer = ctx.create_layer(np.int64(16), np.int32(8), np.int64(1), 32)
        assert (layer.info().T, layer.info().I, layer.info().O) == (32, 16, 8)
        x, w, gy = make_inputs(0, 32, 8, 16)
        layer.save(x)
        with pytest.raises(TypeError, match="step must be an int"):
            layer.backward(gy, w, step=1.5)
    with pytest.raises(ValueError, match="device = 4294967296 is not in"):
        hot.Context("cpu", device=2**32)
    with pytest.raises(TypeError, match="seed must be an int"):
        hot.Context("cpu", seed=1.5)


def test_context_options_and_stats(hot, tmp_path):
    with hot.Context("cpu", seed=42, cache_dir=tmp_path, disk_cache=False) as ctx:
        st = ctx.stats()
        assert st.backend == "cpu" and not st.fell_back and st.layers == 0
        layer = ctx.create_layer(16, 8)
        assert layer.info().seed == 42 and ctx.stats().layers == 1
        layer.destroy()
        layer.destroy()  # safe to repeat
        assert ctx.stats().layers == 0
    with pytest.raises(hot.HotError) as e:
        hot.Context(arch="sm_12")
    assert e.value.status == hot.Status.ERR_INVALID and "sm_12" in e.value.message


def test_library_not_found_is_a_clear_error(hot, tmp_path):
    code = ("import hot\n"
            "try:\n    hot.Context('cpu')\n"
            "except hot.HotLibraryError as e:\n    print('ERR', e)\n")
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, HOT_LIBRARY=str(tmp_path / "libnothere.so"), PYTHONPATH=pkg_parent)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=60)
    assert r.stdout.startswith("ERR HOT_LIBRARY=") and "libnothere.so" in r.stdout, r.stderr


def test_compile_and_profiling_calls(hot, tmp_path):
    """hot_layer_compile / hot_ctx_compile through Python: on the CPU backend without an arch
    they do nothing; with arch sm_80 they run NVRTC (no GPU needed) and the stats count it;
    per-kernel times exist on the CUDA backend only."""
    with hot.Context("cpu") as ctx:
        layer = ctx.create_layer(32, 16, 1, 64)
        layer.compile()
        ctx.compile([layer])
        assert ctx.stats().compiles == 0 and not layer.info().compiled
        with pytest.raises(hot.HotError) as e:
            layer.kernel_times()
        assert e.value.status == hot.Status.ERR_UNSUPPORTED
        with hot.Context("cpu") as other:
            with pytest.raises(ValueError, match="not a layer of this context"):
                other.compile([layer])
    with hot.Context("cpu", arch="sm_80", cache_dir=tmp_path, disk_cache=False) as ctx:
        layer = ctx.create_layer(32, 16, 1, 64)
        try:
            layer.compile()
        except hot.HotError as e:
            if e.status == hot.Status.ERR_NO_NVRTC:
                pytest.skip(f"NVRTC cannot be loaded here: {e.message}")
            raise
        st = ctx.stats()
        assert layer.info().compiled and st.compiles > 0 and st.arch == "sm_80"
        assert isinstance(ctx.compile_log, str)


# ---- the CUDA backend's machine checks, on the recording fake driver ---------------------------

def _fake_cuda(hot):
    """Path of the recording fake libcuda (tests/runtime/fake_cuda.c): $HOT_FAKE_CUDA, else beside
    the library under test (<build>/tests/libhot_fake_cuda.so); skips when there is none."""
    p = os.environ.get("HOT_FAKE_CUDA")
    if not p:
        lib = os.environ.get("HOT_LIBRARY") or hot._lib.find_library()
        p = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(str(lib)))), "tests",
                         "libhot_fake_cuda.so")
    if not os.path.exists(p):
        pytest.skip(f"no fake CUDA driver at {p} (set HOT_FAKE_CUDA)")
    return p


def _run_on_fake(hot, tmp_path, machine, body):
    """Runs `body` (Python source, `hot` imported) in a fresh process whose CUDA driver is the fake,
    configured as `machine` = (devices, cc_major, cc_minor, driver_version) before it loads."""
    fake = _fake_cuda(hot)
    code = ("import ctypes, warnings\n"
            f"ctypes.CDLL({fake!r}).fake_cuda_configure(*{tuple(machine)!r})\n"
            "import hot\n" + body)
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, HOT_CUDA_DRIVER=fake, PYTHONPATH=pkg_parent)
    env.pop("HOT_BACKEND", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       cwd=str(tmp_path), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_auto_fallback_on_unsupported_device_warns(hot, tmp_path):
    """A device of compute capability 10.0: backend cuda raises ERR_UNSUPPORTED; auto runs the
    CPU and says so with a RuntimeWarning (hot's "warning: ..." line)."""
    out = _run_on_fake(hot, tmp_path, (1, 10, 0, 13000), """
try:
    hot.Context("cuda")
except hot.HotError as e:
    print("CUDA", e.status_name, "10.0" in e.message)
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    ctx = hot.Context("auto")
print("AUTO", ctx.backend, len(w), w[0].category.__name__ if w else None)
print("MSG", ctx.warning.startswith("warning: ") and "compute capability 10.0" in ctx.warning)
ctx.close()
""")
    assert "CUDA HOT_ERR_UNSUPPORTED True" in out
    assert "AUTO cpu 1 RuntimeWarning" in out
    assert "MSG True" in out


def test_forced_arch_the_device_cannot_run(hot, tmp_path):
    """HOT_ARCH / arch= is checked against the device at creation (sm_90a on an 8.0 device)."""
    out = _run_on_fake(hot, tmp_path, (1, 8, 0, 13000), """
for b in ("cuda", "auto"):
    try:
        hot.Context(b, arch="sm_90a")
        print(b, "created")
    except hot.HotError as e:
        print(b, e.status_name, "only on compute capability 9.0" in e.message)
""")
    assert "cuda HOT_ERR_INVALID True" in out and "auto HOT_ERR_INVALID True" in out


def test_context_device_index(hot, tmp_path):
    """A CUDA context knows its device index (the option, else $HOT_DEVICE, else 0); hot.torch
    refuses to serve another device's tensors with it."""
    need("torch")
    out = _run_on_fake(hot, tmp_path, (2, 9, 0, 13000), """
import os
import hot.torch
c0, c1 = hot.Context("cuda"), hot.Context("cuda", device=1)
os.environ["HOT_DEVICE"] = "1"
c2 = hot.Context("cuda")
print("DEV", c0.device, c1.device, c2.device, hot.Context("cpu").device)
hot.torch.set_context("cuda:1", c1)
try:
    hot.torch.set_context("cuda:1", c0)
except ValueError as e:
    print("REFUSED", "device 0" in str(e) and "cuda:1" in str(e))
""")
    assert "DEV 0 1 1 None" in out and "REFUSED True" in out


def test_hotlinear_overflow_checks(hot):
    """HOTLinear surfaces overflow reports: hot_check() / hot.torch.check(model) check every cached
    layer, and a layer dropped from the shape cache is checked as it goes (on the CPU backend
    nothing is pending: the calls return quietly; the check calls are counted)."""
    torch = need("torch")
    import hot.torch as ht
    calls = []
    orig = hot.Layer.check

    def counting(self):
        calls.append(self._info.T)
        return orig(self)

    hot.Layer.check = counting
    try:
        m = ht.HOTLinear(16, 8, max_cached_shapes=2)
        for tokens in (4, 5, 6):
            x = torch.randn(tokens, 16, requires_grad=True)
            m(x).sum().backward()
        assert calls == [4]  # the third shape evicted the first, checked on its way out
        calls.clear()
        m.hot_check()
        assert sorted(calls) == [5, 6]
        calls.clear()
        assert ht.check(torch.nn.Sequential(m, torch.nn.ReLU())) == 1 and len(calls) == 2
    finally:
        hot.Layer.check = orig


def test_missing_module_skips_name_the_interpreter():
    """Every skip for a missing Python module names the interpreter that tried and how to pick
    another: the test files use conftest.need (no bare importorskip), and run_pytest.py's line."""
    import glob
    import sys
    import conftest
    here = os.path.dirname(os.path.abspath(__file__))
    for path in sorted(glob.glob(os.path.join(here, "*.py"))):
        if os.path.basename(path) == "conftest.py":
            continue
        assert "importor" + "skip(" not in open(path, encoding="utf-8").read(), \
            f"{path}: use conftest.need(module), whose skip line names the interpreter"
    reason = conftest.missing_module_reason("nosuchmodule")
    assert sys.executable in reason and "-DPython3_EXECUTABLE=" in reason, reason
    runner = os.path.join(SOURCE_DIR, "tests", "python", "run_pytest.py")
    r = subprocess.run([sys.executable, runner, "--need", "hot_no_such_module", __file__],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 77, r.stdout + r.stderr
    assert sys.executable in r.stdout and "-DPython3_EXECUTABLE=" in r.stdout, r.stdout


# ---- named random streams (hot_layer_create_named) ------------------------------------------

DEFAULT_SEED = 0x243F6A8885A308D3
# (seed, name, 27-bit layer id, Philox key): the same table as tests/runtime/test_api_cpu.c
# (named_kat); "fc67872285" and "att.in_proj.qkv" share a layer id.
NAMED_KAT = [
    (DEFAULT_SEED, "a", 41576353, 0x0FD241AE7EC49A2D),
    (DEFAULT_SEED, "fc67872285", 80537823, 0xF6A20DDAE06D0664),
    (DEFAULT_SEED, "att.in_proj.qkv", 80537823, 0xBB945FADA8D79C92),
    (DEFAULT_SEED, "blocks.0.fc1", 89103491, 0x9C35486E283C698E),
    (DEFAULT_SEED, "encoder.層.0.ß", 119246768, 0x79410C28649ABEFE),
    (DEFAULT_SEED, "\U0001F600", 48424573, 0x66FB657361959EB1),
    (42, "a", 41576353, 0x2C987FE0B5E27E11),
    (42, "fc67872285", 80537823, 0x65762B991BA8D6BC),
    (42, "att.in_proj.qkv", 80537823, 0x640A6C24CE3456AE),
    (42, "blocks.0.fc1", 89103491, 0x12BA69159F298CB1),
    (42, "encoder.層.0.ß", 119246768, 0x548100635E45A27C),
    (42, "\U0001F600", 48424573, 0x87D381FB085F1226),
]


def _independent_stream(seed, name):
    """The derivation written out again from the documentation (hot.h hot_layer_create_named):
    FNV-1a 64 over the UTF-8 bytes, the 27-bit fold, splitmix64's finaliser of seed ^ hash."""
    m = 2 ** 64
    h = 14695981039346656037
    for byte in name.encode("utf-8"):
        h = ((h ^ byte) * 1099511628211) % m
    z = seed ^ h
    for shift, mul in ((30, 13787848793156543929), (27, 10723151780598845931)):
        z = ((z ^ (z >> shift)) * mul) % m
    return (h ^ (h >> 27) ^ (h >> 54)) % (1 << 27), z ^ (z >> 31)


def test_stream_derivation_known_answers(hot):
    # the components against their published values
    assert hot.stream_hash("a") == 0xAF63DC4C8601EC8C
    assert hot.stream_hash("foobar") == 0x85944171F73967E8
    # splitmix64 from state 0: first output 0xe220a8397b1dcdaf = finaliser(0x9e3779b97f4a7c15)
    assert hot.stream_key("a", 0x9E3779B97F4A7C15 ^ hot.stream_hash("a")) == 0xE220A8397B1DCDAF
    for seed, name, lid, key in NAMED_KAT:
        assert _independent_stream(seed, name) == (lid, key), name
        assert (hot.layer_id_for(name), hot.stream_key(name, seed)) == (lid, key), name
    # more names, long and non-ASCII, against the independent implementation
    names = ["x" * 1000, "ß" * 40, "层.0", "a b", "\u00e9", "e\u0301", "#1", "A"]
    for name in names:
        for seed in (0, 1, DEFAULT_SEED, 2 ** 64 - 1):
            assert _independent_stream(seed, name) == (hot.layer_id_for(name),
                                                       hot.stream_key(name, seed)), name


def _runtime_streams(hot, names, seed, first=()):
    """(layer_id, key) of a layer made with stream=name, per name, as libhot reports them; the
    layers of `first` (hot_layer_create, then other names) are made before."""
    out = {}
    with hot.Context("cpu", seed=seed) as ctx:
        for extra in first:
            ctx.create_layer(8, 4, 1, 8, stream=extra) if extra else ctx.create_layer(8, 4, 1, 8)
        for name in names:
            info = ctx.create_layer(8, 4, 1, 8, name="labels-only", stream=name).info()
            out[name] = (info.layer_id, info.seed)
    return out


def test_runtime_derives_the_known_answers_in_any_order(hot):
    for seed in (DEFAULT_SEED, 42):
        names = [n for s, n, _, _ in NAMED_KAT if s == seed]
        want = {n: (lid, key) for s, n, lid, key in NAMED_KAT if s == seed}
        assert _runtime_streams(hot, names, seed) == want
        assert _runtime_streams(hot, names[::-1], seed, first=("", "other", "")) == want
    # the two names of one 27-bit id: one id, two keys
    got = _runtime_streams(hot, ["fc67872285", "att.in_proj.qkv"], DEFAULT_SEED)
    assert got["fc67872285"][0] == got["att.in_proj.qkv"][0]
    assert got["fc67872285"][1] != got["att.in_proj.qkv"][1]


def test_stream_keys_equal_in_another_process(hot):
    """Another interpreter, which makes other layers first and the named ones in reverse order,
    reports the keys this one does."""
    names = [n for s, n, _, _ in NAMED_KAT if s == 42]
    code = ("import sys, json, hot\n"
            "names = json.loads(sys.argv[1])\n"
            "with hot.Context('cpu', seed=42) as ctx:\n"
            "    for _ in range(3):\n"
            "        ctx.create_layer(8, 4, 1, 8)\n"
            "    ctx.create_layer(8, 4, 1, 8, stream='zz')\n"
            "    print(json.dumps([ctx.create_layer(8, 4, 1, 8, stream=n).info().seed\n"
            "                      for n in names[::-1]][::-1]))\n")
    import json
    pkg_parent = os.path.dirname(os.path.dirname(os.path.abspath(hot.__file__)))
    env = dict(os.environ, PYTHONPATH=pkg_parent + os.pathsep + os.environ.get("PYTHONPATH", ""),
               HOT_LIBRARY=hot.library_path())
    env.pop("HOT_SEED", None)
    r = subprocess.run([sys.executable, "-c", code, json.dumps(names)], capture_output=True,
                       text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    other = json.loads(r.stdout.strip().splitlines()[-1])
    mine = _runtime_streams(hot, names, 42)
    assert other == [mine[n][1] for n in names] == [k for s, _, _, k in NAMED_KAT if s == 42]


def test_stream_argument_errors(hot):
    with hot.Context("cpu") as ctx:
        for bad in ("", "a\0b", 3, b"fc", "\ud800"):
            with pytest.raises(ValueError, match="tag"):
                ctx.create_layer(8, 4, 1, 8, stream=bad)
        with pytest.raises(ValueError, match="not both"):
            ctx.create_layer(8, 4, 1, 8, stream="a", layer_id=3)
        for bad in (-1, 2 ** 64, True, 1.0):
            with pytest.raises(ValueError, match="seed"):
                hot.stream_key("a", bad)


def test_save_refuses_a_read_only_saved_buffer(hot):
    """save(saved=...) writes the buffer: a read-only array (one over a bytes object, or made
    read-only) is refused by name before libhot writes into it; backward only reads it."""
    with hot.Context("cpu", seed=1) as ctx:
        layer = ctx.create_layer(24, 16, 1, 64)
        x, w, gy = make_inputs(0, 64, 16, 24)
        n = layer.saved_bytes
        raw = bytes(n + 16)
        view = np.frombuffer(raw, np.uint8)
        off = (-view.ctypes.data) % 16
        with pytest.raises(ValueError, match="saved must be writable"):
            layer.save(x, saved=view[off:off + n])
        assert not any(raw), "save wrote into an immutable bytes object"
        buf = layer.new_saved_buffer()
        layer.save(x, saved=buf)
        buf.setflags(write=False)
        with pytest.raises(ValueError, match="saved must be writable"):
            layer.save(x, saved=buf)
        a = layer.backward(gy, w, step=5, saved=buf)  # read only: accepted
        layer.save(x)
        b = layer.backward(gy, w, step=5)
        assert all(np.array_equal(p, q) for p, q in zip(a, b))


def test_raw_addresses_are_never_cut_to_the_c_type(hot):
    """save_ptr, backward_ptr and calibrate_ptr take addresses and a stream as int or None:
    ctypes would pass 2**64 + p as p, -1 as 0xffff... and a bool as address 1, and a str as the
    address of its own bytes; each is refused naming the argument before anything reaches C."""
    with hot.Context("cpu", seed=1) as ctx:
        layer = ctx.create_layer(24, 16, 1, 64)
        x, w, gy = make_inputs(0, 64, 16, 24)
        px = x.ctypes.data
        for bad in (2**64 + px, -1):
            with pytest.raises(ValueError, match=r"save_ptr: x = -?\d+ is not an address"):
                layer.save_ptr(bad, "f32")
        for bad in (True, 1.5, "abc", x):
            with pytest.raises(TypeError, match="save_ptr: x must be"):
                layer.save_ptr(bad, "f32")
        with pytest.raises(TypeError, match="save_ptr: stream must be"):
            layer.save_ptr(px, "f32", stream="abc")
        with pytest.raises(ValueError, match="save_ptr: saved = "):
            layer.save_ptr(px, "f32", saved=2**64)
        gx = np.empty((64, 24), np.float32)
        with pytest.raises(ValueError, match="backward_ptr: g_x = "):
            layer.backward_ptr(gy.ctypes.data, w.ctypes.data, "f32", 2**64 + gx.ctypes.data,
                               None)
        with pytest.raises(TypeError, match="backward_ptr: w must be"):
            layer.backward_ptr(gy.ctypes.data, False, "f32", gx.ctypes.data, None)
        with pytest.raises(TypeError, match="calibrate_ptr: g_y must be"):
            layer.calibrate_ptr(gy, "f32")
        layer.save_ptr(np.uint64(px), "f32", stream=0)  # numpy integers are integers
        layer.backward_ptr(gy.ctypes.data, w.ctypes.data, "f32", gx.ctypes.data, None, step=1)
        assert np.array_equal(gx, layer.backward(gy, w, step=1, outputs="g_x")[0])


def test_paths_and_names_reach_c_whole(hot, tmp_path):
    """Paths (spec file, cache_dir, debug_dir) are str, bytes or os.PathLike, passed as the file
    system's bytes (os.fsencode: a non-UTF-8 name works); names (layer_name, arch, a spec's name)
    are str. A NUL, which C would take as the end (a spec path, layer name or cache directory
    silently cut short), and any other type (bytes became "b'...'", None became "None") are
    refused naming the argument."""
    import shutil
    src = os.path.join(SOURCE_DIR, "specs", "vit_b16.lua")
    odd = os.path.join(os.fsencode(str(tmp_path)), b"d\xff")
    os.mkdir(odd)
    shutil.copy(src, os.path.join(odd, b"v.lua"))
    with hot.Context("cpu") as ctx:
        for p in (src.encode(), os.path.join(odd, b"v.lua"),
                  os.fsdecode(os.path.join(odd, b"v.lua"))):
            assert ctx.layer_from_spec(p, "fc1", batch=1).info().name == "fc1"
        with pytest.raises(ValueError, match="layer_from_spec: path .* NUL"):
            ctx.layer_from_spec(src + "\0junk", "fc1")
        with pytest.raises(ValueError, match="layer_from_spec: layer_name .* NUL"):
            ctx.layer_from_spec(src, "fc1\0junk")
        with pytest.raises(TypeError, match="layer_from_spec: layer_name must be a str"):
            ctx.layer_from_spec(src, None)
        with pytest.raises(TypeError, match="layer_from_spec: path must be"):
            ctx.layer_from_spec(None, "fc1")
        with pytest.raises(ValueError, match="name .* NUL"):
            ctx.create_layer(16, 8, name="fc\0x")
    with pytest.raises(ValueError, match="cache_dir .* NUL"):
        hot.Context("cpu", cache_dir=str(tmp_path) + "\0x")
    with pytest.raises(ValueError, match="arch .* NUL"):
        hot.Context("cpu", arch="sm_80\0x")
    with pytest.raises(TypeError, match="debug_dir must be"):
        hot.Context("cpu", debug_dir=1)
    cd = os.path.join(os.fsencode(str(tmp_path)), b"cache")
    with hot.Context("cpu", arch="sm_80", cache_dir=cd, disk_cache=True) as ctx:
        try:
            ctx.create_layer(16, 8).compile()  # a forced arch fills the cache on the CPU
        except hot.HotError as e:
            if e.status != hot.Status.ERR_NO_NVRTC:
                raise
        else:
            assert os.fsencode(ctx.stats().cache_dir) == cd
