"""Browser smoke test: the real frontend in Debian's Chromium loads the pack's extension and nodes."""
from __future__ import annotations



from browser import (CHROMIUM, CHROMIUM_ARGS, EXTENSION, TRACE_TAB, close_dialogs, load_with_photo,  # noqa: F401
                     open_trace_panel, press_run, run_button, wait_for_extension)


def test_extension_and_nodes_are_loaded(page, artifacts):
    wait_for_extension(page)
    registered = page.wait_for_function(
        """() => {
            const types = window.LiteGraph && window.LiteGraph.registered_node_types;
            if (!types) return null;
            const ours = Object.keys(types).filter((k) => k.startsWith('EditAgents'));
            return ours.length ? ours : null;
        }""", timeout=60_000).json_value()
    assert {"EditAgentsPhotoAgent", "EditAgentsToolbox", "EditAgentsReward", "EditAgentsTraceView"} <= set(registered)
    extensions = page.evaluate("() => window.app.extensions.map((e) => e.name)")
    assert "editagents.core" in extensions
    # the extension keeps its state to itself: nothing of the pack's on the shared window (comfy-test's lint)
    assert page.evaluate("() => Object.keys(window).filter((k) => /edit_?agents/i.test(k))") == []
    page.screenshot(path=str(artifacts / "frontend.png"))
    ours = [e for e in page.errors if "edit_agents" in e.lower() or "editagents" in e.lower()]
    assert not ours, ours


def test_offline_workflow_loads_with_no_missing_nodes(page, artifacts):
    from helpers import WORKFLOWS, load_json

    wait_for_extension(page)
    workflow = load_json(WORKFLOWS / "photoagent_offline.json")
    loaded = page.evaluate(
        """async (wf) => {
            await window.app.loadGraphData(wf);
            const types = window.LiteGraph.registered_node_types;
            const nodes = window.app.graph._nodes;
            return {types: nodes.map((n) => n.type), missing: nodes.filter((n) => !types[n.type]).map((n) => n.type)};
        }""", workflow)
    assert loaded["missing"] == []
    assert {"EditAgentsMCTSPlanner", "EditAgentsToolbox", "EditAgentsReward", "EditAgentsTraceView", "EditAgentsLoadPhoto",
            "EditAgentsSavePhoto"} <= set(loaded["types"])
    page.screenshot(path=str(artifacts / "offline_workflow.png"))


def test_every_shipped_workflow_loads_with_its_widgets(page, artifacts):
    from helpers import WORKFLOWS, load_json

    wait_for_extension(page)
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


def test_run_button_fills_the_trace_panel_and_draws_the_mcts_tree(page, comfy_server, photos, artifacts):
    """The offline workflow queued from the UI's Run button: the trace panel fills with steps while it
    runs, the MCTS tree renders with the chosen path, a tree node shows its image, and the Trace View
    node shows its summary on the canvas."""
    load_with_photo(page, comfy_server, "photoagent_offline.json", photos["chelsea"] * 0.5, "dim_chelsea.png")
    open_trace_panel(page)
    latest = "() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.latest()"
    before = page.evaluate(f"() => ({latest})()?.promptId ?? null")  # the runs /history gave the page, if any
    press_run(page)
    # steps appear while the search runs, in this run (not one the page read from /history)
    page.wait_for_function(f"(before) => {{ const r = ({latest})(); return r && r.promptId !== before && r.steps.length > 0; }}",
                           arg=before, timeout=60_000)
    page.wait_for_function(f"(before) => {{ const r = ({latest})(); return r.promptId !== before && r.status === 'done'; }}",
                           arg=before, timeout=240_000)
    page.wait_for_selector(".ea-status[data-status=done]", timeout=10_000)
    steps = page.locator(".ea-step")
    roles = set(steps.evaluate_all("els => els.map((e) => e.dataset.role)"))
    assert steps.count() >= 5 and {"reward", "planner", "loop"} <= roles
    assert page.locator(".ea-step .ea-thumb").count() >= 2  # thumbnails of the input and the accepted edits
    store = page.evaluate("() => { const r = window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.latest(); return {n: r.steps.length, id: r.promptId}; }")
    history = page.evaluate("async (id) => (await (await fetch(`/api/history/${id}`)).json())", store["id"])
    published = [o["edit_agents_trace"][0] for o in history[store["id"]]["outputs"].values() if "edit_agents_trace" in o]
    assert store["n"] == steps.count() == len(published[0]["steps"])  # every step, once

    page.locator(".ea-step summary").nth(1).click()  # open one step's details
    page.screenshot(path=str(artifacts / "trace_panel_steps.png"))

    page.locator(".ea-tab[data-view=tree]").click()
    nodes = page.locator(".ea-tree-node")
    nodes.first.wait_for(timeout=10_000)
    page.locator("[data-filter=tree-step]").select_option(index=0)  # the first search: its action was kept
    assert nodes.count() > 4  # the root, the edits tried and 'stop'
    assert page.locator(".ea-tree-node.ea-chosen-kept, .ea-tree-node.ea-chosen-reverted").count() == 1
    kept = page.locator(".ea-tree-node.ea-chosen-kept")
    assert kept.count() == 1 and page.locator(".ea-edge.ea-chosen-kept").count() == 1
    accepted = published[0]["steps"][next(i for i, s in enumerate(published[0]["steps"]) if s["action"].startswith("accept"))]
    assert kept.get_attribute("data-action") == accepted["outputs"]["chosen"]
    kept.click()
    detail = page.locator(".ea-tree-detail")
    detail.wait_for(timeout=5_000)
    assert "visits" in detail.inner_text() and "chosen: kept" in detail.inner_text()
    assert page.locator(".ea-tree-detail img").evaluate("img => img.complete && img.naturalWidth > 0")
    page.screenshot(path=str(artifacts / "trace_panel_tree.png"))

    shown = page.locator(".ea-node-preview").all_inner_texts()  # the Trace View's text, and Save Photo's
    assert any("PhotoAgent MCTS" in t for t in shown) and any("8-bit PNG" in t for t in shown), shown
    page.screenshot(path=str(artifacts / "trace_panel_canvas.png"), full_page=True)
    ours = [e for e in page.errors if "edit_agents" in e.lower() or "editagents" in e.lower() or "ea-" in e]
    assert not ours, ours


