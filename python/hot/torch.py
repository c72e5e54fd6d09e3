"""PyTorch integration: HOTLinear, a drop-in for torch.nn.Linear whose backward runs hot, and
HOTMultiheadAttention, nn.MultiheadAttention whose input and output projections run hot.

    import hot.torch
    model = hot.torch.convert(model, verbose=True)  # nn.Linear and nn.MultiheadAttention -> HOT
    # or: fc = hot.torch.HOTLinear(768, 3072, tag="blocks.0.fc1")

Forward: y = x·wᵀ + b computed by torch (exactly what nn.Linear computes); hot keeps only the
compressed activation of x (ABC: int8 codes of a low-rank Hadamard projection) — x itself is not
kept for the backward. Backward: g_x, g_w and g_b from hot (HQ 4-bit g_x, HLA INT8 g_w, exact
fp32 g_b) through a torch.autograd.Function. Without grad mode, or when nothing needs a gradient,
the forward is plain F.linear and hot is not called.

- Inputs [..., I] of float32, bfloat16 or float16, the same dtype as the weight, on the CPU
  (hot's CPU backend) or a CUDA device (hot's CUDA backend, device pointers, the current stream:
  no copies, no synchronisation; a non-contiguous input is made contiguous first, in the graph,
  as F.linear takes it, and a view whose data is not 16-byte aligned is copied for the call).
  Under torch.autocast the input, weight and bias are cast to the autocast dtype first (as
  autocast's linear does) and hot runs in that dtype; hot's fp32 gradients go to the
  input's and the parameters' own dtypes directly (no rounding to the autocast dtype between).
- Rows: x of shape [..., L, I] (3 or more dimensions) is B = prod(leading) samples of L tokens;
  [N, I] is one sequence of N tokens (B = 1, L = N); [I] is one token. HLA blocks run along L,
  so the token axis must be the second to last (batch_first layouts). HOTMultiheadAttention
  takes care of this itself for both of nn.MultiheadAttention's layouts.
- A hot layer is created per (device, dtype, B, L) and cached in the module (at most
  `max_cached_shapes`, least recently used dropped).
- Random stream: every hot layer of a module draws its stochastic rounding from the Philox
  stream of the module's tag (hot.h hot_layer_create_named: key and layer id from a 64-bit hash
  of the tag and the seed), never from how many layers the process made before. convert() tags
  each module with its qualified name ("blocks.0.fc1"); HOTLinear(..., tag="...") sets one; a
  module made without a tag or a name takes "HOTLinear#k", k counting the HOTLinear modules this
  process made (stable only for a script that builds its modules in the same order every time;
  a RuntimeWarning says so at its first layer).
- `hot_step`: the Philox step of stochastic rounding; each backward uses it and adds 1. It is
  saved in the module's state dict (the `_extra_state` entry, with the LQS choices below) and
  restored by load_state_dict, so a run resumed from a checkpoint draws exactly what the
  uninterrupted run draws. A state dict without that entry (e.g. an nn.Linear checkpoint) loads
  and leaves the step and the choices as they are.
- A layer whose spec says scale = "auto" (the recipes' default) is calibrated (LQS) on the first
  g_y it sees for its (dtype, B, L), at that step; the choice is kept per (dtype, B, L) in the
  module (and in its state dict), so a layer made again later for that shape (after eviction, a
  restart, on another rank) starts from the same choice instead of calibrating anew.
- HOT_BACKEND: the shared contexts honour it: unset or auto: the tensors' device decides; cpu or
  cuda: must match the tensors' device (ValueError saying so otherwise); any other value raises
  ValueError as hot_ctx_create refuses it.
- torch.compile: the hot calls are excluded from compilation (torch.compiler.disable: a graph
  break around each); activation checkpointing (torch.utils.checkpoint) recomputes the forward,
  which saves the compressed activation again (same bits).
- An empty input (no token: an expert nothing was routed to) and a module with out_features = 0
  run F.linear and torch's backward.
- Errors: wrong dtype/shape/device raise TypeError / ValueError naming the module and the
  argument when hot runs (grad mode, something needing a gradient), also a CUDA tensor on another
  device than its hot context's;
  hot's errors raise hot.HotError with hot's message, but for NaN/Inf in x or g_y on the CPU
  backend (HOT_ERR_NONFINITE), which give NaN gradients as torch's linear map gives non-finite
  ones (so that torch.amp.GradScaler skips the step), unless torch.autograd.set_detect_anomaly
  is on: then hot.HotError. The CUDA backend does not check for NaN (see hot.h).
- Overflow (finite inputs near FLT_MAX whose g_x, g_w or g_b overflowed fp32: HOT_ERR_RANGE) always
  raises hot.HotError with status ERR_RANGE naming the step and the output. On the CPU backend the
  backward raises it. On CUDA the backward runs asynchronously and its overflow is known only
  once the stream reaches it, so it is raised by the first of: the module's next forward or
  backward on the same shape (hot reports it at its next call on that layer, which then does not
  run), `module.hot_check()` / `hot.torch.check(model)` (which wait for the backwards in flight —
  call them where a synchronisation is cheap, e.g. after the optimizer step or at logging
  time), or the forward that drops the layer from the shape cache (checked then, so a report is
  not lost with it). No report is lost when the host runs ahead of the GPU.

Captures: capture_next_backward(module, path) makes the module's next forward (with grad) keep
x, and the backward of that forward write x, w and g_y (as hot receives them) to a capture file
(docs/capture.md) before running hot; once (a graph run backward again with retain_graph
writes nothing more), then the module is back to normal.

Contexts: one hot.Context per device, shared by all modules in the process (created on first use
with options from the environment, backend forced to cpu or cuda); `set_context(device, ctx)`
installs another, a module's `context=` argument overrides both.
"""

import collections
import itertools
import math
import numbers
import os
import threading
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _capture, _lib, api, memory
from . import _host_pool, _memory_plan
from ._lib import DType, Gran

# torch brings GNU OpenMP: if libhot was loaded before torch was imported, attach the CPU backend
# to it now (HOT_CPU_OPENMP; hot._lib._attach_openmp).
_lib.reattach_openmp()
_host_pool.limit_bytes()  # HOT_CPU_POOL_MB: a malformed value is refused here, not mid-backward

__all__ = ["HOTLinear", "HOTMultiheadAttention", "convert", "ConvertReport", "context_for",
           "set_context", "spec_from_file", "capture_next_backward", "check", "stream_id",
           "plain_state_dict"]

_DT = {torch.float32: DType.F32, torch.bfloat16: DType.BF16, torch.float16: DType.F16}
_DT_NAME = {torch.float32: "f32", torch.bfloat16: "bf16", torch.float16: "f16"}

_contexts = {}
_contexts_lock = threading.Lock()
_untagged = itertools.count()


def stream_id(tag):
    """The Philox layer id hot uses for a module tagged `tag` (hot.layer_id_for: FNV-1a 64 of
    the UTF-8 tag folded to 27 bits). The stream's identity is the whole 64-bit hash
    (hot.stream_hash, which keys it with the seed: hot.stream_key), not this id."""
    return api.layer_id_for(tag)


def _device_key(device):
    device = torch.device(device)
    if device.type == "cpu":
        return ("cpu", 0)
    if device.type == "cuda":
        return ("cuda", device.index if device.index is not None else torch.cuda.current_device())
    raise ValueError(f"hot runs on cpu and cuda tensors (got device {device})")


def _env_backend():
    """HOT_BACKEND as hot_ctx_create reads it: None (unset, empty or auto), "cpu" or "cuda";
    ValueError for any other value."""
    v = os.environ.get("HOT_BACKEND")
    if v is None or v == "" or v == "auto":
        return None
    if v not in ("cpu", "cuda"):
        raise ValueError(f"HOT_BACKEND='{v}': expected auto, cuda or cpu")
    return v


def context_for(device):
    """The shared hot.Context of a torch device (created on first use: backend cpu for CPU
    tensors, cuda with that device index for CUDA tensors; other options from the environment).
    HOT_BACKEND, when set to cpu or cuda, must agree with the device: ValueError otherwise (and
    for a value other than auto, cuda, cpu)."""
    key = _device_key(device)
    want = _env_backend()
    if want is not None and want != key[0]:
        where = "the CPU" if key[0] == "cpu" else f"cuda:{key[1]}"
        if want == "cuda":
            fix = ("move the model and its inputs to a CUDA device, or set HOT_BACKEND=auto "
                   "(or cpu, or unset it)")
            what = "hot's CUDA backend takes CUDA tensors only"
        else:
            fix = ("move the model and its inputs to the CPU, or set HOT_BACKEND=auto (or cuda, "
                   "or unset it)")
            what = "hot's CPU backend takes host memory only"
        raise ValueError(f"HOT_BACKEND={want}, but the tensors are on {where}: {what}; {fix}")
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None or ctx.closed:
            ctx = api.Context("cpu") if key[0] == "cpu" else api.Context("cuda", device=key[1])
            _contexts[key] = ctx
        return ctx


def set_context(device, ctx):
    """Installs `ctx` (a hot.Context of the matching backend) as the shared context of `device`;
    modules create their later layers in it."""
    if not isinstance(ctx, api.Context):
        raise TypeError(f"ctx must be a hot.Context (got {type(ctx).__name__})")
    key = _device_key(device)
    if ctx.backend != key[0]:
        raise ValueError(f"a {ctx.backend} context cannot serve {key[0]} tensors")
    if key[0] == "cuda" and ctx.device != key[1]:
        raise ValueError(f"the hot context runs on CUDA device {ctx.device}, it cannot serve "
                         f"cuda:{key[1]} tensors (one context per device)")
    with _contexts_lock:
        _contexts[key] = ctx


def spec_from_file(path, layer_name):
    """The settings of layer `layer_name` of the spec file `path` as a hot.LayerSpec (loaded in
    a temporary CPU context; HotError when the spec is bad or has no such layer)."""
    with api.Context("cpu") as ctx:
        layer = ctx.layer_from_spec(path, layer_name)
        try:
            return layer.spec()
        finally:
            layer.destroy()


def _batch_tokens(shape):
    if len(shape) == 1:
        return 1, 1
    if len(shape) == 2:
        return 1, shape[0]
    return math.prod(shape[:-2]), shape[-2]


def _empty(shape, dtype, device):
    """An uninitialised tensor for hot to write: on the CPU from the host pool (_host_pool: its
    pages stay mapped from step to step), elsewhere torch.empty."""
    if torch.device(device).type == "cpu":
        return _host_pool.empty(tuple(shape), dtype)
    return torch.empty(tuple(shape), dtype=dtype, device=device)


def _aligned_empty(nbytes, device):
    """A uint8 tensor of nbytes whose data is 16-byte aligned (hot_layer_save's requirement):
    torch's own allocation when it is (torch's CPU and CUDA allocators align to 64 bytes or
    more), else a view into a slightly larger one."""
    buf = _empty((nbytes,), torch.uint8, device)
    if buf.data_ptr() % 16 == 0:
        return buf
    buf = _empty((nbytes + 16,), torch.uint8, device)
    off = (-buf.data_ptr()) % 16
    return buf.narrow(0, off, nbytes)


