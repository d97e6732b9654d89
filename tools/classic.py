"""Classic image tools: exact, fast, any size; alpha kept, grayscale stays grayscale.

These are what PhotoAgent routes to OpenCV/PIL and CCA's procedural tools (here on numpy and torch, with
OpenCV's arithmetic: tools/imageops). Each tool is
a ToolSpec: its description, manual and typed parameters are the single source that the
planner prompt, the executor, validation and the docs read.
"""
from __future__ import annotations

import os

import numpy as np

from .imageops import (bilateral_filter, clahe_uint16, gaussian, join_alpha, luminance, maximum_filter, minimum_filter,
                       on_color, per_plane, resize as resize_image, sampled_gaussian, scene_light, split_alpha,
                       warp_affine)
from .spec import Moves, Param, ToolCallError, ToolOutput, ToolSpec


def _scale_lum(color: np.ndarray, new_lum: np.ndarray, old_lum: np.ndarray) -> np.ndarray:
    """Change luminance while keeping hue/saturation ratios."""
    ratio = (new_lum + 1e-4) / (old_lum + 1e-4)
    return color * ratio[:, :, None]


# --- tone ---------------------------------------------------------------------------

def exposure(img, stops=0.0):
    return on_color(lambda c: c * (2.0 ** stops))(img)


def brightness(img, amount=0.0):
    return on_color(lambda c: c + amount)(img)


def contrast(img, amount=0.0, *, pivot=None):
    """``pivot`` (default: the image's mean luminance) stays where it is."""
    def f(c):
        mid = float(luminance(c).mean()) if pivot is None else pivot
        return (c - mid) * (1.0 + amount) + mid
    return on_color(f)(img)


def gamma(img, gamma=1.0):
    return on_color(lambda c: np.power(np.clip(c, 0, 1), 1.0 / gamma))(img)


def _levels(img, clip_percent):
    return tuple(float(v) for v in np.percentile(luminance(img), [clip_percent, 100.0 - clip_percent]))


def auto_levels(img, clip_percent=0.5, *, levels=None):
    """``levels``: the black and white points (default: the image's own percentiles)."""
    def f(c):
        lo, hi = _levels(c, clip_percent) if levels is None else levels
        if hi - lo < 1e-3:
            return c
        return (c - lo) / (hi - lo)
    return on_color(f)(img)


def levels(img, black=0.0, white=1.0, gamma=1.0):
    """Photoshop's Levels: ``black`` and ``white`` input points mapped to 0 and 1 (the same on every channel, so
    greys stay grey), then a midtone ``gamma`` (above 1 brightens)."""
    span = max(white - black, 1e-3)
    return on_color(lambda c: np.power(np.clip((c - black) / span, 0, None), 1.0 / gamma))(img)


def highlights_shadows(img, shadows=0.0, highlights=0.0, *, reference_side=None):
    """Lift shadows (>0) and recover highlights (>0) with a smooth luminance mask, as wide as a hundredth of
    the picture (``reference_side``: its longest side in this image's pixels; default this image's)."""
    def f(c):
        lum = luminance(c)
        side = max(lum.shape) if reference_side is None else reference_side
        blur = sampled_gaussian(lum, max(1.0, side / 100))
        shadow_mask = np.clip(1.0 - blur / 0.5, 0, 1) ** 2
        highlight_mask = np.clip((blur - 0.5) / 0.5, 0, 1) ** 2
        new = lum + shadows * 0.5 * shadow_mask * (1 - lum) - highlights * 0.5 * highlight_mask * lum
        return _scale_lum(c, np.clip(new, 0, 1), lum)
    return on_color(f)(img)


def tone_curve(img, shadows=0.0, midtones=0.0, highlights=0.0):
    """A smooth curve through (0,0), (.25,.25+s), (.5,.5+m), (.75,.75+h), (1,1)."""
    xs = np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    ys = np.clip(xs + np.array([0.0, shadows, midtones, highlights, 0.0]) * 0.25, 0, 1)
    lut_x = np.linspace(0, 1, 1024)
    lut = np.interp(lut_x, xs, ys)
    return on_color(lambda c: np.interp(np.clip(c, 0, 1), lut_x, lut).astype(np.float32))(img)


