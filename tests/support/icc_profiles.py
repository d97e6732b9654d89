"""ICC v2 matrix-shaper profiles built from their published primaries, byte by byte (ICC.1:2001-04), for tests: the
profiles photographers' files carry (Adobe RGB (1998): gamma 563/256; Display P3: the sRGB curve as a parametric
curve). LittleCMS (Pillow's ImageCms) reads them, so the pack's own conversion can be checked against it."""
from __future__ import annotations

import struct

D50 = (0.9642, 1.0, 0.8249)
ADOBE_RGB = ((0.60974, 0.31111, 0.01947), (0.20528, 0.62567, 0.06087), (0.14919, 0.06322, 0.74457))
DISPLAY_P3 = ((0.515102, 0.241182, -0.001049), (0.291965, 0.692236, 0.041882), (0.157153, 0.066574, 0.784378))


def _s15(v: float) -> bytes:
    return struct.pack(">i", round(v * 65536))


def _xyz(x: float, y: float, z: float) -> bytes:
    return b"XYZ \0\0\0\0" + _s15(x) + _s15(y) + _s15(z)


def _desc(text: str) -> bytes:
    ascii_ = text.encode("ascii") + b"\0"
    return (b"desc\0\0\0\0" + struct.pack(">I", len(ascii_)) + ascii_ + b"\0" * 8 + b"\0" * 2 + b"\0" + b"\0" * 67)


def gamma_curve(gamma: float) -> bytes:
    return b"curv\0\0\0\0" + struct.pack(">IH", 1, round(gamma * 256)) + b"\0\0"


def srgb_para_curve() -> bytes:
    params = (2.4, 1 / 1.055, 0.055 / 1.055, 1 / 12.92, 0.04045)
    return b"para\0\0\0\0" + struct.pack(">HH", 3, 0) + b"".join(_s15(p) for p in params)


def matrix_profile(name: str, colorants, curve: bytes) -> bytes:
    tags = [(b"desc", _desc(name)), (b"wtpt", _xyz(*D50)), (b"cprt", b"text\0\0\0\0public domain\0\0\0")]
    tags += [(sig, _xyz(*c)) for sig, c in zip((b"rXYZ", b"gXYZ", b"bXYZ"), colorants)]
    tags += [(b"rTRC", curve), (b"gTRC", curve), (b"bTRC", curve)]
    table_size = 4 + 12 * len(tags)
    offset, table, body = 128 + table_size, [], b""
    for sig, data in tags:
        data += b"\0" * (-len(data) % 4)
        table.append(struct.pack(">4sII", sig, offset + len(body), len(data)))
        body += data
    size = 128 + table_size + len(body)
    header = (struct.pack(">I", size) + b"lcms" + bytes([2, 0x10, 0, 0]) + b"mntrRGB XYZ " + b"\0" * 12 + b"acsp"
              + b"\0" * 24 + struct.pack(">I", 0) + _xyz(*D50)[8:] + b"\0" * 4 + b"\0" * 16 + b"\0" * 28)
    assert len(header) == 128
    return header + struct.pack(">I", len(tags)) + b"".join(table) + body


def adobe_rgb() -> bytes:
    return matrix_profile("Adobe RGB (1998) (test)", ADOBE_RGB, gamma_curve(563 / 256))


def display_p3() -> bytes:
    return matrix_profile("Display P3 (test)", DISPLAY_P3, srgb_para_curve())
