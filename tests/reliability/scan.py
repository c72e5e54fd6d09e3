#!/usr/bin/env python3
"""Source scans of docs/reliability.md: each class of failure is enumerated over the C sources of
base/, runtime/, gen/, tune/, bench/ and dev/, and every place found must be one of the known, checked places
listed here (with why it is safe). A new place fails the scan until it is made safe and listed.

Usage: scan.py SOURCE_DIR CLASS   (CLASS: files, databases, messages, escaping, limits, captures,
                                   nearest, environment, py_outputs; or all)
"""
import os
import re
import sys

DIRS = ("base", "runtime", "gen", "tune", "bench", "dev")


def strip_comments(text, keep_strings=True):
    """The C text with comments blanked (line numbers kept; string contents too unless
    keep_strings)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            s = text[i:j + 1]
            out.append(s if keep_strings else c + re.sub(r"[^\n]", " ", s[1:-1]) + c)
            i = j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def walk(root, dirs, ext):
    """(path relative to root, text) of every file ending in ext under the folders dirs."""
    for d in dirs:
        for base, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith(ext):
                    p = os.path.join(base, f)
                    yield os.path.relpath(p, root), open(p, encoding="utf-8", errors="replace").read()


def sources(root, keep_strings=True):
    for rel, text in walk(root, DIRS, ".c"):
        yield rel, strip_comments(text, keep_strings)


def find(root, pattern, keep_strings=True):
    """{file: count} of pattern's matches over the sources (in code only unless keep_strings)."""
    rx = re.compile(pattern)
    got = {}
    for rel, text in sources(root, keep_strings):
        k = len(rx.findall(text))
        if k:
            got[rel] = k
    return got


def compare(what, got, known):
    bad = 0
    for f in sorted(set(got) | set(known)):
        g, k = got.get(f, 0), known.get(f, (0, ""))[0]
        if g != k:
            print("FAIL: %s: %s has %d place(s), the known list says %d%s" %
                  (what, f, g, k, "" if f in known else " (a new place: make it safe, then list it)"))
            bad += 1
        else:
            print("ok: %s: %s: %d (%s)" % (what, f, g, known[f][1]))
    return bad


# ---- 1. files: every open of a file goes through base/fileio.c ----------------------------------
OPEN = r"\b(fopen|freopen|fdopen|open|openat|creat|mkstemp|mkostemp|tmpfile|luaL_loadfilex?|luaL_dofile|dlopen|opendir|sqlite3_open(?:_v2)?)\s*\("
OPEN_KNOWN = {
    "base/fileio.c": (3, "the one home: open() with O_NONBLOCK + fstat S_ISREG, a blocking open() of "
                         "a stream, and one fdopen of either (fdopen_or_close)"),
    "runtime/tunedb.c": (3, "sqlite3_open_v2 through the VFS hot-regular after open_precheck "
                            "(database, immutable reopen) and of :memory:"),
    "runtime/cache.c": (2, "opendir of the cache folder (listing; entries read via fileio)"),
    "runtime/cpu/fast_pool.c": (1, "dlopen(RTLD_NOLOAD) of an OpenMP runtime the process has "
                                   "loaded: not a data file"),
    "runtime/cuda_api.c": (2, "dlopen of the CUDA driver (HOT_CUDA_DRIVER or the system's): not a data file"),
    "bench/cublas.c": (1, "dlopen of cuBLAS by library name"),
    "bench/cublaslt.c": (1, "dlopen of cuBLASLt by library name"),
    "runtime/nvrtc.c": (2, "mkstemp of its own new temp file and fopen of that file (NVRTC's --time report)"),
    "dev/jit-options/nvrtc_options.c": (3, "a measuring tool outside the library, run by its "
                                          "script: /proc/loadavg, the runtime's own HOT_JIT_DEBUG "
                                          "dumps, a cubin into its own mkdtemp folder"),
}


