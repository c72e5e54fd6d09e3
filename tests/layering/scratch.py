#!/usr/bin/env python3
"""scratch.py ROOT — every heap allocation of the fast CPU path is either a pooled scratch block or
listed here with the reason it is not.

A buffer the size of a tensor (a product of two of the layer's dimensions) that lives for one call
comes from the pool of large blocks (fast_scratch / fast_unscratch, or fast_call_alloc(..., 1)):
a fresh malloc of megabytes each call can be mapped, faulted in page by page, zeroed by the kernel
and unmapped again on every step (runtime/cpu/fast.h, FAST_SCRATCH_KEEP). This scan lists every
call of malloc, calloc, realloc, aligned_alloc and posix_memalign, and every fast_call_alloc with
pooled 0, in the C files of runtime/cpu, keyed by file, enclosing function and size expression; each must be
in ALLOWED below (small vectors: per row, per group, per task or per thread; results the caller
owns and frees). A new or changed site fails until it is pooled or listed. Exit 0 when clean;
one line per site otherwise. --selftest: the scan must find the sites of the sample below."""
import os
import re
import sys

CALL = re.compile(r"\b(malloc|calloc|realloc|aligned_alloc|posix_memalign)\s*\(")
FCA = re.compile(r"\bfast_call_alloc\s*\(")
FUNC = re.compile(r"^[A-Za-z_][\w \*]*?\b([A-Za-z_]\w*)\s*\([^;]*$")

# (file, function, size expression without spaces) -> why it is not a pooled block
ALLOWED = {
    ("fast_exact.c", "dgemm", "(size_t)threads,sizeof*x->scratch"): "per-thread pointers",
    ("fast_exact.c", "dgemm", "(size_t)(DMC*DKC+DKC*DNC+DMR*DNR)*sizeof(double)"):
        "per-thread packing panels, fixed size",
    ("fast_exact.c", "project64", "(size_t)threads,sizeof(double*)"): "per-thread pointers",
    ("fast_exact.c", "project64", "(size_t)pl->hla.block*256*sizeof(double)"):
        "per-thread block of p x 256, fixed size",
    ("fast_gemm.c", "fast_igemm", "(size_t)(op->segs*g.npb*NR)*sizeof*x.corr"):
        "one offset correction per column and segment (a vector)",
    ("fast_gemm.c", "fast_igemm", "(size_t)threads,sizeof*x.scratch"): "per-thread pointers",
    ("fast_gemm.c", "fast_igemm", "(size_t)(MC*NCP*NR)*sizeof(int32_t)"):
        "per-thread accumulator tile, fixed size",
    ("fast_gemm.c", "fast_igemm", "(size_t)threads,sizeof*x.epi_s"): "per-thread timers",
    ("fast_layer.c", "quantize_known", "(size_t)(2*groups*x.chunks)*sizeof*x.part"):
        "two sums per group and chunk (a vector)",
    ("fast_layer.c", "hla_transform", "(size_t)(K*chunks)*sizeof*x.amax"):
        "one amax per projected row and column chunk (a vector)",
    ("fast_layer.c", "hla_transform", "(size_t)cf->threads,sizeof*x.scratch"): "per-thread pointers",
    ("fast_layer.c", "hla_transform", "(size_t)(pl->hla.block*x.hcols)*sizeof(float)"):
        "per-thread block of p x hcols (64 KB)",
    ("fast_layer.c", "hla_codes", "(size_t)K*sizeof*ra"): "one amax per row (a vector)",
    ("fast_layer.c", "hq_quant_w", "(size_t)cf->threads*sizeof*per"): "per-thread pointers",
    ("fast_layer.c", "hq_quant_w", "(size_t)(op*wch)*sizeof*tw.amax"):
        "one amax per row and 256-column chunk (a vector)",
    ("fast_layer.c", "hq_quant_g", "(size_t)(T*ncb)*sizeof*tg.amax"):
        "one amax per token and 256-column chunk (a vector)",
    ("fast_layer.c", "hq_quant_g", "(size_t)(nch*pl->O)*sizeof*tg.bias"):
        "g_b's partial sums per 256-token chunk (a vector per chunk)",
    ("fast_layer.c", "run_with_scratch", "(size_t)cf->threads*sizeof*x->scratch"):
        "per-thread pointers",
    ("fast_layer.c", "hq_quant_g_groups", "(size_t)(nch*O)*sizeof*x.bias"):
        "g_b's partial sums per 256-token chunk (a vector per chunk)",
    ("fast_layer.c", "hq_g_step", "(size_t)T*sizeof*ra"): "one amax per token (a vector)",
    ("fast_layer.c", "hq_g_step", "HOT_LB_S_G,(size_t)T*sizeof*sg,0"): "one scale per token",
    ("fast_layer.c", "hq_g_step", "HOT_LB_GB,(size_t)pl->O*sizeof*gb,0"): "g_b (a vector)",
    ("fast_layer.c", "hq_w_step", "(size_t)op*sizeof*ra"): "one amax per row (a vector)",
    ("fast_layer.c", "hq_w_step", "HOT_LB_S_W,sizeof*sw,0"): "one scale",
    ("fast_layer.c", "abc_x_step", "(size_t)(I*K)"):
        "the save's result (hot_ref_saved.q_x): the caller owns and frees it",
    ("fast_layer.c", "abc_x_step", "(size_t)pl->hla.groups*sizeof*out->s_x"):
        "the save's result (hot_ref_saved.s_x): the caller owns and frees it",
    ("fast_layer.c", "hla_g_step", "HOT_LB_S_HG,(size_t)pl->hla.groups*sizeof*sg,0"):
        "one scale per group",
    ("fast_layer.c", "gemm_gw_step", "HOT_LB_S_X,(size_t)G*sizeof*so,0"): "one scale per group",
    ("fast_layer.c", "gemm_gw_step", "(size_t)G*sizeof*cs"): "one factor per group",
    ("fast_layer.c", "gemm_gw_step", "(size_t)G*sizeof*a_seg"): "one pointer per group",
    ("fast_layer.c", "gemm_gw_step", "(size_t)G*sizeof*b_seg"): "one pointer per group",
    ("fast_layer.c", "layer_save_run", "(size_t)(pl->T*pl->I)*sizeof*out->x"):
        "the save's result (hot_ref_saved.x): the caller owns and frees it",
    ("fast_layer.c", "lqs_run", "(size_t)T*sizeof*ra"): "one amax per token (a vector)",
    ("fast_layer.c", "lqs_run", "(size_t)T*sizeof*s_row"): "one scale per token",
    ("fast_layer.c", "lqs_run", "(size_t)pl->B*sizeof*s_smp"): "one scale per sample",
    ("fast_layer.c", "lqs_run", "(size_t)(2*chunks)*sizeof*part"): "two sums per chunk",
    ("fast_nvfp4.c", "nv_igemm", "(size_t)g->nb*sizeof*a_seg"): "one pointer per block",
    ("fast_nvfp4.c", "nv_igemm", "(size_t)g->nb*sizeof*b_seg"): "one pointer per block",
    ("fast_nvfp4.c", "step_hq", "(size_t)tasks*sizeof*x.amax"): "one amax per task",
    ("fast_nvfp4.c", "hla_quant", "(size_t)threads*(size_t)ly->p*sizeof*x.psrc"):
        "per-thread pointers (one per token row of a block)",
    ("fast_nvfp4.c", "step_hq", "is_g?HOT_LB_S_G:HOT_LB_S_W,sizeof(float),0"): "one scale",
    ("fast_nvfp4.c", "fast_nvfp4_hla", "(size_t)plan_buffer_bytes(c->pl,HOT_BUF_SAVED_CODES)"):
        "the save's result (hot_ref_saved.q_x): the caller owns and frees it",
    ("fast_pool.c", "fast_scratch", "&p,SCRATCH_HDR,bytes+SCRATCH_HDR"): "the pool's own blocks",
}

