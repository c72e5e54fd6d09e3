"""Saved activations, counted honestly, and what hot keeps instead of them.

Counting. Autograd keeps tensors for the backward; several of them may share one storage (a
tensor saved as itself and as a view, q/k/v as three views of one projection, ReLU's output
which the next linear map saves again). Every figure of saved bytes in hot counts DISTINCT
STORAGES: each tensor a pack hook of `torch.autograd.graph.saved_tensors_hooks` sees is keyed by
`untyped_storage().data_ptr()`, and a storage counts once with all its bytes
(`untyped_storage().nbytes()`: a view keeps its whole storage alive). Parameters are excluded.

    loss, nbytes = hot.memory.saved_bytes(lambda: model(x).sum(), exclude=model.parameters())
    loss, total, per_module = hot.memory.saved_by_module(model, lambda: model(x).sum())

Keeping less. A HOT linear map keeps int8 codes of its input (ABC). Where the tensor it would
compress is kept anyway by its neighbour, the codes would come on top of it; hot then keeps a
reference to that tensor (no new storage) and makes the codes in the backward (the same codes:
x is the same, the quantizer is round-to-nearest, so the same bits). `kept_source(x)` decides:

  1. a tensor marked by a HOT module (`mark_rebuild`): HOTGELU's output is rebuilt from GELU's
     input, which GELU keeps for its own backward;
  2. a tensor (or the base of a view) whose producing operation keeps its output for its own
     backward (`SAVES_OUTPUT`: ReLU, SDPA's fused kernels, sigmoid, tanh, softmax, ...): kept
     as it is.

The other way round, HOTReLU keeps a 1-bit mask of where its output passes the gradient
(positive, or NaN, as torch's ReLU decides) instead of the output itself, so the next HOT linear
map's codes are the only copy of that input.
"""

import functools
import sys
import threading

import torch
import torch.nn as nn
import torch.nn.functional as F

__all__ = ["saved_bytes", "saved_by_module", "SavedMeter", "kept_source", "mark_rebuild",
           "HOTReLU", "HOTGELU", "SAVES_OUTPUT", "storage_key"]

# autograd nodes that keep their own output (the tensor they returned) for the backward; not
# threshold, hardtanh (ReLU6) and the out-of-place ELU, which keep their input
SAVES_OUTPUT = frozenset({
    "ReluBackward0", "ReluBackward1", "SigmoidBackward0",
    "TanhBackward0", "SoftmaxBackward0", "LogSoftmaxBackward0", "ExpBackward0",
    "EluBackward1",
    "ScaledDotProductFlashAttentionForCpuBackward0", "ScaledDotProductFlashAttentionBackward0",
    "ScaledDotProductEfficientAttentionBackward0", "ScaledDotProductCudnnAttentionBackward0",
})


def storage_key(t):
    """The key of t's storage: untyped_storage().data_ptr() (views share it)."""
    return t.untyped_storage().data_ptr()


class SavedMeter:
    """A context manager counting the distinct storages autograd saves inside it (parameters
    and `exclude` excluded). `.bytes` total, `.storages` {key: nbytes}, `.by_owner` {owner:
    bytes} when `owner()` (a callable) names who is running at each save — a storage counts
    for the first owner that saves it."""

    def __init__(self, exclude=(), owner=None):
        self._skip = {storage_key(p) for p in exclude}
        self._owner = owner
        self.storages = {}
        self.by_owner = {}
        self._hooks = None

    def _pack(self, t):
        if isinstance(t, torch.Tensor) and t.layout == torch.strided:
            k = storage_key(t)
            if k not in self._skip and k not in self.storages:
                n = t.untyped_storage().nbytes()
                self.storages[k] = n
                if self._owner is not None:
                    o = self._owner()
                    self.by_owner[o] = self.by_owner.get(o, 0) + n
        return t

    def __enter__(self):
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, lambda t: t)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc):
        self._hooks.__exit__(*exc)
        return False

    @property
    def bytes(self):
        return sum(self.storages.values())


def saved_bytes(fn, exclude=()):
    """Runs fn() and returns (its result, the bytes of the distinct storages autograd saved
    while it ran, `exclude` (e.g. model.parameters()) left out)."""
    with SavedMeter(list(exclude)) as m:
        out = fn()
    return out, m.bytes


