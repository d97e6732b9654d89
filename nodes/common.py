"""Small shared pieces of the agent nodes."""
from __future__ import annotations

import numpy as np
from comfy_api.latest import io

from ..agents.loop import Executed
from ..agents.records import EditRequest
from ..agents.roles.asking import Where
from ..agents.rule_default import offline_brain
from ..agents.trace import Trace
from ..tools import default_registry
from . import host
from .convert import image_batch_to_arrays
from .types import BRAIN

RERUN_TIP = ("Run again on every queue even when nothing changed (for brains that sample: an LLM may answer "
             "differently). Off: identical inputs reuse the cached result.")


def rerun_input() -> io.Boolean.Input:
    return io.Boolean.Input("rerun_every_time", default=False, tooltip=RERUN_TIP)


def fingerprint(kwargs: dict) -> float:
    """NaN never equals itself, so ComfyUI re-runs the node; 0.0 lets its cache work."""
    return float("nan") if kwargs.get("rerun_every_time") else 0.0


class Rerunnable:
    """Mixin for nodes with a ``rerun_every_time`` input."""

    @classmethod
    def fingerprint_inputs(cls, **kwargs):
        return fingerprint(kwargs)


def present(**inputs):
    """The inputs that are set (expanded nodes get no value for unconnected optional inputs)."""
    return {k: v for k, v in inputs.items() if v is not None}


def brain_or_rule(brain):
    return brain if brain is not None else offline_brain()


def tools_or_classic(toolbox):
    return toolbox if toolbox is not None else default_registry().subset(categories=["classic"])


def one_image(image, node: str) -> np.ndarray:
    arrays = image_batch_to_arrays(image)
    if len(arrays) != 1:
        raise ValueError(f"{node} edits one image at a time but got a batch of {len(arrays)}; "
                         "pick one with an image-from-batch node, or use the PhotoAgent node, which handles batches")
    return arrays[0]


def continue_trace(trace: Trace | None, title: str) -> Trace:
    """A copy of an incoming trace to append to (so unrolled rounds build one trace), or a new one;
    its new steps stream to the browser."""
    copy = Trace(title=title) if trace is None else Trace.from_dict(trace.to_dict())
    return stream(copy, node_id(), replay=False)  # steps carried in were streamed by the node that made them


def where(trace: Trace, agent: str, **kw) -> Where:
    return Where(trace, agent, should_stop=host.stop_check(), **kw)


TRACE_EVENT = "edit_agents.trace_step"  # websocket event the web extension listens for
LIVE_EVENT = "edit_agents.trace_live"  # a streaming answer's text so far, for the trace panel's live line
LIVE_PANEL_CHARS = 600  # the end of a streaming answer the panel gets
LIVE_PROGRESS_CHARS = 200  # ...and the node's progress text


class StepSender:
    """A trace's listener and streamer for the browser. Each step goes out as a custom websocket event (with the
    prompt and node it belongs to) and as the node's progress text; a streaming answer's text so far goes out as a
    live event (the panel's line under the steps, replaced when the step lands) and as the progress text: the role
    and the answer's last 200 characters. The brains call it a few times a second, not per token."""

    def __init__(self, title: str, node: str | None):
        self.title, self.node = title, node
        self.server = host.prompt_server()
        self.prompt_id, _ = host.executing()

    def __call__(self, step) -> None:
        from dataclasses import asdict

        data = {"prompt_id": self.prompt_id, "node": self.node, "title": self.title, "step": asdict(step)}
        self.server.send_sync(TRACE_EVENT, data, self.server.client_id)
        if self.node is not None:
            self.server.send_progress_text(f"{step.agent}: {step.action}"[:200], self.node, self.server.client_id)

    def streamer(self, role: str, agent: str, text: str) -> None:
        data = {"prompt_id": self.prompt_id, "node": self.node, "title": self.title, "role": role, "agent": agent,
                "text": text[-LIVE_PANEL_CHARS:], "chars": len(text)}
        self.server.send_sync(LIVE_EVENT, data, self.server.client_id)
        if self.node is not None:
            tail = text[-LIVE_PROGRESS_CHARS:]
            shown = tail if len(tail) == len(text) else "…" + tail
            self.server.send_progress_text(f"{agent} ({role}) writing: {shown}", self.node, self.server.client_id)


