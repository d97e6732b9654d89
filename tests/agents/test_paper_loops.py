"""The loops as the papers describe them (issue 67, item 4), on the scripted loopback endpoint: CCA's two
generators differ by default (the second samples hotter, with its own seed, and a plan the same as its rival's
is planned once more), a CCA subtask that no question checked gets no push and none of the other subtasks'
failures, and an unconnected IMAGAgent panel says it is one model asked three times."""
from __future__ import annotations

import asyncio

from edit_agents.agents import roles
from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca, second_temperature
from edit_agents.agents.imagagent import IMAGAgentCast, run_closed_loop
from edit_agents.agents.records import (Critique, EditRequest, Feedback, Plan, Question, Subtask, ToolCall)
from edit_agents.agents.rule_default import offline_brain as RuleBrain
from edit_agents.tools import ToolRegistry, default_registry
from edit_agents.tools.spec import Param, ToolSpec
from llm_server import Reply
from scripted_loops import TOOLS, answers_naming_subtasks, brain, respond

WARM = [{"goal": "warm the light", "tool": "temperature_tint"}]
PUNCH = [{"goal": "add punch", "tool": "contrast"}]


def who_plans(seen) -> str:
    """The generator a planner request is for (each planner's prompt names it)."""
    return next(g for g in ("generator-1", "generator-2") if f"You are {g}," in seen.user_text())


def executor_goal(seen) -> str:
    return seen.user_text().split("\n", 1)[0].removeprefix("Subtask: ")


def feedback_line(seen) -> str:
    return seen.user_text().split("Feedback on the previous attempt: ")[1].split("\n")[0]


# -- distinct generators by default -------------------------------------------------------------------------

def run_default_cast(llm, photo, **config):
    """CCA with one OpenAI brain as planner (so executor, discriminator and competitor too), through the defaults
    of ``CCACast.of``; generator 1 plans the warm subtask, generator 2 the punch one, so each executor request
    says whose it is."""
    def responder(seen):
        if seen.role == "planner":
            return Reply({"subtasks": WARM if who_plans(seen) == "generator-1" else PUNCH})
        if seen.role == "answers":
            return answers_naming_subtasks(seen, [{"answer": "yes", "explanation": "ok"}] * 2, 8)
        if seen.role == "competitor":
            return Reply({"best": 0, "stop": False})
        return respond(seen)
    llm.reset(responder=responder)
    cast = CCACast.of(brain(llm, **config))
    return asyncio.run(run_cca(photo, EditRequest("warmer, more punch", caption="a cat"), TOOLS, cast,
                               CCASettings(rounds=1)))


def sampling_by_generator(llm) -> dict[str, set[tuple]]:
    """(role, temperature, seed) of every planner and executor request, by the generator that sent it."""
    out = {"generator-1": set(), "generator-2": set()}
    for s in llm.seen:
        if s.role == "planner":
            gen = who_plans(s)
        elif s.role == "executor":
            gen = "generator-1" if executor_goal(s) == "warm the light" else "generator-2"
        else:
            continue
        out[gen].add((s.role, s.body.get("temperature"), s.body.get("seed")))
    return out


def test_generator_2_samples_hotter_with_its_own_seed_by_default(llm, photos):
    """One brain given (temperature 0.2, seed 7): generator 2's planner and executor requests reach the endpoint
    at 0.7 with seed 8, generator 1's at 0.2 with seed 7; the discriminator and the competitor keep the brain as
    given; the trace says how generator 2 samples."""
    result = run_default_cast(llm, photos["chelsea"], seed=7)
    seen = sampling_by_generator(llm)
    assert seen["generator-1"] == {("planner", 0.2, 7), ("executor", 0.2, 7)}
    assert seen["generator-2"] == {("planner", 0.7, 8), ("executor", 0.7, 8)}
    judges = {(s.body.get("temperature"), s.body.get("seed")) for s in llm.seen if s.role in ("questions", "answers",
                                                                                              "competitor")}
    assert judges == {(0.2, 7)}
    assert any("generator-2's planner and executor samples hotter" in s.action and "temperature 0.7, seed 8" in s.action
               for s in result.trace.steps if s.role == "loop")