def saved_by_module(model, fn, names=None):
    """Runs fn() (a forward of `model`, or more) and returns (result, total bytes,
    {module name: bytes}): each distinct storage counts once, for the module running when it was
    first saved — the outermost of `names` (qualified names) when given, else the innermost
    module; "" for saves outside every such module. Parameters excluded."""
    stack = []
    lock = threading.Lock()
    wanted = set(names) if names is not None else None

    def owner():
        with lock:
            if wanted is None:
                return stack[-1] if stack else ""
            for n in stack:
                if n in wanted:
                    return n
            return ""

    handles = []
    for n, mod in model.named_modules():
        def pre(_m, _a, n=n):
            stack.append(n)

        def post(_m, _a, _o, n=n):
            if stack and stack[-1] == n:
                stack.pop()
        handles.append(mod.register_forward_pre_hook(pre))
        handles.append(mod.register_forward_hook(post, always_call=True))
    try:
        with SavedMeter(list(model.parameters()), owner=owner) as m:
            out = fn()
    finally:
        for h in handles:
            h.remove()
    return out, m.bytes, dict(m.by_owner)


# ---- what a HOT linear map may keep instead of codes --------------------------------------------

_REBUILD = "_hot_rebuild"


def mark_rebuild(y, source, fn):
    """Marks y (returned by a HOT module) as fn(source), where `source` is kept by autograd
    anyway: a HOT linear map reading y keeps a reference to `source` and rebuilds y in its
    backward. fn must give y's bits again from source. The mark holds while y is unchanged:
    an in-place change of y (its version counter moves) voids it."""
    setattr(y, _REBUILD, (source, fn, y._version))
    return y


# convert(example=...) measures the steady state: a module still to choose its HLA basis is
# counted with the full basis (the larger codes), not with the x it keeps for that one backward
_assume_full = threading.local()


def assuming_full():
    return getattr(_assume_full, "on", False)


class assume_full_basis:
    """Inside it, modules that have not chosen their HLA basis yet act as if they chose full."""

    def __enter__(self):
        _assume_full.on = True

    def __exit__(self, *exc):
        _assume_full.on = False
        return False


def kept_source(x):
    """(source, rebuild) when x is kept for the backward by its neighbour anyway (see the
    module docstring): x == rebuild(source) (rebuild None: x is source); None otherwise."""
    mark = getattr(x, _REBUILD, None)
    if mark is not None and mark[2] == x._version:
        return mark[:2]
    base = x._base if x._base is not None else x
    fn = base.grad_fn
    if fn is not None and fn.name() in SAVES_OUTPUT:
        return (x, None)
    return None


def cast_rebuild(mark, dtype):
    """The mark of x.to(dtype) given x's mark."""
    if mark is None:
        return None
    src, fn = mark
    if fn is None:
        return (src, functools.partial(_to, dtype=dtype))
    return (src, functools.partial(_then_to, fn=fn, dtype=dtype))


def _to(t, dtype):
    return t.to(dtype)


def _then_to(t, fn, dtype):
    return fn(t).to(dtype)


# ---- HOT activations ----------------------------------------------------------------------------

_BITS = None
_LITTLE = sys.byteorder == "little"


def _bits(device):
    global _BITS
    if _BITS is None or _BITS.device != device:
        _BITS = (1 << torch.arange(8, dtype=torch.uint8, device=device))
    return _BITS


def pack_mask(mask):
    """A bool tensor -> uint8 with 8 elements a byte (element 8j + k in bit k of byte j). On a
    little-endian host the 8 bool bytes of a byte-to-be are one int64 word (element k in bits
    8k..8k+7, each 0 or 1), and three shift-or steps gather bit 8k into bit k of the low byte:
    six operations on an eighth of the elements instead of a multiply and a sum over all."""
    flat = mask.reshape(-1).contiguous()
    pad = (-flat.numel()) % 8
    if pad or flat.storage_offset() % 8:
        flat = torch.cat([flat, flat.new_zeros(pad)])
    if not _LITTLE:
        b = flat.view(-1, 8).to(torch.uint8) * _bits(flat.device)
        return b.sum(dim=1, dtype=torch.uint8)
    x = flat.view(torch.uint8).view(torch.int64)
    x = x | (x >> 7)   # byte j: elements j, j+1 in bits 0, 1
    x = x | (x >> 14)  # byte 0: elements 0..3 in bits 0..3
    x = x | (x >> 28)  # byte 0: elements 0..7
    return x.to(torch.uint8)  # the low byte (a conversion to uint8 keeps it)


