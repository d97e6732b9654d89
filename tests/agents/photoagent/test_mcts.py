"""The MCTS planner: finds a known best sequence that greedy misses, respects its budgets, caches."""
from __future__ import annotations

import numpy as np
import pytest

from edit_agents.agents.photoagent.enhance import EnhanceSettings, enhance
from edit_agents.agents.photoagent.search import MCTSSettings, apply_call, mcts_enhance, root_state
from edit_agents.agents.records import ToolCall
from edit_agents.agents.quality.reward import ClassicReward, Score
from edit_agents.agents.quality.metrics import image_statistics, texture_crops
from edit_agents.tools import ToolRegistry, ToolSpec, default_registry
from edit_agents.tools.imageops import sampled_gaussian

# A toy world: the image is one gray value. From 0.30, "a" gives 0.50 (the best single step, a dead end),
# "b" gives 0.45 (worse at first), and from 0.45 "c" gives 1.00 (the best state). Greedy takes a and stops.
# A move made from any other state falls into a sink (0.0, reward -1), as over-edits do.
VALUES = {0.3: 0.0, 0.5: 0.2, 0.45: 0.1, 1.0: 1.0, 0.0: -1.0}


def move(frm: float, to: float):
    def run(img):
        return np.full_like(img, to if abs(float(img.mean()) - frm) < 1e-3 else 0.0)
    return run


TOY = ToolRegistry([ToolSpec(n, f"Toy move {n}.", "Toy.", (), move(f, t)) for n, f, t in
                    (("a", 0.3, 0.5), ("b", 0.3, 0.45), ("c", 0.45, 1.0))])


class ToyReward:
    def score(self, img, original=None, crops=None, known=None):
        v = round(float(img.mean()), 2)
        return Score(total=VALUES.get(v, 0.0), components={}, raw={"value": v})


class AllMoves:
    expensive = False

    def propose(self, stats, k, allowed, tried=(), **_):
        return [ToolCall(n) for n in ("a", "b", "c")][:k]

    def perceive(self, stats, k, allowed, tried=(), **kw):
        from edit_agents.agents.quality.perception import Perception

        return Perception("toy", (), tuple(self.propose(stats, k, allowed, tried, **kw)))


def start():
    return np.full((8, 8, 3), 0.3, np.float32)


def test_mcts_finds_the_best_sequence_that_greedy_misses():
    settings = MCTSSettings(simulations=200, depth=2, top_k=1, max_steps=3, min_gain=0.01, preview_side=8, seed=1)
    result = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves())
    assert [a.tool for a in result.actions] == ["b", "c"] and result.score_after == 1.0
    greedy = enhance(start(), TOY, ToyReward(), EnhanceSettings(top_k=1, min_gain=0.01, preview_side=8), perceiver=AllMoves())
    assert [a.tool for a in greedy.actions] == ["a"] and greedy.score_after == pytest.approx(0.2)
    tree = result.trees[0]
    assert tree["visits"] == 200 and max(tree["children"], key=lambda c: c["visits"])["action"] == "b()"


def test_the_best_rollout_is_re_run_when_its_first_edit_alone_scores_worse():
    """A valley: "b" alone scores below the start, "b" then "c" is the best state. The one-action check rejects
    "b" on its own, so the executor also re-runs the search's best rollout as a sequence and keeps it."""
    class ValleyReward(ToyReward):
        def score(self, img, original=None, crops=None, known=None):
            v = round(float(img.mean()), 2)
            return Score(total={0.3: 0.0, 0.5: 0.2, 0.45: -0.5, 1.0: 1.0}.get(v, -1.0), components={}, raw={"value": v})

    settings = MCTSSettings(simulations=60, depth=2, top_k=1, max_steps=2, min_gain=0.01, preview_side=8, seed=1)
    result = mcts_enhance(start(), TOY, ValleyReward(), settings, perceiver=AllMoves())
    assert [a.tool for a in result.actions] == ["b", "c"] and result.score_after == 1.0
    assert len(result.steps) == 3  # the input, then the state after each edit of the sequence
    accepted = [st for st in result.trace.steps if st.role == "loop" and st.action.startswith("accept")]
    assert accepted[0].action == "accept b() -> c()" and [c["tool"] for c in accepted[0].outputs["sequence"]] == ["b", "c"]


