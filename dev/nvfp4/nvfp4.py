"""Fake-quantisation of the NVFP4 recipes (the lab of docs/nvfp4.md).

Two recipes, written from their descriptions:

- `hot_nvfp4`: hot's recipe in NVFP4 as templates/CONTRACT.md section 20 states it (HQ with
  b = 16 along O, g' SR and w' RTN as NVFP4 along O; HLA's x^ and g^ along K = blocks*r as NVFP4
  or MXFP8; block scales rounded up to E4M3). The quantisers follow the contract operation by
  operation in fp32, so their codes and scales equal the C twin's (templates/nvfp4_ref.c; checked
  by check_twin.py); SR draws come from torch's generator in training (another stream, the same
  distribution) and from Philox (philox_words below) in the check.
- `nvidia`: a port of NVIDIA's NVFP4 pretraining recipe as published: fprop x 1x16 and w 16x16
  RTN, dgrad g_y 1x16 SR (with the 17/16 scale margin) against the forward's w codes, wgrad after a
  16-point random Hadamard transform along tokens (fresh signs each backward), g_y SR and x RTN
  in 1x16 blocks along tokens; block scales E4M3 round-to-nearest.

Everything returns dequantised fp32 tensors; the GEMMs of the study run in fp32 on them.
"""
import math

import numpy as np
import torch

E2M1_MAX = 6.0
E4M3_MAX = 448.0
TENSOR_DIV = 6.0 * 448.0  # s_t = amax / 2688


# ---- element grids ---------------------------------------------------------------------------

def e2m1_rtn(m):
    """Magnitudes m in [0, 6] to the E2M1 grid, nearest, ties to the even code."""
    out = torch.where(m > 0.25, 0.5, 0.0)
    out = torch.where(m >= 0.75, 1.0, out)
    out = torch.where(m > 1.25, 1.5, out)
    out = torch.where(m >= 1.75, 2.0, out)
    out = torch.where(m > 2.5, 3.0, out)
    out = torch.where(m >= 3.5, 4.0, out)
    out = torch.where(m > 5.0, 6.0, out)
    return out.to(m.dtype)


def e2m1_sr(m, rho):
    """Magnitudes m in [0, 6] to the grid: lo = the largest grid value <= m, hi the next; hi iff
    rho < (m - lo) / (hi - lo) (exact: hi - lo is a power of two)."""
    step = torch.where(m < 2, 0.5, torch.where(m < 4, 1.0, 2.0)).to(m.dtype)
    lo = torch.floor(m / step) * step
    lo = torch.where(m >= 6, torch.full_like(m, 6.0), lo)
    frac = (m - lo) / step
    return torch.where(rho < frac, lo + step, lo)


def _e4m3_ulp(d):
    """The E4M3 spacing at magnitude d >= 0: 2^(max(floor(log2 d), -6) - 3)."""
    _, ex = torch.frexp(d)  # d = m * 2^ex, m in [0.5, 1)
    e = torch.clamp(ex.to(torch.int32) - 1, min=-6)
    return torch.ldexp(torch.ones_like(d), (e - 3))


def e4m3(d, mode="rtn", rho=None):
    """Non-negative fp32 d to an E4M3 value (fp32): rtn (ties to even), up (toward +inf) or sr;
    saturating at 448."""
    ulp = _e4m3_ulp(d)
    q = d / ulp  # exact: a power of two
    if mode == "rtn":
        q = torch.round(q)
    elif mode == "up":
        q = torch.ceil(q)
    elif mode == "sr":
        f = torch.floor(q)
        q = torch.where(rho < q - f, f + 1, f)
    else:
        raise ValueError(mode)
    return torch.clamp(q * ulp, max=E4M3_MAX)


def e4m3_signed(v, mode="rtn", rho=None):
    return torch.sign(v) * e4m3(v.abs(), mode, rho)


# ---- Philox (CONTRACT.md 6), for the check against the twin --------------------------------