def clahe(img, clip_limit=2.0, tile=8, *, reference_side=None):
    """``tile`` x ``tile`` tiles over the picture (``reference_side``: its longest side in this image's pixels)."""
    def f(c):
        lum = luminance(c)
        grid = int(tile) if reference_side is None else max(1, round(int(tile) * max(lum.shape) / reference_side))
        new = clahe_uint16((np.clip(lum, 0, 1) * 65535).astype(np.uint16), float(clip_limit), grid)
        new = new.astype(np.float32) / 65535
        return _scale_lum(c, new, lum)
    return on_color(f)(img)


# --- colour -------------------------------------------------------------------------

def _color_only(fn):
    """Colour tools leave grayscale images as they are."""
    def f(c):
        return c if c.shape[2] == 1 else fn(c)
    return f


def saturation(img, amount=0.0):
    def f(c):
        lum = luminance(c)[:, :, None]
        return lum + (c - lum) * (1.0 + amount)
    return on_color(_color_only(f))(img)


def vibrance(img, amount=0.0):
    """Saturate muted colours more than already-saturated ones."""
    def f(c):
        lum = luminance(c)[:, :, None]
        sat = (c.max(axis=2, keepdims=True) - c.min(axis=2, keepdims=True))
        weight = 1.0 - np.clip(sat, 0, 1)
        return lum + (c - lum) * (1.0 + amount * weight)
    return on_color(_color_only(f))(img)


LUMA_WEIGHTS = np.array([0.2126, 0.7152, 0.0722], np.float32)  # Rec. 709, as imageops.luminance


def temperature_tint(img, temperature=0.0, tint=0.0):
    """temperature > 0 warms (more red, less blue); tint > 0 shifts to magenta."""
    gains = np.array([1 + 0.2 * temperature, 1 - 0.2 * tint, 1 - 0.2 * temperature], np.float32)
    gains = gains / (gains @ LUMA_WEIGHTS)
    return on_color(_color_only(lambda c: c * gains))(img)


def white_balance(img, strength=1.0, *, illuminant=None, mean_colour=None):
    """Automatic white balance: divide out the estimated illuminant (white patch, shades of gray and gray
    edge agreeing; read on a copy, imageops.scene_light), blended by strength, keeping the overall brightness.
    ``illuminant``: log(R/G), log(B/G);
    ``mean_colour``: the photo's mean R, G, B, whose luminance is kept (both default to this image's own: a crop
    is given the whole photo's, so that it is balanced as the photo is)."""
    def f(c):
        log_rb = scene_light(c) if illuminant is None else np.asarray(illuminant, np.float32)
        gains = np.exp(-strength * np.array([log_rb[0], 0.0, log_rb[1]], np.float32))
        # the photo's own mean brightness is kept, not a grey's: taking a cast out of an orange scene must not
        # darken it (with a grey's luminance kept, a red-heavy photo lost its red's share of brightness); a black
        # photo has no brightness to keep, and keeps a grey's
        mean = c.reshape(-1, 3).mean(axis=0) if mean_colour is None else np.asarray(mean_colour, np.float32)
        kept = mean if float(mean @ LUMA_WEIGHTS) > 1e-3 else np.ones(3, np.float32)
        return c * (gains * float(kept @ LUMA_WEIGHTS) / float((kept * gains) @ LUMA_WEIGHTS))
    return on_color(_color_only(f))(img)


def _white_balance_pins(img, params):
    """What a white balance measures on the whole photo: the light, and the mean colour whose brightness it keeps."""
    color, _ = split_alpha(img)
    if color.shape[2] < 3:
        return {}
    return {"illuminant": tuple(scene_light(color).tolist()),
            "mean_colour": tuple(float(v) for v in color.reshape(-1, 3).mean(axis=0))}


def grayscale(img):
    color, alpha = split_alpha(img)
    if color.shape[2] == 1:
        return img
    lum = luminance(color)[:, :, None]
    return join_alpha(np.repeat(lum, 3, axis=2), alpha)


def sepia(img, strength=1.0):
    m = np.array([[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]], np.float32)

    def f(c):
        rgb = np.repeat(c, 3, axis=2) if c.shape[2] == 1 else c
        return rgb * (1 - strength) + (rgb @ m.T) * strength
    return on_color(f)(img)


