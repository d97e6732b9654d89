"""The rule brain: the offline default. Deterministic, no network, honest about its limits.

It serves every role through the same ``ask`` interface as an LLM brain, reading the
structured ``context`` a role puts in its request instead of the prompt text:
planner (clauses -> tools by the specs' keywords), executor (parameters from the manual's
defaults, moved by numbers and direction words in the goal, then by feedback), critic
(Yes/No questions it can measure; "unknown" for what it cannot judge), experts, aggregator,
competitor and perceiver (actions from image statistics). A request it cannot serve is
reported as unsupported, never faked.
"""
from __future__ import annotations

import functools
import math
import re
import time
from typing import Any

from ..tools.spec import Moves, ToolSpec
from .brain import BrainAnswer, BrainError, BrainRequest
from .quality.measure import check as run_check
from .quality.measure import measure
from .photoagent.perceiver import RulePerceiver, guess_scene
from .records import EditRequest, Plan
from .quality.reward import ClassicReward
from .quality.metrics import METRICS, structure_similarity

STEP = math.sqrt(2.0)  # feedback moves a strength by this factor: two "too weak" rounds double it (CFG 4 -> 8)
LESS_WORDS = ("darker", "darken", "less", "reduce", "decrease", "lower", "cooler", "colder", "cool down", "desaturate",
              "muted", "softer", "dim", "weaker", "tone down", "remove")
SPLIT = re.compile(r"\s*(?:[,;.]|\band then\b|\bthen\b|\band\b|\balso\b|\bplus\b)\s*", re.I)


@functools.lru_cache(maxsize=1)
def built_in_moves() -> dict[str, Moves]:
    """What each built-in tool moves, from its spec (the critics' context names tools, not specs)."""
    from ..tools import default_registry

    tools = default_registry()
    return {name: tools.get(name).moves for name in tools.names() if tools.get(name).moves is not None}


def moves_of(tool: str | ToolSpec) -> Moves | None:
    if isinstance(tool, ToolSpec):
        return tool.moves
    return built_in_moves().get(tool)


RESHAPING = {"crop", "crop_aspect", "rotate", "flip", "expand_canvas", "resize"}
MOODS = {  # mood words -> (tool, params)
    ("warm", "cosy", "cozy", "golden", "sunny", "nostalgic"): ("temperature_tint", {"temperature": 0.3}),
    ("cool", "calm", "cold", "serene", "wintry"): ("temperature_tint", {"temperature": -0.3}),
    ("dramatic", "moody", "punchy", "bold"): ("contrast", {"amount": 0.3}),
    ("vivid", "vibrant", "lively", "happy"): ("vibrance", {"amount": 0.4}),
    ("vintage", "retro", "old"): ("sepia", {"strength": 0.5}),
    ("cinematic", "film"): ("split_toning", {"shadow_hue": 200.0, "highlight_hue": 35.0, "strength": 0.35}),
    ("dreamy", "soft"): ("gaussian_blur", {"sigma": 1.5}),
    ("bright", "airy", "light"): ("exposure", {"stops": 0.4}),
    ("dark", "gloomy", "night"): ("exposure", {"stops": -0.4}),
    ("focused", "intimate"): ("vignette", {"amount": 0.35}),
}


def split_clauses(instruction: str, tools: list[ToolSpec]) -> list[str]:
    """Clauses split at commas, 'and', 'then'..., keeping the specs' own phrases ("black and white") whole."""
    text = instruction
    names = [spec.name.replace("_", " ") for spec in tools]  # e.g. a graph tool called scale_and_blur
    phrases = sorted({kw for spec in tools for kw in spec.keywords} | set(names), key=len, reverse=True)
    phrases = [p for p in phrases if SPLIT.search(f" {p} ")]
    for i, kw in enumerate(phrases):  # a token with no word to split on stands in for the phrase
        text = re.sub(re.escape(kw), f"\x00{i}\x00", text, flags=re.I)
    clauses = []
    for clause in SPLIT.split(text):
        for i, kw in enumerate(phrases):
            clause = clause.replace(f"\x00{i}\x00", kw)
        if clause.strip():
            clauses.append(clause.strip())
    return clauses


def wants_less(text: str) -> bool:
    low = text.lower()
    return any(re.search(rf"\b{re.escape(w)}\b", low) for w in LESS_WORDS)


