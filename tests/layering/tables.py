#!/usr/bin/env python3
"""tables.py ROOT — archs and GEMM paths are named by their tables only.

gen/plan_tables.c holds the arch table (k_caps: sm_80, ...), the operand-format table and the
GEMM-path table (k_paths: mma_s8, ...). Every other product file asks those tables (plan_arch_list,
plan_arch_parse, plan_gemm_path_name, spec_fields.archs, ...), so a new sm_XY or a new path is a
row there plus its kernels. This scan enumerates the product files — the C, C++, Lua and Python
sources under gen/, runtime/, tune/, tools/, base/, bench/, lua/, python/hot/ and templates/*.c,
*.h (the CPU twins) — and fails on a string literal in code that spells an arch (sm_NN, sm_NNa,
compute_NN...) or a GEMM path name of the table. Comments and docstrings are documentation and
are not read. The path names are read from the table itself, so a new row is covered at once.
Not scanned: the CUDA templates (templates/*.cu, *.cuh: kernels written for the arch they
static_assert against) and shell scripts (tools/*.sh: device and emulator drivers that name the
arch each run tests).

Exit 0 when clean; one line per literal otherwise. --selftest: a mutant of each kind (a C message,
a Lua list, a Python constant, a path name) must be caught, and the same names in comments and
docstrings must not."""
import io
import os
import re
import sys
import tokenize

TABLE_FILES = ("gen/plan_tables.c",)
SCAN_DIRS = ("gen", "runtime", "tune", "tools", "base", "bench", "lua", "python/hot")
C_EXT = (".c", ".h", ".cpp", ".hpp", ".cc")
ARCH = re.compile(r"\b(?:sm|compute)_\d{2,3}[a-z]?\b")


LUA_LONG = re.compile(r"\[(=*)\[")


def quoted_end(text, i):
    """End index (past the closing quote) of the quoted literal opening at text[i]."""
    q, j = text[i], i + 1
    while j < len(text) and text[j] != q and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    return j + 1


def c_skip(text, i):
    """(end, literal body or None) of the comment or literal at text[i], else None (C/C++)."""
    if text.startswith("//", i):
        j = text.find("\n", i)
        return (len(text) if j < 0 else j), None
    if text.startswith("/*", i):
        j = text.find("*/", i + 2)
        return (len(text) if j < 0 else j + 2), None
    if text[i] in "\"'":
        j = quoted_end(text, i)
        return j, text[i + 1:j - 1]
    return None


def lua_skip(text, i):
    """(end, literal body or None) of the comment or literal at text[i], else None (Lua)."""
    long_at = i + 2 if text.startswith("--", i) else i
    m = LUA_LONG.match(text, long_at)
    if m:
        close = "]" + m.group(1) + "]"
        j = text.find(close, m.end())
        j = len(text) if j < 0 else j
        return j + len(close), (None if long_at != i else text[m.end():j])
    if text.startswith("--", i):
        j = text.find("\n", i)
        return (len(text) if j < 0 else j), None
    if text[i] in "\"'":
        j = quoted_end(text, i)
        return j, text[i + 1:j - 1]
    return None


def literals(text, skip):
    """(line, literal body) of every string literal of text, comments passed over (skip: c_skip or
    lua_skip)."""
    i, line = 0, 1
    while i < len(text):
        got = skip(text, i)
        if got is None:
            line += text[i] == "\n"
            i += 1
            continue
        end, body = got
        if body is not None:
            yield line, body
        line += text.count("\n", i, end)
        i = end


def py_strings(text):
    """(line, literal) of every Python string token that is not a docstring (a string statement)."""
    prev = tokenize.NEWLINE
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError) as e:
        yield 1, f"<unreadable: {e}>"
        return
    for k, t in enumerate(toks):
        if t.type == tokenize.STRING:
            nxt = next((u.type for u in toks[k + 1:] if u.type not in (tokenize.NL, tokenize.COMMENT)),
                       tokenize.NEWLINE)
            docstring = prev in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.NL) and \
                nxt in (tokenize.NEWLINE, tokenize.ENDMARKER)
            if not docstring:
                yield t.start[0], t.string
        if t.type not in (tokenize.NL, tokenize.COMMENT):
            prev = t.type