def test_visits_concentrate_on_the_better_child():
    """Normalised UCT: the best first move gets most of the visits, not an even share of them."""
    settings = MCTSSettings(simulations=120, depth=2, top_k=1, max_steps=1, preview_side=8, seed=3)
    tree = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves()).trees[0]
    visits = {c["action"]: c["visits"] for c in tree["children"]}
    assert set(visits) == {"a()", "b()", "c()", "stop()"}
    assert visits["b()"] > 0.5 * 120 and visits["b()"] > 2 * max(v for k, v in visits.items() if k != "b()")
    assert visits["c()"] == min(visits.values())  # the move into the sink is tried, then left alone
    # a large exploration constant spreads the visits out
    spread = mcts_enhance(start(), TOY, ToyReward(), MCTSSettings(simulations=120, depth=2, max_steps=1, preview_side=8,
                                                                  exploration=10.0, seed=3), perceiver=AllMoves())
    wide = {c["action"]: c["visits"] for c in spread.trees[0]["children"]}
    assert max(wide.values()) < visits["b()"]


def test_visits_concentrate_on_a_real_photo(photos):
    tools = default_registry().subset(categories=["classic"])
    dark = photos["coffee"] * 0.45
    result = mcts_enhance(dark, tools, settings=MCTSSettings(simulations=40, depth=2, max_steps=1))
    children = result.trees[0]["children"]
    visits = sorted((c["visits"] for c in children), reverse=True)
    assert len(children) >= 4 and visits[0] >= 2 * visits[len(visits) // 2]  # not the flat 1/K share of each
    best = max(children, key=lambda c: c["visits"])
    assert best["tool"] in ("exposure", "auto_levels", "gamma") and best["mean"] == max(c["mean"] for c in children)


def test_backup_is_the_rollouts_final_value():
    """A path whose rollout ends in the sink is backed up with the sink's value, not the best state on the way."""
    settings = MCTSSettings(simulations=1, depth=1, max_steps=1, preview_side=8)
    tree = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves()).trees[0]
    value = {"a()": 0.2, "b()": 0.1, "c()": -1.0, "stop()": 0.0}  # the reward of each first move's state
    child = tree["children"][0]
    assert tree["visits"] == 1 and child["mean"] == value[child["action"]]  # depth 1: G is the child's own state
    for seed in range(6):
        deep = mcts_enhance(start(), TOY, ToyReward(), MCTSSettings(simulations=1, depth=2, max_steps=1, preview_side=8,
                                                                    seed=seed), perceiver=AllMoves()).trees[0]
        child = deep["children"][0]
        # G(s_T): the state after the random second move (or the child itself when the rollout stops)
        assert child["mean"] in (value[child["action"]], -1.0, 1.0)


def test_budgets_and_cache():
    settings = MCTSSettings(simulations=60, depth=2, max_steps=2, preview_side=8)
    result = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=AllMoves())
    assert result.simulations <= 60 * 2 and result.cache_hits > 0
    assert result.trace.summary["cache_hits"] == result.cache_hits
    quick = mcts_enhance(start(), TOY, ToyReward(), MCTSSettings(simulations=100000, time_budget_s=0.05, max_steps=1,
                                                                 preview_side=8), perceiver=AllMoves())
    assert quick.simulations < 100000  # the time budget ended the search


def test_mcts_on_real_photos(photos):
    tools = default_registry().subset(categories=["classic"])
    dark = photos["coffee"] * 0.45 + 0.05
    result = mcts_enhance(dark, tools, settings=MCTSSettings(simulations=12, max_steps=2))
    assert result.score_after > result.score_before + 0.1 and result.actions
    good = mcts_enhance(photos["astronaut"], tools, settings=MCTSSettings(simulations=12, max_steps=2))
    assert len(good.actions) <= 1 and np.abs(good.image - photos["astronaut"]).mean() < 0.03
    with pytest.raises(ValueError, match="simulations"):
        MCTSSettings(simulations=0)


