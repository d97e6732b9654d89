"""Every role and both loops with the rule brain (offline, deterministic) on real photos."""
from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

from edit_agents.agents import roles
from edit_agents.agents.brain import BrainError, BrainRequest
from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca
from edit_agents.agents.photoagent.perceiver import brain_perceive
from edit_agents.agents.imagagent import ClosedLoopSettings, IMAGAgentCast, run_closed_loop
from edit_agents.agents.quality.measure import measure
from edit_agents.agents.records import (Candidate, Critique, EditRequest, Feedback, Plan, Question, Subtask, ToolCall,
                                       check_chain)
from edit_agents.agents.roles import Where
from edit_agents.agents.rule_brain import adjust_params, initial_params
from edit_agents.agents.rule_default import offline_brain as RuleBrain
from edit_agents.agents.trace import Trace
from edit_agents.tools import ToolCallError, default_registry
from edit_agents.tools.models import ToolRuntime
from edit_agents.tools.spec import Param, ToolSpec

TOOLS = default_registry()
MODEL_TOOLS = default_registry(ToolRuntime())  # model tools offered (a Toolbox always has a runtime); none loaded here
RB = RuleBrain()


def run(coro):
    return asyncio.run(coro)


def where():
    return Where(Trace(), "test")


def test_planner_splits_clauses_and_maps_tools(photos):
    w = where()
    plan = run(roles.plan(RB, EditRequest("Make it brighter, add more contrast and then crop to square; rotate 90 degrees, "
                                          "black and white. Also put a hat on the cat"), TOOLS, photos["chelsea"], w))
    assert [s.tool for s in plan.subtasks] == ["brightness", "contrast", "crop_aspect", "rotate", "grayscale"]
    assert [s.depends_on for s in plan.subtasks][:3] == [[], [0], [1]]
    assert len(plan.unsupported) == 1 and "hat" in plan.unsupported[0]  # honest: not faked
    assert w.trace.steps[0].role == "planner" and w.trace.steps[0].inputs["brain"] == "rule"


@pytest.mark.parametrize("phrase,tool,params", [
    ("warmer", "temperature_tint", {"temperature": 0.2}),
    ("make it cooler", "temperature_tint", {"temperature": -0.2}),
    ("darker by 30%", "brightness", {"amount": -0.3}),
    ("resize to 512", "resize", {"longest_side": 512}),
    ("rotate 90 degrees clockwise", "rotate", {"angle": -90.0}),
    ("crop to 16:9", "crop_aspect", {"aspect": "16:9"}),
    ("sharper", "sharpen", {"amount": 0.5}),
    ("blur the background", "edit_region", {"effect": "blur"}),
    ("less saturated", "saturation", {"amount": -0.2}),
    ("1 stop brighter exposure", "exposure", {"stops": 1.0}),
])
def test_executor_fills_parameters_from_the_goal(photos, phrase, tool, params):
    plan = run(roles.plan(RB, EditRequest(phrase), TOOLS, photos["coffee"], where()))
    assert [s.tool for s in plan.subtasks] == [tool]
    chain = run(roles.execute(RB, plan.subtasks[0], TOOLS, photos["coffee"], where()))
    for k, v in params.items():
        assert chain[-1].params[k] == pytest.approx(v) if isinstance(v, float) else chain[-1].params[k] == v


@pytest.mark.parametrize("phrase,tool,found,prompt", [
    ("blur the background", "edit_region", "the main subject", None),
    ("blur the background behind the dog", "edit_region", "the dog", None),
    ("replace the sky with a sunset", "inpaint", "the sky", "a sunset"),
])
def test_rule_executor_chains_ground_grow_edit_when_the_toolbox_can_find_things(photos, phrase, tool, found, prompt):
    img = photos["coffee"]
    plan = run(roles.plan(RB, EditRequest(phrase), MODEL_TOOLS, img, where()))
    chain = run(roles.execute(RB, plan.subtasks[0], MODEL_TOOLS, img, where()))
    assert [c.tool for c in chain] == ["ground", "mask_grow", tool]
    assert chain[0].params["text"] == found and chain[1].source == "step:0" and chain[2].params["mask"] == "step:1"
    if prompt:
        assert chain[2].params["prompt"] == prompt
    classic = MODEL_TOOLS.subset(categories=["classic", "generative"])  # nothing can find the sky: no ground step
    plan = run(roles.plan(RB, EditRequest(phrase), classic, img, where()))
    if tool == "inpaint":
        assert not plan.subtasks and plan.unsupported  # a mask it could not make: honest, not faked
    else:
        assert [c.tool for c in run(roles.execute(RB, plan.subtasks[0], classic, img, where()))] == ["edit_region"]


