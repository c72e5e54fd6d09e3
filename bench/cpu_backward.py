#!/usr/bin/env python3
"""cpu_backward.py — hot's CPU backward (fast path and reference twins) beside torch's fp32
nn.Linear backward, on the same thread count, one row per shape.

    python3 bench/cpu_backward.py [--lib PATH] [--threads N] [--reps R] [--api] [--exact]
                                  [--own-threads] [--stages [--versus LIB_B]] [--philox] [--tiny]

hot is timed through the fast path's benchmark module (tests/fast/fast_bench.c, built as
<build>/tests/fast/libhot_fast_bench.so): forward save once, then the backward (g_x, g_w, g_b) of
the `hot` recipe with sm_80 storage, as the CPU backend runs it; "fast" is fast_layer_backward
with N threads, "twin" ref_layer_backward (single-threaded, what the CPU backend ran before the
fast path). torch: y = F.linear(x, w, b), then y.backward(g_y) timed alone, with
torch.set_num_threads(N); hot fast and torch take turns, run by run, so that both see the same
load, each on a layer set up once (data, outputs, caches; hot's forward save before each run,
torch's forward, neither timed) and warmed up by one untimed run, and the process CPU time of each run is printed beside its wall time (on a machine shared
with other work the CPU figures are the steadier ones). --api adds hot's Python API (python/hot: Context(backend="cpu"),
layer.save(x), then layer.backward(g_y, w) timed) on the libhot that $HOT_LIBRARY names, with
HOT_CPU_THREADS=N: the end-to-end figure of whatever the CPU backend runs. Every time is the best
of R runs; "turns" is the median (and range) of the R torch / hot ratios of single turns, the
figure least moved by a machine whose speed drifts; the load average is printed with each row.
Threads: when torch has loaded GNU OpenMP (libgomp.so.1), hot's parallel regions run on its
workers, as the Python package arranges by default (hot_cpu_use_openmp; torch's workers spin
for a few ms after each operator, and hot's own threads would share the CPUs with them);
--own-threads keeps hot on its own pool instead (HOT_CPU_OPENMP=off in the package, and what a
program without OpenMP gets). --exact adds the fp64 exact products (ref_exact_gx + _gw and their fast twins) of
an accuracy-row layer, 8192 tokens 4096 -> 4096 (slow: the twin takes minutes). --stages prints,
instead of the table, where the fast backward's wall and process CPU time go, stage by stage (the mean of R
profiled runs after one warm-up; fast_profile in runtime/cpu/fast.h), at N threads and at 1.
--goals prints only the goal figures: the integer peak of a register-only loop of the level's
GEMM instruction (tdpbssd with AMX, then the tile step at each level of the memory; 512-bit
vpdpbusd on AVX-512 VNNI; 256-bit vpdpbusd on AVX-VNNI; vpmaddubsw on AVX2), per shape the
GEMMs' rate against it and their share of the backward (from the stage profile), then bench/cpu_layer.py (HOTLinear fwd+bwd through the Python API against nn.Linear in
fp32 and under bf16 autocast, the tiny layer's fixed cost, regions per step, contention; the
contention again with OMP_WAIT_POLICY=PASSIVE, cpu_layer.py --wait-policy passive). The
default run prints the table and then the goal figures; --tiny prints the table only.
--shape B,L,O,I (repeatable) puts that layer (B samples of L tokens, I -> O) in place of the
benchmark's shapes in the table, --stages, --versus and goal 2; --peak prints the integer peak of
every level this CPU has. --philox, --peak, --goals and --stages exclude each other.
Benchmark only: nothing here is a test and nothing asserts a time.
"""
import re
import subprocess
import argparse
import ctypes
import glob
import os
import sys
import time

SHAPES = [  # (label, B, L, O, I): T = B*L tokens, I -> O
    ("8x197 tok, 768->768", 8, 197, 768, 768),
    ("8x197 tok, 768->3072", 8, 197, 3072, 768),
    ("1x2048 tok, 2048->2048", 1, 2048, 2048, 2048),
    ("8x128 tok, 512->2048", 8, 128, 2048, 512),
]
TINY = [  # --tiny: the same code paths on small layers (a smoke run that checks the bits)
    ("2x17 tok, 48->40", 2, 17, 40, 48),
    ("1x70 tok, 64->96", 1, 70, 96, 64),
]