def _aligned16(t):
    """t, or a temporary aligned copy when its data is not 16-byte aligned (a view at an odd
    offset; hot.h asks 16-byte aligned tensors on CUDA). The copy lives only for the call."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


class _Who:
    """ "HOTLinear(name)" for error messages, formatted only when one is raised."""
    __slots__ = ("core",)

    def __init__(self, core):
        self.core = core

    def __format__(self, spec):
        return format(f"HOTLinear({self.core.hot_spec.name})", spec)

    def __str__(self):
        return format(self, "")


class _Entry:
    """A cached hot layer of one (device, dtype, B, L) with what every call needs of it, looked
    up once: saved_bytes (hot_layer_saved_bytes, fixed per layer) and the output shapes."""
    __slots__ = ("layer", "needs_calibration", "key", "saved_bytes", "gx_shape", "gw_shape")

    def __init__(self, layer, key, needs_calibration):
        self.layer = layer
        self.key = key
        self.needs_calibration = needs_calibration
        self.saved_bytes = layer.saved_bytes
        info = layer._info
        self.gx_shape = (info.T, info.I)
        self.gw_shape = (info.O, info.I)


def _stream(device):
    if device.type == "cuda":
        return torch.cuda.current_stream(device).cuda_stream
    return None


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _follow_torch_threads(layer, dev):
    """Before a CPU call: hot's parallel regions take as many threads as torch's operators
    (torch.get_num_threads(), what torch.set_num_threads set), unless HOT_CPU_THREADS pins the
    context's count (docs/python.md). The bits do not depend on it."""
    if dev.type == "cpu":
        layer._ctx._follow_threads(torch.get_num_threads())


def _device_ctx(dev):
    return torch.cuda.device(dev) if dev.type == "cuda" else _nullctx()


def _refuse_double_backward(module):
    """Raises when the backward runs with grad mode on (torch.autograd.grad(...,
    create_graph=True), backward(create_graph=True)): hot's g_x, g_w, g_b come from C and carry
    no graph, so a gradient of them (a gradient penalty, a Hessian-vector product) would be
    silently zero. Every torch.autograd.Function of this module calls it first, before any step
    is consumed."""
    if torch.is_grad_enabled():
        raise RuntimeError(
            f"HOTLinear({module.hot_spec.name}): a graph of the gradient was requested "
            "(create_graph=True, double backward), but hot's backward is not differentiable: "
            "its gradients would be constants and a gradient of them silently lost; compute "
            "this part with torch (exclude the module from hot.torch.convert, e.g. include=) "
            "or call the backward without create_graph")


class _NonFinite(Exception):
    """The forward's x held NaN or Inf (its save was refused): the backward's gradients are
    NaN."""


def _nonfinite_propagates(e):
    """Whether hot's refusal of a NaN or Inf (HOT_ERR_NONFINITE, CPU backend) becomes NaN
    gradients, as torch's own linear map propagates them (what torch.amp.GradScaler needs to
    skip a step whose scaled gradients overflowed): always, but under
    torch.autograd.set_detect_anomaly(True), where the error is raised with hot's message."""
    return e.status == _lib.Status.ERR_NONFINITE and not torch.is_anomaly_enabled()


class _HOTLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, module, cast=None, kept=None, xc=None):
        # cast: the autocast dtype; xc: x cast to it (made without a graph by _hot_linear, so
        # that g_x goes back to x's own dtype straight from hot's fp32 g_x, without a round trip
        # through the autocast dtype); weight and bias are the parameters, cast here and again in
        # the backward, so no cast copy is kept; kept: what memory.kept_source found for xc (a
        # tensor autograd keeps anyway, and how xc is rebuilt from it)
        if cast is not None:
            wc = weight.to(cast)
            bc = bias.to(cast) if bias is not None else None
        else:
            wc, bc = weight, bias
        if xc is None:
            xc = x
        y = F.linear(xc, wc, bc)
        entry = module._hot_layer(xc, bias is not None)
        layer = entry.layer
        capture = module._hot_take_capture()
        # a frozen weight (no g_w): nothing of x is kept, as torch's linear map keeps nothing
        ctx.no_gw = not ctx.needs_input_grad[1]
        keep = None if ctx.no_gw else _keep_plan(module, xc, entry, kept)
        if ctx.no_gw:
            ctx.save_for_backward(weight, None)
            ctx.rebuild = False
        elif keep is not None:  # no codes now: a reference, the codes are made in the backward
            ctx.save_for_backward(weight, keep[0])
            ctx.rebuild = keep[1]
        else:
            saved = _aligned_empty(entry.saved_bytes, xc.device)
            with _device_ctx(xc.device):
                xa = _aligned16(xc)
                _follow_torch_threads(layer, xc.device)
                try:
                    layer.save_ptr(xa.data_ptr(), _DT[xc.dtype], saved.data_ptr(),
                                   _stream(xc.device))
                except api.HotError as e:
                    if not _nonfinite_propagates(e):
                        raise
                    saved = None  # x not finite: the backward returns NaN gradients
            ctx.save_for_backward(weight, saved)
            ctx.rebuild = False
        if capture is not None:  # x for the capture, beside what the forward saves anyway, so
            # that a recomputation (non-reentrant checkpoint: no capture armed then) saves the
            # same tensors; its version is checked in the backward, as autograd's would be
            ctx.capture_x = (xc, xc._version)
        ctx.hot = (module, entry, xc.shape, xc.dtype, x.dtype, bias is not None, capture)
        ctx.bias_dtype = bias.dtype if bias is not None else None  # g_b in the bias's own dtype
        return y

    @staticmethod
    def backward(ctx, g_y):
        module, entry, x_shape, x_dtype, in_dtype, has_bias, capture = ctx.hot
        _refuse_double_backward(module)
        weight, kept = ctx.saved_tensors[:2]
        need = _needed(ctx, has_bias)
        if not any(need):
            return None, None, None, None, None, None, None
        need_x, need_w, need_b = need
        w = weight if weight.dtype == x_dtype or not (need_x or capture is not None) \
            else weight.to(x_dtype)  # (w is read for g_x only; a capture writes it)
        dev = g_y.device
        g_y = _aligned16((g_y if g_y.dtype == x_dtype else g_y.to(x_dtype)).contiguous())
        x = None
        if ctx.rebuild is not False and need_w:  # x (or what rebuilds it) kept by the forward
            x = _aligned16((kept if ctx.rebuild is None else ctx.rebuild(kept)).contiguous())
        if capture is not None and not getattr(ctx, "captured", False):
            # before hot runs: the capture exists even if hot then fails; once per forward (a
            # graph run backward again with retain_graph writes nothing more)
            cx, version = ctx.capture_x
            if cx._version != version:
                raise RuntimeError(f"HOTLinear({module.hot_spec.name}): the input captured for "
                                   "this backward (capture_next_backward) was modified in place "
                                   "after the forward")
            ctx.captured = True
            B, L = _batch_tokens(tuple(x_shape))
            _capture.capture(capture, module.hot_spec.name,
                             _aligned16(cx.contiguous()).reshape(B, L, x_shape[-1]),
                             w, g_y.reshape(B, L, g_y.shape[-1]))
        w = _aligned16(w.contiguous()) if need_x else w
        module._hot_keeps_x()  # fixes, at this graph task's first call, what a recompute keeps
        step = module._hot_next_step()
        if (not need_w or x is None) and module._hot_basis_undecided(step):
            module._hot_missed_recheck()  # no g_w or no x to measure: the next backward does
        try:
            if need_w and ctx.rebuild is False and kept is None:  # the forward's x was not finite
                raise _NonFinite()
            with _device_ctx(dev):
                g_x, g_w, g_b = _backward_products(module, entry, g_y, w, x, kept, step,
                                                   has_bias, need)
        except (api.HotError, _NonFinite) as e:
            if not isinstance(e, _NonFinite) and not _nonfinite_propagates(e):
                raise
            nan = float("nan")  # as torch's GEMMs would give: non-finite gradients
            return (torch.full(x_shape, nan, dtype=in_dtype, device=dev) if need_x else None,
                    torch.full_like(weight, nan) if need_w else None,
                    torch.full(weight.shape[:1], nan, dtype=ctx.bias_dtype, device=dev)
                    if need_b else None, None, None, None, None)
        gx = g_x.view(x_shape).to(in_dtype) if need_x else None
        gw = g_w.to(weight.dtype) if need_w else None
        gb = g_b.to(ctx.bias_dtype) if need_b else None
        return gx, gw, gb, None, None, None, None


def _graph_task():
    """The id of the autograd graph task running on this thread (a backward), or -1 outside
    one (torch._C._current_graph_task_id, which torch.utils.checkpoint itself reads)."""
    f = getattr(torch._C, "_current_graph_task_id", None)
    return f() if f is not None else -1


def _needed(ctx, has_bias):
    """(g_x, g_w, g_b): the gradients autograd asks for, which are all hot computes
    (hot_layer_backward's NULL outputs): no g_x for an input that needs none, no g_w for a
    frozen weight (whose forward kept nothing of x), no g_b without a trained bias."""
    need_x, need_w, need_b = ctx.needs_input_grad[:3]
    return bool(need_x), bool(need_w and not ctx.no_gw), bool(need_b and has_bias)


def _backward_products(module, entry, g_y, w, x, kept, step, has_bias, need):
    """hot's backward of one call: the basis measured first where it is due, else the codes of
    x made now (x kept or rebuilt: by the module's layer as it is now, a basis chosen since the
    forward) or the codes the forward saved (kept); without g_w nothing saved is read."""
    need_w = need[1]
    if need_w and x is not None and module._hot_basis_undecided(step):
        return _choose_basis(module, entry, x, g_y, w, step, has_bias, need)
    if need_w and x is not None:
        entry = module._hot_layer(x, has_bias)
    saved = None if not need_w else kept if x is None else _save_now(entry, x)
    return _run_backward(module, entry, g_y, w, saved, step, need)


def _keep_plan(module, x, entry, kept):
    """(tensor to keep, rebuild) when the forward keeps no codes, else None: x is kept by its
    neighbour anyway (kept), or the codes would not be smaller than x itself (short sequences
    padded to HLA's block: then x is kept, as nn.Linear keeps it), or the module still has to
    measure its HLA basis (hla_basis="auto": x is kept for that one backward)."""
    if kept is not None:
        return kept
    if module._hot_keeps_x() or entry.saved_bytes >= x.numel() * x.element_size():
        return (x, None)
    return None


def _save_now(entry, x):
    """The codes of x (hot_layer_save) in a buffer of their own, made in the backward."""
    saved = _aligned_empty(entry.saved_bytes, x.device)
    _follow_torch_threads(entry.layer, x.device)
    entry.layer.save_ptr(x.data_ptr(), _DT[x.dtype], saved.data_ptr(), _stream(x.device))
    return saved


def _run_backward(module, entry, g_y, w, saved, step, need):
    """hot's backward of the gradients `need` asks for (g_x, g_w, g_b: bools; saved is read
    only for g_w); the others come back None."""
    layer = entry.layer
    dev, dt = g_y.device, _DT[g_y.dtype]
    stream = _stream(dev)
    g_x = _empty(entry.gx_shape, torch.float32, dev) if need[0] else None
    g_w = _empty(entry.gw_shape, torch.float32, dev) if need[1] else None
    g_b = _empty(entry.gw_shape[:1], torch.float32, dev) if need[2] else None
    _follow_torch_threads(layer, dev)
    if entry.needs_calibration:
        layer.calibrate_ptr(g_y.data_ptr(), dt, step, stream)
        entry.needs_calibration = False
        module._hot_remember_calibration(entry)

    def ptr(t):
        return None if t is None else t.data_ptr()
    layer.backward_ptr(g_y.data_ptr(), w.data_ptr(), dt, ptr(g_x), ptr(g_w), ptr(g_b), ptr(saved),
                       step, stream)
    return g_x, g_w, g_b


def _choose_basis(module, entry, x, g_y, w, step, has_bias, need):
    """hla_basis="auto", the first backward with a g_w: g_w with the spec's rank cut against the
    exact fp32 product g_yᵀ·x of this batch (memory.choose_basis's rule); keeps the cut or
    switches the module to the full basis, and returns the gradients (of `need`) of the basis
    chosen."""
    g_x, g_w, g_b = _run_backward(module, entry, g_y, w, _save_now(entry, x), step, need)
    T = x.numel() // x.shape[-1]
    exact = g_y.reshape(T, -1).float().t() @ x.reshape(T, -1).float()
    err = float((g_w - exact).norm() / exact.norm().clamp_min(1e-30))
    choice = memory.choose_basis(err)
    module._hot_set_basis(choice, err)
    if choice == "cut":
        return g_x, g_w, g_b
    entry = module._hot_layer(x, has_bias)  # made again with the full basis
    return _run_backward(module, entry, g_y, w, _save_now(entry, x), step, need)


