"""What the agents measure on a photo: one table of metrics (what each is called, which side of it is a defect,
how a request phrases it), and the statistics that read them (tone and colour on a small copy, noise, sharpness,
the JPEG grid and BRISQUE/NIQE on native-resolution crops, structure similarity between two images).

The reward bands them (``reward.py``), the perceiver finds defects in them (``defects/``, walked by
``agents/photoagent/perceiver.py``), the rule brain phrases and checks requests with them (``agents/rule_brain/``,
``measure.py``).
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Callable, Literal, Mapping

import numpy as np
from scipy import ndimage

from ...tools.imageops import (STATISTICS_SIDE, channel_max, channel_min, correlate_separable, illuminant_estimate,
                              laplacian, luminance, maximum_filter, minimum_filter, neutral_evidence, per_plane,
                              resize, resize_longest, sampled_gaussian, sobel, to_rgb)
from ...tools.restore.banding import banding_sigma
from ...tools.restore.fringes import fringe_scales
from ...tools.restore.haze import DARK_PATCH, patch_minimum
from ...tools.restore.impulses import impulse_share
from ...tools.restore.jpeg import grid_measures
from ...tools.restore.levels import level_step


@dataclass(frozen=True)
class Metric:
    """One statistic as the agents read it."""

    name: str
    label: str  # what it means, in a trace or a critic's answer
    defect: Literal["low", "high", "band"] | None = None  # which side is a defect: too little, too much, either
    banded: bool = False  # the fitted reward scores it through a band (its component reads it)
    more: str = ""  # how a request asks for more of it ("brighter") ...
    less: str = ""  # ... and for less ("darker")
    min_change: float = 0.0  # the smallest change a rule critic counts as done (0: a critic does not check it)


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("white_level", "brightest tones (99.5th percentile)", "low", True),
    Metric("black_level", "darkest tones (0.5th percentile)", "high", True),
    Metric("mean_luma", "brightness", "band", True, "brighter", "darker", 0.02),
    Metric("clip_bright", "share of pixels blown to white", "high", True),
    Metric("clip_dark", "share of pixels crushed to black", "high", True),
    Metric("rms_contrast", "contrast", "band", True, "higher in contrast", "lower in contrast", 0.01),
    Metric("colourfulness", "colour spread", "band", True),
    Metric("colour_cast", "colour cast", "high", True, "more tinted", "more neutral in colour", 0.01),
    Metric("sharpness", "sharpness", "band", True, "sharper", "softer", 0.005),
    Metric("noise_sigma", "noise", "high", True, "noisier", "less noisy", 0.0005),
    Metric("brisque", "BRISQUE", "high", True),
    Metric("niqe", "NIQE", "high", True),
    Metric("veil", "dark-channel floor over the whites (a veil)", "high"),
    Metric("chroma_noise", "colour noise", "high"),
    Metric("impulses", "share of isolated specks (salt and pepper, dead pixels)", "high"),
    Metric("banding", "row banding (a sensor's readout stripes), standard deviation", "high"),
    Metric("fringes", "colour fringes (red or blue magnified apart from green), % of the half-diagonal", "high"),
    Metric("grid_step", "JPEG grid step", "high"),
    # what a critic checks but no reward scores: a preference, not a defect
    Metric("saturation", "saturation", None, False, "more saturated", "less saturated", 0.01),
    Metric("warmth", "warmth", None, False, "warmer", "cooler", 0.01),
    Metric("corner_ratio", "corner-to-centre brightness", None, False, "lighter at the corners",
           "darker at the corners", 0.02),
)}
CLASSIC_IQA = ("brisque", "niqe")
# What a tone or colour curve (ToolSpec.pointwise) moves without making or removing any of it: the no-reference quality
# scores and the JPEG grid's step (a curve scales the blocks' steps as it scales every other detail). A search state
# with curves among its edits is read with these of its edits without the curves (Reward.score's held_readings).
HELD_READINGS = CLASSIC_IQA + ("grid_step",)
GAMUT_CHROMA = 0.25  # gamut_clipped's colourful pixels: their channels this far apart


# The limits on these readings past which a photo has a defect are the defects' own (defects/: one module each).
COARSE_CHROMA_WEIGHT = 0.6  # the 2x2-block reading's weight (set on clean and over-processed photos: _chroma_noise)
BLOTCH_BLOCK = 4  # px: the blotches are read on the means of 4x4 blocks, where fine noise has gone
BLOTCH_WINDOW = 5  # blocks: the neighbourhood whose colours should lie along one line
# the share of those neighbourhoods, the flattest in luminance, that the blotches are read in: a scene's colours meet
# where its tones change too (a painted pattern's three colours at a corner spread two ways, and an edge runs through
# them), while noise lies on flat ground as on edges
BLOTCH_FLAT_SHARE = 0.5
VEIL_PATCH = DARK_PATCH
METRIC_SIDE = STATISTICS_SIDE  # global statistics read a copy at most this long (the copy a white balance reads)
# an edge's width (edge_width): read over this window (px), on the steepest share of the pixels whose range there is at
# least this, where there are at least this many
EDGE_WINDOW, EDGE_SHARE, EDGE_CONTRAST, EDGE_PIXELS = 11, 0.02, 0.1, 20
# ... read only on a photo whose fine detail (sharpness) is under this: the blur rule asks the width of no other
# (defects/blur.py's BLUR_SHARPNESS, which a test keeps at or under it), so a sharp photo's states read no edges
EDGES_UNDER = 0.9
TEXTURE_SIDE = 192  # side of the native-resolution crops that noise, sharpness, BRISQUE and NIQE read
TEXTURE_CENTRES = ((0.3, 0.3), (0.7, 0.3), (0.3, 0.7), (0.7, 0.7))  # fixed places, so every candidate is read alike


def texture_boxes(h: int, w: int) -> list[tuple[int, int, int]]:
    """Where ``texture_crops`` cuts a photo of h x w: (x0, y0, side) for each crop."""
    side = max(8, min(TEXTURE_SIDE, h // 2, w // 2)) if min(h, w) >= 16 else min(h, w)
    return [(int(np.clip(round(cx * w - side / 2), 0, w - side)), int(np.clip(round(cy * h - side / 2), 0, h - side)),
             side) for cx, cy in TEXTURE_CENTRES]


def texture_crops(img: np.ndarray) -> list[np.ndarray]:
    """Four native-resolution crops at fixed places (the same places on every candidate of a photo)."""
    return [np.ascontiguousarray(img[y0:y0 + side, x0:x0 + side]) for x0, y0, side in texture_boxes(*img.shape[:2])]


def global_statistics(img: np.ndarray, fringes: float | None = None) -> dict[str, float]:
    """Tone and colour statistics of a float image, on a <=256 px copy. ``fringes``: the lens's colour fringes where
    the caller knows them (a search state whose edits moved no pixel has its photo's), else read here."""
    small = resize_longest(img, METRIC_SIDE)
    lum = luminance(small).astype(np.float32)
    rgb = to_rgb(small)
    black, white = np.percentile(lum, [0.5, 99.5])
    is_gray = float(np.abs(rgb[..., 0] - rgb[..., 1]).mean() + np.abs(rgb[..., 1] - rgb[..., 2]).mean() < 0.004)
    log_rb, confidence = illuminant_estimate(rgb) if not is_gray else (np.zeros(2), 0.0)
    cast = float(np.linalg.norm(log_rb))
    neutral, at_cast = neutral_evidence(rgb, log_rb) if not is_gray else (0.0, 0.0)
    top, bottom = channel_max(rgb), channel_min(rgb)  # each pixel's brightest and darkest channel
    dark = patch_minimum(bottom, VEIL_PATCH)  # the dark channel
    return {
        "mean_luma": float(lum.mean()),
        "rms_contrast": float(lum.std()),
        "black_level": float(black),
        "white_level": float(white),
        # the brightest colours' brightest channel: a saturated red at full red has a dim luminance but is bright
        "channel_white": float(np.percentile(top, 99.5)),
        "clip_dark": float((lum <= 0.01).mean()),
        # the dark channel's floor over the white level: a fade or haze over everything
        "veil": float(np.percentile(dark, 1.0) / max(float(white), 0.05)),
        "clip_bright": float((lum >= 0.99).mean()),
        "colourfulness": _colourfulness(rgb),
        "gamut_clip": gamut_clipped(top, bottom),
        # the cast counts only as far as the illuminant estimators agree on it
        "colour_cast": cast * confidence,
        "cast_red": float(log_rb[0]),
        "cast_blue": float(log_rb[1]),
        "cast_confidence": confidence,
        # the grey surfaces: midtone shares still neutral, and at the estimated cast (the perceiver's evidence that a
        # cast is the light's, not a coloured object's)
        "neutral_share": neutral,
        "cast_share": at_cast,
        # lateral chromatic aberration: the larger of red's and blue's magnification apart from green, in % (the
        # fringe at the corners over the half-diagonal); a scale, so read on the copy as on the photo
        "fringes": (0.0 if is_gray else 100.0 * max(abs(k) for k in fringe_scales(small))) if fringes is None
        else fringes,
        "is_gray": is_gray,
    }


def texture_statistics(crops: list[np.ndarray]) -> dict[str, float]:
    """Noise and sharpness at native resolution, from the texture crops."""
    return _texture_from([crop_readings(crops)])


def crop_readings(crops: list[np.ndarray]) -> dict[str, list]:
    """What ``texture_statistics`` reads on each crop, in the crops' order (None where a crop gives no reading): the
    part one thread can read on some crops while another reads the others (``_texture_from`` joins them)."""
    lums = [luminance(c).astype(np.float32) for c in crops]
    by_size: dict[tuple[int, ...], list[int]] = {}  # the crops have one size, except in odd cases
    for i, x in enumerate(lums):
        by_size.setdefault(x.shape, []).append(i)
    noise, sharpness = [0.0] * len(lums), [0.0] * len(lums)
    for same in by_size.values():  # the filters take crops of one size in one call
        planes = [lums[i] for i in same]
        for i, sigma, sharp in zip(same, _noise_sigmas(planes), _sharpnesses(planes)):
            noise[i], sharpness[i] = sigma, sharp
    colour = [c.ndim == 3 and c.shape[2] >= 3 for c in crops]
    # the JPEG grid, wherever it falls in each crop
    grids = [grid_measures(x) for x in lums]
    return {"lum": lums, "noise": noise, "sharpness": sharpness,
            # colour noise on red minus blue, where luminance detail mostly cancels
            "chroma": [_chroma_noise(c) if is_colour and min(c.shape[:2]) >= 3 else None
                       for c, is_colour in zip(crops, colour)],
            "blotches": [_chroma_blotches(c) if is_colour else None for c, is_colour in zip(crops, colour)],
            # green alone (or the grey): a posterised photo has too few levels in every channel
            "level_step": [level_step(c[:, :, min(1, c.shape[2] - 1)] if c.ndim == 3 else c) for c in crops],
            "impulses": [impulse_share(x) for x in lums],
            "blocks": [ratio if min(x.shape) >= 16 else 1.0 for x, (ratio, _) in zip(lums, grids)],
            "steps": [step for _, step in grids]}


def _texture_from(parts: list[dict[str, list]]) -> dict[str, float]:
    """``texture_statistics`` from ``crop_readings`` of the crops in turn (each part a run of them, in order)."""
    read = {k: [v for part in parts for v in part[k]] for k in parts[0]}
    lums = read["lum"]
    first = {}  # a crop size's first place: the mean of the sharpnesses is summed by size, as the filters read them
    for i, x in enumerate(lums):
        first.setdefault(x.shape, i)
    by_size = sorted(range(len(lums)), key=lambda i: first[lums[i].shape])
    chroma = [x for x in read["chroma"] if x is not None] or [0.0]
    blotches = [x for x in read["blotches"] if x is not None] or [0.0]
    sharpness = float(np.mean([read["sharpness"][i] for i in by_size]))
    # medians, so one busy crop does not decide
    out = {"noise_sigma": float(np.median(read["noise"])), "chroma_noise": float(np.median(chroma)),
           "chroma_blotches": float(np.median(blotches)),
           "level_step": float(np.median(read["level_step"])),
           "impulses": float(np.mean(read["impulses"])),
           # rows shared by the crops in pairs: texture_crops cuts them at fixed places, in this order
           "banding": banding_sigma(lums),
           "sharpness": sharpness,
           "blockiness": float(np.median(read["blocks"])), "grid_step": float(np.median(read["steps"]))}
    if sharpness < EDGES_UNDER:  # a crop with no edge gives no width; with none anywhere, the widest a crop can read
        widths = [x for x in map(edge_width, lums) if x is not None]
        out["edge_width"] = float(np.median(widths or [TEXTURE_SIDE]))
    return out


def raw_statistics(img: np.ndarray, crops: list[np.ndarray] | None = None, texture: bool = True,
                   iqa: tuple[str, ...] = CLASSIC_IQA, known: Mapping[str, float] | None = None,
                   pool: Executor | None = None) -> dict[str, float]:
    """Every raw statistic the components read: tone and colour on the copy, and (``texture``) noise and
    sharpness plus the ``iqa`` scores on the native-resolution crops (``crops``, or four taken from ``img``).
    ``known``: statistics already measured on this same image (the search's perceiver reads them too);
    ``pool``: a spare thread (``spare_thread``) that reads all the texture crops but the last, and BRISQUE, while this
    one reads the global statistics, the last crop and NIQE (numpy, torch and OpenCV let go of the interpreter in their
    loops, so two cores share the work; on 192 px crops the shares are about even: some 4 ms a crop, 7 the global
    statistics, 9 BRISQUE and 10 NIQE). The same values either way."""
    raw = dict(known or {})
    iqa = tuple(k for k in iqa if k not in raw)
    texture = texture and "noise_sigma" not in raw
    if (texture or iqa) and crops is None:
        crops = texture_crops(img)
    here: dict[str, Callable[[], object]] = {}
    aside: dict[str, Callable[[], object]] = {}
    if "mean_luma" not in raw:
        here["global"] = lambda: global_statistics(img, raw.get("fringes"))
    if texture:
        split = len(crops) - 1 if pool is not None and len(crops) > 1 else 0
        if split:
            aside["crops"] = lambda: crop_readings(crops[:split])
        here["last crops"] = lambda: crop_readings(crops[split:])
    brisque_aside = pool is not None and "brisque" in iqa and (here or "niqe" in iqa)
    # NIQE hands its coarse scale to the spare thread only where that has nothing else to do
    scores = _iqa_parts(mosaic(crops), iqa, pool if not (aside or brisque_aside) else None) if iqa else {}
    for name, score in scores.items():
        (aside if name == "brisque" and brisque_aside else here)[name] = score
    elsewhere = pool.submit(lambda: {k: part() for k, part in aside.items()}) if aside else None
    done = {k: part() for k, part in here.items()}
    if elsewhere is not None:
        done.update(elsewhere.result())
    # in the order the statistics are listed: global, texture, then the scores
    if "global" in done:
        raw.update(done["global"])
    if texture:
        raw.update(_texture_from([done[k] for k in ("crops", "last crops") if k in done]))
    raw.update({name: done[name] for name in scores})
    raw.update(known or {})  # what the caller knows stands (posterisation read on the photo as it came: photo_levels)
    return raw


def image_statistics(img: np.ndarray, crops: list[np.ndarray] | None = None,
                     pool: Executor | None = None, known: Mapping[str, float] | None = None) -> dict[str, float]:
    """Raw statistics of a float image (any size): tone and colour on a <=256 px copy, noise and sharpness on
    native-resolution crops (``crops``, or four taken from ``img`` itself); ``pool`` and ``known`` as for
    raw_statistics."""
    return raw_statistics(img, crops, iqa=(), known=known, pool=pool)


def _colourfulness(rgb: np.ndarray) -> float:
    # Hasler & Suesstrunk (2003), spread term only: a global cast should not count as colour.
    rg = rgb[..., 0] - rgb[..., 1]
    yb = 0.5 * (rgb[..., 0] + rgb[..., 1]) - rgb[..., 2]
    return float(math.sqrt(rg.var() + yb.var()))


def gamut_clipped(top: np.ndarray, bottom: np.ndarray) -> float:
    """The share of the colourful pixels (channels GAMUT_CHROMA or more apart) whose darkest channel is at 0, from each
    pixel's brightest and darkest channel (imageops.channel_max, channel_min): saturation raised in display values
    pushes a strong colour's weakest channel below what the file can hold, while a scene's own vivid colours keep it
    inside. A brightest channel at 1 is not counted: that is the exposure's (a phone exposing a red subject in sun)."""
    colourful = top - bottom > GAMUT_CHROMA
    count = np.count_nonzero(colourful)
    if not count:
        return 0.0
    return float(np.count_nonzero((bottom <= 1 / 255) & colourful) / count)


def _sharpnesses(lums: list[np.ndarray]) -> list[float]:
    """Fine detail relative to the local contrast, of each luminance (one size): blur lowers it, a tone change
    does not."""
    return [float(lap.std() / (lum.std() + 0.02)) for lap, lum in zip(per_plane(laplacian, lums), lums)]


def edge_width(lum: np.ndarray) -> float | None:
    """How many px the strongest edges of a luminance take to rise: the local range (EDGE_WINDOW) over the gradient,
    the median over the steepest EDGE_SHARE of the pixels whose range is at least EDGE_CONTRAST (None: no such edge).

    A blur spreads an edge whatever the photo's texture was (about 2.5 sigma for a Gaussian); a phone's photo, its
    fine detail smoothed by its noise reduction, keeps its edges steep, since it sharpens them."""
    if min(lum.shape) < EDGE_WINDOW:
        return None
    grad = np.hypot(sobel(lum, 1, 0), sobel(lum, 0, 1)) / 8.0  # per px
    span = maximum_filter(lum, EDGE_WINDOW, "reflect") - minimum_filter(lum, EDGE_WINDOW, "reflect")
    edges = (grad >= np.percentile(grad, 100 * (1 - EDGE_SHARE))) & (grad > 0) & (span > EDGE_CONTRAST)
    if np.count_nonzero(edges) < EDGE_PIXELS:
        return None
    return float(np.median(span[edges] / grad[edges]))


def _chroma_sigma(crop: np.ndarray, flat_only: bool = False) -> float:
    """Colour noise: sigma of red minus blue, from the median of Immerkaer's Laplacian difference (a robust
    estimate: the colour planes of a clean photo are smooth, so edges are few and the median ignores them). With
    ``flat_only``, only where the luminance is flattest (its gradient below the median), as for the luminance's."""
    diff = (crop[:, :, 0] - crop[:, :, 2]).astype(np.float32)
    conv = np.abs(correlate_separable(diff, (1.0, -2.0, 1.0), (1.0, -2.0, 1.0))[1:-1, 1:-1])
    if flat_only:
        lum = luminance(crop).astype(np.float32)
        lum = lum[:, :, 0] if lum.ndim == 3 else lum
        grad = (sobel(lum, 1, 0) ** 2 + sobel(lum, 0, 1) ** 2)[1:-1, 1:-1]
        flat = grad <= np.median(grad)
        conv = conv[flat] if flat.any() else conv  # none where the gradient is not finite: read every pixel
    order = (conv.size - 1) // 2
    # the kernel's taps square to 36, and a normal's median absolute value is 0.6745 of its sigma
    return float(np.partition(conv.ravel(), order)[order] / (6.0 * 0.6745))


def _binned(crop: np.ndarray) -> np.ndarray:
    """The mean of each 2x2 block: half the size, white noise halved, noise smoothed over a pixel or two much less."""
    h, w = crop.shape[0] // 2 * 2, crop.shape[1] // 2 * 2
    c = crop[:h, :w].astype(np.float32)
    return 0.25 * (c[0::2, 0::2] + c[1::2, 0::2] + c[0::2, 1::2] + c[1::2, 1::2])


def _chroma_blotches(crop: np.ndarray, flat_share: float = BLOTCH_FLAT_SHARE) -> float:
    """Colour that varies two ways at once, at the scale of 4x4 blocks: the smaller spread of the colour differences
    (red and blue minus the luminance) in each 5x5-block neighbourhood, its median over the ``flat_share`` of the
    neighbourhoods whose luminance varies least. In a photo the colours of a small neighbourhood lie along one line
    (Omer and Werman's colour lines): an edge between two colours, a shade of one, and a saturation or tone change keep
    them on a line. Colour noise spreads them both ways, wherever it is; texture, sharpening and strong colour do not,
    and where several of a picture's colours meet (a painted pattern) its tones change as well."""
    spread = colour_spread(crop)
    if spread is None:
        return 0.0
    minor, lum_var = spread
    if flat_share < 1.0:
        minor = minor[lum_var <= np.quantile(lum_var, flat_share)]
    return float(math.sqrt(max(float(np.median(minor)), 0.0)))


def colour_spread(crop: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """``_chroma_blotches``' readings of each whole 5x5-block neighbourhood of the crop's 4x4 blocks: the smaller spread
    of the colour differences, and the variance of the luminance; None for a grey crop or one too small for a
    neighbourhood."""
    b, win = BLOTCH_BLOCK, BLOTCH_WINDOW
    h, w = crop.shape[0] // b, crop.shape[1] // b
    if crop.ndim < 3 or crop.shape[2] < 3 or min(h, w) < win:
        return None
    # block means by strided sums, rows then columns: several times faster than a mean over reshaped axes
    rows = sum(crop[k:h * b:b, :w * b, :3] for k in range(b))
    blocks = sum(rows[:, k::b] for k in range(b)).astype(np.float64) / (b * b)
    lum = luminance(blocks)
    u, v = blocks[..., 0] - lum, blocks[..., 2] - lum
    local = [ndimage.uniform_filter(x, win) for x in (u, v, u * u, v * v, u * v, lum, lum * lum)]
    cut = (slice(win // 2, h - win // 2), slice(win // 2, w - win // 2))  # whole neighbourhoods only
    mu, mv, uu, vv, uv, ml, ll = (x[cut] for x in local)
    a, c, cross = uu - mu * mu, vv - mv * mv, uv - mu * mv
    minor = (a + c) / 2 - np.sqrt(((a - c) / 2) ** 2 + cross ** 2)  # the smaller eigenvalue of each covariance
    return minor, ll - ml * ml


def _chroma_noise(crop: np.ndarray) -> float:
    """Colour noise at two scales: the native pixels, and 2x2 blocks in the luminance's flat half (scaled back by 2,
    which white noise leaves the same). A camera's noise, smoothed by demosaicing over a pixel or two, hardly reaches
    the native scale's 3x3 Laplacian, but its colour still shows at the coarser one. Colour texture shows there too,
    more so once a photo is over-sharpened or over-contrasted (0.041 at most here; clean photos 0.011), so the coarse
    reading counts at COARSE_CHROMA_WEIGHT, which keeps those under defects/chroma.CHROMA_NOISE_LIMIT."""
    coarse = _chroma_sigma(_binned(crop), flat_only=True) * 2.0 if min(crop.shape[:2]) >= 8 else 0.0
    return max(_chroma_sigma(crop), COARSE_CHROMA_WEIGHT * coarse)


def _noise_sigmas(lums: list[np.ndarray]) -> list[float]:
    """Immerkaer (1996) fast noise variance estimate, sigma on a 0..1 scale, of each luminance (one size)."""
    h, w = lums[0].shape
    if h < 3 or w < 3:
        return [0.0] * len(lums)
    # the kernel [[1, -2, 1], [-2, 4, -2], [1, -2, 1]] is the outer product of [1, -2, 1] with itself
    convs = per_plane(lambda x: correlate_separable(x, (1.0, -2.0, 1.0), (1.0, -2.0, 1.0)), lums)
    grads = [gx ** 2 + gy ** 2 for gx, gy in zip(per_plane(lambda x: sobel(x, 1, 0), lums),
                                                 per_plane(lambda x: sobel(x, 0, 1), lums))]
    out = []
    for conv, grad in zip(convs, grads):
        # measure on flat regions only, so texture and edges are not counted as noise
        conv, grad = conv[1:-1, 1:-1], grad[1:-1, 1:-1]
        # the median by partition: the same threshold as np.percentile(grad, 50) splits by, at half the cost
        order = (grad.size - 1) // 2
        flat = grad <= np.partition(grad.ravel(), order)[order]
        vals = np.abs(conv[flat]) if flat.sum() > 16 else np.abs(conv)
        out.append(float(math.sqrt(math.pi / 2.0) * vals.mean() / 6.0))
    return out


def structure_similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Mean SSIM *structure* term (local correlation) between two images' luminance, at 128 px.

    Invariant to brightness and contrast changes, and at this scale to noise and its removal — those
    are the edits we want — while dropping for crops, warps, heavy local contrast and invented content.
    """
    la = luminance(resize_longest(a, 128)).astype(np.float32)
    lb = luminance(resize_longest(b, 128)).astype(np.float32)
    if la.shape != lb.shape:
        lb = resize(lb, (la.shape[1], la.shape[0]), "area")
    blur = lambda x: sampled_gaussian(x, 1.5)  # noqa: E731
    ma, mb = blur(la), blur(lb)
    va = np.maximum(blur(la * la) - ma * ma, 0)
    vb = np.maximum(blur(lb * lb) - mb * mb, 0)
    cov = blur(la * lb) - ma * mb
    c3 = (0.03 ** 2) / 2
    return float(np.clip((cov + c3) / (np.sqrt(va * vb) + c3), -1, 1).mean())


def quality_readings(img: np.ndarray, crops: list[np.ndarray] | None = None,
                     pool: Executor | None = None) -> dict[str, float]:
    """The HELD_READINGS alone, read as raw_statistics reads them, on the texture crops (``crops``, or four taken from
    ``img``): BRISQUE and NIQE on the crops side by side, BRISQUE in ``pool`` (a spare thread) while NIQE is read here,
    when there is one; the JPEG grid's step on each crop, their median."""
    crops = texture_crops(img) if crops is None else crops
    parts = _iqa_parts(mosaic(crops), CLASSIC_IQA)
    elsewhere = pool.submit(parts["brisque"]) if pool is not None else None
    done = {name: score() for name, score in parts.items() if elsewhere is None or name != "brisque"}
    if elsewhere is not None:
        done["brisque"] = elsewhere.result()
    steps = [grid_measures(luminance(c).astype(np.float32))[1] for c in crops]
    return {**{name: done[name] for name in parts}, "grid_step": float(np.median(steps))}


def mosaic(crops: list[np.ndarray]) -> np.ndarray:
    """The texture crops side by side in two rows (one image for BRISQUE and NIQE)."""
    half = (len(crops) + 1) // 2
    rows = [np.concatenate(crops[:half], axis=1), np.concatenate(crops[half:] or crops[:half], axis=1)]
    return np.concatenate(rows, axis=0)


def _iqa_parts(img: np.ndarray, want: tuple[str, ...], pool: Executor | None = None) -> dict[str, Callable[[], float]]:
    """BRISQUE and NIQE of an image as two calls that can run at the same time (they share its gray levels
    and, when NIQE reads the whole image, its half-size copy). NIQE needs 192 px on the short side; smaller
    images are upscaled to that first. NIQE's call hands its coarse scale to ``pool`` (call it from another
    thread than the pool's)."""
    from .iqa import NIQE_BLOCK, brisque, imresize_half, niqe, to_gray255

    gray = to_gray255(img)
    short = min(gray.shape)
    whole_blocks = short >= 2 * NIQE_BLOCK and all(n % NIQE_BLOCK == 0 for n in gray.shape)
    half = imresize_half(gray) if {"brisque", "niqe"} <= set(want) and whole_blocks else None
    parts: dict[str, Callable[[], float]] = {}
    if "brisque" in want:
        # too small to measure: NaN
        parts["brisque"] = (lambda: brisque(gray, half)) if short >= 16 else (lambda: float("nan"))
    if "niqe" in want:
        big = gray
        if short < 2 * NIQE_BLOCK:
            f = 2 * NIQE_BLOCK / short
            big = resize(gray, (math.ceil(gray.shape[1] * f), math.ceil(gray.shape[0] * f)), "cubic")
        parts["niqe"] = lambda: niqe(big, half, pool)
    return parts
