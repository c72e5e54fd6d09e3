#!/usr/bin/env python3
"""cpu_layer.py — HOTLinear through the Python API against nn.Linear on the CPU: the figures a
user of the PyTorch bridge sees per layer, and the fast path's fixed costs.

    python3 bench/cpu_layer.py [--threads N] [--reps R] [--tiny] [--only SECTIONS]
                               [--versus DIR] [--isa-cap avx2] [--dtypes fp32,bf16]
                               [--malloc steady|glibc] [--wait-policy default|passive]

Sections (all by default; --only takes a comma-separated subset):
  layer       per shape, one training step of one layer (forward + backward, the loss gradient
              given): HOTLinear in fp32 and under torch.autocast("cpu", torch.bfloat16) against
              nn.Linear in fp32 and under the same autocast (oneDNN's AMX-BF16 kernels on a CPU
              that has them); the four variants run in turns, step by step (each turn's order
              rotated by one, so that each variant follows each other one as often); "best nn /
              HOT" is the faster nn.Linear (what a user of that CPU picks: bf16 autocast where
              oneDNN has AMX or AVX-512 BF16, fp32 where it has not) over the faster HOTLinear,
              and "turns" the median [range] of that ratio per turn;
  tiny        the fixed cost: the same on a layer so small (16 tokens, 64 -> 64) that nearly all
              of a step is call overhead and the thread pool's wake-ups;
  contention  the step of the last shape with one competing CPU-bound process (a busy loop in
              a child process) against the same step without it, for HOTLinear and nn.Linear,
              in --reps rounds of a quiet and a contended phase (a pool whose idle workers spin,
              or whose regions wait for a descheduled worker, falls into a far slower mode
              there); beside the times, the process's CPU ms per step and CPUs in use, which
              show whether a variant wastes CPU time or gets less than its share of the CPUs;
  frozen      (not in the default set) the layer section's step when only some gradients are
              wanted: weight and bias frozen (g_x only: fine-tuning around a frozen layer) and
              an input without gradient (g_w, g_b only: a first layer on data), with the bytes
              each variant keeps for the backward (distinct storages);
  widths      (not in the default set) the layer section's figures at 8 x 128 tokens for the
              widths of small models, d -> d and d -> 4 d for d = 128 .. 1024 and 2048 -> 2048:
              where on this CPU a HOTLinear step starts to pay against the faster nn.Linear
              (the work HOT adds grows with the tensors, T (I + O) + I O values, the GEMM work it
              saves with T I O multiply-adds, so it pays only from some width on);
  regions     parallel regions of the fast path per HOTLinear step (forward save + backward),
              counted by the pool (hot_cpu_regions in libhot), per shape;
  parts       (not in the default set) where the bf16 autocast steps' time goes: per shape, each
              piece of nn.Linear's and HOTLinear's step timed alone, process CPU ms (all
              threads), median of 9 runs: x's and w's casts, the forward GEMM (the same in
              both), nn.Linear's backward GEMMs g_y.w and g_y^T.x, hot's forward save and its
              C backward; the sum of HOTLinear's pieces against torch's, and both whole steps;
  versus      (only with --versus DIR, and then the only section unless --only names others)
              the Python layer of this checkout against another one's, in one process on the
              same libhot: DIR holds that hot package (DIR/hot/__init__.py, e.g. an exported
              python/ of an older commit), loaded as the package hot_versus; per shape and dtype
              (bf16 autocast, fp32) nn.Linear, that HOTLinear and this one take turns step by
              step; best and median ms of each, and this / that.

--isa-cap avx2 runs every library of the process as on a CPU with AVX2 and FMA but no AVX-512:
hot's fast path at its avx2 level (HOT_CPU_ISA), oneDNN capped at AVX2 (ONEDNN_MAX_CPU_ISA /
DNNL_MAX_CPU_ISA: torch's bf16 linear then leaves oneDNN for its own kernels, as on such a CPU),
MKL's sgemm at AVX2 (MKL_ENABLE_INSTRUCTIONS) and ATen's kernels at AVX2 (ATEN_CPU_CAPABILITY).
The instruction sets are those of such a machine; its caches, memory and clock are this one's.

--malloc steady (the default) runs the process with glibc's heap trimming and its dynamic mmap
threshold turned off (GLIBC_TUNABLES trim_threshold and mmap_threshold at 1 GiB; the script
starts itself again with them): glibc otherwise gives the top of its heap back to the kernel when
more than twice the largest unmapped block lies free there, and whether a step's allocations
then find their pages unmapped (each page faulted in and zeroed again, every step) depends on
the order of the process's allocations — it can add half a step to either variant, by luck.
hot's bridge keeps its own large buffers (python/hot/_host_pool.py) and does not depend on it;
torch's allocations do. --malloc glibc keeps glibc's defaults. The layer section prints the page
faults per step of each variant either way.

libhot is the one $HOT_LIBRARY names, or the newest build*/runtime/libhot.so of this checkout.
torch.set_num_threads(N) and HOT_CPU_THREADS=N (default: the online CPUs). Benchmark only:
nothing here asserts a time.
"""
import argparse
import glob
import os
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SHAPES = [  # (label, B, L, O, I)
    ("8x197 tok, 768->768", 8, 197, 768, 768),
    ("8x197 tok, 768->3072", 8, 197, 3072, 768),
    ("1x2048 tok, 2048->2048", 1, 2048, 2048, 2048),
    ("8x128 tok, 512->2048", 8, 128, 2048, 512),
]
WIDTHS = [("8x128 tok, %d->%d" % (i, o), 8, 128, o, i)  # the widths section: d -> d, d -> 4d
          for d in (128, 256, 512, 1024) for i, o in ((d, d), (d, 4 * d))] + \
         [("8x128 tok, 2048->2048", 8, 128, 2048, 2048)]
