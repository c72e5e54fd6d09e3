"""hot.capture / hot.read_capture: captures written from numpy through libhot's
hot_capture_write read back by the C reader (hot_py_helper capture) and by the Python reader of
the documented format, value for value, in f32, bf16 and f16, 2-D and 3-D; damaged files refused
by both with a message naming the file (a file that shrinks while read too); bad arguments."""

import os
import struct

import numpy as np
import pytest

from conftest import run_helper

DTYPES = {"f32": np.float32, "f16": np.float16, "bf16": np.uint16}


def rand(shape, dt, rng):
    """Random finite values of dtype dt (bf16: bit patterns with an exponent below all ones)."""
    if dt == "bf16":
        b = rng.integers(0, 1 << 16, size=shape, dtype=np.uint32).astype(np.uint16)
        b[(b & 0x7F80) == 0x7F80] &= 0xBFFF  # clear the top exponent bit of Inf/NaN patterns
        return b
    a = rng.standard_normal(shape).astype(DTYPES[dt]) * 3
    return a


def f32(a, dt):
    if dt == "bf16":
        return (a.astype(np.uint32) << 16).view(np.float32)
    return a.astype(np.float32)


def c_read(helper, path, tmp_path):
    """The C reader's view: (name, B, L, O, I, T, dtype), x, w, g_y as float32."""
    out = tmp_path / "c_read.bin"
    head = run_helper(helper, "capture", path, out).strip().split("|")
    name, (B, L, O, I, T, dt) = head[0], map(int, head[1:])
    raw = np.fromfile(out, dtype=np.float32)
    x, w, gy = np.split(raw, [T * I, T * I + O * I])
    return (name, B, L, O, I, T, dt), x.reshape(T, I), w.reshape(O, I), gy.reshape(T, O)


def bits(a):
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("dt", ["f32", "bf16", "f16"])
@pytest.mark.parametrize("layout", ["2d", "2d_batch", "3d"])
def test_numpy_round_trip(hot, helper, tmp_path, dt, layout):
    rng = np.random.default_rng(7)
    B, L, O, I = 3, 5, 6, 4
    x3, w, gy3 = rand((B, L, I), dt, rng), rand((O, I), dt, rng), rand((B, L, O), dt, rng)
    path = str(tmp_path / "fc1.hotcap")
    if layout == "3d":
        hot.capture(path, "encoder.0.fc1", x3, w, gy3)
    elif layout == "2d_batch":
        hot.capture(path, "encoder.0.fc1", x3.reshape(B * L, I), w, gy3.reshape(B * L, O), batch=B)
    else:
        hot.capture(path, "encoder.0.fc1", x3.reshape(B * L, I), w, gy3.reshape(B * L, O))
    wantB, wantL = (1, B * L) if layout == "2d" else (B, L)
    assert sorted(os.listdir(tmp_path)) == ["fc1.hotcap"]  # no temporary file left
    esz = 4 if dt == "f32" else 2
    assert os.path.getsize(path) == 160 + (B * L * I + O * I + B * L * O) * esz + 32

    head, cx, cw, cgy = c_read(helper, path, tmp_path)
    assert head == ("encoder.0.fc1", wantB, wantL, O, I, B * L, int(hot.DType[dt.upper()]))
    for got, want in ((cx, x3.reshape(B * L, I)), (cw, w), (cgy, gy3.reshape(B * L, O))):
        assert np.array_equal(bits(got), bits(f32(want, dt)))

    c = hot.read_capture(path)
    assert (c.name, c.batch, c.tokens, c.out_features, c.in_features, c.T) == \
        ("encoder.0.fc1", wantB, wantL, O, I, B * L)
    assert c.dtype == hot.DType[dt.upper()]
    for got, want in ((c.x, x3.reshape(B * L, I)), (c.w, w), (c.g_y, gy3.reshape(B * L, O))):
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))
    assert np.array_equal(bits(c.float32("g_y")), bits(cgy))


def test_layout_is_the_documented_one(hot, tmp_path):
    """The header fields at the offsets docs/capture.md gives; the SHA-256 of all but the last 32
    bytes in the last 32; an overwrite replaces the file."""
    import hashlib
    path = str(tmp_path / "a.hotcap")
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    w = np.ones((4, 3), np.float16)
    gy = np.full((2, 4), -2, np.float16)
    hot.capture(path, "first", x, w, gy)
    hot.capture(path, "proj", x, w, gy, batch=2)
    d = open(path, "rb").read()
    magic, ver, hb, dt, esz, B, L, O, I, payload, n = struct.unpack_from("<8sIIIIqqqqQI", d)
    assert (magic, ver, hb, dt, esz, B, L, O, I) == (b"HOTCAP\0\0", 1, 160, 2, 2, 2, 1, 4, 3)
    assert payload == (6 + 12 + 8) * 2 and len(d) == 160 + payload + 32
    assert d[68:68 + n] == b"proj" and not any(d[68 + n:160])
    assert np.array_equal(np.frombuffer(d, "<f2", 6, 160), x.ravel())
    assert d[-32:] == hashlib.sha256(d[:-32]).digest()


