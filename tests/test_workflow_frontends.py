"""Every shipped workflow, opened in each frontend this run covers, sends exactly the values it was built with.

The frontend restores a saved node's widget values by position. When a frontend adds a widget the file was not
saved with (frontend 1.49 and newer show a "control after generate" widget after an INT input named ``seed``),
every later value shifts by one, and nothing fails: the MCTS Planner ran with ``mood: "4"``. So each workflow is
loaded on the canvas and queued through the frontend's own ``app.graphToPrompt()``, and what it would send is
compared input by input, by name, with the graph scripts/build_workflows.py built the file from.

The main run covers the frontend ComfyUI's requirements pin and the newest one on PyPI; the compatibility run
(EDIT_AGENTS_TEST_RUN=compat) the oldest supported, 1.32.9.
"""
from __future__ import annotations

import pytest

from edit_agents.cli.server import LocalServer
from edit_agents.cli.workflow import _default, _is_widget
from helpers import WORKFLOWS, frontends, load_json, load_script

from test_browser import CHROMIUM, CHROMIUM_ARGS, close_dialogs, wait_for_extension

pytestmark = pytest.mark.browser

FRONTENDS = frontends()


def built_prompt(name: str, object_info: dict) -> dict[str, dict]:
    """The API prompt a shipped workflow was built from, with the ids the UI file gives its nodes (1, 2, ... in
    the graph's order) and every widget the graph leaves out at its default, as the file stores it."""
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


def sent_by(page, workflow: dict) -> dict:
    """The API prompt the frontend would queue for ``workflow``, opened on its canvas: its own graphToPrompt."""
    sent = page.evaluate("""async (wf) => {
        await window.app.loadGraphData(wf);
        const { output } = await window.app.graphToPrompt();
        return output;
    }""", workflow)
    close_dialogs(page)
    return sent


@pytest.fixture(scope="module", params=FRONTENDS, ids=[version for version, _ in FRONTENDS])
def frontend_page(request, comfy_server, object_info, tmp_path_factory):
    """A page of the frontend ``request.param`` on a server that serves it (the session's for the first)."""
    if CHROMIUM is None:
        pytest.fail("Debian's chromium is not installed: run `make setup` as root, or apt-get install chromium")
    from playwright.sync_api import sync_playwright

    version, root = request.param
    server = None
    url = comfy_server.url
    if (version, root) != FRONTENDS[0]:
        server = LocalServer(base_dir=tmp_path_factory.mktemp("frontend"),
                             extra_args=("--front-end-root", root) if root else ()).start()
        url = server.url
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            page.goto(url, wait_until="domcontentloaded")
            wait_for_extension(page)
            page.version = version
            yield page
            browser.close()
    finally:
        if server:
            server.stop()


def test_the_page_serves_the_frontend_it_names(frontend_page):
    served = frontend_page.evaluate("() => window.__COMFYUI_FRONTEND_VERSION__ || null")
    assert served == frontend_page.version


@pytest.mark.parametrize("name", sorted(p.name for p in WORKFLOWS.glob("*.json")))
def test_the_frontend_sends_what_the_workflow_was_built_with(frontend_page, object_info, artifacts, name):
    workflow = load_json(WORKFLOWS / name)
    sent = sent_by(frontend_page, workflow)
    titles = {str(n["id"]): n.get("title") for n in workflow["nodes"]}
    found = differences(name, built_prompt(name, object_info), sent, titles)
    if found:
        frontend_page.screenshot(path=str(artifacts / f"frontend_{frontend_page.version}_{name}.png"))
    assert not found, f"frontend {frontend_page.version} sends other values than {name} was built with:\n" + \
        "\n".join(found)


def test_a_planner_saved_before_its_seed_had_a_control_opens_as_it_was_saved(frontend_page, object_info):
    """A workflow a user saved when the MCTS Planner's seed had no control widget (12 values, not 13): the pack's
    extension puts each value back on its widget, so the frontend sends the saved mood and perceiver calls."""
    from helpers import PACK_ROOT

    old = load_json(PACK_ROOT / "tests" / "data" / "workflows_v0" / "photoagent_offline.json")
    planner = next(n for n in old["nodes"] if n["type"] == "EditAgentsMCTSPlanner")
    assert len(planner["widgets_values"]) == 12  # saved without the control value
    sent = sent_by(frontend_page, old)
    inputs = sent[str(planner["id"])]["inputs"]
    assert (inputs["seed"], inputs["mood"], inputs["perceiver_calls"], inputs["simulations"]) == (0, "", 4, 24)