# The two kinds of file (docs/reliability.md's table): streams, read once from start to end, may
# be pipes ("-" is stdin): fileio_fopen_stream, for a spec only. Everything opened for random
# access or written is regular-only: fileio_open, fileio_fopen, fileio_check_regular.
STREAM_KNOWN = {
    "base/fileio.c": (1, "its definition"),
    "gen/spec.c": (1, "spec_load_file: the spec, read once into memory (16 MiB bound), then "
                      "loaded from the buffer under the file's name"),
}
REGULAR_KNOWN = {
    "base/fileio.c": (7, "definitions, fileio_fopen's call of fileio_open, fileio_mkdir_last's "
                         "check"),
    "runtime/cache_file.c": (2, "kernel-cache entry: written (temp + rename), read by offset"),
    "runtime/capture.c": (3, "capture: written (temp + rename, target checked), read by offset"),
    "runtime/jit.c": (1, "HOT_JIT_DEBUG's source dump: written"),
    "runtime/pack.c": (3, "kernel pack: written (temp + rename, target checked), read by offset"),
    "runtime/tunedb.c": (3, "tuning database and its companions: random access (SQLite); "
                            "truncated_db: the header read by offset to name a cut file"),
    "gen/main.c": (5, "--emit / --dump-cubin / --pack checked before any work, the folders made "
                      "(last component only), outputs written (temp + rename)"),
    "tune/plot.c": (2, "--plot output: written (temp + rename)"),
    "tune/main.c": (3, "--db, show --plot, merge OUT: checked before any work"),
    "bench/main.c": (1, "--out: checked before any work"),
    "bench/common.c": (2, "--out: written (temp + rename, target checked)"),
    "bench/model.c": (1, "--model's register table (HOT_KERNEL_QUALITY): read, regular file"),
}


def check_files(root):
    bad = compare("file opens", find(root, OPEN, keep_strings=False), OPEN_KNOWN)
    bad += compare("stream opens (pipes allowed)",
                   find(root, r"\bfileio_fopen_stream\s*\(", keep_strings=False), STREAM_KNOWN)
    bad += compare("regular-only opens (random access or written)",
                   find(root, r"\bfileio_(?:open|fopen|check_regular|check_output|mkdir_last)\s*\(",
                        keep_strings=False),
                   REGULAR_KNOWN)
    return bad


# ---- the Python tools' and examples' outputs: written whole or not at all ------------------------
# An output a user keeps (a report, a JSON of results, a plot) goes through hot.files
# (replace_file / replace_text: a new file beside the target, renamed over it once complete), so
# that a failed write leaves the earlier file as it was. Every place that opens a file for
# writing or saves a figure in tools/, python/hot/, bench/ and examples/ is listed.
PY_DIRS = ("tools", "python/hot", "bench", "examples")
PY_WRITE = r"""\bopen\s*\([^)\n]*,\s*["'][wax]|\.savefig\s*\(|\bjson\.dump\s*\("""
PY_WRITE_KNOWN = {
    "python/hot/files.py": (1, "replace_text's write of the new file, which replace_file renames"),
    "tools/gemm-emu/mkemu.py": (1, "a build step's generated source (CMake remakes it when it fails)"),
    "tools/tma-emu/mktma.py": (1, "its intermediate source, in its own temporary folder"),
    "examples/train.py": (1, "the plot, written by replace_file into its new file"),
    "examples/train_lm.py": (1, "the plot, written by replace_file into its new file"),
}


def check_py_outputs(root):
    rx = re.compile(PY_WRITE)
    got = {rel: len(rx.findall(text)) for rel, text in walk(root, PY_DIRS, ".py")}
    return compare("Python outputs written in place", {f: k for f, k in got.items() if k},
                   PY_WRITE_KNOWN)


# ---- environment: the process environment is read in one place, runtime/env.c -------------------
# (env_get; env_read / env_read_cpu parse it once, hot_ctx_create and the tools hand the values
# down). The fast CPU path (runtime/cpu/) and the tools never call getenv themselves. Not
# scanned: tests/ (fixtures name their own variables) and dev/ (the JIT-options lab tool, run
# by hand, not built into libhot or the installed tools).
ENV_DIRS = ("runtime", "gen", "tune", "bench", "base")
ENV_KNOWN = {
    "runtime/env.c": (1, "env_get: the one reader, behind env_read and env_read_cpu"),
}