def intent_check(tool: str, goal: str, input_size: tuple[int, int] | None = None) -> dict[str, Any]:
    """The measurable effect a subtask asks for, or {} when a rule critic cannot measure it."""
    low = goal.lower()
    moves = moves_of(tool)
    if moves is not None:
        direction = moves.direction
        if tool == "highlights_shadows" and "highlight" in low:
            direction = "down"
        if moves.follows_wording and wants_less(goal):
            direction = "down" if direction == "up" else "up"
        return {"metric": moves.metric, "direction": direction}
    if tool == "grayscale":
        return {"metric": "is_gray"}
    if tool == "crop_aspect":
        aspect = parse_aspect(goal) or "1:1"
        w, h = (float(x) for x in aspect.split(":"))
        return {"metric": "aspect", "target": w / h}
    if tool == "resize":
        size = parse_size(goal)
        return {"metric": "longest_side", "target": size} if size else {}
    if tool == "rotate" and input_size and abs(parse_angle(goal) % 180) == 90:
        return {"metric": "width", "target": input_size[1]}
    if tool == "flip":
        return {"metric": "mirrored", "direction": "vertical" if "vertical" in low or "upside" in low else "horizontal"}
    return {}


def question_text(tool: str, goal: str, chk: dict[str, Any]) -> str:
    metric = chk.get("metric")
    if metric in METRICS and METRICS[metric].more:
        more, less = METRICS[metric].more, METRICS[metric].less
        return f"Is the edited image {more if chk['direction'] == 'up' else less} than the original?"
    if metric == "is_gray":
        return "Is the edited image black and white?"
    if metric == "aspect":
        return f"Does the edited image have an aspect ratio of {chk['target']:.3g}?"
    if metric == "longest_side":
        return f"Is the edited image's longest side {chk['target']:.0f} pixels?"
    if metric == "width":
        return "Is the edited image rotated by a right angle (width and height swapped)?"
    if metric == "mirrored":
        return f"Is the edited image mirrored {chk['direction']}ly?"
    return f"Was this done: {goal}?"


def parse_aspect(text: str) -> str | None:
    low = text.lower()
    m = re.search(r"(\d+)\s*[:x×/]\s*(\d+)", low)
    if m:
        return f"{m.group(1)}:{m.group(2)}"
    for word, aspect in (("square", "1:1"), ("widescreen", "16:9"), ("instagram", "4:5"), ("portrait", "4:5"),
                         ("landscape", "3:2")):
        if word in low:
            return aspect
    return None


def parse_size(text: str) -> int | None:
    nums = [int(n) for n in re.findall(r"\b(\d{2,5})\b", text)]
    nums = [n for n in nums if n >= 16]
    return nums[0] if nums else None


def parse_angle(text: str) -> float:
    low = text.lower()
    m = re.search(r"(-?\d+(?:\.\d+)?)\s*(?:°|deg|degrees?)", low) or re.search(r"rotate\D*(-?\d+(?:\.\d+)?)", low)
    angle = float(m.group(1)) if m else 90.0
    if "clockwise" in low and "counter" not in low and "anti" not in low:
        angle = -angle
    return angle


def _the(phrase: str) -> str:
    phrase = phrase.strip().strip(".,;")
    return phrase if re.match(r"(the|a|an|his|her|their|my)\b", phrase) else f"the {phrase}"


def inpaint_target(goal: str) -> tuple[str, str] | None:
    """(what to find, what to paint there) for 'replace X with Y' and 'remove X', else None."""
    low = goal.strip().rstrip(".").lower()
    if m := re.search(r"\breplace (.+?) with (.+)$", low):
        return _the(m.group(1)), m.group(2).strip()
    if m := re.search(r"\b(?:remove|erase|get rid of) (.+)$", low):
        return _the(m.group(1)), "the background around it, seamless and natural"
    return None


def kept_subject(goal: str) -> str | None:
    """The subject a background edit keeps: 'blur the background behind the dog' -> 'the dog'."""
    m = re.search(r"\b(?:behind|around|except|apart from|other than) (.+)$", goal.strip().rstrip(".").lower())
    return _the(m.group(1)) if m else None


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


def strength_params(spec: ToolSpec) -> list:
    return [p for p in spec.params if p.type in ("float", "int") and p.neutral is not None]