def numbers():
    """hot's one parser of numbers (python/hot/_numbers.py), loaded by path (no libhot needed)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python",
                        "hot", "_numbers.py")
    spec = importlib.util.spec_from_file_location("hot_numbers", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def find_lib(arg):
    if arg:
        return arg
    if os.environ.get("HOT_FAST_BENCH_LIB"):
        return os.environ["HOT_FAST_BENCH_LIB"]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    hits = sorted(glob.glob(os.path.join(root, "build*", "tests", "fast", "libhot_fast_bench.so")),
                  key=os.path.getmtime, reverse=True)
    if not hits:
        sys.exit("cpu_backward.py: libhot_fast_bench.so not found; build the target hot_fast_bench "
                 "or pass --lib")
    return hits[0]


def open_lib(path, what="--lib"):
    """The benchmark module at path; exits with one line when it is not one."""
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        sys.exit("cpu_backward.py: %s %s: cannot load it (%s)" % (what, path, e))
    if not hasattr(lib, "hot_fast_bench_cpu"):
        sys.exit("cpu_backward.py: %s %s: not a libhot_fast_bench.so (no hot_fast_bench_cpu)"
                 % (what, path))
    return lib


def load():
    return "%.2f" % os.getloadavg()[0]


def hot_time(lib, path, shape, threads, reps, cpu=False):
    """Best wall seconds of `reps` runs and the output checksum (and the best CPU seconds)."""
    _, B, L, O, I = shape
    best = ctypes.c_double(0.0)
    bcpu = ctypes.c_double(0.0)
    chk = ctypes.c_uint(0)
    rc = lib.hot_fast_bench_cpu(path, B, L, O, I, 0, threads, reps, ctypes.byref(best),
                                ctypes.byref(chk), ctypes.byref(bcpu))
    if rc != 0:
        sys.exit("cpu_backward.py: hot_fast_bench failed (path %d)" % path)
    return (best.value, chk.value, bcpu.value) if cpu else (best.value, chk.value)


class TorchLinear:
    """torch's fp32 nn.Linear of one shape: run() times one backward (wall and process CPU)."""

    def __init__(self, shape, threads):
        import torch
        import torch.nn.functional as F
        torch.set_num_threads(threads)
        _, B, L, O, I = shape
        T = B * L
        g = torch.Generator().manual_seed(0)
        self.F = F
        self.x = torch.randn(T, I, generator=g, requires_grad=True)
        self.w = (0.05 * torch.randn(O, I, generator=g)).requires_grad_()
        self.b = torch.zeros(O, requires_grad=True)
        self.gy = 1e-3 * torch.randn(T, O, generator=g)
        self.run()  # warm-up

    def run(self):
        self.x.grad = self.w.grad = self.b.grad = None
        y = self.F.linear(self.x, self.w, self.b)
        c0, t0 = time.process_time(), time.perf_counter()
        y.backward(self.gy)
        return time.perf_counter() - t0, time.process_time() - c0


def fast_vs_torch(lib, shape, threads, reps):
    """hot fast and torch run by run in turns (so that both see the same load), each on a layer
    set up once and warmed up by one run: the best wall and CPU seconds of each, hot's checksum,
    and the torch / hot wall ratios of the turns (each turn's two runs are neighbours in time,
    so a machine whose speed drifts moves both); torch's figures are None without torch."""
    try:
        tl = TorchLinear(shape, threads)
    except ImportError:
        tl = None
    _, B, L, O, I = shape
    layer = lib.hot_fast_bench_open(B, L, O, I, 0, threads)
    if not layer:
        sys.exit("cpu_backward.py: hot_fast_bench_open failed")
    w, c = ctypes.c_double(0.0), ctypes.c_double(0.0)
    hw = hc = tw = tc = 1e30
    pairs = []
    try:
        for r in range(reps + 1):  # run 0 warms up
            if lib.hot_fast_bench_run(layer, 1, ctypes.byref(w), ctypes.byref(c)) != 0:
                sys.exit("cpu_backward.py: hot_fast_bench_run failed")
            if r:
                hw, hc = min(hw, w.value), min(hc, c.value)
            if tl:
                tw1, tc1 = tl.run()
                tw, tc = min(tw, tw1), min(tc, tc1)
                if r:
                    pairs.append(tw1 / w.value)
        chk = lib.hot_fast_bench_checksum(layer, 1)
    finally:
        lib.hot_fast_bench_close(layer)
    return hw, hc, chk, (tw if tl else None), (tc if tl else None), sorted(pairs)