def _apply_hot_eager(core, x, weight, bias, cast=None, kept=None, xc=None):
    return _HOTLinearFunction.apply(x, weight, bias, core, cast, kept, xc)


# torch.compile: dynamo cannot trace raw pointers and ctypes calls; the hot call runs eagerly
# between compiled graphs (a graph break), the rest of the model stays compiled. The disabled
# wrapper costs a few microseconds a call, so eager code (not being traced) calls the function
# itself.
_apply_hot_compiled = _apply_hot_eager
_is_compiling = None
if hasattr(torch, "compiler") and hasattr(torch.compiler, "disable"):
    _apply_hot_compiled = torch.compiler.disable(_apply_hot_eager)
    _is_compiling = getattr(torch.compiler, "is_compiling", None)


def _apply_hot(core, x, weight, bias, cast=None, kept=None, xc=None):
    if _is_compiling is None or _is_compiling():
        return _apply_hot_compiled(core, x, weight, bias, cast, kept, xc)
    return _HOTLinearFunction.apply(x, weight, bias, core, cast, kept, xc)


def _autocast_dtype(device_type):
    """The autocast dtype in effect for device_type ("cpu", "cuda"), or None."""
    try:
        if not torch.is_autocast_enabled(device_type):
            return None
        return torch.get_autocast_dtype(device_type)
    except TypeError:  # torch before 2.4: per-device functions
        if device_type == "cpu":
            return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


def _hot_linear(core, x, weight, bias):
    """y = F.linear(x, weight, bias) with hot's backward through `core` (a HOTLinear or an
    attention projection); autocast casts x as autocast's linear does, and weight and bias
    inside the hot function (which keeps the parameters, not cast copies of them)."""
    if not isinstance(x, torch.Tensor):
        core._hot_check(x, weight)  # raises, naming the module
    cast = None
    if x.device.type in ("cpu", "cuda") and x.is_floating_point() and \
            torch.float64 not in (x.dtype, weight.dtype, bias.dtype if bias is not None else None):
        # autocast leaves float64 tensors as they are: then F.linear under autocast (no
        # backward) or the dtype check (hot) decides, as for nn.Linear
        cast = _autocast_dtype(x.device.type)
        cast = cast if cast in _DT else None
    need = torch.is_grad_enabled() and x.numel() > 0 and weight.numel() > 0 and \
        (x.requires_grad or weight.requires_grad or (bias is not None and bias.requires_grad))
    if not need:  # no backward, or no token (an expert no token was routed to) or no output
        # feature: torch's linear map and its backward alone (hot is not called, nothing
        # checked; g_w, g_b are zeros)
        if cast is None:
            return F.linear(x, weight, bias)
        with torch.autocast(x.device.type, enabled=False):
            return F.linear(x.to(cast), weight.to(cast), bias.to(cast) if bias is not None
                            else None)
    if not x.is_contiguous():  # hot reads rows of x: a copy, in the graph (as F.linear takes it)
        x = x.contiguous()
    if cast is None:
        core._hot_check(x, weight)
        return _apply_hot(core, x, weight, bias, None, memory.kept_source(x))
    kept = memory.kept_source(x)
    with torch.autocast(x.device.type, enabled=False):
        if weight.dtype == cast:
            weight = weight.to(cast)
            bias = bias.to(cast) if bias is not None else None
            return _hot_linear(core, x.to(cast), weight, bias)
        with torch.no_grad():  # the cast belongs to the hot function: g_x goes to x's dtype
            xc = x.to(cast)
        if xc is not x:
            kept = memory.cast_rebuild(kept, cast)
        core._hot_check(xc, weight, cast)
        return _apply_hot(core, x, weight, bias, cast, kept, None if xc is x else xc)


def _utf8_tail(text, max_bytes):
    """The longest end of `text` whose UTF-8 encoding has at most max_bytes bytes, cut at a
    character boundary (hot's names are bounded in bytes: HOT_NAME_MAX, with the NUL)."""
    b = text.encode("utf-8")
    if len(b) <= max_bytes:
        return text
    b = b[len(b) - max_bytes:]
    while b and (b[0] & 0xC0) == 0x80:  # a character cut short at the start
        b = b[1:]
    return b.decode("utf-8")


def _layer_name(name):
    """The hot layer name of a module named `name` (messages, debug dumps, captures): characters
    other than letters, digits, "_", "." and "-" become "_", and a name longer than hot's
    HOT_NAME_MAX - 1 bytes keeps its end (the distinguishing part of a qualified name), cut at
    a character boundary."""
    safe = "".join(ch if (ch.isalnum() or ch in "_.-") else "_" for ch in str(name))
    return _utf8_tail(safe, _lib.HOT_NAME_MAX - 1) or "linear"


# ---- the hot entries of a state dict ------------------------------------------------------------

_STEP_LIMIT = 1 << 32
_CAL_GRANS = {int(Gran.TENSOR): "TENSOR", int(Gran.ROW): "ROW", int(Gran.SAMPLE): "SAMPLE"}


def _short(v):
    """A one-line, bounded description of a state dict value for messages."""
    if isinstance(v, torch.Tensor):
        return f"a tensor of shape {tuple(v.shape)} ({v.dtype})" if v.dim() else \
            f"tensor({v.item()!r})"
    r = repr(v).replace("\n", " ")
    return r if len(r) <= 60 else r[:57] + "..."


def _state_int(v, where, lo, hi):
    """v as an int when it is an integer-valued scalar (an int, an integral finite float, a 0-d
    tensor holding one; not a bool) in [lo, hi); else ValueError naming `where`."""
    n = None
    if isinstance(v, torch.Tensor) and v.dim() == 0 and v.dtype != torch.bool and \
            not v.is_complex():
        v = v.item()
    if isinstance(v, bool):
        pass
    elif isinstance(v, numbers.Integral):
        n = int(v)
    elif isinstance(v, numbers.Real) and math.isfinite(float(v)) and float(v).is_integer():
        n = int(float(v))
    if n is None or not lo <= n < hi:
        raise ValueError(f"{where} = {_short(v)} is not an integer in [{lo}, {hi})")
    return n


def _cal_key(k, where):
    """A calibration key "<dtype>,<B>,<L>" (dtype f32, bf16 or f16; B, L >= 1), else ValueError."""
    parts = k.split(",") if isinstance(k, str) else []
    if len(parts) != 3 or parts[0] not in _DT_NAME.values() or \
            not all(p.isdigit() and int(p) >= 1 for p in parts[1:]):
        raise ValueError(f"{where}: key {_short(k)} is not '<f32|bf16|f16>,<batch>,<tokens>'")
    return k


def _parse_hot_state(state, who):
    """(step, calibration) of one hot state {"hot_step": int, "hot_calibration": {key: gran}},
    every entry checked; ValueError naming `who` (the module and the state dict entry) and the
    entry otherwise. Used by load_state_dict of HOTLinear and of each in-projection of
    HOTMultiheadAttention."""
    if not isinstance(state, dict) or "hot_step" not in state:
        raise ValueError(f"{who}: not a hot state (a dict with hot_step; got {_short(state)})")
    unknown = sorted(set(map(str, state)) - {"hot_step", "hot_calibration", "hot_hla_basis",
                                             "hot_hla_recheck"})
    if unknown:
        raise ValueError(f"{who}: unknown entries {', '.join(unknown)} (hot_step, "
                         "hot_calibration, hot_hla_basis, hot_hla_recheck)")
    step = _state_int(state["hot_step"], f"{who}['hot_step']", 0, _STEP_LIMIT)
    raw = state.get("hot_calibration", {})
    if not isinstance(raw, dict):
        raise ValueError(f"{who}['hot_calibration'] = {_short(raw)} is not a dict")
    cal = {}
    for k, v in raw.items():
        where = f"{who}['hot_calibration']"
        key = _cal_key(k, where)
        g = _state_int(v, f"{where}[{key!r}]", 0, max(_CAL_GRANS) + 1)
        if g not in _CAL_GRANS:
            raise ValueError(f"{where}[{key!r}] = {g} is not a granularity ("
                             + ", ".join(f"{n} = {i}" for i, n in _CAL_GRANS.items()) + ")")
        cal[key] = g
    return step, cal


def _state_where(module, what):
    """'HOTLinear(name): state dict entry <prefix>_extra_state' for messages: the prefix is the
    module's path in the state dict being loaded (set by _load_tolerating_missing_state)."""
    prefix = getattr(module, "_hot_state_prefix", None)
    return f"{what}: state dict entry {prefix or ''}_extra_state"