@pytest.mark.parametrize("call", [ToolCall("white_balance", {"strength": 1.0}), ToolCall("auto_levels", {"clip_percent": 1.0}),
                                  ToolCall("contrast", {"amount": 0.6}), ToolCall("exposure", {"stops": 0.5})])
def test_search_crops_are_edited_as_parts_of_the_photo(call, photos):
    """The native-resolution crops of a search state are what the edited photo's crops would be, though a
    tool that measures its image (illuminant, levels, mean) measures it on the small copy, not the crop."""
    tools = default_registry().subset(categories=["classic"])
    photo = photos["coffee"] * np.array([1.0, 0.85, 0.6], np.float32)  # warm and dim, so every tool acts
    state = apply_call(tools, root_state(photo, 128), call)
    truth = texture_crops(tools.call(call.tool, photo, call.params)[0])
    assert max(np.abs(a - b).mean() for a, b in zip(state.crops, truth)) < 0.01


def test_a_search_path_applies_each_tool_once(photos):
    """Sharpen after sharpen only overshoots what one stronger proposal does: on a blurred photo the tree's
    second level never repeats its parent's tool, and the search keeps a gentle sharpen rather than none."""
    tools = default_registry().subset(categories=["classic"])
    blurred = sampled_gaussian(photos["camera"], 1.5)
    dim = mcts_enhance(blurred * 0.5, tools, settings=MCTSSettings(max_steps=1))  # two defects: a deeper tree
    tree = dim.trees[0]
    pairs = [(c["tool"], g["tool"]) for c in tree["children"] for g in c.get("children", []) if "tool" in c and "tool" in g]
    assert pairs and all(parent != child for parent, child in pairs)
    sharpened = mcts_enhance(blurred, tools, settings=MCTSSettings(max_steps=1))
    # one deblurring edit: the guarded sharpen, or a deconvolution with the kernel measured on the photo
    assert [a.tool for a in sharpened.actions] in (["sharpen"], ["deconvolve"])


def test_the_spare_thread_changes_no_decision_of_the_search(photos, monkeypatch):
    """With two threads the search measures statistics and edits crops beside the main thread: the same trees,
    the same edits and the same image as on one."""
    import torch

    from edit_agents.agents.quality import reward as reward_module

    tools = default_registry().subset(categories=["classic"])
    dim = photos["coffee"] * np.array([0.5, 0.45, 0.35], np.float32)  # dark and warm: a wide tree
    settings = MCTSSettings(simulations=12, max_steps=2)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    with reward_module.spare_thread() as pool:
        assert pool is not None
    two = mcts_enhance(dim, tools, settings=settings)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    with reward_module.spare_thread() as pool:
        assert pool is None
    one = mcts_enhance(dim, tools, settings=settings)
    assert [a.label() for a in two.actions] == [a.label() for a in one.actions] and two.actions
    assert two.score_after == one.score_after and np.array_equal(two.image, one.image)
    strip = lambda tree: {k: strip(v) if isinstance(v, dict) else [strip(c) for c in v] if k == "children" else v  # noqa: E731
                          for k, v in tree.items() if k != "thumb"}
    assert [strip(t) for t in two.trees] == [strip(t) for t in one.trees]


def test_a_search_runs_one_torch_thread_on_each_of_its_threads(photos, monkeypatch):
    """The search and its spare thread take one core each: each keeps to one torch thread (OpenMP's count is per
    thread), and the caller's count is back as it was afterwards."""
    import torch

    from edit_agents.agents.quality import reward as reward_module

    real = torch.get_num_threads
    before = real()
    with reward_module.torch_threads(1):
        assert real() == 1
    assert real() == before
    with reward_module.torch_threads(None):
        assert real() == before
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)  # a spare thread even on a one-core machine
    with reward_module.spare_thread() as pool:
        assert pool.submit(real).result() == 1
    monkeypatch.undo()
    assert real() == before  # the spare thread's count was its own
    mcts_enhance(photos["coffee"][::4, ::4] * 0.5, default_registry().subset(categories=["classic"]),
                 settings=MCTSSettings(simulations=4, max_steps=1))
    assert real() == before