def split_toning(img, shadow_hue=220.0, highlight_hue=40.0, strength=0.3, balance=0.0):
    import colorsys

    def tint(hue):
        return np.array(colorsys.hsv_to_rgb(hue / 360.0, 1.0, 1.0), np.float32) - 0.5

    def f(c):
        lum = luminance(c)[:, :, None]
        w_high = np.clip(lum + balance * 0.5, 0, 1)
        shift = (1 - w_high) * tint(shadow_hue) + w_high * tint(highlight_hue)
        return c + shift * strength * 0.3
    return on_color(_color_only(f))(img)


# --- detail -------------------------------------------------------------------------

SHARPEN_CORING = 0.006  # detail below about 1.5/255 is mostly noise: it is damped rather than amplified


def sharpen(img, amount=0.5, radius=1.5):
    """Unsharp mask of the luminance, its detail added to every channel, with a halo guard: each channel may leave
    its own range in a 3x3 window (the pixels an edge's overshoot lands on) only by a tenth of that range, and faint
    detail (noise in flat areas) is cored. The colour differences stay as they came: a JPEG keeps colour at half the
    resolution and rounds it coarser than the brightness, and sharpening each channel raised those colour errors
    (docs/notes/2026-11-generalisation/, "A sharpen of the brightness")."""
    def within_own_range(out, p):  # out clipped in place to p's 3x3 range widened by a tenth of it
        lo, hi = minimum_filter(p, 3), maximum_filter(p, 3)  # the borders extended
        slack = hi - lo
        slack *= 0.1
        slack += 0.004
        lo -= slack
        hi += slack
        return np.clip(out, lo, hi, out=out)

    def detail_of(p):
        detail = p - gaussian(p, radius)
        power = detail * detail
        power /= power + SHARPEN_CORING ** 2
        detail *= power  # soft coring
        detail *= amount
        return detail

    def f(c):
        if c.shape[2] < 3:  # a single plane is its own luminance
            planes = [np.ascontiguousarray(c[:, :, k]) for k in range(c.shape[2])]
            return np.stack([within_own_range(p + detail_of(p), p) for p in planes], axis=2)
        lum = np.ascontiguousarray(luminance(c), dtype=np.float32)
        detail = within_own_range(lum + detail_of(lum), lum)
        detail -= lum
        out = np.empty(c.shape, np.float32)
        for k in range(c.shape[2]):  # a plane at a time: at 12 MP each temporary is a third of the photo's size
            p = np.ascontiguousarray(c[:, :, k], dtype=np.float32)
            out[:, :, k] = within_own_range(p + detail, p)
        return out
    return on_color(f)(img)


def denoise(img, strength=0.5, radius=2.0):
    """Edge-preserving bilateral denoise; strength 0..1, ``radius`` the window's half-width in pixels."""
    half = int(round(radius))

    def f(c):
        if strength <= 0 or half < 1:  # a window under a pixel (the search's reduced copy) averages nothing
            return c
        return bilateral_filter(c, 2 * half + 1, 0.05 + 0.15 * strength, (3 + 4 * strength) * radius / 2)
    return on_color(f)(img)


def chroma_denoise(img, strength=0.8, radius=3.0):
    """Smooth the colour difference planes (each channel minus the luminance) and keep the luminance exactly:
    colour speckles go, detail stays. The planes' luminance is 0, before and after a blur, so it cannot move."""
    def f(c):
        if c.shape[2] < 3 or strength <= 0:
            return c
        lum = luminance(c)
        planes = [c[:, :, k] - lum for k in range(c.shape[2])]  # plane by plane: numpy is slow over a last axis of 3
        planes = [p + strength * (b - p) for p, b in zip(planes, per_plane(lambda x: gaussian(x, radius), planes))]
        # where the smoothed colour leaves 0..1 (saturated darks and lights), shorten it toward grey rather than
        # clip a channel, which would move the luminance: the lowest and the highest channel set how far it may go
        lowest, highest = planes[0], planes[0]
        for p in planes[1:]:
            lowest, highest = np.minimum(lowest, p), np.maximum(highest, p)
        level = np.clip(lum, 0, 1)
        room = np.minimum(np.minimum(level / np.maximum(-lowest, 1e-6), (1 - level) / np.maximum(highest, 1e-6)), 1.0)
        return np.stack([lum + p * room for p in planes], axis=2)
    return on_color(f)(img)


def gaussian_blur(img, sigma=2.0):
    return gaussian(img, sigma)


