"""PyTorch integration: HOTLinear, a drop-in for torch.nn.Linear whose backward runs hot.

    import hot.torch
    model = hot.torch.convert(model)          # every nn.Linear becomes a HOTLinear
    # or: fc = hot.torch.HOTLinear(768, 3072)

Forward: y = x·wᵀ + b computed by torch (exactly what nn.Linear computes); hot keeps only the
compressed activation of x (ABC: int8 codes of a low-rank Hadamard projection) — x itself is not
kept for the backward. Backward: g_x, g_w and g_b from hot (HQ 4-bit g_x, HLA INT8 g_w, exact
fp32 g_b) through a torch.autograd.Function. Without grad mode, or when nothing needs a gradient,
the forward is plain F.linear and hot is not called.

- Inputs [..., I] of float32, bfloat16 or float16, the same dtype as the weight, C-contiguous, on
  the CPU (hot's CPU backend) or a CUDA device (hot's CUDA backend, device pointers, the current
  stream: no copies, no synchronisation; only a view whose data is not 16-byte aligned is copied
  for the call).
- Rows: x of shape [..., L, I] (3 or more dimensions) is B = prod(leading) samples of L tokens;
  [N, I] is one sequence of N tokens (B = 1, L = N); [I] is one token. HLA blocks run along L.
- A hot layer is created per (device, dtype, B, L) and cached in the module (at most
  `max_cached_shapes`, least recently used dropped).
- `hot_step`: the Philox step of stochastic rounding; each backward uses it and adds 1.
- A layer whose spec says scale = "auto" (the recipes' default) is calibrated (LQS) on the first
  g_y it sees, at that step.
- Errors: wrong dtype/shape/device or a non-contiguous tensor raise TypeError / ValueError naming
  the module and the argument (also a CUDA tensor on another device than its hot context's);
  hot's errors (NaN/Inf on the CPU backend: HOT_ERR_NONFINITE) raise hot.HotError with hot's
  message. The CUDA backend does not check for NaN (see hot.h).
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
(docs/capture.md) before running hot; once, then the module is back to normal.

Contexts: one hot.Context per device, shared by all modules in the process (created on first use
with options from the environment, backend forced to cpu or cuda); `set_context(device, ctx)`
installs another, a module's `context=` argument overrides both.
"""

import collections
import math
import os
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

from . import _capture, api
from ._lib import DType

__all__ = ["HOTLinear", "convert", "context_for", "set_context", "spec_from_file",
           "capture_next_backward", "check"]

_DT = {torch.float32: DType.F32, torch.bfloat16: DType.BF16, torch.float16: DType.F16}

_contexts = {}
_contexts_lock = threading.Lock()


def _device_key(device):
    device = torch.device(device)
    if device.type == "cpu":
        return ("cpu", 0)
    if device.type == "cuda":
        return ("cuda", device.index if device.index is not None else torch.cuda.current_device())
    raise ValueError(f"hot runs on cpu and cuda tensors (got device {device})")


def context_for(device):
    """The shared hot.Context of a torch device (created on first use: backend cpu for CPU
    tensors, cuda with that device index for CUDA tensors; other options from the environment)."""
    key = _device_key(device)
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


def _aligned_empty(nbytes, device):
    """A uint8 tensor of nbytes whose data is 16-byte aligned (hot_layer_save's requirement)."""
    buf = torch.empty(nbytes + 16, dtype=torch.uint8, device=device)
    off = (-buf.data_ptr()) % 16
    return buf.narrow(0, off, nbytes)


def _aligned16(t):
    """t, or a temporary aligned copy when its data is not 16-byte aligned (a view at an odd
    offset; hot.h asks 16-byte aligned tensors on CUDA). The copy lives only for the call."""
    return t if t.data_ptr() % 16 == 0 else t.clone()


class _Entry:
    __slots__ = ("layer", "needs_calibration")

    def __init__(self, layer):
        self.layer = layer
        self.needs_calibration = layer._info.gran_auto


def _stream(device):
    if device.type == "cuda":
        return torch.cuda.current_stream(device).cuda_stream
    return None


