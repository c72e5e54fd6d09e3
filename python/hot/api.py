"""A thin object API over libhot's C API (runtime/include/hot.h).

    import numpy as np, hot
    with hot.Context(backend="cpu") as ctx:
        fc = ctx.create_layer(in_features=96, out_features=128, batch=2, tokens=197)
        fc.save(x)                                   # x: (394, 96) float32, C-contiguous
        g_x, g_w, g_b = fc.backward(g_y, w, step=1)  # numpy float32 arrays

Objects own their C handles: a Context destroys its layers when it is closed (close(), the end of
a `with` block, or garbage collection), a Layer its C layer when it is destroyed or collected.
Every C status other than HOT_OK raises HotError carrying the status and hot's one-line message;
bad Python arguments (wrong array shape, dtype, layout) raise TypeError / ValueError naming the
argument before anything reaches C. A Context and its layers may be shared between threads: each
call holds the context's lock (the C API allows one thread at a time per context).

Two levels of calls on a layer: `save`, `backward`, `calibrate` take numpy arrays (host memory:
the CPU backend); `save_ptr`, `backward_ptr`, `calibrate_ptr` take raw addresses (host pointers
on the CPU backend, device pointers on the CUDA backend) and a CUstream, for frameworks that own
their tensors (hot.torch uses them).
"""

import ctypes
import dataclasses
import os
import threading
import warnings
import weakref

from . import _lib, _numbers
from ._lib import Backend, DType, Gran, Layout, Recipe, Round, Rule, Selection, Status

__all__ = ["HotError", "Context", "Layer", "LayerSpec", "LayerInfo", "Stats", "KernelTime",
           "status_name", "layer_id_for", "stream_hash", "stream_key", "LAYER_ID_LIMIT", "cpu_use_openmp", "cpu_openmp", "Status", "Backend", "DType", "Recipe", "Gran", "Round", "Rule",
           "Selection", "Layout"]


class HotError(RuntimeError):
    """A libhot call failed. `status` (hot.Status), `status_name` ("HOT_ERR_SHAPE") and
    `message` (hot_errmsg of the call) say why; str() is "HOT_ERR_...: message"."""

    def __init__(self, status, message, call=None):
        self.status = Status(status) if 0 <= int(status) < Status.COUNT else int(status)
        self.status_name = status_name(status)
        self.message = message
        self.call = call
        where = f"{call}: " if call else ""
        super().__init__(f"{where}{self.status_name}: {message}")


def status_name(status):
    """Static name of a status code ("HOT_OK", "HOT_ERR_INVALID", ...)."""
    return _lib.lib().hot_status_name(int(status)).decode()


def cpu_use_openmp(runtime):
    """Runs the CPU backend's parallel regions on the workers of an OpenMP runtime already loaded
    in this process ("libgomp.so.1": GNU OpenMP, which PyTorch's CPU operators use; LLVM's
    "libomp.so" or Intel's "libiomp5.so"), or on hot's own threads with None. Process-wide; the
    gradients are the same bits either way. The package does this by itself when it loads libhot
    with HOT_CPU_OPENMP set (docs/python.md). Raises HotError: HOT_ERR_NOT_FOUND (not loaded here, or not
    an OpenMP runtime), HOT_ERR_INVALID (an empty or too long name); TypeError for a non-string."""
    if runtime is not None and not isinstance(runtime, str):
        raise TypeError(f"cpu_use_openmp: runtime must be a str or None, not {type(runtime).__name__}")
    st = _lib.lib().hot_cpu_use_openmp(None if runtime is None else runtime.encode())
    if st != Status.OK:
        why = (f"an empty name, or one of {_lib.HOT_NAME_MAX} bytes or more" if st == Status.ERR_INVALID else
               "not loaded in this process, or not an OpenMP runtime (no GOMP_parallel)")
        raise HotError(st, f"runtime {runtime!r}: {why}", "cpu_use_openmp")


def cpu_openmp():
    """The OpenMP runtime the CPU backend runs on ("libgomp.so.1"), or None for hot's own threads."""
    buf = ctypes.create_string_buffer(_lib.HOT_NAME_MAX)
    return buf.value.decode() if _lib.lib().hot_cpu_openmp(buf, len(buf)) else None


def cpu_regions():
    """hot_cpu_regions: the parallel regions the CPU backend has run on more than one thread in
    this process (a counter for benchmarks and tests: the difference across a call)."""
    return int(_lib.lib().hot_cpu_regions())


def cpu_openmp_fallbacks():
    """hot_cpu_openmp_fallbacks: how often the CPU backend, on an OpenMP runtime's workers, has
    fallen back to its own threads for a second (late regions: CPUs shared with other processes)
    in this process (a counter for benchmarks: the difference across a step)."""
    return int(_lib.lib().hot_cpu_openmp_fallbacks())


_I64 = (-(1 << 63), (1 << 63) - 1)


def _c_int(name, v, lo, hi):
    """v as the int a C integer argument or field receives, in [lo, hi]: TypeError for what is
    not an integer (a float, a str, a bool), ValueError outside the range (ctypes would pass the
    value cut to the C type's bits: batch=2**64 + 16 as 16)."""
    if isinstance(v, bool) or not hasattr(type(v), "__index__"):
        raise TypeError(f"{name} must be an int (got {type(v).__name__} {v!r})")
    v = v.__index__()
    if not lo <= v <= hi:
        raise ValueError(f"{name} = {v} is not in [{lo}, {hi}]")
    return v


