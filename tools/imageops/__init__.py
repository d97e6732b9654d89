"""Small image helpers shared by tools and metrics. Images are float32 HxWxC in [0, 1]
with C = 1 (grayscale), 3 (RGB) or 4 (RGBA).

The filters and resampling here compute what OpenCV's functions of the same purpose compute (same
kernels, border rules and interpolation weights), on torch, numpy and Pillow, which ComfyUI installs.
The pack never installs OpenCV: its wheels all install one package folder, so a pack installing another
wheel than the one already there breaks both. When a working OpenCV is there anyway (another pack brought
it), each filter hands its work to OpenCV's function, which is faster on small images; the results agree
(tests/test_opencv_parity.py). EDIT_AGENTS_OPENCV=0 keeps OpenCV out.

One module per topic; this package re-exports their public names. The tiling sizes are set on
``imageops.tiles`` (SMALL_ELEMENTS, TILE_ELEMENTS), where every filter reads them.
"""
from .arrays import (FLAT_TOLERANCE, as_image, channel_max, channel_mean, channel_min, channel_planes, join_alpha,
                     luminance, on_color, paste_masked, split_alpha, to_rgb, to_uint8, uniform_frame)
from .opencv_switch import OPENCV_SWITCH, opencv
from .tiles import SMALL_ELEMENTS, TILE_ELEMENTS, in_threads, per_plane
from .separable import BAND_TAPS, DIRECT_TAPS, border_index, correlate_separable
from .kernels import SMALL_SIGMA, gaussian, gaussian_kernel, laplacian, sampled_gaussian, sobel
from .rank import maximum_filter, minimum_filter, morphology
from .resample import CACHED_TAPS, resize, resize_longest, warp_affine
from .bilateral import bilateral_filter
from .clahe import clahe_uint16
from .light import STATISTICS_SIDE, illuminant_estimate, neutral_evidence, scene_light
from .thumbnails import THUMB_SAMPLES, thumbnail_data_url
# a private helper the tests read (its cache is cleared to load OpenCV again)
from .opencv_switch import _installed_opencv as _installed_opencv

__all__ = ["FLAT_TOLERANCE", "as_image", "channel_max", "channel_mean", "channel_min", "channel_planes", "join_alpha",
           "luminance", "on_color", "paste_masked", "split_alpha", "to_rgb", "to_uint8", "uniform_frame",
           "OPENCV_SWITCH", "opencv", "SMALL_ELEMENTS", "TILE_ELEMENTS", "in_threads", "per_plane", "BAND_TAPS",
           "DIRECT_TAPS", "border_index", "correlate_separable", "SMALL_SIGMA", "gaussian", "gaussian_kernel",
           "laplacian", "sampled_gaussian", "sobel", "maximum_filter", "minimum_filter", "morphology", "CACHED_TAPS",
           "resize", "resize_longest", "warp_affine", "bilateral_filter", "clahe_uint16", "STATISTICS_SIDE",
           "illuminant_estimate", "neutral_evidence", "scene_light", "THUMB_SAMPLES", "thumbnail_data_url"]
