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
from helpers import WORKFLOWS, built_prompt, differences, frontends, load_json

from browser import CHROMIUM, CHROMIUM_ARGS, close_dialogs, open_page

pytestmark = pytest.mark.browser

FRONTENDS = frontends()


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
            page = open_page(browser, url)
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
