#!/usr/bin/env python3
"""sources.py ROOT — no build file or script compiles another target's sources by hand.

Each library's sources are listed once, by the CMakeLists.txt of its own folder (base/, gen/,
templates/, runtime/, runtime/cpu/, tune/, bench/). Everything else that needs those objects takes
them from the targets: links the library, builds an instrumented twin from the target's SOURCES
(cmake/twin.cmake: the fuzz build), or reads the built libraries' paths that CMake wrote
(tools/kernel-emu.sh). This scan enumerates the places that could list them:
  - every CMakeLists.txt and cmake/*.cmake: a path ${PROJECT_SOURCE_DIR}/<lib folder>/....c or a
    file(GLOB) of a library folder, outside that folder's own CMakeLists.txt;
  - every shell and Python script under tools/, tests/, dev/, python/, .ci/: a library folder's .c
    file named or globbed (ls gen/*.c, "$here/gen/basis.c", glob("base/*.c")).
A script that only names a file in a comment or a message is not compiling it: comment lines are
skipped. Exit 0 when clean; one line per place otherwise. --selftest: the checks must catch the
bad samples below."""
import os
import re
import sys

LIB_DIRS = ("base", "gen", "gen/kernels", "templates", "runtime", "runtime/cpu", "runtime/tools",
            "tune", "bench")
CMAKE_PATH = re.compile(r"\$\{(?:PROJECT|CMAKE)_SOURCE_DIR\}/((?:[A-Za-z_]+/)*)[A-Za-z_*]+\.c\b")
CMAKE_GLOB = re.compile(r"file\s*\(\s*GLOB[^)]*\$\{(?:PROJECT|CMAKE)_SOURCE_DIR\}/((?:[A-Za-z_]+/)*)\*\.c\b")
SCRIPT_C = re.compile(r"(?:^|[\s\"'/(])((?:base|gen|templates|runtime|tune|bench)(?:/[A-Za-z_]+)*)/"
                      r"[A-Za-z_*]+\.c\b")
SCRIPT_DIRS = ("tools", "tests", "dev", "python", ".ci")


def code_lines(text, comment):
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith(comment):
            continue
        yield n, line.split(" " + comment)[0] if comment == "#" else line


def cmake_findings(rel, text):
    own = os.path.dirname(rel)
    out = []
    for n, line in code_lines(text, "#"):
        for m in CMAKE_PATH.finditer(line):
            d = m.group(1).rstrip("/")
            if d in LIB_DIRS and d != own:
                out.append(f"{rel}:{n}: lists {d}/'s sources by hand: link its library instead")
        for m in CMAKE_GLOB.finditer(line):
            d = m.group(1).rstrip("/")
            if d in LIB_DIRS and d != own:
                out.append(f"{rel}:{n}: globs {d}/'s sources: take them from its target")
    return out


def script_findings(rel, text):
    out = []
    for n, line in code_lines(text, "#"):
        if re.match(r"\s*(echo|printf|print\(|\"\"\"|')", line):
            continue
        for m in SCRIPT_C.finditer(line):
            if m.group(1) in LIB_DIRS:
                out.append(f"{rel}:{n}: names {m.group(1)}/'s sources: use the built library "
                           "(its path from CMake)")
    return out


def scan(root):
    out = []
    for dirpath, dirs, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        dirs[:] = [d for d in dirs if not d.startswith("build") and d not in (".git", "__pycache__")]
        for f in files:
            rel = os.path.normpath(os.path.join(rel_dir, f))
            path = os.path.join(dirpath, f)
            if f == "CMakeLists.txt" or (rel.startswith("cmake/") and f.endswith(".cmake")):
                out += cmake_findings(rel, open(path, encoding="utf-8").read())
            elif rel.split("/")[0] in SCRIPT_DIRS and (f.endswith((".sh", ".py")) or f == "run"):
                if rel in ("tests/layering/sources.py", "tests/layering/tables.py",
                           "tests/docs/test_family_files.py") or \
                        rel.startswith("tests/reliability/"):
                    continue  # this scan's own patterns; the scans that read sources as text
                out += script_findings(rel, open(path, encoding="utf-8", errors="replace").read())
    return out


SELFTEST = [
    (cmake_findings, "tests/plot/CMakeLists.txt",
     "hot_check_test(NAME t SOURCES t.c ${PROJECT_SOURCE_DIR}/tune/plot.c LIBS m)\n"),
    (cmake_findings, "tests/fuzz/CMakeLists.txt",
     "file(GLOB s CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/gen/*.c)\n"),
    (script_findings, "tools/kernel-emu.sh",
     "srcs=$(cd \"$here\" && ls gen/*.c gen/kernels/*.c base/*.c)\n"),
    (script_findings, "tools/kernel-emu.sh", "$CC -c \"$here/templates/quant_ref.c\" -o x.o\n"),
]


def main():
    if sys.argv[1:2] == ["--selftest"]:
        bad = [rel for fn, rel, text in SELFTEST if not fn(rel, text)]
        if cmake_findings("gen/CMakeLists.txt", "file(GLOB s ${CMAKE_CURRENT_SOURCE_DIR}/*.c)\n"):
            bad.append("gen/CMakeLists.txt (its own folder)")
        for b in bad:
            print(f"FAIL: selftest: no finding for the sample of {b}")
        print(f"sources selftest: {len(SELFTEST) - len(bad)} of {len(SELFTEST)} samples caught")
        return 1 if bad else 0
    root = sys.argv[1]
    out = scan(root)
    for line in out:
        print("FAIL: " + line)
    print(f"sources: {len(out)} place(s) listing another target's sources")
    return 1 if out else 0


if __name__ == "__main__":
    sys.exit(main())
