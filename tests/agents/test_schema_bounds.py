"""What a schema can say it says (counts, index ranges, step references, parameter bounds), and what is wrong but
unambiguous is mended before an answer is checked: a number clamped (a huge or infinite one too), a forward
dependency dropped, the first step's source set to the input. An index out of range is never mended."""
import json
import math

import pytest

from edit_agents.agents import schemas
from edit_agents.agents.brain import BrainRequest, clamp_numbers, validate
from edit_agents.agents.roles import _drop_forward_dependencies, _first_step_reads_the_input
from edit_agents.tools import ToolCallError, default_registry

TOOLS = default_registry().subset(categories=["classic"])


def test_a_tools_parameters_carry_its_bounds():
    props = schemas.params_schema(TOOLS.get("exposure"))["properties"]
    assert props["stops"]["minimum"] == -3.0 and props["stops"]["maximum"] == 3.0


@pytest.mark.parametrize("raw, expected", [("1e999", 3.0), ("-1e999", -3.0), ("1" + "0" * 400, 3.0),
                                           ("-" + "9" * 400, -3.0), ("2.5", 2.5)])
def test_numbers_beyond_the_bounds_are_clamped_before_the_check(raw, expected):
    """JSON reads 1e999 as infinity and 400 digits as an exact integer; both are clamped, with a note."""
    data = json.loads('{"steps": [{"tool": "exposure", "params": {"stops": %s}}]}' % raw)
    request = BrainRequest("executor", "", "", schemas.chain_schema(TOOLS.get("exposure")))
    notes = request.mend(data)
    assert data["steps"][0]["params"]["stops"] == expected and request.problem(data) is None
    assert bool(notes) == (expected != 2.5) and all("clamped to" in n for n in notes)


def test_numbers_are_clamped_inside_the_alternative_the_tool_names():
    schema = schemas.chain_schema([TOOLS.get("exposure"), TOOLS.get("contrast")])
    data = {"steps": [{"tool": "contrast", "params": {"amount": -50}}, {"tool": "exposure", "params": {"stops": 9}}]}
    assert len(clamp_numbers(data, schema)) == 2
    assert data["steps"][0]["params"]["amount"] == -0.9 and data["steps"][1]["params"]["stops"] == 3.0


def test_an_index_out_of_range_is_refused_not_clamped():
    schema = schemas.compete_schema(3)
    data = {"best": 7, "stop": False}
    assert clamp_numbers(data, schema) == [] and data["best"] == 7
    assert "7 is not one of [0, 1, 2]" in validate(data, schema)


def test_the_answers_count_is_the_questions_count():
    schema = schemas.answers_schema(2)
    one = {"answers": [{"answer": "yes"}], "quality": 5}
    assert validate(one, schema) == "at answers: 1 items; at least 2 expected"
    assert validate({"answers": [{"answer": "yes"}, {"answer": "no"}], "quality": 5}, schema) is None
    assert validate({"answers": [{"answer": "yes"}] * 64, "quality": 5}, schema) == "at answers: 64 items; at most 2 expected"


def test_a_step_reads_the_input_or_a_step_a_chain_can_have():
    schema = schemas.chain_schema(TOOLS.get("exposure"), max_steps=4)
    source = schema["properties"]["steps"]["items"]["properties"]["source"]
    assert source["enum"] == ["input", "step:0", "step:1", "step:2"]
    assert "is not one of" in validate({"steps": [{"tool": "exposure", "params": {}, "source": "step:8"}]}, schema)


def test_each_step_reads_only_a_step_before_it_by_the_schema():
    """Position by position (``prefixItems``): a later step naming itself or a later step is a shape error, which
    constrained decoding never writes (the tiny local models did, 1 answer in 8 sampled, before)."""
    schema = schemas.chain_schema([TOOLS.get("exposure"), TOOLS.get("contrast")], max_steps=3)
    step = lambda source: {"tool": "exposure", "params": {}, "source": source}  # noqa: E731
    assert validate({"steps": [step("input"), step("step:0"), step("step:1")]}, schema) is None
    assert "is not one of" in validate({"steps": [step("input"), step("step:1")]}, schema)
    assert "is not one of" in validate({"steps": [step("input"), step("input"), step("step:2")]}, schema)
    assert "is not one of" in validate({"steps": [step("step:0")]}, schema)


def test_the_first_step_reading_a_step_is_mended_to_the_input():
    data = {"steps": [{"tool": "exposure", "params": {}, "source": "step:2"},
                      {"tool": "exposure", "params": {}, "source": "step:1"}]}
    notes = _first_step_reads_the_input(data)
    assert data["steps"][0]["source"] == "input" and notes == ["step 0 read 'step:2'; the first step can only read the input"]
    assert data["steps"][1]["source"] == "step:1"  # a later step naming itself is ambiguous: left to the re-ask


def test_forward_dependencies_are_dropped_with_a_note():
    data = {"subtasks": [{"goal": "a", "tool": "exposure", "depends_on": [3]},
                         {"goal": "b", "tool": "contrast", "depends_on": [0, 1, 5, 0]}]}
    notes = _drop_forward_dependencies(data)
    assert [s["depends_on"] for s in data["subtasks"]] == [[], [0]] and len(notes) == 2
    deps = schemas.plan_schema(TOOLS.names())["properties"]["subtasks"]["items"]["properties"]["depends_on"]
    assert deps["items"]["enum"] == list(range(11)) and deps["maxItems"] == 11


@pytest.mark.parametrize("value", [math.inf, -math.inf, 10 ** 400, -(10 ** 400)])
def test_a_tool_call_clamps_huge_and_infinite_numbers_where_it_clamps(value):
    clean, notes = TOOLS.get("exposure").validate({"stops": value})
    assert clean["stops"] == (3.0 if value > 0 else -3.0) and "clamped" in notes[0]


def test_a_number_without_a_bound_on_its_side_must_be_finite():
    with pytest.raises(ToolCallError, match="finite"):
        TOOLS.get("exposure").validate({"stops": float("nan")})


def test_the_vision_perceiver_is_offered_no_tool_that_returns_a_mask():
    """A mask is a helper's output, not an edit: offered as an action it turned a search state into one channel."""
    import asyncio

    import numpy as np

    from edit_agents.agents.brain import BrainAnswer
    from edit_agents.agents.photoagent.perceiver import brain_perceive
    from edit_agents.agents.roles import Where
    from edit_agents.agents.trace import Trace

    class Recorder:  # stands in for the user's endpoint: records what it was asked
        name = "recorder"

        async def ask(self, request):
            self.request = request
            return BrainAnswer({"scene": "", "actions": []}, self.name)

    everything = default_registry()
    masks = [n for n in everything.names() if everything.get(n).returns == "mask"]
    brain = Recorder()
    asyncio.run(brain_perceive(brain, np.zeros((8, 8, 3), np.float32), everything, 4, Where(Trace(), "p")))
    offered = {a["properties"]["tool"]["enum"][0] for a in brain.request.schema["properties"]["actions"]["items"]["anyOf"]}
    assert masks and not offered & set(masks) and "exposure" in offered