def attach_openmp(lib, own):
    """Puts the fast path's parallel regions on torch's OpenMP workers (GNU OpenMP, when torch is
    installed and has loaded it) unless `own`; returns a line saying where they run."""
    lib.hot_fast_bench_use_openmp.argtypes = [ctypes.c_char_p]
    lib.hot_fast_bench_use_openmp.restype = ctypes.c_int
    if own:
        return "hot's own threads (--own-threads)"
    try:
        import torch  # noqa: F401  (loads GNU OpenMP in torch's Linux builds)
    except ImportError:
        return "hot's own threads (torch is not installed)"
    if lib.hot_fast_bench_use_openmp(b"libgomp.so.1") != 0:
        return "hot's own threads (torch has not loaded GNU OpenMP)"
    return "the workers of torch's OpenMP runtime (libgomp.so.1; --own-threads: hot's own pool)"


def api_time(shape, threads, reps):
    os.environ["HOT_CPU_THREADS"] = str(threads)
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                    "python"))
    import numpy as np
    import hot
    _, B, L, O, I = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B * L, I), dtype=np.float32)
    w = (0.05 * rng.standard_normal((O, I))).astype(np.float32)
    gy = (1e-3 * rng.standard_normal((B * L, O))).astype(np.float32)
    with hot.Context(backend="cpu") as ctx:
        layer = ctx.create_layer(I, O, batch=B, tokens=L)
        best = 1e30
        for r in range(reps):
            layer.save(x)
            t0 = time.perf_counter()
            layer.backward(gy, w, step=r)
            best = min(best, time.perf_counter() - t0)
    return best


def philox(lib, reps):
    """ns per Philox word (the 1.2 M words of the 768 -> 768 g' quantizer, one thread) at each
    dispatch level this CPU has that has its own generator: scalar, AVX2 and AVX-512 (the
    avx512-vnni level; avx-vnni runs the AVX2 generator and amx-int8 the AVX-512 one)."""
    lib.hot_fast_bench_philox.argtypes = [ctypes.c_longlong, ctypes.c_int,
                                          ctypes.POINTER(ctypes.c_double)]
    lib.hot_fast_bench_level.argtypes = [ctypes.c_int]
    n = 8 * 197 * 768
    best = ctypes.c_double(0.0)
    lib.hot_fast_bench_level_has.argtypes = [ctypes.c_int]
    for level, name in ((0, "scalar"), (1, "avx2"), (3, "avx-512")):
        if not lib.hot_fast_bench_level_has(level):
            continue
        lib.hot_fast_bench_level(level)
        if lib.hot_fast_bench_philox(n, reps, ctypes.byref(best)) != 0:
            sys.exit("cpu_backward.py: hot_fast_bench_philox failed")
        print("Philox words, %s: %d words in %.3f ms, %.2f ns/word (best of %d, load %s)"
              % (name, n, 1e3 * best.value, 1e9 * best.value / n, reps, load()))
    lib.hot_fast_bench_level(-1)


def int8_peak(lib, reps):
    """The register-only integer multiply-add rate of one thread on the GEMM instruction of each
    dispatch level this CPU has (tdpbssd, 512- and 256-bit vpdpbusd, vpmaddubsw): the peaks
    goal 2 measures the GEMMs against, and how the levels compare on this core."""
    lib.hot_fast_bench_int8_peak.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                             ctypes.c_char_p, ctypes.c_int]
    lib.hot_fast_bench_level.argtypes = [ctypes.c_int]
    lib.hot_fast_bench_level_has.argtypes = [ctypes.c_int]
    for level in (4, 3, 2, 1):
        if not lib.hot_fast_bench_level_has(level):
            continue
        lib.hot_fast_bench_level(level)
        peak = ctypes.c_double(0.0)
        instr = ctypes.create_string_buffer(64)
        if lib.hot_fast_bench_int8_peak(reps, ctypes.byref(peak), instr, 64) != 0 or \
                not peak.value > 0:
            sys.exit("cpu_backward.py: hot_fast_bench_int8_peak failed at level %d" % level)
        print("register-only %s loop: %.3f TMAC/s per thread (best of %d, load %s)"
              % (instr.value.decode(), peak.value / 1e12, reps, load()))
    lib.hot_fast_bench_level(-1)