def test_role_nodes_show_their_plan_and_feedback_after_a_run(page, comfy_server, object_info, photos, artifacts):
    """unrolled_rounds.json from the Run button: each Planner shows its plan on the node, each Critic and
    the Aggregator their feedback, and the trace panel can be filtered by round."""
    from edit_agents.cli.workflow import ui_to_api

    workflow = load_with_photo(page, comfy_server, "unrolled_rounds.json", photos["coffee"] * 0.6, "dim_coffee.png")
    before = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs.length")
    press_run(page)
    page.wait_for_function("(n) => { const r = window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs; return r.length > n && r[r.length - 1].status === 'done'; }",
                           arg=before, timeout=240_000)
    previews = page.wait_for_function(
        """() => {
            const out = {};
            for (const n of window.app.graph._nodes) {
                const w = (n.widgets || []).find((w) => w.name === 'edit_agents_preview');
                if (w) (out[n.type] = out[n.type] || []).push(w.element.textContent);
            }
            return out.EditAgentsAggregator ? out : null;
        }""", timeout=30_000).json_value()
    assert len(previews["EditAgentsPlanner"]) == 2 and all(p.strip() for p in previews["EditAgentsPlanner"])
    assert any(tool in previews["EditAgentsPlanner"][0] for tool in ("exposure", "contrast", "auto_levels"))
    assert len(previews["EditAgentsCritic"]) == 2 and all("score" in p for p in previews["EditAgentsCritic"])
    assert previews["EditAgentsAggregator"][0].startswith(("accepted", "not accepted"))
    # the previews are not saved in the workflow, and a workflow saved after a run converts as before
    # (the frontend's own progress-text widget does add a value to widgets_values)
    saved = page.evaluate("() => window.app.graph.serialize()")
    planner = next(n for n in saved["nodes"] if n["type"] == "EditAgentsPlanner")
    assert not any(previews["EditAgentsPlanner"][0] == v for v in planner["widgets_values"])
    assert ui_to_api(saved, object_info) == ui_to_api(workflow, object_info)

    open_trace_panel(page)
    steps = page.locator(".ea-step")
    total = steps.count()
    page.locator("[data-filter=round]").select_option("1")
    rounds = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.latest().steps.filter((s) => s.round === 1).length")
    assert 0 < steps.count() == rounds < total
    page.locator("[data-filter=round]").select_option("")
    page.evaluate("() => window.app.canvas.setDirty(true, true)")
    page.screenshot(path=str(artifacts / "role_node_previews.png"))


