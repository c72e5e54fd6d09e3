#!/usr/bin/env python3
"""reliability_numbers: numbers parsed one way (docs/reliability.md, "Settings and numbers").

One table, numbers.tsv, is fed to
  1. the three parsers: C (base/num.h, through num_probe), shell (tools/lib/num.sh num_parse) and
     Python (python/hot/_numbers.py): each must give the table's verdict for [1, 256], and the
     three must print the same line for every input (value, or the same one-line message);
  2. call sites end to end, each with its own range [LO, HI] (the row's VALUE inside it: accepted,
     else refused with "NAME='VALUE': expected an integer in [LO, HI]"):
       HOT_CPU_THREADS through hot_ctx_create (the thread count the backward then runs on),
       hot-gen --jobs, hot-tune --batch, hot-bench --seeds, hot-bench --iters,
       tools/device-check.sh --selftest --deadline (never reaching the device path: no
       .kcache-device made), tools/slurm/hot-tune.sbatch's HOT_TUNE_SHARDS,
       examples/train_lm.py --steps (argparse);
  3. a source scan: no other number parser in C (strtol & co., atoi, sscanf), shell (number
     regexes, 10#, $(( )) on raw arguments) or Python (int()/float() of the environment, argparse
     type=int/float) outside the parsers and the allow-list below, each entry with its reason.

Usage: test_numbers.py SOURCE_DIR NUM_PROBE HOT_GEN HOT_TUNE HOT_BENCH
"""
import concurrent.futures
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT, PROBE, GEN, TUNE, BENCH = sys.argv[1:6]
HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)


def unescape(s):
    return re.sub(r"\\(.)", lambda m: {"t": "\t", "n": "\n", "\\": "\\"}[m.group(1)], s)


def load_table():
    rows = []
    for line in open(os.path.join(HERE, "numbers.tsv"), encoding="utf-8"):
        if line.startswith("#"):
            continue
        s, value, verdict = line.rstrip("\n").split("\t")
        rows.append((unescape(s), None if value == "-" else int(value),
                     None if verdict == "error" else int(verdict)))
    return rows


ROWS = load_table()
spec = importlib.util.spec_from_file_location("hot_numbers",
                                              os.path.join(ROOT, "python", "hot", "_numbers.py"))
NUM = importlib.util.module_from_spec(spec)
spec.loader.exec_module(NUM)


def expect(row, lo, hi):
    """The verdict of a site with range [lo, hi]: the value, or None (refused)."""
    v = row[1]
    return v if v is not None and lo <= v <= hi else None


