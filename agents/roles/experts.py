"""IMAGAgent's experts and aggregator: each expert's critique of one subtask, and the panel's verdict (score,
whether it was judged and done, which way to move) computed from them."""
from __future__ import annotations

import numpy as np

from .. import schemas
from ..brain import Brain, BrainRequest
from ..records import Critique, Direction, Feedback, Subtask
from .asking import PROMPTS, Where, ask, prompt


async def critique(brain: Brain, expert: str, subtask: Subtask, before: np.ndarray, after: np.ndarray,
                   where: Where) -> Critique:
    rubric = f"expert_{expert}" if (PROMPTS / f"expert_{expert}.md").is_file() else "expert_any"  # a custom panel
    req = BrainRequest(role="expert", system=prompt("expert", expert=expert, rubric=prompt(rubric)),
                       text=f"Subtask: {subtask.goal} (tool {subtask.tool})", schema=schemas.EXPERT,
                       images=[before, after], context={"expert": expert, "subtask": subtask})
    data = (await ask(brain, req, where, f"expert {expert} on subtask {subtask.index}")).data
    return Critique(expert=expert, score=float(data["score"]), positive=data["positive"], negative=data["negative"],
                    subtask=subtask.index, judged=bool(data.get("judged", True)), direction=data.get("direction"))


UNDONE: tuple[Direction, ...] = ("more", "reverse")  # an expert's word that the subtask was not carried out


def _intent_voices(critiques: list[Critique]) -> list[Critique]:
    """Who can say whether the subtask was carried out: the intent expert when the panel has one and it judged,
    else every judged expert (a custom panel; each scores the shared rubric, semantic alignment included)."""
    judged = [c for c in critiques if c.judged and c.direction]
    intent = [c for c in judged if c.expert == "intent"]
    return intent or ([] if any(c.expert == "intent" for c in critiques) else judged)


def direction_of(critiques: list[Critique]) -> Direction | None:
    """Which way the next attempt should move. Not carried out (the intent expert says "more" or "reverse") comes
    first; otherwise any judged expert's call for a change (a "keep" from one never hides another's "less"); keep
    when every judged expert says so; None when nobody said."""
    voices = _intent_voices(critiques)
    undone = [c.direction for c in voices if c.direction in UNDONE]
    if undone and len(undone) * 2 > len(voices):
        return undone[0]
    judged = [c for c in critiques if c.judged and c.direction]
    change = [c.direction for c in judged if c.direction != "keep" and c.direction not in UNDONE] or \
             [c.direction for c in judged if c.direction != "keep"]
    return change[0] if change else ("keep" if judged else None)


def intent_done(critiques: list[Critique]) -> bool | None:
    """False when the intent was judged not carried out (the intent expert, or most of a custom panel, says
    "more" or "reverse"): IMAGAgent never accepts such a subtask, whatever S. None when nobody said."""
    voices = _intent_voices(critiques)
    if not voices:
        return None
    return sum(c.direction in UNDONE for c in voices) * 2 <= len(voices)


def verdict(critiques: list[Critique]) -> tuple[float, bool]:
    """IMAGAgent's S: the mean score of the experts who could judge, and whether the subtask was judged at all.

    Only an intent expert can say whether the edit did what was asked: when the panel has one and it could
    not judge, quality and fidelity alone do not make the subtask done.
    """
    judged = [c for c in critiques if c.judged]
    intent = [c for c in critiques if c.expert == "intent"]
    is_judged = bool(judged) and (not intent or any(c.judged for c in intent))
    return (round(sum(c.score for c in judged) / len(judged), 3) if judged else 0.0), is_judged


def merged(critiques: list[Critique], positive: str, negative: str) -> Feedback:
    """The panel's verdict on one attempt with the merged text: S, judged, done and the direction, computed."""
    score, judged = verdict(critiques)
    return Feedback(score=score, positive=positive, negative=negative, experts=list(critiques), judged=judged,
                    direction=direction_of(critiques), done=intent_done(critiques))


async def aggregate(brain: Brain, critiques: list[Critique], where: Where) -> Feedback:
    """The aggregator brain merges the critiques' text; the score is ``verdict``, computed here, not asked for."""
    if not critiques:
        raise ValueError("the aggregator needs at least one critique")
    req = BrainRequest(role="aggregator", system=prompt("aggregator"),
                       text="\n".join(f"- {c.expert}: " + (f"score {c.score:.1f}" if c.judged else "could not judge")
                                      + f"; positive: {c.positive or '-'}; negative: {c.negative or '-'}"
                                      for c in critiques),
                       schema=schemas.AGGREGATE, context={"critiques": critiques})
    data = (await ask(brain, req, where, f"aggregate {len(critiques)} critiques")).data
    return merged(critiques, data["positive"], data["negative"])
