"""Each shipped workflow runs as it is on a fresh install: its Load Image names the sample photo the pack copies
into ComfyUI's input folder when it loads, and nothing is uploaded first.

The session's server (tests/conftest.py) starts with an empty input folder, as a fresh install has; the copy is
the pack's own doing. Workflows that need no model weights run to the end; the two that need what a fresh
install lacks stop where a user's would, and the test checks that what stops them is that and only that:
edit_with_checkpoint.json names a checkpoint nobody has yet (the only validation error), the LLM workflows ask an
Ollama VLM that is not running here (they validate, the image loads, and the VLM's Brain is what fails; in
photoagent.json the rule perceiver then goes on, saying so), and the edit-model workflows name Kontext's or
Qwen-Image-Edit's files (their loaders' only validation errors).
"""
from __future__ import annotations

import logging

import pytest

import edit_agents
from edit_agents.cli.client import ExecutionFailed, PromptRejected
from edit_agents.cli.workflow import ui_to_api
from helpers import WORKFLOWS, built_prompt, differences, load_json

SAMPLE = edit_agents.SAMPLE_IMAGE
RUN_TO_THE_END = {"photoagent_offline.json", "cca.json", "imagagent.json", "unrolled_rounds.json", "graph_tool.json",
                  "building_blocks.json"}
NEEDS_A_CHECKPOINT = {"edit_with_checkpoint.json"}
NEEDS_A_VLM = {"cca_ollama.json", "imagagent_ollama.json", "imagagent_local.json"}
GOES_ON_WITHOUT_ITS_VLM = {"photoagent.json"}  # the MCTS Planner's rule perceiver takes over (issue 67)
NEEDS_AN_EDIT_MODEL = {"photoagent_kontext.json", "imagagent_qwen_edit.json", "cca_kontext.json"}
EDIT_MODEL_FILES = {"unet_name", "clip_name", "clip_name1", "clip_name2", "vae_name"}  # ComfyUI's own loaders


def test_the_sample_photo_is_shipped_small_and_is_a_real_photo():
    import numpy as np
    from PIL import Image

    assert SAMPLE.is_file() and SAMPLE.stat().st_size < 300_000
    with Image.open(SAMPLE) as im:
        assert im.format == "PNG" and im.mode == "RGB" and min(im.size) >= 256
        assert len(np.unique(np.asarray(im.convert("L")))) > 100  # a photo, not a placeholder


def test_every_shipped_workflow_names_the_sample_photo():
    for path in sorted(WORKFLOWS.glob("*.json")):
        loaders = [n for n in load_json(path)["nodes"] if n["type"] == "EditAgentsLoadPhoto"]  # 16 bits, profiles
        assert loaders and all(n["widgets_values"][0] == SAMPLE.name for n in loaders), path.name
    assert {p.name for p in WORKFLOWS.glob("*.json")} == \
        RUN_TO_THE_END | NEEDS_A_CHECKPOINT | NEEDS_A_VLM | NEEDS_AN_EDIT_MODEL | GOES_ON_WITHOUT_ITS_VLM, \
        "a new workflow: say here how far it runs on a fresh install"


def test_sample_copy_never_overwrites_and_tolerates_a_read_only_folder(tmp_path, caplog, monkeypatch):
    fresh = tmp_path / "input"
    copied = edit_agents.install_sample_image(fresh)
    assert copied == fresh / SAMPLE.name and copied.read_bytes() == SAMPLE.read_bytes()
    assert [p.name for p in fresh.iterdir()] == [SAMPLE.name]  # no partial file left behind

    copied.write_bytes(b"the user's own photo")
    assert edit_agents.install_sample_image(fresh) == copied
    assert copied.read_bytes() == b"the user's own photo", "a file of that name is never overwritten"

    def read_only(*args, **kwargs):  # what a read-only input folder answers (chmod cannot stop root here)
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(edit_agents.shutil, "copyfile", read_only)
    locked = tmp_path / "locked"
    with caplog.at_level(logging.WARNING, logger="edit_agents"):
        assert edit_agents.install_sample_image(locked) is None  # logged, not raised: the pack still loads
    assert "could not copy the sample photo" in caplog.text and "Permission denied" in caplog.text
    assert not any(locked.iterdir())