def run(cmd, env=None, timeout=120, cwd=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(cmd, capture_output=True, text=True, env=e, timeout=timeout, cwd=cwd)
    return p.returncode, p.stdout + p.stderr


# ---- 1. the three parsers ---------------------------------------------------------------------
def parsers():
    inputs = [r[0] for r in ROWS]
    c = subprocess.run([PROBE, "int", "1", "256"] + inputs, capture_output=True, text=True,
                       check=True).stdout.splitlines()
    sh = subprocess.run(["bash", "-c", '. "$0"; for s in "$@"; do '
                         'if v=$(num_parse N "$s" 1 256 2>/dev/null); then echo "ok $v"; '
                         'else echo "error $(num_parse N "$s" 1 256 2>&1)"; fi; done',
                         os.path.join(ROOT, "tools", "lib", "num.sh")] + inputs,
                        capture_output=True, text=True, check=True).stdout.splitlines()
    py = []
    for s in inputs:
        try:
            py.append(f"ok {NUM.parse_int('N', s, 1, 256)}")
        except ValueError as e:
            py.append(f"error {e}")
    check(len(c) == len(sh) == len(py) == len(ROWS), "one line per case from each parser")
    for row, a, b, d in zip(ROWS, c, sh, py):
        s, _, verdict = row
        want = f"ok {verdict}" if verdict is not None else \
            f"error N='{NUM._shown(s)}': expected an integer in [1, 256]"
        check(a == b == d == want, f"{s!r} in [1, 256]: C '{a}', shell '{b}', Python '{d}' "
                                   f"(table: '{want}')")


# ---- 2. call sites ----------------------------------------------------------------------------
def site(name, lo, hi, one, rows=None, workers=4, argparse=False):
    """Runs one(row) -> (accepted, value or None, output) for every row, in parallel."""
    rows = ROWS if rows is None else rows
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        got = list(ex.map(one, rows))
    for row, (accepted, value, out) in zip(rows, got):
        want = expect(row, lo, hi)
        msg = f"{name}='{NUM._shown(row[0])}': expected an integer in [{lo}, {hi}]"
        if argparse:  # argparse names the option itself: "argument --steps: 'X': expected ..."
            msg = f"argument {name}: '{NUM._shown(row[0])}': expected an integer in [{lo}, {hi}]"
        if want is None:
            ok = not accepted and msg in out
        else:
            ok = accepted and (value is None or value == want)
        check(ok, f"{name}={row[0]!r} (range [{lo}, {hi}]): "
                  f"{'accepted' if accepted else 'refused'}"
                  f"{'' if value is None else ' as %d' % value}"
                  f"{'' if ok else ': ' + out.strip()[-300:]}")


def threads(row):
    rc, out = run([PROBE, "threads"], {"HOT_CPU_THREADS": row[0], "HOT_BACKEND": "cpu",
                                       "HOT_CUDA_DRIVER": "/nonexistent/libcuda.so.1"})
    m = re.match(r"ok (\d+)", out)
    return bool(m), int(m.group(1)) if m else None, out


def gen_jobs(row):  # parsed before the spec is read: a missing spec is exit 1, a bad value 2
    rc, out = run([GEN, "/nonexistent/spec.lua", "--jobs", row[0]])
    return rc != 2, None, out


def tune_batch(row):
    rc, out = run([TUNE, "/nonexistent/spec.lua", "--batch", row[0]])
    return rc != 2, None, out


def bench_opt(opt):
    def one(row):
        rc, out = run([BENCH, "/nonexistent/spec.lua", opt, row[0]])
        return "expected an integer" not in out, None, out
    return one


def device_check(row):
    d = tempfile.mkdtemp(prefix="hot-numbers-dc-")
    try:
        rc, out = run(["bash", os.path.join(ROOT, "tools", "device-check.sh"), "--selftest",
                       "--deadline", row[0], "--build-dir", os.path.join(d, "b")],
                      {"OUT": os.path.join(d, "out")}, timeout=120)
        m = re.search(r"deadline (\d+) s", out)
        return rc == 0, int(m.group(1)) if m and rc == 0 else None, out
    finally:
        shutil.rmtree(d, ignore_errors=True)


def sbatch_shards(row):
    rc, out = run(["bash", os.path.join(ROOT, "tools", "slurm", "hot-tune.sbatch"),
                   "/nonexistent/spec.lua", tempfile.gettempdir()],
                  {"HOT_TUNE_SHARDS": row[0], "SLURM_ARRAY_TASK_ID": "0",
                   "HOT_TUNE_EXE": "/bin/false"})
    return "expected an integer" not in out, None, out


def train_lm(row):
    rc, out = run([sys.executable, os.path.join(ROOT, "examples", "train_lm.py"),
                   "--steps", row[0], "--help"], timeout=300)
    return rc == 0, None, out


def sites():
    nonempty = [r for r in ROWS if r[0] != ""]  # an empty variable counts as unset (env.h)
    site("HOT_CPU_THREADS", 1, 256, threads, nonempty, workers=2)
    site("--jobs", 1, 64, gen_jobs)
    site("--batch", 1, 1 << 24, tune_batch)
    site("--seeds", 1, 256, bench_opt("--seeds"))
    site("--iters", 1, 100000, bench_opt("--iters"))
    site("HOT_TUNE_SHARDS", 1, 1000000, sbatch_shards, nonempty)
    kc = os.path.join(ROOT, ".kcache-device")
    had = os.path.exists(kc)
    site("--deadline", 0, 86400, device_check, workers=8)
    check(had or not os.path.exists(kc), "device-check --selftest made no .kcache-device")
    try:
        import torch  # noqa: F401  (train_lm.py needs it)
    except ImportError:
        print("SKIP: examples/train_lm.py --steps: torch is not installed")
        return
    site("--steps", 1, 10**9, train_lm, workers=2, argparse=True)


# ---- 3. the source scan -----------------------------------------------------------------------
C_DIRS = ("runtime", "gen", "bench", "tune", "base", "dev", "tools")
C_RX = re.compile(r"\b(strto(?:l|ul|ll|ull|d|f|ld|imax|umax)|ato(?:i|l|ll|f)|sscanf)\s*\(")
C_KNOWN = {
    "base/num.c": (1, "the parser itself: strtod on text it has checked"),
    "runtime/nvrtc.c": (2, "NVRTC's own output (ptxas 'Used N registers' lines, the --time CSV), "
                           "not text a user writes"),
    "runtime/cuda_api.c": (1, "the NVRTC library's file name nvrtc-MAJOR.MINOR, found on disk"),
    "dev/jit-options/nvrtc_options.c": (4, "NVRTC's ptxas log and --time CSV, the arch and "
                                           "kernel names in the runtime's own dump (its options "
                                           "--rounds and --batch use num.h)"),
    "bench/model.c": (2, "hot-bench --model's two tables, compiled in: written by tools/memstat.sh "
                         "table and the nvrtc tests (a user's override file is read the same way)"),
    "tools/kernel-emu/emu_sched.h": (1, "EMU_SEEDS in decimal, as the emu scripts hand it over "
                                        "after tools/lib/num.sh's num_list"),
}
# The emulators' positional arguments are written by their scripts (tools/*-emu.sh), never by a
# user: listed per file.
for f, k in (("tools/gemm-emu/emu.cpp", 9), ("tools/gemm-emu/bias_emu.cpp", 2),
             ("tools/kernel-emu/unpack_emu.cpp", 5), ("tools/kernel-emu/hla_emu.cpp", 12),
             ("tools/kernel-emu/bias_count.cpp", 2),
             ("tools/kernel-emu/hq_emu.cpp", 9), ("tools/kernel-emu/lqs_emu.cpp", 9),
             ("tools/kernel-emu/sawb_emu.cpp", 4), ("tools/tma-emu/tma_emu.cpp", 11),
             ("tools/gemm-emu/nvfp4_emu.cpp", 5), ("tools/gemm-emu/hq_nvfp4_emu.cpp", 3),
             ("tools/gemm-emu/mxfp8_emu.cpp", 5), ("tools/gemm-emu/hla_mxfp8_emu.cpp", 5)):
    C_KNOWN[f] = (k, "an emulator's arguments, written by its script")

SH_RX = re.compile(r"=~ *\^?\[0-9\]|\*\[!0-9\]\*|\b(?:10|16)#|\$\(\([^)]*\$\{?[0-9]")
SH_KNOWN = {
    "tools/lib/num.sh": (2, "the parser itself (10# and 16# on the checked digits)"),
    "tools/check-templates.sh": (4, "arithmetic on its own functions' arguments (tile sizes "
                                    "written in the script)"),
    "tools/kernel-emu.sh": (2, "arithmetic on its own functions' arguments (configurations "
                               "written in the script)"),
    "tools/gemm-emu.sh": (2, "arithmetic on its own functions' arguments"),
    "tools/tma-emu.sh": (1, "arithmetic on its own function's arguments (tile sizes)"),
    "tools/memstat.sh": (21, "arithmetic on its own functions' arguments (shapes and tile sizes "
                             "written in the script: gemm_int.cu, gemm_wgmma.cu, gemm_tma.cu)"),
}
PY_RX = re.compile(r"\b(?:int|float)\(\s*os\.(?:environ|getenv)|\btype\s*=\s*(?:int|float)\s*[,)]")
PY_KNOWN = {
    "python/tests/repro_worker.py": (2, "a test's worker process: its arguments are written by "
                                        "the test that starts it"),
}


def scan_files(dirs, exts, names=()):
    for d in dirs:
        for base, subdirs, files in os.walk(os.path.join(ROOT, d)):
            subdirs[:] = [s for s in subdirs if s not in ("build", "__pycache__", ".deps")]
            for f in sorted(files):
                if f.endswith(exts) or f in names:
                    p = os.path.join(base, f)
                    yield os.path.relpath(p, ROOT), open(p, encoding="utf-8",
                                                         errors="replace").read()


def compare(what, got, known):
    for f in sorted(set(got) | set(known)):
        g, k = got.get(f, 0), known.get(f, (0, ""))[0]
        check(g == k, f"{what}: {f}: {g} place(s), allowed {k}"
                      f"{' (' + known[f][1] + ')' if f in known else ''}")


def scan():
    sys.path.insert(0, HERE)
    from scan import strip_comments  # the C comment stripper of the other scans
    got = {}
    for rel, text in scan_files(C_DIRS, (".c", ".h", ".cpp", ".cc")):
        k = len(C_RX.findall(strip_comments(text, keep_strings=False)))
        if k:
            got[rel] = k
    compare("C number parsers", got, C_KNOWN)
    got = {}
    for rel, text in scan_files(("tools", ".ci"), (".sh", ".sbatch"), ("run",)):
        code = "\n".join(line.split(" #")[0] for line in text.splitlines()
                         if not line.lstrip().startswith("#"))
        k = len(SH_RX.findall(code))
        if k:
            got[rel] = k
    compare("shell number parsing", got, SH_KNOWN)
    got = {}
    for rel, text in scan_files(("python", "examples", "bench", "tools"), (".py",)):
        k = len(PY_RX.findall(text))
        if k:
            got[rel] = k
    compare("Python number parsing", got, PY_KNOWN)


if __name__ == "__main__":
    parsers()
    scan()
    sites()
    print(f"{len(failures)} failure(s)" if failures else "numbers parsed one way everywhere")
    sys.exit(1 if failures else 0)