def test_a_geometry_edit_leaves_the_crops_with_or_without_the_spare_thread(photos):
    from concurrent.futures import ThreadPoolExecutor

    tools = default_registry().subset(categories=["classic"])
    state = root_state(photos["coffee"], 128)
    crop = ToolCall("crop", {"box": [0.1, 0.1, 0.6, 0.7]})
    with ThreadPoolExecutor(1) as pool:
        beside = apply_call(tools, state, crop, pool)
        warm = apply_call(tools, state, ToolCall("temperature_tint", {"temperature": 0.5}), pool)
    assert beside.crops is state.crops and beside.preview.shape != state.preview.shape
    alone = apply_call(tools, state, ToolCall("temperature_tint", {"temperature": 0.5}))
    assert all(np.array_equal(a, b) for a, b in zip(warm.crops, alone.crops))
    assert not np.array_equal(warm.crops[0], state.crops[0])


def test_the_search_reuses_the_perceivers_statistics_in_the_reward(photos):
    state = root_state(photos["chelsea"] * 0.5, 128)
    reward = ClassicReward()
    known = image_statistics(state.preview, state.crops)
    again = reward.score(state.preview, photos["chelsea"], crops=state.crops, known=known)
    fresh = reward.score(state.preview, photos["chelsea"], crops=state.crops)
    assert again.total == fresh.total and again.raw == fresh.raw


def decode_thumb(url: str) -> np.ndarray:
    import base64
    import io

    from PIL import Image

    assert url.startswith("data:image/jpeg;base64,")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1]))))


def test_steps_stream_live_with_thumbnails_and_the_tree_has_them(photos):
    tools = default_registry().subset(categories=["classic"])
    dark = photos["coffee"] * 0.45 + 0.05
    heard = []
    result = mcts_enhance(dark, tools, settings=MCTSSettings(simulations=8, max_steps=2, branching=4),
                          listener=lambda step: heard.append(step.index))
    assert heard == list(range(len(result.trace.steps)))  # every step, as it was made
    first = result.trace.steps[0]
    assert first.action == "score the input" and decode_thumb(first.thumb).shape == (64, 96, 3)  # a 400x600 photo
    accepted = [s for s in result.trace.steps if s.action.startswith("accept")]
    assert accepted and all(max(decode_thumb(s.thumb).shape[:2]) == 96 for s in accepted)
    tree = next(s for s in result.trace.steps if s.role == "planner").outputs["tree"]
    nodes = [tree] + tree["children"] + [g for c in tree["children"] for g in c.get("children", [])]
    assert len(nodes) > 5 and all(max(decode_thumb(n["thumb"]).shape[:2]) == 64 for n in nodes)
    assert all(n["tool"] in tools.names() + ["stop"] for n in nodes[1:])
    assert len(result.trace.to_json()) < 200_000  # thumbnails keep the trace small enough for /history


class Recording(AllMoves):
    """Proposes every move and records the memory it is shown."""

    def __init__(self):
        self.memories = []

    def propose(self, stats, k, allowed, tried=(), *, image=None, memory=(), crops=None):
        self.memories.append([m.line() for m in memory])
        return [ToolCall(n) for n in ("a", "b", "c")][:k]


def test_memory_of_executed_actions_reaches_the_perceiver():
    perceiver = Recording()
    settings = MCTSSettings(simulations=200, depth=2, top_k=1, max_steps=3, preview_side=8, seed=1)
    result = mcts_enhance(start(), TOY, ToyReward(), settings, perceiver=perceiver)
    assert perceiver.memories[0] == []  # nothing executed yet
    assert any(m and m[0].startswith("b(): kept") for m in perceiver.memories)
    planner_steps = [s for s in result.trace.steps if s.role == "planner"]
    assert planner_steps[1].outputs["memory"][0].startswith("b(): kept")


