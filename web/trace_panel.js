// The "Agent trace" sidebar panel: the steps of a run (filter by agent, round and role), their
// plans, tool calls, feedback, scores, thumbnails, tokens and cost, the answers still streaming
// (a line under the steps, replaced when the step lands), and the MCTS tree view.
import { totals, treeSteps } from "./trace_store.js";

const SVG = "http://www.w3.org/2000/svg";

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function fmt(value) {
  if (typeof value === "number") return Number.isInteger(value) ? String(value) : value.toFixed(3);
  if (typeof value === "string") return value;
  return JSON.stringify(value);
}

function params(p) {
  return Object.entries(p || {}).map(([k, v]) => `${k}=${fmt(v)}`).join(", ");
}

// -- what a step says, by the shape of its data ---------------------------------------------

function renderPlan(subtasks) {
  return el("ol", { class: "ea-plan" },
    subtasks.map((s) => el("li", {}, el("b", { text: s.tool }), ": ", s.goal || "")));
}

function renderChain(steps) {
  return el("ul", { class: "ea-chain" },
    steps.map((s) => el("li", {}, el("code", { text: `${s.tool}(${params(s.params)})` }),
      s.rationale ? ` - ${s.rationale}` : "")));
}

function renderAnswers(answers) {
  return el("ul", { class: "ea-answers" }, answers.map((a) =>
    el("li", {}, el("span", { class: `ea-chip ea-${a.answer}`, text: a.answer }), " ", a.explanation || "")));
}

function renderReport(report) {
  const rows = Object.entries(report.components || report).filter(([, v]) => v && typeof v === "object");
  if (!rows.length) return el("pre", { text: JSON.stringify(report, null, 1) });
  return el("table", { class: "ea-table" },
    el("tr", {}, el("th", { text: "component" }), el("th", { text: "raw" }), el("th", { text: "norm." }),
      el("th", { text: "weight" })),
    rows.map(([name, v]) => el("tr", {}, el("td", { text: name }), el("td", { text: fmt(v.raw ?? "") }),
      el("td", { text: fmt(v.normalised ?? v.normalized ?? "") }), el("td", { text: fmt(v.weight ?? "") }))));
}

function renderValue(key, value, onTree) {
  if (key === "subtasks" && Array.isArray(value)) return renderPlan(value);
  if ((key === "steps" || key === "chain") && Array.isArray(value) && value.every((s) => s && s.tool)) return renderChain(value);
  if ((key === "actions" || key === "proposals") && Array.isArray(value) && value.every((s) => s && s.tool)) return renderChain(value);
  if (key === "answers" && Array.isArray(value)) return renderAnswers(value);
  if (key === "reward" && value && typeof value === "object") return renderReport(value);
  if (key === "tree") return el("button", { class: "ea-link", text: "show in the tree view", onclick: onTree });
  if (key === "positive") return el("span", { class: "ea-positive", text: value });
  if (key === "negative") return el("span", { class: "ea-negative", text: value });
  if (key === "params" && value && typeof value === "object") return el("code", { text: params(value) });
  if (Array.isArray(value) && value.every((v) => typeof v !== "object")) return value.map(fmt).join("; ");
  if (value && typeof value === "object") return el("pre", { text: JSON.stringify(value, null, 1) });
  return fmt(value);
}

function renderFields(label, data, onTree) {
  const entries = Object.entries(data || {}).filter(([, v]) => v !== "" && v !== null && v !== undefined);
  if (!entries.length) return null;
  return el("div", { class: "ea-fields" }, el("div", { class: "ea-fields-label", text: label }),
    entries.map(([k, v]) => el("div", { class: "ea-field" }, el("span", { class: "ea-key", text: k }),
      el("span", { class: "ea-val" }, renderValue(k, v, onTree)))));
}

