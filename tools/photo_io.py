"""Photos as photographers have them: 8- and 16-bit files, embedded colour profiles and EXIF, in and out.

``read_photo`` decodes PNG, TIFF, JPEG and WebP at their full bit depth, applies the EXIF orientation and converts
an embedded ICC profile to sRGB in floating point (matrix-shaper profiles: Adobe RGB, Display P3, ProPhoto, the
camera RGBs), so the agents judge colour in the space their statistics assume. ``write_photo`` writes 8- or 16-bit
PNG and TIFF, or JPEG, with the original's profile re-applied (or sRGB tagged) and its EXIF without the orientation
tag; a photo saved unedited is written with the original's own pixels, bit for bit.

Pillow reads everything but colour at 16 bits; those pixels come from torchvision's PNG decoder, tifffile or
OpenCV, whichever is installed (ComfyUI installs bring torchvision). Without one, a 16-bit colour file is read at
8 bits and ``Photo.notes`` says so.
"""
from __future__ import annotations

import io
import struct
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

ORIENTATION = 0x0112
SRGB_D50 = np.array([[0.4360747, 0.3850649, 0.1430804],  # sRGB's colorants adapted to the PCS's D50 (its ICC profile)
                     [0.2225045, 0.7168786, 0.0606169],
                     [0.0139322, 0.0971045, 0.7141733]])


class PhotoError(ValueError):
    """A file that cannot be read or written as a photo: what was wrong and what to do."""


# -- ICC profiles: matrix-shaper RGB, parsed from the bytes (ICC.1:2010, sections 10.x) ---------------------------

@dataclass(frozen=True)
class MatrixShaper:
    """An RGB profile as a tone curve per channel and a matrix to the PCS (XYZ, D50)."""

    to_xyz: np.ndarray  # 3 x 3: linear RGB -> XYZ D50
    curves: tuple[Callable[[np.ndarray], np.ndarray], ...]  # encoded -> linear, per channel
    description: str

    def to_srgb(self, rgb: np.ndarray) -> np.ndarray:
        linear = np.stack([curve(rgb[..., c]) for c, curve in enumerate(self.curves)], axis=-1)
        srgb_linear = linear @ (np.linalg.inv(SRGB_D50) @ self.to_xyz).T.astype(np.float32)
        return srgb_encode(np.clip(srgb_linear, 0.0, 1.0))

    def from_srgb(self, srgb: np.ndarray) -> np.ndarray:
        linear = srgb_decode(srgb) @ (np.linalg.inv(self.to_xyz) @ SRGB_D50).T.astype(np.float32)
        linear = np.clip(linear, 0.0, 1.0)
        grid = np.linspace(0.0, 1.0, 4097, dtype=np.float32)  # each curve inverted by interpolation: any kind
        return np.stack([np.interp(linear[..., c], curve(grid), grid) for c, curve in enumerate(self.curves)],
                        axis=-1).astype(np.float32)

    def is_srgb(self) -> bool:
        grid = np.linspace(0.0, 1.0, 256, dtype=np.float32)
        return bool(np.allclose(self.to_xyz, SRGB_D50, atol=2e-3)
                    and all(np.abs(c(grid) - srgb_decode(grid)).max() < 2e-3 for c in self.curves))


