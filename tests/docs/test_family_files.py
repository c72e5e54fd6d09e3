#!/usr/bin/env python3
"""test_family_files.py — a kernel family is the unit of extension (docs/adding.md, "Adding a
kernel family"): the files whose code (comments stripped) names a family's role constant
(HOT_K_<ROLE>) must be the family's own (its descriptor, template, twin) or the places that list
every family, and the CUDA backend's files must name no role and only the buffer slots a caller
hands over. Prints, per family, the product files that name it and their count, and fails on a
file outside the rule. Usage: test_family_files.py SOURCE_DIR [--self-test]."""
import os
import re
import sys

# Files that list every family (one line each) or legitimately speak of every role, with why.
LISTS_EVERY_FAMILY = {
    "gen/plan.h": "the role rows of HOT_KERNEL_ROLES (ABI numbers)",
    "gen/plan_query.c": "shape questions of the SAWB roles (plan_sawb_elems / _groups)",
}
# Roles a descriptor other than its own may name, with why.
SHARED = {
    ("gen/kernels/hq.c", "HOT_K_SAWB_W"): "hq_w hands its fp32 tensor to SAWB",
    ("gen/kernels/hla.c", "HOT_K_SAWB_X"): "abc_x hands its fp32 tensor to SAWB",
    ("gen/kernels/gemm.c", "HOT_K_GEMM_GX"): "the GEMM roles, shared by gemm.c and gemm_tma.c",
    ("gen/kernels/gemm.c", "HOT_K_GEMM_GW"): "the GEMM roles, shared by gemm.c and gemm_tma.c",
    ("gen/kernels/gemm_tma.c", "HOT_K_GEMM_GX"): "the GEMM roles, shared by gemm.c and gemm_tma.c",
    ("gen/kernels/gemm_tma.c", "HOT_K_GEMM_GW"): "the GEMM roles, shared by gemm.c and gemm_tma.c",
}
# The CUDA backend: the buffers a caller hands over (and the calibration's results it reads back).
BACKEND = ("runtime/cuda_backend.c", "runtime/cuda_backend.h", "runtime/launch.c",
           "runtime/launch.h")
CALLER_SLOTS = {"HOT_LB_X", "HOT_LB_SAVED", "HOT_LB_GY", "HOT_LB_W", "HOT_LB_GX", "HOT_LB_GW",
                "HOT_LB_GB", "HOT_LB_LQS_RES", "HOT_LB_LQS_CHOICE", "HOT_LB_COUNT"}
# Product folders scanned (the fast path runtime/cpu/ is the CPU backend's own: a family's
# fast-path function lives there).
SCANNED = ("gen", "runtime", "templates")


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", " ", text)


def sources(root):
    for top in SCANNED:
        for d, _, files in os.walk(os.path.join(root, top)):
            rel_d = os.path.relpath(d, root)
            if rel_d.startswith("runtime/cpu"):
                continue
            for f in sorted(files):
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    rel = os.path.join(rel_d, f)
                    yield rel, strip_comments(open(os.path.join(root, rel), errors="replace").read())


def family_of(root):
    """role constant -> its family's descriptor file (from the descriptors' .roles lines)."""
    own = {}
    kd = os.path.join(root, "gen", "kernels")
    for f in sorted(os.listdir(kd)):
        if not f.endswith(".c"):
            continue
        text = strip_comments(open(os.path.join(kd, f)).read())
        m = re.search(r"\.roles\s*=\s*([^,]+(?:\|[^,]+)*),", text)
        for role in re.findall(r"HOT_K_[A-Z_]+", m.group(1) if m else ""):
            own.setdefault(role, set()).add("gen/kernels/" + f)
    return own


def check(root):
    own = family_of(root)
    bad, names = [], {}
    for rel, text in sources(root):
        for role in set(re.findall(r"\bHOT_K_[A-Z0-9_]+\b", text)) - {"HOT_K_ROLE_COUNT"}:
            names.setdefault(role, set()).add(rel)
            if rel in BACKEND:
                bad.append("%s names role %s: the CUDA backend must iterate over the descriptors"
                           % (rel, role))
            elif (rel in own.get(role, ()) or rel in LISTS_EVERY_FAMILY or (rel, role) in SHARED
                  or rel.startswith("templates/") or not rel.startswith(("gen/", "runtime/"))):
                pass  # its own descriptor, a list of every family, a twin or template
            else:
                bad.append("%s names role %s outside its family (%s)" % (
                    rel, role, ", ".join(sorted(own.get(role, {"?"})))))
        if rel in BACKEND:
            for slot in sorted(set(re.findall(r"\bHOT_LB_[A-Z0-9_]+\b", text)) - CALLER_SLOTS):
                bad.append("%s names buffer slot %s: scratch belongs to the descriptors" % (rel, slot))
    for role in sorted(names):
        print("%-18s %d files: %s" % (role, len(names[role]), " ".join(sorted(names[role]))))
    return bad


def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as t:
        for d in ("gen/kernels", "runtime", "templates"):
            os.makedirs(os.path.join(t, d))
        open(os.path.join(t, "gen/kernels/foo.c"), "w").write(
            "const hot_kernel_desc kd_foo = {.roles = 1u << HOT_K_FOO, };\n")
        open(os.path.join(t, "runtime/cuda_backend.c"), "w").write(
            "/* HOT_K_FOO in a comment is fine */ int x = HOT_LB_Q_FOO + HOT_LB_X;\n")
        open(os.path.join(t, "gen/plan.c"), "w").write("int y = HOT_K_FOO;\n")
        bad = check(t)
        want = ["runtime/cuda_backend.c names buffer slot HOT_LB_Q_FOO",
                "gen/plan.c names role HOT_K_FOO outside its family"]
        for w in want:
            if not any(b.startswith(w) for b in bad):
                sys.exit("self-test: not reported: %s (got %s)" % (w, bad))
        if len(bad) != 2:
            sys.exit("self-test: unexpected reports %s" % bad)
    print("self-test: planted role and slot reported")


def main():
    if "--self-test" in sys.argv:
        self_test()
    bad = check(sys.argv[1])
    for b in bad:
        print("FAIL: " + b)
    sys.exit(1 if bad else 0)


main()
