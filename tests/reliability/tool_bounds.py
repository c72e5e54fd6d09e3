#!/usr/bin/env python3
"""tool_bounds.py HOT_GEN HOT_BENCH HOT_TUNE SPEC — one table of (program, arguments) runs for the
three programs' messages and outputs (docs/reliability.md, "Bounded messages" and "Outputs
checked first"):

  bounds:   a message that lists names (a 50 000-layer spec, --layer nope) or echoes input (a
            200 000-byte option, value or path) keeps every line under HOT_MSG_MAX (512) bytes and
            lists at most HOT_MSG_NAMES (8) names, then "... and N more";
  integers: every integer option given a value out of its range names its limits as integers
            (never %g's 1.67772e+07);
  outputs:  every output option of every program (found in its --help: each --opt FILE|DIR is
            either an output in OUTPUTS or an input in INPUTS, so a new option must be classed)
            fails before any work when its folder is missing: the spec given is a FIFO nobody
            writes, so a program that read its spec first would block (the run is killed after
            60 s and fails); nothing is created, stdout stays empty, the message names the option.
Exit 0 when every row holds; one FAIL line per broken row otherwise."""
import os
import re
import subprocess
import sys
import tempfile

MSG_MAX, MSG_NAMES = 512, 8
GEN, BENCH, TUNE, SPEC = sys.argv[1:5]
PROGS = {"hot-gen": GEN, "hot-bench": BENCH, "hot-tune": TUNE}
LONG = "x" * 100000  # under the 128 KiB bound of one argument

# every --opt FILE|DIR of each program's --help, classed: outputs (checked here) and inputs
OUTPUTS = {  # (program, option): the arguments of a run that names a missing folder {M}
    ("hot-gen", "--emit"): ["{S}", "--emit", "{M}/dir"],
    ("hot-gen", "--dump-cubin"): ["{S}", "--compile", "target", "--dump-cubin", "{M}/dir"],
    ("hot-gen", "--pack"): ["{S}", "--compile", "target", "--pack", "{M}/k.pack"],
    ("hot-bench", "--out"): ["{S}", "--out", "{M}/b.json"],
    ("hot-tune", "--db"): ["{S}", "--kind", "accuracy", "--db", "{M}/t.db"],
    ("hot-tune", "--plot"): ["show", "{T}/none.db", "--plot", "{M}/p.svg"],
    ("hot-tune", "merge"): ["merge", "{M}/out.db", "{T}/in.db"],
}
EXTRA_OUTPUT_RUNS = [  # the same option in another mode
    ("hot-bench", "--out", ["{S}", "--gemm-paths", "--out", "{M}/b.json"]),
]
INPUTS = {("hot-gen", "--cache-dir"), ("hot-gen", "--tune-db"), ("hot-tune", "--capture")}

INTEGERS = [  # (program, arguments, the limits as the message must print them)
    ("hot-tune", ["{F}", "--batch", "16777217"], "[1, 16777216]"),
    ("hot-tune", ["{F}", "--repeats", "0"], "[1, 10000]"),
    ("hot-tune", ["{F}", "--jobs", "65"], "[1, 64]"),
    ("hot-gen", ["{F}", "--jobs", "65"], "[1, 64]"),
    ("hot-bench", ["{F}", "--batch", "0"], "[1, 16777216]"),
    ("hot-bench", ["{F}", "--iters", "0"], "[1, 100000]"),
    ("hot-bench", ["{F}", "--tokens", "0"], "[1, 536870912]"),
    ("hot-bench", ["{F}", "--warmup", "1001"], "[0, 1000]"),
    ("hot-bench", ["{F}", "--check-macs", "0"], "[1, 1099511627776]"),
]

BOUNDS = [  # (program, arguments, a text the message must hold or None)
    ("hot-gen", ["{B}", "--layer", "nope"], "... and 49992 more"),
    ("hot-bench", ["{B}", "--layer", "nope"], "... and 49992 more"),
    ("hot-tune", ["{B}", "--layer", "nope", "--kind", "accuracy", "--db", "{T}/b.db"], "... and 49992 more"),
    ("hot-gen", ["{S}", "--layer", LONG], None),
    ("hot-bench", ["{S}", "--layer", LONG], None),
    ("hot-tune", ["{S}", "--layer", LONG, "--kind", "accuracy", "--db", "{T}/l.db"], None),
    ("hot-gen", ["--" + LONG], None),
    ("hot-bench", ["--" + LONG], None),
    ("hot-tune", ["--" + LONG], None),
    ("hot-gen", ["{S}", "--arch", LONG], None),
    ("hot-bench", ["{S}", "--arch", LONG], None),
    ("hot-tune", ["{S}", "--arch", LONG, "--db", "{T}/a.db"], None),
    ("hot-gen", ["{T}/" + "a" * 5000 + ".lua"], None),
    ("hot-bench", ["{T}/" + "a" * 5000 + ".lua"], None),
    ("hot-tune", ["{T}/" + "a" * 5000 + ".lua", "--db", "{T}/p.db"], None),
]

