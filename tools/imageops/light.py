"""The light of a scene, read on a small copy: the illuminant's colour (from grey edges) and how much of the photo
is neutral under it."""
from __future__ import annotations

import numpy as np

from .arrays import channel_mean, channel_min, channel_planes
from .kernels import sampled_gaussian, sobel
from .resample import resize_longest
from .tiles import per_plane

# px: global readings of a photo (its light; the perceiver's tone and colour statistics, agents/quality/metrics.py) are made on
# a copy at most this long: the same reading whatever the size of the photo or of the search's copy of it, and cheap
# (a white balance of a 12 MP photo read its light on every pixel: 0.6 GB of planes and most of a second)
STATISTICS_SIDE = 256


def scene_light(rgb: np.ndarray) -> np.ndarray:
    """The light a photo was taken under, as log(R/G), log(B/G) (``illuminant_estimate``), read on a copy at most
    ``STATISTICS_SIDE`` long."""
    return illuminant_estimate(resize_longest(rgb, STATISTICS_SIDE))[0]


def illuminant_estimate(rgb: np.ndarray) -> tuple[np.ndarray, float]:
    """The scene illuminant's colour as log(R/G), log(B/G), and how sure the estimate is (0..1).

    Three estimators that a dominant scene colour fools in different ways: white patch (each
    channel's 99th percentile), shades of gray (Minkowski p = 6 mean) and gray edge (mean gradient
    per channel). Their median is the estimate; the confidence falls as they disagree, so a brown
    coffee table or a red retina is not read as a cast while a tint on everything is.
    """
    rgb = np.clip(rgb[:, :, :3], 0.0, 1.0).astype(np.float32)
    channels = channel_planes(rgb)
    lum = (channels[0] + channels[1] + channels[2]) / 3
    mid = (lum > 0.03) & (lum < 0.97)
    use = mid if mid.sum() > 100 else np.ones_like(mid)
    white_patch = np.array([np.percentile(c, 99.0) for c in channels])
    sixth = [(c * c) ** 3 for c in channels]  # a cube of squares: much faster than a power of 6
    shades_of_gray = np.power(np.array([float(x[use].mean()) for x in sixth]), 1 / 6)
    smooth = per_plane(lambda c: sampled_gaussian(c, 1.0), channels)  # once, for both gradients
    across, down = per_plane(lambda c: sobel(c, 1, 0), smooth), per_plane(lambda c: sobel(c, 0, 1), smooth)
    edges = [np.abs(x).mean() + np.abs(y).mean() for x, y in zip(across, down)]
    estimates = np.array([np.log((e[[0, 2]] + 1e-4) / (e[1] + 1e-4))
                          for e in (white_patch, shades_of_gray, np.array(edges))], np.float64)
    consensus = np.median(estimates, axis=0)
    spread = float(np.linalg.norm(estimates - consensus, axis=1).mean())
    confidence = float(np.clip(1.0 - spread / (np.linalg.norm(consensus) + 0.05), 0.0, 1.0))
    return consensus, confidence


def neutral_evidence(rgb: np.ndarray, illuminant: np.ndarray, radius: float = 0.04) -> tuple[float, float]:
    """Where the photo's grey surfaces are: the shares of its midtone pixels whose colour, as log(R/G), log(B/G),
    lies within ``radius`` of neutral and within ``radius`` of ``illuminant`` (the estimated cast).

    Under a real cast every grey surface takes the light's colour, so none stays neutral once the cast is
    larger than twice the radius: the second share is large where the photo has grey surfaces, the first is
    small. A photo whose cast estimate is pulled by a dominant coloured object (orange fruit on a grey
    table) keeps its grey surfaces neutral: the first share is the larger."""
    rgb = np.clip(rgb[::2, ::2, :3], 0.0, 1.0).astype(np.float32)  # every other pixel: a share, 4x cheaper
    lum = channel_mean(rgb)
    use = (lum > 0.06) & (lum < 0.94) & (channel_min(rgb) > 0.02)  # log colour is noise in the darkest pixels
    if use.sum() < 100:
        return 0.0, 0.0
    green = rgb[..., 1][use]
    red, blue = np.log(rgb[..., 0][use] / green), np.log(rgb[..., 2][use] / green)
    near = lambda r, b: float(((red - r) ** 2 + (blue - b) ** 2 < radius * radius).mean())  # noqa: E731
    return near(0.0, 0.0), near(float(illuminant[0]), float(illuminant[1]))
