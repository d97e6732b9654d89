"""Load: many prompts of the offline workflow from several concurrent clients against one real server.

Every prompt must complete (or report a clear error) and none may be lost; each output must be the edit
of its own input. Prints throughput, latency percentiles and the server's memory (before, peak, after).

  .venv/bin/python bench/load.py                       # 50 prompts from 4 clients, mixed photo sizes
  .venv/bin/python bench/load.py --prompts 8 --json out.json
"""
from __future__ import annotations

import argparse
import asyncio
import io
import json
import statistics
import sys
import threading
import time
from pathlib import Path

import aiohttp
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parent.parent
SIDES = (320, 640, 1024, 1600)  # longest side of the photos, in turn


def photos(n: int) -> list[np.ndarray]:
    """n distinct photos of mixed sizes: crops of scikit-image's photos, each with its own offset and size."""
    from skimage import data, transform

    sources = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    out = []
    for i in range(n):
        src = sources[i % len(sources)]
        h, w = src.shape[:2]
        crop = src[(i * 7) % (h // 4):, (i * 11) % (w // 4):]
        side = SIDES[i % len(SIDES)]
        scale = side / max(crop.shape[:2])
        size = (max(8, round(crop.shape[0] * scale)), max(8, round(crop.shape[1] * scale)))
        out.append((transform.resize(crop, size, anti_aliasing=True) * 255).astype(np.uint8))
    return out


class MemoryWatch:
    """Samples a process's resident memory (VmRSS) from /proc while the load runs."""

    def __init__(self, pid: int, every_s: float = 0.2):
        self.pid, self.every_s = pid, every_s
        self.samples: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def rss_mib(self) -> float:
        for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def _run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(self.rss_mib())
            self._stop.wait(self.every_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def similarity(a: np.ndarray, b: np.ndarray) -> float:
    """Correlation of two images' 32x32 grey thumbnails (an edit keeps it high; another photo does not)."""
    def small(x):
        return np.asarray(Image.fromarray(x).convert("L").resize((32, 32), Image.BILINEAR), np.float64).ravel()
    sa, sb = small(a), small(b)
    return float(np.corrcoef(sa, sb)[0, 1])


async def client_worker(url: str, jobs: asyncio.Queue, template: dict, results: list, timeout: float) -> None:
    from edit_agents.cli.client import ComfyClient, ExecutionFailed, PromptRejected
    from edit_agents.cli.workflow import set_image

    async with aiohttp.ClientSession() as session:
        client = ComfyClient(url, session, timeout=timeout)
        while True:
            try:
                index, path = jobs.get_nowait()
            except asyncio.QueueEmpty:
                return
            prompt = json.loads(json.dumps(template))
            start = time.monotonic()
            entry = {"index": index, "client": client.client_id}
            try:
                set_image(prompt, await client.upload_image(path))
                result = await client.run(prompt)
                saved = [i for o in result.outputs.values() for i in o.get("images", []) if i["type"] == "output"]
                async with session.get(url + "/view", params={k: saved[0][k] for k in ("filename", "subfolder", "type")}) as r:
                    entry["output"] = np.asarray(Image.open(io.BytesIO(await r.read())).convert("RGB"))
                entry["prompt_id"] = result.prompt_id
                entry["ok"] = True
            except (ExecutionFailed, PromptRejected, RuntimeError, aiohttp.ClientError, asyncio.TimeoutError) as err:
                entry["ok"], entry["error"] = False, str(err) or type(err).__name__
            entry["latency_s"] = time.monotonic() - start
            results.append(entry)


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


async def run_load(url: str, pid: int, prompts: int, clients: int, simulations: int, work: Path, timeout: float) -> dict:
    from edit_agents.cli.client import ComfyClient
    from edit_agents.cli.workflow import load_workflow, to_api

    inputs = photos(prompts)
    paths = []
    for i, img in enumerate(inputs):
        paths.append(work / f"load_{i:03d}.png")
        Image.fromarray(img).save(paths[-1])
    async with aiohttp.ClientSession() as session:
        template = await to_api(load_workflow(ROOT / "workflows" / "photoagent_offline.json"), ComfyClient(url, session))
    mcts = next(n for n in template.values() if n["class_type"] == "EditAgentsMCTSPlanner")
    mcts["inputs"].update(simulations=simulations, max_steps=2)

    watch = MemoryWatch(pid)
    warm: list = []  # one prompt first, so the baseline includes what any first run loads
    warm_q: asyncio.Queue = asyncio.Queue()
    warm_q.put_nowait((-1, paths[0]))
    await client_worker(url, warm_q, template, warm, timeout)
    before = watch.rss_mib()
    jobs: asyncio.Queue = asyncio.Queue()
    for i, p in enumerate(paths):
        jobs.put_nowait((i, p))
    results: list = []
    with watch:
        t0 = time.monotonic()
        await asyncio.gather(*(client_worker(url, jobs, template, results, timeout) for _ in range(clients)))
        wall = time.monotonic() - t0
    await asyncio.sleep(1.0)
    after = watch.rss_mib()

    ok = [r for r in results if r["ok"]]
    mismatched = []
    for r in ok:
        own = inputs[r["index"]]
        if r["output"].shape != own.shape:
            mismatched.append(f"{r['index']}: size {r['output'].shape} for input {own.shape}")
            continue
        sims = [similarity(r["output"], other) if other.shape == own.shape else -1.0 for other in inputs]
        if int(np.argmax(sims)) != r["index"]:
            mismatched.append(f"{r['index']}: the output looks more like input {int(np.argmax(sims))}")
    latencies = [r["latency_s"] for r in results]
    return {
        "prompts": prompts, "clients": clients, "simulations": simulations, "completed": len(ok),
        "errors": [r["error"] for r in results if not r["ok"]],
        "lost": sorted(set(range(prompts)) - {r["index"] for r in results}),
        "mismatched": mismatched, "distinct_prompt_ids": len({r.get("prompt_id") for r in ok}),
        "wall_s": round(wall, 2), "throughput_per_min": round(60 * len(ok) / wall, 2),
        "latency_s": {"p50": round(percentile(latencies, 50), 2), "p90": round(percentile(latencies, 90), 2),
                      "p99": round(percentile(latencies, 99), 2), "max": round(max(latencies), 2),
                      "mean": round(statistics.mean(latencies), 2)},
        "server_rss_mib": {"before": round(before, 1), "peak": round(max(watch.samples or [before]), 1),
                           "after": round(after, 1)},
        "photo_sides": sorted({max(i.shape[:2]) for i in inputs}),
    }


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from edit_agents.cli.server import LocalServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--simulations", type=int, default=12, help="MCTS simulations per step (the workflow has 24)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--timeout", type=float, default=600.0)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, LocalServer() as server:
        figures = asyncio.run(run_load(server.url, server.proc.pid, args.prompts, args.clients, args.simulations,
                                       Path(tmp), args.timeout))
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0 if figures["completed"] == args.prompts and not figures["mismatched"] else 1


if __name__ == "__main__":
    sys.exit(main())