def bind_stages(lib):
    lib.hot_fast_bench_stages.argtypes = [ctypes.c_longlong] * 4 + [ctypes.c_int] * 3 + \
        [ctypes.POINTER(ctypes.c_double)] * 2 + [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
    lib.hot_fast_bench_stages.restype = ctypes.c_int


def stage_names(lib):
    lib.hot_fast_stage_name.argtypes = [ctypes.c_int]
    lib.hot_fast_stage_name.restype = ctypes.c_char_p
    names = []
    while len(names) < 64:
        nm = lib.hot_fast_stage_name(len(names)).decode()
        if nm == "unknown stage":
            break
        names.append(nm)
    return names


def set_knob(lib, name, value, default, option):
    """A bench library's setter `name` (one int argument) called with value, unless value is the
    default; a library built before the setter existed has only the default."""
    if value == default:
        return
    f = getattr(lib, name, None)
    if f is None:
        sys.exit("cpu_backward.py: %s: this libhot_fast_bench.so has no such knob" % option)
    f.argtypes = [ctypes.c_longlong]
    f(value)


def set_knobs(lib, fuse, gran):
    """--hla-fuse-bytes (None: the library's bound) and --gran on a bench library."""
    set_knob(lib, "hot_fast_bench_hla_fuse_bytes", fuse, None, "--hla-fuse-bytes")
    set_knob(lib, "hot_fast_bench_gran", ("tensor", "token", "sample").index(gran), 0, "--gran")


def versus(paths, threads, reps, rounds, shapes, fuse=None, gran="tensor"):
    """Two builds of the library, A and B, alternated: per shape, `rounds` turns of A's then B's
    stage profile (each the mean of `reps` backwards at `threads` threads), and per stage the
    best CPU ms of each build and B / A. For deciding a kernel change on a machine whose speed
    drifts: the turns see the same drift, and the best of each is compared."""
    libs = [open_lib(p, w) for p, w in zip(paths, ("--lib", "--versus"))]
    for lib in libs:
        set_knobs(lib, fuse, gran)
    for lib in libs:
        bind_stages(lib)
    names = stage_names(libs[0])
    n = len(names)
    print("A = %s\nB = %s\n%d thread(s), %d turns of %d runs; best process CPU ms per stage"
          % (paths[0], paths[1], threads, rounds, reps))
    for s in shapes:
        _, B, L, O, I = s
        best = [[1e30] * n, [1e30] * n]
        plan = ctypes.create_string_buffer(512)
        for _ in range(rounds):
            for k, lib in enumerate(libs):
                wall, cpu = (ctypes.c_double * n)(), (ctypes.c_double * n)()
                if lib.hot_fast_bench_stages(B, L, O, I, 0, threads, reps, wall, cpu, n, plan, 512):
                    sys.exit("cpu_backward.py: hot_fast_bench_stages failed (%s)" % paths[k])
                best[k] = [min(x, y) for x, y in zip(best[k], cpu)]
        print("\n%s (load %s)\n  %-30s %10s %10s %8s" % (s[0], load(), "stage", "A", "B", "B / A"))
        for i, nm in enumerate(names):
            a, b = 1e3 * best[0][i], 1e3 * best[1][i]
            print("  %-30s %10.2f %10.2f %8s" % (nm, a, b, "%.3f" % (b / a) if a > 0 else "-"))
        sys.stdout.flush()


def stages(lib, threads, reps, shapes):
    bind_stages(lib)
    names = stage_names(lib)
    n = len(names)
    for s in shapes:
        _, B, L, O, I = s
        cols = []
        plan = ctypes.create_string_buffer(512)
        for th in (threads, 1) if threads != 1 else (1,):
            wall, cpu = (ctypes.c_double * n)(), (ctypes.c_double * n)()
            if lib.hot_fast_bench_stages(B, L, O, I, 0, th, reps, wall, cpu, n, plan, 512):
                sys.exit("cpu_backward.py: hot_fast_bench_stages failed")
            cols.append((th, list(wall), list(cpu), load()))
        print("\n%s  (%s)" % (s[0], plan.value.decode()))
        print("  %-30s" % "stage (ms)" + "".join("  %2d thr wall    CPU (load %s)" % (th, ld)
                                                for th, _, _, ld in cols))
        rows = [(nm, [(w[i], c[i]) for _, w, c, _ in cols]) for i, nm in enumerate(names)]
        top = [(w[-1] - sum(x for j, x in enumerate(w[:-1]) if "of which" not in names[j]),
                c[-1] - sum(x for j, x in enumerate(c[:-1]) if "of which" not in names[j]))
               for _, w, c, _ in cols]
        rows.append(("other (allocation, scales)", top))
        for nm, v in rows:
            print("  %-30s" % nm + "".join("  %11.2f %10.2f %11s" % (1e3 * w, 1e3 * c, "")
                                            for w, c in v))
        sys.stdout.flush()


def goals(lib, threads, reps, shapes):
    """The integer peak of the level's GEMM instruction, the GEMMs' rate against it and their
    share of the backward, per shape."""
    bind_stages(lib)
    names = stage_names(lib)
    n = len(names)
    lib.hot_fast_bench_int8_peak.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_double),
                                             ctypes.c_char_p, ctypes.c_int]
    peak = ctypes.c_double(0.0)
    instr = ctypes.create_string_buffer(64)
    has = lib.hot_fast_bench_int8_peak(5, ctypes.byref(peak), instr, 64) == 0
    has_amx = instr.value.startswith(b"tdpbssd")
    print("\nGoal 2: the GEMMs against the integer peak of the level's GEMM instruction, %d "
          "thread(s), mean of %d profiled backwards" % (threads, reps))
    if has:
        print("  register-only %s loop: %.3f TMAC/s per thread (load %s)"
              % (instr.value.decode(), peak.value / 1e12, load()))
        if has_amx:
            amx_levels(lib, peak.value)
        else:
            print("  (no AMX tiles at this level: the GEMMs run on that instruction)")
    else:
        print("  register-only loop: no integer GEMM instruction at this level (scalar)")
    gemm_rows = [i for i, nm in enumerate(names) if nm.startswith("gemm")]
    for s in shapes:
        _, B, L, O, I = s
        plan = ctypes.create_string_buffer(512)
        wall, cpu = (ctypes.c_double * n)(), (ctypes.c_double * n)()
        if lib.hot_fast_bench_stages(B, L, O, I, 0, threads, reps, wall, cpu, n, plan, 512):
            sys.exit("cpu_backward.py: hot_fast_bench_stages failed")
        dims = re.findall(r"GEMM (\d+)x(\d+)x(\d+)", plan.value.decode())
        macs = sum(int(a) * int(b) * int(c) for a, b, c in dims)
        g = sum(wall[i] for i in gemm_rows)
        tiles = sum(wall[i] for i in gemm_rows if "tiles" in names[i])
        total = wall[n - 1]
        rate = macs / g if g > 0 else 0.0
        pk = "%.0f %% of the peak (tiles alone %.0f %%)" % (
            100 * rate / (peak.value * threads), 100 * macs / tiles / (peak.value * threads)) \
            if has else "no peak"
        print("  %-24s GEMMs %.2f ms (pack + tiles) of %.2f ms: %.0f %% of the backward; "
              "%.2f TMAC/s, %s (load %s)"
              % (s[0], 1e3 * g, 1e3 * total, 100 * g / total, rate / 1e12, pk, load()))
        if has:
            gemm_alone(lib, dims, threads, reps, peak.value * threads)
        sys.stdout.flush()


