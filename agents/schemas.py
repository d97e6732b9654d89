"""JSON schemas of each role's answer. Tool names and parameters come from the tool specs,
so an answer naming a tool outside the toolbox fails validation and is re-asked."""
from __future__ import annotations

from typing import Any

from ..tools.spec import ToolSpec

SCORE = {"type": "number", "minimum": 0, "maximum": 10}
TEXT = {"type": "string", "maxLength": 4000}

_JSON_TYPES = {"float": "number", "int": "integer", "bool": "boolean", "enum": "string", "string": "string",
               "box": "array", "mask": "string", "image": "string"}


def index(count: int) -> dict[str, Any]:
    """An index into ``count`` things. An enum, not a range: a number out of range is clamped (see
    ``brain.clamp_numbers``), an index out of range is no index at all, so it is re-asked."""
    return {"type": "integer", "enum": list(range(max(count, 1)))}


def params_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of one tool's parameters, with the spec's ranges: a grammar keeps a model inside them,
    and an answer outside them (an API without one) is clamped with a note before it is checked. A parameter
    whose spec refuses out-of-range values keeps its range in the description, so the spec refuses it."""
    props: dict[str, Any] = {}
    for p in spec.params:
        prop: dict[str, Any] = {"type": _JSON_TYPES[p.type], "description": p.describe()[2:]}
        if p.type in ("float", "int") and p.out_of_range == "clamp":
            prop.update({k: v for k, v in (("minimum", p.minimum), ("maximum", p.maximum)) if v is not None})
        if p.type == "enum":
            prop["enum"] = list(p.choices)
        if p.type == "box":
            prop.update({"items": {"type": "number"}, "minItems": 4, "maxItems": 4})
        props[p.name] = prop
    return {"type": "object", "properties": props, "additionalProperties": False,
            "required": [p.name for p in spec.params if p.required]}


MAX_SUBTASKS = 12


def plan_schema(tool_names: list[str]) -> dict[str, Any]:
    """Up to 12 subtasks; each may depend on earlier ones (an index below its own: a forward one is dropped with
    a note, see ``roles.plan``)."""
    return {"type": "object", "additionalProperties": False, "required": ["subtasks"], "properties": {
        "subtasks": {"type": "array", "maxItems": MAX_SUBTASKS, "items": {
            "type": "object", "additionalProperties": False, "required": ["goal", "tool"], "properties": {
                "goal": TEXT, "tool": {"type": "string", "enum": tool_names}, "rationale": TEXT,
                "depends_on": {"type": "array", "maxItems": MAX_SUBTASKS - 1, "items": index(MAX_SUBTASKS - 1)}}}},
        "unsupported": {"type": "array", "items": TEXT},
        "notes": TEXT}}


def step_schema(spec: ToolSpec, max_steps: int = 4) -> dict[str, Any]:
    """One step: the tool, its parameters, and what it reads: the input or one of the steps a chain can have
    before it (``chain_schema`` narrows that per position to the steps before it)."""
    return {"type": "object", "additionalProperties": False, "required": ["tool", "params"], "properties": {
        "tool": {"type": "string", "enum": [spec.name]}, "params": params_schema(spec), "rationale": TEXT,
        "source": {"type": "string", "enum": sources(max_steps - 1)}}}


def sources(steps_before: int) -> list[str]:
    """What a step with ``steps_before`` steps before it may read: the input or one of them."""
    return ["input", *(f"step:{i}" for i in range(steps_before))]


def chain_schema(specs: ToolSpec | list[ToolSpec], max_steps: int = 4) -> dict[str, Any]:
    """A chain of steps, each one of ``specs`` (the subtask's tool first, then the helpers it may use) with that
    tool's own parameters; step i reads the input or a step before it (position by position, ``prefixItems``
    under ``allOf``, so each tool's parameters are written once)."""
    specs = [specs] if isinstance(specs, ToolSpec) else list(specs)
    steps = [step_schema(s, max_steps) for s in specs]
    item = steps[0] if len(steps) == 1 else {"anyOf": steps}
    earlier = [{"properties": {"source": {"enum": sources(i)}}} for i in range(max_steps)]
    return {"type": "object", "additionalProperties": False, "required": ["steps"], "properties": {
        "steps": {"type": "array", "minItems": 1, "maxItems": max_steps, "items": item,
                  "allOf": [{"prefixItems": earlier}]}}}


# written once per request, before any plan: "part" names the piece of the request a question checks
QUESTIONS = {"type": "object", "additionalProperties": False, "required": ["questions"], "properties": {
    "questions": {"type": "array", "minItems": 1, "maxItems": 12, "items": {
        "type": "object", "additionalProperties": False, "required": ["text"], "properties": {
            "text": TEXT, "part": TEXT, "check": {"type": "object"}}}}}}

CAPTION = {"type": "object", "additionalProperties": False, "required": ["caption"], "properties": {
    "caption": {"type": "string", "minLength": 1, "maxLength": 1000}}}

def answers_schema(questions: int, subtasks: int = 0) -> dict[str, Any]:
    """One answer per question, in order ("direction": with a "no", which way the edit must move to make it a
    "yes"; "subtask": which of the plan's ``subtasks`` the question checks, -1 for the whole request or a part no
    subtask does), and the edited photo's quality."""
    answer = {"answer": {"type": "string", "enum": ["yes", "no", "unknown"]}, "explanation": TEXT,
              "direction": {"type": "string", "enum": ["more", "less", "reverse"]}}
    if subtasks:
        answer["subtask"] = {"type": "integer", "minimum": -1, "maximum": subtasks - 1}
    return {"type": "object", "additionalProperties": False, "required": ["answers", "quality"], "properties": {
        "answers": {"type": "array", "minItems": questions, "maxItems": questions, "items": {
            "type": "object", "additionalProperties": False,
            "required": ["answer", "subtask"] if subtasks else ["answer"], "properties": answer}},
        "quality": SCORE}}

# "judged": false when the images cannot show whether the subtask was done (the score is then not counted);
# "direction": which way the next attempt should move (more, less, reverse the edit, or keep it)
EXPERT = {"type": "object", "additionalProperties": False, "required": ["score", "positive", "negative"],
          "properties": {"score": SCORE, "positive": TEXT, "negative": TEXT, "judged": {"type": "boolean"},
                         "direction": {"type": "string", "enum": ["more", "less", "reverse", "keep"]}}}

# the aggregator merges the experts' text; the verdict S is their mean score, computed in code (IMAGAgent eq. 5)
AGGREGATE = {"type": "object", "additionalProperties": False, "required": ["positive", "negative"],
             "properties": {"positive": TEXT, "negative": TEXT}}

def compete_schema(candidates: int) -> dict[str, Any]:
    """The index of the best of ``candidates``, and whether it satisfies the request."""
    return {"type": "object", "additionalProperties": False, "required": ["best", "stop"], "properties": {
        "best": index(candidates), "stop": {"type": "boolean"}, "reason": TEXT}}


def perceive_schema(specs: list[ToolSpec], k: int) -> dict[str, Any]:
    """Up to k actions, each one tool with that tool's own parameter schema."""
    actions = [{"type": "object", "additionalProperties": False, "required": ["tool", "params"], "properties": {
        "tool": {"type": "string", "enum": [s.name]}, "params": params_schema(s), "rationale": TEXT}} for s in specs]
    return {"type": "object", "additionalProperties": False, "required": ["actions"], "properties": {
        "scene": TEXT,
        "actions": {"type": "array", "minItems": 0, "maxItems": k,
                    "items": actions[0] if len(actions) == 1 else {"anyOf": actions}}}}
