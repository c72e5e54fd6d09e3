"""Layer captures: the x, w and g_y of one backward of a linear layer in a file (format:
docs/capture.md), for measuring hot's settings on real tensors.

    hot.capture("fc1.hotcap", "fc1", x, w, g_y)           # numpy arrays or torch tensors
    c = hot.read_capture("fc1.hotcap")                     # hot.Capture: sizes, name, arrays

hot.capture writes through libhot's hot_capture_write (so Python and C write the same bytes);
hot.read_capture parses the documented format in Python (numpy only) with the checks of the C
reader. hot.torch.capture_next_backward(module, path) captures a HOTLinear's next backward.
"""

import ctypes
import dataclasses
import errno
import hashlib
import os
import stat
import struct

from . import _lib
from ._lib import DType

__all__ = ["capture", "read_capture", "Capture"]

MAGIC = b"HOTCAP\0\0"
VERSION = 1
HEADER_BYTES = 160
SUM_BYTES = 32
MAX_DIM = 2**31 - 1
_HEADER = struct.Struct("<8sIIII qqqq Q I 64s 28x")  # little-endian, 160 bytes
assert _HEADER.size == HEADER_BYTES


def _np():
    import numpy
    return numpy


def _host_tensor(a, what):
    """(address, DType, shape, keep-alive object) of a numpy array or a torch tensor, C-contiguous
    in host memory (a copy when it is not: a capture is written from the host)."""
    np = _np()
    if isinstance(a, np.ndarray):
        dts = {np.dtype(np.float32): DType.F32, np.dtype(np.float16): DType.F16,
               np.dtype(np.uint16): DType.BF16}
        if a.dtype not in dts:
            raise TypeError(f"{what} must be float32, float16 or uint16 (bf16 bit patterns) "
                            f"(got {a.dtype})")
        a = np.ascontiguousarray(a)
        return a.ctypes.data, dts[a.dtype], tuple(a.shape), a
    if type(a).__module__.split(".")[0] == "torch":
        import torch
        dts = {torch.float32: DType.F32, torch.float16: DType.F16, torch.bfloat16: DType.BF16}
        if a.dtype not in dts:
            raise TypeError(f"{what} must be float32, float16 or bfloat16 (got {a.dtype})")
        t = a.detach()
        if t.device.type != "cpu":
            t = t.cpu()  # synchronises with t's stream
        t = t.contiguous()
        return t.data_ptr(), dts[t.dtype], tuple(t.shape), t
    raise TypeError(f"{what} must be a numpy array or a torch tensor (got {type(a).__name__})")


def capture(path, layer_name, x, w, g_y, batch=None):
    """Writes the capture of layer `layer_name` to `path` (atomically: a temporary file beside it
    renamed into place; an existing file is replaced only by a complete new one).

      x    (T, I) or (B, L, I)   the layer's input
      w    (O, I)                its weight
      g_y  (T, O) or (B, L, O)   the gradient of its output
      batch  B for a 2-D x (T must be a multiple; default 1: one sequence of T tokens); a 3-D x
             gives B itself (batch, when given, must agree)

    numpy arrays (float32, float16, or bf16 bit patterns as uint16) or torch tensors (float32,
    float16, bfloat16; CUDA tensors are copied to the host), all three of one dtype. Raises
    TypeError / ValueError for bad Python arguments and hot.HotError (HOT_ERR_INVALID,
    HOT_ERR_SHAPE, HOT_ERR_NONFINITE for a NaN or Inf, HOT_ERR_IO, ...) with libhot's message."""
    from .api import HotError, _c_int, _c_path, _c_text
    if not isinstance(layer_name, str):
        raise TypeError(f"layer_name must be a str (got {type(layer_name).__name__})")
    c_path, c_name = _c_path("path", path), _c_text("layer_name", layer_name)
    if batch is not None:
        batch = _c_int("batch", batch, -(1 << 63), (1 << 63) - 1)
    px, dx, sx, kx = _host_tensor(x, "x")
    pw, dw, sw, kw = _host_tensor(w, "w")
    pg, dg, sg, kg = _host_tensor(g_y, "g_y")
    if not dx == dw == dg:
        raise TypeError(f"x, w and g_y must have one dtype (got {dx.name.lower()}, "
                        f"{dw.name.lower()}, {dg.name.lower()})")
    if len(sw) != 2:
        raise ValueError(f"w must be 2-D (O, I) (got shape {sw})")
    O, I = sw
    if len(sx) == 3:
        B, L = sx[0], sx[1]
        if batch is not None and batch != B:
            raise ValueError(f"batch={batch} disagrees with x of shape {sx} (B = {B})")
    elif len(sx) == 2:
        T = sx[0]
        B = 1 if batch is None else batch
        if B < 1 or T % B:
            raise ValueError(f"batch={batch} must be >= 1 and divide the {T} rows of x")
        L = T // B
    else:
        raise ValueError(f"x must be 2-D (T, I) or 3-D (B, L, I) (got shape {sx})")
    if sx[-1] != I:
        raise ValueError(f"x has {sx[-1]} features, w {I} (shapes {sx} and {sw})")
    want = (B, L, O) if len(sg) == 3 else (B * L, O)
    if tuple(sg) != want:
        raise ValueError(f"g_y must have shape {want} for x {sx} and w {sw} (got {sg})")
    err = ctypes.create_string_buffer(1024)
    st = _lib.lib().hot_capture_write(c_path, c_name, B, L, O, I,
                                      int(dx), px, pw, pg, err, len(err))
    del kx, kw, kg
    if st != 0:
        raise HotError(st, err.value.decode("utf-8", "replace"), "hot_capture_write")


