"""Photos as phones save them, with strong scene light: the cases a photographer means as they are, and controls
with a wrong white balance on surfaces that should be neutral.

No project photo has a sunset, golden-hour light or a vivid flower, and no defect family makes one, so these are
built: a real photo of photoset (or a drawn flower) is lit in linear light by the scene's light, given a sky where
the scene has one, then rendered as a phone renders (a tone curve, a saturation boost, a sharpen after its noise
reduction) and saved as a 4:2:0 JPEG at a phone's quality. Every case is drawn from its seed: the same seed, the same
file. Seeds under HELD_APART were looked at while the perceiver's rules for them were written; the others were not.

Kinds meant as they are (MEANT): "sunset", "golden-hour", "blue-sky", "vivid-flower", "daylight", "hdr-daylight" (a
daylight scene through the phone's local tone mapping: its shadows lifted, its highlights kept).
Controls (CONTROLS), each a wrong white balance that a photographer corrects: "tungsten-preset" (a daylight scene
shot with the camera set for a lamp: blue over the whites) and "daylight-preset-indoors" (a room under lamps with
the camera set for daylight: orange over the whites).
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from defects import save_as_jpeg, to_linear, to_srgb
from photoset import load

MEANT = ("sunset", "golden-hour", "blue-sky", "vivid-flower", "daylight", "hdr-daylight")
CONTROLS = ("tungsten-preset", "daylight-preset-indoors")
KINDS = MEANT + CONTROLS
# the order each kind's generator is seeded in: a kind added later goes last, so the others draw the same cases
_DRAWN = ("sunset", "golden-hour", "blue-sky", "vivid-flower", "daylight", "tungsten-preset",
          "daylight-preset-indoors", "hdr-daylight")
# the photos a scene is built on: photoset's colour photos with a ground and things in it
GROUNDS = ("astronaut", "rocket", "coffee", "chelsea", "stereo_motorcycle", "I04", "I06", "I08")
HELD_APART = 1000  # seeds from here on were never looked at while the rules were written
SIDE = 512  # the longest side, the defect space's


@dataclass(frozen=True)
class PhoneCase:
    name: str  # "<kind>:<seed>"
    kind: str
    ground: str  # the photo it is built on ("" for a drawn flower)
    meant: bool  # True: the photographer means it as it is; False: a white balance to correct
    image: np.ndarray  # float32 HxWx3 in 0..1, decoded from the JPEG the phone saved
    truth: np.ndarray  # what the photographer meant: the image itself, or a control's scene under the right preset


def cases(seeds: range | list[int], kinds: tuple[str, ...] = KINDS) -> list[PhoneCase]:
    """One case of each kind for each seed."""
    return [case(kind, seed) for seed in seeds for kind in kinds]


@lru_cache(maxsize=256)
def case(kind: str, seed: int) -> PhoneCase:
    """The case of ``kind`` drawn from ``seed`` (kind's index and the seed seed its generator)."""
    if kind not in KINDS:
        raise ValueError(f"{kind}: not a phone case (one of {', '.join(KINDS)})")
    rng = np.random.default_rng([_DRAWN.index(kind), seed])
    ground = "" if kind == "vivid-flower" else GROUNDS[int(rng.integers(len(GROUNDS)))]
    scene, preset = _SCENES[kind]
    linear = scene(rng, ground)
    boost = 1.0 if kind == "sunset" else 1.05 + 0.25 * float(rng.random())  # a control's two renders share it
    render = lambda x: _phone(x, np.random.default_rng([_DRAWN.index(kind), seed, 1]), boost,  # noqa: E731
                              metered=kind == "vivid-flower")
    if preset is None:
        image = render(linear)
        return PhoneCase(f"{kind}:{seed}", kind, ground, True, image, image)
    truth = render(linear)
    image = render(linear * np.array(preset, np.float32) * float(np.random.default_rng(seed).uniform(0.9, 1.1)))
    return PhoneCase(f"{kind}:{seed}", kind, ground, False, image, truth)


# --- scenes, in linear light ----------------------------------------------------------------------------------------

def _ground(name: str) -> np.ndarray:
    return to_linear(load(name, SIDE).astype(np.float32))


def _sky(h: int, w: int, top: np.ndarray, horizon: np.ndarray, rng) -> np.ndarray:
    """A sky from ``top`` to ``horizon`` colour, a little uneven."""
    t = np.linspace(0.0, 1.0, h, dtype=np.float32)[:, None, None] ** float(rng.uniform(0.6, 1.4))
    sky = top * (1 - t) + horizon * t
    return np.broadcast_to(sky, (h, w, 3)).astype(np.float32) * (1 + 0.03 * _smooth_noise(h, w, rng)[..., None])


def _smooth_noise(h: int, w: int, rng, scale: float = 24.0) -> np.ndarray:
    from scipy.ndimage import gaussian_filter

    n = gaussian_filter(rng.normal(size=(h, w)).astype(np.float32), scale)
    return n / max(float(np.abs(n).max()), 1e-6)


def _with_sky(photo: np.ndarray, sky: np.ndarray, horizon: float) -> np.ndarray:
    """The photo's lower part under a sky down to ``horizon`` (a share of the height)."""
    h = photo.shape[0]
    cut = int(h * horizon)
    ramp = np.clip(np.arange(h, dtype=np.float32) - cut, 0, 1)[:, None, None]  # a horizon is sharp
    return sky * (1 - ramp) + photo * ramp


def _blue_sky(rng, ground: str) -> np.ndarray:
    photo = _ground(ground)
    h, w = photo.shape[:2]
    top = np.array([0.08, 0.2, 0.6], np.float32) * rng.uniform(0.8, 1.1)
    horizon = np.array([0.42, 0.58, 0.86], np.float32) * rng.uniform(0.85, 1.05)
    sky = _sky(h, w, top, horizon, rng)
    # white clouds in half the skies (grey under a clean white balance), a clear sky in the others
    clouds = np.clip(_smooth_noise(h, w, rng, 14.0) * 2.2 - float(rng.uniform(0.6, 1.2)), 0, 1)[..., None]
    clouds = clouds * float(rng.integers(2))
    sky = sky * (1 - clouds) + 0.9 * clouds
    return _with_sky(photo, sky, float(rng.uniform(0.35, 0.55)))


def _sunset(rng, ground: str) -> np.ndarray:
    photo = _ground(ground)
    h, w = photo.shape[:2]
    horizon_colour = np.array([1.0, float(rng.uniform(0.32, 0.55)), float(rng.uniform(0.06, 0.16))], np.float32)
    top = np.array([float(rng.uniform(0.12, 0.3)), 0.06, float(rng.uniform(0.12, 0.3))], np.float32)
    cut = float(rng.uniform(0.5, 0.7))
    sky = _sky(h, w, top, horizon_colour * 0.9, rng)
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    sx, sy = float(rng.uniform(0.2, 0.8)) * w, cut * h - 0.05 * h
    d = np.hypot(xx - sx, yy - sy) / w
    sky = sky + (np.exp(-d / 0.08) * 1.5)[..., None] * np.array([1.0, 0.75, 0.4], np.float32)
    lit = photo * np.array([1.0, 0.55, 0.28], np.float32) * float(rng.uniform(0.12, 0.3))  # nearly a silhouette
    return _with_sky(lit, sky, cut)


def _golden_hour(rng, ground: str) -> np.ndarray:
    photo = _ground(ground)
    h, w = photo.shape[:2]
    warm = np.array([1.0, float(rng.uniform(0.7, 0.8)), float(rng.uniform(0.42, 0.55))], np.float32)
    fill = np.array([0.8, 0.9, 1.1], np.float32)  # the shadows lit by the blue sky
    lum = photo.mean(axis=2, keepdims=True)
    lit = np.clip(lum / max(float(np.percentile(lum, 90)), 1e-3), 0, 1) ** 0.5  # where the sun falls
    side = np.linspace(float(rng.uniform(0.5, 1.0)), 1.0, w, dtype=np.float32)[None, :, None]
    light = fill * (1 - lit * side) + warm * 1.3 * lit * side
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    glow = np.exp(-np.hypot(xx - w * float(rng.uniform(0.6, 1.0)), yy) / (0.5 * w))[..., None]
    return photo * light + 0.12 * glow * warm


def _daylight(rng, ground: str) -> np.ndarray:
    return _ground(ground)


def _hdr_daylight(rng, ground: str) -> np.ndarray:
    """A daylight scene as a phone's HDR mode tone-maps it: a smooth gain (up to 6x) lifts the shadows, the highlights
    kept (the gain falls to 1 at the 90th percentile of the scene's large-scale brightness)."""
    from scipy.ndimage import gaussian_filter

    photo = _ground(ground)
    lum = photo.mean(axis=2)
    base = gaussian_filter(lum, lum.shape[1] / 16) + 1e-3
    gain = np.clip((base / float(np.percentile(base, 90))) ** -float(rng.uniform(0.3, 0.6)), 1.0, 6.0)
    return photo * gain[..., None].astype(np.float32)


def _vivid_flower(rng, ground: str) -> np.ndarray:
    """A close-up of a flower: saturated petals (a channel near clipping) over a blurred green background."""
    h, w = 384, 512
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    # leaves out of focus, with the deep shadows between them
    background = np.array([0.05, 0.16, 0.03], np.float32) * (1 + 0.9 * _smooth_noise(h, w, rng, 30.0)[..., None])
    petal = [np.array(c, np.float32) for c in ((0.9, 0.02, 0.3), (0.95, 0.1, 0.02), (0.95, 0.55, 0.0),
                                                (0.45, 0.05, 0.8), (0.9, 0.2, 0.45))][int(rng.integers(5))]
    cx, cy = w * float(rng.uniform(0.4, 0.6)), h * float(rng.uniform(0.4, 0.6))
    r, a = np.hypot(xx - cx, yy - cy), np.arctan2(yy - cy, xx - cx)
    n = int(rng.integers(5, 9))
    length = h * float(rng.uniform(0.4, 0.56)) * (0.55 + 0.45 * np.abs(np.cos(a * n / 2)))
    inside = np.clip((length - r) / 3.0, 0, 1)[..., None]
    shade = (0.55 + 0.45 * (r / np.maximum(length, 1))[..., None]) * (1 + 0.15 * _smooth_noise(h, w, rng, 3.0)[..., None])
    centre = np.clip((h * 0.07 - r) / 2.0, 0, 1)[..., None]
    img = background * (1 - inside) + petal * shade * inside
    return img * (1 - centre) + np.array([0.8, 0.6, 0.05], np.float32) * centre


# kind -> (the scene in linear light, the gains of a wrong white-balance preset on it or None)
_SCENES = {"sunset": (_sunset, None), "golden-hour": (_golden_hour, None), "blue-sky": (_blue_sky, None),
           "vivid-flower": (_vivid_flower, None), "daylight": (_daylight, None), "hdr-daylight": (_hdr_daylight, None),
           # a camera set for tungsten under daylight: red down, blue up, about 2x apart (3200 K against 5500 K)
           "tungsten-preset": (_blue_sky, (0.72, 1.0, 1.45)),
           # a room under lamps (2900 K) photographed with the camera set for daylight
           "daylight-preset-indoors": (_daylight, (1.35, 1.0, 0.6))}


# --- the phone's rendering --------------------------------------------------------------------------------------------

def _phone(linear: np.ndarray, rng, boost: float, metered: bool = False) -> np.ndarray:
    """As a phone renders and saves: exposed for the scene's highlights (``metered``: for its average, so a bright
    subject over a dark ground clips in its strongest channel), a filmic curve, saturation raised, sharpened after its
    noise reduction, a 4:2:0 JPEG at quality 85-95."""
    from scipy.ndimage import gaussian_filter

    lum = linear.mean(axis=2)
    x = linear * ((0.25 / max(float(lum.mean()), 1e-3)) if metered else (0.75 / max(float(np.percentile(lum, 98)), 1e-3)))
    x = x + rng.normal(0.0, 0.004, x.shape).astype(np.float32)  # the sensor's noise ...
    x = gaussian_filter(x, (0.7, 0.7, 0))  # ... and the demosaic and noise reduction that smooth it
    x = to_srgb(np.clip(x, 0, 1))
    x = np.clip(x + 0.12 * (x - 0.5) * (1 - np.abs(2 * x - 1)), 0, 1)  # a gentle S
    grey = x.mean(axis=2, keepdims=True)
    x = np.clip(grey + (x - grey) * boost, 0, 1)
    y = x.mean(axis=2, keepdims=True)
    x = np.clip(x + float(rng.uniform(0.4, 0.9)) * (y - gaussian_filter(y, (1.0, 1.0, 0))), 0, 1)
    return save_as_jpeg(x, int(rng.integers(85, 96)))  # Pillow's 4:2:0, as phones save