def test_sample_copy_logs_instead_of_raising_when_the_folder_cannot_be_made(tmp_path, caplog):
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="edit_agents"):
        assert edit_agents.install_sample_image(blocker / "input") is None
    assert "could not copy the sample photo" in caplog.text


def test_the_pack_put_the_sample_photo_in_the_servers_input_folder(comfy_server, object_info):
    copied = comfy_server.dirs()["input"] / SAMPLE.name
    assert copied.read_bytes() == SAMPLE.read_bytes()
    assert SAMPLE.name in object_info["LoadImage"]["input"]["required"]["image"][0]  # the Load Image list offers it
    assert SAMPLE.name in object_info["EditAgentsLoadPhoto"]["input"]["required"]["image"][1]["options"]  # and ours


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.json")), ids=lambda p: p.name)
def test_the_cli_reads_each_workflow_as_it_was_built(path, object_info):
    """What the CLI converts (and the test below runs) is the graph the file was built from, input by input: the
    same the frontends send (tests/workflows/test_workflow_frontends.py), so what runs here is what a user's Run queues."""
    workflow = load_json(path)
    titles = {str(n["id"]): n.get("title") for n in workflow["nodes"]}
    found = differences(path.name, built_prompt(path.name, object_info), ui_to_api(workflow, object_info), titles)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("path", sorted(WORKFLOWS.glob("*.json")), ids=lambda p: p.name)
def test_each_shipped_workflow_runs_as_it_is_on_a_fresh_install(path, comfy, comfy_server, object_info):
    assert (comfy_server.dirs()["input"] / SAMPLE.name).exists()
    prompt = ui_to_api(load_json(path), object_info)  # as it is: no image set, nothing uploaded
    if path.name in RUN_TO_THE_END:
        result = comfy.call("run", prompt)
        saved = [img for out in result.outputs.values() for img in out.get("images", []) if img["type"] == "output"]
        assert saved, f"{path.name}: nothing saved"
        assert any("edit_agents_trace" in out for out in result.outputs.values()), path.name
    elif path.name in GOES_ON_WITHOUT_ITS_VLM:  # Ollama is not running: the rules propose, and the trace says so
        result = comfy.call("run", prompt)
        trace = next(t for out in result.outputs.values() for t in out.get("edit_agents_trace", []))
        handed = [s for s in trace["steps"] if s.get("outputs", {}).get("fallback") == "rules"]
        assert len(handed) == 1 and "11434" in handed[0]["action"], trace["steps"][:3]  # Ollama's URL, named
        assert any(img["type"] == "output" for out in result.outputs.values() for img in out.get("images", []))
    elif path.name in NEEDS_AN_EDIT_MODEL:  # the model files a fresh install lacks, named by ComfyUI's loaders
        with pytest.raises(PromptRejected) as err:
            comfy.call("queue", prompt)
        problems = err.value.problems
        assert problems and {inp for _, inp, _ in problems} <= EDIT_MODEL_FILES, err.value.readable()
    elif path.name in NEEDS_A_CHECKPOINT:
        with pytest.raises(PromptRejected) as err:
            comfy.call("queue", prompt)
        problems = err.value.problems
        assert problems and all(inp == "ckpt_name" for _, inp, _ in problems), err.value.readable()
        loaders = {k for k, n in prompt.items() if n["class_type"] == "CheckpointLoaderSimple"}
        assert set(err.value.raw.get("node_errors", {})) == loaders, err.value.readable()
    else:  # a VLM endpoint the user has not started yet: it validates, then the Brain's call is what fails
        with pytest.raises(ExecutionFailed) as err:
            comfy.call("run", prompt)
        failed = err.value.data.get("node_type", "")
        assert failed.startswith("EditAgents"), str(err.value)
        assert "Invalid image file" not in str(err.value)