def check_environment(root):
    rx = re.compile(r"\b(getenv|secure_getenv|environ)\b")
    got = {rel: len(rx.findall(strip_comments(text, keep_strings=False)))
           for rel, text in walk(root, ENV_DIRS, (".c", ".h", ".cc", ".cpp"))}
    return compare("environment reads", {f: k for f, k in got.items() if k}, ENV_KNOWN)


# ---- 2. databases: every connection to a file sees what a normal reader sees ------------------
def check_databases(root):
    bad = compare("sqlite3_open", find(root, r"\bsqlite3_open(?:_v2)?\s*\("),
                  {"runtime/tunedb.c": (3, "open_file, open_immutable, tunedb_open_sql(:memory:)")})
    text = dict(sources(root))["runtime/tunedb.c"]
    for m in re.finditer(r"sqlite3_open_v2\(([^;]*?)\)\s*(?:!=|:|;)", text, re.S):
        args = m.group(1)
        if '":memory:"' not in args and "tunedb_vfs()" not in args:
            print("FAIL: databases: a file connection without the VFS hot-regular: %s" % args.strip())
            bad += 1
    bad += compare("immutable opens", find(root, r"immutable=1"),
                   {"runtime/tunedb.c": (1, "open_immutable only: a folder this process cannot "
                                            "write, no -wal changes, no -journal")})
    if "SQLITE_READONLY_ROLLBACK" not in text:
        print("FAIL: databases: runtime/tunedb.c does not refuse a hot journal (SQLITE_READONLY_ROLLBACK)")
        bad += 1
    for sfx in ('"-wal"', '"-journal"', '"-shm"'):
        if sfx not in text:
            print("FAIL: databases: open_precheck does not check the companion %s" % sfx)
            bad += 1
    return bad


# ---- 3. messages: cut at a word with "...", never mid-word --------------------------------------
MSG_FILES = ("runtime/tunedb.c", "runtime/tuned.c", "runtime/cache.c", "runtime/cache_file.c",
             "runtime/pack.c", "runtime/capture.c", "tune/", "gen/main.c", "bench/main.c")


def in_msg_files(f):
    return any(f == m or (m.endswith("/") and f.startswith(m)) for m in MSG_FILES)


def check_messages(root):
    bad = 0
    # diag_errf (diag.c: a plain vsnprintf) and snprintf into an error buffer cut mid-word
    got = {f: k for f, k in find(root, r"\bhot_errf\s*\(|\bsnprintf\s*\(\s*(err|why|row->note|r->note)\s*,").items()
           if in_msg_files(f)}
    bad += compare("messages not through fileio_msgf", got,
                   {"runtime/capture.c": (11, "check_header: fixed texts with numbers, each far "
                                              "under its 256-byte buffer")})
    # a precision cut of a string (%.40s, %.*s) in a message
    known = {"runtime/cache_file.c": (1, "%.16s: the first 16 hex digits of a key in a temp name"),
             "gen/main.c": (1, "%.*s: an item of --compile's list, whose length the caller "
                               "compares with the buffer's (a longer item is refused whole)"),
             "tune/plot.c": (4, "%.*s of digit strings in number formatting")}
    got = {f: k for f, k in find(root, r"%\.(?:\d+|\*)s").items() if in_msg_files(f)}
    bad += compare("string precision cuts", got, known)
    return bad