def path_names(root):
    text = open(os.path.join(root, TABLE_FILES[0]), encoding="utf-8").read()
    table = text[text.index("k_paths["):]
    names = re.findall(r'\.name = "([A-Za-z0-9_]+)"', table)
    if len(names) < 2:
        raise SystemExit(f"tables.py: cannot read the GEMM path names of {TABLE_FILES[0]}")
    return names


def findings(rel, text, paths):
    if rel.endswith(C_EXT):
        strings = literals(text, c_skip)
    elif rel.endswith(".lua"):
        strings = literals(text, lua_skip)
    elif rel.endswith(".py"):
        strings = py_strings(text)
    else:
        return []
    path_re = re.compile(r"\b(?:" + "|".join(map(re.escape, paths)) + r")\b")
    out = []
    for line, s in strings:
        for m in list(ARCH.finditer(s)) + list(path_re.finditer(s)):
            out.append(f"{rel}:{line}: '{m.group(0)}' spelled out: ask the table "
                       f"({TABLE_FILES[0]}: plan_arch_list / plan_arch_parse / plan_gemm_path_name)")
    return out


def product_files(root):
    for d in SCAN_DIRS:
        for dirpath, dirs, files in os.walk(os.path.join(root, d)):
            dirs[:] = [x for x in dirs if x not in ("__pycache__",)]
            for f in sorted(files):
                yield os.path.relpath(os.path.join(dirpath, f), root)
    for f in sorted(os.listdir(os.path.join(root, "templates"))):
        if f.endswith((".c", ".h")):
            yield "templates/" + f


def scan(root):
    paths = path_names(root)
    out, count = [], 0
    for rel in product_files(root):
        if rel in TABLE_FILES:
            continue
        count += 1
        out += findings(rel, open(os.path.join(root, rel), encoding="utf-8", errors="replace").read(),
                        paths)
    if count < 100:
        out.append(f"tables.py: only {count} product files found under {root}: wrong root?")
    return out


SAMPLES_BAD = [
    ("gen/x.c", 'fprintf(stderr, "unknown arch (known: sm_80, sm_90a)\\n");'),
    ("runtime/x.h", "static const char *k = \"-arch=compute_90a\";"),
    ("lua/hot/x.lua", 'S.archs = { "sm_80", "sm_90" }'),
    ("lua/hot/y.lua", "local doc = [[a list of sm_86 and more]]"),
    ("python/hot/x.py", 'ARCHS = ("sm_89",)\n'),
    ("tune/x.c", 'static const char *p = "wgmma_s8";'),
    ("gen/y.c", "char c = 'x'; const char *s = \"tma_s8 path\";"),
]
SAMPLES_GOOD = [
    ("gen/x.c", "/* sm_80 ... sm_90a */\nint a; // the tma_s8 path\n"),
    ("gen/y.c", 'printf("sm_%d %s", 90, "sm_XY");'),
    ("lua/hot/x.lua", "-- arch = { \"sm_80\" }\n--[[ sm_90a ]]\nlocal a = 1"),
    ("python/hot/x.py", 'def f():\n    """arch "sm_80" ... "sm_90a" (docstring)."""\n    return 1  # sm_90\n'),
]


def selftest():
    paths = ["mma_s4", "mma_s8", "wgmma_s8", "tma_s8"]
    bad = 0
    for rel, text in SAMPLES_BAD:
        if not findings(rel, text, paths):
            print(f"selftest: missed the literal in {rel}: {text!r}")
            bad += 1
    for rel, text in SAMPLES_GOOD:
        got = findings(rel, text, paths)
        if got:
            print(f"selftest: flagged documentation in {rel}: {got}")
            bad += 1
    print("selftest: " + ("FAILED" if bad else f"ok ({len(SAMPLES_BAD)} mutants caught, "
                                                f"{len(SAMPLES_GOOD)} clean samples passed)"))
    return 1 if bad else 0


def main():
    if sys.argv[1:] == ["--selftest"]:
        return selftest()
    if len(sys.argv) != 2:
        print("usage: tables.py ROOT | --selftest", file=sys.stderr)
        return 2
    out = scan(sys.argv[1])
    for line in out:
        print(line)
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