def test_generator_2_gets_a_seed_of_its_own_when_the_brain_sends_none(llm, photos):
    """A brain with no seed (the Brain's default): generator 1 sends none, generator 2 sends seed 2, and samples
    hotter."""
    run_default_cast(llm, photos["chelsea"])
    seen = sampling_by_generator(llm)
    assert seen["generator-1"] == {("planner", 0.2, None), ("executor", 0.2, None)}
    assert seen["generator-2"] == {("planner", 0.7, 2), ("executor", 0.7, 2)}


def test_the_second_temperature_rule():
    """0.5 hotter, at least 0.7, at most 1.2, never cooler than the first."""
    assert [second_temperature(t) for t in (0.0, 0.2, 0.5, 0.9, 1.2, 1.5)] == [0.7, 0.7, 1.0, 1.2, 1.2, 1.5]


def test_a_connected_generator_2_and_the_rule_defaults_are_kept():
    """A brain connected for generator 2 plays both its roles as it is; offline, generator 2 plans with the same
    rule planner and executes with the bolder rule brain, as before."""
    class Named:  # a brain of the user's own: no ``resampled``
        name = "mine"

    mine, other = Named(), Named()
    cast = CCACast.of(mine, generator_2=other)
    assert (cast.generators[1].planner, cast.generators[1].executor) == (other, other) and not cast.notes
    offline = CCACast.of()
    assert offline.generators[1].planner is offline.generators[0].planner
    assert offline.generators[1].executor.name == "rule(boldness=1.6)" and not offline.notes
    assert CCACast.of(mine).generators[1].executor is mine  # nothing to resample: used as it is


# -- an identical plan is planned once more --------------------------------------------------------------

def test_a_plan_the_same_as_the_rivals_is_planned_once_more_naming_it(llm, photos):
    """Both planners answer the same plan: generator 2 is asked once more, its prompt naming generator 1's plan
    as the one to differ from; the second answer is the same again, so it is kept, and the trace says both."""
    both = WARM + PUNCH

    def responder(seen):
        if seen.role == "planner":
            return Reply({"subtasks": both})
        return respond(seen)
    llm.reset(responder=responder)
    b = brain(llm)
    result = asyncio.run(run_cca(photos["chelsea"], EditRequest("warmer, more punch", caption="a cat"), TOOLS,
                                 CCACast([Generator("generator-1", b, b), Generator("generator-2", b, b)], b, b),
                                 CCASettings(rounds=1)))
    planners = [s for s in llm.seen if s.role == "planner"]
    assert len(planners) == 3 and [who_plans(s) for s in planners[2:]] == ["generator-2"]
    again = planners[2].user_text()
    assert "same as generator-1's plan this round: 0: warm the light -> temperature_tint | 1: add punch -> contrast" \
        in again and "differs from it" in again
    assert not any("differs from it" in s.user_text() for s in planners[:2])
    loop = [s.action for s in result.trace.steps if s.role == "loop"]
    assert any(a.startswith("round 0: generator-2's plan is the same as generator-1's") and "planned once more" in a
               for a in loop)
    assert any("second plan is the same as generator-1's again; kept" in a for a in loop)


def test_a_different_second_plan_replaces_the_first(llm, photos):
    """Asked to differ, the planner answers another plan: generator 2 runs that one, and nothing says 'again'."""
    def responder(seen):
        if seen.role == "planner":
            return Reply({"subtasks": PUNCH if "differs from it" in seen.user_text() else WARM})
        return respond(seen)
    llm.reset(responder=responder)
    b = brain(llm)
    result = asyncio.run(run_cca(photos["chelsea"], EditRequest("warmer, more punch", caption="a cat"), TOOLS,
                                 CCACast([Generator("generator-1", b, b), Generator("generator-2", b, b)], b, b),
                                 CCASettings(rounds=1)))
    plans = {c.agent: [s.tool for s in c.plan.subtasks] for c in result.candidates}
    assert plans == {"generator-1": ["temperature_tint"], "generator-2": ["contrast"]}
    assert len([s for s in llm.seen if s.role == "planner"]) == 3
    assert not any("again" in s.action for s in result.trace.steps if s.role == "loop")


