"""The rule brain's expert role for IMAGAgent's critic panel: quality (the reward's change), fidelity
(structure kept) and intent (the subtask's measurable check), each a score with typed direction."""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..quality.measure import check as run_check
from ..quality.measure import measure
from ..quality.metrics import structure_similarity
from .checks import intent_check

if TYPE_CHECKING:
    from .brain import RuleBrain


def _quality(brain: RuleBrain, before: np.ndarray, after: np.ndarray) -> dict:
    delta = brain.reward.score(after, before).total - brain.reward.score(before, before).total
    score = max(0.0, min(10.0, 7.0 + 30.0 * delta))
    neg = "the edit lowered the photo's quality (exposure, clipping, noise or colour)" if delta < -0.01 else ""
    return {"score": round(score, 3), "positive": "keep the quality gain" if delta > 0 else "",
            "negative": neg, "direction": "less" if neg else "keep"}


def _fidelity(before: np.ndarray, after: np.ndarray) -> dict:
    if before.shape[:2] != after.shape[:2]:
        return {"score": 8.0, "positive": "the new framing was asked for", "negative": "", "direction": "keep"}
    sim = structure_similarity(before, after)
    score = max(0.0, min(10.0, (sim - 0.5) / 0.45 * 10.0))
    ok = sim >= 0.9
    return {"score": round(score, 3), "positive": f"structure similarity {sim:.2f}" if ok else "",
            "negative": "" if ok else f"too much of the photo changed (structure similarity {sim:.2f}); too strong",
            "direction": "keep" if ok else "less"}


def _intent(name: str, subtask, before: np.ndarray, after: np.ndarray) -> tuple[dict, list[str]]:
    chk = intent_check(subtask.tool, subtask.goal, before.shape[1::-1])
    if not chk:
        return {"score": 0.0, "judged": False, "positive": "",
                "negative": f"cannot measure '{subtask.goal}' offline; unknown"}, \
               [f"{name}: cannot judge '{subtask.goal}' without a VLM brain"]
    mb, ma = measure(before), measure(after)
    ans, why, achieved = run_check(chk, mb, ma, before, after)
    if ans == "yes" and achieved <= 3.0:
        return {"score": round(min(10.0, 7.0 + 3.0 * min(achieved, 1.0)), 3), "positive": f"{why}; keep it",
                "negative": "", "direction": "keep"}, []
    if ans == "yes":
        return {"score": 6.0, "positive": why, "negative": f"{why}: too strong, overdone", "direction": "less"}, []
    if achieved < 0:
        return {"score": 1.0, "positive": "", "negative": f"{why}: went the wrong way", "direction": "reverse"}, []
    return {"score": round(2.0 + 4.0 * max(0.0, achieved), 3), "positive": "",
            "negative": f"{why}: not enough, too weak", "direction": "more"}, []


def judge(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The expert role: the named expert's critique of the subtask's result against the photo before it."""
    before, after = images[0], images[-1]
    name, subtask = ctx["expert"], ctx["subtask"]
    if name == "quality":
        return _quality(brain, before, after), []
    if name == "fidelity":
        return _fidelity(before, after), []
    return _intent(name, subtask, before, after)