def vignette(img, amount=0.3, radius=0.8):
    """Darken (amount > 0) or lighten (< 0) the corners."""
    h, w = img.shape[:2]
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    d = np.sqrt(((xx - (w - 1) / 2) / max(w / 2, 1)) ** 2 + ((yy - (h - 1) / 2) / max(h / 2, 1)) ** 2) / np.sqrt(2)
    falloff = np.clip((d - radius * 0.5) / max(1e-3, 1 - radius * 0.5), 0, 1) ** 2
    gain = (1 - amount * falloff)[:, :, None]
    return on_color(lambda c: c * gain)(img)


# --- geometry -----------------------------------------------------------------------

MIN_CROP_SIDE = 8  # pixels: a crop never comes out thinner (an answer's box on the border is mended, not obeyed)


def _span(a: float, b: float, size: int) -> tuple[int, int]:
    """The pixel range [start, end) of the fractions a < b of ``size``, at least MIN_CROP_SIDE long (or the whole
    side when shorter) and inside the image: grown about its middle, then moved off the border."""
    start, end = round(a * size), round(b * size)
    side = min(size, max(end - start, MIN_CROP_SIDE))
    middle = (start + end) / 2
    start = int(min(max(round(middle - side / 2), 0), size - side))
    return start, start + side


def crop(img, box=(0.0, 0.0, 1.0, 1.0)):
    """The region [x0, y0, x1, y1] (fractions of the size, x0 < x1 and y0 < y1 as validated); a box that rounds to
    a sliver or to nothing on a border is mended to the nearest region of at least MIN_CROP_SIDE pixels a side."""
    h, w = img.shape[:2]
    (l, r), (t, b) = _span(box[0], box[2], w), _span(box[1], box[3], h)
    return img[t:b, l:r].copy()


def crop_aspect(img, aspect="1:1", zoom=1.0):
    """Centre crop to an aspect ratio ("W:H"), optionally zoomed in."""
    h, w = img.shape[:2]
    aw, ah = (float(x) for x in aspect.split(":"))
    target = aw / ah
    cw, ch = (w, w / target) if w / h < target else (h * target, h)
    cw, ch = max(1, int(round(cw / zoom))), max(1, int(round(ch / zoom)))
    l, t = (w - cw) // 2, (h - ch) // 2
    return img[t:t + ch, l:l + cw].copy()


def max_megapixels() -> float:
    """The largest image the agent nodes take and a tool may make (EDIT_AGENTS_MAX_MEGAPIXELS, default 100): searches
    copy and re-score an image many times, so a 256 MP scan would take minutes and gigabytes per step."""
    try:
        return float(os.environ.get("EDIT_AGENTS_MAX_MEGAPIXELS", "100"))
    except ValueError:
        raise ToolCallError("EDIT_AGENTS_MAX_MEGAPIXELS must be a number of megapixels, e.g. 100") from None


def resize(img, longest_side=1024, mode="longest side"):
    """Resize to ``longest_side`` (or a square of it); an image past max_megapixels() is refused, not made (a
    16384 px square is 268 MP: gigabytes, and minutes for every filter after it)."""
    h, w = img.shape[:2]
    if mode == "square":
        size = (longest_side, longest_side)
    else:
        scale = longest_side / max(h, w)
        size = (max(1, round(w * scale)), max(1, round(h * scale)))
    if size[0] * size[1] > max_megapixels() * 1e6:
        raise ToolCallError(f"resize to {size[0]}x{size[1]} would make a {size[0] * size[1] / 1e6:.0f} MP image, past "
                            f"the {max_megapixels():g} MP the pack takes (EDIT_AGENTS_MAX_MEGAPIXELS): ask for a smaller "
                            "longest_side")
    return np.clip(resize_image(img, size, "area" if size[0] < w else "cubic"), 0, 1)