def _addr(call, name, v):
    """v as a pointer argument (an address, or a CUstream) of `call`: None (NULL) or an int in
    [0, 2^64). ctypes would pass 2**64 + p as p, -1 as 0xffff..., True as address 1 and a str
    or bytes as the address of its own characters: TypeError / ValueError naming the argument."""
    if v is None:
        return None
    try:
        if isinstance(v, bool):
            raise TypeError
        v = v.__index__()  # an int, a numpy integer (arrays have __index__ too, and raise)
    except (TypeError, AttributeError):
        raise TypeError(f"{call}: {name} must be an address (int) or None "
                        f"(got {type(v).__name__})") from None
    if not 0 <= v < 1 << 64:
        raise ValueError(f"{call}: {name} = {v} is not an address (0 .. 2^64 - 1)")
    return v


def _c_path(what, v):
    """A path argument as the bytes C receives: str, bytes or os.PathLike, encoded as the file
    system does (os.fsencode: names that are not UTF-8 round-trip). TypeError for another type
    (str() of bytes or None would name another file), ValueError for a NUL (C would stop there)."""
    try:
        b = os.fsencode(v)
    except TypeError:
        raise TypeError(f"{what} must be a str, bytes or os.PathLike path "
                        f"(got {type(v).__name__})") from None
    if b"\0" in b:
        raise ValueError(f"{what} {v!r} contains a NUL character (C would end the path there)")
    return b


def _c_text(what, v):
    """A name argument (a layer name, an arch) as the UTF-8 bytes C receives: a str without
    NUL characters (TypeError / ValueError naming the argument)."""
    if not isinstance(v, str):
        raise TypeError(f"{what} must be a str (got {type(v).__name__})")
    if "\0" in v:
        raise ValueError(f"{what} {v!r} contains a NUL character (C would end the name there)")
    try:
        return v.encode("utf-8")
    except UnicodeEncodeError as e:
        raise ValueError(f"{what} {v!r} cannot be encoded in UTF-8 ({e.reason})") from None


def _describe_array(a):
    """What an argument that should be an array is, for a message."""
    if not hasattr(a, "shape") or not hasattr(a, "dtype"):
        return type(a).__name__
    flags = getattr(a, "flags", None)
    extra = "" if flags is None else ("" if flags.c_contiguous else ", not C-contiguous") + \
        ("" if flags.writeable else ", read-only")
    return f"{a.dtype} of shape {tuple(a.shape)}{extra}"


def _str(b):
    return b.decode("utf-8", "replace") if isinstance(b, bytes) else str(b)


_DTYPE_NAMES = {"f32": DType.F32, "float32": DType.F32, "bf16": DType.BF16,
                "bfloat16": DType.BF16, "f16": DType.F16, "float16": DType.F16}
_RECIPE_NAMES = {"hot": Recipe.HOT, "paper": Recipe.PAPER, "paper_code": Recipe.PAPER_CODE,
                 "nvfp4": Recipe.NVFP4}
_BACKEND_NAMES = {None: Backend.DEFAULT, "default": Backend.DEFAULT, "auto": Backend.AUTO,
                  "cuda": Backend.CUDA, "cpu": Backend.CPU}


def as_dtype(v, what="dtype"):
    """DType from a DType, its value or a name ("f32", "bf16", "f16", "float32", ...)."""
    if isinstance(v, DType):
        return v
    if isinstance(v, str) and v.lower() in _DTYPE_NAMES:
        return _DTYPE_NAMES[v.lower()]
    if isinstance(v, int) and not isinstance(v, bool) and v in {int(d) for d in DType}:
        return DType(v)
    raise ValueError(f"{what} must be one of f32, bf16, f16 (got {v!r})")


def as_recipe(v):
    """Recipe from a Recipe, its value or a name ("hot", "paper", "paper_code", "nvfp4")."""
    if isinstance(v, Recipe):
        return v
    if isinstance(v, str) and v in _RECIPE_NAMES:
        return _RECIPE_NAMES[v]
    if isinstance(v, int) and not isinstance(v, bool) and v in (0, 1, 2, 3):
        return Recipe(v)
    raise ValueError(f"recipe must be one of hot, paper, paper_code, nvfp4 (got {v!r})")


# ---- stable Philox streams --------------------------------------------------------------------

LAYER_ID_LIMIT = 1 << 27  # hot_layer_create_with_id: ids in [0, 2^27) (tag = id * 16 + tensor)
_M64 = (1 << 64) - 1


def _stream_bytes(tag):
    """The bytes hot_layer_create_named hashes for a stream tag (its UTF-8 encoding); ValueError
    for what C cannot receive: not a str, empty, a NUL character, or not encodable."""
    if not isinstance(tag, str) or not tag or "\0" in tag:
        raise ValueError(f"tag must be a non-empty str without NUL characters (got {tag!r})")
    return _c_text("tag", tag)


def stream_hash(tag):
    """The 64-bit identity of a stream tag: FNV-1a 64 of its UTF-8 bytes. Two tags share a
    random stream (under one seed) exactly when their hashes are equal."""
    h = 0xCBF29CE484222325
    for b in _stream_bytes(tag):
        h = ((h ^ b) * 0x100000001B3) & _M64
    return h


