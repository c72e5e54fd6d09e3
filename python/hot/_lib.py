"""Loading libhot.so and the ctypes mirror of runtime/include/hot.h (and the parts of gen/plan.h
that hot.h exposes).

Every structure and enumeration here copies the C declaration field by field, in order;
python/tests/test_abi.py compares their offsets, sizes and values with a C program compiled
against the header, so a change of hot.h that this file does not follow fails a test.

Where the library is looked for, first hit wins (see find_library):
  1. $HOT_LIBRARY, the path of libhot.so (a relative path is taken from the current directory,
     never searched for; an error if it is set and names no file or does not load);
  2. libhot.so in this package's folder (`pip install ./python` builds it with CMake and puts
     it there);
  3. ctypes.util.find_library("hot") (ldconfig's cache, LD_LIBRARY_PATH);
  4. /usr/local/lib/libhot.so, /usr/local/lib64/libhot.so, /usr/lib/libhot.so.
The library is loaded on first use, so `import hot` works without it; the first call that needs
it raises HotLibraryError naming every place tried.
"""

import ctypes
import ctypes.util
import enum
import os
import threading
import warnings

c_int = ctypes.c_int
c_int64 = ctypes.c_int64
c_uint32 = ctypes.c_uint32
c_uint64 = ctypes.c_uint64
c_size_t = ctypes.c_size_t
c_double = ctypes.c_double
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_float_p = ctypes.POINTER(ctypes.c_float)

HOT_NAME_MAX = 64
HOT_MAX_KERNEL_TIMES = 32
HOT_MAX_CPU_THREADS = 256


# ---- enumerations (values as in hot.h / plan.h) ------------------------------------------------

class Status(enum.IntEnum):
    OK = 0
    ERR_INVALID = 1
    ERR_NOMEM = 2
    ERR_IO = 3
    ERR_NO_DRIVER = 4
    ERR_NO_DEVICE = 5
    ERR_NO_NVRTC = 6
    ERR_COMPILE = 7
    ERR_BAD_BINARY = 8
    ERR_NOT_FOUND = 9
    ERR_DEVICE_OOM = 10
    ERR_LAUNCH = 11
    ERR_CUDA = 12
    ERR_SPEC = 13
    ERR_PLAN = 14
    ERR_SHAPE = 15
    ERR_MISUSE = 16
    ERR_UNSUPPORTED = 17
    ERR_NONFINITE = 18
    ERR_INTERNAL = 19
    ERR_RANGE = 20
    COUNT = 21


class Backend(enum.IntEnum):
    DEFAULT = 0
    AUTO = 1
    CUDA = 2
    CPU = 3


class DType(enum.IntEnum):
    F32 = 0
    BF16 = 1
    F16 = 2


class Round(enum.IntEnum):
    RTN = 0
    SR = 1


class Gran(enum.IntEnum):
    TENSOR = 0
    ROW = 1
    AUTO = 2
    SAMPLE = 3


class Rule(enum.IntEnum):
    ABSMAX = 0
    SAWB = 1


class Selection(enum.IntEnum):
    TRI = 0
    PREFIX = 1
    FULL = 2


class Layout(enum.IntEnum):
    SAMPLE = 0
    FLAT = 1
    AUTO = 2


class Recipe(enum.IntEnum):
    HOT = 0
    PAPER = 1
    PAPER_CODE = 2
    NVFP4 = 3


# C constant name -> value, for the ABI test.
C_CONSTANTS = {"HOT_NAME_MAX": HOT_NAME_MAX, "HOT_MAX_KERNEL_TIMES": HOT_MAX_KERNEL_TIMES,
               "HOT_MAX_CPU_THREADS": HOT_MAX_CPU_THREADS}
for _s in Status:
    C_CONSTANTS["HOT_STATUS_COUNT" if _s is Status.COUNT else "HOT_" + _s.name] = int(_s)