def rotate(img, angle=90.0, expand=True):
    k = int(round(angle / 90.0))
    if abs(angle - 90.0 * k) < 1e-6:
        return np.ascontiguousarray(np.rot90(img, k=k % 4))  # exact for right angles (counter-clockwise)
    h, w = img.shape[:2]
    # OpenCV's getRotationMatrix2D: counter-clockwise about the centre, in image coordinates (y down)
    cx, cy = (w - 1) / 2, (h - 1) / 2
    cos, sin = np.cos(np.radians(angle)), np.sin(np.radians(angle))
    m = np.array([[cos, sin, (1 - cos) * cx - sin * cy], [-sin, cos, sin * cx + (1 - cos) * cy]])
    if expand:
        cos, sin = abs(m[0, 0]), abs(m[0, 1])
        nw, nh = int(h * sin + w * cos), int(h * cos + w * sin)
        m[0, 2] += nw / 2 - w / 2
        m[1, 2] += nh / 2 - h / 2
        w, h = nw, nh
    return warp_affine(img, m, (w, h))


def flip(img, direction="horizontal"):
    return np.ascontiguousarray(img[:, ::-1] if direction == "horizontal" else img[::-1])


def expand_canvas(img, border=0.05, value=1.0):
    h, w = img.shape[:2]
    pad = max(1, int(round(border * max(h, w))))
    out = np.full((h + 2 * pad, w + 2 * pad, img.shape[2]), value, np.float32)
    if img.shape[2] == 4:
        out[:, :, 3] = 1.0
    out[pad:pad + h, pad:pad + w] = img
    return out


# --- region -------------------------------------------------------------------------

def _region_mask(img, box):
    h, w = img.shape[:2]
    m = np.zeros((h, w), np.float32)
    x0, y0, x1, y1 = box
    m[int(round(y0 * h)):max(int(round(y0 * h)) + 1, int(round(y1 * h))),
      int(round(x0 * w)):max(int(round(x0 * w)) + 1, int(round(x1 * w)))] = 1.0
    return m


def edit_region(img, box=(0.25, 0.25, 0.75, 0.75), effect="blur", amount=0.8, inside=False, mask=None):
    """Blur or desaturate outside (default: the background) or inside a region."""
    keep = mask[:, :, 0] if mask is not None and mask.ndim == 3 else mask if mask is not None else _region_mask(img, box)
    if keep.shape[:2] != img.shape[:2]:
        raise ValueError(f"mask is {keep.shape[1]}x{keep.shape[0]} but the image is {img.shape[1]}x{img.shape[0]}")
    if mask is not None and not keep.any():  # e.g. ground found nothing: neither the whole photo nor nothing is meant
        return ToolOutput(img, ["the mask is empty (nothing was found), so the image is unchanged"])
    feather = sampled_gaussian(keep.astype(np.float32), max(1.0, max(img.shape[:2]) / 200))
    target = feather if inside else 1.0 - feather
    color, alpha = split_alpha(img)
    edited = gaussian_blur(color, sigma=1 + 10 * amount) if effect == "blur" else saturation(color, amount=-amount)
    return join_alpha(color * (1 - target[:, :, None]) + edited * target[:, :, None], alpha)


# --- the specs ------------------------------------------------------------------------

def F(name, desc, default, lo, hi, effect="", neutral=0.0, pixels=False):
    return Param(name, "float", desc, default=default, minimum=lo, maximum=hi, effect=effect, neutral=neutral,
                 pixels=pixels)


def _reference_side(img, params):
    return {"reference_side": float(max(img.shape[:2]))}


BOX = Param("box", "box", "region as [x0, y0, x1, y1], fractions of width and height", default=[0.25, 0.25, 0.75, 0.75])