def test_rule_perceiver_does_not_repeat_reverted_actions(photos):
    from edit_agents.agents.quality.perception import Memory, RulePerceiver
    from edit_agents.agents.quality.metrics import image_statistics

    dark = photos["coffee"] * 0.4
    stats = image_statistics(dark)
    names = default_registry().names()
    first = RulePerceiver().propose(stats, 3, names)
    again = RulePerceiver().propose(stats, 3, names, memory=[Memory(first[0], -0.02, False)])
    kept = RulePerceiver().propose(stats, 3, names, memory=[Memory(first[0], 0.05, True)])
    assert first[0].key() not in [c.key() for c in again] and kept[0].key() == first[0].key()


def scripted_vlm(llm):
    from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain

    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm", backoff=0.01))


def test_vlm_perceiver_in_mood_mode_keeps_its_call_budget_and_is_validated(llm, photos):
    from edit_agents.agents.photoagent.perceiver import BrainPerceiver
    from llm_server import Reply

    tools = default_registry().subset(categories=["classic"])
    llm.reset(Reply({"scene": "food, indoor", "actions": [
                  {"tool": "temperature_tint", "params": {"temperature": 0.3}, "rationale": "warmer"},
                  {"tool": "run_shell", "params": {"cmd": "rm -rf /"}},  # not a tool: refused by the schema
              ]}),
              Reply({"scene": "food", "actions": [
                  {"tool": "temperature_tint", "params": {"temperature": 0.3}, "rationale": "warmer"},
                  {"tool": "exposure", "params": {"stops": 99}, "rationale": "way out of range"}]}),
              Reply({"scene": "food", "actions": [{"tool": "vibrance", "params": {"amount": 0.2}}]}),
              Reply({"scene": "food", "actions": [{"tool": "vibrance", "params": {"amount": 0.2}}]}))
    perceiver = BrainPerceiver(scripted_vlm(llm), tools, mood="warm and cosy")
    settings = MCTSSettings(simulations=8, depth=2, top_k=1, max_steps=2, patience=2, preview_side=64, perceiver_calls=1)
    result = mcts_enhance(photos["coffee"], tools, settings=settings, perceiver=perceiver)
    assert perceiver.calls == 2  # a budget of one VLM call per step, however many simulations
    assert "warm and cosy" in llm.seen[0].body["messages"][0]["content"]
    assert len(llm.seen[0].images()) == 1
    # the first answer named a tool outside the toolbox and was re-asked; nothing ran it
    assert "run_shell" in str(llm.seen[1].body["messages"])
    first_step = [s for s in result.trace.steps if s.role == "planner"][0]
    proposals = {p["tool"]: p["params"] for p in first_step.outputs["proposals"]}
    assert list(proposals) == ["temperature_tint", "exposure"]
    stops = tools.get("exposure").params[0]
    assert proposals["exposure"]["stops"] == stops.maximum  # 99 stops was clamped to the spec's range
    # step 2's request carries step 1's outcome (kept or reverted: the classic reward does not read moods)
    executed = [s for s in result.trace.steps if s.role == "planner"][1].outputs["memory"][0]
    assert executed.split("(")[0] in proposals
    assert "Already executed" in llm.seen[-1].user_text() and executed in llm.seen[-1].user_text()


def test_a_vision_perceiver_that_fails_hands_over_to_the_rules_and_the_search_goes_on(photos):
    """An endpoint that is not there (issue 67): the MCTS search does not end; the rule perceiver proposes for the
    rest of the run, the brain is not asked again, and the trace says why. A darkened photo still gets its edit."""
    from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
    from edit_agents.agents.photoagent.perceiver import BrainPerceiver
    from edit_agents.cli.server import free_port

    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    tools = default_registry().subset(categories=["classic"])
    perceiver = BrainPerceiver(OpenAIBrain(BrainConfig(provider="custom", base_url=dead, model="m", backoff=0.01,
                                                       max_retries=1, timeout=5.0)), tools)
    settings = MCTSSettings(simulations=8, depth=2, top_k=1, max_steps=2, patience=1, preview_side=64)
    result = mcts_enhance(photos["coffee"] * 0.45, tools, settings=settings, perceiver=perceiver)
    handed = [s for s in result.trace.steps if s.outputs.get("fallback") == "rules"]
    assert len(handed) == 1 and "127.0.0.1" in handed[0].action  # once, naming the endpoint
    assert perceiver.calls == 1  # not asked again after it failed
    assert any(s.role == "loop" and s.action.startswith("accept") for s in result.trace.steps)


