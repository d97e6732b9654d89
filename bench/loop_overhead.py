"""Benchmark: what running agent loops as ComfyUI nodes costs, per round, over calling them in Python.

The CCA loop (rule brain, two generators) with a near no-op tool (flip) on a 64 px image, 5 rounds,
no early stop: once directly in Python, once as the CCA Loop node on a real server, where each round
after the first is an expanded clone of the node. Reports ms per round and nodes executed per round.
Run: .venv/bin/python bench/loop_overhead.py
"""
from __future__ import annotations

import asyncio
import statistics
import sys
import time

import aiohttp
import numpy as np
from PIL import Image

from edit_agents.agents.cca import CCACast, CCASettings, Generator, run_cca
from edit_agents.agents.records import EditRequest
from edit_agents.agents.rule_default import offline_brain
from edit_agents.cli.client import ComfyClient
from edit_agents.cli.server import LocalServer
from edit_agents.tools import default_registry

ROUNDS, REPEATS = 5, 3
INSTRUCTION = "flip it"


def photo() -> np.ndarray:
    rng = np.random.default_rng(0)
    return rng.random((64, 64, 3)).astype(np.float32)


def direct() -> float:
    rule = offline_brain()
    tools = default_registry().subset(names=["flip"])
    times = []
    for _ in range(REPEATS):
        t0 = time.perf_counter()
        asyncio.run(run_cca(photo(), EditRequest(INSTRUCTION), tools,
                            CCACast([Generator("g1", rule, rule), Generator("g2", rule, rule)], rule, rule), CCASettings(rounds=ROUNDS, early_stop=False)))
        times.append(time.perf_counter() - t0)
    print(f"  (direct runs: {[round(t, 3) for t in times]} s)")
    return statistics.median(times) / ROUNDS * 1000


async def through_server(server: LocalServer) -> tuple[float, float]:
    Image.fromarray((photo() * 255).astype(np.uint8)).save(server.dirs()["input"] / "bench.png")
    prompt = {
        "1": {"class_type": "LoadImage", "inputs": {"image": "bench.png"}},
        "2": {"class_type": "EditAgentsToolbox", "inputs": {
            "category": "classic", "only": "flip", "exclude": "", "grounding_dino": "(first available)",
            "sam": "(first available)", "instruct_pix2pix": "(first available)", "inpaint": "(first available)"}},
        "l": {"class_type": "EditAgentsCCALoop", "inputs": {
            "image": ["1", 0], "instruction": INSTRUCTION, "caption": "", "toolbox": ["2", 0], "rounds": ROUNDS,
            "early_stop": False, "restart_from_original": True, "min_score": 7.0, "rerun_every_time": True}},
        "t": {"class_type": "EditAgentsTraceView", "inputs": {"trace": ["l", 2]}},
    }
    async with aiohttp.ClientSession() as session:
        client = ComfyClient(server.url, session)
        await client.run(prompt)  # warm-up: imports, first loads
        times, nodes = [], []
        for _ in range(REPEATS):
            t0 = time.perf_counter()
            result = await client.run(prompt)
            times.append(time.perf_counter() - t0)
            ran = [e for e in result.events if e["type"] == "executing" and e["data"].get("node")]
            nodes.append(len(ran))
    print(f"  (server runs: {[round(t, 3) for t in times]} s, executing events: {nodes})")
    return statistics.median(times) / ROUNDS * 1000, statistics.median(nodes) / ROUNDS


def main() -> int:
    per_round_direct = direct()
    with LocalServer() as server:
        per_round_node, nodes_per_round = asyncio.run(through_server(server))
    print(f"CCA loop, {ROUNDS} rounds, two rule generators, flip on 64 px (median of {REPEATS}):")
    print(f"  direct Python:     {per_round_direct:7.1f} ms per round")
    print(f"  as ComfyUI nodes:  {per_round_node:7.1f} ms per round ({nodes_per_round:.1f} nodes executed per round, "
          f"each round after the first an expanded clone of the loop node)")
    print(f"  orchestration overhead: {per_round_node - per_round_direct:+.1f} ms per round "
          "(includes the whole prompt's queueing, websocket and history per round)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