def test_chains_are_checked_for_meaning_beyond_their_schema():
    sub = Subtask(0, "replace the sky with a sunset", "inpaint")
    ground, grow = ToolCall("ground", {"text": "sky"}), ToolCall("mask_grow", {"pixels": 8}, source="step:0")
    paint = lambda mask, source="input": ToolCall("inpaint", {"prompt": "a sunset", "mask": mask}, source=source)  # noqa: E731
    roles.check_steps([ground, grow, paint("step:1")], TOOLS, sub)  # fine
    bad = {"a later step": [ground, paint("step:2"), grow], "not a mask": [ToolCall("exposure"), paint("step:0")],
           "no step": [ground, paint("sky")]}
    for why, chain in bad.items():
        with pytest.raises(ToolCallError, match="not an earlier step that makes a mask"):
            roles.check_steps(chain, TOOLS, sub)
    with pytest.raises(ToolCallError, match="which is a mask"):
        roles.check_steps([ground, paint("step:0", source="step:0")], TOOLS, sub)
    with pytest.raises(ToolCallError, match="makes a mask"):
        roles.check_steps([ground, grow], TOOLS, sub)
    with pytest.raises(ToolCallError, match="never runs inpaint"):
        roles.check_steps([ToolCall("instruct_pix2pix", {"prompt": "sunset sky"})], TOOLS, sub)
    roles.check_steps([ToolCall("instruct_pix2pix", {"prompt": "sunset sky"})], TOOLS, sub, any_tool=True)  # IMAGAgent
    # what each executor may chain: the tool and, when it takes a mask, the helpers; the orchestrator: any tool
    assert [s.name for s in roles.executor_tools(TOOLS, Subtask(0, "warmer", "temperature_tint"))] == ["temperature_tint"]
    helpers = [s.name for s in roles.executor_tools(MODEL_TOOLS, sub)]
    assert helpers[0] == "inpaint" and {"ground", "mask_grow", "mask_invert"} <= set(helpers) and "exposure" not in helpers
    assert "exposure" in [s.name for s in roles.executor_tools(MODEL_TOOLS, sub, any_tool=True)]
    assert "ground" not in [s.name for s in roles.executor_tools(TOOLS, sub)]  # no model runtime: no model helpers


def test_executor_reflection_reaches_cfg_4_to_8():
    """CCA's executor raises text-CFG 4 -> 8 over rounds of 'too weak' feedback."""
    spec = ToolSpec("edit", "An editor.", "Edits.", (Param("text_cfg", "float", "guidance", default=4.0, minimum=1.0,
                                                           maximum=12.0, neutral=1.0),), run=lambda img, **kw: img)
    params = spec.defaults()
    seen = [params["text_cfg"]]
    for _ in range(2):
        params, why = adjust_params(spec, params, "more")
        seen.append(params["text_cfg"])
    assert seen[0] == 4.0 and 5.0 < seen[1] < 6.0 and seen[2] == pytest.approx(7.0, abs=0.01)  # 1 + 3*2
    params, _ = adjust_params(spec, params, "more")
    assert params["text_cfg"] >= 8.0  # 8 is reached on the third round of "too weak"
    params, _ = adjust_params(spec, {"text_cfg": 8.0}, "less")
    assert params["text_cfg"] < 8.0
    params, _ = adjust_params(spec, {"text_cfg": 12.0}, "more")
    assert params["text_cfg"] == 12.0  # clamped at the manual's maximum
    assert adjust_params(spec, {"text_cfg": 3.0}, "reverse")[0]["text_cfg"] == 1.0  # mirrored about neutral, clamped
    assert adjust_params(spec, {"text_cfg": 3.0}, "keep")[0]["text_cfg"] == 3.0


def test_tool_outside_the_toolbox_is_refused(photos):
    only = TOOLS.subset(names=["exposure"])
    with pytest.raises(ToolCallError, match="unknown tool 'contrast'"):
        run(roles.execute(RB, Subtask(0, "more contrast", "contrast"), only, photos["coffee"], where()))


