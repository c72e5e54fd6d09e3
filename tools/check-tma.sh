#!/usr/bin/env bash
# check-tma.sh — compile templates/gemm_tma.cu (the TMA + warp-specialised + persistent INT8 GEMM)
# with NVRTC to CUBIN for sm_90a, the way the runtime will: a program emitted like gen/emit.c's
# (HOT_GENERATED, the included headers hoisted with #line (a *.inl.cuh spliced in place), the @hot-params as #defines, the body
# without its #include lines inside a namespace), NVRTC options -arch=sm_90a -std=c++17
# --ptxas-options=-v -default-device. For each parameter set it checks ptxas' figures (no spill,
# no stack frame; with two consumer warpgroups exactly 168 registers, which setmaxnreg's register
# pool needs: 384 * 168 = 128 * (40 + 2 * 232)) and disassembles the CUBIN with cuobjdump -sass
# (tools/find-cuda-tool.sh): UTMALDG (TMA loads), *GMMA (wgmma; IGMMA for .s8), SYNCS (mbarrier
# operations) present; LDL, STL (local memory) and LDGSTS (cp.async) absent. Illegal parameters
# must be refused by a static_assert. Prints one line of figures per parameter set.
#
# Exit: 0 all checks passed; 1 a check failed; 77 (skipped, with a SKIP line) when no NVRTC is
# found, or when no cuobjdump is found (then after the compile checks, which must still pass).
# Env: HOT_CUDA_HOME / CUDA_HOME (toolkit holding lib64/libnvrtc.so.13 or .12), PYTHON (python3),
#      KEEP=1 keeps the work folder (sources, logs, CUBINs, SASS).
# Usage: tools/check-tma.sh
set -u
case "${1:-}" in
  "") ;;
  --help | -h) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;;
  *) echo "check-tma: unknown argument '$1' (it takes none; see --help)" >&2; exit 2 ;;
esac
here=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "SKIP: check-tma needs python3 (to drive NVRTC through ctypes)"
  exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hot-check-tma.XXXXXX")
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
cuobjdump=$("$here/tools/find-cuda-tool.sh" cuobjdump 2>/dev/null || true)
nvdisasm=$("$here/tools/find-cuda-tool.sh" nvdisasm 2>/dev/null || true)

# tile_m tile_n stages segs
SETS=(
  "64 64 2 0" "64 64 4 0" "64 128 4 0" "64 256 4 0" "128 64 6 0" "128 128 4 0" "128 128 6 0"
  "128 256 3 0" "128 256 4 0"
  "64 64 3 1" "128 128 4 1" "128 256 4 1" "64 256 4 1"
)
# illegal: label tile_m tile_n tile_k stages segs codes warps_m
NEG=(
  "128x256_5_stages_(smem) 128 256 128 5 0 0 8" "tile_k_64 128 128 64 4 0 0 8"
  "segs_2 128 128 128 4 2 0 8" "int4_codes 128 128 128 4 0 1 8" "warps_2x2 128 128 128 4 0 0 2"
  "one_stage 64 64 128 1 0 0 4"
)

HERE="$here" WORK="$work" CUOBJDUMP="$cuobjdump" NVDISASM="$nvdisasm" \
  SETS="$(printf '%s\n' "${SETS[@]}")" NEG="$(printf '%s\n' "${NEG[@]}")" "$PY" - <<'PY'
import ctypes, os, re, subprocess, sys

here, work = os.environ["HERE"], os.environ["WORK"]
tdir = os.path.join(here, "templates")


def find_nvrtc():
    cands = []
    for v in ("HOT_CUDA_HOME", "CUDA_HOME", "CUDA_PATH"):
        h = os.environ.get(v)
        if h:
            cands += [os.path.join(h, "lib64", "libnvrtc.so.%d" % m) for m in (13, 12)]
    cands += ["/usr/local/cuda/lib64/libnvrtc.so.%d" % m for m in (13, 12)]
    cands += ["libnvrtc.so.%d" % m for m in (13, 12)]
    for c in cands:
        try:
            return ctypes.CDLL(c), c
        except OSError:
            pass
    return None, None


lib, libpath = find_nvrtc()
if lib is None:
    print("SKIP: no NVRTC (libnvrtc.so.13 or .12; set HOT_CUDA_HOME)")
    sys.exit(77)