def unpack_mask(packed, shape):
    """pack_mask's inverse: a bool tensor of `shape` (its first prod(shape) bits)."""
    n = 1
    for s in shape:
        n *= s
    if not _LITTLE:
        bits = (packed.unsqueeze(1) & _bits(packed.device)) != 0
        return bits.reshape(-1)[:n].view(shape)
    x = packed.to(torch.int64)  # pack_mask's steps backwards: bit k to byte k, as 0 or 1
    x = (x | (x << 28)) & 0x0000000F0000000F
    x = (x | (x << 14)) & 0x0003000300030003
    x = (x | (x << 7)) & 0x0101010101010101
    return x.view(torch.uint8).view(torch.bool)[:n].view(shape)


class _ReLUMask(torch.autograd.Function):
    # The backward is made of differentiable torch ops (g masked), so a graph of the gradient
    # (create_graph=True) is built correctly: d(g_in)/d(g) is the mask, d(g_in)/d(x) zero
    # almost everywhere, as for torch's ReLU. The package's double-backward check accepts it.
    differentiable_backward = True

    @staticmethod
    def forward(ctx, x):
        y = torch.relu(x)
        # where torch's ReLU backward passes the gradient: not y <= 0 (y > 0, and NaN)
        ctx.save_for_backward(pack_mask(y.le(0).logical_not_()))
        ctx.shape = y.shape
        return y

    @staticmethod
    def backward(ctx, g):
        (packed,) = ctx.saved_tensors
        passes = unpack_mask(packed, ctx.shape).to(g.dtype)  # 1 where it passes, else 0
        # torch's ReLU backward is threshold_backward(g, y, 0): g where not y <= 0, else +0;
        # the same kernel on the mask gives the same bits (a NaN of g included, which that
        # kernel, unlike torch.where, may not pass on bit for bit)
        return torch.ops.aten.threshold_backward(g, passes, 0)


class HOTReLU(nn.Module):
    """ReLU that keeps a 1-bit mask of the outputs that pass the gradient (positive, or NaN:
    T·n/8 bytes) for the backward instead of its output; the gradient is the same bits as torch's
    ReLU (its own backward kernel on the mask). Put before a HOT
    linear map, whose int8 codes then are the only copy of the activation. Without grad (or
    for an input that needs none) it is torch.relu."""

    def forward(self, x):
        if torch.is_grad_enabled() and x.requires_grad:
            return _ReLUMask.apply(x)
        return torch.relu(x)


class HOTGELU(nn.Module):
    """GELU (torch's own; it keeps its input for the backward) whose output a HOT linear map
    rebuilds from that input in its backward instead of keeping codes of it."""

    def __init__(self, approximate="none"):
        super().__init__()
        self.approximate = approximate

    def forward(self, x):
        y = F.gelu(x, approximate=self.approximate)
        if torch.is_grad_enabled() and x.requires_grad:
            mark_rebuild(y, x, functools.partial(F.gelu, approximate=self.approximate))
        return y

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


# ---- HLA basis chosen by measurement ------------------------------------------------------------

# hla_basis="auto" (convert's default): a HOT linear map's first backward measures the relative
# Frobenius error of its g_w with the spec's rank cut (HLA tri or prefix, INT8) against the exact
# fp32 product g_yᵀ·x of that batch; the cut is kept iff the error is at most BASIS_MAX_ERROR,
# else the module switches to the full basis (every Walsh component, INT8: no rank cut). A kept
# cut is measured again at the backwards BASIS_RECHECK names and then every BASIS_RECHECK_EVERY
# (the forward before keeps x for it): what is smooth along the tokens at initialisation (causal
# attention averaging its inputs) need not stay so as the model trains. The switch is one way.
BASIS_MAX_ERROR = 0.05
BASIS_RECHECK = (8, 16, 32, 64, 128, 256)
BASIS_RECHECK_EVERY = 256


def choose_basis(err):
    """"cut" when the measured relative g_w error of the rank cut is <= BASIS_MAX_ERROR (and
    finite), else "full"."""
    return "cut" if err == err and err <= BASIS_MAX_ERROR else "full"


def basis_recheck_due(step):
    """Whether a module that kept the rank cut measures it again in backward number `step`
    (its hot_step, 0 the first)."""
    return step in BASIS_RECHECK or (step > 0 and step % BASIS_RECHECK_EVERY == 0)
