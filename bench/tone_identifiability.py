"""How many darkened or brightened cases can a rule on global tone statistics tell from a clean photo?

A rule that reads only the photo's global tone (its white level and mean brightness, as the rule perceiver
and the reward do) and brightens a photo because it is dark must also brighten every photo that is darker on
both. So a darkened case is *dominated* when some clean photo (any photo the project has, other than the
case's own original) has a white level and a mean at or below the case's: no such monotone rule can fix the
case and leave that clean photo alone. Brightened cases are judged the same way from above. The figure is an
upper bound on what the offline perceiver can reach on these families without harming a clean photo; it
says nothing about rules that read more than the global tone (local evidence, a vision model).

    python bench/tone_identifiability.py                    # about 20 s
    python bench/tone_identifiability.py --comfy-pictures   # ComfyUI's template pictures counted as clean too

With ``--comfy-pictures`` the clean pictures include every picture ComfyUI's workflow templates show
(photoset.comfy_pictures: generated portraits, products, night scenes, 3D renders, control maps), which nothing in the
project was tuned on: a rule on the global tone has to spare those as well.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Iterable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "support"))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, comfy_pictures, load  # noqa: E402

from edit_agents.agents.quality.metrics import global_statistics  # noqa: E402

# I03 and I19 are distorted images (a heavy blur, a heavy JPEG: photoagent_generalise.NO_REFERENCE), not clean photos
CLEAN = EVALUATION + CALIBRATION + ("retina",)
DARKER = ("gain-linear", "gamma-dark", "curve-dark", "crushed-blacks", "compressed-highlights")
BRIGHTER = ("over-gain-linear", "gamma-bright", "clipped-highlights")


def tone(img) -> tuple[float, float]:
    stats = global_statistics(img)
    return stats["white_level"], stats["mean_luma"]


def dominated(case: tuple[float, float], own: str, clean: dict[str, tuple[float, float]], darker: bool) -> list[str]:
    """The clean photos (not ``own``) a monotone rule could not spare while fixing ``case``."""
    if darker:
        return [p for p, (w, m) in clean.items() if p != own and w <= case[0] and m <= case[1]]
    return [p for p, (w, m) in clean.items() if p != own and w >= case[0] and m >= case[1]]


def other_pictures(read: Callable[[np.ndarray], object], comfy: bool) -> dict[str, object]:
    """ComfyUI's template pictures read with ``read`` (none without ``comfy``); says what the table's last columns
    hold."""
    if not comfy:
        return {}
    others = {p: read(load(p)) for p in comfy_pictures()}
    if not others:
        raise SystemExit("--comfy-pictures: none of ComfyUI's template packages is installed "
                         "(make setup installs them)")
    print(f"and ComfyUI's template pictures ({len(others)}) as clean too, in the last columns: the cases dominated, "
          "and how many of those pictures a rule fixing a case must edit too (median over the cases, lower quartile)")
    return others


def bound_table(families: Iterable[str], per_family: int, read: Callable[[np.ndarray], object],
                dominated_by: Callable[[object, str, dict, str], list[str]], clean: dict[str, object],
                others: dict[str, object], skip: Callable[[object], bool] = lambda case: False) -> None:
    """Per family, the cases some clean photo dominates (``dominated_by(case, own photo, clean, family)``), and with
    ``others`` (ComfyUI's pictures) counted as clean too, those and how many of the others a fix would edit.
    ``skip``: cases that are no case of their family (colour made on a black-and-white photo)."""
    wider = {**clean, **others}
    print(f"\n{'family':<24}{'cases':>6}{'dominated':>11}   by (most often)"
          + (f"{'':<44}{'with ComfyUI':>14}{'edits':>8}{'q25':>6}   by (most often)" if others else ""))
    total = hidden = hidden_wider = 0
    for family in families:
        counts: dict[str, int] = {}
        counts_wider: dict[str, int] = {}
        n = k = k_wider = 0
        edits: list[int] = []  # per case: how many of ComfyUI's pictures a rule fixing it must edit too
        for photo in EVALUATION:
            for index in range(per_family):
                case = read(defects.make(load(photo), photo, family, index)[0])
                if skip(case):
                    continue
                by = dominated_by(case, photo, clean, family)
                n += 1
                k += bool(by)
                for p in by:
                    counts[p] = counts.get(p, 0) + 1
                if others:
                    by_wider = dominated_by(case, photo, wider, family)
                    k_wider += bool(by_wider)
                    edits.append(sum(p in others for p in by_wider))
                    for p in by_wider:
                        counts_wider[p] = counts_wider.get(p, 0) + 1
        total, hidden, hidden_wider = total + n, hidden + k, hidden_wider + k_wider
        top = ", ".join(p for p, _ in sorted(counts.items(), key=lambda kv: -kv[1])[:3])
        line = f"{family:<24}{n:>6}{k:>8} ({100 * k / max(n, 1):.0f}%)   {top}"
        if others:
            top_wider = ", ".join(p.rsplit("/", 1)[-1].removesuffix(".webp")
                                  for p, _ in sorted(counts_wider.items(), key=lambda kv: -kv[1])[:2])
            line = (f"{line:<88}{k_wider:>6} ({100 * k_wider / max(n, 1):.0f}%){int(np.median(edits)):>8}"
                    f"{int(np.percentile(edits, 25)):>6}   {top_wider}")
        print(line)
    last = f"{'all':<24}{total:>6}{hidden:>8} ({100 * hidden / total:.0f}%)"
    print(f"{last:<88}{hidden_wider:>6} ({100 * hidden_wider / total:.0f}%)" if others else last)


def main(per_family: int = 2, comfy: bool = False) -> None:
    clean = {p: tone(load(p)) for p in CLEAN}
    print(f"clean photos ({len(clean)}): " + ", ".join(f"{p} w{w:.2f} m{m:.2f}" for p, (w, m) in clean.items()))
    others = other_pictures(tone, comfy)
    bound_table(DARKER + BRIGHTER, per_family, tone,
                lambda case, own, pool, family: dominated(case, own, pool, family in DARKER), clean, others)


def command_line(main: Callable[[int, bool], None], doc: str) -> None:
    """Run a bound bench's ``main`` with its options read from the command line (``doc``: the script's docstring)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--per-family", type=int, default=2, help="cases per photo and family (default 2)")
    ap.add_argument("--comfy-pictures", action="store_true",
                    help="count ComfyUI's template pictures as clean too (photoset.comfy_pictures)")
    a = ap.parse_args()
    main(a.per_family, a.comfy_pictures)


if __name__ == "__main__":
    command_line(main, __doc__)
