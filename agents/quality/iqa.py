"""Classic no-reference quality metrics: BRISQUE and NIQE, as their authors' MATLAB releases compute them.

Both model natural-scene statistics of mean-subtracted contrast-normalised (MSCN) luminance:
- BRISQUE (Mittal, Moorthy & Bovik 2012) fits generalised Gaussians to the MSCN coefficients and
  their neighbour products at two scales (36 features) and maps them to a quality score with an
  RBF support-vector regressor trained on the LIVE database. 0 is best, ~100 is bad.
- NIQE (Mittal, Soundararajan & Bovik 2013) fits the same kind of features on 96 px blocks and
  reports the Mahalanobis-like distance between their Gaussian and one fitted to pristine photos.
  Lower is better (~3 for a clean photo).

Written from the papers' descriptions of the reference code (``brisque_feature.m``,
``computequality.m``); tests check the scores against the MATLAB releases' numbers on the
calibration images in ``tests/data/iqa``. Model parameters ship in ``agents/data`` as plain .npz
(see the README there for provenance). Numpy, and the pack's own filters (tools/imageops).
"""
from __future__ import annotations

import math
from concurrent.futures import Executor
from functools import lru_cache
from pathlib import Path

import numpy as np

DATA = Path(__file__).parent.parent / "data"  # agents/data
_SHAPE_GRID = np.arange(0.2, 10.0005, 0.001)  # the reference code's search grid for shape parameters


@lru_cache(maxsize=1)
def _gamma_tables() -> tuple[np.ndarray, np.ndarray]:
    g = np.array([[math.gamma(1 / a), math.gamma(2 / a), math.gamma(3 / a)] for a in _SHAPE_GRID])
    aggd_ratio = g[:, 1] ** 2 / (g[:, 0] * g[:, 2])
    ggd_ratio = g[:, 0] * g[:, 2] / g[:, 1] ** 2
    return aggd_ratio, ggd_ratio


def _nearest_on_grid(table: np.ndarray, values: np.ndarray, squared: bool = True) -> np.ndarray:
    """``argmin((table - v) ** 2)`` (or of ``abs(table - v)``, as the reference code has it) for each value, by
    bisection of the monotonic ``table`` (9801 points; the search fits thousands of distributions). The nearest
    is one of the two entries around the value; a tie in the rounded distances, or a value that is not finite,
    takes the full scan, so the index is always argmin's."""
    values = np.asarray(values, np.float64)
    rising = table[-1] > table[0]
    pos = np.searchsorted(table if rising else table[::-1], values)
    if not rising:
        pos = len(table) - pos
    window = np.clip(pos[..., None] + np.arange(-2, 2), 0, len(table) - 1)
    distance = (lambda d: d * d) if squared else np.abs
    dist = distance(table[window] - values[..., None])
    pick = np.argmin(dist, axis=-1)
    best = np.take_along_axis(window, pick[..., None], axis=-1)[..., 0]
    # argmin keeps the first of equal distances: a tie at the window's left edge may continue further left
    edge_tie = (dist[..., 0] == np.take_along_axis(dist, pick[..., None], axis=-1)[..., 0]) & (window[..., 0] > 0)
    unsure = edge_tie | ~np.isfinite(values)
    if unsure.any():
        best[unsure] = np.argmin(distance(table[None, :] - values[unsure][:, None]), axis=1)
    return best


GRAY_WEIGHTS = (0.298936021293775, 0.587043074451121, 0.114020904255103)  # MATLAB's rgb2gray


def matlab_gray(rgb_uint8: np.ndarray) -> np.ndarray:
    """MATLAB's ``rgb2gray`` on uint8 input (rounded to integers), as float64."""
    if rgb_uint8.ndim == 2:
        return rgb_uint8.astype(np.float64)
    # the weighted sum written out, not `@ weights`: the same values for all 2^24 colours (checked), without a
    # BLAS call, whose threads would then spin against torch's on every state the search scores; each channel's
    # products looked up in a table of its 256 (the same products, summed in the same order: a third faster)
    if rgb_uint8.dtype != np.uint8:  # the tables hold the 256 levels of 8 bits only
        r, g, b = (rgb_uint8[..., i].astype(np.float64) for i in range(3))
        return np.round(r * GRAY_WEIGHTS[0] + g * GRAY_WEIGHTS[1] + b * GRAY_WEIGHTS[2])
    red, green, blue = _gray_tables()
    out = red.take(rgb_uint8[..., 0])
    out += green.take(rgb_uint8[..., 1])
    out += blue.take(rgb_uint8[..., 2])
    return np.round(out, out=out)