def test_chain_references_must_point_back():
    check_chain([ToolCall("a"), ToolCall("b", source="step:0")])
    with pytest.raises(ValueError, match="an earlier step, 'step:0' to 'step:0'"):
        check_chain([ToolCall("a"), ToolCall("b", source="step:1")])
    with pytest.raises(ValueError, match="there is no earlier step, so use 'input'"):  # the off-by-one models make
        check_chain([ToolCall("a", source="step:0")])
    img = np.full((8, 8, 3), 0.5, np.float32)
    out = roles.run_chain(TOOLS, [ToolCall("brightness", {"amount": 0.2}), ToolCall("brightness", {"amount": 0.1}, source="input")], img)
    assert np.allclose(out, 0.6)  # the second step edited the input, not step 0's output


def test_discriminator_questions_answers_and_report(photos):
    """Questions come from the request alone (one per part, plus one for a part no tool does), are routed to the
    plan's subtasks by their part, and the report says what to change."""
    img = photos["coffee"]
    request = EditRequest("brighter, black and white, add a hat")
    questions = run(roles.write_questions(RB, request, TOOLS, img, where()))
    assert [q.part for q in questions][:3] == ["brighter", "black and white", "add a hat"]
    assert all(q.subtask is None and q.answer == "unknown" for q in questions)  # no plan seen, nothing answered
    plan = Plan([Subtask(0, "black and white", "grayscale"), Subtask(1, "brighter", "exposure")],
                unsupported=["add a hat"])  # the other order: routing is by part, not position
    edited = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": 0.6})], img)
    fb = run(roles.discriminate(RB, request, plan, img, edited, where(), questions))
    answers = {q.subtask: q.answer for q in fb.questions if q.part}
    assert answers[1] == "yes" and answers[0] == "no" and answers[None] == "unknown"  # the hat: no subtask, no check
    assert "brightness" in fb.per_subtask[1] and fb.per_subtask[0].startswith("no")
    assert 0 <= fb.score <= 10 and not fb.satisfied(7.0)
    assert "black and white" in fb.negative
    assert [(s.kind, s.goal) for s in fb.suggestions] == [("adjust", "black and white")]  # the hat is known unsupported
    assert all(q.answer == "unknown" for q in questions)  # the shared questions are not written on


def test_feedback_is_routed_to_the_matching_subtask_after_replanning():
    old = Plan([Subtask(0, "make it warmer", "temperature_tint"), Subtask(1, "add punch", "contrast")])
    warm, punch = [ToolCall("temperature_tint", {"temperature": 0.3})], [ToolCall("contrast", {"amount": 0.2})]
    fb = Feedback(5.0, questions=[Question("warmer?", "yes", "warmer", 0), Question("punchier?", "no", "flat", 1)],
                  per_subtask={0: "yes: warmer", 1: "no: flat"})
    new = [Subtask(0, "add punch", "contrast"), Subtask(1, "warm the light", "temperature_tint"),
           Subtask(2, "add punch", "curves")]
    fb.questions[1].direction = "less"
    chain, note = roles.earlier_attempt(old, [warm, punch], fb, new[0])
    assert chain == punch and (note.direction, note.score) == ("less", 3.0) and "flat" in note.note  # same goal, tool
    chain, note = roles.earlier_attempt(old, [warm, punch], fb, new[1])
    assert chain == warm and (note.direction, note.score) == ("keep", 10.0)  # reworded goal, same tool
    chain, note = roles.earlier_attempt(old, [warm, punch], fb, new[2])
    assert chain is None and note.direction == "less"  # same goal, another tool: the feedback, not contrast's parameters
    assert roles.match_subtask(old, Subtask(0, "crop to square", "crop_aspect")) is None


