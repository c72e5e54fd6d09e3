#!/usr/bin/env python3
"""nvfp4_cpu.py — recipe nvfp4 against the INT recipe hot on the CPU backend: one layer's save
(ABC) and backward through the Python API, wall ms.

    python3 bench/nvfp4_cpu.py [--threads N] [--reps R] [--tiny] [--shape B,L,O,I]

Per recipe: a hot.Context("cpu") layer (hot with g' per tensor, so that no LQS calibration runs;
nvfp4 with its defaults), save(x) and backward(g_y, w) on x ~ N(0, 1), w ~ N(0, 0.05^2),
g_y ~ N(0, 10^-6), one warm-up call, then the best of R. libhot is the one $HOT_LIBRARY names,
or the newest build*/runtime/libhot.so of this checkout; HOT_CPU_THREADS=N (default 2).
Benchmark only: nothing here asserts a time.
"""
import argparse
import os
import sys
import time


def setup_env(threads):
    """bench/cpu_layer.py's setup (HOT_CPU_THREADS, this checkout's libhot and python/), on the
    CPU backend unless HOT_BACKEND says otherwise."""
    os.environ.setdefault("HOT_BACKEND", "cpu")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cpu_layer import setup_env as layer_setup_env
    layer_setup_env(threads)


def run(hot, np, recipe, shape, reps):
    B, L, O, I = shape
    rng = np.random.default_rng(0)
    x = rng.standard_normal((B * L, I), dtype=np.float32)
    w = (0.05 * rng.standard_normal((O, I))).astype(np.float32)
    g = (1e-3 * rng.standard_normal((B * L, O))).astype(np.float32)
    spec = hot.LayerSpec(I, O, recipe=recipe)
    if recipe == "hot":
        spec.c.hq.g.gran = int(hot.Gran.TENSOR)
    layer = hot.Context("cpu").create_layer(spec=spec, batch=B, tokens=L, recipe=recipe)
    layer.save(x)
    layer.backward(g, w, step=1)
    ts, tb = [], []
    for s in range(reps):
        t0 = time.perf_counter()
        layer.save(x)
        t1 = time.perf_counter()
        layer.backward(g, w, step=2 + s)
        t2 = time.perf_counter()
        ts.append(t1 - t0)
        tb.append(t2 - t1)
    return 1e3 * min(ts), 1e3 * min(tb)


def numbers():
    """hot's one parser of numbers, as bench/cpu_backward.py loads it (by path, no libhot)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from cpu_backward import numbers as load_numbers
    return load_numbers()


def main():
    num = numbers()
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--threads", type=num.arg_int(1, 256), default=2,
                    help="HOT_CPU_THREADS (default 2)")
    ap.add_argument("--reps", type=num.arg_int(1, 10**6), default=7,
                    help="timed calls; each time is the best of them (default 7)")
    ap.add_argument("--tiny", action="store_true",
                    help="one small layer, 1,70,40,48 (a smoke run)")
    ap.add_argument("--shape", default=None, metavar="B,L,O,I",
                    help="the layer: B samples of L tokens, I -> O (default 4,256,512,512)")
    a = ap.parse_args()
    if a.tiny and a.shape:
        ap.error("--tiny and --shape: choose one layer")
    parts = (a.shape or "4,256,512,512").split(",")
    if len(parts) != 4:
        ap.error("--shape: expected B,L,O,I (got %r)" % a.shape)
    try:
        shape = (1, 70, 40, 48) if a.tiny else tuple(
            num.parse_int("--shape " + n, v, 1, 2**31 - 1) for n, v in zip("BLOI", parts))
    except ValueError as e:
        ap.error(str(e))
    setup_env(a.threads)
    import numpy as np
    import hot
    print("B=%d L=%d O=%d I=%d, %d thread(s), best of %d, load %.2f" % (
        shape + (a.threads, a.reps, os.getloadavg()[0])))
    print("%-8s %10s %12s" % ("recipe", "save ms", "backward ms"))
    for recipe in ("hot", "nvfp4"):
        try:
            s, b = run(hot, np, recipe, shape, a.reps)
        except MemoryError as e:  # numpy's allocation of the layer's data: one line, not a traceback
            sys.exit(f"nvfp4_cpu.py: --shape {','.join(map(str, shape))}: out of memory ({e})")
        print("%-8s %10.2f %12.2f" % (recipe, s, b))


if __name__ == "__main__":
    main()