function renderStep(step, onTree, open, onToggle) {
  const where = [step.round !== null && step.round !== undefined ? `round ${step.round}` : "",
    step.subtask !== null && step.subtask !== undefined ? `subtask ${step.subtask}` : "",
    step.attempt !== null && step.attempt !== undefined ? `attempt ${step.attempt}` : ""].filter(Boolean).join(", ");
  const scores = Object.entries(step.scores || {}).map(([k, v]) => `${k} ${fmt(v)}`).join(" · ");
  const cost = [step.tokens ? `${step.tokens} tokens` : "", step.cost ? `$${step.cost.toFixed(4)}` : "",
    step.wall_ms ? `${Math.round(step.wall_ms)} ms` : ""].filter(Boolean).join(" · ");
  const summary = el("summary", {},
    el("span", { class: "ea-index", text: step.seq + 1 }),
    el("span", { class: `ea-role ea-role-${step.role}`, text: step.role }),
    el("span", { class: "ea-agent", text: step.agent }),
    el("span", { class: "ea-action", text: step.action }),
    step.thumb ? el("img", { class: "ea-thumb", src: step.thumb, alt: "image of this step" }) : null);
  const details = el("details", { class: "ea-step", "data-role": step.role, "data-agent": step.agent, open },
    summary,
    el("div", { class: "ea-step-body" },
      where ? el("div", { class: "ea-meta", text: where }) : null,
      scores ? el("div", { class: "ea-scores", text: scores }) : null,
      cost ? el("div", { class: "ea-meta", text: cost }) : null,
      renderFields("inputs", step.inputs, onTree),
      renderFields("outputs", step.outputs, onTree),
      step.thumb ? el("img", { class: "ea-thumb-large", src: step.thumb, alt: "image of this step" }) : null));
  details.addEventListener("toggle", () => onToggle(details.open));
  return details;
}

// An answer still streaming: who is writing, and the end of what it has written so far.
function renderLiveLine(line) {
  const tail = line.text.slice(-300);
  return el("div", { class: "ea-meta ea-live-line", "data-agent": line.agent, "data-role": line.role },
    el("span", { class: `ea-role ea-role-${line.role}`, text: line.role }), " ",
    el("span", { class: "ea-agent", text: line.agent }), " writing: ",
    el("span", { class: "ea-live-text", style: "white-space: pre-wrap; word-break: break-all; font-family: monospace",
      text: line.chars > tail.length ? `…${tail}` : tail }));
}

// -- the MCTS tree ---------------------------------------------------------------------------

// Lay out a tree left to right (fits a tall, narrow sidebar): depth is the column, leaves take one
// row each, a parent sits level with the middle of its children.
function layout(tree) {
  const nodes = [];
  let leaf = 0;
  const walk = (node, depth, path) => {
    const kids = node.children || [];
    const item = { node, depth, path, row: 0, children: [] };
    nodes.push(item);
    if (!kids.length) item.row = leaf++;
    else {
      item.children = kids.map((k, i) => walk(k, depth + 1, `${path}.${i}`));
      item.row = (item.children[0].row + item.children[item.children.length - 1].row) / 2;
    }
    return item;
  };
  walk(tree, 0, "0");
  return { nodes, rows: Math.max(leaf, 1), depth: Math.max(...nodes.map((n) => n.depth)) };
}

function meanColour(mean, lo, hi) {
  const t = hi > lo ? (mean - lo) / (hi - lo) : 0.5;
  return `hsl(${Math.round(10 + 110 * t)}, 65%, 48%)`; // red (worst) to green (best)
}

function svgNode(tag, attrs) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function shorten(text, n) {
  return text.length > n ? `${text.slice(0, n - 1)}…` : text;
}

export function renderTree(tree, onSelect) {
  const { nodes, rows, depth } = layout(tree);
  const rowH = 22;
  const colW = 128;
  const w = 20 + colW * depth + 120;
  const h = rows * rowH + 10;
  const means = nodes.filter((n) => n.depth > 0).map((n) => n.node.mean);
  const lo = Math.min(...means, 0);
  const hi = Math.max(...means, 1e-9);
  const maxVisits = Math.max(...nodes.filter((n) => n.depth > 0).map((n) => n.node.visits), 1);
  const svg = svgNode("svg", { class: "ea-tree", viewBox: `0 0 ${w} ${h}`, width: "100%", "data-rows": rows });
  svg.style.maxWidth = `${w * 1.5}px`;
  const at = (item) => [12 + item.depth * colW, 5 + (item.row + 0.5) * rowH];
  for (const item of nodes) {
    for (const child of item.children) {
      const [x1, y1] = at(item);
      const [x2, y2] = at(child);
      const chosen = child.node.chosen ? ` ea-chosen-${child.node.chosen}` : "";
      svg.append(svgNode("path", { class: `ea-edge${chosen}`, d: `M${x1},${y1} C${x1 + colW / 2},${y1} ${x2 - colW / 2},${y2} ${x2},${y2}` }));
    }
  }
  for (const item of nodes) {
    const [x, y] = at(item);
    const n = item.node;
    const g = svgNode("g", { class: `ea-tree-node${n.chosen ? ` ea-chosen-${n.chosen}` : ""}`, "data-path": item.path,
      "data-action": n.action });
    const r = item.depth === 0 ? 7 : 3 + 6 * Math.sqrt(n.visits / maxVisits);
    g.append(svgNode("circle", { cx: x, cy: y, r, fill: item.depth === 0 ? "#999" : meanColour(n.mean, lo, hi) }));
    const title = svgNode("title", {});
    title.textContent = `${n.action}\nvisits ${n.visits}, mean reward ${fmt(n.mean)}${n.chosen ? `\nchosen: ${n.chosen}` : ""}`;
    const label = svgNode("text", { x: x + 10, y: y + 4 });
    label.textContent = item.depth === 0 ? `current (${n.visits})` : `${shorten(n.action, item.depth === depth ? 18 : 15)} ${n.visits}`;
    g.append(title, label);
    g.addEventListener("click", () => onSelect(n, item.path));
    svg.append(g);
  }
  return svg;
}

