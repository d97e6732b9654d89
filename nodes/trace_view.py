"""Trace view: shows an agent's trace and publishes it as `ui` data (so /history carries it)."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.trace import HISTORY_KEY
from .types import CATEGORY, TRACE


class TraceView(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        return io.Schema(
            node_id="EditAgentsTraceView",
            display_name="Trace View",
            category=CATEGORY,
            description="Shows what the agent decided (steps, tools, parameters, scores) and publishes the trace "
                        f"as JSON under '{HISTORY_KEY}' in the prompt's /history outputs.",
            inputs=[TRACE.Input("trace", tooltip="A TRACE from an agent or loop node.")],
            outputs=[],
            is_output_node=True,
        )

    @classmethod
    def execute(cls, trace) -> io.NodeOutput:
        summary = trace.summary
        lines = [trace.title]
        if "score_before" in summary:
            lines.append(f"score {summary['score_before']:.3f} -> {summary['score_after']:.3f} "
                         f"in {summary.get('steps', 0)} step(s)")
        lines += [f"{s.index:>3} {s.role:<10} {s.action}" for s in trace.steps if s.role == "loop"]
        return io.NodeOutput(ui={HISTORY_KEY: [trace.to_dict()], "text": ["\n".join(lines)]})


NODES = [TraceView]