def srgb_decode(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return np.where(x <= 0.04045, x / 12.92, ((x + 0.055) / 1.055) ** 2.4).astype(np.float32)


def srgb_encode(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float32)
    return np.where(x <= 0.0031308, x * 12.92, 1.055 * np.power(np.maximum(x, 0.0031308), 1 / 2.4) - 0.055
                    ).astype(np.float32)


def _s15(data: bytes, at: int) -> float:
    return struct.unpack(">i", data[at:at + 4])[0] / 65536.0


def _curve(data: bytes, at: int) -> Callable[[np.ndarray], np.ndarray]:
    kind = data[at:at + 4]
    if kind == b"curv":
        count = struct.unpack(">I", data[at + 8:at + 12])[0]
        if count == 0:
            return lambda x: np.asarray(x, np.float32)
        if count == 1:
            gamma = struct.unpack(">H", data[at + 12:at + 14])[0] / 256.0
            return lambda x: np.power(np.clip(x, 0, 1), gamma).astype(np.float32)
        table = np.frombuffer(data[at + 12:at + 12 + 2 * count], ">u2").astype(np.float32) / 65535.0
        grid = np.linspace(0.0, 1.0, count, dtype=np.float32)
        return lambda x: np.interp(x, grid, table).astype(np.float32)
    if kind == b"para":
        function = struct.unpack(">H", data[at + 8:at + 10])[0]
        n = {0: 1, 1: 3, 2: 4, 3: 5, 4: 7}.get(function)
        if n is None:
            raise PhotoError(f"parametric curve type {function} is not in the ICC standard")
        g, a, b, c, d, e, f = [_s15(data, at + 12 + 4 * i) for i in range(n)] + [0.0] * (7 - n)
        if function in (1, 2):  # the curve starts where a X + b reaches 0; below, 0 (type 1) or c (type 2)
            d, e, f, c = (-b / a if a else 0.0), (c if function == 2 else 0.0), (c if function == 2 else 0.0), 0.0

        def para(x):
            x = np.clip(np.asarray(x, np.float32), 0, 1)
            if function == 0:
                return np.power(x, g).astype(np.float32)
            return np.where(x >= d, np.power(np.maximum(a * x + b, 0.0), g) + e, c * x + f).astype(np.float32)
        return para
    raise PhotoError(f"tone curve of type {kind!r} is not one an RGB matrix profile uses")


def _text(data: bytes, at: int, size: int) -> str:
    kind = data[at:at + 4]
    if kind == b"desc":
        count = struct.unpack(">I", data[at + 8:at + 12])[0]
        return data[at + 12:at + 12 + count].split(b"\0")[0].decode("latin-1", "replace")
    if kind == b"mluc":
        records, record_size = struct.unpack(">II", data[at + 8:at + 16])
        if records:
            length, offset = struct.unpack(">II", data[at + 16 + 4:at + 16 + 12])
            return data[at + offset:at + offset + length].decode("utf-16-be", "replace")
    if kind == b"text":
        return data[at + 8:at + size].split(b"\0")[0].decode("latin-1", "replace")
    return ""


def parse_icc(data: bytes) -> MatrixShaper | None:
    """The profile as a matrix-shaper, or None when it is not one (a LUT-based or non-RGB profile)."""
    if len(data) < 132 or data[36:40] != b"acsp":
        raise PhotoError("the embedded colour profile is not an ICC profile (no 'acsp' signature)")
    if data[16:20] != b"RGB " or data[20:24] != b"XYZ ":
        return None
    count = struct.unpack(">I", data[128:132])[0]
    tags = {}
    for i in range(count):
        sig, offset, size = struct.unpack(">4sII", data[132 + 12 * i:144 + 12 * i])
        tags[sig] = (offset, size)
    need = (b"rXYZ", b"gXYZ", b"bXYZ", b"rTRC", b"gTRC", b"bTRC")
    if not all(t in tags for t in need):
        return None
    columns = [[_s15(data, tags[t][0] + 8 + 4 * k) for k in range(3)] for t in need[:3]]
    description = _text(data, *tags[b"desc"]) if b"desc" in tags else ""
    return MatrixShaper(np.array(columns, np.float64).T, tuple(_curve(data, tags[t][0]) for t in need[3:]),
                        description.strip() or "an RGB profile")


def srgb_profile() -> bytes:
    from PIL import ImageCms

    return ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()


# -- reading -------------------------------------------------------------------------------------------------

@dataclass
class Photo:
    """A decoded photo: ``image`` float32 H x W x 3 sRGB 0..1 for the agents; what the file was, for saving it back."""

    image: np.ndarray = field(repr=False)
    alpha: np.ndarray | None = field(default=None, repr=False)  # H x W, 1 = opaque
    bits: int = 8
    format: str = "PNG"
    gray: bool = False
    icc: bytes | None = field(default=None, repr=False)
    profile: str = "sRGB (none embedded)"
    exif: bytes | None = field(default=None, repr=False)  # orientation already applied and reset
    notes: list[str] = field(default_factory=list)
    pixels: np.ndarray | None = field(default=None, repr=False)  # the file's own values, oriented, before conversion

    def describe(self) -> dict:
        return {"bits": self.bits, "format": self.format, "channels": "gray" if self.gray else "RGB",
                "alpha": self.alpha is not None, "profile": self.profile, "exif": self.exif is not None,
                "notes": list(self.notes)}


def _png_header(data: bytes) -> tuple[int, int] | None:
    """(bit depth, colour type) of a PNG, from its IHDR."""
    if data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR":
        return data[24], data[25]
    return None


def _decode_16(data: bytes, fmt: str) -> np.ndarray | None:
    """A 16-bit colour file's own values (H x W x C uint16), by whichever decoder is installed; None if none."""
    if fmt == "PNG":
        try:
            import torch
            from torchvision.io import ImageReadMode, decode_png
        except ImportError:
            pass
        else:
            out = decode_png(torch.frombuffer(bytearray(data), dtype=torch.uint8), ImageReadMode.UNCHANGED)
            return out.permute(1, 2, 0).numpy().astype(np.uint16)
    if fmt == "TIFF":
        try:
            import tifffile
        except ImportError:
            pass
        else:
            arr = tifffile.imread(io.BytesIO(data))
            return arr.astype(np.uint16) if arr.ndim == 3 else arr[:, :, None].astype(np.uint16)
    try:
        import cv2
    except ImportError:
        return None
    arr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_UNCHANGED)
    if arr is None or arr.dtype != np.uint16:
        return None
    arr = arr[:, :, None] if arr.ndim == 2 else arr
    order = {3: [2, 1, 0], 4: [2, 1, 0, 3]}.get(arr.shape[2])
    return arr[:, :, order] if order else arr