class _HOTLinearFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, module):
        y = F.linear(x, weight, bias)
        entry = module._hot_layer(x)
        layer = entry.layer
        saved = _aligned_empty(layer.saved_bytes, x.device)
        with torch.cuda.device(x.device) if x.device.type == "cuda" else _nullctx():
            xa = _aligned16(x)
            layer.save_ptr(xa.data_ptr(), _DT[x.dtype], saved.data_ptr(), _stream(x.device))
        capture = module._hot_take_capture()
        if capture is None:
            ctx.save_for_backward(weight, saved)
        else:  # x kept for this one backward (autograd's version check guards it)
            ctx.save_for_backward(weight, saved, x)
        ctx.hot = (module, entry, x.shape, x.dtype, bias is not None, capture)
        return y

    @staticmethod
    def backward(ctx, g_y):
        weight, saved = ctx.saved_tensors[:2]
        module, entry, x_shape, x_dtype, has_bias, capture = ctx.hot
        layer = entry.layer
        info = layer._info
        dev = g_y.device
        if g_y.dtype != x_dtype:
            g_y = g_y.to(x_dtype)
        g_y = _aligned16(g_y.contiguous())
        if capture is not None:  # before hot runs: the capture exists even if hot then fails
            x = ctx.saved_tensors[2]
            B, L = _batch_tokens(tuple(x_shape))
            _capture.capture(capture, module.hot_spec.name, x.reshape(B, L, x_shape[-1]),
                             weight, g_y.reshape(B, L, g_y.shape[-1]))
        w = _aligned16(weight)
        dt = _DT[x_dtype]
        step = module._hot_next_step()
        g_x = torch.empty((info.T, info.I), dtype=torch.float32, device=dev)
        g_w = torch.empty((info.O, info.I), dtype=torch.float32, device=dev)
        g_b = torch.empty((info.O,), dtype=torch.float32, device=dev) if has_bias else None
        with torch.cuda.device(dev) if dev.type == "cuda" else _nullctx():
            stream = _stream(dev)
            if entry.needs_calibration:
                layer.calibrate_ptr(g_y.data_ptr(), dt, step, stream)
                entry.needs_calibration = False
            layer.backward_ptr(g_y.data_ptr(), w.data_ptr(), dt, g_x.data_ptr(),
                               g_w.data_ptr(), None if g_b is None else g_b.data_ptr(),
                               saved.data_ptr(), step, stream)
        need_x, need_w, need_b = ctx.needs_input_grad[:3]
        gx = g_x.view(x_shape).to(x_dtype) if need_x else None
        gw = g_w.to(weight.dtype) if need_w else None
        gb = g_b.to(weight.dtype) if (need_b and g_b is not None) else None
        return gx, gw, gb, None


class _nullctx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