def test_alike_results_that_fail_get_another_tool_and_the_rule_planner_takes_it(photos):
    img = photos["coffee"]
    request = EditRequest("make it brighter")
    plan = run(roles.plan(RB, request, TOOLS, img, where()))
    assert [s.tool for s in plan.subtasks] == ["brightness"]
    questions = run(roles.write_questions(RB, request, TOOLS, img, where()))
    same = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": -0.2})], img)  # neither did it, both alike
    cands = [Candidate(g, 0, plan, [[]], same.copy()) for g in ("g1", "g2")]
    for c in cands:
        c.feedback = run(roles.discriminate(RB, request, plan, img, c.image, where(), questions))
    trace = Trace()
    assert roles.suggest_other_tools(cands, roles.Where(trace, "discriminator")) == 2
    assert [s.kind for s in cands[0].feedback.suggestions] == ["adjust", "another_tool"]
    assert "another tool" in cands[0].feedback.per_subtask[0]
    replanned = run(roles.plan(RB, request, TOOLS, img, where(), previous=plan, own_feedback=cands[0].feedback))
    assert replanned.subtasks[0].tool == "exposure"  # another tool that brightens
    assert "instead of brightness" in replanned.notes
    cands[1].image = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": 0.5})], img)  # different: no suggestion
    assert roles.suggest_other_tools(cands, roles.Where(trace, "discriminator")) == 0


def test_rule_critic_says_unknown_for_what_it_cannot_measure(photos):
    from edit_agents.agents.quality.measure import check
    m = measure(photos["coffee"])
    assert check({"metric": "has_hat"}, m, m)[0] == "unknown"


def test_experts_and_aggregator(photos):
    img = photos["chelsea"]
    sub = Subtask(0, "brighter", "exposure")
    good = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": 0.4})], img)
    weak = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": 0.02})], img)
    wrong = roles.run_chain(TOOLS, [ToolCall("exposure", {"stops": -0.5})], img)
    intent = lambda out: run(roles.critique(RB, "intent", sub, img, out, where()))  # noqa: E731
    assert intent(good).score >= 7 and intent(weak).score < 7 and "not enough" in intent(weak).negative
    assert "wrong way" in intent(wrong).negative
    blurred = roles.run_chain(TOOLS, [ToolCall("gaussian_blur", {"sigma": 14})], img)  # structure is judged at 128 px
    assert run(roles.critique(RB, "fidelity", sub, img, blurred, where())).score < 7
    assert run(roles.critique(RB, "fidelity", sub, img, good, where())).score > 9
    crits = [Critique("a", 8, "keep tone", ""), Critique("b", 4, "", "too dark"), Critique("c", 6, "keep tone", "noisy")]
    fb = run(roles.aggregate(RB, crits, where()))
    assert fb.score == pytest.approx(6.0) and fb.negative == "too dark; noisy" and fb.positive == "keep tone"
    assert len(fb.experts) == 3


def test_a_grade_the_rule_critics_cannot_measure_is_unjudged_not_accepted(photos):
    """Offline, no expert can tell whether a "cinematic colour grade" happened: the subtask is kept but reported
    as not judged (it used to be accepted on the quality and fidelity scores alone)."""
    result = run(run_closed_loop(photos["chelsea"], EditRequest("give it a cinematic colour grade"), TOOLS,
                                 IMAGAgentCast(RB, RB, [RB], RB), ClosedLoopSettings()))
    assert [s.tool for s in result.plan.subtasks] == ["split_toning"]
    assert result.accepted == [False] and result.unjudged == [0] and len(result.attempts) == 1
    experts = result.attempts[0].feedback.experts
    assert [c.judged for c in experts] == [False, True, True]  # intent could not judge; quality and fidelity did
    assert result.attempts[0].score == pytest.approx((experts[1].score + experts[2].score) / 2, abs=1e-3)
    bright = run(run_closed_loop(photos["chelsea"], EditRequest("brighter"), TOOLS, IMAGAgentCast(RB, RB, [RB], RB)))
    assert bright.unjudged == [] and bright.accepted == [True]  # a measurable subtask is judged as before


def test_the_history_reaches_the_executor_of_the_next_subtask(photos):
    result = run(run_closed_loop(photos["chelsea"], EditRequest("warmer, then more contrast"), TOOLS,
                                 IMAGAgentCast(RB, RB, [RB], RB)))
    second = [s for s in result.trace.steps if s.role == "executor" and s.subtask == 1]
    assert second and "subtask 0 attempt 0: " in second[0].inputs["text"]