@lru_cache(maxsize=1)
def _gray_tables() -> tuple[np.ndarray, ...]:
    return tuple(np.arange(256, dtype=np.float64) * w for w in GRAY_WEIGHTS)


def to_gray255(img: np.ndarray) -> np.ndarray:
    """A float image in 0..1 (H, W[, C]) -> MATLAB-style gray levels 0..255."""
    arr = np.array(img, np.float64)  # a copy, worked on in place (this runs for every state the search scores)
    if not np.isfinite(arr).all():
        arr = np.nan_to_num(arr, nan=0.0, posinf=1.0, neginf=0.0)
    arr *= 255.0
    np.clip(arr, 0.0, 255.0, out=arr)
    u8 = np.rint(arr, out=arr).astype(np.uint8)
    if u8.ndim == 3 and u8.shape[2] < 3:
        u8 = u8[..., 0]
    return matlab_gray(u8)


# ---------------------------------------------------------------------------- resizing and filtering

def _cubic(x: np.ndarray) -> np.ndarray:
    ax = np.abs(x)
    ax2, ax3 = ax ** 2, ax ** 3
    return ((1.5 * ax3 - 2.5 * ax2 + 1) * (ax <= 1)
            + (-0.5 * ax3 + 2.5 * ax2 - 4 * ax + 2) * ((ax > 1) & (ax <= 2)))


@lru_cache(maxsize=32)
def _resize_taps(n_in: int, scale: float) -> tuple[np.ndarray, np.ndarray]:
    """MATLAB ``imresize`` (bicubic, antialiased when shrinking) along one axis: for each output pixel, the
    input pixels it reads (symmetric padding folded in) and their weights, taps with no weight left out."""
    n_out = int(math.ceil(n_in * scale))
    width = 4.0 / scale if scale < 1 else 4.0
    u = np.arange(1, n_out + 1) / scale + 0.5 * (1 - 1 / scale)
    left = np.floor(u - width / 2)
    idx = left[:, None] + np.arange(int(math.ceil(width)) + 2)[None, :]
    dist = u[:, None] - idx
    w = scale * _cubic(scale * dist) if scale < 1 else _cubic(dist)
    w /= w.sum(axis=1, keepdims=True)
    mirror = np.concatenate([np.arange(n_in), np.arange(n_in)[::-1]])  # symmetric padding
    cols = mirror[np.mod(idx.astype(np.int64) - 1, 2 * n_in)]
    used = np.any(w != 0, axis=0)  # as the reference, which drops the all-zero columns of its weights
    cols, w = np.ascontiguousarray(cols[:, used]), np.ascontiguousarray(w[:, used])
    cols.setflags(write=False)
    w.setflags(write=False)
    return cols, w


def _resize_rows(img: np.ndarray, n_out_scale: float) -> np.ndarray:
    """``imresize`` along axis 0: a weighted sum of a few gathered rows per tap."""
    cols, w = _resize_taps(img.shape[0], n_out_scale)
    out = w[:, 0, None] * img[cols[:, 0]]
    for k in range(1, cols.shape[1]):
        out += w[:, k, None] * img[cols[:, k]]
    return out


def imresize_half(img: np.ndarray) -> np.ndarray:
    """MATLAB's ``imresize(img, 0.5)`` of a 2-D float image, rows then columns, as sums over each output
    pixel's taps. Numpy's elementwise loops only: a BLAS product (numpy's or torch's) leaves its threads
    spinning on the cores after it returns, against whatever runs next (the search scores many states)."""
    img = np.asarray(img, np.float64)
    return np.ascontiguousarray(_resize_rows(np.ascontiguousarray(_resize_rows(img, 0.5).T), 0.5).T)


@lru_cache(maxsize=1)
def _window_1d() -> np.ndarray:
    g = np.exp(-((np.arange(7) - 3) ** 2) / (2 * (7 / 6) ** 2))
    return g / g.sum()  # the 7x7 window is its outer product with itself


def _filter(img: np.ndarray, mode: str) -> np.ndarray:
    """7x7 Gaussian (sigma 7/6) correlation, 'same' size; ``mode`` is how the border is padded."""
    from ...tools.imageops import correlate_separable

    return correlate_separable(np.asarray(img, np.float64), _window_1d(), _window_1d(),
                               "zero" if mode == "zero" else "replicate")


