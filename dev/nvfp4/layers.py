"""The variants of the study as backward functions and as torch modules.

A variant's backward takes (g_y T x O, x T x I, w O x I, shape) and returns (g_x, g_w) in fp32;
`shape` holds B, L (T = B*L) and HLA's block p, rows and layout. The modules swap nn.Linear
(every linear map but the LM head) for a function with that backward and the variant's forward.
"""
import torch
import torch.nn as nn

import nvfp4 as q


class Shape:
    def __init__(self, B, L, p, rows, layout):
        self.B, self.L, self.p, self.rows, self.layout = B, L, p, rows, layout


def hla_layout(L, p):
    """The recipe's `auto`: sample when p divides L, else flat."""
    return "sample" if L % p == 0 else "flat"


# ---- backward of each variant ----------------------------------------------------------------

def hq_gx_nvfp4(g_y, w, gen=None, rho=None, sr=True):
    """HQ in NVFP4 (CONTRACT 20): g' = g_y (I (x) H_16) along O, SR (RTN with sr=False); w' =
    (I (x) H_16) w, RTN; both 1x16 along O; g_x = Q(g') Q(w') / 16. rho: the SR draws (T x o_pad,
    e.g. libhot's Philox words), else torch's generator."""
    O = w.shape[0]
    o_pad = (O + 15) // 16 * 16
    gp = nn.functional.pad(g_y.float(), (0, o_pad - O))
    wt = nn.functional.pad(w.float().t(), (0, o_pad - O))  # I x o_pad
    g_t = q.fwht_last(gp, 16)
    w_t = q.fwht_last(wt, 16)
    qg = q.nvfp4_quant(g_t, sr=sr, rho=rho, gen=gen)
    qw = q.nvfp4_quant(w_t, sr=False)
    return (qg @ qw.t()) / 16.0


def hla_operands(x_or_g, sh):
    """x^ or g^ (K x C), transposed to C x K: the layout the g_w GEMM contracts along."""
    return q.hla_project(x_or_g, sh.B, sh.L, sh.p, sh.rows, sh.layout).t().contiguous()


def hla_quant(v, fmt, sr, gen=None, rho=None):
    if fmt == "nvfp4":
        return q.nvfp4_quant(v, sr=sr, rho=rho, gen=gen)
    if fmt == "mxfp8":
        return q.mxfp8_quant(v, sr=sr, rho=rho, gen=gen)
    if fmt == "none":
        return v
    raise ValueError(fmt)


def hla_gw(g_y, xq_t, sh, fmt, gen=None, rho=None, sr=True):
    """g_w = Q(g^)^T Q(x^) / p, with xq_t the (already quantised) I x K x^; g^ SR (RTN with
    sr=False), rho its draws (O x k_pad) or torch's generator."""
    gh = hla_quant(hla_operands(g_y, sh), fmt, sr, gen, rho)
    return (gh @ xq_t.t()) / float(sh.p)


def nvidia_dgrad(g_y, w_q, gen=None):
    """NVIDIA: g_y SR 1x16 along O (17/16 margin) against the forward's 16x16 w codes."""
    gq = q.nvfp4_quant(g_y, sr=True, scale_mode="rtn", margin=17 / 16, gen=gen)
    return gq @ w_q


def nvidia_wgrad(g_y, x, gen=None):
    """NVIDIA: a 16-point random Hadamard transform along tokens (signs drawn per backward),
    g_y^T SR and x^T RTN in 1x16 blocks along tokens."""
    T = g_y.shape[0]
    Tp = (T + 15) // 16 * 16
    signs = (torch.randint(0, 2, (16,), generator=gen) * 2 - 1).float()
    R = (q.hadamard(16) * signs[None, :]) / 4.0  # orthonormal: H diag(s) / 4
    gt = nn.functional.pad(g_y.float().t(), (0, Tp - T))
    xt = nn.functional.pad(x.float().t(), (0, Tp - T))
    gt = (gt.reshape(gt.shape[0], -1, 16) @ R.t()).reshape(gt.shape)
    xt = (xt.reshape(xt.shape[0], -1, 16) @ R.t()).reshape(xt.shape)
    gq = q.nvfp4_quant(gt, sr=True, scale_mode="rtn", margin=17 / 16, gen=gen)
    xq = q.nvfp4_quant(xt, sr=False, scale_mode="rtn")
    return gq @ xq.t()


# ---- modules ---------------------------------------------------------------------------------

class _FakeQuantLinear(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, mod):
        shp = x.shape
        x2 = x.reshape(-1, shp[-1])
        if mod.fprop == "nvfp4":
            xq = q.nvfp4_quant(x2, sr=False, scale_mode="rtn")
            wq = q.nvfp4_quant_2d(weight)
        else:
            xq, wq = x2.float(), weight.float()
        y = xq @ wq.t()
        if bias is not None:
            y = y + bias
        B, L = (shp[0], shp[1]) if len(shp) == 3 else (1, shp[0])
        sh = mod.shape_for(B, L)
        if mod.recipe == "hot_nvfp4":
            saved = hla_quant(hla_operands(x2, sh), mod.hla_fmt, False)  # ABC: the codes of x^
            ctx.save_for_backward(saved, weight)
        else:
            # NVIDIA's dgrad reads the forward's 16x16 codes of w, also under an fp32 fprop
            ctx.save_for_backward(x2, wq if mod.fprop == "nvfp4" else q.nvfp4_quant_2d(weight))
        ctx.mod, ctx.sh, ctx.shp, ctx.has_bias = mod, sh, shp, bias is not None
        return y.reshape(*shp[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx, g):
        mod, sh = ctx.mod, ctx.sh
        a, b = ctx.saved_tensors
        g2 = g.reshape(-1, g.shape[-1]).float()
        if mod.recipe == "hot_nvfp4":
            g_x = hq_gx_nvfp4(g2, b, mod.gen)
            g_w = hla_gw(g2, a, sh, mod.hla_fmt, mod.gen)
        else:
            g_x = nvidia_dgrad(g2, b, mod.gen)
            g_w = nvidia_wgrad(g2, a, mod.gen)
        g_b = g2.sum(0) if ctx.has_bias else None
        return g_x.reshape(ctx.shp), g_w, g_b, None


class FakeQuantLinear(nn.Linear):
    """recipe: hot_nvfp4 or nvidia; fprop: nvfp4 (NVIDIA's 1x16 x, 16x16 w) or fp32 (y as
    nn.Linear computes it, as hot.torch's HOTLinear does; nvidia's dgrad still reads the 16x16
    codes of w)."""

    def __init__(self, lin, recipe, fprop="nvfp4", hla_fmt="nvfp4", p=64, rows=None, gen=None):
        super().__init__(lin.in_features, lin.out_features, lin.bias is not None)
        self.weight, self.bias = lin.weight, lin.bias
        self.recipe, self.fprop, self.hla_fmt, self.p, self.gen = recipe, fprop, hla_fmt, p, gen
        self.rows = rows if rows is not None else list(range(p))

    def shape_for(self, B, L):
        return Shape(B, L, self.p, self.rows, hla_layout(L, self.p))

    def forward(self, x):
        return _FakeQuantLinear.apply(x, self.weight, self.bias, self)