@dataclasses.dataclass(frozen=True)
class Capture:
    """A capture file read back: name, sizes (T = batch * tokens), dtype, and x (T, I), w (O, I),
    g_y (T, O) as stored (float32, float16, or bf16 bit patterns as uint16); float32() gives
    exact fp32 copies."""
    name: str
    batch: int
    tokens: int
    out_features: int
    in_features: int
    dtype: DType
    x: object
    w: object
    g_y: object

    @property
    def T(self):
        return self.batch * self.tokens

    def float32(self, which):
        """An exact float32 copy of "x", "w" or "g_y"."""
        a = getattr(self, which)
        return _to_f32(a, self.dtype)


def _to_f32(a, dtype):
    np = _np()
    if dtype == DType.BF16:
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def read_capture(path):
    """Reads and validates the capture file at `path` (the checks of the C reader: magic,
    version, header, sizes against the file's size before anything is allocated, name, zero
    padding, SHA-256, finite values). Returns a Capture; raises ValueError("capture PATH: ...")
    for a file that is not a valid capture, OSError when it cannot be opened or is not a regular
    file."""
    np = _np()
    shown = os.fsdecode(path)

    def bad(why):
        raise ValueError(f"capture {shown}: {why}")

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not block
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"capture {shown}: not a regular file")
    with os.fdopen(fd, "rb") as f:
        size = st.st_size
        head = f.read(HEADER_BYTES)
        if len(head) < 8 or (head[:8] == MAGIC and size < HEADER_BYTES + SUM_BYTES):
            bad(f"truncated: {size} bytes, a capture has at least {HEADER_BYTES + SUM_BYTES}")
        if head[:8] != MAGIC:
            bad("not a capture file (wrong magic, bytes 0..7)")
        if len(head) < HEADER_BYTES:
            bad("file shrank while reading")
        (_, ver, hb, dt, esz, B, L, O, I, payload, nlen, name) = _HEADER.unpack(head)
        if ver != VERSION:
            bad(f"format version {ver} (byte 8), this reader reads {VERSION}")
        if hb != HEADER_BYTES:
            bad(f"header size {hb} (byte 12), version 1 has {HEADER_BYTES}")
        if dt > 2:
            bad(f"dtype {dt} (byte 16) is not 0 (f32), 1 (bf16) or 2 (f16)")
        if esz != (4 if dt == 0 else 2):
            bad(f"element size {esz} (byte 20) does not match dtype {dt}")
        for nm, v, at in (("B", B, 24), ("L", L, 32), ("O", O, 40), ("I", I, 48)):
            if not 1 <= v <= MAX_DIM:
                bad(f"{nm} = {v} (byte {at}) is not in 1 .. {MAX_DIM}")
        T = B * L
        if T > MAX_DIM:
            bad(f"T = B * L = {B} * {L} exceeds {MAX_DIM}")
        if payload != size - HEADER_BYTES - SUM_BYTES:
            bad(f"truncated or extended: {size} bytes, the header's payload size (byte 56) "
                f"makes {payload} + {HEADER_BYTES + SUM_BYTES}")
        counts = (T * I, O * I, T * O)
        if sum(counts) * esz != payload:
            bad(f"payload size {payload} (byte 56) is not (T*I + O*I + T*O) * {esz} for "
                f"B={B} L={L} O={O} I={I}")
        if not 1 <= nlen <= 63:
            bad(f"name length {nlen} (byte 64) is not in 1 .. 63")
        for i, ch in enumerate(name[:nlen]):
            if not 0x20 <= ch <= 0x7E:
                bad(f"name byte {i} (byte {68 + i}) is 0x{ch:02x}, not printable ASCII")
        if any(name[nlen:]) or any(head[132:]):
            bad("name padding or reserved bytes (68 + n .. 159) are not zero")
        body = f.read(payload)
        want = f.read(SUM_BYTES)
    if len(body) != payload or len(want) != SUM_BYTES:
        bad("file shrank while reading")
    if hashlib.sha256(head + body).digest() != want:
        bad(f"checksum mismatch (corrupt file: the SHA-256 of bytes 0..{size - SUM_BYTES - 1} "
            "differs from the last 32 bytes)")
    store = {0: "<f4", 1: "<u2", 2: "<f2"}[dt]
    native = {0: np.float32, 1: np.uint16, 2: np.float16}[dt]
    arrays, off = [], 0
    for nm, n, shape in (("x", counts[0], (T, I)), ("w", counts[1], (O, I)),
                         ("g_y", counts[2], (T, O))):
        a = np.frombuffer(body, dtype=store, count=n, offset=off).astype(native).reshape(shape)
        off += n * esz
        f32 = _to_f32(a, DType(dt))
        finite = np.isfinite(f32)
        if not finite.all():
            r, c = map(int, np.argwhere(~finite)[0])
            bad(f"{nm}[{r}][{c}] is {'NaN' if np.isnan(f32[r, c]) else 'Inf'} "
                "(a capture holds finite values)")
        arrays.append(a)
    return Capture(name=name[:nlen].decode("ascii"), batch=B, tokens=L, out_features=O,
                   in_features=I, dtype=DType(dt), x=arrays[0], w=arrays[1], g_y=arrays[2])