def test_vision_perceiver_is_asked_at_each_expanded_state_within_the_budget(photos):
    from edit_agents.agents.photoagent.perceiver import BrainPerceiver
    from edit_agents.agents.rule_default import offline_brain as RuleBrain

    tools = default_registry().subset(categories=["classic"])
    perceiver = BrainPerceiver(RuleBrain(), tools, mood="warm and cosy")
    settings = MCTSSettings(simulations=12, depth=2, max_steps=1, preview_side=64, perceiver_calls=3)
    result = mcts_enhance(photos["coffee"], tools, settings=settings, perceiver=perceiver)
    planner = [s for s in result.trace.steps if s.role == "planner"][0]
    assert perceiver.calls == 3 and planner.outputs["perceiver_calls"] == 3  # root + 2 expanded states, then reuse
    scene = [s for s in result.trace.steps if s.role == "perceiver" and s.action.startswith("scene")][0]
    assert scene.outputs["source"] == "vision brain"


def test_a_vision_perceiver_sees_the_whole_toolbox_and_its_repeats_on_a_path_are_dropped(photos):
    """A model is offered the same tools at every state (so an answer naming a tool already on the path is
    not a schema error that fails the run); the search drops such proposals itself."""
    from edit_agents.agents.quality.perception import Perception

    class Insistent:  # a vision model that always wants the same two edits
        expensive, offered = True, []

        def perceive(self, stats, k, allowed, tried=(), *, image=None, memory=(), crops=None):
            self.offered.append(sorted(allowed))
            return Perception("general", (), (ToolCall("vibrance", {"amount": 0.3}), ToolCall("exposure", {"stops": 0.3})))

    tools = default_registry().subset(categories=["classic"])
    perceiver = Insistent()
    result = mcts_enhance(photos["coffee"] * 0.6, tools, settings=MCTSSettings(simulations=12, depth=3, max_steps=1,
                                                                               preview_side=64, perceiver_calls=6),
                          perceiver=perceiver)
    assert len(perceiver.offered) > 1 and all(names == sorted(tools.names()) for names in perceiver.offered)
    tree = result.trees[0]
    pairs = [(c["tool"], g["tool"]) for c in tree["children"] for g in c.get("children", []) if "tool" in c and "tool" in g]
    assert pairs and all(parent != child for parent, child in pairs)


def test_rule_brain_serves_the_perceiver_offline_with_a_mood(photos):
    from edit_agents.agents.photoagent.perceiver import BrainPerceiver
    from edit_agents.agents.rule_default import offline_brain as RuleBrain

    tools = default_registry().subset(categories=["classic"])
    perceiver = BrainPerceiver(RuleBrain(), tools, mood="warm and cosy")
    calls = perceiver.propose({}, 4, tools.names(), image=photos["coffee"])
    assert calls and calls[0].tool == "temperature_tint"


def _framed(photo: np.ndarray, top: int, bottom: int, left: int, right: int, colour: float) -> np.ndarray:
    h, w = photo.shape[:2]
    out = np.full((h + top + bottom, w + left + right, 3), colour, np.float32)
    out[top:top + h, left:left + w] = photo
    return out