for _prefix, _enum in (("HOT_BACKEND_", Backend), ("HOT_DT_", DType), ("HOT_ROUND_", Round),
                       ("HOT_GRAN_", Gran), ("HOT_RULE_", Rule), ("HOT_SEL_", Selection),
                       ("HOT_LAYOUT_", Layout), ("HOT_RECIPE_", Recipe)):
    for _v in _enum:
        C_CONSTANTS[_prefix + _v.name] = int(_v)


# ---- structures ---------------------------------------------------------------------------------

_INT_RANGES = {t: (-(1 << (8 * ctypes.sizeof(t) - 1)), (1 << (8 * ctypes.sizeof(t) - 1)) - 1)
               for t in (ctypes.c_int8, ctypes.c_int16, ctypes.c_int32, ctypes.c_int64)}
_INT_RANGES.update({t: (0, (1 << (8 * ctypes.sizeof(t))) - 1)
                    for t in (ctypes.c_uint8, ctypes.c_uint16, ctypes.c_uint32, ctypes.c_uint64)})


class _Checked(ctypes.Structure):
    """A structure whose integer fields refuse what ctypes would store cut to the C type (2**40
    into an int as 0, -1 into a uint64 as 2**64 - 1, 2.5 as a TypeError of ctypes' own): a
    ValueError or TypeError naming the field and its range. What LayerSpec.c's users write."""

    def __setattr__(self, name, value):
        t = dict(getattr(type(self), "_fields_", ())).get(name)
        lo_hi = _INT_RANGES.get(t)
        if lo_hi is not None:
            try:
                v = value.__index__()  # an int, a bool, a numpy integer
            except (AttributeError, TypeError):
                raise TypeError(f"{type(self).__name__}.{name} must be an int (got "
                                f"{type(value).__name__})") from None
            if not lo_hi[0] <= v <= lo_hi[1]:
                raise ValueError(f"{type(self).__name__}.{name} = {v} does not fit its C type "
                                 f"({lo_hi[0]} .. {lo_hi[1]})")
            value = v
        super().__setattr__(name, value)


class hot_options(_Checked):
    _fields_ = [("backend", c_int), ("device", c_int), ("arch", c_char_p),
                ("cache_dir", c_char_p), ("disk_cache", c_int), ("seed_set", c_int),
                ("seed", c_uint64), ("jit_debug", c_int), ("debug_dir", c_char_p)]


class hot_stats(ctypes.Structure):
    _fields_ = [("backend", c_int), ("fell_back", c_int),
                ("fallback_reason", ctypes.c_char * 256), ("device_name", ctypes.c_char * 128),
                ("arch", ctypes.c_char * 16), ("cache_dir", ctypes.c_char * 512),
                ("compiles", c_uint64), ("compile_failures", c_uint64),
                ("memory_hits", c_uint64), ("disk_hits", c_uint64), ("disk_rejects", c_uint64),
                ("compile_ms", c_double), ("layers", c_uint64), ("saves", c_uint64),
                ("backwards", c_uint64), ("calibrations", c_uint64), ("launches", c_uint64),
                ("saved_bytes", c_int64), ("saved_fp32_bytes", c_int64),
                ("workspace_bytes", c_int64)]


class hot_layer_info(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char * HOT_NAME_MAX), ("layer_id", c_int),
                ("T", c_int64), ("O", c_int64), ("I", c_int64), ("B", c_int64), ("L", c_int64),
                ("dtype", c_int), ("bias", c_int), ("gran", c_int), ("gran_auto", c_int),
                ("calibrated", c_int), ("lqs_e_tensor", c_double), ("lqs_e_token", c_double),
                ("saved_bytes", c_size_t), ("fp32_bytes", c_int64), ("compiled", c_int),
                ("arch", ctypes.c_char * 16), ("seed", c_uint64),
                ("tiles", ctypes.c_char * 256)]


class hot_kernel_time(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("role", c_int), ("phase", c_int), ("ms", c_double)]


class hot_quant(_Checked):
    _fields_ = [("bits", c_int), ("round", c_int), ("gran", c_int), ("rule", c_int)]


