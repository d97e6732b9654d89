"""Restoration tools: undo what a camera or a codec did (JPEG blocks, defocus and motion blur, impulse noise, colour
fringes from a lens, a sensor's row banding, a veil of haze, posterisation), one module per defect.

Each measures the defect on the photo itself (the JPEG grid, the blur kernel), so the perceiver can read the
same measures (``blockiness``, ``estimate_blur``) and the reward can check an edit for halos (``overshoot``).
numpy and scipy only; the filters come from tools/imageops. This package re-exports the public names of its
modules; code that monkeypatches a name must patch it on the module that reads it (e.g. restore.deconvolution).
"""
from .jpeg import (BLOCK, HALF_COLOUR_DETAIL, JPEG_BLOCKS, JPEG_CHROMA_SIGMA, JPEG_FIT, JPEG_LOW, JPEG_LUMA_TABLE,
                   JPEG_QUALITIES, JPEG_TABLES, JPEG_WINDOW, blockiness, deblock, grid_measures, grid_step, jpeg_error)
from .halos import overshoot
from .impulses import IMPULSE_MARGIN, RING, impulse_share, remove_impulses
from .blur import (FLOOR_MARGIN, FallOff, GAUSS_BAND, GAUSS_ISOTROPY, GAUSS_PER_LINE, GAUSS_SIGMA, GRID_AXIS,
                   GRID_REPEAT, GRID_STRIPS, MIN_CONFIDENCE, MIN_SIGMA_MINOR, MOTION_ANISOTROPY, MOTION_CROSS,
                   MOTION_DEPTH, NOISE_BAND, RING_DEPTH, RING_EVENNESS, RING_PER_RADIUS, blur_of_spectrum,
                   blur_spectrum, estimate_blur, estimate_blur_pooled, floor_sigma, gaussian_confidence,
                   gaussian_reading, pooled_spectrum, repeats_at_one_phase, unless_grid)
from .deconvolution import blur_kernel, deconvolve
from .fringes import (FRINGE_AGREEMENT, FRINGE_CLIP, FRINGE_MAX, FRINGE_POINTS, FRINGE_QUARTER_POINTS, FRINGE_SIDE,
                      FRINGE_SLACK, FRINGE_SPREAD, FRINGE_STEP, colour_detail, fix_fringes, fringe_scales)
from .banding import BAND_REACH, banding_sigma, remove_banding, row_median, row_offsets
from .haze import DARK_PATCH, HAZE_SIDE, MAX_STRETCH, MAX_VEIL, dehaze, haze_estimate, patch_minimum
from .levels import LEVEL_GRID, deband, level_step
from .specs import RESTORE_TOOLS
# private helpers the tests read
from .impulses import _neighbour_range as _neighbour_range
from .jpeg import _jpeg_luma as _jpeg_luma

__all__ = ["BLOCK", "HALF_COLOUR_DETAIL", "JPEG_BLOCKS", "JPEG_CHROMA_SIGMA", "JPEG_FIT", "JPEG_LOW",
           "JPEG_LUMA_TABLE", "JPEG_QUALITIES", "JPEG_TABLES", "JPEG_WINDOW", "blockiness", "deblock", "grid_measures",
           "grid_step", "jpeg_error", "overshoot", "IMPULSE_MARGIN", "RING", "impulse_share", "remove_impulses",
           "FLOOR_MARGIN", "FallOff", "GAUSS_BAND", "GAUSS_ISOTROPY", "GAUSS_PER_LINE", "GAUSS_SIGMA", "GRID_AXIS",
           "GRID_REPEAT", "GRID_STRIPS", "MIN_CONFIDENCE", "MIN_SIGMA_MINOR", "MOTION_ANISOTROPY", "MOTION_CROSS",
           "MOTION_DEPTH", "NOISE_BAND", "RING_DEPTH", "RING_EVENNESS", "RING_PER_RADIUS", "blur_of_spectrum",
           "blur_spectrum", "estimate_blur", "estimate_blur_pooled", "floor_sigma", "gaussian_confidence",
           "gaussian_reading", "pooled_spectrum", "repeats_at_one_phase", "unless_grid", "blur_kernel", "deconvolve",
           "FRINGE_AGREEMENT", "FRINGE_CLIP", "FRINGE_MAX", "FRINGE_POINTS", "FRINGE_QUARTER_POINTS", "FRINGE_SIDE",
           "FRINGE_SLACK", "FRINGE_SPREAD", "FRINGE_STEP", "colour_detail", "fix_fringes", "fringe_scales",
           "BAND_REACH", "banding_sigma", "remove_banding", "row_median", "row_offsets", "DARK_PATCH", "HAZE_SIDE",
           "MAX_STRETCH", "MAX_VEIL", "dehaze", "haze_estimate", "patch_minimum", "LEVEL_GRID", "deband", "level_step",
           "RESTORE_TOOLS"]