SAMPLE = """static int f(int n) {
  float *a = malloc((size_t)(n * n) * sizeof *a);
  void *b = fast_call_alloc(c, HOT_LB_Q_G, (size_t)(T * op), 0);
  void *d = fast_call_alloc(c, HOT_LB_Q_G, (size_t)(T * op), 1);
  /* malloc(1) in a comment */
  free(a);
}
"""


def args_of(text, start):
    """The text between the parenthesis at start and its match."""
    depth, i = 0, start
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
        i += 1
    return text[start + 1:]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def sites(name, text):
    text = strip_comments(text)
    lines = text.splitlines()
    func = "?"
    out = []
    offs = [0]
    for line in lines:
        offs.append(offs[-1] + len(line) + 1)
    for n, line in enumerate(lines, 1):
        m = FUNC.match(line)
        if m and not line.startswith((" ", "\t", "#")) and "=" not in line.split("(")[0]:
            func = m.group(1)
        for rx, pooled_arg in ((CALL, False), (FCA, True)):
            for c in rx.finditer(line):
                a = args_of(text, offs[n - 1] + c.end() - 1)
                key = re.sub(r"\s+", "", a)
                if pooled_arg:
                    parts = key.split(",")
                    if parts[-1] != "0":
                        continue  # pooled
                    key = ",".join(parts[1:])
                out.append((n, name, func, key))
    return out


def scan(root):
    d = os.path.join(root, "runtime", "cpu")
    bad, seen = [], set()
    for name in sorted(os.listdir(d)):
        if not name.endswith(".c"):
            continue
        with open(os.path.join(d, name)) as f:
            for n, fname, func, key in sites(name, f.read()):
                seen.add((fname, func, key))
                if (fname, func, key) not in ALLOWED:
                    bad.append("runtime/cpu/%s:%d: %s: allocation (%s) is neither a pooled "
                               "scratch block nor listed in tests/layering/scratch.py"
                               % (fname, n, func, key))
    for k in sorted(set(ALLOWED) - seen):
        bad.append("tests/layering/scratch.py: listed site %s no longer exists (remove it)" % (k,))
    return bad


def main():
    if sys.argv[1:] == ["--selftest"]:
        got = [(f, k) for _, _, f, k in sites("sample.c", SAMPLE)]
        want = [("f", "(size_t)(n*n)*sizeof*a"), ("f", "HOT_LB_Q_G,(size_t)(T*op),0")]
        if got != want:
            print("selftest: found %r, expected %r" % (got, want))
            return 1
        print("selftest: the scan finds a malloc and an unpooled fast_call_alloc, skips the "
              "pooled one and the comment")
        return 0
    if len(sys.argv) != 2:
        print("usage: scratch.py ROOT | --selftest", file=sys.stderr)
        return 2
    bad = scan(sys.argv[1])
    for b in bad:
        print(b)
    if not bad:
        print("scratch: every allocation of runtime/cpu is pooled or listed (%d listed)"
              % len(ALLOWED))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
