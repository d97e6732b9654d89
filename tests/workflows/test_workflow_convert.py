import pytest

from edit_agents.cli.workflow import WorkflowError, apply_settings, find_node, set_image, set_instruction, ui_to_api

# A slice of /object_info in the shape ComfyUI serves it (the live one is tested in test_server.py).
OBJECT_INFO = {
    "LoadImage": {"input": {"required": {"image": [["a.png"], {"image_upload": True}]}},
                  "input_order": {"required": ["image"]}, "display_name": "Load Image"},
    "KSamplerish": {"input": {"required": {"seed": ["INT", {"control_after_generate": True}], "steps": ["INT", {}],
                                           "image": ["IMAGE"]},
                              "optional": {"note": ["STRING", {"forceInput": True}]}},
                    "input_order": {"required": ["seed", "steps", "image"], "optional": ["note"]}},
    "SaveImage": {"input": {"required": {"images": ["IMAGE"], "filename_prefix": ["STRING", {}]}},
                  "input_order": {"required": ["images", "filename_prefix"]}},
}


def node(id, type, widgets=None, inputs=(), mode=0, title=None):
    n = {"id": id, "type": type, "mode": mode, "inputs": [dict(i) for i in inputs], "outputs": []}
    if widgets is not None:
        n["widgets_values"] = widgets
    if title:
        n["title"] = title
    return n


def graph(mode_of_sampler=0):
    return {"nodes": [
        node(1, "LoadImage", ["x.png", "image"], title="Input Image"),
        node(9, "Reroute", inputs=[{"name": "", "type": "*", "link": 1}]),
        node(2, "KSamplerish", [42, "randomize", 20], inputs=[{"name": "image", "type": "IMAGE", "link": 2},
                                                              {"name": "steps", "type": "INT", "link": 5, "widget": {"name": "steps"}}],
             mode=mode_of_sampler),
        node(4, "PrimitiveNode", [7]),
        node(3, "SaveImage", ["out"], inputs=[{"name": "images", "type": "IMAGE", "link": 3}]),
        node(5, "Note", ["hello"]),
    ], "links": [[1, 1, 0, 9, 0, "IMAGE"], [2, 9, 0, 2, 0, "IMAGE"], [3, 2, 0, 3, 0, "IMAGE"], [5, 4, 0, 2, 1, "INT"]]}


def test_widgets_links_reroute_primitive_and_notes():
    api = ui_to_api(graph(), OBJECT_INFO)
    assert set(api) == {"1", "2", "3"}
    assert api["1"]["inputs"] == {"image": "x.png"} and api["1"]["_meta"]["title"] == "Input Image"
    assert api["2"]["inputs"] == {"seed": 42, "steps": 7, "image": ["1", 0]}  # control value skipped, primitive inlined
    assert api["3"]["inputs"] == {"filename_prefix": "out", "images": ["2", 0]}


def test_bypassed_node_passes_its_input_through_and_muted_is_dropped():
    api = ui_to_api(graph(mode_of_sampler=4), OBJECT_INFO)
    assert "2" not in api and api["3"]["inputs"]["images"] == ["1", 0]
    api = ui_to_api(graph(mode_of_sampler=2), OBJECT_INFO)
    assert "2" not in api and "images" not in api["3"]["inputs"]


def test_unknown_node_type_is_named():
    g = graph()
    g["nodes"].append(node(8, "MysteryNode", []))
    with pytest.raises(WorkflowError, match="'MysteryNode'.*missing custom node"):
        ui_to_api(g, OBJECT_INFO)


def test_set_image_instruction_and_settings():
    api = ui_to_api(graph(), OBJECT_INFO)
    assert set_image(api, "up.png") == "1" and api["1"]["inputs"]["image"] == "up.png"
    apply_settings(api, ["2.steps=12", "Input Image.image=b.png", "SaveImage.filename_prefix=run one"])
    assert api["2"]["inputs"]["steps"] == 12 and api["1"]["inputs"]["image"] == "b.png"
    assert api["3"]["inputs"]["filename_prefix"] == "run one"
    with pytest.raises(WorkflowError, match="no instruction input"):
        set_instruction(api, "make it warmer")
    with pytest.raises(WorkflowError, match="NODE_TITLE_OR_ID.INPUT=VALUE"):
        apply_settings(api, ["steps12"])
    with pytest.raises(WorkflowError, match="no node with id or title 'Nope'"):
        find_node(api, "Nope")


