"""The rule brain's package and the loops' state machines (issue 68, item 3): the rule brain answers through an
explicit role table and imports no perceiver or reward of its own; each loop's next step follows from its state
and the last step's outcome alone."""
from __future__ import annotations

import ast
import asyncio
from pathlib import Path

import numpy as np
import pytest

from edit_agents.agents import cca, imagagent
from edit_agents.agents.brain import BrainError, BrainRequest
from edit_agents.agents.loop import Executed
from edit_agents.agents.records import Plan, Subtask
from edit_agents.agents.rule_brain import ROLES, RuleBrain
from edit_agents.agents.rule_default import offline_brain
from edit_agents.agents.trace import Trace

PACKAGE = Path(__file__).resolve().parents[1] / "agents" / "rule_brain"


def test_the_rule_brain_package_imports_no_perceiver_or_reward():
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "photoagent" not in (node.module or "") and "reward" not in (node.module or ""), path.name


def test_the_role_table_names_every_role_and_refuses_others():
    assert set(ROLES) == {"planner", "executor", "questions", "answers", "expert", "aggregator", "competitor",
                          "perceiver"}
    with pytest.raises(BrainError, match="no 'caption' role"):
        asyncio.run(offline_brain().ask(BrainRequest(role="caption", system="", text="", schema={})))


def test_a_bolder_rule_brain_keeps_what_it_was_given():
    brain = offline_brain()
    bolder = brain.with_boldness(1.6)
    assert isinstance(bolder, RuleBrain) and bolder.name == "rule(boldness=1.6)"
    assert (bolder.reward, bolder.perceiver, bolder.scene) == (brain.reward, brain.perceiver, brain.scene)


def test_the_cca_machine():
    state, settings = cca.CCAState(Trace()), cca.CCASettings(rounds=2)
    work = cca.RoundPlans(0, None, np.zeros((2, 2, 3)), plans={"g": Plan()})
    assert cca.next_step(state, settings, cca.FIRST, None).kind == "finish"  # a brain failed; the best is kept
    assert cca.next_step(state, settings, cca.FIRST, work) == cca.Step("execute", work)
    nothing = cca.RoundPlans(0, None, np.zeros((2, 2, 3)), failed={"g": "no plan"})
    assert cca.next_step(state, settings, cca.FIRST, nothing) == cca.Step("judge", nothing)  # judged at once
    done = {"g": Executed()}
    assert cca.next_step(state, settings, cca.Step("execute", work), done) == cca.Step("judge", work, done)
    assert cca.next_step(state, settings, cca.Step("judge", work), False) == cca.FIRST
    assert cca.next_step(state, settings, cca.Step("judge", work), True).kind == "finish"


def test_the_closed_loop_machine():
    state = imagagent.ClosedLoopState(Trace(), Plan([Subtask(0, "warmer", "temperature_tint")]), np.zeros((2, 2, 3)))
    assert imagagent.next_step(state, imagagent.PLANNED).kind == "execute"
    ran = Executed()
    assert imagagent.next_step(state, imagagent.Step("execute"), ran) == imagagent.Step("judge", ran)
    state.accepted.append(True)
    assert imagagent.next_step(state, imagagent.Step("judge", ran)).kind == "finish"