def test_cca_does_not_stop_early_while_part_of_the_request_is_not_done(photos):
    """The competitor may find the warmth satisfied, but "add a hat" has no tool: the request is not
    satisfied, so the loop runs its rounds and says what was not done."""
    gens = [Generator("generator-1", RB, RB), Generator("generator-2", RB, RuleBrain(boldness=1.6))]
    result = run(run_cca(photos["chelsea"], EditRequest("warmer, then add a hat"), TOOLS, CCACast(gens, RB, RB),
                         CCASettings(rounds=3)))
    assert result.best.plan.unsupported and not result.stopped_early and result.rounds == 3
    assert any(s.action.startswith("no early stop") and "hat" in s.action for s in result.trace.steps)
    assert not any("satisfies the request" in s.action for s in result.trace.steps)
    done = run(run_cca(photos["chelsea"], EditRequest("warmer"), TOOLS, CCACast(gens, RB, RB), CCASettings(rounds=3)))
    assert done.stopped_early and done.rounds == 1  # a request the tools can do still stops early


def test_competitor_picks_and_stops(photos):
    from edit_agents.agents.records import Feedback, Question
    img = photos["coffee"]
    yes, no = Question("q", "yes"), Question("q", "no")
    a = Candidate("g1", 0, Plan(), [], img, Feedback(6.0, questions=[yes, no]))
    b = Candidate("g2", 0, Plan(), [], img, Feedback(9.0, questions=[yes, yes]))
    assert run(roles.compete(RB, [a, b], 7.0, where()))[:2] == (1, True)
    assert run(roles.compete(RB, [a], 7.0, where()))[:2] == (0, False)


def test_perceiver_autonomous_and_mood(photos):
    dark = photos["coffee"] * 0.4
    scene, acts = run(brain_perceive(RB, dark, TOOLS, 4, where()))
    assert 1 <= len(acts) <= 4 and acts[0].tool in ("exposure", "auto_levels", "gamma") and scene
    scene, mood = run(brain_perceive(RB, photos["coffee"], TOOLS, 4, where(), mood="warm and cosy"))
    assert mood[0].tool == "temperature_tint" and mood[0].params["temperature"] > 0


def test_cca_loop_stops_early_when_satisfied(photos):
    gens = [Generator("generator-1", RB, RB), Generator("generator-2", RB, RuleBrain(boldness=1.6))]
    req = EditRequest("make it brighter, more contrast and crop to square")
    result = run(run_cca(photos["coffee"], req, TOOLS, CCACast(gens, RB, RB), CCASettings(rounds=5)))
    assert result.stopped_early and result.rounds < 5
    assert result.image.shape[0] == result.image.shape[1]
    assert result.best.feedback.satisfied(7.0)
    no_stop = run(run_cca(photos["coffee"], req, TOOLS, CCACast(gens, RB, RB), CCASettings(rounds=5, early_stop=False)))
    assert no_stop.rounds == 5 and no_stop.tool_calls > result.tool_calls
    summary = json.loads(result.trace.to_json())["summary"]
    assert summary["tool_calls"] == result.tool_calls and summary["stopped_early"]
    roles_seen = {s.role for s in result.trace.steps}
    assert {"planner", "executor", "questions", "answers", "competitor", "loop"} <= roles_seen


def test_cca_generators_reflect_and_learn_from_the_rival(photos):
    weak = RuleBrain(boldness=0.2)
    gens = [Generator("timid", RB, weak), Generator("bold", RB, RuleBrain(boldness=2.0))]
    result = run(run_cca(photos["rocket"], EditRequest("brighter"), TOOLS, CCACast(gens, RB, RB),
                         CCASettings(rounds=3, early_stop=False)))
    timid = [c for c in result.candidates if c.agent == "timid"]
    first, later = timid[0].chains[0][0].params["amount"], timid[-1].chains[0][0].params["amount"]
    assert later > first  # the executor strengthened after "not enough"


def test_closed_loop_retries_until_accepted_and_keeps_the_best(photos):
    req = EditRequest("make it warmer and sharper")
    result = run(run_closed_loop(photos["chelsea"], req, TOOLS, IMAGAgentCast(RB, RB, [RB], RB), ClosedLoopSettings()))
    assert [s.tool for s in result.plan.subtasks] == ["temperature_tint", "sharpen"]
    assert len(result.attempts) <= 2 * 3 and all(result.accepted)
    timid = RuleBrain(boldness=0.15)
    retried = run(run_closed_loop(photos["chelsea"], EditRequest("warmer"), TOOLS,
                                  IMAGAgentCast(RB, timid, [RB, RB, RB], RB)))
    temps = [a.chain[0].params["temperature"] for a in retried.attempts]
    assert len(temps) >= 2 and temps[1] > temps[0]  # retried with a stronger setting from the feedback
    assert retried.history.entries and "attempt" in retried.history.render()
    kinds = {(s.role, s.attempt) for s in retried.trace.steps}
    assert ("expert", 0) in kinds and ("aggregator", 0) in kinds


