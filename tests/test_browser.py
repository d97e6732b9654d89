"""Browser smoke test: the real frontend in Debian's Chromium loads the pack's extension and nodes."""
from __future__ import annotations

import shutil

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run", "--disable-quic"]

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def page(comfy_server, tmp_path_factory):
    if CHROMIUM is None:
        pytest.fail("Debian's chromium is not installed: run `make setup` as root, or apt-get install chromium")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 900})
        pg = context.new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda exc: errors.append(str(exc)))
        pg.goto(comfy_server.url, wait_until="domcontentloaded")
        pg.errors = errors
        yield pg
        browser.close()


def close_dialogs(page) -> None:
    """A fresh profile opens the template browser over the canvas: close it before a screenshot."""
    for _ in range(3):
        if page.locator(".p-dialog-mask").count() == 0:
            break
        buttons = page.locator("[role=dialog] button:visible")
        if buttons.count():
            buttons.last.click()  # the dialog's close button sits last, top right
        else:
            page.keyboard.press("Escape")
        page.wait_for_timeout(400)


def test_extension_and_nodes_are_loaded(page, artifacts):
    page.wait_for_function("window.__editAgentsLoaded === true", timeout=60_000)
    registered = page.wait_for_function(
        """() => {
            const types = window.LiteGraph && window.LiteGraph.registered_node_types;
            if (!types) return null;
            const ours = Object.keys(types).filter((k) => k.startsWith('EditAgents'));
            return ours.length ? ours : null;
        }""", timeout=60_000).json_value()
    assert {"EditAgentsPhotoAgent", "EditAgentsToolbox", "EditAgentsReward", "EditAgentsTraceView"} <= set(registered)
    extensions = page.evaluate("() => window.app.extensions.map((e) => e.name)")
    assert "EditAgents.Core" in extensions
    page.screenshot(path=str(artifacts / "frontend.png"))
    ours = [e for e in page.errors if "edit_agents" in e.lower() or "editagents" in e.lower()]
    assert not ours, ours


def test_offline_workflow_loads_with_no_missing_nodes(page, artifacts):
    from helpers import WORKFLOWS, load_json

    page.wait_for_function("window.__editAgentsLoaded === true", timeout=60_000)
    workflow = load_json(WORKFLOWS / "photoagent_offline.json")
    loaded = page.evaluate(
        """async (wf) => {
            await window.app.loadGraphData(wf);
            const types = window.LiteGraph.registered_node_types;
            const nodes = window.app.graph._nodes;
            return {types: nodes.map((n) => n.type), missing: nodes.filter((n) => !types[n.type]).map((n) => n.type)};
        }""", workflow)
    assert loaded["missing"] == []
    assert {"EditAgentsMCTSPlanner", "EditAgentsToolbox", "EditAgentsReward", "EditAgentsTraceView", "LoadImage"} <= set(loaded["types"])
    page.screenshot(path=str(artifacts / "offline_workflow.png"))


def test_every_shipped_workflow_loads_with_its_widgets(page, artifacts):
    from helpers import WORKFLOWS, load_json

    page.wait_for_function("window.__editAgentsLoaded === true", timeout=60_000)
    for path in sorted(WORKFLOWS.glob("*.json")):
        workflow = load_json(path)
        loaded = page.evaluate(
            """async (wf) => {
                await window.app.loadGraphData(wf);
                const types = window.LiteGraph.registered_node_types;
                const nodes = window.app.graph._nodes;
                return {count: nodes.length, missing: nodes.filter((n) => !types[n.type]).map((n) => n.type),
                        links: Object.keys(window.app.graph.links || {}).length};
            }""", workflow)
        assert loaded["missing"] == [], path.name
        assert loaded["count"] == len(workflow["nodes"]), path.name
        assert loaded["links"] == len(workflow["links"]), path.name  # every link reconnected
        close_dialogs(page)
        page.evaluate("() => window.app.canvas.setDirty(true, true)")
        page.screenshot(path=str(artifacts / f"workflow_{path.stem}.png"))