def initial_params(spec: ToolSpec, goal: str) -> dict[str, Any]:
    """The manual's defaults, moved by what the goal says (numbers, direction words, named formats)."""
    params = spec.defaults()
    low = goal.lower()
    strengths = strength_params(spec)
    if spec.name == "resize" and parse_size(goal):
        params["longest_side"] = parse_size(goal)
        if "square" in low:
            params["mode"] = "square"
    elif spec.name == "rotate":
        params["angle"] = parse_angle(goal)
    elif spec.name == "crop_aspect":
        aspect = parse_aspect(goal)
        params["aspect"] = aspect if aspect in spec.param("aspect").choices else "1:1"
    elif spec.name == "flip":
        params["direction"] = "vertical" if "vertical" in low or "upside" in low else "horizontal"
    elif spec.name == "exposure" and (m := re.search(r"(\d+(?:\.\d+)?)\s*stops?", low)):
        params["stops"] = float(m.group(1))
    elif strengths and (m := re.search(r"(\d+(?:\.\d+)?)\s*%", low)):
        p = strengths[0]
        params[p.name] = p.neutral + float(m.group(1)) / 100.0
    if spec.name == "highlights_shadows" and "highlight" in low:
        params.update({"highlights": 0.4, "shadows": 0.0})
    if spec.name == "temperature_tint" and ("tint" in low or "magenta" in low or "green" in low) and "warm" not in low:
        params.update({"temperature": 0.0, "tint": -0.2 if "green" in low else 0.2})
    if any(p.name == "prompt" for p in spec.params) and not params.get("prompt"):
        target = inpaint_target(goal)
        params["prompt"] = target[1] if target else goal
    if spec.moves is not None and spec.moves.follows_wording and wants_less(goal):
        for p in strengths:
            params[p.name] = p.neutral - (params[p.name] - p.neutral)
    return params


def adjust_params(spec: ToolSpec, previous: dict[str, Any], direction: str) -> tuple[dict[str, Any], str]:
    """CCA's executor reflection: move the strength parameters the way the typed feedback says."""
    factor, why = {"reverse": (-1.0, "reversed: the feedback says it went the wrong way"),
                   "less": (1 / STEP, "weakened: the feedback says it was too strong"),
                   "more": (STEP, "strengthened: the feedback says the effect was not enough"),
                   "keep": (1.0, "kept: the feedback says these parameters worked")}[direction]
    params = dict(previous)
    for p in strength_params(spec):
        if p.name in params and isinstance(params[p.name], (int, float)):
            value = p.neutral + (params[p.name] - p.neutral) * factor
            params[p.name] = min(max(value, p.minimum), p.maximum)
    return params, why


