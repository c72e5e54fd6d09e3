#!/usr/bin/env python3
"""mkemu.py — turn templates/gemm_int.cu or gemm_wgmma.cu into host C++ for the SIMT emulator
(emu.cpp).

Only the PTX wrappers change: the body of each hot_* wrapper below is replaced by a call into
the emulator, the dynamic shared array becomes the emulated block's buffer, and the overflow
check HOT_RANGE_CHECK raises the emulator's flag word (emu_range_check). Everything
else (tiling, swizzle, loader, pipeline, fragment bookkeeping, epilogue) is the template's own
code, compiled unchanged.  Usage: mkemu.py templates/gemm_int.cu out.inc
"""
import os
import re
import sys

BODIES = {
    "hot_smem_u32": "{ return emu_smem_u32(p); }",
    "hot_cp_async16": "{ emu_cp_async16(dst, src, src_bytes); }",
    "hot_cp_async_commit": "{ emu_cp_commit(); }",
    "hot_cp_async_wait": "{ emu_cp_wait(N); }",
    "hot_tid_opaque": "{ return (int)threadIdx.x; }",
    "hot_ldmatrix_x4": "{ emu_ldmatrix(addr, 4, &r0, &r1, &r2, &r3); }",
    "hot_ldmatrix_x2": "{ emu_ldmatrix(addr, 2, &r0, &r1, 0, 0); }",
    "hot_mma": "{ emu_mma(d, a, b); }",
    # gemm_wgmma.cu
    "hot_fence_proxy_async": "{ emu_fence_proxy_async(); }",
    "hot_wgmma_fence": "{ emu_wgmma_fence(); }",
    "hot_wgmma_commit": "{ emu_wgmma_commit(); }",
    "hot_wgmma_wait": "{ emu_wgmma_wait(N); }",
    "hot_wgmma": "{ emu_wgmma(d, HOT_NREG, da, db); }",
    "hot_acc_fence": "{ (void)d; }",
}


def replace_body(src, name, body):
    """Replaces the body of wrapper `name` (absent wrappers: the other template's; any inline
    asm left behind afterwards is an error, so a missing one cannot go unnoticed)."""
    m = re.search(r"\b" + name + r"\s*\(", src)
    if not m:
        return src
    start = src.index("{", m.end())
    depth = 0
    for i in range(start, len(src)):
        if src[i] == "{":
            depth += 1
        elif src[i] == "}":
            depth -= 1
            if depth == 0: # the body's line breaks kept: sites keep their template lines
                return src[:start] + body + "\n" * src.count("\n", start, i) + src[i + 1:]
    sys.exit("mkemu: unbalanced braces in %s" % name)


def main():
    src = open(sys.argv[1]).read()
    tname = "templates/" + os.path.basename(sys.argv[1])
    # the cp.async wrappers live in hot_gemm.cuh, the wgmma ones in hot_sm90.inl.cuh: inline them
    # so that their bodies are replaced too (#line directives keep every line attributed to its
    # template file)
    tdir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "templates")
    orig = src
    for name in ("hot_gemm.cuh", "hot_sm90.inl.cuh"):
        inc = '#include "%s"' % name
        if inc in src:
            after = orig[:orig.index(inc)].count("\n") + 2  # the line after the #include
            body = open(os.path.join(tdir, name)).read()
            if not body.endswith("\n"):
                body += "\n"
            src = src.replace(inc, '#line 1 "templates/%s"\n' % name + body +
                              '#line %d "%s"' % (after, tname), 1)
    src = '#line 1 "%s"\n' % tname + src
    for name, body in BODIES.items():
        src = replace_body(src, name, body)
    # the overflow flag (hot_math.cuh's HOT_RANGE_CHECK is a no-op off the device): every check
    # the kernel makes goes to the emulator's flag word, which the driver compares with the
    # reference's "some output is not finite"
    math = '#include "hot_math.cuh"'
    if src.count(math) != 1:
        sys.exit("mkemu: %r not found once" % math)
    after = src[:src.index(math)].count("\n") + 1  # the include's line, less the #line on top
    src = src.replace(math, math + "\n#undef HOT_RANGE_CHECK\n"
                      "#define HOT_RANGE_CHECK(v) emu_range_check(v)\n"
                      '#line %d "%s"' % (after, tname), 1)
    decl = re.search(r"extern __shared__ __align__\(\d+\) unsigned char hot_smem\[\];", src)
    if not decl:
        sys.exit("mkemu: shared declaration not found")
    src = src.replace(decl.group(0), "unsigned char *hot_smem = emu_smem();")
    if "asm" in re.sub(r"/\*.*?\*/", "", src, flags=re.S):
        sys.exit("mkemu: inline asm left outside the known wrappers")
    open(sys.argv[2], "w").write(src)


main()
