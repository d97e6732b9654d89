"""What evidence of a tone curve is there beyond the global histogram? Three measurements (issue 27).

1. **A blind estimate of the tone curve** (Farid, "Blind inverse gamma correction", IEEE TIP 2001). A pointwise
   curve applied to a photo couples each spatial frequency with its harmonics, which shows as bicoherence (a
   normalised third-order spectrum). The estimate is the exponent e for which the photo raised to e has the least
   bicoherence over its rows and columns. If it told a photo's encoding apart from a darkening or brightening curve,
   it would be evidence of the curve that the white level and the mean do not give (bench/tone_identifiability.py).
   Measured: (a) the estimate on every clean photo (would a threshold on it leave them all alone?), and (b) whether
   it follows a known gamma put on the same photo (the gamma-dark and gamma-bright cases: the estimate should move
   from the clean photo's by the factor 1 / gamma).
2. **The same estimate per channel.** A gain per channel (a white balance, a colour cast) leaves each channel's curve
   as it was, while a curve per channel (a film process) bends each its own way. Measured: the largest ratio between
   the three channels' estimates on the clean photos, on the tuned colour families (temperature, tint, channel gains)
   and, measured only (nothing is tuned on them), on the held-out cross-process and split-tone families.
3. **The reward on a brightening the perceiver does not propose.** A gamma brightening (1.2 to 2) scored by the shipped
   offline reward on the darkened cases and on the clean photos: if the reward preferred it only on the darkened
   ones, the perceiver's gate could be opened and the reward left to decide.

    python bench/tone_curve_evidence.py --jobs 2   # about 5 minutes on 2 cores
"""
from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

CLEAN = EVALUATION + CALIBRATION + ("retina",)  # as in tone_identifiability.py (I03 and I19 are distorted images)
SIDE = 512
SEGMENT = 64  # samples per 1-D segment (rows and columns), half overlapping, Hann-windowed
BANDS = 16  # frequencies 1..16 of 64: pairs (k1, k2) with k1 >= k2, k1 + k2 <= 32
EXPONENTS = np.exp(np.linspace(np.log(0.25), np.log(4.0), 25))  # the grid searched; its ends are reported as such
GAMMAS = (1.2, 1.4, 1.7, 2.0)  # the brightening tried in part 3 (the gamma tool: above 1 brightens)
CHANNEL_FAMILIES = ("temperature", "tint", "channel-gains")
HELD_OUT_FAMILIES = ("cross-process", "split-tone")

_K1, _K2 = np.meshgrid(np.arange(1, BANDS + 1), np.arange(1, BANDS + 1), indexing="ij")
_K1, _K2 = _K1[_K1 >= _K2], _K2[_K1 >= _K2]
_WINDOW = np.hanning(SEGMENT)