class RuleBrain:
    name = "rule"
    vision = False  # it measures statistics; it cannot describe a photo

    def __init__(self, reward: ClassicReward | None = None, boldness: float = 1.0):
        """``boldness`` scales the executor's first-try strengths, so two rule generators can
        compete with different styles (CCA's generators differ by sampling when LLMs drive them)."""
        if not (0.1 <= boldness <= 10.0):
            raise ValueError(f"boldness must be between 0.1 and 10, got {boldness}")
        self.reward = reward or ClassicReward()
        self.perceiver = RulePerceiver()
        self.boldness = boldness
        self.name = "rule" if boldness == 1.0 else f"rule(boldness={boldness:g})"

    async def ask(self, request: BrainRequest) -> BrainAnswer:
        start = time.perf_counter()
        handler = getattr(self, f"_{request.role}", None)
        if handler is None:
            raise BrainError(f"the rule brain has no {request.role!r} role")
        data, notes = handler(request.context, request.images)
        problem = request.problem(data)
        if problem:  # a bug in the rule brain, not model output: say so plainly
            raise BrainError(f"the rule brain's {request.role} answer does not fit its schema: {problem}")
        return BrainAnswer(data=data, brain=self.name, wall_ms=(time.perf_counter() - start) * 1000.0, notes=notes)

    # -- planner ------------------------------------------------------------------------

    def _planner(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        request: EditRequest = ctx["request"]
        tools: list[ToolSpec] = ctx["tools"]
        rival_plan: Plan | None = ctx.get("rival_plan")
        own, rival = ctx.get("own_feedback"), ctx.get("rival_feedback")
        if rival_plan and own and rival and rival.score > own.score + 0.5 and rival_plan.subtasks:
            # CCA competition: learn from the rival that did better
            data = {"subtasks": [{"goal": s.goal, "tool": s.tool, "rationale": f"adopted from the rival ({rival.score:.1f} vs {own.score:.1f})",
                                  "depends_on": s.depends_on} for s in rival_plan.subtasks if s.tool in {t.name for t in tools}],
                    "unsupported": list(rival_plan.unsupported), "notes": "adopted the rival's plan: it scored higher"}
            return data, [data["notes"]]
        if request.mode != "instructed":
            return self._autonomous_plan(ctx, tools)
        subtasks, unsupported, notes = [], [], []
        avoid = {" ".join(s.goal.lower().split()): s.tool for s in (own.suggestions if own else [])
                 if s.kind == "another_tool"}
        for clause in split_clauses(request.instruction, tools):
            tool = self._match_tool(clause, tools)
            dropped = avoid.get(" ".join(clause.lower().split()))
            if tool is not None and tool.name == dropped:  # the report: this tool cannot do it, try the next best
                other = self._alternative(clause, dropped, tools)
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

    @staticmethod
    def _match_tool(clause: str, tools: list[ToolSpec]) -> ToolSpec | None:
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

    @classmethod
    def _alternative(cls, clause: str, dropped: str, tools: list[ToolSpec]) -> ToolSpec | None:
        """Another tool for a clause: the next best by keywords, else one that moves the same measure the same
        way (brightness -> exposure, gamma, ...)."""
        others = [t for t in tools if t.name != dropped and can_fill(t, clause, {t.name for t in tools})]
        by_words = cls._match_tool(clause, others)
        moves = moves_of(dropped)
        if by_words is not None or moves is None:
            return by_words
        return next((t for t in others if t.moves is not None and t.moves.metric == moves.metric
                     and (t.moves.follows_wording or not wants_less(clause))), None)

    def _autonomous_plan(self, ctx: dict, tools: list[ToolSpec]) -> tuple[dict, list[str]]:
        actions = self._propose(ctx["stats"], [t.name for t in tools], 6, ctx["request"].mood, ())
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

    # -- executor -----------------------------------------------------------------------

    def _executor(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        spec: ToolSpec = ctx["spec"]
        previous, feedback = ctx.get("previous"), ctx.get("feedback")  # an ExecutorFeedback: typed, not prose
        if previous is not None and feedback is not None:
            params, why = adjust_params(spec, previous, feedback.direction)
        else:
            params, why = initial_params(spec, ctx["goal"]), "parameters from the manual's defaults and the goal's wording"
            if self.boldness != 1.0:
                for p in strength_params(spec):
                    value = p.neutral + (params[p.name] - p.neutral) * self.boldness
                    params[p.name] = min(max(value, p.minimum), p.maximum)
        return {"steps": self._masked_chain(spec, ctx["goal"], params, why, {h.name for h in ctx.get("helpers", [])})}, [why]

    @staticmethod
    def _masked_chain(spec: ToolSpec, goal: str, params: dict, why: str, helpers: set[str]) -> list[dict]:
        """ground -> mask_grow -> the tool, when it takes a mask and the goal names what to find: 'replace the sky
        with a sunset' grounds the sky; 'blur the background (behind the dog)' grounds the subject to keep."""
        mask = next((p for p in spec.params if p.type == "mask"), None)
        target = inpaint_target(goal)
        found = target[0] if target else kept_subject(goal)
        if found is None and spec.name == "edit_region" and "background" in goal.lower():
            found = "the main subject"  # kept sharp; everything else is the background
        if mask is None or "ground" not in helpers or found is None:
            return [{"tool": spec.name, "params": params, "rationale": why}]
        steps = [{"tool": "ground", "params": {"text": found}, "rationale": f"find {found}"}]
        if "mask_grow" in helpers:
            steps.append({"tool": "mask_grow", "params": {"pixels": 8}, "source": "step:0",
                          "rationale": "cover its edges"})
        params = {**params, mask.name: f"step:{len(steps) - 1}"}
        if spec.name == "edit_region":
            params["inside"] = False  # the found subject is kept; the edit goes around it
        steps.append({"tool": spec.name, "params": params, "rationale": f"{why}; where: {found}"})
        return steps

    # -- critic (CCA discriminator) -----------------------------------------------------

    def _questions(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        """Questions from the request alone: one per clause (checked with the tool that would do it), or, with no
        instruction, one per defect the photo's statistics show; plus whether the content is kept."""
        request: EditRequest = ctx["request"]
        tools: list[ToolSpec] = ctx["tools"]
        size = ctx.get("input_size")
        if request.mode == "instructed":
            parts = [(clause, self._match_tool(clause, tools)) for clause in split_clauses(request.instruction, tools)]
            parts = [(clause, spec.name if spec else "") for clause, spec in parts]
        else:
            parts = [(s["goal"], s["tool"]) for s in self._autonomous_plan(ctx, tools)[0]["subtasks"]]
        questions = []
        for part, tool in parts:
            chk = intent_check(tool, part, size) if tool else {}
            questions.append({"text": question_text(tool, part, chk), "part": part, "check": chk})
        if not any(tool in RESHAPING for _, tool in parts):  # a crop or rotation changes structure on purpose
            questions.append({"text": "Is the content of the original image preserved?", "part": "",
                              "check": {"metric": "structure", "min": 0.75}})
        return {"questions": questions}, []

    def _answers(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        before, after = images[0], images[-1]
        mb, ma = measure(before), measure(after)
        answers = []
        for q in ctx["questions"]:
            ans, why, achieved = run_check(q.check, mb, ma, before, after) if q.check else (
                "unknown", "a rule critic cannot judge this; connect a VLM brain", 0.0)
            answers.append({"answer": ans, "explanation": why,
                            **({"direction": "reverse" if achieved < 0 else "more"} if ans == "no" else {}),
                            # which subtask the question checks: by word overlap (roles.route_questions), the
                            # rule brain's only way; a model brain reads the plan
                            "subtask": -1 if q.subtask is None else q.subtask})
        quality = max(0.0, min(10.0, 10.0 * self.reward.score(after).total))  # the edited photo's own quality
        return {"answers": answers, "quality": round(quality, 3)}, []

    # -- critic (IMAGAgent experts) -----------------------------------------------------

    def _expert(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        before, after = images[0], images[-1]
        name, subtask = ctx["expert"], ctx["subtask"]
        if name == "quality":
            delta = self.reward.score(after, before).total - self.reward.score(before, before).total
            score = max(0.0, min(10.0, 7.0 + 30.0 * delta))
            neg = "the edit lowered the photo's quality (exposure, clipping, noise or colour)" if delta < -0.01 else ""
            return {"score": round(score, 3), "positive": "keep the quality gain" if delta > 0 else "",
                    "negative": neg, "direction": "less" if neg else "keep"}, []
        if name == "fidelity":
            if before.shape[:2] != after.shape[:2]:
                return {"score": 8.0, "positive": "the new framing was asked for", "negative": "", "direction": "keep"}, []
            sim = structure_similarity(before, after)
            score = max(0.0, min(10.0, (sim - 0.5) / 0.45 * 10.0))
            ok = sim >= 0.9
            return {"score": round(score, 3), "positive": f"structure similarity {sim:.2f}" if ok else "",
                    "negative": "" if ok else f"too much of the photo changed (structure similarity {sim:.2f}); too strong",
                    "direction": "keep" if ok else "less"}, []
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

    def _aggregator(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        critiques = ctx["critiques"]  # the text merged; the score is computed by roles.verdict, not here
        join = lambda items: "; ".join(dict.fromkeys(i for i in items if i))  # noqa: E731  (union, order kept)
        return {"positive": join(c.positive for c in critiques), "negative": join(c.negative for c in critiques)}, []

    def _competitor(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        cands = ctx["candidates"]
        best = max(range(len(cands)), key=lambda i: (cands[i]["yes_fraction"], cands[i]["score"]))
        stop = bool(cands[best]["satisfied"])
        return {"best": best, "stop": stop, "reason": f"candidate {best}: {cands[best]['yes_fraction']:.0%} of checks "
                                                      f"passed, score {cands[best]['score']:.1f}"}, []

    # -- perceiver ----------------------------------------------------------------------

    def _propose(self, stats: dict, allowed: list[str], k: int, mood: str, tried) -> list[dict]:
        actions = []
        low = mood.lower()
        for words, (tool, params) in MOODS.items():
            if tool in allowed and any(re.search(rf"\b{w}\b", low) for w in words):
                actions.append({"tool": tool, "params": dict(params), "rationale": f"mood '{mood}'"})
        if "white_level" in stats:  # statistics of the reward (the perceiver's checks read them)
            actions += [{"tool": c.tool, "params": dict(c.params), "rationale": c.rationale}
                        for c in self.perceiver.propose(stats, k, allowed, tried)]
        return actions[:k]

    def _perceiver(self, ctx: dict, images: list) -> tuple[dict, list[str]]:
        stats = ctx["stats"]
        scene = guess_scene(stats)
        actions = self._propose(stats, [t.name for t in ctx["tools"]], ctx["k"], ctx.get("mood", ""), ctx.get("tried", ()))
        return {"scene": scene, "actions": actions}, []
