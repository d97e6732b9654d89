"""How the filters split their work: sizes below which an image is done in one piece (SMALL_ELEMENTS) and of the
tiles above (TILE_ELEMENTS), work spread over threads, several planes filtered as one image.

The filters read these sizes as ``tiles.SMALL_ELEMENTS`` / ``tiles.TILE_ELEMENTS``, so setting them here (as the
tests do) reaches every filter."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Callable

import numpy as np

from .arrays import channel_planes
from .opencv_switch import opencv

TILE_ELEMENTS = 1 << 20  # rows are filtered in tiles of about this many values
SMALL_ELEMENTS = 1 << 18  # up to this many values (a 300 x 300 RGB image), an image is filtered in one piece


def per_plane(fn: Callable[[np.ndarray], np.ndarray], planes: list[np.ndarray]) -> list[np.ndarray]:
    """``fn`` (one of the filters) of each of ``planes`` (HxW, one size). On small planes the built-in filters pay
    mostly per call, so they take them as the channels of one image: the same values, in one call. Large planes
    go one by one (stacking them would cost more than it saves), and so do OpenCV's, whose one-channel code
    rounds a little differently from its code for several."""
    if opencv() is not None or len(planes) < 2 or planes[0].size * len(planes) > SMALL_ELEMENTS:
        return [fn(p) for p in planes]
    return channel_planes(fn(np.stack(planes, axis=2)))


def in_threads(work: Callable[[int], None], count: int, elements: int) -> None:
    """``work(0) .. work(count - 1)``, for work that lets go of the interpreter (numpy's loops), spread over as
    many threads as the caller lets torch use: a search that keeps torch to one thread gets one. An image of
    ``elements`` values up to SMALL_ELEMENTS is done in this thread: there, starting threads costs more than
    they save."""
    import torch

    threads = min(torch.get_num_threads(), count) if elements > SMALL_ELEMENTS else 1
    if threads < 2:
        for part in range(count):
            work(part)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="edit-agents") as pool:
        for _ in pool.map(work, range(count)):  # in order; the first error is raised here
            pass


def _touched(buffer: np.ndarray) -> np.ndarray:
    """``buffer`` with its pages mapped by this thread. numpy asks for huge pages for large arrays; when torch's
    threads first write tiles of one at the same time, they fault on the same huge pages, and that costs several
    times the filter (measured at 12 MP: about 170 ms against 15 for one thread writing it first). With small
    pages, the threads' faults do not collide, and a pass of its own would only add time."""
    if _huge_pages():
        buffer.fill(0)
    return buffer


def _huge_pages() -> bool:
    try:
        from numpy._core.multiarray import _get_madvise_hugepage
    except ImportError:  # numpy 1.x
        from numpy.core.multiarray import _get_madvise_hugepage
    return bool(_get_madvise_hugepage())