def test_closed_loop_honest_about_semantic_requests(photos):
    result = run(run_closed_loop(photos["chelsea"], EditRequest("replace the cat with a dog"), TOOLS,
                                 IMAGAgentCast(RB, RB, [RB], RB)))
    assert result.plan.subtasks == [] and result.plan.unsupported
    assert np.array_equal(result.image, photos["chelsea"]) and result.trace.summary["unsupported"]


def test_loops_can_be_interrupted(photos):
    class Stop(Exception):
        pass
    calls = []

    def stop():
        calls.append(1)
        if len(calls) > 3:
            raise Stop()
    with pytest.raises(Stop):
        run(run_cca(photos["coffee"], EditRequest("brighter and sharper"), TOOLS, CCACast([Generator("g", RB, RB)], RB, RB),
                    should_stop=stop))


def test_bad_inputs_are_explained():
    with pytest.raises(ValueError, match="needs an instruction"):
        EditRequest("   ")
    with pytest.raises(ValueError, match="rounds"):
        CCASettings(rounds=0)
    with pytest.raises(ValueError, match="max_attempts"):
        ClosedLoopSettings(max_attempts=0)
    with pytest.raises(BrainError, match="no 'dreamer' role"):
        run(RB.ask(BrainRequest("dreamer", "", "", {})))


def test_initial_params_stay_in_range():
    for spec in TOOLS.specs():
        if any(p.required for p in spec.params):
            continue
        clean, notes = spec.validate(initial_params(spec, f"much less {spec.name} by 500%"))
        assert all(v is None or isinstance(v, (int, float, str, bool, tuple, list)) for v in clean.values())


def test_cca_can_continue_from_the_best_so_far(photos):
    gens = [Generator("g", RB, RuleBrain(boldness=0.2))]
    req = EditRequest("brighter")
    cont = run(run_cca(photos["rocket"], req, TOOLS, CCACast(gens, RB, RB),
                       CCASettings(rounds=2, early_stop=False, restart_from_original=False)))
    fresh = run(run_cca(photos["rocket"], req, TOOLS, CCACast(gens, RB, RB), CCASettings(rounds=2, early_stop=False)))
    luma = lambda c: float(c.image.mean())  # noqa: E731
    # continuing edits the round-0 result again, so round 1 is brighter than a restart from the original
    assert luma(cont.candidates[1]) > luma(fresh.candidates[1]) + 0.005


def test_loop_traces_round_trip_through_json(photos):
    result = run(run_closed_loop(photos["chelsea"], EditRequest("warmer"), TOOLS, IMAGAgentCast(RB, RB, [RB], RB)))
    back = Trace.from_json(result.trace.to_json())
    assert back.to_dict() == json.loads(result.trace.to_json())
    assert {s.role for s in back.steps} >= {"planner", "executor", "expert", "aggregator", "loop"}
    assert all(s.wall_ms >= 0 for s in back.steps)


def test_history_carries_bounded_thumbnails_numbered_as_in_the_text():
    from edit_agents.agents.records import HistoryContext
    history = HistoryContext()
    history.add("plan", "0: brighter -> exposure")
    for n in range(20):
        history.add("attempt", f"attempt {n}", score=float(n), image=np.full((300, 600, 3), n / 20, np.float32))
    text, images = history.render(), history.images()
    assert len(images) == 4 and all(i.shape == (64, 128, 3) for i in images)  # the last four, at 128 px
    assert [round(float(i.mean()) * 20) for i in images] == [16, 17, 18, 19]
    assert "attempt 16 (score 16.0) [thumbnail 1]" in text and "attempt 19 (score 19.0) [thumbnail 4]" in text
    assert "[thumbnail" not in text.split("attempt 16")[0]  # older entries in the window are text only
    assert sum(e.image is not None for e in history.entries) == 12  # outside the window the pixels are dropped