def mscn(img: np.ndarray, border: str) -> tuple[np.ndarray, np.ndarray]:
    square = img * img
    if img.shape[1] % 4 == 0:
        # both local means in one filter call, as two channels: half the calls, the same arithmetic for each
        # value (the filter's only per-row exception is at the last width mod 4 values: none here)
        both = _filter(np.stack([img, square], axis=2), border)
        mu, second = both[:, :, 0], both[:, :, 1]
    else:
        mu, second = _filter(img, border), _filter(square, border)
    sigma = np.sqrt(np.abs(second - mu * mu))
    return (img - mu) / (sigma + 1.0), sigma


# ---------------------------------------------------------------------------- distribution fits

def fit_ggd(vec: np.ndarray) -> tuple[float, float]:
    """Generalised Gaussian shape and variance by moment matching on the reference grid."""
    sigma_sq = float(np.mean(vec * vec))
    e = float(np.mean(np.abs(vec)))
    if e <= 0:  # a flat image has no structure to fit
        return float("nan"), sigma_sq
    rho = sigma_sq / (e * e)
    return float(_SHAPE_GRID[_nearest_on_grid(_gamma_tables()[1], np.array(rho), squared=False)]), sigma_sq


def fit_aggd(vec: np.ndarray) -> tuple[float, float, float]:
    """Asymmetric generalised Gaussian: shape, left std, right std (NaN stds where a side is empty)."""
    vec = np.asarray(vec, np.float64).ravel()
    # each side's sums from its clipped copy (zeros add nothing): fewer passes than indexing each side
    neg, pos = np.minimum(vec, 0.0), np.maximum(vec, 0.0)
    n_neg, n_pos = np.count_nonzero(neg), np.count_nonzero(pos)
    # einsum, not `@`: no BLAS call (see matlab_gray)
    neg_sq, pos_sq = float(np.einsum("i,i->", neg, neg)), float(np.einsum("i,i->", pos, pos))
    left = math.sqrt(neg_sq / n_neg) if n_neg else float("nan")
    right = math.sqrt(pos_sq / n_pos) if n_pos else float("nan")
    energy = (neg_sq + pos_sq) / vec.size
    if not (energy > 0 and left > 0 and right > 0):  # flat, or only one sign: no shape to fit
        return float("nan"), left, right
    gammahat = left / right
    rhat = (float(pos.sum() - neg.sum()) / vec.size) ** 2 / energy
    rhatnorm = rhat * (gammahat ** 3 + 1) * (gammahat + 1) / (gammahat ** 2 + 1) ** 2
    if not math.isfinite(rhatnorm):
        return float("nan"), left, right
    return float(_SHAPE_GRID[_nearest_on_grid(_gamma_tables()[0], np.array(rhatnorm))]), left, right