def test_template_browser_shows_the_workflows_with_their_thumbnails_and_opens_one(page, artifacts):
    """As a user finds them: the Templates button, the pack's category under Extensions, each workflow's card
    by its title and its thumbnail (the image named after it); clicking one opens it on the canvas."""
    from helpers import WORKFLOWS

    wait_for_extension(page)
    close_dialogs(page)
    page.get_by_role("button", name="Templates", exact=True).first.click()
    dialog = page.get_by_role("dialog").first
    dialog.wait_for(timeout=20_000)
    dialog.get_by_text("edit_agents", exact=True).last.click()  # the pack's category, under Extensions
    titles = {p.stem: dialog.get_by_text(p.stem, exact=True).first for p in WORKFLOWS.glob("*.json")}
    for title in titles.values():
        title.wait_for(state="attached", timeout=20_000)  # every workflow has its card
    # Top to bottom as a user scrolls: 1.58 drops a thumbnail scrolled out of view and does not draw it again.
    where = {name: title.evaluate("(e) => { const r = e.getBoundingClientRect(); return [r.top, r.left]; }")
             for name, title in titles.items()}
    for name in sorted(titles, key=where.get):
        titles[name].scroll_into_view_if_needed(timeout=20_000)
        thumb = dialog.get_by_role("img", name=name, exact=True)  # drawn once its card is in view
        page.wait_for_function("(img) => img.complete && img.naturalWidth === 640", arg=thumb.element_handle(),
                               timeout=20_000)
    titles["photoagent_offline"].scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "template_browser.png"))
    titles["photoagent_offline"].click()  # its card opens it on the canvas
    page.wait_for_function("() => window.app.graph._nodes.some((n) => n.type === 'EditAgentsMCTSPlanner')", timeout=20_000)
    close_dialogs(page)


def test_works_with_the_vue_nodes_renderer(page, comfy_server, photos, artifacts):
    """With the frontend's "Nodes 2.0" (Vue) renderer on: the workflow loads, runs from the Run button, the
    trace panel fills and the Planner's plan preview shows inside its Vue node."""
    wait_for_extension(page)
    settings = "window.app.extensionManager.setting"
    page.evaluate(f"async () => {{ await {settings}.set('Comfy.VueNodes.Enabled', true); }}")
    try:
        load_with_photo(page, comfy_server, "unrolled_rounds.json", photos["rocket"] * 0.7, "dim_rocket.png")
        page.wait_for_selector("[data-node-id]", timeout=20_000)  # nodes are Vue components now
        before = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs.length")
        press_run(page)
        page.wait_for_function("(n) => { const r = window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs; return r.length > n && r[r.length - 1].status === 'done'; }",
                               arg=before, timeout=240_000)
        planner_id = page.evaluate("() => String(window.app.graph._nodes.find((n) => n.type === 'EditAgentsPlanner').id)")
        preview = page.locator(f"[data-node-id='{planner_id}'] .ea-node-preview")
        preview.wait_for(state="visible", timeout=20_000)
        assert "->" in preview.inner_text()  # "0: brighter -> exposure | ..."
        open_trace_panel(page)
        assert page.locator(".ea-step").count() >= 8
        page.screenshot(path=str(artifacts / "vue_nodes.png"))
    finally:
        page.evaluate(f"async () => {{ await {settings}.set('Comfy.VueNodes.Enabled', false); }}")


def test_node_help_shows_the_generated_help_page(page, artifacts):
    """Select a Planner and press the selection toolbox's info button: the frontend's help panel shows
    web/docs/EditAgentsPlanner.md (the inputs table with each tooltip)."""
    wait_for_extension(page)
    close_dialogs(page)
    page.evaluate("""() => {
        window.app.graph.clear();
        const node = window.LiteGraph.createNode('EditAgentsPlanner');
        node.pos = [500, 300];
        window.app.graph.add(node);
        window.app.canvas.selectNode(node);
        window.app.canvas.setDirty(true, true);
    }""")
    # The selection toolbox's info button: named Node Info from 1.49 on; 1.32's has no accessible name, only
    # its test id.
    info = page.get_by_role("button", name="Node Info", exact=True).or_(page.get_by_test_id("info-button")).first
    info.wait_for(state="attached", timeout=10_000)
    info.evaluate("(button) => button.click()")  # it sits over the canvas, which takes the pointer first
    page.get_by_text("The photo to plan for.").first.wait_for(timeout=15_000)  # a tooltip, from the help page's table
    assert page.get_by_text("Splits the request into atomic subtasks").count() >= 1
    page.screenshot(path=str(artifacts / "node_help.png"))