class HOTLinear(nn.Linear):
    """torch.nn.Linear whose backward runs hot (see the module docstring).

    Extra keyword arguments:
      spec      None (the recipe's defaults), a hot.LayerSpec (its HQ/HLA/ABC settings; sizes,
                bias and dtype come from the module and the input), or the path of a spec file
                together with spec_layer (the name of the layer in it)
      recipe    "hot" (default), "paper", "paper_code": defaults when spec is None
      context   a hot.Context for this module's layers (default: the shared one per device)
      name      the hot layer's name (messages); convert() uses the module's qualified name
      max_cached_shapes  hot layers kept per module (one per input shape, dtype and device)

    Overflow (HOT_ERR_RANGE, see the module docstring): raised as hot.HotError by the next
    forward/backward of the same shape, by hot_check(), or by the forward that evicts the
    layer from the shape cache.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, dtype=None, *,
                 spec=None, spec_layer=None, recipe="hot", context=None, name="linear",
                 max_cached_shapes=8):
        super().__init__(in_features, out_features, bias=bias, device=device, dtype=dtype)
        self._hot_setup(spec, spec_layer, recipe, context, name, max_cached_shapes)

    def _hot_setup(self, spec, spec_layer, recipe, context, name, max_cached_shapes):
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
        tmpl.c.bias = 1 if self.bias is not None else 0
        safe = "".join(ch if (ch.isalnum() or ch in "_.-") else "_" for ch in str(name))[:63]
        tmpl.name = safe or "linear"
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

    @classmethod
    def from_linear(cls, linear, **kwargs):
        """A HOTLinear sharing `linear`'s weight and bias Parameters (no copy)."""
        m = cls.__new__(cls)
        nn.Module.__init__(m)
        m.in_features, m.out_features = linear.in_features, linear.out_features
        m.weight = linear.weight
        m.bias = linear.bias
        m._hot_setup(kwargs.pop("spec", None), kwargs.pop("spec_layer", None),
                     kwargs.pop("recipe", "hot"), kwargs.pop("context", None),
                     kwargs.pop("name", "linear"), kwargs.pop("max_cached_shapes", 8))
        if kwargs:
            raise TypeError(f"unexpected arguments: {', '.join(kwargs)}")
        return m

    def __getstate__(self):
        # copy.deepcopy / pickle: the hot layers are a per-object cache (rebuilt on demand), the
        # lock is per object; a context given by the caller is shared by a deepcopy and cannot
        # be pickled (hot.Context raises a TypeError saying so).
        state = dict(super().__getstate__())
        state["_hot_layers"] = collections.OrderedDict()
        state["_hot_lock"] = None
        state["_hot_capture"] = None  # a pending capture belongs to the original module
        return state

    def __setstate__(self, state):
        super().__setstate__(state)
        self._hot_lock = threading.Lock()

    def extra_repr(self):
        return super().extra_repr() + f", hot={self.hot_spec.name!r} recipe={self.hot_spec.recipe.name.lower()}"

    # -- hot state
    def _hot_next_step(self):
        with self._hot_lock:
            s = self.hot_step
            self.hot_step = (s + 1) % (1 << 32)
            return s

    @property
    def hot_capture_pending(self):
        """The path capture_next_backward armed and no forward has claimed yet, else None."""
        return getattr(self, "_hot_capture", None)

    def _hot_take_capture(self):
        with self._hot_lock:
            path = getattr(self, "_hot_capture", None)
            self._hot_capture = None
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

    def _hot_layer(self, x):
        B, L = _batch_tokens(tuple(x.shape))
        key = (x.device, x.dtype, B, L)
        with self._hot_lock:
            e = self._hot_layers.get(key)
            if e is not None:
                self._hot_layers.move_to_end(key)
                return e
            ctx = self.hot_context if self.hot_context is not None else context_for(x.device)
            want = "cpu" if x.device.type == "cpu" else "cuda"
            if ctx.backend != want:
                raise ValueError(f"HOTLinear({self.hot_spec.name}): its hot context runs the "
                                 f"{ctx.backend} backend, the input is on {x.device}")
            spec = self.hot_spec.copy()
            spec.c.dtype = int(_DT[x.dtype])
            if ctx.backend == "cuda" and ctx.device != _device_key(x.device)[1]:
                raise ValueError(f"HOTLinear({self.hot_spec.name}): its hot context runs on CUDA "
                                 f"device {ctx.device}, the input is on {x.device}")
            e = _Entry(ctx.create_layer(spec=spec, batch=B, tokens=L))
            self._hot_layers[key] = e
            evicted = []
            while len(self._hot_layers) > self.max_cached_shapes:
                # destroyed when no graph holds it; an overflow it has not reported yet is
                # raised now (a wait for its last backwards only) rather than lost with it
                evicted.append(self._hot_layers.popitem(last=False)[1].layer)
        for layer in evicted:
            layer.check()
        return e

    def _hot_check(self, x):
        who = f"HOTLinear({self.hot_spec.name})"
        if not isinstance(x, torch.Tensor):
            raise TypeError(f"{who}: input must be a torch.Tensor (got {type(x).__name__})")
        if x.dtype not in _DT:
            raise TypeError(f"{who}: input dtype {x.dtype} is not supported (float32, bfloat16, "
                            "float16)")
        if x.dtype != self.weight.dtype:
            raise TypeError(f"{who}: input dtype {x.dtype} differs from the weight's "
                            f"{self.weight.dtype}")
        if x.dim() < 1 or x.shape[-1] != self.in_features:
            raise ValueError(f"{who}: input shape {tuple(x.shape)} must end in in_features = "
                             f"{self.in_features}")
        if x.numel() == 0:
            raise ValueError(f"{who}: input shape {tuple(x.shape)} is empty")
        if x.device != self.weight.device:
            raise ValueError(f"{who}: input on {x.device}, weight on {self.weight.device}")
        if x.device.type not in ("cpu", "cuda"):
            raise ValueError(f"{who}: input on {x.device}: hot runs on cpu and cuda tensors")
        if not x.is_contiguous():
            raise ValueError(f"{who}: input is not contiguous (shape {tuple(x.shape)}, strides "
                             f"{x.stride()}); call .contiguous() first")
        if not self.weight.is_contiguous():
            raise ValueError(f"{who}: weight is not contiguous (strides {self.weight.stride()})")

    def forward(self, x):
        self._hot_check(x)
        need = x.requires_grad or self.weight.requires_grad or \
            (self.bias is not None and self.bias.requires_grad)
        if not torch.is_grad_enabled() or not need:
            return F.linear(x, self.weight, self.bias)
        return _HOTLinearFunction.apply(x, self.weight, self.bias, self)