class _HotCore:
    """The hot state of one linear map: spec, context, the layers per shape, the Philox stream
    (tag) and step, the LQS choices; shared by HOTLinear and the projections of
    HOTMultiheadAttention. Needs in_features, out_features set by the owner."""

    def _hot_setup(self, spec, spec_layer, recipe, context, name, max_cached_shapes, tag,
                   has_bias):
        if not isinstance(name, str):
            raise TypeError(f"HOTLinear: name must be a str (got {type(name).__name__})")
        if tag is not None and not isinstance(tag, str):
            raise TypeError(f"HOTLinear({name}): tag must be a str (got {type(tag).__name__})")
        if isinstance(max_cached_shapes, bool) or \
                not isinstance(max_cached_shapes, numbers.Integral):
            raise TypeError(f"HOTLinear({name}): max_cached_shapes must be an int (got "
                            f"{_short(max_cached_shapes)})")
        if isinstance(spec, os.PathLike):
            spec = os.fspath(spec)
        if isinstance(spec, str):
            if not spec_layer:
                raise ValueError(f"HOTLinear({name}): spec={spec!r} needs spec_layer= (the "
                                 "layer's name in the spec file)")
            tmpl = spec_from_file(spec, spec_layer)
        elif spec is None:
            tmpl = api.LayerSpec(self.in_features, self.out_features, recipe=recipe)
        elif isinstance(spec, api.LayerSpec):
            tmpl = spec.copy()
        else:
            raise TypeError(f"HOTLinear({name}): spec must be None, a hot.LayerSpec or a spec "
                            f"file path (got {type(spec).__name__})")
        if tmpl.in_features not in (0, self.in_features) or \
                tmpl.out_features not in (0, self.out_features):
            raise ValueError(f"HOTLinear({name}): the spec describes {tmpl.in_features} -> "
                             f"{tmpl.out_features} features, the module {self.in_features} -> "
                             f"{self.out_features}")
        tmpl.c.in_features = self.in_features
        tmpl.c.out_features = self.out_features
        tmpl.c.bias = 1 if has_bias else 0
        tmpl.name = _layer_name(name)
        if context is not None and not isinstance(context, api.Context):
            raise TypeError(f"HOTLinear({name}): context must be a hot.Context")
        if int(max_cached_shapes) < 1:
            raise ValueError(f"HOTLinear({name}): max_cached_shapes must be >= 1")
        self.hot_spec = tmpl
        self.hot_context = context
        self.hot_step = 0
        self.max_cached_shapes = int(max_cached_shapes)
        self._hot_layers = collections.OrderedDict()
        self._hot_lock = threading.Lock()
        self._hot_capture = None
        self._hot_calibration = {}
        self._hot_warn_untagged = tag is None
        self.hot_hla_basis, self.hot_hla_choice, self.hot_hla_error = "spec", None, None
        self._hot_recheck_missed = False
        self.hot_set_tag(tag if tag is not None else f"HOTLinear#{next(_untagged)}")

    # -- identity and state
    def hot_set_tag(self, tag):
        """Names the module's random stream: its layers draw from the stream that
        hot_layer_create_named gives this tag (Philox layer id stream_id(tag), key
        hot.stream_key(tag, seed)); layers made before keep theirs: they are dropped from the
        cache."""
        api._stream_bytes(tag)  # a non-empty str C can receive, else ValueError
        self.hot_tag = tag
        self.hot_stream_id = stream_id(tag)
        if not tag.startswith("HOTLinear#"):
            self._hot_warn_untagged = False
        lock = getattr(self, "_hot_lock", None)
        if lock is not None:
            with lock:
                self._hot_layers.clear()

    def _hot_state(self):
        with self._hot_lock:
            st = {"hot_step": int(self.hot_step),
                  "hot_calibration": {k: int(v) for k, v in self._hot_calibration.items()}}
            return self._hot_basis_state(st)

    def _hot_load_state(self, state, who):
        step, cal = _parse_hot_state(state, who)
        basis = self._hot_basis_from_state(state, who)
        with self._hot_lock:
            self.hot_step = step
            self._hot_calibration = cal
            if basis is not None:
                self.hot_hla_choice, self.hot_hla_error, self._hot_recheck_missed = basis
            else:
                self._hot_recheck_missed = False
            self._hot_layers.clear()  # rebuilt from the restored choices

    # -- HLA basis chosen by measurement (hla_basis="auto"; memory.choose_basis)
    def hot_set_hla_basis(self, mode):
        """"spec": HLA's basis as the spec says; "auto": the first backward measures the
        spec's rank cut against the exact g_w of that batch and keeps it or switches this module
        to the full basis (memory.choose_basis); the choice is kept in the state dict."""
        if mode not in ("spec", "auto"):
            raise ValueError(f"HOTLinear({self.hot_spec.name}): hla_basis must be 'spec' or "
                             f"'auto' (got {mode!r})")
        self.hot_hla_basis = mode

    def _hot_basis_undecided(self, step=None):
        """Whether the backward with Philox step `step` (default: the next one) measures the
        basis: the first, and while the cut is kept, memory.basis_recheck_due's (or the first
        with a g_w after one of those ran without: _hot_missed_recheck)."""
        if self.hot_hla_basis != "auto" or self.hot_hla_choice == "full":
            return False  # (every call asks: the spec is looked at only while undecided)
        if self.hot_hla_choice == "cut" and not getattr(self, "_hot_recheck_missed", False) and \
                not memory.basis_recheck_due(self.hot_step if step is None else step):
            return False
        c = self.hot_spec.c
        return bool(c.hla.enabled) and c.hla.selection != int(api.Selection.FULL) and \
            not memory.assuming_full()

    def _hot_keeps_x(self):
        """Whether a forward keeps x for a basis measurement (_hot_basis_undecided as the
        forwards of this step saw it). A forward run inside a backward is a recomputation
        (torch.utils.checkpoint, non-reentrant: the tensors it saves must be those the first
        forward saved) and answers as the forwards before that backward did: what the module
        answered at the first forward or backward of that backward's graph task, before any of
        its backwards there changed the answer (a module called in two checkpointed regions: the
        first region's backward measures, or passes a re-check on, before the second region is
        recomputed). Outside a backward: the module's answer now."""
        task = _graph_task()
        if task < 0:
            return self._hot_basis_undecided()
        with self._hot_lock:
            seen = getattr(self, "_hot_task_keeps_x", None)
            if seen is None or seen[0] != task:
                seen = self._hot_task_keeps_x = (task, self._hot_basis_undecided())
            return seen[1]

    def _hot_missed_recheck(self):
        """The backward due to measure the kept cut computed no g_w (a frozen weight) or has no
        x (its forward ran before the re-check came due and kept codes: a module called several
        times before its backwards): the next backward with a g_w measures instead (its forward
        keeps x for it)."""
        with self._hot_lock:
            if self.hot_hla_choice == "cut":
                self._hot_recheck_missed = True

    def _hot_set_basis(self, choice, err):
        with self._hot_lock:
            self.hot_hla_choice, self.hot_hla_error = choice, float(err)
            self._hot_recheck_missed = False
            if choice == "full":
                self._hot_layers.clear()  # made again with the full basis

    def _hot_basis_state(self, st):
        if self.hot_hla_choice is not None:
            st["hot_hla_basis"] = [self.hot_hla_choice, float(self.hot_hla_error)]
        if self.hot_hla_choice == "cut" and getattr(self, "_hot_recheck_missed", False):
            st["hot_hla_recheck"] = True  # a re-check passed on, made at the next g_w
        return st

    @staticmethod
    def _hot_basis_from_state(state, who):
        """(choice, error, whether a re-check was passed on) of the state's HLA basis, or
        None."""
        b = state.get("hot_hla_basis")
        r = state.get("hot_hla_recheck", False)
        bad_r = ValueError(f"{who}['hot_hla_recheck'] = {_short(r)} is not true with "
                           "hot_hla_basis 'cut'")
        if b is None:
            if r is not False:
                raise bad_r
            return None
        bad = ValueError(f"{who}['hot_hla_basis'] = {_short(b)} is not ['cut' or 'full', "
                         "a finite error >= 0]")
        if not isinstance(b, (list, tuple)) or len(b) != 2 or b[0] not in ("cut", "full") or \
                isinstance(b[1], bool) or not isinstance(b[1], (int, float)) or \
                not math.isfinite(float(b[1])) or float(b[1]) < 0:
            raise bad
        if r is not False and (r is not True or b[0] != "cut"):  # passed on by a kept cut only
            raise bad_r
        return str(b[0]), float(b[1]), r

    def _hot_next_step(self):
        with self._hot_lock:
            s = self.hot_step
            # a plain int attribute: object.__setattr__ is what nn.Module.__setattr__ ends in for
            # one, without its checks (a few microseconds a call)
            object.__setattr__(self, "hot_step", (s + 1) % (1 << 32))
            return s

    def _hot_remember_calibration(self, entry):
        gran = entry.layer.info().gran
        with self._hot_lock:
            self._hot_calibration[entry.key] = int(gran)

    @property
    def hot_capture_pending(self):
        """The path capture_next_backward armed and no forward has claimed yet, else None."""
        return getattr(self, "_hot_capture", None)

    def _hot_take_capture(self):
        if self.__dict__.get("_hot_capture") is None:  # nothing armed (a set now is seen next)
            return None
        with self._hot_lock:
            path = getattr(self, "_hot_capture", None)
            object.__setattr__(self, "_hot_capture", None)
            return path

    def hot_layers(self):
        """The cached hot.Layer objects, least recently used first."""
        with self._hot_lock:
            return [e.layer for e in self._hot_layers.values()]

    def hot_check(self):
        """Waits for this module's backwards still in flight on the GPU (their events only, not
        the whole stream; nothing on the CPU backend) and raises hot.HotError (status
        ERR_RANGE) for the first one whose g_x, g_w or g_b overflowed fp32 and was not reported
        yet; returns None otherwise. Each overflow is reported once."""
        for layer in self.hot_layers():
            layer.check()

    def _hot_layer(self, x, has_bias=None):
        """The cached hot layer of x's (device, dtype, B, L) computing g_b iff has_bias (the
        module's bias as it is now: a bias set or removed after construction; None: as the
        module was made)."""
        if has_bias is None:
            has_bias = bool(self.hot_spec.c.bias)
        B, L = _batch_tokens(tuple(x.shape))
        key = (x.device, x.dtype, B, L, has_bias)
        with self._hot_lock:
            e = self._hot_layers.get(key)
            if e is not None:
                self._hot_layers.move_to_end(key)
                return e
            cal_key = f"{_DT_NAME[x.dtype]},{B},{L}"
            ctx = self.hot_context if self.hot_context is not None else context_for(x.device)
            want = "cpu" if x.device.type == "cpu" else "cuda"
            if ctx.backend != want:
                raise ValueError(f"HOTLinear({self.hot_spec.name}): its hot context runs the "
                                 f"{ctx.backend} backend, the input is on {x.device}")
            spec = self.hot_spec.copy()
            spec.c.dtype = int(_DT[x.dtype])
            spec.c.bias = 1 if has_bias else 0
            if ctx.backend == "cuda" and ctx.device != _device_key(x.device)[1]:
                raise ValueError(f"HOTLinear({self.hot_spec.name}): its hot context runs on CUDA "
                                 f"device {ctx.device}, the input is on {x.device}")
            if self.hot_hla_choice == "full" or (memory.assuming_full() and
                                                 self.hot_hla_basis == "auto" and
                                                 self.hot_hla_choice is None):
                spec.c.hla.selection = int(api.Selection.FULL)
            auto = bool(spec.c.hq.enabled) and spec.c.hq.g.gran == int(Gran.AUTO)
            known = self._hot_calibration.get(cal_key) if auto else None
            if known is not None:  # calibrated before (this shape, a checkpoint, ...)
                spec.c.hq.g.gran = known
            if getattr(self, "_hot_warn_untagged", False):
                self._hot_warn_untagged = False
                warnings.warn(f"HOTLinear({self.hot_spec.name}) has no tag: its random stream "
                              f"is that of {self.hot_tag!r}, numbered in construction order, so "
                              "a process that builds modules in another order draws other "
                              "numbers; pass tag= or use hot.torch.convert(model), which tags "
                              "modules by their qualified names", RuntimeWarning, stacklevel=4)
            layer = ctx.create_layer(spec=spec, batch=B, tokens=L, stream=self.hot_tag)
            e = _Entry(layer, cal_key, layer._info.gran_auto)
            self._hot_layers[key] = e
            evicted = []
            while len(self._hot_layers) > self.max_cached_shapes:
                # destroyed when no graph holds it; an overflow it has not reported yet is
                # raised now (a wait for its last backwards only) rather than lost with it
                evicted.append(self._hot_layers.popitem(last=False)[1].layer)
        for old in evicted:
            old.check()
        return e

    def _hot_check(self, x, weight, weight_dtype=None):
        """weight_dtype: the dtype weight is cast to for the call (autocast), else its own."""
        who = _Who(self)
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{who}: input must be a torch.Tensor (got {type(x).__name__})")
        if x.dtype not in _DT:
            raise TypeError(f"{who}: input dtype {x.dtype} is not supported (float32, bfloat16, "
                            "float16)")
        if x.dtype != (weight_dtype or weight.dtype):
            raise TypeError(f"{who}: input dtype {x.dtype} differs from the weight's "
                            f"{weight_dtype or weight.dtype}")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"{who}: input shape {tuple(x.shape)} must end in in_features = "
                             f"{self.in_features}")
        if x.device != weight.device:
            raise ValueError(f"{who}: input on {x.device}, weight on {weight.device}")
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{who}: input on {x.device}: hot runs on cpu and cuda tensors")

    def _hot_getstate(self, state):
        # copy.deepcopy / pickle: the hot layers are a per-object cache (rebuilt on demand), the
        # lock is per object; a context given by the caller is shared by a deepcopy and cannot
        # be pickled (hot.Context raises a TypeError saying so).
        state["_hot_layers"] = collections.OrderedDict()
        state["_hot_lock"] = None
        state["_hot_capture"] = None  # a pending capture belongs to the original module
        state["_hot_calibration"] = dict(state.get("_hot_calibration", {}))
        return state


def _load_tolerating_missing_state(module, super_load, state_dict, prefix, local_metadata,
                                   strict, missing_keys, unexpected_keys, error_msgs):
    """load_state_dict of a HOT module: a state dict without the hot entry (an nn.Linear or
    nn.MultiheadAttention checkpoint) loads and keeps the hot state as it is."""
    key = prefix + "_extra_state"
    had = key in state_dict
    module._hot_state_prefix = prefix  # named by the messages of set_extra_state
    try:
        super_load(state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys,
                   error_msgs)
    finally:
        module._hot_state_prefix = None
    if not had and key in missing_keys:
        missing_keys.remove(key)


