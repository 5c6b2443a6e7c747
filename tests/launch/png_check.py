# Checks PNG images the way a person would glance at them: each is W x H pixels and holds a picture, not a
# blank: the variance of its grey levels above a floor. Decodes 8-bit RGB(A) or grey PNGs (what gnuplot's
# pngcairo writes) with the standard library only.
# usage: png_check.py WIDTH HEIGHT MIN_VARIANCE FILE...   (prints one line per file; exit 1 if any fails)
import struct
import sys
import zlib


def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, w = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or interlace or color not in (0, 2, 4, 6):
                raise ValueError("depth %d colour %d interlace %d not handled" % (depth, color, interlace))
            bpp = {0: 1, 2: 3, 4: 2, 6: 4}[color]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw, stride = zlib.decompress(idat), w * bpp
    rows, prev, at = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[at], bytearray(raw[at + 1:at + 1 + stride])
        at += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    want_w, want_h, floor = int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
    bad = 0
    for path in sys.argv[4:]:
        try:
            w, h, bpp, rows = decode(path)
        except (OSError, ValueError, zlib.error) as e:
            print("png_check: %s: cannot decode: %s" % (path, e))
            bad += 1
            continue
        grey = [sum(r[i:i + min(bpp, 3)]) / min(bpp, 3) for r in rows for i in range(0, len(r), bpp)]
        mean = sum(grey) / len(grey)
        var = sum((g - mean) ** 2 for g in grey) / len(grey)
        ok = (w, h) == (want_w, want_h) and var > floor
        bad += not ok
        print("png_check: %s: %dx%d, grey variance %.1f: %s" % (path, w, h, var, "ok" if ok else "FAIL"))
    sys.exit(1 if bad else 0)


main()