def layer_id_for(tag):
    """The Philox layer id of a layer named `tag` (a str): stream_hash(tag) xor-folded to 27
    bits, h ^ (h >> 27) ^ (h >> 54), low 27 bits; the counter's tag is id * 16 + tensor. The
    same in every process, on every machine and rank, whatever order layers are created in.
    Ids of different tags collide (2^-27 per pair); a layer made with stream=tag is also keyed by
    the tag (stream_key), so such layers still draw different numbers."""
    h = stream_hash(tag)
    return (h ^ (h >> 27) ^ (h >> 54)) & (LAYER_ID_LIMIT - 1)


def stream_key(tag, seed):
    """The Philox key of a layer made with stream=tag (hot_layer_create_named) in a context of
    seed `seed` (what its info().seed reports): splitmix64's finaliser of seed ^ stream_hash(tag).
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= _M64:
        raise ValueError(f"seed must be a 64-bit unsigned integer (got {seed!r})")
    z = seed ^ stream_hash(tag)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


# ---- plain records --------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Stats:
    """hot_stats: what a context did so far (see hot.h)."""
    backend: str
    fell_back: bool
    fallback_reason: str
    device_name: str
    arch: str
    cache_dir: str
    compiles: int
    compile_failures: int
    memory_hits: int
    disk_hits: int
    disk_rejects: int
    compile_ms: float
    layers: int
    saves: int
    backwards: int
    calibrations: int
    launches: int
    saved_bytes: int
    saved_fp32_bytes: int
    workspace_bytes: int


@dataclasses.dataclass(frozen=True)
class LayerInfo:
    """hot_layer_info: what a layer is (see hot.h). dtype and gran are enum members."""
    name: str
    layer_id: int
    T: int
    O: int
    I: int
    B: int
    L: int
    dtype: DType
    bias: bool
    gran: Gran
    gran_auto: bool
    calibrated: bool
    lqs_e_tensor: float
    lqs_e_token: float
    saved_bytes: int
    fp32_bytes: int
    compiled: bool
    arch: str
    seed: int
    tiles: str  # where the GEMM tiles came from: "tuned: ...", "spec", "default (...)"


@dataclasses.dataclass(frozen=True)
class KernelTime:
    """One timed kernel launch (hot_kernel_time; CUDA backend with profiling on)."""
    name: str
    role: int
    phase: int
    ms: float


# ---- layer descriptions -------------------------------------------------------------------------

class LayerSpec:
    """A layer description for Context.create_layer: the C hot_layer_spec, starting from a
    recipe's defaults (libhot's own, so Python and C cannot disagree on them). Fields are read
    and written as in C, through `.c` (the ctypes struct), e.g.

        s = hot.LayerSpec(in_features=768, out_features=3072, recipe="hot")
        s.c.hq.block = 32; s.c.hla.keep = 25; s.c.hq.g.gran = hot.Gran.ROW
    """

    def __init__(self, in_features=0, out_features=0, *, recipe="hot", name="layer", bias=True,
                 dtype="f32"):
        self.recipe = as_recipe(recipe)
        self.c = _lib.hot_layer_spec()
        _lib.spec_defaults(self.c, self.recipe)
        self.name = name
        self.c.in_features = _c_int("in_features", in_features, *_I64)
        self.c.out_features = _c_int("out_features", out_features, *_I64)
        self.c.bias = 1 if bias else 0
        self.c.dtype = int(as_dtype(dtype))

    @classmethod
    def _from_c(cls, c_spec, recipe):
        self = cls.__new__(cls)
        self.recipe = as_recipe(recipe)
        self.c = _lib.hot_layer_spec()
        ctypes.pointer(self.c)[0] = c_spec  # copy
        return self

    def copy(self):
        """An independent copy."""
        return LayerSpec._from_c(self.c, self.recipe)

    @property
    def name(self):
        return _str(self.c.name)

    @name.setter
    def name(self, v):
        b = _c_text("name", str(v))
        if len(b) >= _lib.HOT_NAME_MAX:
            raise ValueError(f"name must be shorter than {_lib.HOT_NAME_MAX} bytes (got {v!r})")
        self.c.name = b

    @property
    def in_features(self):
        return self.c.in_features

    @property
    def out_features(self):
        return self.c.out_features

    @property
    def bias(self):
        return bool(self.c.bias)

    @property
    def dtype(self):
        return DType(self.c.dtype)

    def __repr__(self):
        c = self.c
        return (f"LayerSpec(name={self.name!r}, in_features={c.in_features}, "
                f"out_features={c.out_features}, bias={bool(c.bias)}, dtype={DType(c.dtype).name}, "
                f"recipe={self.recipe.name}, hq.block={c.hq.block}, hla.block={c.hla.block}, "
                f"hla.keep={c.hla.keep}, abc={c.abc.enabled})")


# ---- context --------------------------------------------------------------------------------

class Context:
    """hot_ctx: a backend, a kernel cache and the layers made in it.

    Arguments (None = from the environment, as hot_options_init; see hot.h):
      backend    "auto", "cuda", "cpu" ($HOT_BACKEND, else auto)
      device     CUDA device index ($HOT_DEVICE, else 0)
      arch       an arch of hot's arch table, e.g. "sm_90" ($HOT_ARCH, else the device's;
                 an unknown name raises HotError listing the known ones)
      cache_dir  kernel cache directory; disk_cache True/False
      seed       Philox key of stochastic rounding ($HOT_SEED, else the spec's, else the default)
      jit_debug  True/False; debug_dir

    Raises HotError (with hot's message) when the context cannot be created; a failed C
    context is destroyed before the exception leaves. When backend "auto" falls back to the CPU
    although a CUDA device is present (a compute capability hot has no kernels for, such as
    10.x or 12.x; a CUDA error), the context is created and a RuntimeWarning says why (hot's
    "warning: ..." line, kept in `warning`)."""

    def __init__(self, backend=None, *, device=None, arch=None, cache_dir=None, disk_cache=None,
                 seed=None, jit_debug=None, debug_dir=None):
        L = _lib.lib()
        self._lock = threading.RLock()
        self._handle = None
        self._layers = weakref.WeakSet()
        self._threads_followed = None  # _follow_threads' last count
        self._threads_pinned = None
        if backend not in _BACKEND_NAMES and not isinstance(backend, Backend):
            raise ValueError(f"backend must be one of auto, cuda, cpu (got {backend!r})")
        o = _lib.hot_options()
        L.hot_options_init(ctypes.byref(o))
        o.backend = int(backend) if isinstance(backend, Backend) else int(_BACKEND_NAMES[backend])
        if device is not None:
            if _c_int("device", device, -(1 << 31), (1 << 31) - 1) < 0:
                raise ValueError(f"device must be >= 0 (got {device})")
            o.device = device
        self._keep = []  # the option strings must live until hot_ctx_create returns
        for field, v in (("arch", arch), ("cache_dir", cache_dir), ("debug_dir", debug_dir)):
            if v is not None:
                b = _c_text(field, v) if field == "arch" else _c_path(field, v)
                self._keep.append(b)
                setattr(o, field, b)
        if disk_cache is not None:
            o.disk_cache = 1 if disk_cache else -1
        if jit_debug is not None:
            o.jit_debug = 1 if jit_debug else -1
        if seed is not None:
            s = _c_int("seed", seed, -(1 << 64), 1 << 64)  # the range below says more
            if s < 0 or s >= 1 << 64:
                raise ValueError(f"seed must be a 64-bit unsigned integer (got {seed})")
            o.seed_set, o.seed = 1, s
        h = ctypes.c_void_p()
        st = L.hot_ctx_create(ctypes.byref(h), ctypes.byref(o))
        self._keep = None
        if st != Status.OK:
            msg = _str(L.hot_errmsg(h))
            L.hot_ctx_destroy(h)
            raise HotError(st, msg, "hot_ctx_create")
        self._handle = h
        self._L = L
        msg = _str(L.hot_errmsg(h))
        self.warning = msg if msg.startswith("warning: ") else None
        if self.warning:
            warnings.warn(f"hot.Context: {self.warning}", RuntimeWarning, stacklevel=2)
        # the CUDA device index the context runs on (hot_ctx_create read $HOT_DEVICE just now,
        # strictly: a bad value failed it), None for the CPU backend
        self.device = None
        if self.backend == "cuda":
            self.device = int(device) if device is not None else \
                _numbers.env_int("HOT_DEVICE", 0, 1024, 0)

    # -- lifetime
    def close(self):
        """Destroys the context and every layer made in it (their objects become unusable). On
        CUDA each layer's memory is freed only once its last call's work has completed (hot
        waits for the event it recorded after that call; see hot_ctx_destroy)."""
        with self._lock:
            if self._handle is None:
                return
            for layer in list(self._layers):
                layer._handle = None
            self._L.hot_ctx_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: ctypes may be gone
            pass

    @property
    def closed(self):
        return self._handle is None

    def __deepcopy__(self, memo):
        return self  # a context is a resource (backend, cache, device memory): shared, not copied

    def __reduce__(self):
        raise TypeError("a hot.Context cannot be pickled (it owns C handles); create a new one "
                        "where it is needed")

    def _h(self):
        if self._handle is None:
            raise ValueError("hot.Context is closed")
        return self._handle

    def _check(self, st, call):
        """Raises HotError for a status other than HOT_OK (call with the lock held)."""
        if st != Status.OK:
            raise HotError(st, _str(self._L.hot_errmsg(self._handle)), call)

    # -- queries
    @property
    def backend(self):
        """"cuda" or "cpu": which pointers the layer calls expect."""
        with self._lock:
            return _str(self._L.hot_backend_name(self._L.hot_ctx_backend(self._h())))

    @property
    def errmsg(self):
        """hot_errmsg: the message of the last call ("" after a success)."""
        with self._lock:
            return _str(self._L.hot_errmsg(self._h()))

    @property
    def compile_log(self):
        """hot_compile_log: the compiler log of the latest compile ("" when none)."""
        with self._lock:
            return _str(self._L.hot_compile_log(self._h()))

    def stats(self):
        """hot_ctx_stats as a Stats record."""
        s = _lib.hot_stats()
        with self._lock:
            self._check(self._L.hot_ctx_stats(self._h(), ctypes.byref(s)), "hot_ctx_stats")
        return Stats(backend=_str(self._L.hot_backend_name(s.backend)),
                     fell_back=bool(s.fell_back), fallback_reason=_str(s.fallback_reason),
                     device_name=_str(s.device_name), arch=_str(s.arch),
                     cache_dir=_str(s.cache_dir), compiles=s.compiles,
                     compile_failures=s.compile_failures, memory_hits=s.memory_hits,
                     disk_hits=s.disk_hits, disk_rejects=s.disk_rejects,
                     compile_ms=s.compile_ms, layers=s.layers, saves=s.saves,
                     backwards=s.backwards, calibrations=s.calibrations, launches=s.launches,
                     saved_bytes=s.saved_bytes, saved_fp32_bytes=s.saved_fp32_bytes,
                     workspace_bytes=s.workspace_bytes)

    def set_profiling(self, on):
        """hot_ctx_set_profiling (CUDA backend; turning it on for the CPU raises)."""
        with self._lock:
            self._check(self._L.hot_ctx_set_profiling(self._h(), 1 if on else 0),
                        "hot_ctx_set_profiling")

    # -- the CPU backend's threads
    @property
    def cpu_threads(self):
        """hot_ctx_cpu_threads: the threads (the caller's included) this context's CPU calls run
        on now; 0 for a CUDA context."""
        with self._lock:
            return int(self._L.hot_ctx_cpu_threads(self._h(), None))

    @property
    def cpu_threads_pinned(self):
        """True when HOT_CPU_THREADS gave the count this context started with (hot.torch then
        leaves the count alone; docs/python.md)."""
        pinned = ctypes.c_int(0)
        with self._lock:
            self._L.hot_ctx_cpu_threads(self._h(), ctypes.byref(pinned))
        return bool(pinned.value)

    def set_cpu_threads(self, n):
        """hot_ctx_set_cpu_threads: the later CPU calls run on n threads (1 ... 256), or on the
        count the context started with (n = 0). Same bits for any count. Raises HotError
        (HOT_ERR_UNSUPPORTED on a CUDA context), ValueError for n out of range, TypeError for a
        non-integer."""
        if isinstance(n, bool) or not hasattr(type(n), "__index__"):  # numpy integers too
            raise TypeError(f"set_cpu_threads: n must be an int (got {type(n).__name__})")
        n = n.__index__()
        if not 0 <= n <= _lib.HOT_MAX_CPU_THREADS:
            raise ValueError(f"set_cpu_threads: n = {n} is not in [0, {_lib.HOT_MAX_CPU_THREADS}] "
                             "(0: the count the context started with)")
        with self._lock:
            self._check(self._L.hot_ctx_set_cpu_threads(self._h(), n), "hot_ctx_set_cpu_threads")

    def _follow_threads(self, n):
        """hot.torch's rule before each CPU call: the call runs on n threads (torch's count),
        unless HOT_CPU_THREADS pinned this context's own. A C call only when n changed."""
        if n == self._threads_followed:
            return
        with self._lock:
            if self._threads_pinned is None:
                pinned = ctypes.c_int(0)
                cpu = self._L.hot_ctx_cpu_threads(self._h(), ctypes.byref(pinned)) > 0
                self._threads_pinned = bool(pinned.value) or not cpu
            if not self._threads_pinned:
                self.set_cpu_threads(max(1, min(int(n), _lib.HOT_MAX_CPU_THREADS)))
            self._threads_followed = n

    # -- layers
    def layer_from_spec(self, path, layer_name, batch=0):
        """hot_layer_from_spec: layer `layer_name` of the spec file `path` (batch > 0 overrides
        the spec's batch). Raises HotError (HOT_ERR_SPEC with "file:line: ...",
        HOT_ERR_NOT_FOUND listing the spec's layers, ...)."""
        batch = _c_int("batch", batch, *_I64)
        if batch < 0:
            raise ValueError(f"batch must be >= 0 (got {batch})")
        path = _c_path("layer_from_spec: path", path)
        layer_name = _c_text("layer_from_spec: layer_name", layer_name)
        h = ctypes.c_void_p()
        with self._lock:
            st = self._L.hot_layer_from_spec(self._h(), path, layer_name, int(batch),
                                             ctypes.byref(h))
            self._check(st, "hot_layer_from_spec")
            return Layer(self, h)

    def create_layer(self, in_features=None, out_features=None, batch=1, tokens=1, *,
                     recipe="hot", spec=None, name="layer", bias=True, dtype="f32",
                     layer_id=None, stream=None):
        """hot_layer_create: a layer of T = batch * tokens rows. Either give the sizes (and
        optionally name, bias, dtype; the recipe's defaults for the rest) or a LayerSpec (then
        the other description arguments must be left out). The random stream: by default the
        context's creation count is the Philox layer id (hot_layer_create); stream="tag" keys
        it by that name (hot_layer_create_named: id layer_id_for(tag), key stream_key(tag,
        seed); what hot.torch uses); layer_id=N, an int in [0, 2^27), takes that id with the
        context's seed as key (hot_layer_create_with_id). Not both. Raises HotError
        (HOT_ERR_SHAPE, HOT_ERR_PLAN with the planner's reason, ...)."""
        if spec is None:
            if in_features is None or out_features is None:
                raise ValueError("create_layer needs in_features and out_features, or spec=")
            spec = LayerSpec(in_features, out_features, recipe=recipe, name=name, bias=bias,
                             dtype=dtype)
        elif not isinstance(spec, LayerSpec):
            raise TypeError(f"spec must be a hot.LayerSpec (got {type(spec).__name__})")
        elif in_features is not None or out_features is not None:
            raise ValueError("give either the sizes or spec=, not both")
        if layer_id is not None:
            if isinstance(layer_id, bool) or not isinstance(layer_id, int) or \
                    not 0 <= layer_id < LAYER_ID_LIMIT:
                raise ValueError(f"layer_id must be an int in [0, 2^27) (got {layer_id!r}); "
                                 "hot.layer_id_for(tag) makes one from a name")
        if stream is not None:
            if layer_id is not None:
                raise ValueError("give stream= or layer_id=, not both")
            stream = _stream_bytes(stream)
        batch, tokens = _c_int("batch", batch, *_I64), _c_int("tokens", tokens, *_I64)
        h = ctypes.c_void_p()
        with self._lock:
            if stream is not None:
                st = self._L.hot_layer_create_named(self._h(), ctypes.byref(spec.c), int(batch),
                                                    int(tokens), int(spec.recipe), stream,
                                                    ctypes.byref(h))
                self._check(st, "hot_layer_create_named")
            elif layer_id is None:
                st = self._L.hot_layer_create(self._h(), ctypes.byref(spec.c), int(batch),
                                              int(tokens), int(spec.recipe), ctypes.byref(h))
                self._check(st, "hot_layer_create")
            else:
                st = self._L.hot_layer_create_with_id(self._h(), ctypes.byref(spec.c), int(batch),
                                                      int(tokens), int(spec.recipe),
                                                      int(layer_id), ctypes.byref(h))
                self._check(st, "hot_layer_create_with_id")
            return Layer(self, h)

    def compile(self, layers):
        """hot_ctx_compile: compiles (or finds in the cache) the kernels of `layers`, in order."""
        layers = list(layers)
        with self._lock:
            arr = (ctypes.c_void_p * max(1, len(layers)))()
            for i, layer in enumerate(layers):
                if not isinstance(layer, Layer) or layer._ctx is not self:
                    raise ValueError(f"layers[{i}] is not a layer of this context")
                arr[i] = layer._h()
            self._check(self._L.hot_ctx_compile(self._h(), arr, len(layers)), "hot_ctx_compile")

    def __repr__(self):
        if self._handle is None:
            return "hot.Context(closed)"
        return f"hot.Context(backend={self.backend!r})"


# ---- layer ----------------------------------------------------------------------------------

def _np():
    import numpy
    return numpy


class Layer:
    """hot_layer: made by Context.layer_from_spec / create_layer. Holds its context alive."""

    def __init__(self, ctx, handle):
        self._ctx = ctx
        self._handle = handle
        ctx._layers.add(self)
        self._info = None
        self._info = self.info()

    def _h(self):
        if self._handle is None:
            raise ValueError("hot.Layer is destroyed (or its context closed)")
        return self._handle

    def destroy(self):
        """hot_layer_destroy (on CUDA it first waits for the work of the layer's last call, so
        the garbage collector may destroy a layer whose kernels still run)."""
        ctx = self._ctx
        with ctx._lock:
            if self._handle is not None and ctx._handle is not None:
                ctx._L.hot_layer_destroy(self._handle)
            self._handle = None

    def __del__(self):
        try:
            self.destroy()
        except Exception:  # interpreter shutdown
            pass

    @property
    def context(self):
        return self._ctx

    def __deepcopy__(self, memo):
        return self  # owns a C handle: shared, not copied

    def __reduce__(self):
        raise TypeError("a hot.Layer cannot be pickled (it owns a C handle)")

    def info(self):
        """hot_layer_get_info as a LayerInfo record (fresh: calibration changes it)."""
        i = _lib.hot_layer_info()
        with self._ctx._lock:
            self._ctx._check(self._ctx._L.hot_layer_get_info(self._h(), ctypes.byref(i)),
                             "hot_layer_get_info")
        return LayerInfo(name=_str(i.name), layer_id=i.layer_id, T=i.T, O=i.O, I=i.I, B=i.B,
                         L=i.L, dtype=DType(i.dtype), bias=bool(i.bias), gran=Gran(i.gran),
                         gran_auto=bool(i.gran_auto), calibrated=bool(i.calibrated),
                         lqs_e_tensor=i.lqs_e_tensor, lqs_e_token=i.lqs_e_token,
                         saved_bytes=i.saved_bytes, fp32_bytes=i.fp32_bytes,
                         compiled=bool(i.compiled), arch=_str(i.arch), seed=i.seed,
                         tiles=_str(i.tiles))

    def spec(self):
        """A LayerSpec copy of the description the layer was planned from (for a spec-file
        layer: the spec's settings), with recipe `hot` recorded (the planner does not use the
        recipe; the settings already carry it)."""
        sp = _lib.hot_layer_spec()
        with self._ctx._lock:
            self._ctx._check(self._ctx._L.hot_layer_get_spec(self._h(), ctypes.byref(sp)),
                             "hot_layer_get_spec")
        return LayerSpec._from_c(sp, Recipe.HOT)

    @property
    def saved_bytes(self):
        """hot_layer_saved_bytes: bytes of the buffer save() writes."""
        with self._ctx._lock:
            return int(self._ctx._L.hot_layer_saved_bytes(self._h()))

    def check(self):
        """hot_layer_check: waits for the layer's backwards in flight (CUDA: their events, not the
        whole stream) and raises HotError(ERR_RANGE) if an output of one of them, or of an
        earlier backward not reported yet, overflowed fp32 (each overflow is reported once)."""
        with self._ctx._lock:
            self._ctx._check(self._ctx._L.hot_layer_check(self._h()), "hot_layer_check")

    def compile(self):
        """hot_layer_compile: JIT warm-up (a no-op on the CPU backend without a forced arch)."""
        with self._ctx._lock:
            self._ctx._check(self._ctx._L.hot_layer_compile(self._h()), "hot_layer_compile")

    def kernel_times(self):
        """hot_layer_kernel_times: the launches of the last call (CUDA, profiling on)."""
        n = ctypes.c_int()
        with self._ctx._lock:
            L = self._ctx._L
            self._ctx._check(L.hot_layer_kernel_times(self._h(), None, 0, ctypes.byref(n)),
                             "hot_layer_kernel_times")
            arr = (_lib.hot_kernel_time * max(1, n.value))()
            self._ctx._check(L.hot_layer_kernel_times(self._h(), arr, n.value, ctypes.byref(n)),
                             "hot_layer_kernel_times")
            return [KernelTime(_str(k.name), k.role, k.phase, k.ms) for k in arr[:n.value]]

    # -- raw-pointer calls (framework level): addresses and the stream are ints (or None for
    # NULL) in [0, 2^64), refused by name otherwise
    def save_ptr(self, x, dtype, saved=None, stream=None):
        """hot_layer_save on raw addresses: x (T x I of dtype), saved (None: the layer's own
        buffer, else saved_bytes bytes, 16-byte aligned), stream (CUstream as int, or None)."""
        c = "save_ptr"
        x, saved, stream = _addr(c, "x", x), _addr(c, "saved", saved), _addr(c, "stream", stream)
        with self._ctx._lock:
            st = self._ctx._L.hot_layer_save(self._h(), x, int(as_dtype(dtype)), saved, stream)
            self._ctx._check(st, "hot_layer_save")

    def backward_ptr(self, g_y, w, dtype, g_x, g_w, g_b=None, saved=None, step=0, stream=None):
        """hot_layer_backward on raw addresses (g_x, g_w, g_b: fp32 outputs)."""
        step = _check_step(step)
        c = "backward_ptr"
        g_y, w, g_x, g_w, g_b, saved, stream = (
            _addr(c, n, v) for n, v in (("g_y", g_y), ("w", w), ("g_x", g_x), ("g_w", g_w),
                                        ("g_b", g_b), ("saved", saved), ("stream", stream)))
        with self._ctx._lock:
            st = self._ctx._L.hot_layer_backward(self._h(), g_y, w, int(as_dtype(dtype)), saved,
                                                 g_x, g_w, g_b, step, stream)
            self._ctx._check(st, "hot_layer_backward")

    def calibrate_ptr(self, g_y, dtype, step=0, stream=None):
        """hot_layer_calibrate on a raw address (synchronous on CUDA)."""
        step = _check_step(step)
        g_y, stream = _addr("calibrate_ptr", "g_y", g_y), _addr("calibrate_ptr", "stream", stream)
        with self._ctx._lock:
            st = self._ctx._L.hot_layer_calibrate(self._h(), g_y, int(as_dtype(dtype)), step,
                                                  stream)
            self._ctx._check(st, "hot_layer_calibrate")

    # -- numpy calls (host memory: the CPU backend)
    def _array(self, a, name, rows, cols):
        np = _np()
        if not isinstance(a, np.ndarray):
            raise TypeError(f"{name} must be a numpy array (got {type(a).__name__})")
        want = {DType.F32: np.float32, DType.F16: np.float16, DType.BF16: np.uint16}
        dt = self._info.dtype
        if a.dtype != want[dt]:
            hint = " (bf16 bit patterns as uint16)" if dt == DType.BF16 else ""
            raise TypeError(f"{name} must be {np.dtype(want[dt]).name}{hint} for this "
                            f"{dt.name.lower()} layer (got {a.dtype})")
        if a.size != rows * cols or (a.ndim >= 1 and a.shape[-1] != cols):
            raise ValueError(f"{name} must hold {rows} x {cols} elements, last axis {cols} "
                             f"(got shape {a.shape})")
        if not a.flags.c_contiguous:
            raise ValueError(f"{name} must be C-contiguous (got strides {a.strides}); "
                             "use numpy.ascontiguousarray")
        return a

    def _host_only(self):
        self._h()
        if self._ctx.backend != "cpu":
            raise ValueError("numpy arrays are host memory: use a CPU-backend context, or the "
                             "*_ptr calls with device pointers")

    def new_saved_buffer(self):
        """A 16-byte aligned numpy uint8 array of saved_bytes bytes, for save(saved=...)."""
        np = _np()
        n = self.saved_bytes
        raw = np.empty(n + 16, dtype=np.uint8)
        off = (-raw.ctypes.data) % 16
        return raw[off:off + n]

    def save(self, x, saved=None):
        """Forward (ABC): x (T x I numpy array of the layer's dtype). saved: None (the layer's
        own buffer) or a writable array from new_saved_buffer(), kept until the matching
        backward (which only reads it)."""
        self._host_only()
        i = self._info
        x = self._array(x, "x", i.T, i.I)
        sp = self._saved_arg(saved, write=True)
        self.save_ptr(x.ctypes.data, i.dtype, sp)

    def _saved_arg(self, saved, write=False):
        if saved is None:
            return None
        np = _np()
        n = self.saved_bytes
        if not isinstance(saved, np.ndarray) or saved.dtype != np.uint8 or saved.size != n \
                or not saved.flags.c_contiguous:
            raise ValueError(f"saved must be a C-contiguous numpy uint8 array of {n} bytes "
                             "(new_saved_buffer())")
        if saved.ctypes.data % 16:
            raise ValueError("saved must be 16-byte aligned (new_saved_buffer())")
        if write and not saved.flags.writeable:
            raise ValueError("saved must be writable: save() writes the activations into it "
                             "(new_saved_buffer())")
        return saved.ctypes.data

    def backward(self, g_y, w, step=0, saved=None, out=None, outputs=None):
        """Backward: g_y (T x O), w (O x I), both of the layer's dtype -> (g_x (T x I), g_w
        (O x I), g_b (O) or None when the layer has no bias), numpy float32. `step`: the
        training step (Philox counter of the stochastic rounding; new value each step).
        out: optional (g_x, g_w, g_b) float32 arrays to write into. outputs: the gradients to
        compute, a subset of ("g_x", "g_w", "g_b") (default: all the layer has); the others come
        back None and cost nothing (without "g_w" the saved activations are not read, and no
        save is needed first). Each one computed has the bits it has when all are."""
        self._host_only()
        i = self._info
        named = outputs is not None  # out[2] None then drops g_b only where not named
        if outputs is None:
            outputs = ("g_x", "g_w", "g_b") if i.bias else ("g_x", "g_w")
        outputs = tuple(outputs) if not isinstance(outputs, str) else (outputs,)
        bad = [o for o in outputs if o not in ("g_x", "g_w", "g_b")]
        if bad or not outputs:
            raise ValueError(f"outputs must be a non-empty subset of ('g_x', 'g_w', 'g_b'), got "
                             f"{outputs!r}")
        if "g_b" in outputs and not i.bias:
            raise ValueError("outputs: 'g_b' asked of a layer without bias")
        g_y = self._array(g_y, "g_y", i.T, i.O)
        w = self._array(w, "w", i.O, i.I)
        gx, gw, gb = self._out_arrays(out, outputs, named)
        sp = self._saved_arg(saved)

        def ptr(a):
            return None if a is None else a.ctypes.data
        self.backward_ptr(g_y.ctypes.data, w.ctypes.data, i.dtype, ptr(gx), ptr(gw), ptr(gb), sp,
                          step)
        return gx, gw, gb

    def _out_arrays(self, out, outputs, named):
        """backward's (g_x, g_w, g_b): new float32 arrays for the outputs asked for, or the
        caller's `out` checked by the inputs' rule (_array: the elements of the matrix, its rows'
        length last; writable, C-contiguous float32); None for the others. named: outputs was
        given (out[2] None then drops g_b only where g_b is not named)."""
        np = _np()
        i = self._info
        shapes = {"g_x": (i.T, i.I), "g_w": (i.O, i.I), "g_b": (1, i.O)}
        if out is None:
            return tuple(np.empty((r, c) if n != "g_b" else (c,), np.float32)
                         if n in outputs else None for n, (r, c) in shapes.items())
        if not isinstance(out, (tuple, list)) or len(out) != 3:
            raise ValueError(f"out must be a tuple (g_x, g_w, g_b) of arrays or None (got "
                             f"{type(out).__name__}"
                             f"{' of %d' % len(out) if isinstance(out, (tuple, list)) else ''})")
        got = tuple(a if n in outputs else None for n, a in zip(shapes, out))
        for k, (a, (name, (rows, cols))) in enumerate(zip(got, shapes.items())):
            if a is None and ((k == 2 and not named) or name not in outputs):
                continue
            if not isinstance(a, np.ndarray) or a.dtype != np.float32 or \
                    a.size != rows * cols or a.ndim < 1 or a.shape[-1] != cols or \
                    not a.flags.c_contiguous or not a.flags.writeable:
                raise ValueError(f"out[{k}] ({name}) must be a writable C-contiguous float32 "
                                 f"array of {rows} x {cols} elements, last axis {cols} (got "
                                 f"{_describe_array(a)})")
        if got[2] is not None and not i.bias:
            raise ValueError("out[2] (g_b) given for a layer without bias")
        return got

    def calibrate(self, g_y, step=0):
        """LQS calibration on g_y (T x O, the layer's dtype); fixes the g' granularity of a
        layer whose spec says scale = "auto". Returns the fresh LayerInfo."""
        self._host_only()
        i = self._info
        g_y = self._array(g_y, "g_y", i.T, i.O)
        self.calibrate_ptr(g_y.ctypes.data, i.dtype, step)
        return self.info()

    def __repr__(self):
        if self._handle is None:
            return "hot.Layer(destroyed)"
        i = self._info
        return (f"hot.Layer({i.name!r}, T={i.T} (B={i.B} x L={i.L}), O={i.O}, I={i.I}, "
                f"{i.dtype.name.lower()}, saved {i.saved_bytes} bytes)")


def _check_step(step):
    s = _c_int("step", step, -(1 << 64), 1 << 64)  # the range below says more
    if s < 0 or s >= 1 << 32:
        raise ValueError(f"step must be in [0, 2^32) (got {step})")
    return s
