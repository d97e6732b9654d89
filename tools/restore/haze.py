"""A veil of light over the whole photo (haze, veiling glare, a fade): ``haze_estimate`` reads its colour and share
with the dark channel prior, ``dehaze`` takes it out in linear light."""
from __future__ import annotations

import numpy as np

from ..imageops import channel_min, luminance, minimum_filter, on_color, resize_longest, split_alpha
from ..photo_io import srgb_decode, srgb_encode
from ..spec import ToolOutput

# --- a veil over the whole photo: haze, veiling glare, a fade in linear light -----------------------------------------
# He, Sun and Tang's haze model (2009), I = J t + A (1 - t), with one transmission t for the whole photo: light from
# the airlight A (haze, a lens's stray light, a scan's flare) laid evenly over the scene J. In a scene nearly every
# patch has a pixel near black in some channel (the dark channel prior), so the floor of the dark channel of I / A is
# the veil's share 1 - t. Removing it in linear light, where the veil was added, keeps the scene's own tones; a black
# point in display values (levels) takes the same floor out of every tone alike and darkens the midtones with it.
DARK_PATCH = 15  # px on a <=256 px copy: the dark channel's patch (metrics' veil statistic reads it too)
HAZE_SIDE = 256
MAX_VEIL = 0.9  # never read more than this share of the light as veil (a photo of fog itself)
MAX_STRETCH = 2.0  # nor take out so much that the tonal span more than doubles: a flat scene may be flat by nature


def patch_minimum(planes: np.ndarray, patch: int = DARK_PATCH) -> np.ndarray:
    """Each channel's minimum over every patch x patch square (``imageops.minimum_filter``). Their minimum over the
    channels is the dark channel (He et al.)."""
    return minimum_filter(planes, patch)


def _decode(x: np.ndarray) -> np.ndarray:
    return srgb_decode(np.clip(x, 0.0, 1.0))


def _encode(x: np.ndarray) -> np.ndarray:
    return srgb_encode(np.clip(x, 0.0, 1.0))


def _luma(values: np.ndarray) -> float:
    """The luminance of one colour (a value per channel)."""
    return float(luminance(np.asarray(values, np.float32).reshape(1, 1, -1))[0, 0])


def haze_estimate(img: np.ndarray) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(airlight, veil) of a photo (colour channels, display values), per channel in linear light. The airlight: the
    mean of the pixels brightest in the dark channel (He et al.: where the veil is thickest, or the scene's whites). The
    veil: each channel's floor (the 1st percentile of its minimum over 15 px patches, as metrics' veil statistic reads
    the dark channel's) over the airlight, the share of that channel's light the veil holds. Read per channel, the
    veil's own colour comes out of the shadows; read through the airlight's colour, which is the whites' as often as
    the veil's, the shadows were left tinted (a warm airlight read on the astronaut's suit left her helmet brown).
    The airlight is never read dimmer than the photo's mean luminance. Never so much that the tonal span more than
    doubles (_within_stretch)."""
    lin = _decode(resize_longest(img, HAZE_SIDE))
    minima = patch_minimum(lin)
    dark = channel_min(minima)
    air = np.maximum(lin[dark >= np.percentile(dark, 99.9)].mean(axis=0), 1e-3)
    # taking a veil out never brightens a photo on the whole: with one transmission, the result's mean stays at most
    # the photo's exactly when the airlight is no dimmer than that mean. Where the dark channel is about as flat as
    # its floor (a uniform veil over a dark scene, the deep field), its brightest patches are veil over dark ground,
    # not the airlight, and read as one the transmission came out near 0: a gain of 3-5 that raised a JPEG's rounding
    mean = float(luminance(lin).mean())
    if _luma(air) < mean:
        air = air * (mean / _luma(air))
    veil = np.clip(np.percentile(minima, 1.0, axis=(0, 1)) / air, 0.0, MAX_VEIL)
    return tuple(float(a) for a in air), tuple(float(v) for v in veil * _within_stretch(lin, air, veil))


def _within_stretch(lin: np.ndarray, air: np.ndarray, veil: np.ndarray) -> float:
    """The share of ``veil`` (1, or less) whose removal leaves the tonal span (0.5th to 99.5th percentile of the
    luminance, in display values, as metrics reads it) at most MAX_STRETCH times what it was."""
    black, white = np.percentile(_encode(luminance(lin)), [0.5, 99.5])
    ends = _decode(np.array([black, white], np.float32))
    a, veil_light = _luma(air), _luma(air * veil)  # luminance of the airlight and of the veil

    def span(k: float) -> float:
        lo, hi = _encode((ends - k * veil_light) / (1.0 - k * veil_light / a))
        return float(hi - lo)

    allowed = MAX_STRETCH * float(white - black)
    if span(1.0) <= allowed:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(20):  # the span grows with the share taken out
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if span(mid) <= allowed else (lo, mid)
    return lo


def dehaze(img, strength=1.0, *, airlight=None, veil=None):
    """The veil (haze_estimate, or the ``airlight`` and ``veil`` measured on the whole photo) taken out in linear light:
    J = (I - A v) / t, the offset A v each channel's own (the veil's colour), t one transmission for all of them (the
    share of the airlight's luminance the veil leaves), so the scene's colours are not stretched channel by channel (a
    bluish haze over the grey moon, with a gain per channel, came out blue). A scene with no veil (every channel
    reaching black somewhere) is unchanged."""
    def f(c):
        air, share = haze_estimate(c) if airlight is None or veil is None else (airlight, veil)
        v = np.clip(strength * np.asarray(share, np.float32)[:c.shape[2]], 0.0, MAX_VEIL)
        if not (v > 0).any():
            return c
        a = np.asarray(air, np.float32)[:c.shape[2]]
        # one transmission for every channel, as in He et al.'s model (the veil's colour is all in the offset):
        # the share of the airlight's luminance the veil holds
        t = 1.0 - _luma(a * v) / _luma(a)
        return _encode((_decode(c) - a * v) / max(t, 1.0 - MAX_VEIL))
    return ToolOutput(on_color(f)(img), [f"veil taken out in linear light (strength {strength:g})"])


def _haze_pins(img, params):
    """The airlight and veil measured on the whole photo (or its reduced copy), for its crops."""
    air, veil = haze_estimate(split_alpha(img)[0])
    return {"airlight": air, "veil": veil}