def _oriented(arr: np.ndarray, orientation: int) -> np.ndarray:
    """EXIF orientation 1-8 applied to an H x W x C array, as Pillow's ``exif_transpose`` applies it to an image."""
    ops = {2: lambda a: a[:, ::-1], 3: lambda a: a[::-1, ::-1], 4: lambda a: a[::-1],
           5: lambda a: np.swapaxes(a, 0, 1), 6: lambda a: np.rot90(a, -1),
           7: lambda a: np.swapaxes(a, 0, 1)[::-1, ::-1], 8: lambda a: np.rot90(a, 1)}
    return np.ascontiguousarray(ops[orientation](arr)) if orientation in ops else arr


def read_photo(data: bytes, name: str = "photo") -> Photo:
    """Decode a photo file's bytes; a file that is not a photo Pillow can open gets a PhotoError saying so."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        im = Image.open(io.BytesIO(data))
        im.load()
    except (UnidentifiedImageError, OSError, SyntaxError) as err:
        raise PhotoError(f"{name}: not an image file this can read ({err}); use PNG, TIFF, JPEG or WebP") from None
    fmt = (im.format or "PNG").upper()
    icc, notes = im.info.get("icc_profile") or None, []
    exif = im.getexif()
    orientation = int(exif.get(ORIENTATION, 1) or 1)
    png = _png_header(data)
    bits_per_sample = getattr(im, "tag_v2", {}).get(258) if fmt == "TIFF" else None
    sixteen = (png is not None and png[0] == 16) or im.mode in ("I;16", "I;16B", "I;16L", "I") or \
        (bits_per_sample is not None and max(np.atleast_1d(bits_per_sample)) == 16)
    pixels = None
    if sixteen and im.mode.startswith("I"):  # 16-bit gray: Pillow reads it
        pixels = np.clip(np.asarray(ImageOps.exif_transpose(im)), 0, 65535).astype(np.uint16)[:, :, None]
    elif sixteen:
        decoded = _decode_16(data, fmt)
        if decoded is None:
            notes.append("16-bit colour read at 8 bits: install torchvision (PNG), tifffile (TIFF) or OpenCV for "
                         "full precision")
            sixteen = False
        else:
            pixels = _oriented(decoded, orientation)
    if pixels is None:
        im = ImageOps.exif_transpose(im)
        if im.mode == "CMYK":
            im = _cmyk_to_rgb(im, icc, notes)
            icc = None
        elif im.mode not in ("L", "LA", "RGB", "RGBA"):
            im = im.convert("RGBA" if ("transparency" in im.info or "A" in im.getbands()) else "RGB")
        pixels = np.asarray(im)
        pixels = pixels[:, :, None] if pixels.ndim == 2 else pixels
    scale = 65535.0 if pixels.dtype == np.uint16 else 255.0
    values = pixels.astype(np.float32) / scale
    gray = values.shape[2] in (1, 2)
    alpha = values[:, :, -1] if values.shape[2] in (2, 4) else None
    color = values[:, :, :1] if gray else values[:, :, :3]
    profile = "sRGB (none embedded)"
    if icc is not None and not gray:
        color, profile = _to_srgb(color, icc, pixels.dtype == np.uint16, notes)
    elif icc is not None:
        profile = "gray profile (values kept)"
    if orientation != 1:
        notes.append(f"EXIF orientation {orientation} applied")
    image = np.repeat(color, 3, axis=2) if gray else color
    return Photo(np.ascontiguousarray(image, np.float32), alpha, 16 if pixels.dtype == np.uint16 else 8, fmt, gray,
                 icc, profile, _kept_exif(exif), notes, pixels)


# what of a file's EXIF is the photo's, and written back: the camera, lens, exposure and date (the Exif sub-IFD),
# where (GPS), who; not a TIFF's own structure (size, strips: Pillow reads a TIFF's first IFD as its EXIF), not the
# orientation (applied), not a free-text description (where other tools put prompts)
EXIF_KEPT = {0x010F: "Make", 0x0110: "Model", 0x0132: "DateTime", 0x013B: "Artist",
             0x8298: "Copyright", 0x8769: "Exif IFD", 0x8825: "GPS IFD"}


def _kept_exif(exif) -> bytes | None:
    from PIL import Image

    kept = Image.Exif()
    for tag in EXIF_KEPT:
        if tag in exif:
            kept[tag] = exif.get_ifd(tag) if tag in (0x8769, 0x8825) else exif[tag]
    return kept.tobytes() if len(kept) else None


def _cmyk_to_rgb(im, icc: bytes | None, notes: list[str]):
    from PIL import ImageCms

    if icc:
        try:
            out = ImageCms.profileToProfile(im, ImageCms.ImageCmsProfile(io.BytesIO(icc)),
                                            ImageCms.createProfile("sRGB"), outputMode="RGB")
            notes.append("CMYK converted to sRGB with its embedded profile")
            return out
        except (ImageCms.PyCMSError, OSError) as err:
            notes.append(f"CMYK profile unusable ({err}); converted without it")
    else:
        notes.append("CMYK without a profile: converted naively")
    return im.convert("RGB")


def _to_srgb(color: np.ndarray, icc: bytes, sixteen: bool, notes: list[str]) -> tuple[np.ndarray, str]:
    shaper = parse_icc(icc)
    if shaper is not None:
        if shaper.is_srgb():
            return color, f"{shaper.description} (sRGB: values kept)"
        notes.append(f"colour profile '{shaper.description}' converted to sRGB")
        return shaper.to_srgb(color), shaper.description
    from PIL import Image, ImageCms

    try:  # a LUT-based RGB profile: LittleCMS through Pillow, at 8 bits
        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        im = Image.fromarray(np.clip(np.rint(color * 255), 0, 255).astype(np.uint8), "RGB")
        out = ImageCms.profileToProfile(im, src, ImageCms.createProfile("sRGB"), outputMode="RGB")
    except (ImageCms.PyCMSError, OSError) as err:
        notes.append(f"colour profile unusable ({err}); values kept as sRGB")
        return color, "unusable profile (values kept)"
    name = ImageCms.getProfileDescription(src).strip() or "a LUT profile"
    notes.append(f"colour profile '{name}' converted to sRGB" + (" at 8 bits (a LUT profile)" if sixteen else ""))
    return np.asarray(out).astype(np.float32) / 255.0, name


# -- writing -------------------------------------------------------------------------------------------------

FORMATS = ("png", "tiff", "jpeg")


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)


def encode_png(pixels: np.ndarray, icc: bytes | None = None, exif: bytes | None = None) -> bytes:
    """A PNG of H x W x C (1-4) uint8 or uint16 values, with the profile (iCCP) and EXIF (eXIf) given, and nothing
    else: no text chunks, so no prompt, workflow, key name or path is ever written."""
    h, w, c = pixels.shape
    depth = 16 if pixels.dtype == np.uint16 else 8
    colour = {1: 0, 2: 4, 3: 2, 4: 6}[c]
    rows = pixels.astype(">u2" if depth == 16 else np.uint8).reshape(h, -1).view(np.uint8)
    raw = np.concatenate([np.zeros((h, 1), np.uint8), rows], axis=1)  # filter type 0 on every row
    out = [b"\x89PNG\r\n\x1a\n", _png_chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))]
    if icc:
        out.append(_png_chunk(b"iCCP", b"ICC profile\0\0" + zlib.compress(icc)))
    if exif:
        out.append(_png_chunk(b"eXIf", exif[6:] if exif.startswith(b"Exif\0\0") else exif))
    out += [_png_chunk(b"IDAT", zlib.compress(raw.tobytes(), 6)), _png_chunk(b"IEND", b"")]
    return b"".join(out)


def write_photo(image: np.ndarray, fmt: str = "png", bits: int | None = None, photo: Photo | None = None,
                alpha: np.ndarray | None = None, quality: int = 95, profile: str = "original") -> tuple[bytes, list[str]]:
    """The file's bytes and what was done. ``image`` float H x W x 3 sRGB; ``bits`` 8 or 16 (None: the original's,
    else 8); ``profile`` 'original' (its profile re-applied) or 'sRGB' (tagged). An image identical to the one
    ``photo`` was read as is written with the file's own values (bit for bit)."""
    fmt = fmt.lower()
    if fmt not in FORMATS:
        raise PhotoError(f"format {fmt!r}: choose one of {FORMATS}")
    bits = bits or (photo.bits if photo else 8)
    if fmt == "jpeg" and bits != 8:
        raise PhotoError("JPEG holds 8 bits per channel: choose PNG or TIFF for 16 bits")
    notes: list[str] = []
    unchanged = photo is not None and photo.pixels is not None and image.shape == photo.image.shape and \
        np.array_equal(image, photo.image) and bits == photo.bits and profile == "original"
    icc = photo.icc if photo is not None and profile == "original" else None
    gray = bool(photo and photo.gray) and float(np.abs(image[..., 0] - image[..., 1]).max(initial=0.0)) < 1e-6 and \
        float(np.abs(image[..., 1] - image[..., 2]).max(initial=0.0)) < 1e-6
    if unchanged:
        pixels = photo.pixels
        notes.append("unedited: the original's own values")
    else:
        color = image[..., :1] if gray else image[..., :3]
        shaper = parse_icc(icc) if icc and not gray else None
        if shaper is not None and not shaper.is_srgb():
            color = shaper.from_srgb(color)
            notes.append(f"converted back to '{shaper.description}'")
        elif icc and not gray and shaper is None:
            icc = None  # a LUT profile is not re-applied: the pixels are sRGB, so say so
        if icc is None and not gray:
            icc = srgb_profile()
            notes.append("tagged sRGB")
        top = 65535.0 if bits == 16 else 255.0
        planes = [color] + ([alpha[..., None]] if alpha is not None else
                            [photo.alpha[..., None]] if photo is not None and photo.alpha is not None
                            and photo.alpha.shape == image.shape[:2] else [])
        values = np.concatenate(planes, axis=2) if len(planes) > 1 else color
        pixels = np.clip(np.rint(values * top), 0, top).astype(np.uint16 if bits == 16 else np.uint8)
    exif = photo.exif if photo is not None else None
    if fmt == "png":
        return encode_png(pixels, icc, exif), notes + [f"{bits}-bit PNG"]
    if fmt == "tiff" and bits == 16:
        try:
            import tifffile
        except ImportError:
            raise PhotoError("a 16-bit TIFF needs tifffile (pip install tifffile): or save a 16-bit PNG") from None
        buffer = io.BytesIO()
        tifffile.imwrite(buffer, pixels if pixels.shape[2] > 1 else pixels[:, :, 0],
                         photometric="minisblack" if pixels.shape[2] in (1, 2) else "rgb", iccprofile=icc,
                         extrasamples=("unassalpha",) if pixels.shape[2] in (2, 4) else None)
        return buffer.getvalue(), notes + ["16-bit TIFF" + ("; EXIF not written to a 16-bit TIFF" if exif else "")]
    from PIL import Image

    mode = {1: "L", 2: "LA", 3: "RGB", 4: "RGBA"}[pixels.shape[2]]
    im = Image.fromarray(pixels if pixels.shape[2] > 1 else pixels[:, :, 0], mode)
    if fmt == "jpeg" and mode in ("LA", "RGBA"):
        im = im.convert("L" if mode == "LA" else "RGB")
        notes.append("alpha dropped: JPEG has none")
    buffer = io.BytesIO()
    options = {k: v for k, v in (("icc_profile", icc), ("exif", exif)) if v}
    im.save(buffer, "JPEG" if fmt == "jpeg" else "TIFF", **options, **({"quality": int(quality)} if fmt == "jpeg" else {}))
    return buffer.getvalue(), notes + [f"8-bit {fmt.upper()}" + (f", quality {quality}" if fmt == "jpeg" else "")]
