"""Write tests/data/opencv_reference.npz: what OpenCV's functions return on small fixed inputs, for each function
tools/imageops/ computes without OpenCV. tests/tools/test_opencv_parity.py compares the pack's results with these
arrays, so the parity is checked on machines with no OpenCV at all (CI's, the users').

Needs an OpenCV wheel, only here: .venv/bin/pip install opencv-python-headless
Run: .venv/bin/python scripts/make_opencv_reference.py
"""
from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "opencv_reference.npz"


def inputs() -> dict[str, np.ndarray]:
    """Smooth gradients with texture and hard edges (filters and resampling behave differently on each), odd
    sizes (the borders and partial tiles), 1 and 3 channels."""
    rng = np.random.default_rng(17)
    yy, xx = np.mgrid[0:29, 0:37].astype(np.float32)
    base = 0.5 + 0.3 * np.sin(xx / 7) * np.cos(yy / 5)
    rgb = np.stack([base, np.clip(base + 0.2 * (xx > 18), 0, 1), 0.2 + 0.6 * (yy / 28)], axis=2)
    rgb = np.clip(rgb + rng.normal(0, 0.03, rgb.shape), 0, 1).astype(np.float32)
    gray = np.ascontiguousarray(rgb[:, :, 1])
    gray64 = (gray * 255).astype(np.float64)
    mask = np.zeros((29, 37), np.float32)
    mask[6:20, 9:26] = 1.0
    mask[23:27, 3:6] = 1.0
    levels = (np.clip(gray + 0.1 * rng.standard_normal(gray.shape), 0, 1) * 65535).astype(np.uint16)
    return {"rgb": rgb, "gray": gray, "gray64": gray64, "mask": mask, "levels": levels}


def main() -> None:
    src = inputs()
    rgb, gray, gray64, mask, levels = (src[k] for k in ("rgb", "gray", "gray64", "mask", "levels"))
    ref: dict[str, np.ndarray] = {f"in_{k}": v for k, v in src.items()}
    for sigma in (0.8, 1.0, 2.0, 3.7):
        ref[f"gaussian_{sigma}"] = cv2.GaussianBlur(rgb, (0, 0), sigma)
        ref[f"gaussian_gray_{sigma}"] = cv2.GaussianBlur(gray, (0, 0), sigma)
    kernel = cv2.getGaussianKernel(7, 7 / 6).ravel()
    ref["sep64_kernel"] = kernel
    ref["sep64"] = cv2.sepFilter2D(gray64, cv2.CV_64F, kernel, kernel, borderType=cv2.BORDER_REFLECT_101)
    ref["sep_asym"] = cv2.sepFilter2D(rgb, -1, np.array([0.1, 0.5, 0.4]), np.array([0.2, 0.2, 0.6]),
                                      borderType=cv2.BORDER_REFLECT_101)
    ref["sobel_x"] = cv2.Sobel(gray, cv2.CV_32F, 1, 0)
    ref["sobel_y"] = cv2.Sobel(gray, cv2.CV_32F, 0, 1)
    ref["laplacian"] = cv2.Laplacian(gray, cv2.CV_32F, ksize=3)
    for name, size in (("half", (18, 14)), ("third", (12, 9)), ("odd", (11, 8)), ("up", (59, 43))):
        ref[f"area_{name}"] = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
        ref[f"cubic_{name}"] = cv2.resize(rgb, size, interpolation=cv2.INTER_CUBIC)
    ref["area_gray_third"] = cv2.resize(gray, (12, 9), interpolation=cv2.INTER_AREA)
    rotation = cv2.getRotationMatrix2D((18.0, 14.0), 17.0, 1.0)
    ref["warp_matrix"] = rotation
    ref["warp"] = cv2.warpAffine(rgb, rotation, (37, 29), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)
    for d, sc, ss in ((5, 0.125, 5.0), (3, 0.05, 1.5), (9, 0.2, 4.0)):
        ref[f"bilateral_{d}_{sc}_{ss}"] = cv2.bilateralFilter(rgb, d, sc, ss)
    ref["bilateral_gray"] = cv2.bilateralFilter(gray, 5, 0.1, 3.0)
    for clip, grid in ((2.0, 8), (4.0, 3), (1.0, 5)):
        ref[f"clahe_{clip}_{grid}"] = cv2.createCLAHE(clipLimit=clip, tileGridSize=(grid, grid)).apply(levels)
    for radius in (1, 3, 5):
        element = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * radius + 1, 2 * radius + 1))
        ref[f"dilate_{radius}"] = cv2.dilate(mask, element)
        ref[f"erode_{radius}"] = cv2.erode(mask, element)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(OUT, **ref)
    print(f"wrote {OUT} ({OUT.stat().st_size // 1024} KiB, {len(ref)} arrays) with OpenCV {cv2.__version__}")


if __name__ == "__main__":
    main()