def philox_words(idx, seed, tag, step):
    """Philox4x32-10 word idx & 3 of counter {idx>>2 lo, hi, tag, step}, key seed (numpy)."""
    idx = np.asarray(idx, dtype=np.uint64)
    q = idx >> np.uint64(2)
    M = 0xFFFFFFFF
    c = [(q & np.uint64(M)), (q >> np.uint64(32)), np.full_like(q, tag), np.full_like(q, step)]
    k0 = np.full_like(q, seed & M)
    k1 = np.full_like(q, (seed >> 32) & M)
    for r in range(10):
        p0 = np.uint64(0xD2511F53) * c[0]
        p1 = np.uint64(0xCD9E8D57) * c[2]
        c = [(p1 >> np.uint64(32)) ^ c[1] ^ k0, p1 & np.uint64(M),
             (p0 >> np.uint64(32)) ^ c[3] ^ k1, p0 & np.uint64(M)]
        if r < 9:
            k0 = (k0 + np.uint64(0x9E3779B9)) & np.uint64(M)
            k1 = (k1 + np.uint64(0xBB67AE85)) & np.uint64(M)
    w = np.stack(c, -1)
    return w[np.arange(len(idx)), (idx & np.uint64(3)).astype(np.int64)].astype(np.uint32)


def rho_of_words(words):
    """rho = (word >> 8) * 2^-24, as hot_rho."""
    return torch.from_numpy((words >> 8).astype(np.float32)) * (2.0 ** -24)


# ---- NVFP4 and MXFP8 quantisers along the last axis -------------------------------------------

def _pad_last(v, m):
    k = v.shape[-1]
    kp = (k + m - 1) // m * m
    return (torch.nn.functional.pad(v, (0, kp - k)) if kp != k else v), k