class HOTLinear(_HotCore, nn.Linear):
    """torch.nn.Linear whose backward runs hot (see the module docstring).

    Extra keyword arguments:
      spec      None (the recipe's defaults), a hot.LayerSpec (its HQ/HLA/ABC settings; sizes,
                bias and dtype come from the module and the input), or the path of a spec file
                together with spec_layer (the name of the layer in it)
      recipe    "hot" (default), "paper", "paper_code", "nvfp4" (the CPU backend; on a GPU planned
                for sm_120a only, not verified there: docs/nvfp4.md):
                defaults when spec is None
      context   a hot.Context for this module's layers (default: the shared one per device)
      name      the hot layer's name (messages); convert() uses the module's qualified name
      tag       names the module's random stream (its Philox key hot.stream_key(tag, seed),
                layer id hot.layer_id_for(tag)); default: `name` when given, else
                "HOTLinear#k" (k: HOTLinear modules made before in this process). convert() uses
                the qualified name.
      max_cached_shapes  hot layers kept per module (one per input shape, dtype and device)

    State dict: nn.Linear's weight and bias, plus `_extra_state` holding hot_step and the LQS
    choices (restored by load_state_dict; absent from a plain nn.Linear checkpoint, which loads).

    Overflow (HOT_ERR_RANGE, see the module docstring): raised as hot.HotError by the next
    forward/backward of the same shape, by hot_check(), or by the forward that evicts the
    layer from the shape cache.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                 spec=None, spec_layer=None, recipe="hot", context=None, name=None, tag=None,
                 max_cached_shapes=8):
        nn.Linear.__init__(self, in_features, out_features, bias=bias, device=device,
                           dtype=dtype)
        self._hot_setup(spec, spec_layer, recipe, context, name or "linear", max_cached_shapes,
                        tag if tag is not None else name, self.bias is not None)

    @classmethod
    def from_linear(cls, linear, **kwargs):
        """A HOTLinear sharing `linear`'s weight and bias Parameters (no copy), its forward
        and backward hooks, its training flag and the attributes set on it beyond nn.Linear's
        own (a user's flags and markers). TypeError when `linear` is not an nn.Linear;
        ValueError for an uninitialised lazy module (nn.LazyLinear before its first forward) and
        for one whose computation a HOTLinear cannot take over (a parametrized or computed
        weight, parameters or submodules of its own)."""
        if not isinstance(linear, nn.Linear):
            raise TypeError(f"HOTLinear.from_linear: linear must be a torch.nn.Linear (got "
                            f"{type(linear).__name__})")
        if _uninitialized(linear):
            raise ValueError(f"HOTLinear.from_linear: {type(linear).__name__} is an "
                             "uninitialised lazy module (its sizes are known after its first "
                             "forward); run it once first")
        why = _not_taken_over(linear)
        if why is not None:
            raise ValueError(f"HOTLinear.from_linear: {type(linear).__name__}: {why}")
        m = cls.__new__(cls)
        nn.Module.__init__(m)
        m.training = linear.training
        m.in_features, m.out_features = linear.in_features, linear.out_features
        m.weight = linear.weight
        m.bias = linear.bias
        _share_hooks(m, linear)
        for k, v in vars(linear).items():  # attributes of the user's own (flags, markers)
            if k not in vars(m) and k not in _MODULE_INTERNALS:
                object.__setattr__(m, k, v)
        name = kwargs.pop("name", None)
        tag = kwargs.pop("tag", None)
        m._hot_setup(kwargs.pop("spec", None), kwargs.pop("spec_layer", None),
                     kwargs.pop("recipe", "hot"), kwargs.pop("context", None),
                     name or "linear", kwargs.pop("max_cached_shapes", 8),
                     tag if tag is not None else name, m.bias is not None)
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(kwargs)}")
        return m

    def __getstate__(self):
        return self._hot_getstate(dict(super().__getstate__()))

    def __setstate__(self, state):
        super().__setstate__(state)
        self._hot_lock = threading.Lock()

    def get_extra_state(self):
        return self._hot_state()

    def set_extra_state(self, state):
        self._hot_load_state(state, _state_where(self, f"HOTLinear({self.hot_spec.name})"))

    def _load_from_state_dict(self, state_dict, prefix, *args):
        _load_tolerating_missing_state(self, super()._load_from_state_dict, state_dict, prefix,
                                       *args)

    def extra_repr(self):
        return super().extra_repr() + \
            f", hot={self.hot_spec.name!r} recipe={self.hot_spec.recipe.name.lower()}"

    def forward(self, x):
        return _hot_linear(self, x, self.weight, self.bias)


class _HotProjection(_HotCore):
    """One input projection of a HOTMultiheadAttention (weights owned by the attention module:
    a slice of in_proj_weight, or q/k/v_proj_weight). Not an nn.Module: its state travels in the
    attention module's state dict."""

    def __init__(self, in_features, out_features, has_bias, spec, recipe, context, name, tag,
                 max_cached_shapes):
        self.in_features, self.out_features = in_features, out_features
        if spec is not None:
            spec = spec.copy()
            spec.c.in_features = in_features
            spec.c.out_features = out_features
        self._hot_setup(spec, None, recipe, context, name, max_cached_shapes, tag, has_bias)

    def __getstate__(self):
        return self._hot_getstate(dict(self.__dict__))

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._hot_lock = threading.Lock()


# The in-projections of an attention call: (role, which rows of in_proj_weight, or which separate
# weight). "qkv": self-attention (query is key is value), one GEMM on the packed weight; "q" and
# "kv": key is value but not query; "q", "k", "v": three.
_ROWS = {"qkv": (0, 3), "q": (0, 1), "kv": (1, 3), "k": (1, 2), "v": (2, 3)}


class HOTMultiheadAttention(nn.MultiheadAttention):
    """torch.nn.MultiheadAttention whose input projections (the packed in_proj_weight, or
    q/k/v_proj_weight) and output projection (out_proj, a HOTLinear) run hot's backward; the
    forward computes what nn.MultiheadAttention computes, with the same operations in the same
    order (its slow path: F.multi_head_attention_forward), so the same bits.

    The projections see the tokens of each sample as the HLA axis ([N, L, E] whichever
    `batch_first`). Self-attention (query is key is value) projects with one hot layer on the
    packed [3E, E] weight ("in_proj.qkv"); key is value: "in_proj.q" and "in_proj.kv"; else
    "in_proj.q", ".k", ".v". Each has its own random stream (tag "<tag>.in_proj.<role>") and
    step; out_proj is a HOTLinear tagged "<tag>.out_proj". Without grad mode (or when nothing
    needs a gradient) the call is nn.MultiheadAttention's own, fast path included.

    Extra keyword arguments: spec (a hot.LayerSpec whose HQ/HLA/ABC settings every projection
    takes; sizes come from the module), recipe, context, tag (default "MultiheadAttention#k"),
    max_cached_shapes — as HOTLinear's."""

    def __init__(self, embed_dim, num_heads, *args, spec=None, recipe="hot", context=None,
                 tag=None, max_cached_shapes=8, in_proj_spec=None, **kwargs):
        super().__init__(embed_dim, num_heads, *args, **kwargs)
        self._hot_mha_setup(spec, in_proj_spec, recipe, context, tag, max_cached_shapes)

    @classmethod
    def from_mha(cls, mha, *, spec=None, in_proj_spec=None, recipe="hot", context=None, tag=None,
                 max_cached_shapes=8):
        """A HOTMultiheadAttention sharing `mha`'s Parameters (no copy) and hooks; its out_proj
        becomes a HOTLinear sharing out_proj's. in_proj_spec: settings of the in-projections
        when they differ from `spec` (convert with a spec file). TypeError when `mha` is not an
        nn.MultiheadAttention; ValueError when a HOT module cannot take over its computation
        (a parametrized or computed weight, parameters or submodules of its own)."""
        if not isinstance(mha, nn.MultiheadAttention):
            raise TypeError(f"HOTMultiheadAttention.from_mha: mha must be a "
                            f"torch.nn.MultiheadAttention (got {type(mha).__name__})")
        why = _not_taken_over(mha)
        if why is not None:
            raise ValueError(f"HOTMultiheadAttention.from_mha: {type(mha).__name__}: {why}")
        m = cls.__new__(cls)
        m.__dict__.update({k: (v.copy() if isinstance(v, dict) else v)
                           for k, v in mha.__dict__.items()})
        _share_hooks(m, mha)
        m._hot_mha_setup(spec, in_proj_spec, recipe, context, tag, max_cached_shapes)
        return m

    def _hot_mha_setup(self, spec, in_proj_spec, recipe, context, tag, max_cached_shapes):
        tag = tag if tag is not None else f"MultiheadAttention#{next(_untagged)}"
        api._stream_bytes(tag)  # a non-empty str C can receive, else ValueError
        if spec is not None and not isinstance(spec, api.LayerSpec):
            raise TypeError(f"HOTMultiheadAttention({tag}): spec must be None or a hot.LayerSpec "
                            f"(got {type(spec).__name__})")
        self.hot_tag = tag
        self._hot_opts = dict(spec=in_proj_spec if in_proj_spec is not None else spec,
                              recipe=recipe, context=context,
                              max_cached_shapes=max_cached_shapes)
        self._hot_in = {}
        self._hot_in_pending = {}
        self._hot_opts["hla_basis"] = "spec"
        out_spec = None
        if spec is not None:
            out_spec = spec.copy()
            out_spec.c.in_features = out_spec.c.out_features = 0
        if not isinstance(self.out_proj, HOTLinear):
            self.out_proj = HOTLinear.from_linear(self.out_proj, spec=out_spec, recipe=recipe,
                                                  context=context, name=f"{tag}.out_proj",
                                                  max_cached_shapes=max_cached_shapes)
        else:
            self.out_proj.hot_set_tag(f"{tag}.out_proj")

    def hot_set_tag(self, tag):
        """Names the random streams: "<tag>.in_proj.<role>" and "<tag>.out_proj"."""
        api._stream_bytes(tag)  # a non-empty str C can receive, else ValueError
        self.hot_tag = tag
        for role, p in self._hot_in.items():
            p.hot_set_tag(f"{tag}.in_proj.{role}")
        self.out_proj.hot_set_tag(f"{tag}.out_proj")

    # -- the projections
    def _hot_projection(self, role, in_features, out_features, has_bias):
        p = self._hot_in.get(role)
        if p is None:
            o = self._hot_opts
            name = f"{self.hot_tag}.in_proj.{role}"
            p = _HotProjection(in_features, out_features, has_bias, o["spec"], o["recipe"],
                               o["context"], name, name, o["max_cached_shapes"])
            p.hot_set_hla_basis(o.get("hla_basis", "spec"))
            pending = self._hot_in_pending.pop(role, None)
            if pending is not None:  # restored from a state dict before the first use
                p._hot_load_state(pending, f"HOTMultiheadAttention({self.hot_tag})")
            self._hot_in[role] = p
        return p

    def hot_set_hla_basis(self, mode):
        """HOTLinear.hot_set_hla_basis for every projection, out_proj included."""
        self.out_proj.hot_set_hla_basis(mode)
        self._hot_opts["hla_basis"] = mode
        for p in self._hot_in.values():
            p.hot_set_hla_basis(mode)

    def hot_projections(self):
        """{role: projection} of the in-projections made so far, plus "out_proj"."""
        d = {f"in_proj.{r}": p for r, p in sorted(self._hot_in.items())}
        d["out_proj"] = self.out_proj
        return d

    def hot_layers(self):
        return [layer for p in self._hot_in.values() for layer in p.hot_layers()] + \
            self.out_proj.hot_layers()

    def hot_check(self):
        for p in list(self._hot_in.values()):
            p.hot_check()
        if isinstance(self.out_proj, HOTLinear):
            self.out_proj.hot_check()

    def get_extra_state(self):
        st = {r: s for r, s in self._hot_in_pending.items()}
        st.update({r: p._hot_state() for r, p in self._hot_in.items()})
        return {"in_proj": st}

    def set_extra_state(self, state):
        where = _state_where(self, f"HOTMultiheadAttention({self.hot_tag})")
        if not isinstance(state, dict) or not isinstance(state.get("in_proj"), dict):
            raise ValueError(f"{where}: not a hot state (a dict with in_proj; got "
                             f"{_short(state)})")
        unknown = sorted(set(map(str, state)) - {"in_proj"})
        if unknown:
            raise ValueError(f"{where}: unknown entries {', '.join(unknown)} (in_proj)")
        parsed = {}
        for role, s in state["in_proj"].items():
            if role not in _ROWS:
                raise ValueError(f"{where}['in_proj']: unknown projection {_short(role)} "
                                 f"({', '.join(_ROWS)})")
            who = f"{where}['in_proj'][{role!r}]"
            parsed[role] = _parse_hot_state(s, who) + (_HotCore._hot_basis_from_state(s, who),)
        for role, (step, cal, basis) in parsed.items():  # all checked before any is applied
            state_ok = {"hot_step": step, "hot_calibration": cal}
            if basis is not None:  # the HLA basis the projection chose (hla_basis="auto")
                state_ok["hot_hla_basis"] = list(basis[:2])
                if basis[2]:
                    state_ok["hot_hla_recheck"] = True
            if role in self._hot_in:
                self._hot_in[role]._hot_load_state(state_ok, where)
            else:
                self._hot_in_pending[role] = state_ok

    def _load_from_state_dict(self, state_dict, prefix, *args):
        _load_tolerating_missing_state(self, super()._load_from_state_dict, state_dict, prefix,
                                       *args)

    def __setstate__(self, state):
        super().__setstate__(state)
        self.__dict__.setdefault("_hot_in_pending", {})

    def _proj(self, role, x, weight, bias, rows):
        """F.linear(x, weight rows, bias rows) of x [L, N, E_in] (sequence first, as the
        functional form holds it) through hot with the tokens of each sample as HLA's axis;
        returns [L, N, O] (a transposed view of the [N, L, O] result)."""
        if rows is not None:
            E = self.embed_dim
            weight = weight[rows[0] * E:rows[1] * E]
            bias = bias[rows[0] * E:rows[1] * E] if bias is not None else None
        p = self._hot_projection(role, weight.shape[1], weight.shape[0], bias is not None)
        xb = x.transpose(0, 1)
        if not xb.is_contiguous():
            xb = xb.contiguous()
        return _hot_linear(p, xb, weight, bias).transpose(0, 1)

    def _in_projection(self, query, key, value):
        E = self.embed_dim
        if self._qkv_same_embed_dim:
            w, b = self.in_proj_weight, self.in_proj_bias
            if key is value:
                if query is key:  # self-attention: one GEMM on the packed weight
                    proj = self._proj("qkv", query, w, b, _ROWS["qkv"])
                    proj = proj.unflatten(-1, (3, E)).unsqueeze(0).transpose(0, -2) \
                        .squeeze(-2).contiguous()
                    return proj[0], proj[1], proj[2]
                q = self._proj("q", query, w, b, _ROWS["q"]).contiguous()
                kv = self._proj("kv", key, w, b, _ROWS["kv"])
                kv = kv.unflatten(-1, (2, E)).unsqueeze(0).transpose(0, -2).squeeze(-2) \
                    .contiguous()
                return q, kv[0], kv[1]
            return tuple(self._proj(r, t, w, b, _ROWS[r]).contiguous()
                         for r, t in (("q", query), ("k", key), ("v", value)))
        b = self.in_proj_bias
        bq, bk, bv = b.chunk(3) if b is not None else (None, None, None)
        return (self._proj("q", query, self.q_proj_weight, bq, None).contiguous(),
                self._proj("k", key, self.k_proj_weight, bk, None).contiguous(),
                self._proj("v", value, self.v_proj_weight, bv, None).contiguous())

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True,
                attn_mask=None, average_attn_weights=True, is_causal=False):
        tensors = [query, key, value] + list(self.parameters())
        if not torch.is_grad_enabled() or not any(
                isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
            return super().forward(query, key, value, key_padding_mask=key_padding_mask,
                                   need_weights=need_weights, attn_mask=attn_mask,
                                   average_attn_weights=average_attn_weights,
                                   is_causal=is_causal)
        if query.is_nested or key.is_nested or value.is_nested:
            raise ValueError(f"HOTMultiheadAttention({self.hot_tag}): nested tensors are not "
                             "supported with grad")
        is_batched = query.dim() == 3
        key_padding_mask = F._canonical_mask(mask=key_padding_mask,
                                             mask_name="key_padding_mask",
                                             other_type=F._none_or_dtype(attn_mask),
                                             other_name="attn_mask", target_type=query.dtype)
        attn_mask = F._canonical_mask(mask=attn_mask, mask_name="attn_mask", other_type=None,
                                      other_name="", target_type=query.dtype, check_other=False)
        if self.batch_first and is_batched:
            if key is value:
                if query is key:
                    query = key = value = query.transpose(1, 0)
                else:
                    query, key = (x.transpose(1, 0) for x in (query, key))
                    value = key
            else:
                query, key, value = (x.transpose(1, 0) for x in (query, key, value))
        out, weights = self._attention(query, key, value, key_padding_mask, need_weights,
                                       attn_mask, average_attn_weights, is_causal)
        if self.batch_first and is_batched:
            return out.transpose(1, 0), weights
        # [L, N, E] contiguous, as torch's (out is a transposed view of out_proj's [N, L, E])
        return out.contiguous(), weights

    def _attention(self, query, key, value, key_padding_mask, need_weights, attn_mask,
                   average_attn_weights, is_causal):
        """F.multi_head_attention_forward step by step, the projections through hot."""
        num_heads = self.num_heads
        is_batched = F._mha_shape_check(query, key, value, key_padding_mask, attn_mask,
                                        num_heads)
        if not is_batched:
            query, key, value = query.unsqueeze(1), key.unsqueeze(1), value.unsqueeze(1)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        tgt_len, bsz, embed_dim = query.shape
        key_padding_mask, attn_mask, is_causal = self._canonical_masks(
            query, key_padding_mask, attn_mask, need_weights, is_causal)
        self._check_shapes(key, value, embed_dim)
        q, k, v = self._in_projection(query, key, value)
        attn_mask = self._checked_attn_mask(attn_mask, tgt_len, key.shape[0], bsz)
        k, v, attn_mask, key_padding_mask = self._extra_keys(k, v, attn_mask, key_padding_mask,
                                                             bsz)
        head_dim = embed_dim // num_heads
        q = q.view(tgt_len, bsz * num_heads, head_dim).transpose(0, 1)
        k = k.view(k.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        v = v.view(v.shape[0], bsz * num_heads, head_dim).transpose(0, 1)
        if self.add_zero_attn:
            zero = (bsz * num_heads, 1, head_dim)
            k = torch.cat([k, torch.zeros(zero, dtype=k.dtype, device=k.device)], dim=1)
            v = torch.cat([v, torch.zeros(zero, dtype=v.dtype, device=v.device)], dim=1)
            attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)
        src_len = k.size(1)
        attn_mask = self._with_padding(attn_mask, key_padding_mask, bsz, src_len)
        dropout_p = self.dropout if self.training else 0.0
        if need_weights:
            out, w = self._attend_weights(q, k, v, attn_mask, dropout_p, is_causal,
                                          (bsz, tgt_len, src_len, embed_dim),
                                          average_attn_weights)
            if not is_batched:
                out, w = out.squeeze(1), w.squeeze(0)
            return out, w
        out = self._attend_sdpa(q, k, v, attn_mask, dropout_p, is_causal,
                                (bsz, tgt_len, src_len, embed_dim))
        if not is_batched:
            out = out.squeeze(1)
        return out, None

    @staticmethod
    def _canonical_masks(query, key_padding_mask, attn_mask, need_weights, is_causal):
        """The masks as nn.MultiheadAttention canonicalizes them, and the causal hint."""
        key_padding_mask = F._canonical_mask(mask=key_padding_mask,
                                             mask_name="key_padding_mask",
                                             other_type=F._none_or_dtype(attn_mask),
                                             other_name="attn_mask", target_type=query.dtype)
        if is_causal and attn_mask is None:
            raise RuntimeError("Need attn_mask if specifying the is_causal hint (as "
                               "nn.MultiheadAttention)")
        if is_causal and key_padding_mask is None and not need_weights:
            attn_mask = None
        else:
            attn_mask = F._canonical_mask(mask=attn_mask, mask_name="attn_mask",
                                          other_type=None, other_name="",
                                          target_type=query.dtype, check_other=False)
            if key_padding_mask is not None:
                is_causal = False
        return key_padding_mask, attn_mask, is_causal

    def _check_shapes(self, key, value, embed_dim):
        """F.multi_head_attention_forward's checks, with its kind of error (AssertionError)."""
        who = f"HOTMultiheadAttention({self.hot_tag})"
        if embed_dim != self.embed_dim:
            raise AssertionError(f"{who}: embedding dimension {embed_dim}, expected "
                                 f"{self.embed_dim}")
        if self._qkv_same_embed_dim:
            if key.shape != value.shape:
                raise AssertionError(f"{who}: key shape {tuple(key.shape)} does not match value "
                                     f"shape {tuple(value.shape)}")
            if key.shape[-1] != embed_dim:  # torch's F.linear on the packed weight refuses it
                raise RuntimeError(f"{who}: key and value embedding dimension {key.shape[-1]}, "
                                   f"expected {embed_dim} (the packed in_proj_weight)")
            return
        if key.shape[:2] != value.shape[:2]:
            raise AssertionError(f"{who}: key's sequence and batch dims {tuple(key.shape[:2])} do "
                                 f"not match value's {tuple(value.shape[:2])}")
        for what, t, w in (("key", key, self.k_proj_weight), ("value", value, self.v_proj_weight)):
            if t.shape[-1] != w.shape[1]:
                raise AssertionError(f"{who}: {what} embedding dimension {t.shape[-1]}, expected "
                                     f"{w.shape[1]}")

    def _checked_attn_mask(self, attn_mask, tgt_len, src_len, bsz):
        """A 2-D mask gains the batch axis; a 3-D one must be (bsz * heads, tgt, src)."""
        if attn_mask is None:
            return None
        if attn_mask.dim() == 2:
            if attn_mask.shape != (tgt_len, src_len):
                raise RuntimeError(f"The shape of the 2D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(tgt_len, src_len)}.")
            return attn_mask.unsqueeze(0)
        if attn_mask.dim() == 3:
            if attn_mask.shape != (bsz * self.num_heads, tgt_len, src_len):
                raise RuntimeError(f"The shape of the 3D attn_mask is {attn_mask.shape}, but "
                                   f"should be {(bsz * self.num_heads, tgt_len, src_len)}.")
            return attn_mask
        raise RuntimeError(f"attn_mask's dimension {attn_mask.dim()} is not supported")

    def _extra_keys(self, k, v, attn_mask, key_padding_mask, bsz):
        """bias_k / bias_v appended as one more key and value, the masks padded for it."""
        if self.bias_k is not None and self.bias_v is not None:
            k = torch.cat([k, self.bias_k.repeat(1, bsz, 1)])
            v = torch.cat([v, self.bias_v.repeat(1, bsz, 1)])
            attn_mask, key_padding_mask = _pad_masks(attn_mask, key_padding_mask)
        return k, v, attn_mask, key_padding_mask

    def _with_padding(self, attn_mask, key_padding_mask, bsz, src_len):
        """The key padding mask merged into the attention mask, per head."""
        if key_padding_mask is None:
            return attn_mask
        if key_padding_mask.shape != (bsz, src_len):
            raise AssertionError(f"expecting key_padding_mask shape of {(bsz, src_len)}, but "
                                 f"got {tuple(key_padding_mask.shape)}")
        key_padding_mask = key_padding_mask.view(bsz, 1, 1, src_len) \
            .expand(-1, self.num_heads, -1, -1).reshape(bsz * self.num_heads, 1, src_len)
        return key_padding_mask if attn_mask is None else attn_mask + key_padding_mask

    def _attend_weights(self, q, k, v, attn_mask, dropout_p, is_causal, dims, average):
        """The need_weights path: explicit softmax(q k^T) v, the weights returned too."""
        bsz, tgt_len, src_len, embed_dim = dims
        num_heads, head_dim = self.num_heads, embed_dim // self.num_heads
        _B, _Nt, E = q.shape
        q_scaled = q * math.sqrt(1.0 / float(E))
        if is_causal and attn_mask is None:
            raise RuntimeError("is_causal without attn_mask is not implemented for "
                               "need_weights (as nn.MultiheadAttention)")
        if attn_mask is not None:
            w = torch.baddbmm(attn_mask, q_scaled, k.transpose(-2, -1))
        else:
            w = torch.bmm(q_scaled, k.transpose(-2, -1))
        w = F.softmax(w, dim=-1)
        if dropout_p > 0.0:
            w = F.dropout(w, p=dropout_p)
        out = torch.bmm(w, v)  # [bsz * heads, tgt, head_dim]
        out = out.view(bsz, num_heads, tgt_len, head_dim).permute(0, 2, 1, 3) \
            .reshape(bsz, tgt_len, embed_dim).contiguous()
        out = self._out_proj(out).transpose(0, 1)  # [tgt, bsz, E]
        w = w.view(bsz, num_heads, tgt_len, src_len)
        if average:
            w = w.mean(dim=1)
        return out, w

    def _attend_sdpa(self, q, k, v, attn_mask, dropout_p, is_causal, dims):
        """The fused path: F.scaled_dot_product_attention, then out_proj."""
        bsz, tgt_len, src_len, embed_dim = dims
        num_heads, head_dim = self.num_heads, embed_dim // self.num_heads
        if attn_mask is not None:
            if attn_mask.size(0) == 1 and attn_mask.dim() == 3:
                attn_mask = attn_mask.unsqueeze(0)
            else:
                attn_mask = attn_mask.view(bsz, num_heads, -1, src_len)
        q = q.view(bsz, num_heads, tgt_len, head_dim)
        k = k.view(bsz, num_heads, src_len, head_dim)
        v = v.view(bsz, num_heads, src_len, head_dim)
        out = F.scaled_dot_product_attention(q, k, v, attn_mask, dropout_p, is_causal)
        out = out.permute(0, 2, 1, 3).reshape(bsz, tgt_len, embed_dim).contiguous()
        return self._out_proj(out).transpose(0, 1)  # [tgt, bsz, E]

    def _out_proj(self, x):
        """out_proj's linear map through hot, as torch's F.linear(x, out_proj.weight,
        out_proj.bias): out_proj itself is not called, so its hooks run as they do under
        nn.MultiheadAttention (never)."""
        p = self.out_proj
        return _hot_linear(p, x, p.weight, p.bias)


def _pad_masks(attn_mask, key_padding_mask):
    """Both masks (where given) padded by one key on the right."""
    if attn_mask is not None:
        attn_mask = F.pad(attn_mask, (0, 1))
    if key_padding_mask is not None:
        key_padding_mask = F.pad(key_padding_mask, (0, 1))
    return attn_mask, key_padding_mask


def _hot_modules(model):
    """The HOT-carrying objects of `model`: HOTLinear modules and the in-projections of
    HOTMultiheadAttention modules."""
    for m in model.modules():
        if isinstance(m, HOTLinear):
            yield m
        elif isinstance(m, HOTMultiheadAttention):
            yield from list(m._hot_in.values())


def check(model):
    """hot_check() of every HOTLinear in `model` (a module itself included) and of every
    in-projection of its HOTMultiheadAttention modules: waits for their backwards in flight and
    raises hot.HotError (ERR_RANGE) for the first overflow not reported yet. Returns the number
    checked."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"check: model must be a torch.nn.Module (got {type(model).__name__})")
    n = 0
    for m in _hot_modules(model):
        m.hot_check()
        n += 1
    return n


def plain_state_dict(model):
    """model.state_dict() without hot's entries (`<module>._extra_state` of its HOTLinear and
    HOTMultiheadAttention modules: the Philox step, LQS and HLA-basis choices): what the model
    before convert() loads with strict=True (for inference or training without hot). A new
    dict; the tensors are the state dict's (shared with the parameters, as state_dict's)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"plain_state_dict: model must be a torch.nn.Module (got "
                        f"{type(model).__name__})")
    hot_keys = {(n + "." if n else "") + "_extra_state"
                for n, m in model.named_modules(remove_duplicate=False)
                if isinstance(m, (HOTLinear, HOTMultiheadAttention))}  # every name of a shared one
    sd = model.state_dict()
    return type(sd)((k, v) for k, v in sd.items() if k not in hot_keys)