def test_the_rule_planner_is_not_asked_again_but_the_sameness_is_noted(photos):
    """Offline both generators share the deterministic rule planner: the same plan is noted, not re-asked."""
    result = asyncio.run(run_cca(photos["chelsea"], EditRequest("make it brighter"), default_registry(), CCACast.of(),
                                 CCASettings(rounds=1)))
    assert len([s for s in result.trace.steps if s.role == "planner"]) == 2
    assert any("generator-2's plan is the same as generator-1's; not planned again" in s.action
               for s in result.trace.steps if s.role == "loop")


# -- a subtask no question checked: no push, no borrowed negatives -------------------------------------------

def test_a_cca_subtask_no_question_checked_gets_no_push_and_none_of_the_others_failures(llm, photos):
    """The discriminator's only question checks subtask 0 (brightness) and fails it. In round 2 the executor of
    subtask 1 (a generative tool with a negative prompt) is told to keep, not to push further, and its negative
    prompt has none of subtask 0's failure text; subtask 0's executor still gets its "no"."""
    painted = []

    def paint(img, prompt="", negative_prompt=""):  # a generative tool of the user's: records what it was given
        painted.append(negative_prompt)
        return img
    tools = ToolRegistry([default_registry().get("brightness"),
                          ToolSpec("paint", "Repaint a region from a prompt.", "Repaint.",
                                   (Param("prompt", "string", "what to paint", default=""),
                                    Param("negative_prompt", "string", "what to avoid", default="")), paint)])
    plan = [{"goal": "brighten the photo", "tool": "brightness"}, {"goal": "paint a sunset sky", "tool": "paint"}]

    def responder(seen):
        if seen.role == "planner":
            return Reply({"subtasks": plan})
        if seen.role == "questions":
            return Reply({"questions": [{"text": "Is it brighter?", "part": "brighter"}]})
        if seen.role == "answers":
            return Reply({"answers": [{"answer": "no", "explanation": "muddy shadows", "direction": "more",
                                       "subtask": 0}], "quality": 5})
        if seen.role == "executor":
            if executor_goal(seen) == "paint a sunset sky":
                return Reply({"steps": [{"tool": "paint", "params": {"prompt": "sunset", "negative_prompt": "blurry"}}]})
            return Reply({"steps": [{"tool": "brightness", "params": {"amount": 0.1}}]})
        if seen.role == "competitor":
            return Reply({"best": 0, "stop": False})
        return respond(seen)
    llm.reset(responder=responder)
    b = brain(llm)
    result = asyncio.run(run_cca(photos["chelsea"], EditRequest("brighter with a sunset sky", caption="a cat"), tools,
                                 CCACast([Generator("generator-1", b, b), Generator("generator-2", b, b)], b, b),
                                 CCASettings(rounds=2)))
    assert result.rounds == 2
    executors = [s for s in llm.seen if s.role == "executor"]
    assert len(executors) == 8  # 2 generators x 2 subtasks x 2 rounds
    later = executors[4:]
    sky = [feedback_line(s) for s in later if executor_goal(s) == "paint a sunset sky"]
    bright = [feedback_line(s) for s in later if executor_goal(s) == "brighten the photo"]
    assert len(sky) == 2 and all(line.startswith("keep (") and "muddy" not in line for line in sky)
    assert all("no question of the report checked this subtask" in line for line in sky)
    assert len(bright) == 2 and all(line.startswith("more (") and "muddy shadows" in line for line in bright)
    assert painted == ["blurry"] * 4  # neither round's negative prompt borrowed subtask 0's failure
    assert not any("negative prompt" in s.action for s in result.trace.steps if s.role == "executor")


def cca_report() -> Feedback:
    """A discriminator's report on a two-subtask plan whose questions check subtask 0 only."""
    return Feedback(4.0, negative="Brighter? no: muddy shadows", per_subtask={0: "no: muddy shadows"},
                    questions=[Question("Brighter?", "no", "muddy shadows", 0, part="brighter", direction="less"),
                               Question("Whole request?", "yes", "fine", None)])