def test_trace_panel_shows_tokens_and_cost_of_a_vlm_run(page, comfy_server, photos, llm, artifacts):
    """photoagent.json with its Brain pointed at the loopback scripted endpoint, run from the Run button: the
    perceiver's calls appear with their tokens, and the panel sums them."""
    from llm_server import Reply

    llm.reset(responder=lambda seen: Reply({"scene": "a cat", "actions": [
        {"tool": "contrast", "params": {"amount": 0.25}, "rationale": "flat"},
        {"tool": "vibrance", "params": {"amount": 0.3}, "rationale": "dull fur"}]}))
    load_with_photo(page, comfy_server, "photoagent.json", photos["chelsea"][::2, ::2] * 0.7, "dim_cat.png")
    page.evaluate("""(url) => {
        const set = (type, values) => {
            const node = window.app.graph._nodes.find((n) => n.type === type);
            for (const [name, value] of Object.entries(values)) node.widgets.find((w) => w.name === name).value = value;
        };
        set('EditAgentsBrain', {provider: 'custom', model: 'scripted-vlm', base_url: url});
        set('EditAgentsMCTSPlanner', {simulations: 6, max_steps: 2});
    }""", llm.url)
    before = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs.length")
    press_run(page)
    page.wait_for_function("(n) => { const r = window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.runs; return r.length > n && r[r.length - 1].status === 'done'; }",
                           arg=before, timeout=240_000)
    open_trace_panel(page)
    page.locator(".ea-tab[data-view=steps]").click()
    calls = [s for s in llm.seen if s.role == "perceiver"]
    status = page.locator(".ea-status").inner_text()
    tokens = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.latest().steps.reduce((t, s) => t + (s.tokens || 0), 0)")
    assert calls and tokens > 0 and f"{tokens} tokens" in status
    page.locator("[data-filter=role]").select_option("perceiver")
    perceiver_steps = page.evaluate("() => window.app.extensions.find((e) => e.name === 'editagents.core').traceStore.latest().steps.filter((s) => s.role === 'perceiver')")
    assert page.locator(".ea-step").count() == len(perceiver_steps)
    assert len([s for s in perceiver_steps if s.get("tokens")]) == len(calls)  # each VLM call, with its tokens
    page.locator(".ea-step summary").first.click()
    body = page.locator(".ea-step-body").first.inner_text()
    assert "tokens" in body and "contrast(amount=0.25" in body  # the proposals as tool calls
    page.screenshot(path=str(artifacts / "trace_panel_vlm.png"))
    page.locator("[data-filter=role]").select_option("")


def test_cli_converts_subgraphs_as_the_frontend_exports_them(page, comfy_server, object_info, comfy, photos, artifacts):
    """A workflow with a subgraph nested in another, made and saved by the real frontend: the CLI's conversion
    gives the same API prompt as the frontend's own Export (API), and that prompt runs."""
    import json

    from edit_agents.cli.workflow import ui_to_api

    load_with_photo(page, comfy_server, "cca.json", photos["chelsea"][::4, ::4], "sub.png")
    made = page.evaluate("""async () => {
        const g = window.app.graph;
        const inner = g.convertToSubgraph(new Set([2, 3, 4].map((id) => g.getNodeById(id))));  // toolbox, 2 brains
        g.convertToSubgraph(new Set([inner.node, g.getNodeById(5), g.getNodeById(6)]));  // it, a brain, the loop
        const { output } = await window.app.graphToPrompt();
        return { saved: g.serialize(), exported: output };
    }""")
    saved, exported = made["saved"], made["exported"]
    (artifacts / "subgraph_workflow.json").write_text(json.dumps(saved, indent=1))
    assert len(saved["definitions"]["subgraphs"]) == 2
    inside = {"EditAgentsToolbox", "EditAgentsBrain", "EditAgentsCCALoop"}
    assert not any(n["type"] in inside for n in saved["nodes"])  # all inside the subgraphs now
    ours = ui_to_api(saved, object_info)
    strip = lambda p: {k: {"class_type": v["class_type"], "inputs": v["inputs"]} for k, v in p.items()}  # noqa: E731
    assert strip(ours) == strip(exported)
    assert any(":" in k and k.count(":") == 2 for k in ours)  # a node two subgraphs deep
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # off Playwright's event loop
        assert pool.submit(comfy.call, "run", ours).result().outputs
