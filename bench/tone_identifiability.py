"""How many darkened or brightened cases can a rule on global tone statistics tell from a clean photo?

A rule that reads only the photo's global tone (its white level and mean brightness, as the rule perceiver
and the reward do) and brightens a photo because it is dark must also brighten every photo that is darker on
both. So a darkened case is *dominated* when some clean photo (any photo the project has, other than the
case's own original) has a white level and a mean at or below the case's: no such monotone rule can fix the
case and leave that clean photo alone. Brightened cases are judged the same way from above. The figure is an
upper bound on what the offline perceiver can reach on these families without harming a clean photo; it
says nothing about rules that read more than the global tone (local evidence, a vision model).

    python bench/tone_identifiability.py   # about 20 s
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import defects  # noqa: E402
from photoset import CALIBRATION, EVALUATION, load  # noqa: E402

from edit_agents.agents.metrics import global_statistics  # noqa: E402

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


def main(per_family: int = 2) -> None:
    clean = {p: tone(load(p)) for p in CLEAN}
    print(f"clean photos ({len(clean)}): " + ", ".join(f"{p} w{w:.2f} m{m:.2f}" for p, (w, m) in clean.items()))
    print(f"\n{'family':<24}{'cases':>6}{'dominated':>11}   by (most often)")
    total = hidden = 0
    for family in DARKER + BRIGHTER:
        counts: dict[str, int] = {}
        n = k = 0
        for photo in EVALUATION:
            for index in range(per_family):
                img, _ = defects.make(load(photo), photo, family, index)
                by = dominated(tone(img), photo, clean, family in DARKER)
                n += 1
                k += bool(by)
                for p in by:
                    counts[p] = counts.get(p, 0) + 1
        total, hidden = total + n, hidden + k
        top = ", ".join(p for p, _ in sorted(counts.items(), key=lambda kv: -kv[1])[:3])
        print(f"{family:<24}{n:>6}{k:>8} ({100 * k / n:.0f}%)   {top}")
    print(f"{'all':<24}{total:>6}{hidden:>8} ({100 * hidden / total:.0f}%)")


if __name__ == "__main__":
    main()