function renderTreeNodeDetail(node) {
  return el("div", { class: "ea-tree-detail" },
    node.thumb ? el("img", { class: "ea-thumb-large", src: node.thumb, alt: "state after this action" }) : null,
    el("div", {}, el("b", { text: node.action })),
    el("div", { class: "ea-meta", text: `visits ${node.visits} · mean reward ${fmt(node.mean)}` }),
    node.chosen ? el("div", { class: `ea-chip ea-chosen-${node.chosen}`, text: `chosen: ${node.chosen}` }) : null,
    node.params ? el("div", {}, el("code", { text: `${node.tool}(${params(node.params)})` })) : null);
}

// -- the panel -------------------------------------------------------------------------------

export class TracePanel {
  // stylesheet: makes the <link> to the pack's CSS, kept inside the panel (not in the shared <head>)
  constructor(store, { loadHistory, stylesheet } = {}) {
    this.store = store;
    this.loadHistory = loadHistory;
    this.stylesheet = stylesheet ? stylesheet() : null;
    this.container = null;
    this.body = null; // what render() rewrites; the stylesheet link beside it stays put
    this.filters = { agent: "", round: "", role: "" };
    this.runId = null; // null: follow the latest run
    this.view = "steps";
    this.treeStep = null; // seq of the MCTS step shown; null: the latest
    this.selected = null; // the clicked tree node
    this.open = new Set(); // steps the user opened (by run and seq): they stay open as new steps arrive
    this.liveBox = null; // the lines of the answers still streaming, updated in place (several times a second)
    this.unsubscribe = store.subscribe((_, what) => (what === "live" ? this.renderLive() : this.render()));
  }

  mount(container) {
    if (this.container === container) return;
    this.container = container;
    container.classList.add("ea-panel");
    this.body = el("div", { class: "ea-panel-body" });
    container.replaceChildren(...(this.stylesheet ? [this.stylesheet] : []), this.body);
    this.render();
  }

  unmount() {
    this.container = null;
    this.body = null;
  }

  currentRun() {
    return (this.runId && this.store.run(this.runId, false)) || this.store.latest();
  }

  select(label, key, options) {
    return el("label", { class: "ea-filter" }, label,
      el("select", { "data-filter": key, onchange: (e) => { this.filters[key] = e.target.value; this.render(); } },
        el("option", { value: "", text: "all" }),
        options.map((o) => el("option", { value: String(o), text: String(o), selected: String(o) === this.filters[key] }))));
  }

