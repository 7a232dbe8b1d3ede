#!/usr/bin/env python3
"""A headless browser's screenshot is a picture, not a blank page: a valid PNG of at least
1000x800 pixels in which more than a quarter of the rows are not one flat colour.

Usage: check_png.py SCREENSHOT.png (exit 0 when it is a picture)."""
import struct
import sys
import zlib

data = open(sys.argv[1], 'rb').read()
assert data[:8] == b'\x89PNG\r\n\x1a\n', 'not a PNG'
pos, idat, w, h, colour = 8, b'', 0, 0, 2
while pos < len(data):
    n, kind = struct.unpack('>I4s', data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b'IHDR':
        w, h, depth, colour = struct.unpack('>IIBB', body[:10])
    elif kind == b'IDAT':
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
bpp = 4 if colour == 6 else 3
stride = w * bpp + 1
# Count rows that are not one flat colour (filter bytes aside): a blank page has none.
busy = sum(1 for y in range(h) if len(set(raw[y * stride + 1:(y + 1) * stride])) > 8)
print(f'{sys.argv[1]}: {w}x{h}, {busy} rows with content')
assert w >= 1000 and h >= 800, 'wrong size'
assert busy > h // 4, 'the page looks blank'