class hot_tile(_Checked):
    _fields_ = [("tile_m", c_int), ("tile_n", c_int), ("tile_k", c_int),
                ("warps_m", c_int), ("warps_n", c_int), ("stages", c_int)]


class hot_spec_hq(_Checked):
    _fields_ = [("enabled", c_int), ("block", c_int), ("g", hot_quant), ("w", hot_quant),
                ("pad", c_int)]


class hot_spec_hla(_Checked):
    _fields_ = [("enabled", c_int), ("block", c_int), ("selection", c_int), ("keep", c_int),
                ("rank", c_int), ("layout", c_int), ("pad", c_int), ("g", hot_quant),
                ("x", hot_quant)]


class hot_spec_abc(_Checked):
    _fields_ = [("enabled", c_int)]


class hot_layer_spec(_Checked):
    _fields_ = [("name", ctypes.c_char * HOT_NAME_MAX), ("line", c_int), ("tokens", c_int64),
                ("in_features", c_int64), ("out_features", c_int64), ("bias", c_int),
                ("dtype", c_int), ("hq", hot_spec_hq), ("hla", hot_spec_hla),
                ("abc", hot_spec_abc), ("tile_gx", hot_tile), ("tile_gw", hot_tile)]


# Nested structs that C declares anonymously inside hot_layer_spec (the ABI test names them by
# their field path, not by a type).
ANONYMOUS = (hot_spec_hq, hot_spec_hla, hot_spec_abc)
# Structs mirrored completely, by their C type name.
MIRRORED = (hot_options, hot_stats, hot_layer_info, hot_kernel_time, hot_quant, hot_tile,
            hot_layer_spec)


class HotLibraryError(OSError):
    """libhot.so could not be found or loaded, or lacks a function this package needs."""


# ---- loading ------------------------------------------------------------------------------------

_lock = threading.Lock()
_lib = None
_lib_path = None


def _candidates():
    """(path or name, how it was found) in search order; see the module docstring."""
    out = []
    here = os.path.dirname(os.path.abspath(__file__))
    out.append((os.path.join(here, "libhot.so"), "the package folder"))
    found = ctypes.util.find_library("hot")
    if found:
        out.append((found, "ctypes.util.find_library('hot')"))
    for d in ("/usr/local/lib", "/usr/local/lib64", "/usr/lib"):
        out.append((os.path.join(d, "libhot.so"), d))
    return out


def resolve_path(value, what):
    """A path given by the user (an environment variable or argument named `what`) as an
    absolute path: "~" expanded, a relative path taken from the current directory — never handed
    to the dynamic loader's search (a bare "libhot.so" would otherwise load whichever libhot.so
    LD_LIBRARY_PATH or the ldconfig cache holds). HotLibraryError naming `what` and the path when
    no such file exists."""
    path = os.path.abspath(os.path.expanduser(os.fspath(value)))
    if not os.path.isfile(path):
        why = "is a directory" if os.path.isdir(path) else "no such file"
        raise HotLibraryError(f"{what}={value}: {path}: {why} ({what} is a path, relative "
                              f"ones are taken from the current directory {os.getcwd()})")
    return path


def find_library():
    """Loads libhot (once per process) and returns (ctypes.CDLL, path). Raises HotLibraryError
    with the places tried when it cannot."""
    global _lib, _lib_path
    with _lock:
        if _lib is not None:
            return _lib, _lib_path
        env = os.environ.get("HOT_LIBRARY")
        if env:
            path = resolve_path(env, "HOT_LIBRARY")
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                raise HotLibraryError(
                    f"HOT_LIBRARY={env}: cannot load {path}: {e}") from None
            _declare(lib, path)
            _attach_openmp(lib)
            _lib, _lib_path = lib, path
            return lib, path
        tried = []
        for path, how in _candidates():
            if os.path.sep in path and not os.path.exists(path):
                tried.append(f"{path} ({how}: no such file)")
                continue
            try:
                lib = ctypes.CDLL(path)
            except OSError as e:
                tried.append(f"{path} ({how}: {e})")
                continue
            _declare(lib, path)
            _attach_openmp(lib)
            _lib, _lib_path = lib, path
            return lib, path
        raise HotLibraryError(
            "libhot.so not found; set HOT_LIBRARY to its path (build it with CMake: target "
            "hot_shared), or `pip install ./python` from the repository (which builds it into "
            "the package). Tried: " + "; ".join(tried))


