#!/usr/bin/env python3
"""mktma.py — turn templates/gemm_tma.cu into host C++ for the TMA emulator (tma_emu.cpp).

Two passes, both replacing only the bodies of PTX wrappers (everything else — schedule, ring of
stages, parities, descriptors, epilogue — is the template's own code, compiled unchanged):
  1. this script: the wrappers only gemm_tma.cu has (mbarrier, TMA, setmaxnreg);
  2. tools/gemm-emu/mkemu.py, run on the result: the wrappers gemm_tma.cu shares with
     gemm_wgmma.cu (wgmma, its fence / commit / wait, the shared-address conversion, the inlined
     hot_gemm.cuh) and the dynamic shared array; it refuses any inline asm left behind.
Usage: mktma.py templates/gemm_tma.cu out.inc
"""
import os
import re
import subprocess
import sys
import tempfile

BODIES = {
    "hot_mbar_init": "{ emu_mbar_init(bar, count); }",
    "hot_fence_mbar_init": "{ emu_fence_mbar_init(); }",
    "hot_mbar_arrive_expect_tx": "{ emu_mbar_arrive(bar, bytes, true); }",
    "hot_mbar_arrive": "{ emu_mbar_arrive(bar, 0, false); }",
    "hot_mbar_wait": "{ emu_mbar_wait(bar, parity); }",
    "hot_tma_load_2d": "{ emu_tma_load_2d(dst, map, k, row, bar); }",
    "hot_tma_prefetch_map": "{ emu_tma_prefetch(map); }",
    "hot_setmaxnreg_dec": "{ emu_setmaxnreg(N, false); }",
    "hot_setmaxnreg_inc": "{ emu_setmaxnreg(N, true); }",
}


def replace_body(src, name, body):
    """The body of the definition of `name` (its first call-like occurrence) replaced; every
    wrapper of the table must be present."""
    m = re.search(r"\b" + name + r"\s*\(", src)
    if not m:
        sys.exit("mktma: wrapper %s not found (update tools/tma-emu/mktma.py)" % name)
    start = src.index("{", m.end())
    depth = 0
    for i in range(start, len(src)):
        if src[i] == "{":
            depth += 1
        elif src[i] == "}":
            depth -= 1
            if depth == 0:  # the body's line breaks kept: sites keep their template lines
                return src[:start] + body + "\n" * src[start:i].count("\n") + src[i + 1:]
    sys.exit("mktma: unbalanced braces in %s" % name)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: mktma.py templates/gemm_tma.cu out.inc")
    src = open(sys.argv[1]).read()
    for name, body in BODIES.items():
        src = replace_body(src, name, body)
    # the first pass under the template's own name, so that mkemu.py's #line directives name it
    # (templates/gemm_tma.cu: the sites of tools/memstat.sh)
    here = os.path.dirname(os.path.abspath(__file__))
    mkemu = os.path.join(here, "..", "gemm-emu", "mkemu.py")
    with tempfile.TemporaryDirectory() as tmp:  # removed on every way out, errors included
        mid = os.path.join(tmp, os.path.basename(sys.argv[1]))
        with open(mid, "w") as f:
            f.write(src)
        rc = subprocess.call([sys.executable, mkemu, mid, sys.argv[2]])
    sys.exit(rc)


main()
