"""Paths and small helpers shared by the tests (importable because pytest puts tests/support/ on sys.path)."""
from __future__ import annotations

import json
from pathlib import Path

PACK_ROOT = Path(__file__).resolve().parents[2]
TEST_DATA = PACK_ROOT / "tests" / "data"
WORKFLOWS = PACK_ROOT / "workflows"
ARTIFACTS = PACK_ROOT / "test-artifacts"


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())


def load_script(name: str):
    """scripts/<name>.py as a module (the scripts are run, not imported, so they are no package)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, PACK_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mcts_prompt(image: str, **settings) -> dict:
    """Load Image -> MCTS Planner (node "mcts") -> Trace View, with the planner's settings overridden."""
    inputs = {"simulations": 8, "depth": 2, "exploration": 1.0, "branching": 4, "top_k": 2, "max_steps": 2,
              "patience": 1, "preview_side": 128, "time_budget_s": 30.0, "seed": 0, **settings}
    return {"img": {"class_type": "LoadImage", "inputs": {"image": image}},
            "mcts": {"class_type": "EditAgentsMCTSPlanner", "inputs": {"image": ["img", 0], **inputs}},
            "trace": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["mcts", 2]}}}


def setup_env() -> dict[str, str]:
    """What `make setup` recorded in .setup/env: the venv, the ComfyUI, the frontends and the compatibility pair."""
    found = PACK_ROOT / ".setup" / "env"
    lines = found.read_text().splitlines() if found.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


def which_run() -> str:
    """Which run this is: "main" (the current ComfyUI and the newest frontend) or "compat" (the oldest supported
    pair, 0.3.75 and 1.32.9: `make test` runs the server, workflow and browser tests on it too) or "py313" (the
    unit tests and the offline workflow under Python 3.13, on the current ComfyUI and the newest frontend)."""
    import os

    return os.environ.get("EDIT_AGENTS_TEST_RUN", "main")


def frontends() -> list[tuple[str, str | None]]:
    """The frontends this run opens the workflows in, as (version, static root); None is the one installed in
    the venv (ComfyUI's own pin). The first is the one the session's server serves."""
    from importlib.metadata import version

    env = setup_env()
    if which_run() == "compat":
        return [(env["COMPAT_FRONTEND"], env["COMPAT_FRONTEND_ROOT"])]
    newest = [(env["FRONTEND_NEWEST"], env["FRONTEND_NEWEST_ROOT"])] if env.get("FRONTEND_NEWEST_ROOT") else []
    own = (version("comfyui-frontend-package"), None)
    return newest + [own] if newest and newest[0][0] != own[0] else [own]


def built_prompt(name: str, object_info: dict) -> dict[str, dict]:
    """The API prompt a shipped workflow was built from, with the ids the UI file gives its nodes (1, 2, ... in
    the graph's order) and every widget the graph leaves out at its default, as the file stores it."""
    from edit_agents.cli.workflow import _default, _is_widget

    build = load_script("build_workflows")
    graph = build.saved_as_photos(build.WORKFLOW_GRAPHS[name]["prompt"])
    ids = {key: str(i + 1) for i, key in enumerate(graph)}
    prompt = {}
    for key, node in graph.items():
        info = object_info[node["class_type"]]
        specs = {**info["input"].get("required", {}), **info["input"].get("optional", {})}
        order = info.get("input_order", {})
        inputs = {}
        for input_name in order.get("required", []) + order.get("optional", []):
            value = node["inputs"].get(input_name)
            if isinstance(value, list) and len(value) == 2 and value[0] in ids:
                inputs[input_name] = [ids[value[0]], value[1]]
            elif input_name in node["inputs"]:
                inputs[input_name] = value
            elif _is_widget(specs[input_name]) and _default(specs[input_name]) is not None:
                inputs[input_name] = _default(specs[input_name])
        prompt[ids[key]] = {"class_type": node["class_type"], "inputs": inputs}
    return prompt


def differences(name: str, built: dict, sent: dict, titles: dict) -> list[str]:
    """Each input whose sent value is not the built one, named by node and input."""
    found = []
    for node_id, node in built.items():
        where = f"{name} #{node_id} {titles.get(node_id) or node['class_type']}"
        if node_id not in sent:
            found.append(f"{where}: not sent at all")
            continue
        got = sent[node_id]["inputs"]
        for input_name in sorted(set(node["inputs"]) | set(got)):
            want, have = node["inputs"].get(input_name, "<absent>"), got.get(input_name, "<absent>")
            if want != have:  # JSON has one number type: 7.0 is sent as 7, and 7 == 7.0 here
                found.append(f"{where}.{input_name}: built {want!r}, sent {have!r}")
    return found
