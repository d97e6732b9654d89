"""The executor: one subtask as a validated chain of tool calls (its tool, and the helpers that make its mask), and
running that chain in process."""
from __future__ import annotations

from typing import Any

import numpy as np

from ...tools.spec import ToolCallError, ToolRegistry, ToolSpec
from .. import schemas
from ..brain import Brain, BrainRequest
from ..records import ExecutorFeedback, HistoryContext, Subtask, ToolCall, check_chain
from .asking import Where, ask, prompt, with_history


def executor_tools(tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> list[ToolSpec]:
    """The tools an executor may chain: the subtask's tool first; the toolbox's localisation and mask helpers
    when that tool takes a mask (ground -> grow -> inpaint); with ``any_tool`` (IMAGAgent's orchestrator, for
    which the planner's tool is a suggestion) every other tool of the toolbox but graph tools, which run alone."""
    spec = tools.get(subtask.tool)  # a tool outside the toolbox: ToolCallError naming the allowed ones
    takes_mask = any(p.type == "mask" for p in spec.params)
    usable = tools.runnable().specs()
    helpers = [s for s in usable if s.category == "localise" and s.name != spec.name]
    others = [s for s in usable if s.category not in ("localise", "graph") and s.name != spec.name]
    if spec.category == "graph" and not any_tool:
        return [spec]
    return [spec, *(helpers if takes_mask or any_tool else []), *(others if any_tool else [])]


def check_steps(chain: list[ToolCall], tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> None:
    """What a schema cannot say about a chain: each step reads the input or an earlier step; a mask parameter
    names an earlier step that made a mask; an image tool does not edit a mask; the chain ends with an image;
    it does the subtask's own tool (unless the orchestrator may choose); a graph tool runs alone."""
    try:
        check_chain(chain)
    except ValueError as err:
        raise ToolCallError(str(err)) from None
    specs = [tools.get(c.tool) for c in chain]
    for i, (call, spec) in enumerate(zip(chain, specs)):
        if call.source != "input" and spec.returns == "image" and specs[int(call.source[5:])].returns == "mask":
            raise ToolCallError(f"step {i} ({call.tool}) edits {call.source}, which is a mask; let it edit 'input' and "
                                f"pass the mask as a parameter, e.g. mask='{call.source}'")
        for p in spec.params:
            value = call.params.get(p.name)
            if p.type != "mask" or not isinstance(value, str):
                continue
            kind, _, num = value.partition(":")
            if kind != "step" or not num.isdigit() or int(num) >= i or specs[int(num)].returns != "mask":
                made = [f"step:{j}" for j in range(i) if specs[j].returns == "mask"]
                raise ToolCallError(f"step {i} ({call.tool}) takes {p.name}={value!r}, but that is not an earlier step "
                                    f"that makes a mask; use one of {made or 'none yet: add a ground step first'}")
    if specs[-1].returns != "image":
        raise ToolCallError(f"the chain ends with {chain[-1].tool}, which makes a mask; end with a step that uses it")
    if not any_tool and subtask.tool not in {c.tool for c in chain}:
        raise ToolCallError(f"the chain never runs {subtask.tool}, the subtask's tool; the other steps may only "
                            "prepare its mask")
    if len(chain) > 1 and any(s.category == "graph" for s in specs):
        raise ToolCallError("a graph tool runs alone in its chain (it is expanded into ComfyUI nodes); drop the other steps")


def chain_problem(data: dict[str, Any], tools: ToolRegistry, subtask: Subtask, any_tool: bool = False) -> str | None:
    """What is wrong with an executor's answer beyond its schema (re-asked with this text), or None."""
    try:
        chain = [ToolCall.from_dict(step) for step in data["steps"]]
        check_steps(chain, tools, subtask, any_tool)
        for call in chain:
            tools.get(call.tool).validate(call.params)
    except ToolCallError as err:
        return str(err)
    return None


def _first_step_reads_the_input(data: dict[str, Any]) -> list[str]:
    """The first step has no earlier step to read: whatever step it names, it can only mean the input. (A later
    step naming itself or a later one is ambiguous, so that is re-asked.)"""
    steps = data.get("steps")
    first = steps[0] if isinstance(steps, list) and steps and isinstance(steps[0], dict) else None
    if first is None or first.get("source", "input") == "input":
        return []
    was, first["source"] = first["source"], "input"
    return [f"step 0 read {was!r}; the first step can only read the input"]


def _main_step(chain: list[ToolCall] | None, tool: str) -> ToolCall | None:
    if not chain:
        return None
    return next((c for c in reversed(chain) if c.tool == tool), None)


async def execute(brain: Brain, subtask: Subtask, tools: ToolRegistry, image: np.ndarray, where: Where,
                  history: HistoryContext | None = None, previous: list[ToolCall] | None = None,
                  feedback: ExecutorFeedback | None = None, any_tool: bool = False) -> list[ToolCall]:
    """The executor reads its subtask's tool manual (and its helpers'), and returns a validated tool chain."""
    allowed = executor_tools(tools, subtask, any_tool)
    spec, extra = allowed[0], allowed[1:]
    helpers = [s for s in extra if s.category == "localise"]
    others = [s for s in extra if s.category != "localise"]
    main = _main_step(previous, spec.name)
    shown = (", ".join(c.label() for c in previous) or "(no chain: it failed before one was written)"
             if previous is not None else "(first attempt)")
    # the subtask's tool in full, the others one line each; to fit a small context, past the history, the other
    # lines lose their parameters (the answer's schema still gives them), then their descriptions
    lines = (lambda o: o.brief(), lambda o: f"- {o.name}: {o.description}", lambda o: f"- {o.name}")
    shorter = ["", "the other tools' parameters", "the other tools' descriptions"]
    level = [0]

    def system() -> str:
        line = lines[level[0]]
        return prompt("executor", manual=spec.manual(),
                      helpers=("Helpers that may come before it, to make its mask (pass one as mask='step:N'):\n"
                               + "\n".join(h.brief() for h in helpers)) if helpers else "",
                      others=("The tool above is the planner's suggestion. If it cannot do the subtask (see the "
                              "history), you may use another tool instead:\n"
                              + "\n".join(line(o) for o in others)) if others else "")

    def plainer() -> str | None:
        if not others or level[0] == len(lines) - 1:
            return None
        level[0] += 1
        req.system = system()
        return shorter[level[0]]

    req = with_history(BrainRequest(
        role="executor", system=system(), text="", schema=schemas.chain_schema(allowed),
        context={"goal": subtask.goal, "spec": spec, "helpers": helpers, "previous": main.params if main else None,
                 "feedback": feedback},
        check=lambda data: chain_problem(data, tools, subtask, any_tool), repair=_first_step_reads_the_input),
        history, lambda h: prompt("executor_user", goal=subtask.goal, previous=shown,
                                  feedback=feedback.text() if feedback else "(none yet)", history=h.render()), image,
        then=plainer)
    answer = await ask(brain, req, where, f"execute subtask {subtask.index}: {subtask.tool}", preview=image)
    chain = [ToolCall.from_dict(step) for step in answer.data["steps"]]
    try:
        check_steps(chain, tools, subtask, any_tool)
    except ToolCallError as err:
        raise ToolCallError(f"{brain.name} returned an invalid tool chain: {err}") from None
    validated = []
    for call in chain:
        clean, notes = tools.get(call.tool).validate(call.params)
        if notes:
            where.trace.add("executor", where.agent, "clamped: " + "; ".join(notes), round=where.round,
                            subtask=where.subtask, attempt=where.attempt, outputs={"notes": notes})
        validated.append(ToolCall(call.tool, clean, call.rationale, call.source))
    negative = feedback.avoid.strip() if feedback else ""
    if negative:
        validated = [_avoiding(tools, call, negative, where) for call in validated]
    return validated


def _avoiding(tools: ToolRegistry, call: ToolCall, negative: str, where: Where) -> ToolCall:
    """The last attempt's negative feedback added to a generative step's negative prompt (IMAGAgent: F_neg is
    written to be usable as one), whatever the executor put there."""
    if "negative_prompt" not in {p.name for p in tools.get(call.tool).params}:
        return call
    parts = [p.strip() for p in f"{call.params.get('negative_prompt') or ''},{negative}".replace(";", ",").split(",")]
    merged = ", ".join(dict.fromkeys(p for p in parts if p))
    where.trace.add("executor", where.agent, f"{call.tool}: the last attempt's negative feedback joins its negative "
                                             "prompt", round=where.round, subtask=where.subtask, attempt=where.attempt,
                    outputs={"negative_prompt": merged})
    return ToolCall(call.tool, {**call.params, "negative_prompt": merged}, call.rationale, call.source)


def run_chain(tools: ToolRegistry, chain: list[ToolCall], image: np.ndarray) -> np.ndarray:
    """Run a validated chain in process; a step edits the input or an earlier step's output, and
    its mask parameters may read earlier steps (e.g. ground "the dog" -> grow -> blur outside it)."""
    outputs: list[np.ndarray] = []
    for call in chain:
        src = image if call.source == "input" else outputs[int(call.source.split(":")[1])]
        out, _, _ = tools.call(call.tool, src, call.params, refs=outputs)
        outputs.append(out)
    if chain and tools.get(chain[-1].tool).returns == "mask":
        raise ToolCallError(f"the chain ends with {chain[-1].tool}, which makes a mask; add a step that uses it "
                            "(e.g. edit_region with mask='step:N')")
    return outputs[-1] if outputs else image