@pytest.mark.parametrize("frame", [(30, 30, 40, 40, 1.0), (40, 40, 0, 0, 0.0)], ids=["white mount", "letterbox"])
def test_a_frame_is_no_part_of_the_photo(photos, frame):
    """A white mount read as the photo's own was blown highlights: the search darkened the coffee on it to a grey
    mount (ΔE 11). Letterbox bars would read as crushed shadows. The photo inside is searched as it is alone, and
    the frame put back as it came."""
    tools = default_registry().subset(categories=["classic"])
    settings = MCTSSettings(simulations=12, max_steps=2)
    top, bottom, left, right, colour = frame
    dim = np.ascontiguousarray(photos["coffee"][::2, ::2] * np.array([0.5, 0.45, 0.35], np.float32))  # dark, warm
    whole = _framed(dim, top, bottom, left, right, colour)
    framed = mcts_enhance(whole, tools, settings=settings)
    alone = mcts_enhance(dim, tools, settings=settings)
    assert [a.label() for a in framed.actions] == [a.label() for a in alone.actions] and alone.actions
    inside = (slice(top, whole.shape[0] - bottom), slice(left, whole.shape[1] - right))
    assert np.array_equal(framed.image[inside], alone.image)
    mask = np.ones(whole.shape[:2], bool)
    mask[inside] = False
    assert np.all(framed.image[mask] == colour)  # the frame as it came
    assert all(step.shape == whole.shape for step in framed.steps) and np.array_equal(framed.steps[0], whole)
    note = [s.action for s in framed.trace.steps if "frame of one flat colour" in s.action]
    assert note and f"{dim.shape[1]}x{dim.shape[0]} px" in note[0]
    # the greedy loop (PhotoAgent (enhance)) alike
    greedy, greedy_alone = enhance(whole, tools), enhance(dim, tools)
    assert [a.label() for a in greedy.actions] == [a.label() for a in greedy_alone.actions] and greedy_alone.actions
    assert np.array_equal(greedy.image[inside], greedy_alone.image) and np.all(greedy.image[mask] == colour)


def test_frames_are_read_on_two_opposite_sides_and_a_sky_is_none(photos):
    from edit_agents.tools.imageops import uniform_frame

    photo = np.ascontiguousarray(photos["astronaut"][::4, ::4])
    assert uniform_frame(photo) is None
    assert uniform_frame(_framed(photo, 5, 7, 3, 9, 1.0)) == (5, 7, 3, 9)
    assert uniform_frame(_framed(photo, 0, 0, 20, 20, 0.0)) == (0, 0, 20, 20)  # pillarbox bars
    assert uniform_frame(_framed(photo, 40, 0, 0, 0, 1.0)) is None  # white on one side: a blown sky, a wall
    assert uniform_frame(np.ones((64, 64, 3), np.float32)) is None  # nothing inside
    assert uniform_frame(_framed(photo[:10], 30, 30, 0, 0, 1.0)) is None  # under 16 px inside: no photo to read


def test_any_pixel_type_is_searched_as_the_photo_and_a_thumbnail_is_left_alone(photos):
    tools = default_registry().subset(categories=["classic"])
    settings = MCTSSettings(simulations=12, max_steps=2)
    dim = np.ascontiguousarray(photos["coffee"][::2, ::2] * np.array([0.5, 0.45, 0.35], np.float32))
    eight_bit = (dim * 255 + 0.5).astype(np.uint8)
    as_float = mcts_enhance(eight_bit.astype(np.float32) / 255, tools, settings=settings)
    as_bytes = mcts_enhance(eight_bit, tools, settings=settings)  # read as 0..255 values before: over-exposed
    assert [a.label() for a in as_bytes.actions] == [a.label() for a in as_float.actions] and as_float.actions
    assert as_bytes.image.dtype == np.float32 and np.array_equal(as_bytes.image, as_float.image)
    tiny = np.ascontiguousarray(dim[:8, :8])
    small = mcts_enhance(tiny, tools, settings=settings)
    assert not small.actions and np.array_equal(small.image, tiny)
    assert any("too small to judge" in s.action for s in small.trace.steps)
    white = np.ones((64, 96, 3), np.float32)  # a blank canvas: its white was read as blown and darkened to grey
    blank = mcts_enhance(white, tools, settings=settings)
    assert not blank.actions and np.array_equal(blank.image, white)
    assert any("one flat colour" in s.action for s in blank.trace.steps)
    assert not enhance(tiny, tools).actions and not enhance(white, tools).actions
    assert [a.label() for a in enhance(eight_bit, tools).actions] == [
        a.label() for a in enhance(eight_bit.astype(np.float32) / 255, tools).actions]
