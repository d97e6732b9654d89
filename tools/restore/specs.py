"""The restoration tools' specs (RESTORE_TOOLS): what the planner and the manual see of each, and its parameters."""
from __future__ import annotations

from ..spec import Param, ToolSpec
from .banding import remove_banding
from .deconvolution import _deconvolve_forward, _deconvolve_pins, deconvolve
from .fringes import _fringe_pins, fix_fringes
from .haze import _haze_pins, dehaze
from .impulses import remove_impulses
from .jpeg import deblock
from .levels import deband


def _F(name, desc, default, lo, hi, effect="", neutral=0.0, pixels=False):
    return Param(name, "float", desc, default=default, minimum=lo, maximum=hi, effect=effect, neutral=neutral,
                 pixels=pixels)


RESTORE_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("remove_impulses", "Remove salt-and-pepper specks, dead or hot pixels and dust spots.",
             "Use for isolated pixels far brighter or darker than everything around them. Each is replaced by the "
             "median of its neighbours; every other pixel is kept exactly, so unlike denoise it softens nothing. A "
             "photo with no such pixels is returned unchanged.",
             (_F("threshold", "how far from its neighbours a pixel must stand", 0.2, 0.05, 0.8,
                 "Lower removes fainter specks, and may take small highlights such as stars.", neutral=None),),
             remove_impulses, keywords=("salt and pepper", "specks", "speckles", "dead pixels", "hot pixels",
                                        "stuck pixels", "dust", "impulse noise", "despeckle"),
             conflicts=("remove_impulses",)),  # once the specks are gone, a second pass takes highlights
    ToolSpec("remove_banding", "Remove fine horizontal stripes: rows offset by a sensor's readout.",
             "Use for horizontal banding: thin lines across the photo, each row a little brighter or darker than the "
             "next, seen most in flat areas and at high ISO. Each row's own offset is taken out; what changes slowly "
             "down the photo stays.",
             (_F("strength", "how much of the measured offsets to take out", 1.0, 0.0, 1.0, "Lower takes out part."),),
             remove_banding, keywords=("banding", "stripes", "striping", "row noise", "line noise", "pattern noise",
                                       "horizontal lines"),
             conflicts=("remove_banding",)),  # three passes already: another finds only what is the photo's
    ToolSpec("deband", "Smooth posterisation: steps between too few levels, as in banded skies.",
             "Use for posterised photos, banded gradients in skies or walls, or a GIF-like look. Each channel is "
             "smoothed and held within its own level's step, so edges larger than a step stay and a photo that uses "
             "every level is left unchanged.",
             (_F("strength", "how much of the smoothing to keep", 1.0, 0.0, 1.0, "Lower keeps part of the steps."),
              _F("radius", "smoothing radius in pixels", 3.0, 0.5, 12.0, "Wider for wider steps.", neutral=None,
                 pixels=True)),
             deband, keywords=("posterised", "posterized", "posterisation", "posterization", "banding in the sky",
                               "colour banding", "color banding", "deband", "gradient banding", "8-bit banding"),
             # once held in its cells, a second pass finds the levels filled; a sharpen or a deconvolution after it
             # steepens the ramps it made back into steps
             conflicts=("deband", "sharpen", "deconvolve")),
    ToolSpec("dehaze", "Remove haze, glare or a fade laid evenly over the photo (a veil of light).",
             "Use for hazy, foggy-looking or flared photos whose darkest parts never reach black: a veil of light lies "
             "over everything. The veil's colour and share are measured on the photo (the dark channel prior) and "
             "taken out in linear light, where it was added, so the midtones keep their place; a photo whose darkest "
             "parts reach black is left unchanged.",
             (_F("strength", "how much of the measured veil to take out", 1.0, 0.0, 1.0, "Lower takes out part."),),
             dehaze, keywords=("haze", "remove haze", "foggy", "misty", "veiling glare", "flare", "milky"),
             # measured and taken out at once: a second pass finds nothing
             pins=_haze_pins, conflicts=("dehaze",), pointwise=True),
    ToolSpec("fix_fringes", "Remove the red and blue colour fringes a lens leaves toward the corners.",
             "Use for lateral chromatic aberration: edges fringed red on one side and blue or cyan on the other, the "
             "fringes widening toward the corners. The red and blue images are scaled back onto the green one about "
             "the photo's centre, by the misregistration measured on the photo; an aligned photo is left unchanged.",
             (_F("strength", "how much of the measured misregistration to undo", 1.0, 0.0, 1.0,
                 "Lower undoes part of it."),),
             fix_fringes, keywords=("chromatic aberration", "colour fringes", "color fringes", "fringing",
                                    "purple fringes", "lens fringes"),
             pins=_fringe_pins, pixel_pins=("centre_x", "centre_y"), placed=True, moves_pixels=True,
             conflicts=("fix_fringes",)),  # measured and undone at once: a second pass finds nothing
    ToolSpec("deblock", "Remove JPEG blocks and ringing (mosquito noise) while keeping real edges.",
             "Use for heavily compressed photos showing an 8x8 block grid, blotchy flat areas or buzzing around "
             "edges. Small steps on the grid are smoothed into ramps, large ones (edges) kept; a mild edge-preserving "
             "filter as strong as the measured grid then calms the ringing. Nearly a no-op on a clean photo.",
             (_F("strength", "how much to smooth", 0.7, 0.0, 1.0, "Higher removes more blocking and more fine texture."),),
             deblock, keywords=("jpeg", "jpeg artifacts", "compression artifacts", "blocky", "blocks", "deblock",
                                "mosquito noise", "pixelated", "low quality"),
             conflicts=("sharpen", "deconvolve", "deblock")),  # once the grid is gone, another pass only smooths
    ToolSpec("deconvolve", "Undo defocus, motion or Gaussian blur with a kernel estimated from the photo.",
             "Use for out-of-focus, shaken or softly blurred photos. The blur (a disc for defocus, a line for motion, "
             "a Gaussian, round or elongated, for a soft blur) is measured from the photo's spectrum unless given; a "
             "sharp photo is left as it is. Stronger settings recover more detail and amplify more noise; a JPEG's "
             "rounding, read from the photo's 8x8 blocks, counts as noise. Only the brightness is deconvolved: the "
             "colour stays as it came (a JPEG keeps it at half resolution, and sharpening it raises colour noise).",
             (Param("kind", "enum", "the blur to undo", default="auto",
                    choices=("auto", "defocus", "motion", "gaussian")),
              _F("strength", "how far to go", 0.7, 0.0, 1.0, "Higher = sharper, with more noise."),
              _F("radius", "defocus disc radius in pixels; 0 estimates it", 0.0, 0.0, 20.0, neutral=None, pixels=True),
              _F("length", "motion length in pixels; 0 estimates it", 0.0, 0.0, 40.0, neutral=None, pixels=True),
              _F("angle", "motion direction, or an elongated Gaussian's long axis, in degrees counter-clockwise from "
                 "horizontal; -1 estimates it", -1.0, -1.0, 180.0, neutral=None),
              _F("sigma", "Gaussian blur width in pixels (along its long axis when elongated); 0 estimates it", 0.0,
                 0.0, 10.0, neutral=None, pixels=True),
              _F("sigma_minor", "an elongated Gaussian's width across its long axis in pixels; 0: round (or "
                 "estimated with sigma)", 0.0, 0.0, 10.0, neutral=None, pixels=True)),
             deconvolve, keywords=("deblur", "out of focus", "defocus", "motion blur", "camera shake", "shaky",
                                   "blurry", "unsharp", "deconvolve"),
             pins=_deconvolve_pins, pixel_pins=("radius", "length", "sigma", "sigma_minor"), forward=_deconvolve_forward,
             conflicts=("sharpen", "deconvolve")),  # one kernel undone once; a sharpen on top rings
)