def capture_next_backward(module, path):
    """Arms `module` (a HOTLinear) to capture its next backward: the next forward that records a
    graph keeps x, and the backward of that forward writes x, the weight and g_y — as hot
    receives them: the input's dtype, g_y converted to it — to the capture file `path`
    (hot.capture: written atomically; docs/capture.md) before hot's own backward runs. Layer
    name: the module's hot name (convert() uses its qualified name); B and L as the forward
    reads x ([..., L, I]: B = prod(...)). One capture per call; arming again before a forward
    replaces the path. CUDA tensors are copied to the host for the write (a synchronisation).
    A failing write raises hot.HotError from the backward. Raises TypeError for a module that is
    not a HOTLinear, ValueError when the folder of `path` does not exist."""
    if not isinstance(module, HOTLinear):
        raise TypeError(f"capture_next_backward needs a HOTLinear (got {type(module).__name__}; "
                        "hot.torch.convert(model) makes them)")
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"HOTLinear({module.hot_spec.name}): capture path {path}: folder "
                         f"{folder} does not exist")
    with module._hot_lock:
        module._hot_capture = path


# ---- convert ------------------------------------------------------------------------------------

class ConvertReport:
    """What convert() did: `converted` and `skipped`, lists of (qualified name, what, detail);
    str() is the table convert(verbose=True) prints."""

    def __init__(self):
        self.converted = []
        self.skipped = []
        self.keeps = []           # (name, what it keeps for the backward)
        self.measured = []        # (name, bytes before, bytes after): convert(example=...)
        self.measured_total = None

    def _add(self, done, name, what, detail):
        (self.converted if done else self.skipped).append((name or "(model)", what, detail))

    def __str__(self):
        lines = [f"hot.torch.convert: {len(self.converted)} converted, {len(self.skipped)} "
                 "skipped"]
        width = max([len(n) for n, _, _ in self.converted + self.skipped] + [8])
        for label, rows in (("converted", self.converted), ("skipped", self.skipped)):
            for n, what, detail in rows:
                lines.append(f"  {label:<9}  {n:<{width}}  {what}: {detail}")
        lines += _memory_plan.report_lines(self, width)
        return "\n".join(lines)

    def __repr__(self):
        return f"<ConvertReport {len(self.converted)} converted, {len(self.skipped)} skipped>"


