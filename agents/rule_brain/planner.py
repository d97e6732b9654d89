"""The rule brain's planner role: clauses -> tools by the specs' keywords; with no instruction, the perceiver's
actions; in CCA, the rival's plan when it scored clearly higher."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...tools.spec import ToolSpec
from ..records import EditRequest, Plan
from .checks import moves_of
from .perceiver import propose
from .words import inpaint_target, split_clauses, wants_less

if TYPE_CHECKING:
    from .brain import RuleBrain


def can_fill(spec: ToolSpec, clause: str, names: set[str]) -> bool:
    """Whether the rule executor can give every required parameter: a prompt from the words, a mask from a
    ground step ('replace X with Y' needs ground in the toolbox); never a box it would have to invent."""
    target = inpaint_target(clause)
    for p in spec.params:
        if not p.required:
            continue
        if p.type == "mask" and "ground" in names and target:
            continue
        if p.type == "string" and p.name == "prompt" and (target or not any(q.type == "mask" for q in spec.params)):
            continue
        return False
    return True


def match_tool(clause: str, tools: list[ToolSpec]) -> ToolSpec | None:
    """The tool whose keywords and name the clause says most specifically, among those the executor can fill."""
    low = f" {clause.lower()} "
    best, best_score = None, 0.0
    names = {t.name for t in tools}
    for spec in tools:
        if not can_fill(spec, clause, names):
            continue  # e.g. a crop box: the rule brain cannot choose a region from words
        score = 0.0
        for kw in spec.keywords:
            if re.search(rf"\b{re.escape(kw)}\b", low):
                score += 1.0 + len(kw) / 10.0  # several matching phrases, and longer ones, are more specific
        name = spec.name.replace("_", " ")
        if re.search(rf"\b{re.escape(name)}\b", low):
            score += 2.0 + len(name) / 10.0  # the tool's own name, said in full, is the strongest hint
        if score > best_score:
            best, best_score = spec, score
    return best


def alternative(clause: str, dropped: str, tools: list[ToolSpec]) -> ToolSpec | None:
    """Another tool for a clause: the next best by keywords, else one that moves the same measure the same
    way (brightness -> exposure, gamma, ...)."""
    others = [t for t in tools if t.name != dropped and can_fill(t, clause, {t.name for t in tools})]
    by_words = match_tool(clause, others)
    moves = moves_of(dropped)
    if by_words is not None or moves is None:
        return by_words
    return next((t for t in others if t.moves is not None and t.moves.metric == moves.metric
                 and (t.moves.follows_wording or not wants_less(clause))), None)


def autonomous_plan(brain: RuleBrain, ctx: dict, tools: list[ToolSpec]) -> tuple[dict, list[str]]:
    """Up to three subtasks, one per tool, from the perceiver's actions for the photo's statistics."""
    actions = propose(brain, ctx["stats"], [t.name for t in tools], 6, ctx["request"].mood, ())
    seen, subtasks = set(), []
    for a in actions:
        if a["tool"] in seen:
            continue
        seen.add(a["tool"])
        subtasks.append({"goal": a["rationale"], "tool": a["tool"], "rationale": a["rationale"],
                         "depends_on": [len(subtasks) - 1] if subtasks else []})
        if len(subtasks) == 3:
            break
    return {"subtasks": subtasks, "unsupported": [], "notes": "planned from the photo's statistics"}, []


def _adopted(ctx: dict, tools: list[ToolSpec]) -> tuple[dict, list[str]] | None:
    """CCA competition: the rival's plan, when the rival did clearly better (else None)."""
    rival_plan: Plan | None = ctx.get("rival_plan")
    own, rival = ctx.get("own_feedback"), ctx.get("rival_feedback")
    if not (rival_plan and own and rival and rival.score > own.score + 0.5 and rival_plan.subtasks):
        return None
    data = {"subtasks": [{"goal": s.goal, "tool": s.tool, "rationale": f"adopted from the rival ({rival.score:.1f} vs {own.score:.1f})",
                          "depends_on": s.depends_on} for s in rival_plan.subtasks if s.tool in {t.name for t in tools}],
            "unsupported": list(rival_plan.unsupported), "notes": "adopted the rival's plan: it scored higher"}
    return data, [data["notes"]]


def plan(brain: RuleBrain, ctx: dict, images: list) -> tuple[dict, list[str]]:
    """The planner role: one subtask per clause with a tool that can do it; the rest reported unsupported."""
    request: EditRequest = ctx["request"]
    tools: list[ToolSpec] = ctx["tools"]
    adopted = _adopted(ctx, tools)
    if adopted is not None:
        return adopted
    if request.mode != "instructed":
        return autonomous_plan(brain, ctx, tools)
    subtasks, unsupported, notes = [], [], []
    own = ctx.get("own_feedback")
    avoid = {" ".join(s.goal.lower().split()): s.tool for s in (own.suggestions if own else [])
             if s.kind == "another_tool"}
    for clause in split_clauses(request.instruction, tools):
        tool = match_tool(clause, tools)
        dropped = avoid.get(" ".join(clause.lower().split()))
        if tool is not None and tool.name == dropped:  # the report: this tool cannot do it, try the next best
            other = alternative(clause, dropped, tools)
            if other is not None:
                notes.append(f"'{clause}': {other.name} instead of {dropped}, as the report suggests")
                tool = other
        if tool is None:
            unsupported.append(f"{clause} (no allowed tool can do this offline; a generative editor or VLM brain is needed)")
            continue
        index = len(subtasks)
        subtasks.append({"goal": clause, "tool": tool.name, "rationale": f"matches {tool.name}: {tool.description}",
                         "depends_on": [index - 1] if index else []})
    notes += [f"cannot do: {u}" for u in unsupported]
    return {"subtasks": subtasks, "unsupported": unsupported, "notes": "; ".join(notes)}, notes
