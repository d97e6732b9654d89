"""An API key in the environment never leaves: not in a saved workflow, a PNG's metadata, a trace, a log line,
an error message, a websocket event or the CLI's files, even when the endpoint echoes it back. Searched for in
every artefact of full runs on a real server started with the key in its environment."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from edit_agents.cli.server import LocalServer
from edit_agents.cli.workflow import api_to_ui
from llm_server import Reply

SECRET = "sk-edit-agents-test-7f3c9a1e5d2b4c6a8e0f"
KEY_ENV = "EDIT_AGENTS_TEST_SECRET_KEY"
CLI = str(Path(sys.executable).parent / "edit-agents")


@pytest.fixture(scope="module")
def keyed_server(tmp_path_factory):
    server = LocalServer(base_dir=tmp_path_factory.mktemp("keyed"), env={**os.environ, KEY_ENV: SECRET})
    server.start()
    yield server
    server.stop()


def llm_brain(url: str, **over) -> dict:
    return {"class_type": "EditAgentsBrain", "inputs": {
        "provider": "custom", "model": "echo", "base_url": url, "api_key_env": KEY_ENV, "temperature": 0.2,
        "max_tokens": 1024, "timeout": 30.0, "image_side": 256, "concurrency": 2, "max_retries": 0,
        "structured_output": "json_schema", "rule_boldness": 1.0, **over}}


def echoing(seen):
    """A hostile or careless endpoint: it puts the Authorization header it got into its answers."""
    header = seen.headers.get("Authorization", "")
    if "subtasks" in json.dumps(seen.body["messages"][0]):  # the planner's schema (in any structured mode)
        return Reply({"subtasks": [{"goal": f"brighter ({header})", "tool": "exposure", "rationale": header}],
                      "notes": header})
    return Reply({"steps": [{"tool": "exposure", "params": {"stops": 0.4}, "rationale": header}]})


def prompt_for(image: str, url: str) -> dict:
    return {
        "img": {"class_type": "LoadImage", "inputs": {"image": image}},
        "brain": llm_brain(url),
        "plan": {"class_type": "EditAgentsPlanner", "inputs": {
            "image": ["img", 0], "instruction": "make it brighter", "mode": "instructed", "mood": "", "caption": "",
            "rerun_every_time": True, "brain": ["brain", 0]}},
        "exec": {"class_type": "EditAgentsExecutor", "inputs": {"image": ["img", 0], "plan": ["plan", 0],
                                                                "brain": ["brain", 0], "rerun_every_time": True}},
        "save": {"class_type": "SaveImage", "inputs": {"images": ["exec", 0], "filename_prefix": "secret_test"}},
        "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["exec", 2]}},
    }


def png_text(path: Path) -> str:
    with Image.open(path) as im:
        return json.dumps({k: str(v) for k, v in im.info.items()})


def test_the_key_is_in_no_artefact_of_a_run(keyed_server, llm, photos, tmp_path):
    from conftest import SyncClient

    comfy = SyncClient(keyed_server.url)
    object_info = comfy.get("/object_info")
    Image.fromarray((photos["coffee"] * 0.6 * 255).astype(np.uint8)).save(keyed_server.dirs()["input"] / "c.png")
    llm.reset(responder=echoing)
    prompt = prompt_for("c.png", llm.url)
    workflow = api_to_ui(prompt, object_info)  # what the canvas would save and send along
    artefacts: dict[str, str] = {"saved workflow": json.dumps(workflow), "API prompt": json.dumps(prompt)}

    events = []
    result = comfy.call("run", prompt, on_event=events.append, extra_data={"extra_pnginfo": {"workflow": workflow}})
    assert llm.seen and all(s.headers.get("Authorization") == f"Bearer {SECRET}" for s in llm.seen)  # it was used
    artefacts["websocket events"] = json.dumps(events)
    artefacts["history"] = json.dumps(comfy.get(f"/history/{result.prompt_id}"))
    trace = next(o["edit_agents_trace"][0] for o in result.outputs.values() if "edit_agents_trace" in o)
    assert "[redacted]" in json.dumps(trace)  # the echoed header was caught
    saved = [i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output"]
    png = keyed_server.dirs()["output"] / saved[0]["subfolder"] / saved[0]["filename"]
    artefacts["PNG metadata"] = png_text(png)
    assert "workflow" in artefacts["PNG metadata"] and "prompt" in artefacts["PNG metadata"]

    # an error: the endpoint refuses, echoing the key in its error body
    llm.reset(responder=lambda seen: Reply(status=400, body={"error": {"message": f"bad key {seen.headers.get('Authorization')}"}}))
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    artefacts["error message"] = str(err.value)
    artefacts["error traceback"] = json.dumps(err.value.data)
    assert "rejected the request" in str(err.value)

    # the CLI against the same server: its output, trace.json and images
    llm.reset(responder=echoing)
    api_file = tmp_path / "api.json"
    api_file.write_text(json.dumps(prompt))
    src = tmp_path / "photo.png"
    Image.fromarray((photos["rocket"] * 0.6 * 255).astype(np.uint8)).save(src)
    out = tmp_path / "out"
    r = subprocess.run([CLI, "run", str(api_file), "--image", str(src), "--out", str(out), "--server", keyed_server.url],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    artefacts["CLI output"] = r.stdout + r.stderr
    for f in out.iterdir():
        artefacts[f"CLI file {f.name}"] = png_text(f) if f.suffix == ".png" else f.read_text()

    artefacts["server log"] = keyed_server.log_path.read_text(errors="replace")
    artefacts["user folder"] = "".join(p.read_text(errors="replace") for p in keyed_server.dirs()["user"].rglob("*")
                                       if p.is_file())
    leaks = [name for name, text in artefacts.items() if SECRET in text]
    assert not leaks, f"the key leaked into: {leaks}"
    assert len(artefacts) >= 12


def test_plain_http_to_another_machine_is_refused_unless_allowed(keyed_server):
    from conftest import SyncClient

    comfy = SyncClient(keyed_server.url)
    Image.new("RGB", (32, 32), (90, 90, 90)).save(keyed_server.dirs()["input"] / "g.png")
    remote = "http://192.0.2.1:9/v1"  # TEST-NET-1: never routed, so nothing is ever sent
    prompt = prompt_for("g.png", remote)
    prompt["brain"]["inputs"]["timeout"] = 1.0
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    assert "refusing to send the API key" in str(err.value) and "allow_insecure_http" in str(err.value)
    prompt["brain"]["inputs"]["allow_insecure_http"] = True  # the user opts in: now it tries (and cannot connect)
    with pytest.raises(ExecutionFailed) as err:
        comfy.call("run", prompt)
    assert "refusing" not in str(err.value) and "check that the endpoint is running" in str(err.value)
    assert SECRET not in str(err.value) + json.dumps(err.value.data)