def _plain_linear(m):
    return isinstance(m, nn.Linear) and not isinstance(m, HOTLinear) and \
        type(m).forward is nn.Linear.forward


_OWN_PARAMS = {nn.Linear: ("weight", "bias"),
               nn.MultiheadAttention: ("in_proj_weight", "in_proj_bias", "q_proj_weight",
                                       "k_proj_weight", "v_proj_weight", "bias_k", "bias_v")}


def _not_taken_over(m):
    """Why a HOT module cannot take over m's computation, or None: a parametrized weight
    (torch.nn.utils.parametrize: weight_norm, spectral_norm, a parametrized adapter: the weight
    is computed from other parameters at every forward), a weight that is not a Parameter (the
    older weight_norm / spectral_norm compute it in a forward pre-hook from parameters of their
    own) or parameters or submodules beyond the module's own (an adapter added to it). A HOT
    module shares the module's weight Parameter and reads it as it is: it would train a frozen
    copy of a computed weight and drop the other parameters."""
    base = nn.Linear if isinstance(m, nn.Linear) else nn.MultiheadAttention
    if torch.nn.utils.parametrize.is_parametrized(m):
        return "its weight is parametrized (torch.nn.utils.parametrize: weight_norm, " \
            "spectral_norm, an adapter): hot would read a copy of the computed weight; remove " \
            "the parametrization first or wrap the linear map in HOTLinear yourself"
    names = ("weight",) if base is nn.Linear else ("in_proj_weight", "q_proj_weight")
    w = next((getattr(m, n) for n in names if getattr(m, n, None) is not None), None)
    if w is not None and not isinstance(w, nn.Parameter):
        return "its weight is not a Parameter (computed by a hook, e.g. the older weight_norm " \
            "or spectral_norm): hot would train a frozen copy of it"
    extra = sorted(set(n for n, _ in m.named_parameters(recurse=False)) - set(_OWN_PARAMS[base]))
    kids = sorted(n for n, _ in m.named_children() if not (base is nn.MultiheadAttention and
                                                            n == "out_proj"))
    if extra or kids:
        return "it has parameters or submodules of its own (" + ", ".join(extra + kids) + \
            "): hot computes only the linear map"
    return None


# What nn.Module.__init__ puts in every module's __dict__ (its tables, hooks and flags).
_MODULE_INTERNALS = frozenset(vars(nn.Module()))


def _share_hooks(dst, src):
    """dst uses src's hook tables (the same dicts: handles made on src remove them from dst)."""
    for k, v in vars(src).items():
        if "hook" in k and k not in ("_state_dict_hooks", "_load_state_dict_pre_hooks",
                                     "_load_state_dict_post_hooks", "_state_dict_pre_hooks"):
            object.__setattr__(dst, k, v)


def _plain_mha(m):
    return isinstance(m, nn.MultiheadAttention) and not isinstance(m, HOTMultiheadAttention) and \
        type(m).forward is nn.MultiheadAttention.forward


def _attention_stream_tags(tag):
    """Every stream tag an attention module tagged `tag` may use: its in-projections (each role
    of _ROWS, made on first use) and its out_proj."""
    return [f"{tag}.in_proj.{r}" for r in _ROWS] + [f"{tag}.out_proj"]


def _unique_attention_tag(name, used):
    """name, or name + "#k" with the smallest k for which none of the attention's stream tags
    (_attention_stream_tags) has a stream identity (api.stream_hash) in `used`; those are then
    taken."""
    tag, k = name, 0
    while len({api.stream_hash(t) for t in _attention_stream_tags(tag)} | used) != \
            len(used) + len(_attention_stream_tags(tag)):
        k += 1
        tag = f"{name}#{k}"
    used.update(api.stream_hash(t) for t in _attention_stream_tags(tag))
    return tag


def _uninitialized(m):
    """True for a lazy module (nn.LazyLinear, ...) whose parameters are not materialised yet."""
    return any(isinstance(p, nn.parameter.UninitializedParameter)
               for p in m.parameters(recurse=False))


def _unique_tag(name, used):
    """name, or name + "#k" with the smallest k whose stream identity (api.stream_hash) is not
    used yet. Qualified names are unique in a model, so only a tag some module already holds
    (a HOT module's own tag) or equal 64-bit hashes (about n^2 / 2^65) rename; the same model
    gives the same tags in every process."""
    tag, k = name, 0
    while api.stream_hash(tag) in used:
        k += 1
        tag = f"{name}#{k}"
    used.add(api.stream_hash(tag))
    return tag


_NOT_CONVERTED_OUT_PROJ = ("its attention module is not converted (torch uses out_proj's "
                           "weight, not its forward)")