lib.nvrtcGetErrorString.restype = ctypes.c_char_p
maj, mnr = ctypes.c_int(), ctypes.c_int()
lib.nvrtcVersion(ctypes.byref(maj), ctypes.byref(mnr))

src_t = open(os.path.join(tdir, "gemm_tma.cu")).read()
first = src_t.split("\n", 1)[0]
m = re.match(r"/\* @hot-params:(.*)\*/", first)
if not m:
    sys.exit("check-tma: templates/gemm_tma.cu: no @hot-params first line")
params = m.group(1).split()
includes = re.findall(r'^\s*#\s*include\s+"([^"]+)"', src_t, flags=re.M)


def emit(vals):
    """The program text, as gen/emit.c assembles one kernel."""
    out = ["// generated from templates/gemm_tma.cu by tools/check-tma.sh for sm_90a; do not edit",
           "#define HOT_GENERATED 1"]
    for inc in includes:
        if inc.endswith(".inl.cuh"):
            continue  # spliced into the body below
        out.append('#line 1 "%s"' % inc)
        out.append(open(os.path.join(tdir, inc)).read().rstrip("\n"))
    out.append("\n/* ---- %s from templates/gemm_tma.cu */" % vals["HOT_KNAME"])
    missing = [p for p in params if p not in vals]
    if missing:
        sys.exit("check-tma: parameters not filled: %s" % " ".join(missing))
    for p in params:
        out.append("#define %s %s" % (p, vals[p]))
    out.append("namespace hot_k0 {")
    out.append('#line 1 "templates/gemm_tma.cu"')
    for no, line in enumerate(src_t.split("\n"), 1):
        m = re.match(r'^\s*#\s*include\s+"([^"]+\.inl\.cuh)"', line)
        if m:  # a spliced file (gen/emit.h): its text in place, between #line directives
            out.append('#line 1 "templates/%s"' % m.group(1))
            out.append(open(os.path.join(tdir, m.group(1))).read().rstrip("\n"))
            out.append('#line %d "templates/gemm_tma.cu"' % (no + 1))
            continue
        out.append("" if re.match(r"^\s*#\s*include\b", line) else line)
    out.append("} /* namespace hot_k0 */")
    return "\n".join(out) + "\n"


def compile_(name, text):
    """(ok, log, cubin bytes)"""
    prog = ctypes.c_void_p()
    r = lib.nvrtcCreateProgram(ctypes.byref(prog), text.encode(), b"hot.cu", 0, None, None)
    if r:
        return False, "nvrtcCreateProgram: %s" % lib.nvrtcGetErrorString(r).decode(), b""
    opts = [b"-arch=sm_90a", b"-std=c++17", b"--ptxas-options=-v", b"-default-device"]
    arr = (ctypes.c_char_p * len(opts))(*opts)
    r = lib.nvrtcCompileProgram(prog, len(opts), arr)
    n = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(n))
    buf = ctypes.create_string_buffer(n.value + 1)
    lib.nvrtcGetProgramLog(prog, buf)
    log = buf.value.decode(errors="replace")
    cub = b""
    if r == 0:
        lib.nvrtcGetCUBINSize(prog, ctypes.byref(n))
        cb = ctypes.create_string_buffer(n.value)
        lib.nvrtcGetCUBIN(prog, cb)
        cub = cb.raw
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return r == 0, log, cub


def vals_for(tm, tn, tk, stages, segs, codes, wm):
    name = "hot_gemm_tma_%sx%s_s%s%s" % (tm, tn, stages, "_seg" if segs == "1" else "")
    return {"HOT_KNAME": name, "HOT_CODES": codes, "HOT_TILE_M": tm, "HOT_TILE_N": tn,
            "HOT_TILE_K": tk, "HOT_WARPS_M": wm, "HOT_WARPS_N": "1", "HOT_STAGES": stages,
            "HOT_SEGS": segs}


cuobjdump = os.environ.get("CUOBJDUMP", "")
env = dict(os.environ)
if os.environ.get("NVDISASM"):
    env["PATH"] = os.path.dirname(os.environ["NVDISASM"]) + ":" + env.get("PATH", "")
SASS_COLS = ["instructions", "UTMALDG", "GMMA", "SYNCS", "LDGSTS", "LDL", "STL", "BAR", "STG"]