def lib():
    """The loaded library (see find_library)."""
    return find_library()[0]


# ---- whose threads run the CPU backend ----------------------------------------------------------

OPENMP_ENV = "HOT_CPU_OPENMP"
GNU_OPENMP = "libgomp.so.1"


def _attach_openmp(lib_):
    """Where the CPU backend's parallel regions run (hot_cpu_use_openmp), from $HOT_CPU_OPENMP:
    unset, "" or "auto" (the default): on GNU OpenMP's workers when the process has libgomp.so.1
    loaded (PyTorch's CPU operators run on it: its workers spin for a few ms after each operator
    and take hot's tasks at once), else hot's own pool; "off", "0", "no" or "none": hot's own
    pool; another value: that runtime (a RuntimeWarning when it cannot be used, and hot's own
    pool). Same bits in every case. While attached, a region one of whose workers starts late
    (descheduled: other processes on the CPUs) sends the regions of the next second to hot's own
    pool, which runs a late worker's tasks on the caller instead of waiting a scheduler time
    slice for it at the region's end (docs/cpu-backend.md)."""
    v = os.environ.get(OPENMP_ENV, "").strip()
    if v.lower() in ("", "auto"):
        lib_.hot_cpu_use_openmp(GNU_OPENMP.encode())  # not loaded: the own pool stays
    elif v.lower() in ("off", "0", "no", "none"):
        lib_.hot_cpu_use_openmp(None)
    else:
        st = lib_.hot_cpu_use_openmp(v.encode())
        if st != Status.OK:
            warnings.warn(f"{OPENMP_ENV}={v}: {Status(st).name}: not an OpenMP runtime loaded in "
                          "this process; the CPU backend uses its own threads", RuntimeWarning,
                          stacklevel=3)


def reattach_openmp():
    """Applies $HOT_CPU_OPENMP again if libhot is already loaded (hot.torch calls it at import:
    torch, and GNU OpenMP with it, may have been imported after libhot was loaded)."""
    with _lock:
        if _lib is not None:
            _attach_openmp(_lib)


def library_path():
    """Path (or name) libhot was loaded from."""
    return find_library()[1]