def test_widgets_added_since_a_workflow_was_saved_take_their_defaults():
    info = {"Grown": {"input": {"required": {"old": ["FLOAT", {"default": 1.0}], "new": ["FLOAT", {"default": 0.5}],
                                             "pick": ["COMBO", {"options": ["first", "second"]}],
                                             "legacy": [["a", "b"], {}], "free": ["STRING", {}]}},
                      "input_order": {"required": ["old", "new", "pick", "legacy", "free"]}}}
    old_save = {"nodes": [node(1, "Grown", [2.0])], "links": []}
    inputs = ui_to_api(old_save, info)["1"]["inputs"]
    assert inputs == {"old": 2.0, "new": 0.5, "pick": "first", "legacy": "a"}  # 'free' has no default: server names it


def test_api_to_ui_round_trips_through_ui_to_api():
    from edit_agents.cli.workflow import api_to_ui

    prompt = {"1": {"class_type": "LoadImage", "inputs": {"image": "x.png"}},
              "s": {"class_type": "KSamplerish", "inputs": {"seed": 42, "steps": 20, "image": ["1", 0]}},
              "o": {"class_type": "SaveImage", "inputs": {"images": ["s", 0], "filename_prefix": "out"}}}
    info = {**OBJECT_INFO, "LoadImage": {**OBJECT_INFO["LoadImage"], "output": ["IMAGE", "MASK"]},
            "KSamplerish": {**OBJECT_INFO["KSamplerish"], "output": ["IMAGE"]},
            "SaveImage": {**OBJECT_INFO["SaveImage"], "output": []}}
    ui = api_to_ui(prompt, info, titles={"1": "Input Image"}, note="hello")
    sampler = next(n for n in ui["nodes"] if n["type"] == "KSamplerish")
    assert sampler["widgets_values"] == [42, "fixed", 20]  # the seed's control value follows it
    assert [n["type"] for n in ui["nodes"]][-1] == "MarkdownNote"
    assert ui["nodes"][0]["pos"][0] < sampler["pos"][0]  # laid out left to right by depth
    back = ui_to_api(ui, info)
    assert {k: v["inputs"] for k, v in back.items()} == {
        "1": {"image": "x.png"}, "2": {"seed": 42, "steps": 20, "image": ["1", 0]},
        "3": {"images": ["2", 0], "filename_prefix": "out"}}
    assert back["1"]["_meta"]["title"] == "Input Image"


SEEDED = {"input": {"required": {"seed": ["INT", {"default": 0}], "mood": ["STRING", {}], "calls": ["INT", {}]}},
          "input_order": {"required": ["seed", "mood", "calls"]}}


def test_a_seed_has_the_control_widget_the_frontend_gives_it_declared_or_not():
    """Frontends add a control widget after an INT named seed unless told otherwise: its value is stepped over,
    whether the spec declares it (a mode or true) or leaves it to the frontend; an explicit false has none."""
    from edit_agents.cli.workflow import api_to_ui

    prompt = {"a": {"class_type": "Seeded", "inputs": {"seed": 5, "mood": "warm", "calls": 2}}}
    for flag, stored in ((None, "fixed"), (True, "fixed"), ("increment", "increment"), (False, None)):
        spec = {"default": 0, **({} if flag is None else {"control_after_generate": flag})}
        info = {"Seeded": {**SEEDED, "input": {"required": {**SEEDED["input"]["required"], "seed": ["INT", spec]}},
                           "output": []}}
        ui = api_to_ui(prompt, info)
        assert ui["nodes"][0]["widgets_values"] == [5, *([stored] if stored else []), "warm", 2], flag
        assert ui_to_api(ui, info)["1"]["inputs"] == {"seed": 5, "mood": "warm", "calls": 2}, flag


def test_a_file_saved_before_the_seed_had_its_control_reads_as_it_opened_then():
    """Three values for three widgets (no control value after the seed): the count says the file was saved
    without the control widget, so the mood is not read from the seed's control slot."""
    info = {"Seeded": {**SEEDED, "input": {"required": {**SEEDED["input"]["required"],
                                                        "seed": ["INT", {"control_after_generate": "fixed"}]}}}}
    old = {"nodes": [node(1, "Seeded", [5, "warm", 2])], "links": []}
    assert ui_to_api(old, info)["1"]["inputs"] == {"seed": 5, "mood": "warm", "calls": 2}
    new = {"nodes": [node(1, "Seeded", [5, "fixed", "warm", 2])], "links": []}
    assert ui_to_api(new, info)["1"]["inputs"] == {"seed": 5, "mood": "warm", "calls": 2}