def sass_counts(path):
    """Counts of the SASS columns above (instructions: all but NOP), and the *GMMA opcodes seen."""
    out = subprocess.run([cuobjdump, "-sass", path], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        return None, "cuobjdump -sass failed: " + (out.stderr or out.stdout).strip()[:200]
    c = dict.fromkeys(SASS_COLS, 0)
    gmma = set()
    for line in out.stdout.split("\n"):
        mm = re.match(r"\s*/\*[0-9a-f]+\*/\s+(@!?U?P\w+\s+)?([A-Z0-9_]+)", line)
        if not mm:
            continue
        op = mm.group(2)
        if op == "NOP":
            continue
        c["instructions"] += 1
        if op.endswith("GMMA"):
            c["GMMA"] += 1
            gmma.add(op)
        elif op in c:
            c[op] += 1
    return c, ",".join(sorted(gmma))


fail = 0
sass_ok = bool(cuobjdump)
print("check-tma: NVRTC %d.%d (%s); SASS from %s" % (maj.value, mnr.value, libpath,
                                                     cuobjdump or "nothing (no cuobjdump)"))
for s in os.environ["SETS"].split("\n"):
    tm, tn, st, sg = s.split()
    v = vals_for(tm, tn, "128", st, sg, "0", str(int(tm) // 16))
    name = v["HOT_KNAME"]
    text = emit(v)
    open(os.path.join(work, name + ".cu"), "w").write(text)
    ok, log, cub = compile_(name, text)
    open(os.path.join(work, name + ".log"), "w").write(log)
    if not ok:
        print("FAIL compile: %s\n    %s" % (name, "\n    ".join(log.strip().split("\n")[:15])))
        fail = 1
        continue
    regs = re.search(r"Used (\d+) registers", log)
    spill = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", log)
    regs = int(regs.group(1)) if regs else -1
    stack, sst, sld = (int(x) for x in spill.groups()) if spill else (-1, -1, -1)
    wgs = int(tm) // 64
    smem = int(st) * (int(tm) + int(tn)) * 128 + 1024 + 128
    status = []
    if regs < 0 or stack != 0 or sst != 0 or sld != 0:
        status.append("SPILL/STACK")
    if wgs == 2 and regs != 168:
        status.append("REGS!=168 (setmaxnreg pool: 384*R must equal 128*(40+2*232))")
    line = "%-30s regs %3d stack %d spill %d/%d smem %6d" % (name, regs, stack, sst, sld, smem)
    if sass_ok:
        path = os.path.join(work, name + ".cubin")
        open(path, "wb").write(cub)
        c, gm = sass_counts(path)
        if c is None:
            status.append(gm)
        else:
            line += "  sass %5d UTMALDG %2d %s %3d SYNCS %2d LDGSTS %d LDL %d STL %d BAR %d STG %d" % (
                c["instructions"], c["UTMALDG"], gm or "GMMA", c["GMMA"], c["SYNCS"], c["LDGSTS"],
                c["LDL"], c["STL"], c["BAR"], c["STG"])
            if c["UTMALDG"] == 0: status.append("no UTMALDG")
            if c["GMMA"] == 0: status.append("no *GMMA")
            if c["SYNCS"] == 0: status.append("no SYNCS (mbarrier)")
            if c["LDL"] or c["STL"]: status.append("local memory (LDL/STL)")
            if c["LDGSTS"]: status.append("cp.async (LDGSTS) in a TMA kernel")
    if status:
        fail = 1
    print(line + "  " + ("FAIL: " + "; ".join(status) if status else "ok"))
    sys.stdout.flush()

for s in os.environ["NEG"].split("\n"):
    label, tm, tn, tk, st, sg, codes, wm = s.split()
    v = vals_for(tm, tn, tk, st, sg, codes, wm)
    ok, log, _ = compile_(label, emit(v))
    if ok:
        print("FAIL: illegal parameters accepted: %s" % label)
        fail = 1
    elif "static assertion failed" not in log and "static_assert" not in log:
        print("FAIL: %s refused without a static_assert:\n    %s" % (label, log.strip()[:300]))
        fail = 1
    else:
        print("%-30s refused by static_assert (expected)" % label)

if fail:
    print("check-tma: FAILED")
    sys.exit(1)
if not sass_ok:
    print("SKIP: no cuobjdump (tools/install-python-deps.sh installs it): compile checks passed, "
          "SASS not checked")
    sys.exit(77)
print("check-tma: all OK")
PY
