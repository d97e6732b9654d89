"""PhotoAgent's search with tools that fail, need a mask, or are models (issue 30, item 3): a tool that raises is a
failed child, never a failed node; a model tool runs once per search edit, on the search copy, and the texture
crops follow its change; only tools that edit on their own are offered as actions; every state is scored against
one text."""
from __future__ import annotations

import json

import numpy as np
import pytest

from edit_agents.agents.photoagent.perceiver import BrainPerceiver
from edit_agents.agents.quality.perception import Perception
from edit_agents.agents.photoagent.search import MCTSSettings, crops_following, mcts_enhance, root_state
from edit_agents.agents.records import ToolCall
from edit_agents.agents.quality.reward import ClassicReward
from edit_agents.tools import ToolRegistry, default_registry
from edit_agents.tools.models import MissingModelError
from edit_agents.tools.spec import Param, ToolSpec

CLASSIC = default_registry().subset(categories=["classic"])


class Proposes:
    """A perceiver that proposes the same actions at every state (the boundary a user's VLM would fill)."""

    expensive = False

    def __init__(self, *calls: ToolCall):
        self.calls = calls

    def perceive(self, stats, k, allowed, tried=(), **_):
        return Perception("test", (), tuple(c for c in self.calls if c.tool in allowed)[:k])


def model_tool(name: str, run, **kw) -> ToolSpec:
    return ToolSpec(name, f"A model edit ({name}).", "Test.", (Param("strength", "float", "how much", default=0.5,
                                                                     minimum=0.0, maximum=1.0),),
                    run, category="generative", needs_model=True, speed="slow", **kw)


def with_tools(*specs: ToolSpec) -> ToolRegistry:
    return ToolRegistry([*(CLASSIC.get(n) for n in CLASSIC.names()), *specs])


@pytest.fixture()
def dim(photos):
    return (photos["chelsea"] * 0.45).astype(np.float32)


def settings(**kw) -> MCTSSettings:
    return MCTSSettings(**{"simulations": 16, "depth": 2, "max_steps": 2, "preview_side": 128, **kw})


def test_a_tool_that_raises_is_a_failed_child_and_the_search_goes_on(dim):
    def broken(img, strength=0.5):
        raise RuntimeError("CUDA out of memory (a stand-in)")
    tools = with_tools(model_tool("dream", broken))
    perceiver = Proposes(ToolCall("dream", {"strength": 0.5}), ToolCall("exposure", {"stops": 1.0}))
    result = mcts_enhance(dim, tools, ClassicReward(), settings(), perceiver=perceiver)
    assert [a.tool for a in result.actions][:1] == ["exposure"]  # the search found the edit that runs
    assert result.trace.summary["failed_actions"] == {ToolCall("dream", {"strength": 0.5}).key():
                                                      "RuntimeError: CUDA out of memory (a stand-in)"}
    failed = [c for c in result.trees[0]["children"] if c.get("error")]
    assert len(failed) == 1 and failed[0]["tool"] == "dream" and failed[0]["visits"] == 0  # in the tree view
    said = [s for s in result.trace.steps if s.outputs.get("error")]
    assert said and "dream(strength=0.5) failed" in said[0].action


def test_a_missing_model_bars_its_tool_for_the_rest_of_the_search(dim):
    calls = []

    def missing(img, strength=0.5):
        calls.append(img.shape)
        raise MissingModelError("models/diffusers/ holds no dream model: put one there")
    tools = with_tools(model_tool("dream", missing))
    perceiver = Proposes(ToolCall("dream", {"strength": 0.3}), ToolCall("dream", {"strength": 0.9}),
                         ToolCall("exposure", {"stops": 1.0}))
    result = mcts_enhance(dim, tools, ClassicReward(), settings(), perceiver=perceiver)
    assert len(calls) == 1  # the other strength was never tried: the tool cannot run here at all
    assert result.image.shape == dim.shape and result.actions