def step_sender(title: str, node: str | None) -> StepSender:
    """What sends a trace's steps and streaming answers to the browser (see ``StepSender``)."""
    return StepSender(title, node)


def stream(trace: Trace, node: str | None, replay: bool = True) -> Trace:
    """Stream the trace's steps and its brains' streaming answers to the browser (see ``StepSender``)."""
    sender = step_sender(trace.title, node)
    trace.listen(sender, replay=replay)
    trace.streamer = sender.streamer
    return trace


def node_id() -> str | None:
    return host.executing()[1]


def run_per_image(image, max_steps: int, title: str, run):
    """Run a PhotoAgent search on each image of a batch, with one progress bar and one trace.

    ``run(array, should_stop, on_step, agent, listener)`` returns a result with ``image``, ``steps`` and
    ``trace``; its steps stream to the browser as they are made. Returns (final images, step images, trace)."""
    arrays = image_batch_to_arrays(image)
    total = len(arrays) * max_steps
    bar = host.progress_bar(total)
    finals, steps, traces = [], [], []
    send = step_sender(title, node_id())
    for i, arr in enumerate(arrays):
        result = run(arr, host.stop_check(),
                     lambda step, _total, _text, i=i: bar.update_absolute(i * max_steps + step, total),
                     "photoagent" if len(arrays) == 1 else f"photoagent[{i}]", send)
        finals.append(result.image)
        steps.extend(result.steps)
        traces.append(result.trace)
    bar.update_absolute(total, total)
    trace = traces[0] if len(traces) == 1 else Trace.merge(traces, title=f"{title} (batch)")
    trace.listener = None  # it stays with the result (ComfyUI caches outputs); the browser has every step
    return finals, steps, trace


# -- what the loop nodes (CCA, IMAGAgent) share -----------------------------------------------------

RESUME_TIP = "Internal: set when this node expands a clone of itself for the next round; leave unconnected."
KEEP_BEST_TIP = ("When a brain fails mid-loop (the endpoint died, kept timing out, ...): off (default) fails the run "
                 "with the error; on ends the loop with the best result so far and the error in the trace "
                 "(the run still fails if nothing was done yet).")


def request_of(node: str, instruction: str, caption: str = "") -> EditRequest:
    """The loop's request, or an error that names the node."""
    try:
        return EditRequest(instruction=instruction, caption=caption)
    except ValueError as err:
        raise ValueError(f"{node}: {err}") from None


def keep_best_input() -> io.Input:
    return io.Boolean.Input("keep_best_on_brain_error", default=False, optional=True, tooltip=KEEP_BEST_TIP)


def role_brain_input(name: str, what: str) -> io.Input:
    return BRAIN.Input(name, optional=True, tooltip=f"Brain of the {what} (default: the planner brain, else the rule brain).")


def continue_as_clone(graph, node_type: str, tag: str, inputs: dict, resume: dict) -> io.NodeOutput:
    """The next round or subtask as a clone of this node (ComfyUI node expansion), its four outputs passed on."""
    nxt = graph.node(node_type, id=tag, resume=resume, **present(**inputs))
    return io.NodeOutput(nxt.out(0), nxt.out(1), nxt.out(2), nxt.out(3), expand=graph.finalize())


def uses_graph_tools(tools) -> bool:
    """Whether the chosen toolbox offers a graph tool (then a loop runs its execute steps as Executor nodes, which
    can expand it); graph tools wired to the Toolbox but left out of its selection do not count."""
    return any(tools.get(name).category == "graph" for name in tools.names())


def executed_of(handoff) -> Executed:
    """What an Executor node inside a loop produced, as the loop's flow takes it."""
    return Executed(handoff.chains, handoff.image, handoff.failed, handoff.error or None)
