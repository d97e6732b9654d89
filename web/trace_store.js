// The agent runs the browser has seen: steps streamed over the websocket while a prompt runs,
// the text of the brain answers still streaming, and whole traces published by Trace View nodes
// (from /history after a page reload). Plain data and listeners; no DOM here.

const MAX_RUNS = 12;

export class TraceStore {
  constructor() {
    this.runs = []; // newest last
    this.listeners = new Set();
  }

  subscribe(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  // `what`: "live" when only a streaming answer's text changed (a panel can update that line alone)
  emit(what = "all") {
    for (const listener of this.listeners) listener(this, what);
  }

  // `past`: a run read from /history. It goes before the runs seen live, whenever the history arrives, so the
  // latest run is always the newest one this page has watched.
  run(promptId, create = true, past = false) {
    const id = promptId || "(no prompt id)";
    let run = this.runs.find((r) => r.promptId === id);
    if (!run && create) {
      run = { promptId: id, status: "running", error: "", steps: [], nodes: new Set(), startedAt: Date.now(), past,
        live: new Map() }; // agent/role -> the text so far of an answer still streaming
      if (past) this.runs.splice(this.runs.filter((r) => r.past).length, 0, run);
      else this.runs.push(run);
      if (this.runs.length > MAX_RUNS) this.runs.shift();
    }
    return run;
  }

  latest() {
    return this.runs[this.runs.length - 1] || null;
  }

  start(promptId) {
    this.run(promptId).status = "running";
    this.emit();
  }

  addStep(detail) {
    const run = this.run(detail.prompt_id);
    const step = { ...detail.step, node: detail.node, title: detail.title, seq: run.steps.length };
    run.steps.push(step);
    run.nodes.add(String(detail.node));
    for (const [key, live] of run.live) if (live.agent === step.agent) run.live.delete(key); // the step landed
    markChosen(run.steps, step);
    this.emit();
  }

  // The text so far of a brain's answer that is still streaming (a few times a second while it lasts).
  setLive(detail) {
    const run = this.run(detail.prompt_id);
    if (run.status !== "running") return;
    run.live.set(`${detail.agent}/${detail.role}`,
      { agent: detail.agent, role: detail.role, text: detail.text || "", chars: detail.chars || 0, node: detail.node });
    this.emit("live");
  }

  finish(promptId, status, error = "") {
    const run = this.run(promptId, false);
    if (!run) return;
    run.status = status;
    run.error = error;
    run.live.clear();
    this.emit();
  }

  // A whole trace (a Trace View node's output). It replaces the streamed steps when it holds them all
  // (it is the same record, final); a shorter one is part of what was streamed already.
  addTrace(promptId, node, trace, past = false) {
    const run = this.run(promptId, true, past);
    if (!trace || !Array.isArray(trace.steps)) return;
    if (run.steps.length > trace.steps.length) return;
    const nodes = run.steps.map((s) => s.node);
    run.steps = trace.steps.map((step, seq) => ({ ...step, node: nodes[seq] ?? node, title: trace.title, seq }));
    if (run.status === "running") run.status = "done";
    this.emit();
  }
}

// An MCTS step's outcome (accept or revert, with the action it chose) marks that action's edge in
// the latest search tree of the same agent and round, so the live tree shows the chosen path.
function markChosen(steps, step) {
  const chosen = step.outputs && step.outputs.chosen;
  if (step.role !== "loop" || typeof chosen !== "string") return;
  const search = [...steps].reverse().find((s) => s.outputs && s.outputs.tree && s.agent === step.agent && s.round === step.round);
  const child = search && (search.outputs.tree.children || []).find((c) => c.action === chosen);
  if (child) child.chosen = step.action.startsWith("accept") ? "kept" : "reverted";
}

// Totals over some steps: tokens, cost and wall time.
export function totals(steps) {
  let tokens = 0;
  let cost = 0;
  let wall = 0;
  for (const s of steps) {
    tokens += s.tokens || 0;
    cost += s.cost || 0;
    wall += s.wall_ms || 0;
  }
  return { tokens, cost, wall };
}

// The steps that carry an MCTS search tree.
export function treeSteps(steps) {
  return steps.filter((s) => s.outputs && s.outputs.tree);
}