def test_subtask_feedback_pushes_only_what_was_checked():
    fb = cca_report()
    checked, unchecked = roles.subtask_feedback(fb, 0), roles.subtask_feedback(fb, 1)
    assert (checked.direction, checked.score, checked.note) == ("less", 3.0, "no: muddy shadows")
    assert (unchecked.direction, unchecked.avoid, unchecked.score) == ("keep", "", 4.0)
    assert "muddy" not in unchecked.text() and "no question of the report checked this subtask" in unchecked.note
    # a question on the subtask that could not be answered is no check either
    unsure = Feedback(6.0, negative="Sky? no: grey", per_subtask={1: "unknown: cannot tell"},
                      questions=[Question("Sky?", "unknown", "cannot tell", 1), Question("Bright?", "no", "grey", 0)])
    assert (roles.subtask_feedback(unsure, 1).direction, roles.subtask_feedback(unsure, 1).avoid) == ("keep", "")
    assert roles.subtask_feedback(unsure, 1).note == "unknown: cannot tell"
    # a candidate the discriminator could not judge: why, as a note, never as something to avoid
    unjudged = roles.subtask_feedback(Feedback(0.0, judged=False, negative="not judged: HTTP 500"), 0)
    assert (unjudged.direction, unjudged.avoid) == ("keep", "") and "not judged: HTTP 500" in unjudged.note


def test_subtask_feedback_keeps_the_imagagent_path_and_failures():
    """IMAGAgent's merged critiques (no questions) are about the subtask itself: their direction and negative
    points pass on as they did; a failed attempt still says why it failed."""
    merged = roles.merged([Critique("intent", 4.0, "warmer", "halo", 0, direction="less")], "warmer", "halo")
    fb = roles.subtask_feedback(merged, 0)
    assert (fb.direction, fb.score, fb.note, fb.avoid) == ("less", 4.0, "warmer", "halo")
    failed = roles.subtask_feedback(Feedback(0.0, error="ToolCallError: bad box"), 0)
    assert failed.failed == "ToolCallError: bad box" and failed.text().startswith("the last attempt failed")


def test_an_executor_node_finds_the_earlier_chain_of_a_later_subtask():
    """IMAGAgent's Executor nodes get a one-subtask plan whose subtask keeps its index in the whole plan: the
    earlier chain and feedback of subtask 2 are found at its place (0) in that plan."""
    sub = Subtask(2, "sharpen the fur", "sharpen")
    chain = [ToolCall("sharpen", {"amount": 0.4})]
    merged = roles.merged([Critique("intent", 3.0, "", "soft", 2, direction="more")], "", "soft")
    previous, fb = roles.earlier_attempt(Plan([sub]), [chain], merged, sub)
    assert previous == chain and (fb.direction, fb.avoid) == ("more", "soft")
    # a CCA candidate that failed before its second subtask ran has no chain for it
    two = Plan([Subtask(0, "warm the light", "temperature_tint"), sub])
    assert roles.earlier_attempt(two, [[ToolCall("temperature_tint", {})]], merged, sub) == (None, None)


# -- IMAGAgent's panel defaults, stated -------------------------------------------------------------------

def test_an_unconnected_panel_says_it_is_the_planners_model_asked_per_expert(llm, photos):
    """The panel's default is kept (the planner's brain for every unconnected expert) and said: in the cast's
    notes, which a run's trace opens with."""
    llm.reset(responder=respond)
    b, own = brain(llm), brain(llm)
    cast = IMAGAgentCast.of(b, None, [None] * 3)
    assert all(e is b for e in cast.experts)
    result = asyncio.run(run_closed_loop(photos["chelsea"], EditRequest("warmer"), TOOLS, cast))
    first = result.trace.steps[0]
    assert first.role == "loop" and "the experts use the planner's brain (custom/scripted-vlm)" in first.action
    assert "three different models" in first.action
    partly = IMAGAgentCast.of(b, None, [own, None, None])
    assert partly.experts[0] is own and partly.experts[1] is b and "input(s) 2, 3" in partly.notes[0]
    assert not IMAGAgentCast.of(b, None, [own, own, own]).notes
    assert not IMAGAgentCast.of(RuleBrain(), None, [None] * 3).notes  # the rule brain is no model to vary