def nvfp4_quant(v, sr=False, rho=None, scale_mode="up", margin=1.0, gen=None, codes=False):
    """hot_nvfp4 (scale_mode up, margin 1) or the NVIDIA port (rtn, 17/16 for SR): v (R x K, fp32)
    quantised in 1x16 blocks along K. Returns the dequantised tensor, or with codes=True
    (E2M1 values with sign, block scales, tensor scale)."""
    v = v.float()
    vp, k = _pad_last(v, 16)
    amax = vp.abs().max()
    if float(amax) == 0.0:
        z = torch.zeros_like(v)
        return (z, torch.zeros_like(vp), torch.zeros(vp.shape[:-1] + (vp.shape[-1] // 16,)),
                torch.tensor(0.0)) if codes else z
    s_t = amax / TENSOR_DIV
    vb = vp.reshape(*vp.shape[:-1], -1, 16)
    a = vb.abs().amax(-1) / s_t
    d = a / 6.0
    if margin != 1.0:
        d = d * margin
    sb = e4m3(d, scale_mode)
    u = torch.where(sb[..., None] > 0, (vb / s_t) / sb[..., None].clamp(min=2.0 ** -9),
                    torch.zeros_like(vb))
    m = u.abs().clamp(max=E2M1_MAX)
    if sr:
        if rho is None:
            rho = torch.rand(m.shape, generator=gen)
        mag = e2m1_sr(m, rho.reshape(m.shape))
    else:
        mag = e2m1_rtn(m)
    q = torch.where(u < 0, -mag, mag)
    if codes:
        return q.reshape(vp.shape), q.reshape(vp.shape), sb, s_t
    deq = (q * sb[..., None]) * s_t
    return deq.reshape(vp.shape)[..., :k]


def nvfp4_quant_2d(w):
    """NVIDIA's weight quantiser: one E4M3 scale per 16x16 tile, RTN (fp32 w, O x I)."""
    O, I = w.shape
    Op, Ip = (O + 15) // 16 * 16, (I + 15) // 16 * 16
    wp = torch.nn.functional.pad(w.float(), (0, Ip - I, 0, Op - O))
    amax = wp.abs().max()
    if float(amax) == 0.0:
        return torch.zeros_like(w)
    s_t = amax / TENSOR_DIV
    t = wp.reshape(Op // 16, 16, Ip // 16, 16)
    sb = e4m3(t.abs().amax(dim=(1, 3)) / s_t / 6.0, "rtn")[:, None, :, None]
    u = torch.where(sb > 0, (t / s_t) / sb.clamp(min=2.0 ** -9), torch.zeros_like(t))
    q = torch.sign(u) * e2m1_rtn(u.abs().clamp(max=6.0))
    return ((q * sb) * s_t).reshape(Op, Ip)[:O, :I]


def mxfp8_quant(v, sr=False, rho=None, gen=None):
    """MXFP8 (E4M3 elements, one E8M0 scale per 32 along the last axis): X = 2^e with the
    smallest e such that amax <= 448 * 2^e (exact, no saturation); elements RTN or SR."""
    v = v.float()
    vp, k = _pad_last(v, 32)
    vb = vp.reshape(*vp.shape[:-1], -1, 32)
    amax = vb.abs().amax(-1)
    mant, ex = torch.frexp(amax)
    e = ex.to(torch.int32) - 9 + (mant > 0.875).to(torch.int32)
    e = torch.clamp(e, -127, 127)
    X = torch.ldexp(torch.ones_like(amax), e)[..., None]
    u = vb / X
    if sr and rho is None:
        rho = torch.rand(u.shape, generator=gen)
    q = e4m3_signed(u, "sr" if sr else "rtn", None if rho is None else rho.reshape(u.shape).abs())
    deq = torch.where(amax[..., None] > 0, q * X, torch.zeros_like(q))
    return deq.reshape(vp.shape)[..., :k]


# ---- transforms ------------------------------------------------------------------------------

def fwht_last(v, n):
    """Length-n butterflies (CONTRACT.md 2 stage order, fp32) over each run of n along the last
    axis (its length a multiple of n)."""
    shp = v.shape
    a = v.reshape(-1, shp[-1] // n, n).clone()
    h = 1
    while h < n:
        a = a.reshape(a.shape[0], a.shape[1], n // (2 * h), 2, h)
        x, y = a[:, :, :, 0, :], a[:, :, :, 1, :]
        a = torch.stack((x + y, x - y), dim=3)
        h *= 2
    return a.reshape(shp)


def hadamard(n, dtype=torch.float32):
    H = torch.ones(1, 1, dtype=dtype)
    while H.shape[0] < n:
        H = torch.cat((torch.cat((H, H), 1), torch.cat((H, -H), 1)), 0)
    return H


def tri_rows(p, keep=50):
    """CONTRACT.md 4.2: the natural rows of the `tri` basis, ascending sequency."""
    m = 1
    while (m * 2) * (m * 2) <= p:
        m *= 2
    sf = int(0.1 * (-math.sqrt(2 * m * m * keep + 25) + 10 * m + 5))
    seqs = []
    for i in range(m):
        if i % 2 == 0:
            seqs += list(range(m * i, m * (i + 1) - (i + sf)))
        else:
            seqs += list(range(m * i + i + sf, m * (i + 1)))
    bits = int(math.log2(p))

    def bitrev(x):
        return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0
    return [bitrev(s ^ (s >> 1)) for s in sorted(seqs)]


def token_blocks(v, B, L, p, layout):
    """T x C (T = B*L) to (blocks, p, C) with zero padding (CONTRACT.md 10)."""
    C = v.shape[1]
    if layout == "sample":
        Lp = (L + p - 1) // p * p
        s = torch.nn.functional.pad(v.reshape(B, L, C), (0, 0, 0, Lp - L))
        return s.reshape(B * Lp // p, p, C)
    T = B * L
    Tp = (T + p - 1) // p * p
    return torch.nn.functional.pad(v, (0, 0, 0, Tp - T)).reshape(Tp // p, p, C)


def hla_project(v, B, L, p, rows, layout):
    """H_r along tokens: (blocks*r) x C, block-major, the butterfly of section 2 then the gather."""
    blk = token_blocks(v.float(), B, L, p, layout)  # (nb, p, C)
    t = fwht_last(blk.transpose(1, 2).contiguous(), p)  # (nb, C, p)
    t = t[:, :, rows]  # (nb, C, r)
    return t.transpose(1, 2).reshape(-1, v.shape[1])


def prefix_rows(p, r):
    """The r lowest sequencies of H_p as natural rows (r = p: `full`), ascending sequency."""
    bits = int(math.log2(p))

    def bitrev(x):
        return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0
    return [bitrev(s ^ (s >> 1)) for s in range(r)]