# ---- 4. escaping: one function per format ------------------------------------------------------
def check_escaping(root):
    bad = 0
    # hand-written escapes outside gen/escape.c
    bad += compare("JSON \\u escapes", find(root, r'\\\\u%04x|\\\\ufffd'),
                   {"gen/escape.c": (2, "esc_json")})
    bad += compare("XML entities", find(root, r"&amp;|&lt;|&quot;|&apos;"),
                   {"gen/escape.c": (4, "esc_xml")})
    # a %s between JSON quotes: only values from a fixed set of hot's own names
    known = {
        "gen/main.c": (23, "arch, dtype, recipe, role, template, path and codes names of plan.h; "
                           "kernel names built from spec names ([A-Za-z0-9_.-])"),
        "bench/report.c": (4, "KEY's literal names, role names of plan.h, 'backward'/'save', 'tops'/'gbs'"),
        "bench/paths.c": (5, "KEY's literal names; path, arch and product names of its own constant "
                             "tables (k_paths, k_products)"),
        "tune/main.c": (1, "the arch name of plan.h"),
        "tune/show.c": (6, "the literal column names (\"%s\": counted twice)"),
        "tune/plot.c": (7, "SVG class names and attribute numbers of the writer itself; a message "
                           "quoting the extension"),
    }
    got = {f: k for f, k in find(root, r'\\"%s|%s\\"').items()
           if f.startswith(("tune/", "bench/")) or f == "gen/main.c"}
    bad += compare("%s inside JSON/XML quotes", got, known)
    # the writers call the escaping functions
    for f, fn in (("tune/show.c", "esc_text"), ("tune/show.c", "esc_json"), ("tune/show.c", "esc_sql"),
                  ("tune/plot.c", "esc_xml"), ("gen/main.c", "esc_json"), ("bench/report.c", "esc_json"),
                  ("bench/paths.c", "esc_json"), ("bench/model.c", "esc_json")):
        if fn not in dict(sources(root)).get(f, ""):
            print("FAIL: escaping: %s does not use %s" % (f, fn))
            bad += 1
    return bad


# ---- 5. limits: counted per layer, before anything is built ------------------------------------
def check_limits(root):
    bad = 0
    text = dict(sources(root))["tune/space.c"]
    lv = text[text.find("static int layer_variants"):]
    lv = lv[:lv.find("\n}\n")]
    if "space_size" not in lv or lv.find("space_size") > lv.find("product("):
        print("FAIL: limits: layer_variants does not count (space_size) before building (product)")
        bad += 1
    if re.search(r"\*n\s*>\s*\(1\s*<<\s*20\)", text):
        print("FAIL: limits: the variant list counted over all layers")
        bad += 1
    bad += compare("variant limits", find(root, r"TUNE_MAX_VARIANTS"),
                   {"tune/space.c": (9, "space_size and layer_variants")})
    t = dict(sources(root))["runtime/tunedb.c"]
    if "path_limit()" not in t:
        print("FAIL: limits: tunedb_open does not check the path against SQLite's limit")
        bad += 1
    return bad


# ---- 6. captures: a capture is used only for a layer it blocks like -----------------------------
def check_captures(root):
    bad = compare("capture reads", find(root, r"\bcapture_read\s*\("),
                  {"tune/accuracy.c": (2, "tune_accuracy_load_capture, make_data: both then "
                                          "checked by tune_capture_fits"),
                   "runtime/capture.c": (1, "its definition")})
    bad += compare("capture fit checks", find(root, r"\btune_capture_fits\s*\("),
                   {"tune/accuracy.c": (2, "definition, make_data"),
                    "tune/main.c": (1, "load_capture: one error up front")})
    return bad


# ---- 8. nearest: every lookup applies the cut-off and says how far -----------------------------
def check_nearest(root):
    bad = compare("nearest-shape lookups", find(root, r"\btunedb_best_speed\s*\("),
                  {"runtime/tunedb.c": (1, "its definition: the cut-off HOT_TUNE_NEAR_MAX"),
                   "runtime/tuned.c": (1, "tuned_plan_layer: says the distance, or why not used")})
    t = dict(sources(root))["runtime/tuned.c"]
    if "c.far" not in t or "c.distance" not in t:
        print("FAIL: nearest: tuned_plan_layer does not say the distance / a row beyond the cut-off")
        bad += 1
    if "HOT_TUNE_NEAR_MAX" not in dict(sources(root))["runtime/tunedb.c"]:
        print("FAIL: nearest: tunedb_best_speed has no cut-off")
        bad += 1
    return bad


CHECKS = {"files": check_files, "databases": check_databases, "messages": check_messages,
          "escaping": check_escaping, "limits": check_limits, "captures": check_captures,
          "nearest": check_nearest, "environment": check_environment,
          "py_outputs": check_py_outputs}

if __name__ == "__main__":
    root, what = sys.argv[1], sys.argv[2]
    bad = sum(CHECKS[c](root) for c in (CHECKS if what == "all" else [what]))
    print("%d place(s) not known to be safe" % bad if bad else "all places known and checked")
    sys.exit(1 if bad else 0)
