// Edit Agents frontend extension. Official extension APIs only: app.registerExtension, a sidebar
// tab, api.addEventListener, nodeCreated + the node instance's onExecuted, addDOMWidget.
import { app } from "../../scripts/app.js";
import { api } from "../../scripts/api.js";
import { TraceStore } from "./trace_store.js";
import { TracePanel } from "./trace_panel.js";

const TRACE_EVENT = "edit_agents.trace_step"; // sent by nodes/common.py for every trace step
const LIVE_EVENT = "edit_agents.trace_live"; // ...and a streaming answer's text so far, a few times a second
const HISTORY_KEY = "edit_agents_trace"; // a Trace View node's output in /history
const PREVIEW_WIDGET = "edit_agents_preview";

const store = new TraceStore();
const STYLESHEET = new URL("./edit_agents.css", import.meta.url).href;

// The pack's stylesheet, linked from inside the pack's own elements (the panel, each preview widget) rather
// than injected into the shared <head>: every selector in it is namespaced `.ea-`.
function stylesheetLink() {
  const link = document.createElement("link");
  link.rel = "stylesheet";
  link.href = STYLESHEET;
  return link;
}

// Runs the server still remembers: their Trace View outputs (so a reloaded page shows the last run).
async function loadHistory(maxItems = 8) {
  const response = await api.fetchApi(`/history?max_items=${maxItems}`);
  if (!response.ok) throw new Error(`GET /history answered ${response.status}`);
  const history = await response.json();
  for (const [promptId, entry] of Object.entries(history)) {
    for (const [node, output] of Object.entries(entry.outputs || {})) {
      for (const trace of output[HISTORY_KEY] || []) store.addTrace(promptId, node, trace, true);
    }
    const status = entry.status?.status_str;
    if (status === "success") store.finish(promptId, "done");
    else if (status === "error") store.finish(promptId, "error", "the run failed: see the queue for the error");
  }
}

function listen() {
  api.addEventListener(TRACE_EVENT, ({ detail }) => store.addStep(detail));
  api.addEventListener(LIVE_EVENT, ({ detail }) => store.setLive(detail));
  api.addEventListener("execution_start", ({ detail }) => store.start(detail.prompt_id));
  api.addEventListener("execution_success", ({ detail }) => store.finish(detail.prompt_id, "done"));
  api.addEventListener("execution_interrupted", ({ detail }) => store.finish(detail.prompt_id, "interrupted"));
  api.addEventListener("execution_error", ({ detail }) =>
    store.finish(detail.prompt_id, "error", `${detail.node_type || "a node"}: ${detail.exception_message || "failed"}`));
  api.addEventListener("executed", ({ detail }) => {
    for (const trace of detail.output?.[HISTORY_KEY] || []) store.addTrace(detail.prompt_id, detail.node, trace);
  });
}

// The PLAN / FEEDBACK / summary text a pack node returns, shown on the node after it runs.
function showPreview(node, text) {
  let widget = node.widgets?.find((w) => w.name === PREVIEW_WIDGET);
  if (!widget) {
    const box = document.createElement("div");
    box.className = "ea-node-preview";
    const text = document.createElement("div");
    text.className = "ea-node-preview-text";
    box.append(stylesheetLink(), text);
    widget = node.addDOMWidget(PREVIEW_WIDGET, "edit_agents_preview", box, {
      serialize: false, // never saved in the workflow or sent to the server
      hideOnZoom: false,
      getMinHeight: () => 60,
      getMaxHeight: () => 240,
    });
    widget.serialize = false;
  }
  widget.element.querySelector(".ea-node-preview-text").textContent = text;
  node.setSize([node.size[0], Math.max(node.size[1], node.computeSize()[1])]);
  node.setDirtyCanvas?.(true, true);
}

// A node saved before one of its inputs had a "control after generate" widget (the MCTS Planner's seed, until
// the pack declared it) holds one value fewer for each such widget. Positionally, every value after the seed
// would land one widget late (mood "4"); when the count says exactly that, put each value back by its widget.
function restoreWithoutControls(node, info) {
  const values = info?.widgets_values;
  const saved = (node.widgets || []).filter((w) => w.serialize !== false); // what widgets_values holds
  const controls = new Set(saved.flatMap((w) => w.linkedWidgets || []));
  if (!Array.isArray(values) || controls.size === 0 || values.length !== saved.length - controls.size) return;
  const plain = saved.filter((w) => !controls.has(w));
  plain.forEach((widget, i) => { widget.value = values[i]; });
  for (const control of controls) control.value = "fixed"; // the file kept its seed: keep it
}

app.registerExtension({
  name: "editagents.core",
  // What the panel shows, for tests and users: app.extensions.find((e) => e.name === "editagents.core").traceStore
  traceStore: store,
  loaded: false, // true once setup() has run

  async setup() {
    listen();
    const panel = new TracePanel(store, { stylesheet: stylesheetLink, loadHistory: () => loadHistory().catch((err) => console.warn("Edit Agents:", err)) });
    app.extensionManager.registerSidebarTab({
      id: "edit-agents-trace",
      icon: "pi pi-sitemap",
      title: "Agent trace",
      tooltip: "Edit Agents: what the agents decided, step by step, and the MCTS search tree",
      type: "custom",
      render: (container) => panel.mount(container),
      destroy: () => panel.unmount(),
    });
    loadHistory().catch((err) => console.warn("Edit Agents: could not read /history:", err));
    this.loaded = true;
  },

  nodeCreated(node) {
    if (!String(node.comfyClass || node.constructor?.comfyClass || "").startsWith("EditAgents")) return;
    const configured = node.onConfigure;
    node.onConfigure = function (info) {
      configured?.apply(this, arguments);
      restoreWithoutControls(this, info);
    };
    const previous = node.onExecuted; // chain, on this instance only
    node.onExecuted = function (output) {
      previous?.apply(this, arguments);
      const text = output?.text;
      if (Array.isArray(text) && text.length) showPreview(this, text.join("\n"));
    };
  },
});