def test_every_action_failing_ends_the_step_with_the_photo_as_it_was(dim):
    def broken(img, strength=0.5):
        raise ValueError("the model cannot take this size")
    tools = with_tools(model_tool("dream", broken))
    result = mcts_enhance(dim, tools, ClassicReward(), settings(), perceiver=Proposes(ToolCall("dream", {})))
    assert np.array_equal(result.image, dim) and result.actions == []
    assert any("every action proposed failed" in s.action for s in result.trace.steps if s.role == "loop")


def test_a_model_tool_runs_once_per_search_edit_on_the_search_copy(photos):
    """Not on each of the four texture crops too (5x the cost, a subject painted in each): the crops take the
    change the edit made to their region of the copy, and keep their own detail."""
    shapes = []

    def lift(img, strength=0.5):
        shapes.append(img.shape[:2])
        return np.clip(img + 0.1 * strength, 0.0, 1.0)
    photo = photos["chelsea"][:, :, :3].astype(np.float32) * 0.6
    tools = with_tools(model_tool("lift", lift))
    perceiver = Proposes(ToolCall("lift", {"strength": 1.0}), ToolCall("lift", {"strength": 0.5}))
    result = mcts_enhance(photo, tools, ClassicReward(), settings(max_steps=1), perceiver=perceiver)
    preview = root_state(photo, 128).preview.shape[:2]
    search_calls = [s for s in shapes if s != photo.shape[:2]]
    assert search_calls and set(search_calls) == {preview}  # the copy only, never a 192 px crop
    assert len(search_calls) == result.trace.summary["tool_calls"]  # one per new search state, counted
    full = [s for s in shapes if s == photo.shape[:2]]
    assert len(full) <= settings().top_k + 1  # the full-resolution check of the winners (and the best rollout)


def test_the_crops_follow_the_change_the_copy_took(photos):
    photo = photos["chelsea"][:, :, :3].astype(np.float32) * 0.6
    state = root_state(photo, 128)
    lifted = crops_following(state, np.clip(state.preview + 0.1, 0, 1))
    for before, after in zip(state.crops, lifted):
        assert after.shape == before.shape
        assert np.allclose(after - before, 0.1, atol=1e-3)  # the detail of the crop is its own
    warmer = state.preview * np.array([1.2, 1.0, 0.8], np.float32)
    moved = crops_following(state, np.clip(warmer, 0, 1))
    assert all(m[..., 0].mean() > b[..., 0].mean() and m[..., 2].mean() < b[..., 2].mean()
               for m, b in zip(moved, state.crops))


def test_tools_that_need_a_mask_or_make_one_are_not_actions():
    tools = default_registry()
    assert not tools.get("inpaint").stands_alone  # needs mask='step:N': a chain's work
    assert not tools.get("ground").stands_alone  # makes a mask
    assert tools.get("exposure").stands_alone and tools.get("instruct_pix2pix").stands_alone


def test_the_vision_perceiver_is_offered_only_tools_that_edit_on_their_own(llm, photos):
    from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
    from llm_server import Reply

    llm.reset(Reply({"scene": "a cat", "actions": []}))
    tools = default_registry()
    perceiver = BrainPerceiver(OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm",
                                                       backoff=0.01)), tools)
    mcts_enhance(photos["chelsea"][::4, ::4], tools, ClassicReward(), settings(max_steps=1), perceiver=perceiver)
    schema = str(llm.seen[0].body["response_format"])
    assert "'instruct_pix2pix'" in schema and "'exposure'" in schema
    assert "'inpaint'" not in schema and "'ground'" not in schema and "'segment'" not in schema