  render() {
    const root = this.body;
    if (!root || !this.container) return;
    const scroll = this.container.scrollTop;
    root.replaceChildren();
    const run = this.currentRun();
    const header = el("div", { class: "ea-header" },
      el("b", { text: "Agent trace" }),
      this.store.runs.length > 1
        ? el("select", { class: "ea-run", onchange: (e) => { this.runId = e.target.value || null; this.render(); } },
          el("option", { value: "", text: "latest run" }),
          this.store.runs.map((r) => el("option", { value: r.promptId, selected: r.promptId === this.runId,
            text: `${r.promptId.slice(0, 8)} (${r.status}, ${r.steps.length} steps)` })))
        : null,
      this.loadHistory ? el("button", { class: "ea-link", text: "load from history", onclick: () => this.loadHistory() }) : null);
    root.append(header);
    if (!run) {
      root.append(el("div", { class: "ea-empty", text: "Queue a workflow with an Edit Agents node: its steps appear here as they happen." }));
      return;
    }
    const t = totals(run.steps);
    root.append(el("div", { class: `ea-status ea-status-${run.status}`, "data-status": run.status },
      `${run.status} · ${run.steps.length} steps`, t.tokens ? ` · ${t.tokens} tokens` : "",
      t.cost ? ` · $${t.cost.toFixed(4)}` : "", ` · ${(t.wall / 1000).toFixed(1)} s in steps`),
    run.error ? el("div", { class: "ea-negative", text: run.error }) : "");

    const trees = treeSteps(run.steps);
    root.append(el("div", { class: "ea-tabs" },
      el("button", { class: `ea-tab${this.view === "steps" ? " ea-active" : ""}`, "data-view": "steps", text: "Steps",
        onclick: () => { this.view = "steps"; this.render(); } }),
      el("button", { class: `ea-tab${this.view === "tree" ? " ea-active" : ""}`, "data-view": "tree",
        text: `MCTS tree${trees.length ? ` (${trees.length})` : ""}`, disabled: !trees.length,
        onclick: () => { this.view = "tree"; this.render(); } })));
    if (this.view === "tree" && trees.length) this.renderTreeView(root, trees);
    else this.renderSteps(root, run);
    this.container.scrollTop = scroll;
  }

  renderSteps(root, run) {
    const steps = run.steps;
    const distinct = (key) => [...new Set(steps.map((s) => s[key]).filter((v) => v !== null && v !== undefined))];
    root.append(el("div", { class: "ea-filters" },
      this.select("agent", "agent", distinct("agent")),
      this.select("round", "round", distinct("round")),
      this.select("role", "role", distinct("role"))));
    const shown = steps.filter((s) => (!this.filters.agent || s.agent === this.filters.agent) &&
      (!this.filters.round || String(s.round) === this.filters.round) &&
      (!this.filters.role || s.role === this.filters.role));
    const t = totals(shown);
    if (shown.length !== steps.length) {
      root.append(el("div", { class: "ea-meta", text: `${shown.length} of ${steps.length} steps` +
        (t.tokens ? ` · ${t.tokens} tokens` : "") + (t.cost ? ` · $${t.cost.toFixed(4)}` : "") }));
    }
    const key = (s) => `${run.promptId}/${s.seq}`;
    const showTree = (s) => () => {
      this.view = "tree";
      this.treeStep = s.seq;
      this.selected = null;
      this.render();
    };
    const toggle = (s) => (open) => (open ? this.open.add(key(s)) : this.open.delete(key(s)));
    root.append(el("div", { class: "ea-steps" },
      shown.map((s) => renderStep(s, showTree(s), this.open.has(key(s)), toggle(s)))));
    this.liveBox = el("div", { class: "ea-live", "data-live": "" });
    root.append(this.liveBox);
    this.renderLive();
  }

  // Only the live lines: a streaming answer changes them a few times a second, and the steps above stay put.
  renderLive() {
    const run = this.currentRun();
    if (!this.liveBox || !this.liveBox.isConnected || !run) return;
    const lines = [...run.live.values()].filter((l) => (!this.filters.agent || l.agent === this.filters.agent) &&
      (!this.filters.role || l.role === this.filters.role));
    this.liveBox.replaceChildren(...lines.map(renderLiveLine));
  }

  renderTreeView(root, trees) {
    const step = trees.find((s) => s.seq === this.treeStep) || trees[trees.length - 1];
    root.append(el("div", { class: "ea-filters" }, el("label", { class: "ea-filter" }, "search",
      el("select", { "data-filter": "tree-step", onchange: (e) => { this.treeStep = Number(e.target.value); this.selected = null; this.render(); } },
        trees.map((s) => el("option", { value: s.seq, selected: s === step,
          text: `${s.agent}, step ${(s.round ?? 0) + 1}: ${s.action}` }))))));
    root.append(el("div", { class: "ea-meta",
      text: "Each node: an action, its visits; size: visits; colour: mean reward (red low, green high); " +
        "thick edge: the action taken (green kept, red dashed reverted)." }));
    const detail = el("div", { class: "ea-tree-detail-slot" },
      this.selected ? renderTreeNodeDetail(this.selected) : el("div", { class: "ea-meta", text: "Click a node to see its action and image." }));
    const svg = renderTree(step.outputs.tree, (node) => {
      this.selected = node;
      detail.replaceChildren(renderTreeNodeDetail(node));
    });
    root.append(el("div", { class: "ea-tree-scroll" }, svg), detail);
  }
}