TINY_SHAPE = ("1x16 tok, 64->64", 1, 16, 64, 64)
SECTIONS = ("layer", "tiny", "contention", "widths", "frozen", "regions", "parts",
            "versus")  # --only
TINY_SHAPES = [("2x17 tok, 48->40", 2, 17, 40, 48), ("1x70 tok, 64->96", 1, 70, 96, 64)]



def _numbers():
    """hot's one parser of numbers, as bench/cpu_backward.py loads it (by path, no libhot)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cpu_backward import numbers
    return numbers()

ISA_CAPS = {"avx2": {"HOT_CPU_ISA": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                     "DNNL_MAX_CPU_ISA": "AVX2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
                     "ATEN_CPU_CAPABILITY": "avx2"}}


def cpu_isa(cap):
    """One line on what this CPU gives torch's bf16 linear and hot's GEMMs (or the cap)."""
    if cap:
        return "ISA capped at %s on this machine (%s)" % (
            cap, ", ".join("%s=%s" % kv for kv in sorted(ISA_CAPS[cap].items())))
    flags = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        return "ISA: unknown (no /proc/cpuinfo)"
    if "amx_bf16" in flags:
        return "ISA: AMX (torch's bf16 linear on oneDNN's AMX kernels; hot's GEMMs on AMX-INT8)"
    if "avx512_bf16" in flags:
        return "ISA: AVX-512 BF16, no AMX"
    if "avx512f" in flags:
        return "ISA: AVX-512 without BF16 (torch's bf16 linear converts to fp32)"
    return "ISA: AVX2-only" if "avx2" in flags else "ISA: below AVX2"


def setup_env(threads, cap=None, wait_policy=None):
    for k, v in ISA_CAPS.get(cap, {}).items():
        os.environ[k] = v
    if wait_policy == "passive":  # read by GNU OpenMP once, when torch loads it
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["HOT_CPU_THREADS"] = str(threads)
    if not os.environ.get("HOT_LIBRARY"):
        hits = sorted(glob.glob(os.path.join(ROOT, "build*", "runtime", "libhot.so")),
                      key=os.path.getmtime, reverse=True)
        if hits:
            os.environ["HOT_LIBRARY"] = hits[0]
    sys.path.insert(0, os.path.join(ROOT, "python"))


STEADY_TUNABLES = "glibc.malloc.trim_threshold=1073741824:glibc.malloc.mmap_threshold=1073741824"


def steady_malloc(mode):
    """--malloc steady: starts this script again with glibc's heap trimming off (GLIBC_TUNABLES
    is read when a process starts), unless it already runs so."""
    have = os.environ.get("GLIBC_TUNABLES", "")
    if mode != "steady" or STEADY_TUNABLES in have:
        return
    env = dict(os.environ, GLIBC_TUNABLES=(have + ":" if have else "") + STEADY_TUNABLES)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def load():
    return "%.2f" % os.getloadavg()[0]


class Step:
    """One layer and its data: run() is one forward + backward, returns wall seconds."""

    def __init__(self, torch, shape, hot_mod, autocast, grads="all"):
        _, B, L, O, I = shape
        g = torch.Generator().manual_seed(0)
        self.torch = torch
        self.autocast = autocast
        if hot_mod is None:
            self.m = torch.nn.Linear(I, O)
        else:
            self.m = hot_mod.HOTLinear(I, O, tag="bench")
        with torch.no_grad():
            self.m.weight.copy_(0.05 * torch.randn(O, I, generator=g))
            self.m.bias.zero_()
        # grads: "all"; "frozen" (weight and bias need no gradient: fine-tuning around a frozen
        # layer, only g_x); "input" (x needs none: a first layer on data, only g_w and g_b)
        self.m.weight.requires_grad_(grads != "frozen")
        self.m.bias.requires_grad_(grads != "frozen")
        self.x = torch.randn(B, L, I, generator=g).requires_grad_(grads != "input")
        gy = 1e-3 * torch.randn(B, L, O, generator=g)
        self.gy = gy.to(torch.bfloat16) if autocast else gy
        self.run()  # warm-up (also the hot layer's creation and calibration)
        self.run()

    faults = 0  # minor page faults of the process during this variant's timed steps
    steps = 0

    def run(self):
        torch = self.torch
        self.x.grad = self.m.weight.grad = self.m.bias.grad = None
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        if self.autocast:
            with torch.autocast("cpu", torch.bfloat16):
                y = self.m(self.x)
        else:
            y = self.m(self.x)
        y.backward(self.gy)
        t = time.perf_counter() - t0
        self.faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
        self.steps += 1
        return t


VARIANTS = (("nn.Linear fp32", False, False), ("nn.Linear bf16", False, True),
            ("HOTLinear fp32", True, False), ("HOTLinear bf16", True, True))


def turns(torch, hot_mod, shape, reps, dtypes=("fp32", "bf16"), grads="all"):
    """Best seconds per variant (inf for a dtype not in dtypes: not run) and the per-turn ratios
    min(nn.Linear) / min(HOTLinear). The turn's order rotates by one variant per turn, so that
    each variant follows each other one equally often (a step right after a bf16 step shares the
    CPUs with torch's workers still spinning from it)."""
    run = [i for i, (_, _, ac) in enumerate(VARIANTS) if ("bf16" if ac else "fp32") in dtypes]
    steps = {i: Step(torch, shape, hot_mod if VARIANTS[i][1] else None, VARIANTS[i][2], grads)
             for i in run}
    best = [float("inf")] * len(VARIANTS)
    ratios = []
    n = len(run)
    for r in range(reps):
        t = [float("inf")] * len(VARIANTS)
        for k in range(n):
            i = run[(r + k) % n]
            t[i] = steps[i].run()
        best = [min(b, x) for b, x in zip(best, t)]
        ratios.append(min(t[0], t[1]) / min(t[2], t[3]))
    faults = [steps[i].faults / max(1, steps[i].steps) if i in steps else None
              for i in range(len(VARIANTS))]
    return best, sorted(ratios), faults


def _ms(v):
    return "%10.2f" % (1e3 * v) if v != float("inf") else "%10s" % "-"


_STEP_HEAD = "%-24s %10s %10s %10s %10s %13s %22s  %s" % (
    "shape", "nn fp32", "nn bf16", "HOT fp32", "HOT bf16", "best nn / HOT",
    "turns: median [range]", "load")


def step_row(torch, hot_mod, shape, reps, dtypes, grads="all"):
    """Runs turns() on one shape and prints its row of the step table (_STEP_HEAD); returns the
    page faults per step of each variant."""
    best, r, f = turns(torch, hot_mod, shape, reps, dtypes, grads)
    hot, nn = min(best[2], best[3]), min(best[0], best[1])
    print("%-24s %s %s %s %s %12.2fx %9.2fx [%.2f-%.2f]  %s" % (
        shape[0], _ms(best[0]), _ms(best[1]), _ms(best[2]), _ms(best[3]), nn / hot,
        r[len(r) // 2], r[0], r[-1], load()))
    sys.stdout.flush()
    return f


def section_layer(torch, hot_mod, shapes, reps, dtypes=("fp32", "bf16")):
    print("\nGoal 1: one layer's step (forward + backward), wall ms, best of %d turns; the "
          "variants alternate step by step" % reps)
    print(_STEP_HEAD)
    faults = [(s[0], step_row(torch, hot_mod, s, reps, dtypes)) for s in shapes]
    print("page faults per step (minor, whole process; pages mapped and zeroed again):")
    for name, f in faults:
        print("%-24s %s" % (name, " ".join("%10s" % ("-" if v is None else "%.0f" % v)
                                            for v in f)))


def section_frozen(torch, hot_mod, shapes, reps, dtypes=("fp32", "bf16")):
    """The step when only some gradients are wanted: a frozen layer (weight and bias need none;
    fine-tuning adapters around it) and a first layer (its input needs none). hot computes only
    what autograd asks for; with a frozen weight nothing of x is kept (torch keeps nothing
    either), so the saved bytes (distinct storages, parameters and x excluded) are printed too."""
    import hot.memory as hm
    for grads, what in (("frozen", "frozen weight and bias: g_x only"),
                        ("input", "input without gradient: g_w and g_b only")):
        print("\nOnly the gradients asked for, %s: one step, wall ms, best of %d turns" %
              (what, reps))
        print(_STEP_HEAD)
        saved = []
        for sh in shapes:
            step_row(torch, hot_mod, sh, reps, dtypes, grads)
            row = []
            for _, is_hot, ac in VARIANTS:
                st = Step(torch, sh, hot_mod if is_hot else None, ac, grads)

                def fwd(st=st, ac=ac):
                    with torch.autocast("cpu", torch.bfloat16, enabled=ac):
                        return st.m(st.x)
                _, n = hm.saved_bytes(fwd, exclude=[st.x, st.m.weight, st.m.bias])
                row.append(n)
            saved.append((sh[0], row))
        print("saved for the backward, MiB (distinct storages; parameters and x excluded):")
        for name, row in saved:
            print("%-24s %s" % (name, " ".join("%10.2f" % (v / 2**20) for v in row)))


def section_tiny(torch, hot_mod, reps):
    s = TINY_SHAPE
    print("\nGoal 3a: fixed cost, %s: one step, wall us, best of %d turns" % (s[0], 5 * reps))
    best, r, _ = turns(torch, hot_mod, s, 5 * reps)
    for (name, _, _), b in zip(VARIANTS, best):
        print("  %-16s %9.1f us" % (name, 1e6 * b))
    print("  HOTLinear fp32 / nn.Linear fp32: %.2fx (bound 2x); HOTLinear bf16 / nn.Linear bf16: "
          "%.2fx (load %s)" % (best[2] / best[0], best[3] / best[1], load()))


def _cpu_ms(fn, n=9):
    """Median process CPU ms of n calls of fn (after one untimed)."""
    fn()
    t = []
    for _ in range(n):
        t0 = time.process_time()
        fn()
        t.append(time.process_time() - t0)
    return 1e3 * sorted(t)[n // 2]


def section_parts(torch, hot_mod, shapes):
    """Each piece of the two bf16 autocast steps alone (see the module's help)."""
    import torch.nn.functional as F
    ht = hot_mod
    print("\nWhere the bf16 autocast steps' time goes: each piece alone, process CPU ms (all "
          "threads), median of 9")
    print("%-24s %7s %7s %7s %7s %7s | %7s %7s %8s %8s | %8s %8s" % (
        "shape", "x cast", "w cast", "fwd mm", "nn g_x", "nn g_w", "save", "hot bwd",
        "HOT sum", "nn sum", "nn step", "HOT step"))
    for s in shapes:
        hs, ns = Step(torch, s, hot_mod, True), Step(torch, s, None, True)
        m, x = hs.m, hs.x.detach()
        xc, wc, bc = x.to(torch.bfloat16), m.weight.to(torch.bfloat16), m.bias.to(torch.bfloat16)
        entry = m._hot_layer(xc)
        saved = ht._aligned_empty(entry.saved_bytes, x.device)
        gy = hs.gy.reshape(-1, hs.gy.shape[-1]).contiguous()
        x2 = xc.reshape(-1, xc.shape[-1])
        dev = ht._stream(x.device)
        p = {"xc": _cpu_ms(lambda: x.to(torch.bfloat16)),
             "wc": _cpu_ms(lambda: m.weight.to(torch.bfloat16)),
             "mm": _cpu_ms(lambda: F.linear(xc, wc, bc)),
             "gx": _cpu_ms(lambda: gy @ wc), "gw": _cpu_ms(lambda: gy.t() @ x2),
             "save": _cpu_ms(lambda: entry.layer.save_ptr(xc.data_ptr(), ht._DT[xc.dtype],
                                                          saved.data_ptr(), dev)),
             "bwd": _cpu_ms(lambda: ht._run_backward(m, entry, gy, wc, saved, 5, True)),
             "ns": _cpu_ms(ns.run), "hs": _cpu_ms(hs.run)}
        hot_sum = p["xc"] + 2 * p["wc"] + p["mm"] + p["save"] + p["bwd"]
        nn_sum = p["xc"] + p["wc"] + p["mm"] + p["gx"] + p["gw"]
        print("%-24s %7.2f %7.2f %7.2f %7.2f %7.2f | %7.2f %7.2f %8.2f %8.2f | %8.2f %8.2f  "
              "load %s" % (s[0], p["xc"], p["wc"], p["mm"], p["gx"], p["gw"], p["save"],
                           p["bwd"], hot_sum, nn_sum, p["ns"], p["hs"], load()))
        sys.stdout.flush()


def busy_child():
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


CONTENTION_STEPS = 8  # steps per variant per phase of the contention section


def section_contention(torch, hot_mod, shape, reps):
    """Quiet and contended phases alternate, reps rounds of each (a busy loop started for each
    contended phase and killed after it); in a phase the variants take turns step by step. Per
    variant: the median wall ms of each condition, their ratio and the range of the rounds'
    ratios; and the process's CPU ms per step and CPUs in use (CPU time over wall time, all
    threads): a pool that spins or waits where it should work shows as CPU time that grows under
    contention, a scheduler that gives the process less than its share as fewer CPUs in use."""
    n = CONTENTION_STEPS
    print("\nGoal 3c: contention, %s, with one competing CPU-bound process; %d rounds of a quiet "
          "and a contended phase, %d steps per variant each; wall ms per step (median), the "
          "process's CPU ms per step and CPUs in use (CPU time / wall time)" % (shape[0], reps, n))
    steps = [Step(torch, shape, hot_mod if h else None, ac) for _, h, ac in VARIANTS]

    # hot's package (hot_mod is its torch module); the counter is absent from older packages
    counts = getattr(sys.modules.get(hot_mod.__name__.rpartition(".")[0]), "cpu_openmp_fallbacks",
                     None)
    nv = len(VARIANTS)
    wall = [[[], []] for _ in range(nv)]  # [variant][contended] -> wall s per step
    cpu = [[0.0, 0.0] for _ in range(nv)]  # CPU s in all
    tot = [[0.0, 0.0] for _ in range(nv)]  # wall s in all
    falls = [[0, 0] for _ in range(nv)]
    per_round = [[] for _ in range(nv)]  # the rounds' contended / quiet medians
    for r in range(reps):
        meds = [[0.0, 0.0] for _ in range(nv)]
        for busy in (0, 1):
            child = busy_child() if busy else None
            try:
                if child:
                    time.sleep(0.1)
                got = [[] for _ in range(nv)]
                for k in range(n * nv):
                    i = (r + k) % nv
                    f0 = counts() if counts else 0
                    c0 = time.process_time()
                    t = steps[i].run()
                    cpu[i][busy] += time.process_time() - c0
                    tot[i][busy] += t
                    falls[i][busy] += (counts() - f0) if counts else 0
                    got[i].append(t)
            finally:
                if child:
                    child.kill()
                    child.wait()
            for i in range(nv):
                wall[i][busy] += got[i]
                meds[i][busy] = statistics.median(got[i])
        for i in range(nv):
            per_round[i].append(meds[i][1] / meds[i][0])
    for i, (name, h, _) in enumerate(VARIANTS):
        q, b = (statistics.median(w) for w in wall[i])
        fb = "  fall-backs to hot's threads %d / %d" % tuple(falls[i]) if h and counts else ""
        print("  %-16s quiet %7.2f  contended %7.2f  ratio %5.2fx [%.2f-%.2f] (bound 2x)  "
              "CPU ms %6.2f / %6.2f  CPUs %4.2f / %4.2f%s"
              % (name, 1e3 * q, 1e3 * b, b / q, min(per_round[i]), max(per_round[i]),
                 1e3 * cpu[i][0] / len(wall[i][0]), 1e3 * cpu[i][1] / len(wall[i][1]),
                 cpu[i][0] / tot[i][0], cpu[i][1] / tot[i][1], fb))
    print("  (load %s)" % load())


def section_regions(torch, hot_mod, shapes):
    import ctypes
    lib = ctypes.CDLL(os.environ["HOT_LIBRARY"])
    if not hasattr(lib, "hot_cpu_regions"):
        print("\nGoal 3b: parallel regions: this libhot does not count them (no hot_cpu_regions)")
        return
    lib.hot_cpu_regions.restype = ctypes.c_ulonglong
    print("\nGoal 3b: parallel regions of the fast path per HOTLinear step (save + backward)")
    for s in shapes:
        for name, h, ac in VARIANTS[2:]:
            st = Step(torch, s, hot_mod, ac)
            r0 = lib.hot_cpu_regions()
            st.run()
            print("  %-24s %-16s %4d regions" % (s[0], name, lib.hot_cpu_regions() - r0))


def load_versus(d):
    """The hot package in directory d (d/hot/__init__.py) as hot_versus; its torch module."""
    import importlib
    import importlib.util
    pkg = os.path.join(os.path.abspath(d), "hot")
    if not os.path.isfile(os.path.join(pkg, "__init__.py")):
        sys.exit("cpu_layer.py: --versus %s: no hot/__init__.py there" % d)
    spec = importlib.util.spec_from_file_location("hot_versus", os.path.join(pkg, "__init__.py"),
                                                  submodule_search_locations=[pkg])
    mod = importlib.util.module_from_spec(spec)
    sys.modules["hot_versus"] = mod
    spec.loader.exec_module(mod)
    return importlib.import_module("hot_versus.torch")


def section_versus(torch, hot_mod, other, shapes, reps):
    print("\nversus: this Python layer against --versus's, the variants in turns step by step, "
          "%d turns (tiny: %d); best / median, ms (tiny: us)" % (reps, 5 * reps))
    print("%-24s %-5s %17s %17s %17s %14s  %s" % ("shape", "dtype", "nn.Linear", "versus", "this",
                                                  "this / versus", "load"))
    for s in shapes:
        tiny = s == TINY_SHAPE or s in TINY_SHAPES
        n = 5 * reps if tiny else reps
        f = 1e6 if tiny else 1e3
        for ac in (True, False):
            steps = [Step(torch, s, m, ac) for m in (None, other, hot_mod)]
            ts = [[] for _ in steps]
            for _ in range(n):
                for t, st in zip(ts, steps):
                    t.append(st.run())
            cells = ["%8.2f / %6.2f" % (f * min(t), f * statistics.median(t)) for t in ts]
            print("%-24s %-5s %17s %17s %17s %6.2fx %5.2fx  %s" % (
                s[0], "bf16" if ac else "fp32", cells[0], cells[1], cells[2],
                min(ts[2]) / min(ts[1]), statistics.median(ts[2]) / statistics.median(ts[1]),
                load()))
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    num = _numbers()
    ap.add_argument("--threads", type=num.arg_int(1, 256), default=os.cpu_count() or 1,
                    help="torch's threads and HOT_CPU_THREADS (default: the online CPUs)")
    ap.add_argument("--reps", type=num.arg_int(1, 10**6), default=7,
                    help="repetitions behind each figure (default 7)")
    ap.add_argument("--tiny", action="store_true", help="small layers (a quick run)")
    ap.add_argument("--only", default=None, metavar="SECTIONS",
                    help="comma-separated sections: %s (default layer,tiny,contention,regions; "
                         "versus alone with --versus)" % ", ".join(SECTIONS))
    ap.add_argument("--versus", metavar="DIR", help="another checkout's python/ directory")
    ap.add_argument("--dtypes", default="fp32,bf16",
                    help="the layer section's dtypes: fp32, bf16 or both (default); under "
                         "--isa-cap avx2 torch's bf16 linear takes seconds per step")
    ap.add_argument("--isa-cap", choices=sorted(ISA_CAPS),
                    help="run as on a CPU with only this instruction set (see above)")
    ap.add_argument("--wait-policy", choices=("default", "passive"), default="default",
                    help="passive: OMP_WAIT_POLICY=PASSIVE for this process (torch's OpenMP "
                         "workers sleep at once after each operator instead of spinning: the "
                         "setting docs/python.md recommends on CPUs shared with other work); "
                         "default: the environment's")
    ap.add_argument("--malloc", choices=("steady", "glibc"), default="steady",
                    help="steady: glibc's heap trimming off for the whole process (see above)")
    a = ap.parse_args()
    dtypes = tuple(a.dtypes.split(","))
    if any(d not in ("fp32", "bf16") for d in dtypes) or len(set(dtypes)) != len(dtypes):
        sys.exit("cpu_layer.py: --dtypes %r: expected fp32, bf16 or fp32,bf16" % a.dtypes)
    if a.only is None:
        a.only = "versus" if a.versus else "layer,tiny,contention,regions"
    unknown = [s for s in a.only.split(",") if s not in SECTIONS]
    if unknown:
        sys.exit("cpu_layer.py: --only %r: unknown section %r (sections: %s)"
                 % (a.only, unknown[0], ", ".join(SECTIONS)))
    if "versus" in a.only.split(",") and not a.versus:
        sys.exit("cpu_layer.py: --only versus needs --versus DIR")
    if a.versus and "versus" not in a.only.split(","):
        sys.exit("cpu_layer.py: --versus %s: --only %s leaves out the versus section"
                 % (a.versus, a.only))
    steady_malloc(a.malloc)
    setup_env(a.threads, a.isa_cap, a.wait_policy)
    import torch
    import hot.torch as hot_mod
    torch.set_num_threads(a.threads)
    only = set(a.only.split(","))
    shapes = TINY_SHAPES if a.tiny else SHAPES
    print("HOTLinear vs nn.Linear, %d threads, libhot %s, torch %s, %s, load %s"
          % (a.threads, os.environ.get("HOT_LIBRARY"), torch.__version__,
             time.strftime("%Y-%m-%d %H:%M"), load()))
    print(cpu_isa(a.isa_cap))
    print("OpenMP wait policy: %s" % (os.environ.get("OMP_WAIT_POLICY") or
                                     "GNU OpenMP's default (workers spin after each region)"))
    print("malloc: " + ("glibc's heap trimming and dynamic mmap threshold off (%s)"
                        % os.environ.get("GLIBC_TUNABLES") if a.malloc == "steady"
                        else "glibc's defaults (--malloc glibc)"))
    if "layer" in only:
        section_layer(torch, hot_mod, shapes, a.reps, dtypes)
    if "widths" in only:
        section_layer(torch, hot_mod, WIDTHS, a.reps, dtypes)
    if "frozen" in only:
        section_frozen(torch, hot_mod, shapes, a.reps, dtypes)
    if "tiny" in only:
        section_tiny(torch, hot_mod, a.reps)
    if "contention" in only:
        section_contention(torch, hot_mod, shapes[-1], a.reps)
    if "regions" in only:
        section_regions(torch, hot_mod, shapes)
    if "parts" in only:
        section_parts(torch, hot_mod, shapes)
    if "versus" in only:
        section_versus(torch, hot_mod, load_versus(a.versus), shapes + [TINY_SHAPE], a.reps)


if __name__ == "__main__":
    main()
