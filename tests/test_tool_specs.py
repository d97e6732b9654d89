import math

import numpy as np
import pytest

from edit_agents.tools import ToolCallError, default_registry
from edit_agents.tools.spec import Param, ToolSpec


@pytest.fixture()
def registry():
    return default_registry()


def test_registry_has_the_classic_tools_with_complete_specs(registry):
    assert len(registry) >= 20
    for spec in registry.specs():
        assert spec.description and spec.description.endswith(".")
        manual = spec.manual()
        assert spec.name in manual
        for p in spec.params:
            assert p.name in manual and p.description
            if p.type in ("float", "int"):
                assert p.minimum <= p.default <= p.maximum, f"{spec.name}.{p.name} default outside its range"


def test_unknown_tool_lists_closest_names(registry):
    with pytest.raises(ToolCallError) as err:
        registry.get("exposur")
    assert "closest: exposure" in str(err.value)


def test_out_of_range_is_clamped_with_a_note(registry):
    clean, notes = registry.get("exposure").validate({"stops": 9})
    assert clean == {"stops": 3.0}
    assert notes and "clamped to 3" in notes[0]


def test_reject_policy_and_bad_values():
    spec = ToolSpec("t", "A test tool.", "Testing.", (
        Param("x", "float", "x", default=0.0, minimum=0, maximum=1, out_of_range="reject"),
        Param("mode", "enum", "m", default="a", choices=("a", "b")),
        Param("box", "box", "b", required=False, default=(0, 0, 1, 1)),
    ), run=lambda img, **kw: img)
    with pytest.raises(ToolCallError, match="outside"):
        spec.validate({"x": 2})
    for bad in (math.nan, math.inf, "abc", [1], True):
        with pytest.raises(ToolCallError):
            spec.validate({"x": bad})
    with pytest.raises(ToolCallError, match="did you mean 'b'"):
        spec.validate({"mode": "bb"})
    with pytest.raises(ToolCallError, match="x0 < x1"):
        spec.validate({"box": [0.5, 0, 0.4, 1]})
    with pytest.raises(ToolCallError, match="has no parameter 'y'"):
        spec.validate({"y": 1})
    assert spec.validate({"x": "0.5"})[0]["x"] == 0.5


def test_missing_required_parameter(registry):
    with pytest.raises(ToolCallError, match="needs parameter 'box'"):
        registry.get("crop").validate({})


def test_subset_and_catalogue(registry):
    sub = registry.subset(names=["exposure", "contrast"])
    assert sub.names() == ["exposure", "contrast"]
    assert sub.planner_catalogue().count("\n") == 1
    with pytest.raises(ToolCallError):
        registry.subset(names=["nope"])


def test_call_runs_validated_parameters(registry, photos):
    img = photos["chelsea"]
    out, params, notes = registry.call("exposure", img, {"stops": 1})
    assert params == {"stops": 1.0} and notes == []
    assert out.mean() > img.mean() * 1.3
    assert out.shape == img.shape and out.dtype == np.float32


def test_pixel_lengths_scale_with_a_reduced_copy():
    """A search copy at half size gets half the blur radius, so sharpen does to the copy what it does to the photo."""
    tools = default_registry()
    sharpen = tools.get("sharpen")
    assert sharpen.at_scale({"amount": 1.2, "radius": 2.0}, 0.5) == {"amount": 1.2, "radius": 1.0}
    assert sharpen.at_scale({"amount": 1.2}, 0.5)["radius"] == sharpen.param("radius").default * 0.5  # default scaled
    assert sharpen.at_scale({"radius": 0.4}, 0.1)["radius"] == sharpen.param("radius").minimum  # never below the range
    assert tools.get("exposure").at_scale({"stops": 1.0}, 0.25) == {"stops": 1.0}  # not a length: unchanged
    assert [p.name for s in tools.specs() for p in s.params if p.pixels] == ["radius", "sigma"]