fails = []


def run(prog, args, t, timeout=300):
    sub = {"{S}": SPEC, "{B}": t["big"], "{F}": t["fifo"], "{M}": t["missing"], "{T}": t["dir"]}
    argv = [PROGS[prog]]
    for a in args:
        for k, v in sub.items():
            a = a.replace(k, v)
        argv.append(a)
    env = dict(os.environ, HOME=t["dir"], HOT_CACHE_DIR=os.path.join(t["dir"], "cache"))
    try:
        p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env, cwd=t["dir"])
    except subprocess.TimeoutExpired:
        return None
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def short(args):
    return " ".join(a if len(a) < 40 else a[:12] + "...(%d bytes)" % len(a) for a in args)


def check_lines(what, out, err):
    for line in (out + err).splitlines():
        if len(line.encode()) >= MSG_MAX:
            fails.append("%s: a line of %d bytes (bound %d): %.80s..." % (what, len(line.encode()), MSG_MAX, line))
            return


def main():
    with tempfile.TemporaryDirectory() as d:
        t = {"dir": d, "missing": os.path.join(d, "missing"), "fifo": os.path.join(d, "spec.fifo"),
             "big": os.path.join(d, "big.lua")}
        os.mkfifo(t["fifo"])
        with open(t["big"], "w") as f:
            f.write('local hot = require "hot"\nlocal L = {}\nfor i = 1, 50000 do L[i] = hot.linear '
                    '{ name = string.format("layer_%06d", i), in_features = 64, out_features = 64 } end\n'
                    'return hot.model { name = "big", batch = 1, tokens = 16, recipe = hot.recipe.hot, '
                    'target = hot.target { arch = "sm_90" }, layers = L }\n')
        # the table covers every file or folder option of every program
        for prog, exe in PROGS.items():
            h = subprocess.run([exe, "--help"], capture_output=True).stdout.decode() + \
                subprocess.run([exe, "--help"], capture_output=True).stderr.decode()
            for opt in sorted(set(re.findall(r"(--[a-z-]+) (?:FILE|DIR)\b", h))):
                if (prog, opt) not in OUTPUTS and (prog, opt) not in INPUTS:
                    fails.append("%s %s: a file option classed neither output nor input here" % (prog, opt))
        runs = [(p, o, a) for (p, o), a in OUTPUTS.items()] + EXTRA_OUTPUT_RUNS
        for prog, opt, args in runs:
            what = "outputs: %s %s" % (prog, short(args))
            args = ["{F}" if a == "{S}" else a for a in args]
            r = run(prog, args, t, timeout=60)
            if r is None:
                fails.append(what + ": still running after 60 s (read its spec before checking the output)")
                continue
            rc, out, err = r
            if rc == 0 or out.strip() or opt not in err or os.path.exists(t["missing"]):
                fails.append("%s: rc %d, stdout %r, stderr %r" % (what, rc, out[:80], err[:200]))
            else:
                print("ok: %s: %s" % (what, err.strip().splitlines()[0][:150]))
        for prog, args, limits in INTEGERS:
            what = "integers: %s %s" % (prog, short(args))
            r = run(prog, args, t, timeout=60)
            if r is None:
                fails.append(what + ": still running after 60 s")
                continue
            rc, out, err = r
            if rc == 0 or limits not in err or re.search(r"\d[eE][+-]\d", err):
                fails.append("%s: rc %d, expected %r as integers in: %r" % (what, rc, limits, err[:200]))
            else:
                print("ok: %s: %s" % (what, err.strip().splitlines()[0][:150]))
        for prog, args, must in BOUNDS:
            what = "bounds: %s %s" % (prog, short(args))
            r = run(prog, args, t)
            if r is None:
                fails.append(what + ": timed out")
                continue
            rc, out, err = r
            n0 = len(fails)
            check_lines(what, out, err)
            if rc == 0:
                fails.append(what + ": succeeded")
            if must and must not in err:
                fails.append("%s: %r not in %r" % (what, must, err[:300]))
            if must and err.count("layer_0") > MSG_NAMES:
                fails.append(what + ": more than %d names listed" % MSG_NAMES)
            if len(fails) == n0:
                print("ok: %s: %d bytes at most" % (what, max(len(x.encode()) for x in (err or " ").splitlines())))
    for f in fails:
        print("FAIL: " + f)
    print("tool_bounds: %d failure(s)" % len(fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
