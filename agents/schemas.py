"""JSON schemas of each role's answer. Tool names and parameters come from the tool specs,
so an answer naming a tool outside the toolbox fails validation and is re-asked."""
from __future__ import annotations

from typing import Any

from ..tools.spec import ToolSpec

SCORE = {"type": "number", "minimum": 0, "maximum": 10}
TEXT = {"type": "string", "maxLength": 4000}

_JSON_TYPES = {"float": "number", "int": "integer", "bool": "boolean", "enum": "string", "string": "string",
               "box": "array", "mask": "string", "image": "string"}


def params_schema(spec: ToolSpec) -> dict[str, Any]:
    """The JSON schema of one tool's parameters. Ranges stay in the descriptions: out-of-range
    numbers are clamped with a note by the spec, not refused."""
    props: dict[str, Any] = {}
    for p in spec.params:
        prop: dict[str, Any] = {"type": _JSON_TYPES[p.type], "description": p.describe()[2:]}
        if p.type == "enum":
            prop["enum"] = list(p.choices)
        if p.type == "box":
            prop.update({"items": {"type": "number"}, "minItems": 4, "maxItems": 4})
        props[p.name] = prop
    return {"type": "object", "properties": props, "additionalProperties": False,
            "required": [p.name for p in spec.params if p.required]}


def plan_schema(tool_names: list[str]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["subtasks"], "properties": {
        "subtasks": {"type": "array", "maxItems": 12, "items": {
            "type": "object", "additionalProperties": False, "required": ["goal", "tool"], "properties": {
                "goal": TEXT, "tool": {"type": "string", "enum": tool_names}, "rationale": TEXT,
                "depends_on": {"type": "array", "items": {"type": "integer", "minimum": 0}}}}},
        "unsupported": {"type": "array", "items": TEXT},
        "notes": TEXT}}


def step_schema(spec: ToolSpec) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": ["tool", "params"], "properties": {
        "tool": {"type": "string", "enum": [spec.name]}, "params": params_schema(spec), "rationale": TEXT,
        "source": {"type": "string", "pattern": "^(input|step:[0-9]+)$"}}}


def chain_schema(specs: ToolSpec | list[ToolSpec], max_steps: int = 4) -> dict[str, Any]:
    """A chain of steps, each one of ``specs`` (the subtask's tool first, then the helpers it may use) with that
    tool's own parameters."""
    specs = [specs] if isinstance(specs, ToolSpec) else list(specs)
    item = step_schema(specs[0]) if len(specs) == 1 else {"anyOf": [step_schema(s) for s in specs]}
    return {"type": "object", "additionalProperties": False, "required": ["steps"], "properties": {
        "steps": {"type": "array", "minItems": 1, "maxItems": max_steps, "items": item}}}


# written once per request, before any plan: "part" names the piece of the request a question checks
QUESTIONS = {"type": "object", "additionalProperties": False, "required": ["questions"], "properties": {
    "questions": {"type": "array", "minItems": 1, "maxItems": 12, "items": {
        "type": "object", "additionalProperties": False, "required": ["text"], "properties": {
            "text": TEXT, "part": TEXT, "check": {"type": "object"}}}}}}

CAPTION = {"type": "object", "additionalProperties": False, "required": ["caption"], "properties": {
    "caption": {"type": "string", "minLength": 1, "maxLength": 1000}}}

# "direction": with a "no", which way the edit must move to make it a "yes"
ANSWERS = {"type": "object", "additionalProperties": False, "required": ["answers", "quality"], "properties": {
    "answers": {"type": "array", "items": {
        "type": "object", "additionalProperties": False, "required": ["answer"], "properties": {
            "answer": {"type": "string", "enum": ["yes", "no", "unknown"]}, "explanation": TEXT,
            "direction": {"type": "string", "enum": ["more", "less", "reverse"]}}}},
    "quality": SCORE}}

# "judged": false when the images cannot show whether the subtask was done (the score is then not counted);
# "direction": which way the next attempt should move (more, less, reverse the edit, or keep it)
EXPERT = {"type": "object", "additionalProperties": False, "required": ["score", "positive", "negative"],
          "properties": {"score": SCORE, "positive": TEXT, "negative": TEXT, "judged": {"type": "boolean"},
                         "direction": {"type": "string", "enum": ["more", "less", "reverse", "keep"]}}}

# the aggregator merges the experts' text; the verdict S is their mean score, computed in code (IMAGAgent eq. 5)
AGGREGATE = {"type": "object", "additionalProperties": False, "required": ["positive", "negative"],
             "properties": {"positive": TEXT, "negative": TEXT}}

COMPETE = {"type": "object", "additionalProperties": False, "required": ["best", "stop"], "properties": {
    "best": {"type": "integer", "minimum": 0}, "stop": {"type": "boolean"}, "reason": TEXT}}


def perceive_schema(specs: list[ToolSpec], k: int) -> dict[str, Any]:
    """Up to k actions, each one tool with that tool's own parameter schema."""
    actions = [{"type": "object", "additionalProperties": False, "required": ["tool", "params"], "properties": {
        "tool": {"type": "string", "enum": [s.name]}, "params": params_schema(s), "rationale": TEXT}} for s in specs]
    return {"type": "object", "additionalProperties": False, "required": ["actions"], "properties": {
        "scene": TEXT,
        "actions": {"type": "array", "minItems": 0, "maxItems": k,
                    "items": actions[0] if len(actions) == 1 else {"anyOf": actions}}}}