def fit_aggd_rows(vecs: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``fit_aggd`` on every row of ``vecs`` at once (NIQE fits 5 per block, and the search scores many states)."""
    n_neg, n_pos = np.empty(len(vecs), np.int64), np.empty(len(vecs), np.int64)
    neg_sq, pos_sq, neg_sum, pos_sum = (np.empty(len(vecs)) for _ in range(4))
    # a few rows at a time, about a megabyte: each side's copy is then read again from the cache, not from memory
    # (three times faster on NIQE's 96 px blocks). Each row's sums are the same either way, but for a piece of one
    # row, which numpy's einsum sums in another order: a last row on its own joins the piece before it
    step = max(2, (1 << 20) // max(1, vecs.shape[1] * vecs.itemsize))
    starts = list(range(0, len(vecs), step))
    if len(starts) > 1 and len(vecs) - starts[-1] == 1:
        starts.pop()
    for at, end in zip(starts, starts[1:] + [len(vecs)]):
        rows = slice(at, end)
        neg, pos = np.minimum(vecs[rows], 0.0), np.maximum(vecs[rows], 0.0)  # each side, zeros elsewhere
        # a row at a time on a boolean mask: numpy's count along an axis of floats is several times slower
        n_neg[rows] = [np.count_nonzero(row) for row in neg != 0]
        n_pos[rows] = [np.count_nonzero(row) for row in pos != 0]
        neg_sq[rows], pos_sq[rows] = np.einsum("ij,ij->i", neg, neg), np.einsum("ij,ij->i", pos, pos)
        neg_sum[rows], pos_sum[rows] = neg.sum(axis=1), pos.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        left = np.where(n_neg > 0, np.sqrt(neg_sq / np.maximum(n_neg, 1)), np.nan)
        right = np.where(n_pos > 0, np.sqrt(pos_sq / np.maximum(n_pos, 1)), np.nan)
        energy = (neg_sq + pos_sq) / vecs.shape[1]
        gammahat = left / right
        rhat = ((pos_sum - neg_sum) / vecs.shape[1]) ** 2 / energy
        rhatnorm = rhat * (gammahat ** 3 + 1) * (gammahat + 1) / (gammahat ** 2 + 1) ** 2
    ok = (energy > 0) & (left > 0) & (right > 0) & np.isfinite(rhatnorm)
    shape = np.full(len(vecs), np.nan)
    if ok.any():
        shape[ok] = _SHAPE_GRID[_nearest_on_grid(_gamma_tables()[0], rhatnorm[ok])]
    return shape, left, right


# ---------------------------------------------------------------------------- BRISQUE

_BRISQUE_SHIFTS = ((0, 1), (1, 0), (1, 1), (-1, 1))


def brisque_features(gray255: np.ndarray, half: np.ndarray | None = None) -> np.ndarray:
    """The 36 BRISQUE features (18 per scale) of a gray image in 0..255 (``half``: its ``imresize_half``, when
    already made)."""
    feats: list[float] = []
    img = np.asarray(gray255, np.float64)
    for scale in range(2):
        struct, _ = mscn(img, "zero")
        alpha, var = fit_ggd(struct.ravel())
        feats += [alpha, var]
        for shift in _BRISQUE_SHIFTS:
            pair = (struct * np.roll(struct, shift, axis=(0, 1))).ravel()
            a, left, right = fit_aggd(pair)
            const = math.sqrt(math.gamma(1 / a)) / math.sqrt(math.gamma(3 / a))
            mean = (right - left) * (math.gamma(2 / a) / math.gamma(1 / a)) * const
            feats += [a, mean, left * left, right * right]
        if scale == 0:
            img = imresize_half(img) if half is None else half
    return np.array(feats)


@lru_cache(maxsize=1)
def _brisque_model() -> dict[str, np.ndarray]:
    path = DATA / "brisque_live.npz"
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k].astype(np.float64) for k in data.files}


def brisque_from_features(feats: np.ndarray) -> float:
    m = _brisque_model()
    lo, hi = m["feature_min"], m["feature_max"]
    scaled = -1.0 + 2.0 * (feats - lo) / (hi - lo)  # libsvm's svm-scale to [-1, 1] with the training ranges
    d2 = ((m["support_vectors"] - scaled) ** 2).sum(axis=1)
    return float(m["coefficients"] @ np.exp(-float(m["gamma"]) * d2) - float(m["rho"]))


def brisque(gray255: np.ndarray, half: np.ndarray | None = None) -> float:
    """BRISQUE score of a gray image in 0..255 (lower is better; about 0..100; NaN for a flat image)."""
    img = np.asarray(gray255, np.float64)
    if min(img.shape[:2]) < 16:
        raise ValueError(f"BRISQUE needs an image of at least 16x16 pixels, got {img.shape[1]}x{img.shape[0]}")
    return brisque_from_features(brisque_features(img, half))


# ---------------------------------------------------------------------------- NIQE

_NIQE_SHIFTS = ((0, 1), (1, 0), (1, 1), (1, -1))
NIQE_BLOCK = 96


def _wrapped(d: int, size: int) -> tuple[tuple[slice, slice], ...]:
    """Along one axis of length ``size``: (where, neighbour) slice pairs so that ``x[where] * x[neighbour]`` is
    each position times the one ``d`` before it, wrapping around (what ``np.roll`` by ``d`` pairs it with)."""
    d %= size
    return (slice(d, size), slice(0, size - d)), (slice(0, d), slice(size - d, size))


def _shifted_products(blocks: np.ndarray, shifts, out: np.ndarray) -> None:
    """``blocks * np.roll(blocks, shift, axis=(1, 2))`` for each shift, into ``out[k]``: the same products
    (each pixel times its wrapped neighbour within the block) written by slices instead of a rolled copy."""
    size = blocks.shape[1]
    for k, (dy, dx) in enumerate(shifts):
        for ys, yn in _wrapped(dy, size):
            for xs, xn in _wrapped(dx, size):
                np.multiply(blocks[:, ys, xs], blocks[:, yn, xn], out=out[k][:, ys, xs])


def _niqe_scale_features(struct: np.ndarray, size: int, rows: int, cols: int) -> np.ndarray:
    """The 18 features of every ``size`` block of one scale's MSCN image (rows: blocks, column by column)."""
    from scipy.special import gamma

    n = rows * cols
    # the blocks and their four neighbour products, fitted in one call
    fits = np.empty((1 + len(_NIQE_SHIFTS), n, size, size))
    blocks = fits[0]
    blocks.reshape(cols, rows, size, size)[...] = struct[: rows * size, : cols * size].reshape(
        rows, size, cols, size).transpose(2, 0, 1, 3)  # column-major order of the blocks, as the reference
    _shifted_products(blocks, _NIQE_SHIFTS, fits[1:])
    a_all, left_all, right_all = (x.reshape(len(fits), n) for x in fit_aggd_rows(fits.reshape(len(fits) * n, -1)))
    with np.errstate(invalid="ignore"):
        a, left, right = a_all[0], left_all[0], right_all[0]
        c = np.sqrt(gamma(1 / a) / gamma(3 / a))
        feats = [a, (left * c + right * c) / 2]
        for k in range(1, len(fits)):  # products with neighbours, wrapping within each block like np.roll on it
            a, left, right = a_all[k], left_all[k], right_all[k]
            c = np.sqrt(gamma(1 / a) / gamma(3 / a))
            bl, br = left * c, right * c
            mean = (br - bl) * (gamma(2 / a) / gamma(1 / a))
            bad = ~np.isfinite(a)
            feats += [a, np.where(bad, np.nan, mean), np.where(bad, np.nan, bl), np.where(bad, np.nan, br)]
    return np.stack(feats, axis=1)


def niqe_features(gray255: np.ndarray, half: np.ndarray | None = None, pool: Executor | None = None) -> np.ndarray:
    """Per-block NIQE features (rows: 96 px blocks; 36 columns over two scales). ``half``: the ``imresize_half``
    of the image when already made (used only when the image is whole blocks, so nothing is cut off first);
    ``pool``: a spare thread that measures the coarse scale while this one measures the fine one."""
    img = np.asarray(gray255, np.float64)
    rows, cols = img.shape[0] // NIQE_BLOCK, img.shape[1] // NIQE_BLOCK
    if img.shape[:2] != (rows * NIQE_BLOCK, cols * NIQE_BLOCK):
        img, half = img[: rows * NIQE_BLOCK, : cols * NIQE_BLOCK], None

    def scale_features(level: np.ndarray, size: int) -> np.ndarray:
        return _niqe_scale_features(mscn(level, "replicate")[0], size, rows, cols)

    half = imresize_half(img) if half is None else half
    coarse = pool.submit(scale_features, half, NIQE_BLOCK >> 1) if pool is not None else None
    fine = scale_features(img, NIQE_BLOCK)
    return np.hstack([fine, coarse.result() if coarse is not None else scale_features(half, NIQE_BLOCK >> 1)])


@lru_cache(maxsize=1)
def _niqe_model() -> tuple[np.ndarray, np.ndarray]:
    with np.load(DATA / "niqe_pristine.npz", allow_pickle=False) as data:
        return data["mu"].astype(np.float64).ravel(), data["cov"].astype(np.float64)


def niqe(gray255: np.ndarray, half: np.ndarray | None = None, pool: Executor | None = None) -> float:
    """NIQE of a gray image in 0..255 (lower is better; needs at least 192x192 pixels; NaN for a flat image);
    ``half`` and ``pool`` as for ``niqe_features``."""
    img = np.asarray(gray255, np.float64)
    if min(img.shape[:2]) < 2 * NIQE_BLOCK:
        raise ValueError(f"NIQE needs an image of at least {2 * NIQE_BLOCK}x{2 * NIQE_BLOCK} pixels, "
                         f"got {img.shape[1]}x{img.shape[0]}")
    feats = niqe_features(img, half, pool)
    mu_pristine, cov_pristine = _niqe_model()
    complete = feats[~np.isnan(feats).any(axis=1)]
    if not len(complete):
        return float("nan")  # no block has natural-scene structure (a flat image)
    mu = np.nanmean(feats, axis=0)
    cov = np.cov(complete, rowvar=False) if len(complete) > 1 else np.zeros_like(cov_pristine)
    diff = mu_pristine - mu
    return float(math.sqrt(max(0.0, diff @ np.linalg.pinv((cov_pristine + cov) / 2) @ diff)))


__all__ = ["brisque", "brisque_features", "fit_aggd", "fit_ggd", "imresize_half", "matlab_gray", "mscn", "niqe",
           "niqe_features", "to_gray255"]