AMX_LEVELS = (  # (label, K, A pairs, B pairs): where hot_fast_bench_amx_kernel's operands live
    ("L1 (A and B 32 KB)", 512, 1, 1),
    ("B in L1, A from L2 (256 KB)", 512, 16, 1),
    ("L2 (A and B 1 MB)", 2048, 4, 4),
    ("beyond L2 (A and B 16 MB)", 2048, 64, 64),
)


def amx_levels(lib, peak):
    """The AMX GEMM's 2 x 2 tile step alone (two A and two B tiles loaded per four tile products,
    dense data, one thread) on operands at each level of the memory, int8 and bf16: the ceiling a
    GEMM with this blocking meets where its operands come from there, and how INT8 compares with
    the BF16 tiles of torch's oneDNN kernels at the same level."""
    f = lib.hot_fast_bench_amx_kernel
    f.argtypes = [ctypes.c_int] + [ctypes.c_longlong] * 4 + [ctypes.c_int,
                                                             ctypes.POINTER(ctypes.c_double)]
    f.restype = ctypes.c_int
    print("  the 2 x 2 tile step alone (dense data), int8 / bf16 TMAC/s per thread:")
    for label, k, na, nb in AMX_LEVELS:
        r = []
        for bf16 in (0, 1):
            v = ctypes.c_double(0.0)
            ok = f(bf16, k, na, nb, max(64, (1 << 26) // (k * 1024)), 5, ctypes.byref(v)) == 0
            r.append(v.value if ok else None)
        if r[0] is None:
            continue
        bf = "%.2f (int8 %.2fx)" % (r[1] / 1e12, r[0] / r[1]) if r[1] else "no AMX-BF16"
        print("    %-30s int8 %.2f (%.0f %% of the peak), bf16 %s"
              % (label, r[0] / 1e12, 100 * r[0] / peak, bf))


def gemm_alone(lib, dims, threads, reps, peak):
    """The backward's GEMM shapes alone (hot_fast_bench_gemm_epi: one segment, 4-bit codes for
    g_x and 8-bit for g_w, A row-major), against the peak of `threads` threads: the tiles
    (kernel + epilogue, no packing) with no epilogue and with g_x's fp32 output epilogue, and
    pack + tiles with that epilogue. What the GEMM's loop reaches by itself, what writing an fp32
    output costs it, and (beside the in-backward figure above) what the other stages cost it."""
    f = lib.hot_fast_bench_gemm_epi
    f.argtypes = [ctypes.c_longlong] * 3 + [ctypes.c_int] * 6 + \
        [ctypes.POINTER(ctypes.c_double)] * 2 + [ctypes.POINTER(ctypes.c_uint)]
    f.restype = ctypes.c_int
    for name, (m, n, k), q in zip(("g_x", "g_w"), dims, (7, 127)):
        m, n, k = int(m), int(n), int(k)
        rates = []
        for epi in (1, 2):
            w, t, h = ctypes.c_double(), ctypes.c_double(), ctypes.c_uint()
            if f(m, n, k, q, q, 1, epi, threads, max(reps, 3), ctypes.byref(w), ctypes.byref(t),
                 ctypes.byref(h)):
                sys.exit("cpu_backward.py: hot_fast_bench_gemm_epi failed")
            rates.append((m * n * k / t.value, m * n * k / w.value))
        print("      alone, %s %dx%dx%d: tiles %.0f %% of the peak without an epilogue, %.0f %% "
              "writing the fp32 output; with the packing %.0f %%"
              % (name, m, n, k, 100 * rates[0][0] / peak, 100 * rates[1][0] / peak,
                 100 * rates[1][1] / peak))


def run_layer_bench(threads, reps, tiny=False):
    """bench/cpu_layer.py in a process of its own (it sets HOT_CPU_THREADS before loading hot)."""
    sys.stdout.flush()
    here = os.path.dirname(os.path.abspath(__file__))
    cmd = [sys.executable, os.path.join(here, "cpu_layer.py"), "--threads", str(threads),
           "--reps", str(max(reps, 3))] + (["--tiny"] if tiny else [])
    subprocess.call(cmd)
    # goal 3c again with torch's OpenMP workers told not to spin (the setting the docs recommend
    # on shared CPUs; GNU OpenMP reads it once, at start, hence a process of its own)
    sys.stdout.flush()
    subprocess.call(cmd + ["--only", "contention", "--wait-policy", "passive"])


def parse_shapes(texts, num):
    """--shape's B,L,O,I strings as the benchmark's shape tuples; exits with a one-line error."""
    shapes = []
    for text in texts:
        parts = text.split(",")
        if len(parts) != 4:
            sys.exit("cpu_backward.py: --shape %s: %d values, expected 4: B,L,O,I"
                     % (text, len(parts)))
        try:
            B, L, O, I = (num.parse_int("--shape " + n, v, 1, 1 << 24)
                          for n, v in zip("BLOI", parts))
        except ValueError as e:
            sys.exit("cpu_backward.py: %s (expected B,L,O,I)" % e)
        shapes.append(("%dx%d tok, %d->%d" % (B, L, I, O), B, L, O, I))
    return shapes


def parse_args():
    """The command line, its shapes resolved (--shape, --tiny or the benchmark's) into a.shapes."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", help="path of libhot_fast_bench.so (default: $HOT_FAST_BENCH_LIB, "
                                  "else the newest build*/tests/fast/ of this checkout)")
    num = numbers()
    ap.add_argument("--threads", type=num.arg_int(1, 256), default=os.cpu_count() or 1,
                    help="threads of hot and of torch (default: the online CPUs)")
    ap.add_argument("--reps", type=num.arg_int(1, 10**6), default=3,
                    help="timed runs per figure; each time is the best of them (default 3)")
    ap.add_argument("--api", action="store_true", help="also hot's Python API ($HOT_LIBRARY)")
    ap.add_argument("--exact", action="store_true", help="also the fp64 exact products (slow)")
    ap.add_argument("--own-threads", action="store_true",
                    help="keep hot on its own thread pool even where torch's OpenMP runtime is "
                         "loaded (default: run hot's regions on its workers)")
    ap.add_argument("--stages", action="store_true", help="per-stage times of the fast path only")
    ap.add_argument("--versus", metavar="LIB_B",
                    help="with --stages: alternate this build's library (B) with --lib's (A), "
                         "5 turns, and print per stage the best CPU ms of each and B / A")
    ap.add_argument("--philox", action="store_true",
                    help="time the quantizers' Philox words alone, at each level this CPU has")
    ap.add_argument("--peak", action="store_true",
                    help="time a register-only loop of each level's integer GEMM instruction "
                         "alone, at each level this CPU has (the peaks of goal 2)")
    ap.add_argument("--goals", action="store_true",
                    help="only the goal figures (the integer peak, GEMM share, bench/cpu_layer.py)")
    ap.add_argument("--hla-fuse-bytes", type=num.arg_int(0, 1 << 62), default=None, metavar="N",
                    help="the fast path's bound for fusing HLA's quantizer into its transform "
                         "(fast_set_hla_fuse_bytes: projections above N bytes are transformed "
                         "twice instead of stored; 0: all; default 4 MiB)")
    ap.add_argument("--gran", choices=("tensor", "token", "sample"), default="tensor",
                    help="the granularity of g''s HQ scales in hot's timed backwards (LQS picks "
                         "per token or per sample in a model; default tensor)")
    ap.add_argument("--shape", action="append", default=None, metavar="B,L,O,I",
                    help="time this layer (B samples of L tokens, I -> O) instead of the "
                         "benchmark's shapes; may be given more than once")
    ap.add_argument("--tiny", action="store_true",
                    help="small layers instead of the three shapes (a quick check that it runs)")
    a = ap.parse_args()
    modes = [m for m in ("philox", "peak", "goals", "stages") if getattr(a, m)]
    if len(modes) > 1:
        ap.error("--%s: choose one of --philox, --peak, --goals and --stages" % " and --".join(modes))
    if a.peak and (a.shape or a.tiny):
        ap.error("--peak times registers alone: --shape and --tiny do not apply")
    if a.philox and (a.shape or a.tiny):
        ap.error("--philox times the 768 -> 768 g' quantizer's words: --shape and --tiny do not "
                 "apply")
    table_only = [o for o in ("api", "exact", "own_threads") if getattr(a, o)]
    if modes and table_only:
        ap.error("--%s: for the table only, not with --%s"
                 % (" and --".join(o.replace("_", "-") for o in table_only), modes[0]))
    a.shapes = parse_shapes(a.shape, num) if a.shape else TINY if a.tiny else SHAPES
    return a


def main():
    a = parse_args()
    shapes = a.shapes
    if a.versus:
        if not a.stages:
            sys.exit("cpu_backward.py: --versus goes with --stages")
        if not os.path.isfile(a.versus):
            sys.exit("cpu_backward.py: --versus %s: no such file (a libhot_fast_bench.so)" % a.versus)
        versus([find_lib(a.lib), a.versus], a.threads, a.reps, 5, shapes,
               a.hla_fuse_bytes, a.gran)
        return
    lib = open_lib(find_lib(a.lib))
    set_knobs(lib, a.hla_fuse_bytes, a.gran)
    if a.philox:
        philox(lib, a.reps)
        return
    if a.peak:
        int8_peak(lib, a.reps)
        return
    if a.goals:
        goals(lib, a.threads, a.reps, shapes)
        run_layer_bench(a.threads, a.reps, a.tiny)
        return
    if a.stages:
        print("hot fast CPU backward, per stage: mean of %d runs, %s"
              % (a.reps, time.strftime("%Y-%m-%d %H:%M")))
        stages(lib, a.threads, a.reps, shapes)
        return
    lib.hot_fast_bench_cpu.argtypes = [ctypes.c_int] + [ctypes.c_longlong] * 4 + \
        [ctypes.c_int] * 3 + [ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_uint),
                              ctypes.POINTER(ctypes.c_double)]
    lib.hot_fast_bench_cpu.restype = ctypes.c_int
    lib.hot_fast_bench_open.argtypes = [ctypes.c_longlong] * 4 + [ctypes.c_int] * 2
    lib.hot_fast_bench_open.restype = ctypes.c_void_p
    lib.hot_fast_bench_run.argtypes = [ctypes.c_void_p, ctypes.c_int,
                                       ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double)]
    lib.hot_fast_bench_run.restype = ctypes.c_int
    lib.hot_fast_bench_checksum.argtypes = [ctypes.c_void_p, ctypes.c_int]
    lib.hot_fast_bench_checksum.restype = ctypes.c_uint
    lib.hot_fast_bench_close.argtypes = [ctypes.c_void_p]
    lib.hot_fast_bench_close.restype = None
    print("hot CPU backward vs torch fp32 nn.Linear backward: %d threads, best of %d, %s"
          % (a.threads, a.reps, time.strftime("%Y-%m-%d %H:%M")))
    print("hot's parallel regions: %s" % attach_openmp(lib, a.own_threads))
    print("hot fast and torch alternate run by run (steady state: layers set up once, one warm-up "
          "run); wall ms, and [process CPU ms] of the same runs")
    print("%-24s %20s %10s %20s %10s %14s %24s  %s"
          % ("shape", "hot fast [CPU]", "hot twin", "torch [CPU]", "twin/fast", "torch/fast [CPU]",
             "turns: median [min-max]", "load (1 min)"))
    for s in shapes:
        tf, cfast, cf, tt, ct, pairs = fast_vs_torch(lib, s, a.threads, a.reps)
        lf = load()
        tr, cr = hot_time(lib, 0, s, a.threads, a.reps)
        lr = load()
        same = "bits equal" if cf == cr else "BITS DIFFER"
        if a.api:
            ta = api_time(s, a.threads, a.reps)
            same += "; Python API %.1f ms (load %s)" % (1e3 * ta, load())
        ts = "%8.1f [%6.1f] ms" % (1e3 * tt, 1e3 * ct) if tt is not None else "not installed"
        ratio = "%6.2fx [%5.2fx]" % (tt / tf, ct / cfast) if tt is not None else "%16s" % "-"
        turns = ("%7.2fx [%.2f-%.2f]" % (pairs[len(pairs) // 2], pairs[0], pairs[-1])
                 if pairs else "-")
        print("%-24s %8.1f [%6.1f] ms %7.1f ms %20s %9.2fx %s %24s  %s/%s  (%s)"
              % (s[0], 1e3 * tf, 1e3 * cfast, 1e3 * tr, ts, tr / tf, ratio, turns, lf, lr, same))
        sys.stdout.flush()
    if a.exact:
        s = ("8192 tok, 4096->4096 fp64 exact g_x+g_w", 1, 8192, 4096, 4096)
        tf, cf = hot_time(lib, 2, s, a.threads, 1)
        lf = load()
        tr, cr = hot_time(lib, 3, s, a.threads, 1)
        print("%s: fast %.1f s (load %s), twin %.1f s (load %s), %.1fx (%s)"
              % (s[0], tf, lf, tr, load(), tr / tf, "bits equal" if cf == cr else "BITS DIFFER"))
    if not a.tiny:
        goals(lib, a.threads, a.reps, shapes)
        run_layer_bench(a.threads, a.reps)


if __name__ == "__main__":
    main()
