"""Every tool the agents name exists, and what a tool's spec says it moves is a metric a critic can check.

The offline brain, the perceiver and the workflows name tools by string; a renamed or removed tool would only
show when a run reached that line. These tests read every such name."""
import ast
import json
import re

import pytest

from edit_agents.agents import rule_brain
from edit_agents.agents.quality.measure import CHECKED
from edit_agents.agents.quality.metrics import METRICS
from edit_agents.tools import default_registry
from helpers import PACK_ROOT

TOOLS = default_registry()
NAMES = set(TOOLS.names())
PRODUCT = [p for folder in ("agents", "tools", "nodes", "cli") for p in (PACK_ROOT / folder).rglob("*.py")]


def names_in(source: str) -> set[str]:
    """Every tool a proposal or call is written for in ``source``: ``_at("tool", ...)`` and
    ``ToolCall("tool", ...)`` with a literal name."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("_at", "ToolCall")
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            found.add(node.args[0].value)
    return found


def proposed_names() -> set[tuple[str, str]]:
    """(file, tool) for every tool named so in the product code."""
    return {(path.name, name) for path in PRODUCT for name in names_in(path.read_text())}


def test_every_tool_the_code_proposes_or_calls_by_name_exists():
    found = proposed_names()
    assert len(found) >= 14  # the perceiver's findings alone propose this many
    missing = sorted(f"{file}: {name}" for file, name in found if name not in NAMES | {"stop"})
    assert not missing, f"tools named in the code but not in the registry: {missing}"


def test_every_tool_the_rule_brain_names_exists():
    named = {tool for tool, _ in rule_brain.MOODS.values()} | rule_brain.RESHAPING
    assert named and not named - NAMES, f"unknown tools: {sorted(named - NAMES)}"


def test_every_conflict_names_a_tool():
    bad = {(spec.name, other) for spec in TOOLS.specs() for other in spec.conflicts if other not in NAMES}
    assert not bad, f"conflicts naming no tool: {sorted(bad)}"


def test_what_each_spec_moves_is_a_metric_a_rule_critic_can_check():
    moving = {spec.name: spec.moves for spec in TOOLS.specs() if spec.moves is not None}
    assert {"exposure", "contrast", "white_balance", "denoise", "vignette"} <= set(moving)
    for name, moves in moving.items():
        assert moves.metric in METRICS, f"{name} moves an unknown metric {moves.metric!r}"
        assert moves.metric in CHECKED, f"{name} moves {moves.metric}, which no rule critic checks"
        assert moves.direction in ("up", "down")


@pytest.mark.parametrize("metric", sorted(m for m in METRICS if METRICS[m].more))
def test_a_metric_a_request_can_ask_for_has_both_phrases(metric):
    assert METRICS[metric].less and METRICS[metric].min_change > 0


def test_the_shipped_workflows_name_only_existing_tools():
    chains = []
    for path in sorted((PACK_ROOT / "workflows").glob("*.json")):
        for node in json.loads(path.read_text()).get("nodes", []):
            for value in node.get("widgets_values") or []:
                if isinstance(value, str) and re.match(r"\s*\[\s*\{", value):
                    chains.extend((path.name, call["tool"]) for call in json.loads(value))
    assert any(file == "building_blocks.json" for file, _ in chains)  # the chain of its Apply Tools is read
    missing = sorted(f"{file}: {tool}" for file, tool in chains if tool not in NAMES)
    assert not missing, f"workflow chains naming no tool: {missing}"


def test_the_scan_finds_a_tool_that_does_not_exist():
    source = 'calls = _at("exposure_v2", "stops", (1,), "why") + [ToolCall("levels", {}), other("x")]'
    assert names_in(source) == {"exposure_v2", "levels"} and "exposure_v2" not in NAMES