class _ConvertState:
    """convert()'s walk: one module at a time, what it converts (replace), what it reports, and
    the stream identities (api.stream_hash of the tags) already taken."""

    def __init__(self, model, spec, spec_file, recipe, context, hla_basis="spec"):
        self.model, self.spec, self.spec_file = model, spec, spec_file
        self.hla_basis = hla_basis
        self.kw = dict(recipe=recipe, context=context)
        self.report = ConvertReport()
        self.used = set()
        self.replace = {}
        self.mha_names = set()
        self.linear_names = []
        self.aliases = []  # (name, converted module) of the further names of a shared module

    def alias(self, n, first):
        """`n` names the module already visited as `first`: it gets the same converted object
        (one module computes one way wherever it is registered)."""
        new = self.replace.get(first)
        if new is not None and n:
            self.aliases.append((n, new))
            self.report._add(True, n, f"{type(new).__name__} (shared)",
                             f"the module of {first or '(model)'}, converted once")

    def file_spec(self, layer):
        try:
            return spec_from_file(self.spec_file, layer)
        except api.HotError as e:
            if e.status == api.Status.ERR_NOT_FOUND:
                return None
            raise

    def visit(self, n, m, include):
        tname = type(m).__name__
        parent = n.rpartition(".")[0]
        if isinstance(m, (HOTLinear, HOTMultiheadAttention)):
            self.already_hot(n, m, tname, parent)
            return
        if isinstance(m, nn.Linear) and n.endswith("out_proj") and parent in self.mha_names:
            return  # decided with its attention module
        is_lin, is_mha = _plain_linear(m), _plain_mha(m)
        if (is_lin or is_mha) and _uninitialized(m):
            self.report._add(False, n, tname, "an uninitialised lazy module (its sizes are known "
                             "after its first forward): run the model once before convert()")
            return
        why = _not_taken_over(m) if is_lin or is_mha else None
        if why is None and is_mha and isinstance(m.out_proj, nn.Linear):
            why = _not_taken_over(m.out_proj)
            why = why and f"its out_proj: {why}"
        if why is not None:
            self.report._add(False, n, tname, why)
            if is_mha:
                self.report._add(False, f"{n}.out_proj", type(m.out_proj).__name__,
                                 _NOT_CONVERTED_OUT_PROJ)
            return
        if not is_lin and not is_mha:
            if isinstance(m, (nn.Linear, nn.MultiheadAttention)):
                base = "nn.Linear" if isinstance(m, nn.Linear) else "nn.MultiheadAttention"
                self.report._add(False, n, tname, f"a subclass of {base} with a forward of its "
                                 "own: hot cannot know what it computes (wrap its linear maps in "
                                 "HOTLinear yourself)")
                if isinstance(m, nn.MultiheadAttention):
                    self.report._add(False, f"{n}.out_proj", type(m.out_proj).__name__,
                                     _NOT_CONVERTED_OUT_PROJ)
            return
        if include is not None and not include(n, m):
            self.report._add(False, n, tname, "refused by include()")
            if is_mha:
                self.report._add(False, f"{n}.out_proj", type(m.out_proj).__name__,
                                 _NOT_CONVERTED_OUT_PROJ)
            return
        self.linear_names.append(n)
        if is_lin:
            self.linear(n, m, tname)
        else:
            self.attention(n, m, tname)

    def already_hot(self, n, m, tname, parent):
        if isinstance(m, HOTLinear) and n.endswith("out_proj") and parent in self.mha_names \
                and isinstance(self.model.get_submodule(parent), HOTMultiheadAttention):
            return  # reported with its attention module
        mha = isinstance(m, HOTMultiheadAttention)
        if m.hot_tag.startswith(("HOTLinear#", "MultiheadAttention#")):
            tag = (_unique_attention_tag if mha else _unique_tag)(n or tname, self.used)
            m.hot_set_tag(tag)
            self.report._add(False, n, tname, f"already HOT; random stream tagged {tag!r}")
        else:
            tags = _attention_stream_tags(m.hot_tag) if mha else [m.hot_tag]
            shared = sorted(t for t in tags if api.stream_hash(t) in self.used)
            self.used.update(api.stream_hash(t) for t in tags)
            note = f"; random stream of {', '.join(shared)} shared with another module (same " \
                "tag: change it)" if shared else ""
            self.report._add(False, n, tname, f"already HOT (tag {m.hot_tag!r}){note}")

    def linear(self, n, m, tname):
        kw = dict(self.kw)
        if self.spec_file is not None:
            s = self.file_spec(n)
            if s is None:
                self.report._add(False, n, tname, f"not a layer of {self.spec_file}")
                return
            kw["spec"] = s
        elif self.spec is not None:
            kw["spec"] = self.spec
        tag = _unique_tag(n or "linear", self.used)
        self.replace[n] = HOTLinear.from_linear(m, name=n or "linear", tag=tag, **kw)
        self.replace[n].hot_set_hla_basis(self.hla_basis)
        note = "" if tag == (n or "linear") else \
            f", stream tag {tag!r} (its name's stream is taken)"
        self.report._add(True, n, f"{tname} -> HOTLinear",
                         f"{m.in_features} -> {m.out_features}{note}")

    def attention(self, n, m, tname):
        kw = dict(self.kw)
        if self.spec_file is not None:
            s_in, s_out = self.file_spec(f"{n}.in_proj"), self.file_spec(f"{n}.out_proj")
            if s_in is None or s_out is None:
                missing = [x for x, s in (("in_proj", s_in), ("out_proj", s_out)) if s is None]
                self.report._add(False, n, tname, f"{self.spec_file} has no layer "
                                 f"{' or '.join(n + '.' + x for x in missing)}")
                self.report._add(False, f"{n}.out_proj", type(m.out_proj).__name__,
                                 "its attention module is not converted")
                return
            kw.update(spec=s_out, in_proj_spec=s_in)
        elif self.spec is not None:
            kw["spec"] = self.spec
        tag = _unique_attention_tag(n or "attention", self.used)
        new = HOTMultiheadAttention.from_mha(m, tag=tag, **kw)
        new.hot_set_hla_basis(self.hla_basis)
        E = m.embed_dim
        how = (f"in_proj {E} -> {3 * E} (q, k, v packed)" if m._qkv_same_embed_dim else
               f"q/k/v_proj {E}/{m.kdim}/{m.vdim} -> {E}")
        note = "" if tag == (n or "attention") else \
            f", stream tag {tag!r} (its name's stream is taken)"
        self.report._add(True, n, f"{tname} -> HOTMultiheadAttention",
                         f"{how}, out_proj {E} -> {E}, {m.num_heads} heads{note}")
        self.replace[n] = new


def _convert_args(model, spec, include, hla_basis, activations, example):
    """convert()'s arguments checked, each error naming its argument; returns spec (a path
    object as its str)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if include is not None and not callable(include):
        raise TypeError(f"include must be None or a callable include(name, module) -> bool (got "
                        f"{type(include).__name__})")
    if not isinstance(activations, bool):
        raise TypeError(f"activations must be True or False (got {activations!r})")
    if spec is not None and not isinstance(spec, (str, api.LayerSpec)):
        raise TypeError(f"spec must be None, a hot.LayerSpec or a spec file path (got "
                        f"{type(spec).__name__})")
    if hla_basis not in ("auto", "spec"):
        raise ValueError(f"hla_basis must be 'auto' or 'spec' (got {hla_basis!r})")
    if example is not None and not callable(example):
        raise TypeError("example must be a callable example(model) running one forward")
    return spec


def convert(model, spec=None, recipe="hot", context=None, include=None, verbose=False,
            return_report=False, hla_basis="auto", activations=True, example=None):
    """Replaces in place the linear maps of `model` by HOT modules sharing their Parameters and
    returns the model (a new module when `model` itself is converted), or (model, report) with
    return_report=True; verbose=True prints the report (ConvertReport: what was converted and
    what was skipped, and why).

      spec     None: every convertible module, with the recipe's defaults; a hot.LayerSpec:
               every one with its settings; a spec file path: only the modules whose qualified
               name ("encoder.0.fc1") is a layer of the spec, each with that layer's settings —
               an attention module "a" needs layers "a.in_proj" and "a.out_proj" — (ValueError
               when the spec names none of them)
      recipe   "hot", "paper", "paper_code", "nvfp4" (the CPU backend; sm_120a unverified) (with
               spec=None)
      context  a hot.Context for all converted modules (default: the shared one per device)
      include  optional predicate include(name, module) -> bool choosing the modules
      hla_basis  "auto" (default): each converted module measures HLA's rank cut at its first
               backward against the exact g_w of that batch and keeps it only when the relative
               error is <= hot.memory.BASIS_MAX_ERROR, else takes the full basis; a kept cut is
               measured again at hot.memory.BASIS_RECHECK's backwards and then every
               BASIS_RECHECK_EVERY (the choice is in the state dict); "spec": the spec's basis
               as it is
      activations  True (default): a ReLU or GELU whose output only a converted linear map
               reads (nn.ReLU / nn.GELU before it in an nn.Sequential, a transformer layer's
               activation before its converted linear2) becomes hot.memory.HOTReLU (keeps a
               1-bit mask, not its output) or HOTGELU (the linear map rebuilds its input from
               GELU's), so the linear map's codes are not kept on top of a copy
      example  optional callable example(model) running one forward: convert then measures
               the saved activations (distinct storages, hot.memory) of the model before and
               after, per converted module, and puts them in the report; a module that keeps
               more than before is put back (reported; the model itself, when it is the
               module converted, is returned as it was); the model's buffers and torch's random
               streams are restored after each run of the example

    Converted: nn.Linear and its subclasses that keep nn.Linear's forward (HOTLinear);
    nn.MultiheadAttention and its subclasses that keep its forward (HOTMultiheadAttention: the
    in-projections and out_proj through hot; its out_proj is converted with it). Skipped, with
    the reason in the report: subclasses with a forward of their own (what they compute is not
    known), modules whose weight is parametrized or computed or that carry parameters of their
    own (an adapter: a HOT module would read a frozen copy of the weight), the out_proj of an
    attention module left unconverted (torch uses its weight, never its forward), modules the
    spec file does not name or `include` refuses. Converted modules keep the originals' hooks. HOT
    modules already in the model stay; each converted module's random stream is tagged with its
    qualified name (a HOTLinear already present keeps an explicit tag, else takes its name too); a
    name whose stream another module of the model already holds (a HOT module tagged with that name,
    or equal 64-bit hashes) gets "#1", "#2", ... (reported)."""
    spec = _convert_args(model, spec, include, hla_basis, activations, example)
    spec_file = spec if isinstance(spec, str) else None
    st = _ConvertState(model, spec, spec_file, recipe, context, hla_basis)
    # every registration, a module shared by several names (or parents) included: the first
    # name converts it, the others get the same converted object
    mods = list(model.named_modules(remove_duplicate=False))
    st.mha_names = {n for n, m in mods if isinstance(m, nn.MultiheadAttention)}
    first = {}
    for n, m in mods:
        if id(m) in first:
            st.alias(n, first[id(m)])
            continue
        first[id(m)] = n
        st.visit(n, m, include)
    report, replace, linear_names = st.report, st.replace, st.linear_names
    if spec_file is not None and not replace:
        raise ValueError(f"spec {spec_file} names none of the model's nn.Linear modules "
                         f"({', '.join(linear_names) or 'none'})")
    acts = _memory_plan.activation_swaps(model, replace) if activations else {}
    before = _memory_plan.measure(model, example, replace) if example is not None else None
    aliases = dict(st.aliases)
    if "" in replace:  # the model itself is converted
        out = replace[""]
        originals = {"": model}
    else:
        originals = {n: _memory_plan._get(model, n)
                     for n in list(replace) + list(acts) + list(aliases)}
        _memory_plan.install(model, replace)
        _memory_plan.install(model, aliases)
        _memory_plan.install(model, acts)
        out = model
    _memory_plan.describe(report, replace, acts)
    if before is not None:
        if "" in _memory_plan.check(out, example, replace, acts, originals, before, report):
            out = model  # the model itself keeps more converted: it stays as it was
        for n, new in aliases.items():  # a module put back is put back under every name
            if not any(v is new and _memory_plan._get(model, k) is new for k, v in replace.items()):
                _memory_plan.install(model, {n: originals[n]})
    if verbose:
        print(report)
    return (out, report) if return_report else out