def segments(plane: np.ndarray) -> np.ndarray:
    """Half-overlapping 1-D segments of the rows and the columns of a plane, one per row of the result."""
    out = []
    for lines in (plane, plane.T):
        usable = lines[:, : (lines.shape[1] // (SEGMENT // 2)) * (SEGMENT // 2)]
        if usable.shape[1] < SEGMENT:
            continue
        view = np.lib.stride_tricks.sliding_window_view(usable, SEGMENT, axis=1)[:, :: SEGMENT // 2]
        out.append(view.reshape(-1, SEGMENT))
    return np.concatenate(out)


def bicoherence(segs: np.ndarray) -> float:
    """Mean bicoherence magnitude over the frequency pairs, from the segments (each made zero-mean first; flat
    segments, with nothing to couple, are left out)."""
    s = segs - segs.mean(axis=1, keepdims=True)
    s = s[s.std(axis=1) > 1e-3]
    if len(s) < 16:
        return float("nan")
    spectrum = np.fft.rfft(s * _WINDOW, axis=1)
    a, b, c = spectrum[:, _K1], spectrum[:, _K2], spectrum[:, _K1 + _K2]
    triple = (a * b * np.conj(c)).mean(axis=0)
    norm = np.sqrt((np.abs(a * b) ** 2).mean(axis=0) * (np.abs(c) ** 2).mean(axis=0)) + 1e-30
    return float((np.abs(triple) / norm).mean())


def blind_exponent(plane: np.ndarray) -> float:
    """The exponent e (of EXPONENTS) for which ``plane ** e`` has the least bicoherence: Farid's estimate of the
    curve to undo (a photo raised to a gamma g reads about 1 / g of what it read before)."""
    segs = segments(np.clip(plane.astype(np.float64), 1 / 255, 1.0))
    scores = [bicoherence(segs ** e) for e in EXPONENTS]
    if not np.isfinite(scores).any():
        return float("nan")
    return float(EXPONENTS[int(np.nanargmin(scores))])


def luma(img: np.ndarray) -> np.ndarray:
    return img[..., :3] @ np.array([0.299, 0.587, 0.114]) if img.ndim == 3 else img


def channel_exponents(img: np.ndarray) -> list[float]:
    return [blind_exponent(img[..., c]) for c in range(3)] if img.ndim == 3 else [blind_exponent(img)] * 3


def spread(exps: list[float]) -> float:
    """The largest ratio between two channels' estimates (1: one curve for all three)."""
    return float(max(exps) / min(exps))


def at_end(e: float) -> str:
    return " (grid end)" if e <= EXPONENTS[0] * 1.001 or e >= EXPONENTS[-1] * 0.999 else ""


def _photo(name: str) -> np.ndarray:
    return np.clip(load(name, SIDE), 0, 1).astype(np.float32)


def _case(photo: str, family: str, index: int) -> tuple[np.ndarray, str]:
    img, case = defects.make(_photo(photo), photo, family, index)
    return np.clip(img, 0, 1).astype(np.float32), case.label()


def clean_job(photo: str) -> dict:
    img = _photo(photo)
    return {"photo": photo, "luma": blind_exponent(luma(img)), "channels": channel_exponents(img),
            "gray": img.ndim == 2 or bool(np.abs(np.diff(img[..., :3], axis=2)).max() < 1e-6)}


def gamma_job(args: tuple[str, str, int]) -> dict:
    photo, family, index = args
    img, label = _case(photo, family, index)
    return {"photo": photo, "family": family, "label": label, "luma": blind_exponent(luma(img))}


def channel_job(args: tuple[str, str, int]) -> dict:
    photo, family, index = args
    img, label = _case(photo, family, index)
    return {"photo": photo, "family": family, "label": label, "channels": channel_exponents(img)}


def reward_job(args: tuple[str, str, int]) -> dict:
    """The shipped reward's gain for each brightening in GAMMAS (scored as the search scores a state: against the
    photo as it came), and how far each moved the photo from its clean original (mean CIEDE2000)."""
    from photoagent_fidelity import delta_e

    from edit_agents.agents.quality.reward import ClassicReward
    from edit_agents.tools import default_registry

    photo, family, index = args
    clean = _photo(photo)
    img, label = (clean, "clean") if family == "clean" else _case(photo, family, index)
    reward, tools = ClassicReward(), default_registry()
    before = reward.score(img, img).total
    out = []
    for g in GAMMAS:
        edited = tools.call("gamma", img, {"gamma": g})[0]
        out.append((g, reward.score(edited, img).total - before, delta_e(edited, clean) - delta_e(img, clean)))
    return {"photo": photo, "family": family, "label": label, "gains": out}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--jobs", type=int, default=1)
    args = ap.parse_args()
    dark_cases = [(p, f, i) for f in ("gamma-dark", "gamma-bright") for p in EVALUATION for i in (0, 1)]
    colour_cases = [(p, f, i) for f in CHANNEL_FAMILIES + HELD_OUT_FAMILIES for p in EVALUATION for i in (0, 1)]
    reward_cases = ([(p, f, i) for f in ("gamma-dark", "curve-dark") for p in EVALUATION for i in (0, 1)]
                    + [(p, "clean", 0) for p in CLEAN])
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        clean = {r["photo"]: r for r in pool.map(clean_job, CLEAN)}
        tracked = list(pool.map(gamma_job, dark_cases))
        coloured = list(pool.map(channel_job, colour_cases))
        rewarded = list(pool.map(reward_job, reward_cases))

    print(f"1. blind exponent (Farid 2001: least bicoherence of the photo raised to e, e in {EXPONENTS[0]:.2f}.."
          f"{EXPONENTS[-1]:.2f}), luminance, {SIDE} px")
    print("   (a) clean photos: " + ", ".join(f"{p} {r['luma']:.2f}{at_end(r['luma'])}" for p, r in clean.items()))
    values = np.array([r["luma"] for r in clean.values()])
    print(f"       spread: {values.min():.2f} to {values.max():.2f} ({values.max() / values.min():.0f}x); "
          f"{sum(bool(at_end(v)) for v in values)} of {len(values)} at an end of the grid")
    print("   (b) the same photo under a known gamma: measured against clean / gamma (where the clean estimate is "
          "inside the grid)")
    followed = total = 0
    for r in tracked:
        base = clean[r["photo"]]["luma"]
        g = float(r["label"].split("gamma=")[1].rstrip(")"))
        want = base / g
        inside = not at_end(base) and EXPONENTS[0] < want < EXPONENTS[-1]
        ok = inside and abs(np.log(r["luma"] / want)) < np.log(1.25)
        followed += ok
        total += inside
        print(f"       {r['photo']:<18} {r['label']:<24} clean {base:.2f}{at_end(base):<11} expected {want:.2f}, "
              f"measured {r['luma']:.2f}{' (within 25%)' if ok else ''}{'' if inside else ' (not counted)'}")
    print(f"       within 25% of the expected: {followed} of {total} counted cases")

    print("2. the same estimate per channel: the largest ratio between the channels' estimates (1 = one curve)")
    colour_clean = {p: r for p, r in clean.items() if not r["gray"]}
    print("   clean colour photos: " + ", ".join(f"{p} {spread(r['channels']):.2f}" for p, r in colour_clean.items()))
    for family in CHANNEL_FAMILIES + HELD_OUT_FAMILIES:
        rows = [r for r in coloured if r["family"] == family]
        tag = " (held out: measured, nothing tuned)" if family in HELD_OUT_FAMILIES else ""
        print(f"   {family}{tag}: " + ", ".join(f"{r['photo']} {spread(r['channels']):.2f}" for r in rows))
    top_clean = max(spread(r["channels"]) for r in colour_clean.values())
    for family in CHANNEL_FAMILIES + HELD_OUT_FAMILIES:
        rows = [r for r in coloured if r["family"] == family]
        above = sum(spread(r["channels"]) > top_clean for r in rows)
        print(f"   {family}: {above} of {len(rows)} above every clean colour photo ({top_clean:.2f})")

    print(f"3. the shipped offline reward's gain for a gamma brightening ({', '.join(map(str, GAMMAS))}); the best gain,"
          " and the ΔE to the clean original it brings (negative: closer)")
    for family in ("gamma-dark", "curve-dark", "clean"):
        rows = [r for r in rewarded if r["family"] == family]
        wanted = 0
        for r in rows:
            g, gain, change = max(r["gains"], key=lambda t: t[1])
            wanted += gain > 0.005  # MCTSSettings.min_gain: what the search keeps
            print(f"   {family:<10} {r['photo']:<20} {r['label'][:34]:<34} best {gain:+.3f} at gamma {g} "
                  f"(ΔE {change:+.1f})")
        print(f"   {family}: the reward keeps a brightening (gain above 0.005) on {wanted} of {len(rows)}")


if __name__ == "__main__":
    main()