# Name -> (restype, argtypes) of every function used from Python.
_FUNCS = {
    "hot_status_name": (c_char_p, [c_int]),
    "hot_backend_name": (c_char_p, [c_int]),
    "hot_options_init": (None, [ctypes.POINTER(hot_options)]),
    "hot_ctx_create": (c_int, [ctypes.POINTER(c_void_p), ctypes.POINTER(hot_options)]),
    "hot_ctx_destroy": (None, [c_void_p]),
    "hot_errmsg": (c_char_p, [c_void_p]),
    "hot_compile_log": (c_char_p, [c_void_p]),
    "hot_ctx_backend": (c_int, [c_void_p]),
    "hot_ctx_stats": (c_int, [c_void_p, ctypes.POINTER(hot_stats)]),
    "hot_layer_from_spec": (c_int, [c_void_p, c_char_p, c_char_p, c_int64,
                                    ctypes.POINTER(c_void_p)]),
    "hot_layer_create": (c_int, [c_void_p, ctypes.POINTER(hot_layer_spec), c_int64, c_int64,
                                 c_int, ctypes.POINTER(c_void_p)]),
    "hot_layer_create_with_id": (c_int, [c_void_p, ctypes.POINTER(hot_layer_spec), c_int64,
                                         c_int64, c_int, c_int, ctypes.POINTER(c_void_p)]),
    "hot_layer_create_named": (c_int, [c_void_p, ctypes.POINTER(hot_layer_spec), c_int64,
                                       c_int64, c_int, c_char_p, ctypes.POINTER(c_void_p)]),
    "hot_layer_destroy": (None, [c_void_p]),
    "hot_layer_get_info": (c_int, [c_void_p, ctypes.POINTER(hot_layer_info)]),
    "hot_layer_get_plan": (c_void_p, [c_void_p]),
    "hot_layer_get_spec": (c_int, [c_void_p, ctypes.POINTER(hot_layer_spec)]),
    "hot_layer_check": (c_int, [c_void_p]),
    "hot_layer_saved_bytes": (c_size_t, [c_void_p]),
    "hot_layer_compile": (c_int, [c_void_p]),
    "hot_ctx_compile": (c_int, [c_void_p, ctypes.POINTER(c_void_p), c_size_t]),
    "hot_ctx_load_pack": (c_int, [c_void_p, ctypes.c_char_p]),
    "hot_layer_save": (c_int, [c_void_p, c_void_p, c_int, c_void_p, c_void_p]),
    "hot_layer_backward": (c_int, [c_void_p, c_void_p, c_void_p, c_int, c_void_p, c_void_p,
                                   c_void_p, c_void_p, c_uint32, c_void_p]),
    "hot_layer_calibrate": (c_int, [c_void_p, c_void_p, c_int, c_uint32, c_void_p]),
    "hot_ctx_set_profiling": (c_int, [c_void_p, c_int]),
    "hot_layer_kernel_times": (c_int, [c_void_p, ctypes.POINTER(hot_kernel_time), c_int,
                                       ctypes.POINTER(c_int)]),
    "hot_cpu_use_openmp": (c_int, [c_char_p]),
    "hot_cpu_openmp": (c_int, [c_char_p, c_size_t]),
    "hot_cpu_regions": (ctypes.c_ulonglong, []),
    "hot_cpu_openmp_fallbacks": (ctypes.c_ulonglong, []),
    "hot_ctx_set_cpu_threads": (c_int, [c_void_p, c_int]),
    "hot_ctx_cpu_threads": (c_int, [c_void_p, ctypes.POINTER(c_int)]),
    "hot_capture_write": (c_int, [c_char_p, c_char_p, c_int64, c_int64, c_int64, c_int64, c_int,
                                  c_void_p, c_void_p, c_void_p, c_char_p, c_size_t]),
}

# The defaults of a layer described by sizes: hot_layer_spec_defaults (hot_status) where libhot
# exports it; libhot builds that predate it export plan_spec_defaults (void). Looked up apart from
# _FUNCS: a library without either still serves spec files.
_DEFAULTS_NAMES = ("hot_layer_spec_defaults", "plan_spec_defaults")


def _declare(lib_, path):
    missing = []
    for name, (res, args) in _FUNCS.items():
        try:
            f = getattr(lib_, name)
        except AttributeError:
            missing.append(name)
            continue
        f.restype = res
        f.argtypes = args
    if missing:
        raise HotLibraryError(f"{path} is not a usable libhot: it lacks {', '.join(missing)}")
    lib_._py_spec_defaults = None
    for name in _DEFAULTS_NAMES:
        f = getattr(lib_, name, None)
        if f is not None:
            f.restype = c_int if name.startswith("hot_") else None
            f.argtypes = [ctypes.POINTER(hot_layer_spec), c_int]
            lib_._py_spec_defaults = f
            break


def spec_defaults(spec, recipe):
    """Fills the hot_layer_spec `spec` with the defaults of `recipe` (libhot's own)."""
    lib_, path = find_library()
    f = lib_._py_spec_defaults
    if f is None:
        raise HotLibraryError(
            f"{path} exports none of {', '.join(_DEFAULTS_NAMES)}: layers described by their "
            "sizes need the recipe defaults of libhot (layers from spec files still work)")
    st = f(ctypes.byref(spec), int(recipe))
    if st not in (None, 0):
        raise ValueError(f"{f.__name__}: status {st} for recipe {recipe!r}")