def check(model):
    """hot_check() of every HOTLinear in `model` (a module itself included): waits for their
    backwards in flight and raises hot.HotError (ERR_RANGE) for the first overflow not reported
    yet. Returns the number of HOTLinear modules checked."""
    n = 0
    for m in model.modules():
        if isinstance(m, HOTLinear):
            m.hot_check()
            n += 1
    return n


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


def convert(model, spec=None, recipe="hot", context=None, include=None):
    """Replaces the torch.nn.Linear modules of `model` in place by HOTLinear modules sharing
    their Parameters, and returns the model (a new HOTLinear when `model` is an nn.Linear).

      spec     None: every nn.Linear, with the recipe's defaults; a hot.LayerSpec: every
               nn.Linear with its settings; a spec file path: only the modules whose qualified
               name ("encoder.0.fc1") is a layer of the spec, each with that layer's settings
               (ValueError when the spec names none of them)
      recipe   "hot", "paper", "paper_code" (with spec=None)
      context  a hot.Context for all converted modules (default: the shared one per device)
      include  optional predicate include(name, module) -> bool choosing the modules

    Only modules whose type is exactly nn.Linear are converted (subclasses such as the output
    projection of nn.MultiheadAttention, whose weight is used without calling forward, stay)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module (got {type(model).__name__})")
    spec_file = spec if isinstance(spec, str) else None
    if spec_file is None and spec is not None and not isinstance(spec, api.LayerSpec):
        raise TypeError(f"spec must be None, a hot.LayerSpec or a spec file path (got "
                        f"{type(spec).__name__})")
    names = [(n, m) for n, m in model.named_modules() if type(m) is nn.Linear and
             (include is None or include(n, m))]
    converted = {}
    for n, m in names:
        kw = dict(recipe=recipe, context=context, name=n or "linear")
        if spec_file is not None:
            try:
                kw["spec"] = spec_from_file(spec_file, n)
            except api.HotError as e:
                if e.status == api.Status.ERR_NOT_FOUND:
                    continue
                raise
        elif spec is not None:
            kw["spec"] = spec
        converted[n] = HOTLinear.from_linear(m, **kw)
    if spec_file is not None and not converted:
        raise ValueError(f"spec {spec_file} names none of the model's nn.Linear modules "
                         f"({', '.join(n for n, _ in names) or 'none'})")
    if "" in converted:  # the model itself is an nn.Linear
        return converted[""]
    for n, new in converted.items():
        parent_name, _, child = n.rpartition(".")
        parent = model.get_submodule(parent_name) if parent_name else model
        setattr(parent, child, new)
    return model
