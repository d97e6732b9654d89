"""Benchmark: what concurrency and early stopping buy in CCA.

1. One CCA round with OpenAI-compatible brains against the scripted loopback endpoint, every
   call taking a fixed latency: wall time vs the sequential sum of the calls.
2. Tool calls per task over 5 rounds, with and without early stopping, with the offline rule
   brain on real photos (the CCA paper: 20 calls without, 12 with).
3. The same on the tasks that need more than one round (timid generators, requests of several parts),
   where early stopping has rounds to save.

Run: .venv/bin/python bench/cca_round.py [--latency 0.25]
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "support"))

from skimage import data  # noqa: E402

from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca  # noqa: E402
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain  # noqa: E402
from edit_agents.agents.records import EditRequest  # noqa: E402
from edit_agents.agents.rule_default import offline_brain  # noqa: E402
from edit_agents.tools import default_registry  # noqa: E402
from edit_agents.tools.imageops import as_image  # noqa: E402
from llm_server import Reply, ScriptedLLM  # noqa: E402

TASKS = [
    ("coffee", "make it brighter and add more contrast"),
    ("chelsea", "warmer, more saturated and crop to square"),
    ("rocket", "brighten the photo, sharpen it and add a vignette"),
    ("astronaut", "cooler and less contrast"),
    ("coffee", "black and white, then rotate 90 degrees"),
    ("chelsea", "resize to 256 and make it sharper"),
]


def scripted(seen) -> Reply:
    answers = {
        "planner": {"subtasks": [{"goal": "brighter", "tool": "exposure"}, {"goal": "more contrast", "tool": "contrast"}]},
        "questions": {"questions": [{"text": "Brighter?", "part": "brighter"}, {"text": "More contrast?", "part": "more contrast"}]},
        "caption": {"caption": "a cup of coffee on a saucer"},
        "answers": {"answers": [{"answer": "yes"}, {"answer": "yes"}], "quality": 8},
        "competitor": {"best": 0, "stop": True},
    }
    if seen.role == "executor":
        tool = "exposure" if "brighter" in seen.user_text().split("\n", 1)[0] else "contrast"
        return Reply({"steps": [{"tool": tool, "params": {"stops": 0.4} if tool == "exposure" else {"amount": 0.2}}]})
    return Reply(answers[seen.role])


def concurrency(latency: float) -> None:
    server = ScriptedLLM().start()
    try:
        server.reset(responder=scripted, latency=latency)
        brain = OpenAIBrain(BrainConfig(provider="custom", base_url=server.url, model="scripted", concurrency=8))
        gens = [Generator("generator-1", brain, brain), Generator("generator-2", brain, brain)]
        img = as_image(data.coffee())
        for label in ("cold (first call imports the SDK)", "warm"):
            server.seen.clear()
            t0 = time.perf_counter()
            asyncio.run(run_cca(img, EditRequest("brighter with more contrast"), default_registry(),
                                CCACast(gens, brain, brain),
                                CCASettings(rounds=1)))
            wall = time.perf_counter() - t0
            calls = len(server.seen)
            serial = sum(s.end - s.start for s in server.seen)
            # plan -> execute -> execute -> questions -> answers -> competitor: 6 calls in a chain
            print(f"CCA round, {label}: {calls} LLM calls at {latency * 1000:.0f} ms each; wall {wall:.2f} s vs "
                  f"sequential sum {serial:.2f} s (x{serial / wall:.2f}); critical path 6 calls = {6 * latency:.2f} s")
    finally:
        server.stop()


# requests of several parts, for generators too timid to finish them at once (candidates for section 3)
HARDER = [
    ("chelsea", "much brighter and sharper"),
    ("coffee", "brighten the photo, sharpen it and add a vignette"),
    ("astronaut", "brighten the photo, sharpen it and add a vignette"),
    ("camera", "sharpen it, add a vignette and more contrast"),
    ("chelsea", "warmer, sharper and add a vignette"),
    ("coffee", "make it much warmer and add more contrast"),
    ("rocket", "brighten the photo, sharpen it and add a vignette"),
    ("astronaut", "more saturated, sharper and a strong vignette"),
    ("chelsea", "darker and sharper with a vignette"),
    ("coffee", "cooler, sharper and brighter"),
]


def multi_round_tasks(boldness: tuple[float, float] = (0.3, 0.5)) -> None:
    """Early stopping measured only where it has rounds to save: of HARDER, the tasks that the timid
    generators could not finish in round 1 (the CCA paper's 20 vs 12 are over about 3 rounds)."""
    tools, rule = default_registry(), offline_brain()
    gens = [Generator("generator-1", rule, offline_brain(boldness=boldness[0])),
            Generator("generator-2", rule, offline_brain(boldness=boldness[1]))]
    rows = []
    for photo, instruction in HARDER:
        img, req = as_image(getattr(data, photo)()), EditRequest(instruction)
        early = asyncio.run(run_cca(img, req, tools, CCACast(gens, rule, rule), CCASettings(rounds=5, early_stop=True)))
        if early.rounds == 1:
            continue  # nothing for early stopping to save
        full = asyncio.run(run_cca(img, req, tools, CCACast(gens, rule, rule), CCASettings(rounds=5, early_stop=False)))
        rows.append((photo, instruction, full.tool_calls, early.tool_calls, early.rounds, early.stopped_early))
    print(f"\nTasks that need more than one round: {len(rows)} of {len(HARDER)} requests of several parts, rule brain, "
          f"timid generators (boldness {boldness[0]} / {boldness[1]}), up to 5 rounds:")
    print(f"{'photo':<10} {'instruction':<52} {'no stop':>7} {'stop':>5} {'rounds':>6} satisfied")
    for photo, instr, full, early, rounds, ok in rows:
        print(f"{photo:<10} {instr:<52} {full:>7} {early:>5} {rounds:>6} {'yes' if ok else 'no'}")
    if rows:
        print(f"mean: {statistics.mean(r[2] for r in rows):.1f} tool calls without early stopping, "
              f"{statistics.mean(r[3] for r in rows):.1f} with, over {statistics.mean(r[4] for r in rows):.1f} rounds "
              f"(CCA paper: 20 vs 12 over ~3)")


def early_stopping(label: str, boldness: tuple[float, float]) -> None:
    tools = default_registry()
    rule = offline_brain()
    gens = [Generator("generator-1", rule, offline_brain(boldness=boldness[0])),
            Generator("generator-2", rule, offline_brain(boldness=boldness[1]))]
    rows = []
    for photo, instruction in TASKS:
        img = as_image(getattr(data, photo)())
        req = EditRequest(instruction)
        res = {stop: asyncio.run(run_cca(img, req, tools, CCACast(gens, rule, rule), CCASettings(rounds=5, early_stop=stop)))
               for stop in (False, True)}
        rows.append((photo, instruction, res[False].tool_calls, res[True].tool_calls, res[True].rounds,
                     res[True].best.feedback.score, res[True].stopped_early))
    print(f"\nTool calls per task over up to 5 rounds, rule brain, {label} (executor boldness {boldness[0]} / {boldness[1]}):")
    print(f"{'photo':<10} {'instruction':<52} {'no stop':>7} {'stop':>5} {'rounds':>6} {'score':>5} satisfied")
    for photo, instr, full, early, rounds, score, ok in rows:
        print(f"{photo:<10} {instr:<52} {full:>7} {early:>5} {rounds:>6} {score:>5.1f} {'yes' if ok else 'no'}")
    print(f"mean: {statistics.mean(r[2] for r in rows):.1f} tool calls without early stopping, "
          f"{statistics.mean(r[3] for r in rows):.1f} with, over {statistics.mean(r[4] for r in rows):.1f} rounds "
          f"(CCA paper: 20 vs 12 over ~3)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--latency", type=float, default=0.25)
    args = parser.parse_args()
    concurrency(args.latency)
    early_stopping("default generators", (1.0, 1.6))
    early_stopping("timid generators that must learn from feedback", (0.3, 0.5))
    multi_round_tasks()
