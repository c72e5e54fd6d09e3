#!/usr/bin/env python3
"""check_plot.py PLOT_SAMPLE DIR — opens the plots that plot_sample writes with independent
readers: zlib (inflate, CRC-32 of every chunk), xml.etree (the SVG parses as XML), and PIL and/or
matplotlib (the PNG loads as a standard viewer loads it, pixel for pixel equal to the zlib
decoding). The marker of every SVG point is checked in the PNG at the same pixel in its fill
colour, and, where rsvg-convert is installed, in the SVG as that renderer draws it. Exits 77
(skipped, reason printed) when neither PIL nor matplotlib is installed, after the zlib and XML
checks have passed."""
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def decode_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + ": bad signature")
    pos, idat, pal, hdr = 8, b"", None, None
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + n]
        (crc,) = struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])
        if zlib.crc32(kind + body) & 0xFFFFFFFF != crc:
            fail("%s: CRC mismatch in %s" % (path, kind))
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            pal = [tuple(body[i:i + 3]) for i in range(0, len(body), 3)]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
        if kind == b"IEND":
            break
    if pos != len(data):
        fail(path + ": bytes after IEND")
    w, h, depth, ctype = hdr[0], hdr[1], hdr[2], hdr[3]
    if (ctype, depth) != (3, 4) or pal is None:
        fail("%s: expected a 4-bit palette PNG, got colour type %d depth %d" % (path, ctype, depth))
    raw = zlib.decompress(idat)
    row = (w + 1) // 2 + 1
    if len(raw) != h * row:
        fail("%s: %d bytes of image data, want %d" % (path, len(raw), h * row))
    pix = []
    for y in range(h):
        r = raw[y * row:(y + 1) * row]
        if r[0] != 0:
            fail("%s: row %d filter %d" % (path, y, r[0]))
        line = []
        for x in range(w):
            b = r[1 + x // 2]
            line.append(pal[(b >> 4) if x % 2 == 0 else (b & 15)])
        pix.append(line)
    return w, h, pix


def main():
    exe, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    subprocess.run([exe, out], check=True)
    viewers = []
    try:
        from PIL import Image
        viewers.append("PIL")
    except ImportError:
        Image = None
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.image as mpimg
        viewers.append("matplotlib")
    except ImportError:
        mpimg = None
    for name in ("a", "b"):
        png, svg = os.path.join(out, name + ".png"), os.path.join(out, name + ".svg")
        w, h, pix = decode_png(png)
        root = ET.parse(svg).getroot()
        if root.tag != SVG + "svg" or root.get("viewBox") != "0 0 %d %d" % (w, h):
            fail("%s: root is not an <svg> with viewBox 0 0 %d %d" % (svg, w, h))
        pts = [c for c in root.iter(SVG + "circle") if c.get("class") == "pt"]
        if not pts:
            fail(svg + ": no markers")
        for c in pts:
            x, y = int(float(c.get("cx"))), int(float(c.get("cy")))
            fill = tuple(bytes.fromhex(c.get("fill")[1:]))
            if pix[y][x] != fill:
                fail("%s: marker at (%d,%d) is %s in the PNG, %s in the SVG"
                     % (name, x, y, pix[y][x], fill))
        if Image is not None:
            im = Image.open(png)
            im.verify()
            im = Image.open(png).convert("RGB")
            if im.size != (w, h):
                fail("%s: PIL size %s" % (png, im.size))
            got = list(im.getdata())
            want = [p for line in pix for p in line]
            if got != want:
                bad = next(i for i in range(len(got)) if got[i] != want[i])
                fail("%s: PIL pixel %d is %s, own decoding %s" % (png, bad, got[bad], want[bad]))
        if mpimg is not None:
            arr = mpimg.imread(png)
            if arr.shape[0] != h or arr.shape[1] != w:
                fail("%s: matplotlib shape %s" % (png, arr.shape))
            spots = [(0, 0), (w - 1, h - 1)]
            spots += [(int(float(c.get("cx"))), int(float(c.get("cy")))) for c in pts]
            for (x, y) in spots:
                got = tuple(int(round(v * 255)) for v in arr[y][x][:3])
                if got != pix[y][x]:
                    fail("%s: matplotlib pixel (%d,%d) %s, own %s" % (png, x, y, got, pix[y][x]))
        rsvg = shutil.which("rsvg-convert")
        if rsvg and Image is not None:  # the SVG as a renderer draws it: markers where they are
            out_png = os.path.join(out, name + ".svg-rendered.png")
            subprocess.run([rsvg, svg, "-o", out_png], check=True)
            ren = Image.open(out_png).convert("RGB")
            if ren.size != (w, h):
                fail("%s: rendered at %s, want %dx%d" % (svg, ren.size, w, h))
            for c in pts:
                x, y = int(float(c.get("cx"))), int(float(c.get("cy")))
                fill = tuple(bytes.fromhex(c.get("fill")[1:]))
                if ren.getpixel((x, y)) != fill:
                    fail("%s: rendered marker at (%d,%d) is %s, want %s"
                         % (svg, x, y, ren.getpixel((x, y)), fill))
            if "rsvg-convert" not in viewers:
                viewers.append("rsvg-convert")
        print("%s: %dx%d PNG and SVG ok (%d markers; zlib, xml.etree%s)" %
              (name, w, h, len(pts), "".join(", " + v for v in viewers)))
    if not viewers:
        print("SKIP: neither PIL nor matplotlib is installed (the zlib and XML checks passed)")
        sys.exit(77)


if __name__ == "__main__":
    main()