def test_every_state_is_scored_against_one_text(dim):
    """The learned components read the reward's one scoring text (the mood, or a fixed generic one), never an
    action's label; the mood typed on the search's reward is that text."""
    seen = []

    class Reads:  # a learned component at the boundary: what text was it given?
        def unavailable(self):
            return None

        def measure(self, img, text):
            seen.append(text)
            return 0.0, 0.5
    from edit_agents.agents.quality.reward import Reward, RewardConfig

    reward = Reward(RewardConfig(preset="paper"), {"clip": Reads()})
    perceiver = Proposes(ToolCall("exposure", {"stops": 1.0}), ToolCall("gamma", {"gamma": 1.3}))
    mcts_enhance(dim, CLASSIC, reward, settings(max_steps=1), perceiver=perceiver)
    assert seen and set(seen) == {"a high-quality photo"}
    seen.clear()
    mcts_enhance(dim, CLASSIC, reward.with_mood("warm and cosy"), settings(max_steps=1), perceiver=perceiver)
    assert set(seen) == {"warm and cosy"}


def test_past_its_budget_a_vision_perceiver_never_repeats_a_tool_on_a_path(dim):
    """States expanded past the per-step budget reuse the nearest asked ancestor's proposals, without the tools
    already on the path (issue 30: a path repeated a tool)."""
    class Costly(Proposes):
        expensive = True
        asked = 0

        def perceive(self, stats, k, allowed, tried=(), **kw):
            Costly.asked += 1
            return super().perceive(stats, k, allowed, tried, **kw)
    perceiver = Costly(ToolCall("exposure", {"stops": 0.5}), ToolCall("gamma", {"gamma": 1.2}),
                       ToolCall("contrast", {"amount": 0.2}))
    result = mcts_enhance(dim, CLASSIC, ClassicReward(), settings(simulations=40, depth=3, max_steps=1,
                                                                  perceiver_calls=1), perceiver=perceiver)
    assert Costly.asked == 1

    def paths(node, above=()):
        tools = above + ((node["tool"],) if "tool" in node else ())
        yield tools
        for child in node.get("children", []):
            yield from paths(child, tools)
    seen = [p for p in paths(result.trees[0]) if len(p) >= 2]
    assert seen and all(len(set(p)) == len(p) for p in seen)


@pytest.mark.parametrize("where", ["planner", "reward"])
def test_the_mood_is_typed_once_and_reaches_the_perceiver_and_the_reward(comfy, comfy_server, photos, where):
    """On the MCTS Planner or on the Reward: either way the reward scores toward it and the perceiver aims at it."""
    from PIL import Image

    Image.fromarray((photos["chelsea"][::4, ::4] * 255).astype(np.uint8)).save(comfy_server.dirs()["input"] / "mood.png")
    mood = "warm and cosy"
    prompt = {
        "img": {"class_type": "LoadImage", "inputs": {"image": "mood.png"}},
        "reward": {"class_type": "EditAgentsReward", "inputs": {
            "preservation": 1.5, "preset": "offline", "exposure": 0.172, "clipping": 0.155, "contrast": 0.109,
            "colourfulness": 0.091, "colour_cast": 0.126, "sharpness": 0.072, "noise": 0.11,
                                                               "mood": mood if where == "reward" else ""}},
        "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {
            "image": ["img", 0], "simulations": 2, "depth": 1, "exploration": 1.0, "branching": 2, "top_k": 1,
            "max_steps": 1, "patience": 1, "preview_side": 64, "time_budget_s": 60.0, "seed": 0,
            "mood": mood if where == "planner" else "", "reward": ["reward", 0]}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}},
    }
    result = comfy.call("run", prompt)
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert trace["steps"][0]["inputs"]["scoring_text"] == mood  # the reward
    seen = next(s for s in trace["steps"] if s["role"] == "perceiver" and "source" in s["outputs"])
    assert seen["outputs"]["source"] != "rules"  # the mood-guided perceiver, not the defect rules
    asked = [s for s in trace["steps"] if s["role"] == "perceiver" and mood in json.dumps(s.get("inputs", {}))]
    assert asked or any(mood in str(a.get("rationale", "")) for a in seen["outputs"]["actions"])