def test_damaged_files_refused_by_both_readers(hot, helper, tmp_path):
    path = str(tmp_path / "s.hotcap")
    hot.capture(path, "fc", np.ones((2, 3), np.float32), np.ones((2, 3), np.float32),
                np.ones((2, 2), np.float32))
    good = open(path, "rb").read()
    damaged = [good[:n] for n in range(len(good))] + [good + b"\0"]
    for i in range(len(good)):
        b = bytearray(good)
        b[i] ^= 0x40
        damaged.append(bytes(b))
    for k, img in enumerate(damaged):
        with open(path, "wb") as f:
            f.write(img)
        with pytest.raises(ValueError, match=f"^capture {path}: "):
            hot.read_capture(path)
        if k % 17 == 0:  # the C reader on a sample (a process per file); runtime_capture has all
            out = tmp_path / "o.bin"
            import subprocess
            r = subprocess.run([helper, "capture", path, str(out)], capture_output=True, text=True)
            assert r.returncode == 1 and f"HOT_ERR_INVALID: capture {path}: " in r.stderr, r.stderr
    with open(path, "wb") as f:
        f.write(good)
    assert hot.read_capture(path).name == "fc"
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(OSError, match="not a regular file"):  # and does not block
        hot.read_capture(fifo)
    with pytest.raises(OSError, match="not a regular file"):
        hot.read_capture(str(tmp_path))


def test_file_shrinking_while_read(hot, tmp_path, monkeypatch):
    """A capture that shrinks between fstat and the read (another process rewriting it in place)
    is refused with the reader's ValueError naming the file, in the header as in the body."""
    import types
    from hot import _capture
    path = str(tmp_path / "s.hotcap")
    hot.capture(path, "fc", np.ones((2, 3), np.float32), np.ones((2, 3), np.float32),
                np.ones((2, 2), np.float32))
    good = open(path, "rb").read()
    real = os.fstat

    def grown(fd):  # the size the file had when fstat ran
        st = real(fd)
        return types.SimpleNamespace(st_mode=st.st_mode, st_size=len(good))
    monkeypatch.setattr(_capture.os, "fstat", grown)
    for n in (100, _capture.HEADER_BYTES, len(good) - 1):
        with open(path, "wb") as f:
            f.write(good[:n])
        with pytest.raises(ValueError, match=f"^capture {path}: file shrank while reading"):
            hot.read_capture(path)


def test_bad_arguments(hot, tmp_path):
    path = str(tmp_path / "b.hotcap")
    x, w, gy = np.zeros((4, 3), np.float32), np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32)
    with pytest.raises(TypeError, match="x must be a numpy array or a torch tensor"):
        hot.capture(path, "fc", x.tolist(), w, gy)
    with pytest.raises(TypeError, match="float32, float16 or uint16"):
        hot.capture(path, "fc", x.astype(np.float64), w, gy)
    with pytest.raises(TypeError, match="one dtype"):
        hot.capture(path, "fc", x, w.astype(np.float16), gy)
    with pytest.raises(TypeError, match="layer_name must be a str"):
        hot.capture(path, b"fc", x, w, gy)
    with pytest.raises(ValueError, match="divide the 4 rows"):
        hot.capture(path, "fc", x, w, gy, batch=3)
    with pytest.raises(ValueError, match="disagrees"):
        hot.capture(path, "fc", x.reshape(2, 2, 3), w, gy.reshape(2, 2, 2), batch=4)
    with pytest.raises(ValueError, match="x has 3 features, w 2"):
        hot.capture(path, "fc", x, w[:, :2].copy(), gy)
    with pytest.raises(ValueError, match="g_y must have shape"):
        hot.capture(path, "fc", x, w, gy[:3])
    with pytest.raises(ValueError, match="x must be 2-D"):
        hot.capture(path, "fc", x.ravel(), w, gy)
    # libhot's own checks, as HotError with its message
    with pytest.raises(hot.HotError, match="layer_name byte 1 is 0x0a") as e:
        hot.capture(path, "a\nb", x, w, gy)
    assert e.value.status == hot.Status.ERR_INVALID
    with pytest.raises(hot.HotError, match="layer_name must be 1 .. 63 bytes"):
        hot.capture(path, "n" * 64, x, w, gy)
    bad = x.copy()
    bad[2, 1] = np.inf
    with pytest.raises(hot.HotError, match=r"x\[2\]\[1\] is Inf") as e:
        hot.capture(path, "fc", bad, w, gy)
    assert e.value.status == hot.Status.ERR_NONFINITE
    missing = str(tmp_path / "no" / "dir" / "c.hotcap")
    with pytest.raises(hot.HotError, match="cannot create") as e:
        hot.capture(missing, "fc", x, w, gy)
    assert e.value.status == hot.Status.ERR_IO and missing in e.value.message
    assert os.listdir(tmp_path) == []
    # a non-contiguous array is copied, not refused
    xt = np.zeros((3, 4), np.float32).T
    hot.capture(path, "fc", xt, w, gy)
    assert hot.read_capture(path).x.shape == (4, 3)


def test_arguments_reach_c_whole(hot, tmp_path):
    """A NUL in the path or layer_name, which C would take as the end (the capture written to
    another file, or under a shorter name), and a batch that is not an integer (2.7 became 2,
    True became 1) are refused by name, and nothing is written."""
    path = str(tmp_path / "c.hotcap")
    x, w, gy = np.zeros((4, 3), np.float32), np.zeros((2, 3), np.float32), np.zeros((4, 2), np.float32)
    with pytest.raises(ValueError, match="path .* NUL"):
        hot.capture(path + "\0.bak", "fc", x, w, gy)
    with pytest.raises(ValueError, match="layer_name .* NUL"):
        hot.capture(path, "fc\0x", x, w, gy)
    for bad in (2.7, True, "2"):
        with pytest.raises(TypeError, match="batch must be an int"):
            hot.capture(path, "fc", x, w, gy, batch=bad)
    with pytest.raises(TypeError, match="batch must be an int"):
        hot.capture(path, "fc", x.reshape(2, 2, 3), w, gy.reshape(2, 2, 2), batch=2.0)
    assert os.listdir(tmp_path) == []
    hot.capture(os.fsencode(path), "fc", x, w, gy, batch=np.int64(2))
    assert hot.read_capture(path).batch == 2