CLASSIC_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("exposure", "Brighten or darken the whole photo in photographic stops.",
             "Use for under- or over-exposed photos. Multiplies the pixel values as stored (display values, not linear "
             "light) by 2^stops.",
             (F("stops", "exposure change in stops", 0.3, -3.0, 3.0, "+1 doubles the pixel values."),),
             exposure, keywords=("exposure", "underexposed", "overexposed", "too dark", "too bright"), moves=Moves("mean_luma"),
             pointwise=True),
    ToolSpec("brightness", "Add or remove a constant amount of brightness.",
             "Use for a small overall lift or drop; exposure is better for large changes.",
             (F("amount", "value added to every channel", 0.05, -0.5, 0.5),),
             brightness, keywords=("brighter", "brighten", "lighter", "darker", "darken", "brightness"), moves=Moves("mean_luma"),
             pointwise=True),
    ToolSpec("contrast", "Increase or decrease global contrast around the mean brightness.",
             "Use for flat, hazy photos (raise) or harsh ones (lower).",
             (F("amount", "relative contrast change", 0.15, -0.9, 2.0, "+0.2 = 20% more contrast."),),
             contrast, keywords=("contrast", "punchier", "flat", "hazy", "pop"),
             pins=lambda img, p: {"pivot": float(luminance(img).mean())}, moves=Moves("rms_contrast"), pointwise=True),
    ToolSpec("gamma", "Apply a gamma curve to brighten or darken midtones.",
             "Brightens midtones (gamma > 1) while keeping black and white points.",
             (F("gamma", "gamma value", 1.2, 0.2, 5.0, "Above 1 brightens midtones.", neutral=1.0),),
             gamma, keywords=("gamma", "midtones"), moves=Moves("mean_luma"), pointwise=True),
    ToolSpec("auto_levels", "Stretch the tonal range so the darkest and brightest pixels reach black and white.",
             "Fixes washed-out or murky photos that do not use the full range.",
             (F("clip_percent", "percent of pixels allowed to clip at each end", 0.5, 0.0, 5.0, neutral=None),),
             auto_levels, keywords=("auto levels", "levels", "washed out", "auto enhance", "auto tone"),
             pins=lambda img, p: {"levels": _levels(img, p["clip_percent"])}, moves=Moves("rms_contrast", follows_wording=False),
             pointwise=True),
    ToolSpec("levels", "Set the black point, white point and midtone gamma (Levels).",
             "Recovers a faded, hazy or matte photo whose blacks are lifted (black point up to the veil), dim "
             "whites (white point down) and murky midtones (gamma); unlike auto_levels the points are given.",
             (F("black", "input level that becomes black", 0.0, 0.0, 0.45, "0.1 pulls a veil of 0.1 back to black."),
              F("white", "input level that becomes white", 1.0, 0.55, 1.0, neutral=1.0),
              F("gamma", "midtone gamma after the points", 1.0, 0.3, 3.0, "Above 1 brightens midtones.", neutral=1.0)),
             levels, keywords=("levels", "black point", "white point", "faded", "matte", "fade", "veil"),
             pointwise=True),
    ToolSpec("highlights_shadows", "Lift shadows and recover highlights separately.",
             "Use for backlit or high-dynamic-range scenes with dark shadows or bright skies.",
             (F("shadows", "how much to lift dark areas", 0.3, -1.0, 1.0),
              F("highlights", "how much to pull down bright areas", 0.0, -1.0, 1.0)),
             highlights_shadows, keywords=("shadows", "highlights", "backlit", "lift shadows", "recover highlights"),
             pins=_reference_side, pixel_pins=("reference_side",), moves=Moves("mean_luma")),
    ToolSpec("tone_curve", "Bend the tone curve at shadows, midtones and highlights.",
             "A fine-grained tone adjustment; an S-curve (shadows < 0, highlights > 0) adds contrast.",
             (F("shadows", "shift of the quarter-tone", 0.0, -1.0, 1.0),
              F("midtones", "shift of the midtone", 0.0, -1.0, 1.0),
              F("highlights", "shift of the three-quarter tone", 0.0, -1.0, 1.0)),
             tone_curve, keywords=("tone curve", "s-curve", "curves"), moves=Moves("mean_luma"), pointwise=True),
    ToolSpec("clahe", "Boost local contrast adaptively (CLAHE) to reveal detail.",
             "Use for foggy, low-detail or unevenly lit photos. Strong settings look HDR-like.",
             (F("clip_limit", "contrast limit per tile", 2.0, 1.0, 8.0, "Higher = stronger local contrast.", neutral=1.0),
              Param("tile", "int", "tiles per side", default=8, minimum=2, maximum=32)),
             clahe, keywords=("local contrast", "clarity", "detail", "dehaze", "fog"),
             pins=_reference_side, pixel_pins=("reference_side",), moves=Moves("sharpness", follows_wording=False)),
    ToolSpec("saturation", "Make colours more or less saturated.",
             "Raise for dull colours, lower for garish ones; -1 gives grayscale.",
             (F("amount", "relative saturation change", 0.2, -1.0, 2.0),),
             saturation, keywords=("saturation", "saturated", "colourful", "colorful", "vivid", "muted", "dull colours"),
             moves=Moves("saturation"), pointwise=True),
    ToolSpec("vibrance", "Boost muted colours more than saturated ones (protects skin tones).",
             "A gentler saturation for people and landscapes.",
             (F("amount", "vibrance change", 0.3, -1.0, 2.0),),
             vibrance, keywords=("vibrance", "vibrant"), moves=Moves("saturation"), pointwise=True),
    ToolSpec("temperature_tint", "Warm up or cool down the colours, and shift green/magenta tint.",
             "Use for a colour cast or for mood (warmer = cosier, cooler = calmer).",
             (F("temperature", "warm (>0) or cool (<0)", 0.2, -1.0, 1.0),
              F("tint", "magenta (>0) or green (<0)", 0.0, -1.0, 1.0)),
             temperature_tint, keywords=("warmer", "warm", "cooler", "cool", "colder", "temperature", "tint"), moves=Moves("warmth"),
             pointwise=True),
    ToolSpec("white_balance", "Remove a colour cast automatically (neutralise the grays and whites).",
             "Use when the photo looks too yellow, blue or green overall.",
             (F("strength", "how far to move to neutral", 0.8, 0.0, 1.0),),
             white_balance, keywords=("white balance", "colour cast", "color cast", "neutral", "yellowish", "bluish"),
             pins=_white_balance_pins, moves=Moves("colour_cast", "down", follows_wording=False), pointwise=True),
    ToolSpec("grayscale", "Turn the photo black and white.",
             "Luminance-preserving conversion; the image keeps three channels.",
             (), grayscale, keywords=("black and white", "grayscale", "greyscale", "monochrome", "b&w"),
             pointwise=True),
    ToolSpec("sepia", "Give the photo an old sepia look.", "A brown monochrome vintage tone.",
             (F("strength", "blend with the original", 1.0, 0.0, 1.0),),
             sepia, keywords=("sepia", "vintage", "old photo", "retro"), moves=Moves("warmth", follows_wording=False),
             pointwise=True),
    ToolSpec("split_toning", "Colour-grade shadows and highlights with two hues.",
             "Cinematic looks, e.g. teal shadows (hue 200) and orange highlights (hue 35).",
             (F("shadow_hue", "hue of the shadows in degrees", 200.0, 0.0, 360.0, neutral=None),
              F("highlight_hue", "hue of the highlights in degrees", 35.0, 0.0, 360.0, neutral=None),
              F("strength", "strength of the grade", 0.3, 0.0, 1.0),
              F("balance", "shift toward highlights (>0) or shadows (<0)", 0.0, -1.0, 1.0, neutral=None)),
             split_toning, keywords=("colour grade", "color grade", "cinematic", "split toning", "teal and orange"),
             pointwise=True),
    ToolSpec("sharpen", "Sharpen detail with an unsharp mask that guards against halos.",
             "Use for slightly soft photos. Only the brightness is sharpened (the colour stays as it came), edges "
             "are not pushed past their neighbours (no halos) and faint noise is not amplified; for real defocus "
             "or motion blur use deconvolve.",
             (F("amount", "strength", 0.5, 0.0, 3.0), F("radius", "blur radius in pixels", 1.5, 0.3, 10.0, neutral=None, pixels=True)),
             sharpen, keywords=("sharpen", "sharper", "crisper", "blurry", "soft"),
             # a deconvolution reads the sharpened edges as a kernel of their own; a second sharpen (in a later
             # step) only steepens what the first steepened: halos, and a JPEG's blocks and rounding raised
             conflicts=("deconvolve", "sharpen"), moves=Moves("sharpness")),
    ToolSpec("denoise", "Reduce noise and grain while keeping edges.",
             "Use for noisy low-light photos; high strength smooths fine texture.",
             (F("strength", "strength", 0.5, 0.0, 1.0),
              F("radius", "half-width of the smoothing window in pixels", 2.0, 0.5, 6.0, neutral=None, pixels=True)),
             denoise, keywords=("denoise", "noise", "grain", "grainy", "noisy"), moves=Moves("noise_sigma", "down", follows_wording=False)),
    ToolSpec("chroma_denoise", "Remove colour speckles (chroma noise) and keep the brightness detail.",
             "Use for colour blotches in shadows or a noisy phone photo; the luminance is not touched, so "
             "it does not soften the picture (use denoise for grain in the brightness).",
             (F("strength", "how much of the colour noise to remove", 0.8, 0.0, 1.0),
              F("radius", "smoothing radius of the colour in pixels", 3.0, 0.5, 10.0, neutral=None, pixels=True)),
             chroma_denoise, keywords=("colour noise", "color noise", "chroma noise", "colour speckles", "blotches")),
    ToolSpec("gaussian_blur", "Blur the whole photo.", "Softens everything; for a soft-focus look.",
             (F("sigma", "blur radius in pixels", 2.0, 0.1, 50.0, pixels=True),),
             gaussian_blur, keywords=("blur the image", "soften", "soft focus"), moves=Moves("sharpness", "down", follows_wording=False)),
    ToolSpec("vignette", "Darken (or lighten) the corners to draw the eye to the centre.",
             "A subtle vignette (0.2-0.4) focuses attention; negative values lighten corners.",
             (F("amount", "darkening at the corners", 0.3, -1.0, 1.0), F("radius", "size of the untouched centre", 0.8, 0.0, 1.0, neutral=None)),
             vignette, keywords=("vignette", "darken the corners", "darken corners"), moves=Moves("corner_ratio", "down")),
    ToolSpec("crop", "Crop to a box.", "Keeps the region [x0, y0, x1, y1] given as fractions of the size.",
             (Param("box", "box", "region as [x0, y0, x1, y1], fractions of width and height", required=True),),
             crop, keywords=("crop to", "cut out"), output="the cropped region", moves_pixels=True),
    ToolSpec("crop_aspect", "Centre-crop to an aspect ratio such as 1:1, 4:3 or 16:9.",
             "Use for 'crop to square' or a target format; zoom > 1 crops tighter.",
             (Param("aspect", "enum", "target aspect W:H", default="1:1",
                    choices=("1:1", "4:3", "3:4", "3:2", "2:3", "16:9", "9:16", "4:5", "5:4")),
              F("zoom", "extra zoom", 1.0, 1.0, 4.0, neutral=None)),
             crop_aspect, keywords=("square", "crop", "aspect", "16:9", "4:3"), output="the cropped image",
             moves_pixels=True),
    ToolSpec("resize", "Resize so the longest side (or both sides) has a given length.",
             "Use for 'resize to 512' or making a thumbnail.",
             (Param("longest_side", "int", "target length in pixels", default=1024, minimum=1, maximum=16384),
              Param("mode", "enum", "keep aspect or force square", default="longest side", choices=("longest side", "square"))),
             resize, keywords=("resize", "scale", "smaller", "larger", "thumbnail", "downscale", "upscale"),
             output="the resized image", moves_pixels=True),
    ToolSpec("rotate", "Rotate by an angle in degrees (counter-clockwise).",
             "Right angles are exact; other angles expand the canvas to keep all pixels when expand is true.",
             (F("angle", "degrees, counter-clockwise", 90.0, -360.0, 360.0, neutral=None),
              Param("expand", "bool", "grow the canvas to fit", default=True)),
             rotate, keywords=("rotate", "turn", "straighten", "degrees"), output="the rotated image",
             moves_pixels=True),
    ToolSpec("flip", "Mirror the photo horizontally or vertically.", "Mirror image.",
             (Param("direction", "enum", "axis", default="horizontal", choices=("horizontal", "vertical")),),
             flip, keywords=("flip", "mirror"), moves_pixels=True),
    ToolSpec("expand_canvas", "Add a border around the photo.", "Adds a uniform border (white by default).",
             (F("border", "border width as a fraction of the longest side", 0.05, 0.0, 1.0, neutral=None),
              F("value", "border gray level (0 black, 1 white)", 1.0, 0.0, 1.0, neutral=None)),
             expand_canvas, keywords=("border", "frame", "padding", "expand canvas"), output="a larger image",
             moves_pixels=True),
    ToolSpec("edit_region", "Blur or desaturate the background (outside a box or mask) or a region.",
             "Keeps the subject in the box sharp and blurs/desaturates the rest (inside=false), or edits only the box.",
             (BOX, Param("effect", "enum", "what to do", default="blur", choices=("blur", "desaturate")),
              F("amount", "strength", 0.8, 0.0, 1.0),
              Param("inside", "bool", "edit inside the box instead of outside", default=False),
              Param("mask", "mask", "a mask from an earlier step ('step:N', e.g. from ground); used instead of the box")),
             edit_region, keywords=("blur the background", "background blur", "bokeh", "desaturate the background")),
)
