"""Benchmark (issue 17): every classic tool with the pack's built-in filters against the same tool handing its
filters to OpenCV (what it does where another pack installed OpenCV; the pack itself never installs it).

One process, one photo, the two in turns (A B, B A, ...), switched by EDIT_AGENTS_OPENCV: the machine's drift
hits both the same. Needs opencv-python-headless in the venv (requirements-dev.txt installs it).
Prints milliseconds per call (the fastest run) and the ratio built-in / OpenCV; the issue's bound is 1.5x at 12 MP.
--arithmetic times the bare Gaussian blur (sigma 2) with its output's pages already mapped, both ways: the
filters' arithmetic without the cost of faulting in 144 MB of fresh output.
Run: .venv/bin/python bench/opencv_port.py [--runs 7] [--size 12] [--as-is] [--arithmetic]
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np
from PIL import Image
from skimage import data

NEEDS = {"crop": {"box": [0.1, 0.1, 0.9, 0.9]}}
BOUND = 1.5


def photo(megapixels: float) -> np.ndarray:
    src = data.coffee()
    scale = (megapixels * 1e6 / (src.shape[0] * src.shape[1])) ** 0.5
    size = (round(src.shape[1] * scale), round(src.shape[0] * scale))
    return np.asarray(Image.fromarray(src).resize(size, Image.BICUBIC), dtype=np.float32) / 255.0


def steady_memory() -> None:
    """Make page faults cost the same on every call, whichever implementation ran before: a fixed glibc mmap
    threshold (by default it moves with each free, so an array may or may not reuse pages another call left) and
    no transparent huge pages for numpy (their faults depend on how fragmented the machine's memory is). Without
    this, two runs of identical code differ by up to 1.45x here."""
    if os.environ.get("MALLOC_MMAP_THRESHOLD_") is None:
        os.environ["MALLOC_MMAP_THRESHOLD_"] = str(1 << 20)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    import numpy._core.multiarray as multiarray
    multiarray._set_madvise_hugepage(False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--size", type=float, default=12.0, help="megapixels")
    parser.add_argument("--tools", nargs="*", help="only these tools")
    parser.add_argument("--arithmetic", action="store_true", help="the bare Gaussian, output pages mapped")
    parser.add_argument("--as-is", action="store_true",
                        help="leave glibc's and numpy's memory settings as they are (noisier: see steady_memory)")
    args = parser.parse_args()
    if not args.as_is:
        steady_memory()
    from edit_agents.tools import default_registry, imageops

    os.environ[imageops.OPENCV_SWITCH] = "1"
    if imageops.opencv() is None:
        sys.exit("this benchmark compares with OpenCV: .venv/bin/pip install opencv-python-headless")
    registry = default_registry()
    switches = ("1", "0")  # OpenCV's filters, the built-in ones
    img = photo(args.size)
    if args.arithmetic:
        arithmetic(img, args.runs)
        return
    print(f"{img.shape[1]}x{img.shape[0]} ({img.shape[0] * img.shape[1] / 1e6:.1f} MP), "
          f"fastest of {args.runs} runs in turns (A B, B A, ...)")
    print(f"{'tool':<20}{'OpenCV ms':>11}{'built-in ms':>13}{'ratio':>8}")
    worst = ("", 0.0)
    totals = [0.0, 0.0]
    for spec in registry.specs():
        if spec.category != "classic" or (args.tools and spec.name not in args.tools):
            continue
        times: list[list[float]] = [[], []]
        for run in range(args.runs):
            # A B, then B A: whichever runs second finds the memory the first just freed
            for i, switch in (enumerate(switches) if run % 2 == 0 else reversed(list(enumerate(switches)))):
                os.environ[imageops.OPENCV_SWITCH] = switch
                t0 = time.perf_counter()
                registry.call(spec.name, img, NEEDS.get(spec.name, {}))
                times[i].append((time.perf_counter() - t0) * 1000)
        before, after = (min(t) for t in times)  # noise only ever adds time: the fastest run is the code's
        totals[0] += before
        totals[1] += after
        ratio = after / before
        worst = max(worst, (spec.name, ratio), key=lambda w: w[1])
        print(f"{spec.name:<20}{before:>11.1f}{after:>13.1f}{ratio:>7.2f}x" + ("  over the bound" if ratio > BOUND else ""))
    print(f"{'all tools':<20}{totals[0]:>11.0f}{totals[1]:>13.0f}{totals[1] / totals[0]:>7.2f}x")
    print(f"built-in, slowest relative to OpenCV: {worst[0]} {worst[1]:.2f}x (bound {BOUND}x)")


def arithmetic(img: np.ndarray, runs: int, sigma: float = 2.0) -> None:
    """The Gaussian blur alone, each way writing into one output array mapped before the clock starts."""
    import cv2

    from edit_agents.tools import imageops

    kernel = imageops.gaussian_kernel(sigma).astype(np.float64)
    kept = np.zeros_like(img)  # every page touched once, here
    fresh = np.empty

    def built_in() -> None:
        # the built-in filter asks np.empty for its output: hand it the mapped array instead
        np.empty = lambda shape, dtype=float: kept if tuple(shape) == img.shape else fresh(shape, dtype)
        try:
            os.environ[imageops.OPENCV_SWITCH] = "0"
            imageops.gaussian(img, sigma)
        finally:
            np.empty = fresh

    ways = {"OpenCV": lambda: cv2.sepFilter2D(img, -1, kernel, kernel, dst=kept), "built-in": built_in}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for run in range(runs):
        for name in (ways if run % 2 == 0 else reversed(list(ways))):
            t0 = time.perf_counter()
            ways[name]()
            times[name].append((time.perf_counter() - t0) * 1000)
    opencv_ms, built_in_ms = min(times["OpenCV"]), min(times["built-in"])
    print(f"Gaussian blur, sigma {sigma}, output pages mapped: OpenCV {opencv_ms:.1f} ms, built-in {built_in_ms:.1f} ms "
          f"({built_in_ms / opencv_ms:.2f}x)")


if __name__ == "__main__":
    main()
