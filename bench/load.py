"""Load: many prompts of the offline workflow from several concurrent clients against one real server.

Every prompt must complete (or report a clear error) and none may be lost; each output must be the edit
of its own input. Prints throughput, latency percentiles and the server's memory (before, peak, after).

  .venv/bin/python bench/load.py                       # 50 prompts from 4 clients, mixed photo sizes
  .venv/bin/python bench/load.py --prompts 8 --json out.json

Two more measurements drive the `edit-agents batch` CLI itself (as a subprocess, the way a user runs it)
against servers this script starts; either flag (or both) replaces the default mode above, prints a table
and writes it to bench/results/load.txt (--results) under a header line (command, date, machine):

  --servers-scaling N   N photos through an LLM-bound workflow (workflows/imagagent.json: planner, executor,
                        three experts and an aggregator, every Brain on the scripted OpenAI-compatible endpoint
                        of tests/support/llm_server.py answering valid JSON after --llm-latency seconds), first with
                        `--server A`, then with `--server A --server B`. A ComfyUI server runs one prompt at a
                        time, so while the work is waiting on the LLM two servers should nearly double the
                        photos/min: the ratio should be at least 1.8. Each run gets photos of its own (no cache
                        hits) after a warm-up photo on each server.
  --history N           N prompts (at least 500 for the claim) of workflows/photoagent_offline.json (a traced
                        MCTS on small photos, --history-simulations per step) through one fresh server per
                        mode, twice at once: the default (the CLI deletes each prompt from /history once its
                        outputs are saved) and --keep-history. The server's RSS is read after a warm-up prompt,
                        after every 100 finished prompts and at the end; then the size of GET /history.
  --server-threads N    OMP_NUM_THREADS/MKL_NUM_THREADS of the servers started for the two above (default: as the
                        environment has it for --servers-scaling, cores/2 for --history, whose two servers run at
                        once: with the default pools, two CPU servers on the same 2 cores made each prompt ~20x
                        slower, torch's OpenMP threads spinning against each other).

  .venv/bin/python bench/load.py --servers-scaling 20 --history 500     # both, about 5 minutes on 2 cores
  .venv/bin/python bench/load.py --servers-scaling 12 --llm-latency 0.5
  .venv/bin/python bench/load.py --history 200 --results /tmp/load.txt
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


# ---------------------------------------------------------------------------------------------------------
# The CLI's batch: scaling over servers, and the server's memory over a long batch
# ---------------------------------------------------------------------------------------------------------

CLI = [sys.executable, "-m", "edit_agents.cli.main"]
CLOSED_LOOP_ROUNDS = 7  # sequential LLM round trips per photo in the script below: planner + 2 x (executor,
                        # the three experts at once, aggregator)
LINE = "[{}/{}]"


def small_photos(n: int, side: int, first: int = 0, dim: bool = False) -> list[np.ndarray]:
    """n distinct small photos (longest side ``side``): crops of scikit-image's photos, each its own offset;
    ``dim``: under-exposed, flat and a little noisy, so that PhotoAgent finds defects and searches."""
    from skimage import data, transform

    sources = [data.astronaut(), data.chelsea(), data.coffee(), data.rocket()]
    out = []
    for i in range(first, first + n):
        src = sources[i % len(sources)]
        h, w = src.shape[:2]
        k = i // len(sources)
        crop = src[(k * 13) % (h // 3):, (k * 29) % (w // 3):]
        crop = crop[: max(16, crop.shape[0] * 3 // 4), : max(16, crop.shape[1] * 3 // 4)]
        scale = side / max(crop.shape[:2])
        size = (max(8, round(crop.shape[0] * scale)), max(8, round(crop.shape[1] * scale)))
        img = transform.resize(crop, size, anti_aliasing=True)
        if dim:
            noise = np.random.default_rng(i).normal(0, 0.03, img.shape)
            img = np.clip(img * 0.35 + 0.08 + noise, 0, 1)
        out.append((img * 255).astype(np.uint8))
    return out


def write_photos(folder: Path, photos_: list[np.ndarray], prefix: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i, img in enumerate(photos_):
        Image.fromarray(img).save(folder / f"{prefix}{i:04d}.png")
    return folder


def scripted_answer(seen):
    """Valid JSON for each role of the Closed Loop (IMAGAgent): two subtasks, each accepted at the first try."""
    from llm_server import Reply

    role = seen.role
    if role == "planner":
        return Reply({"subtasks": [{"goal": "warm the light", "tool": "temperature_tint", "rationale": "asked"},
                                   {"goal": "add punch", "tool": "contrast", "depends_on": [0]}], "notes": ""})
    if role == "executor":
        if "warm" in seen.user_text().split("\n", 1)[0]:
            return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.45, "tint": 0.0}}]})
        return Reply({"steps": [{"tool": "contrast", "params": {"amount": 0.33}}]})
    if role == "expert":
        return Reply({"score": 8, "positive": "done as asked", "negative": ""})
    if role == "aggregator":
        return Reply({"positive": "done as asked", "negative": ""})
    return Reply(status=500, body={"error": {"message": f"no scripted answer for role {role!r}"}})


async def api_workflow(url: str, name: str) -> dict:
    from edit_agents.cli.client import ComfyClient
    from edit_agents.cli.workflow import load_workflow, to_api

    async with aiohttp.ClientSession() as session:
        return await to_api(load_workflow(ROOT / "workflows" / name), ComfyClient(url, session))


def start_servers(base: Path, n: int, threads: int = 0) -> list:
    """n LocalServers (CPU), started at once (each takes ~10 s to import ComfyUI); ``threads``: their torch/OpenMP
    and MKL threads (0: the environment's, i.e. one per core in each server)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

    from edit_agents.cli.server import LocalServer

    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)} if threads else None
    servers = [LocalServer(base_dir=base / f"server{i}", cpu=True, env=env) for i in range(n)]
    with ThreadPoolExecutor(n) as pool:
        list(pool.map(lambda s: s.start(), servers))
    return servers


class Batch:
    """`edit-agents batch` as a subprocess; its stderr is read as it comes, each finished photo timestamped
    (``on_done(count)`` is called with the number finished so far)."""

    def __init__(self, workflow: Path, images: Path, out: Path, urls: list[str], extra: tuple[str, ...] = (),
                 on_done=None):
        self.cmd = [*CLI, "batch", str(workflow), "--images", str(images), "--out", str(out), "--quiet",
                    "--timeout", "300", *[a for u in urls for a in ("--server", u)], *extra]
        self.out, self.on_done = out, on_done
        self.done_at: list[float] = []
        self.failed: list[str] = []
        self.stderr: list[str] = []
        self.stdout = ""

    def start(self) -> "Batch":
        import subprocess

        self.t0 = time.monotonic()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err.start()
        self._out.start()
        return self

    def _read_stdout(self) -> None:
        self.stdout = self.proc.stdout.read()

    def _read_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip("\n"))
            if line.startswith("[") and "/" in line.split("]", 1)[0]:
                self.done_at.append(time.monotonic())
                if ": ok" not in line:
                    self.failed.append(line.strip())
                if self.on_done:
                    self.on_done(len(self.done_at))

    def wait(self, timeout: float) -> "Batch":
        self.proc.wait(timeout=timeout)
        self._err.join(timeout=10)
        self._out.join(timeout=10)
        self.wall_s = time.monotonic() - self.t0
        return self

    def manifest(self) -> dict:
        return json.loads((self.out / "batch.json").read_text())["photos"]


def peak_concurrency(seen: list) -> int:
    edges = sorted([(s.start, 1) for s in seen] + [(s.end, -1) for s in seen], key=lambda e: (e[0], e[1]))
    level = peak = 0
    for _, step in edges:
        level += step
        peak = max(peak, level)
    return peak


def measure_scaling(n: int, latency: float, work: Path, timeout: float, threads: int = 0) -> dict:
    """photos/min of `edit-agents batch` on an LLM-bound workflow with one server, then with two."""
    sys.path.insert(0, str(ROOT / "tests" / "support"))
    from llm_server import ScriptedLLM

    llm = ScriptedLLM().start()
    servers = start_servers(work / "scaling", 2, threads)
    try:
        template = asyncio.run(api_workflow(servers[0].url, "imagagent.json"))
        brains = [node for node in template.values() if node["class_type"] == "EditAgentsBrain"]
        for node in brains:
            node["inputs"].update(provider="custom", model="scripted-vlm", base_url=llm.url, timeout=60.0)
        workflow = work / "imagagent_scripted.json"
        workflow.write_text(json.dumps(template, indent=1))
        side = 192
        warm = write_photos(work / "scaling_warm", small_photos(2, side, first=1000), "warm")
        llm.reset(responder=scripted_answer, latency=latency)
        Batch(workflow, warm, work / "out_warm", [s.url for s in servers]).start().wait(timeout)
        runs = {}
        for k in (1, 2):
            images = write_photos(work / f"scaling_in{k}", small_photos(n, side, first=k * n), f"s{k}_")
            llm.reset(responder=scripted_answer, latency=latency)
            urls = [s.url for s in servers[:k]]
            b = Batch(workflow, images, work / f"out_scaling{k}", urls).start().wait(timeout)
            seen = list(llm.seen)
            photos_ = b.manifest()
            ok = [e for e in photos_.values() if e["status"] == "ok"]
            first_call = min((s.start for s in seen), default=b.t0)
            span = (b.done_at[-1] if b.done_at else time.monotonic()) - first_call
            per_server = {}
            for url in urls:
                mine = [e for e in ok if e["server"] == url]
                per_server[url] = {"photos": len(mine), "busy_s": round(sum(e["seconds"] for e in mine), 1)}
            runs[k] = {
                "servers": k, "photos": n, "ok": len(ok), "failed": b.failed[:3], "returncode": b.proc.returncode,
                "cli_wall_s": round(b.wall_s, 2), "span_s": round(span, 2),
                "photos_per_min_wall": round(60 * len(ok) / b.wall_s, 2),
                "photos_per_min_span": round(60 * len(ok) / span, 2) if span > 0 else float("nan"),
                "photo_s_mean": round(statistics.mean(e["seconds"] for e in ok), 2) if ok else float("nan"),
                "llm_calls": len(seen), "llm_calls_per_photo": round(len(seen) / max(1, len(ok)), 1),
                "llm_errors": sum(1 for s in seen if s.role not in ("planner", "executor", "expert", "aggregator")),
                "llm_peak_in_flight": peak_concurrency(seen) if seen else 0,
                "per_server": per_server,
            }
        return {"photos": n, "llm_latency_s": latency, "photo_side": side, "brains": len(brains), "threads": threads,
                "llm_wait_per_photo_s": round(CLOSED_LOOP_ROUNDS * latency, 2), "runs": runs,
                "ratio_wall": round(runs[2]["photos_per_min_wall"] / runs[1]["photos_per_min_wall"], 2),
                "ratio_span": round(runs[2]["photos_per_min_span"] / runs[1]["photos_per_min_span"], 2)}
    finally:
        for s in servers:
            s.stop()
        llm.stop()


def history_size(url: str) -> tuple[int, int]:
    import urllib.request

    with urllib.request.urlopen(url + "/history", timeout=120) as r:
        body = r.read()
    return len(json.loads(body)), len(body)


def measure_history(n: int, simulations: int, work: Path, timeout: float, threads: int) -> dict:
    """The server's RSS over n prompts of `edit-agents batch`, with the history deleted (the default) and
    kept (--keep-history): one fresh server per mode, both batches at once."""
    servers = start_servers(work / "history", 2, threads)
    modes = {"deleted (default)": (servers[0], ()), "kept (--keep-history)": (servers[1], ("--keep-history",))}
    try:
        template = asyncio.run(api_workflow(servers[0].url, "photoagent_offline.json"))
        mcts = next(node for node in template.values() if node["class_type"] == "EditAgentsMCTSPlanner")
        mcts["inputs"].update(simulations=simulations, max_steps=2)
        workflow = work / "photoagent_offline_small.json"
        workflow.write_text(json.dumps(template, indent=1))
        side = 128
        images = write_photos(work / "history_in", small_photos(n, side, dim=True), "h")
        warm = write_photos(work / "history_warm", small_photos(1, side, first=n, dim=True), "warm")
        results, batches, watches = {}, {}, {}
        for name, (server, extra) in modes.items():
            # one prompt first, so the baseline holds what any first run loads (deleted from /history after)
            Batch(workflow, warm, work / f"out_warm_{len(results)}", [server.url]).start().wait(timeout)
            watch = MemoryWatch(server.proc.pid, every_s=0.5)
            series = [(0, round(watch.rss_mib(), 1))]
            results[name] = {"server": server.url, "series": series}

            def sample(count: int, watch=watch, series=series) -> None:
                if count % 100 == 0 and count < n:
                    series.append((count, round(watch.rss_mib(), 1)))
            watches[name] = watch.__enter__()
            batches[name] = Batch(workflow, images, work / f"out_history_{len(results)}", [server.url], extra,
                                  on_done=sample)
        for b in batches.values():
            b.start()
        for name, b in batches.items():
            b.wait(timeout)
            watch = watches[name]
            watch.__exit__(None, None, None)
            r = results[name]
            r["series"].append((len(b.done_at), round(watch.rss_mib(), 1)))
            r["peak_mib"] = round(max(watch.samples), 1)
            r["ok"] = sum(e["status"] == "ok" for e in b.manifest().values())
            r["failed"] = b.failed[:3]
            r["returncode"] = b.proc.returncode
            r["wall_s"] = round(b.wall_s, 1)
            r["prompts_per_s"] = round(len(b.done_at) / b.wall_s, 2)
        for name, (server, _) in modes.items():
            r = results[name]
            r["history_len"], r["history_bytes"] = history_size(server.url)
            r["rss_after_get_history_mib"] = round(MemoryWatch(server.proc.pid).rss_mib(), 1)
            start, end = r["series"][0][1], r["series"][-1][1]
            r["growth_mib"] = round(end - start, 1)
            r["growth_kib_per_prompt"] = round(1024 * (end - start) / max(1, r["series"][-1][0]), 1)
        return {"prompts": n, "simulations": simulations, "photo_side": side, "threads": threads, "modes": results}
    finally:
        for s in servers:
            s.stop()


def machine() -> str:
    import os
    import platform

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor() or "?")
    mem = next((int(line.split()[1]) / 1024 ** 2 for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal")), float("nan"))
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    return f"{platform.node()}, {os.cpu_count()} x {cpu}, {mem:.0f} GiB RAM, Python {platform.python_version()}, " \
           f"load average at start {load}"


def scaling_table(f: dict) -> list[str]:
    rows = [f"Scaling over servers: {f['photos']} photos ({f['photo_side']} px) of workflows/imagagent.json, "
            f"{f['brains']} Brains on the scripted endpoint, {f['llm_latency_s']} s per call "
            f"(>= {f['llm_wait_per_photo_s']} s of LLM wait per photo); server threads: "
            f"{f['threads'] or 'as the environment has it'}",
            "servers  ok  CLI wall s  photos/min (wall)  span s  photos/min (span)  s/photo  LLM calls  "
            "peak in flight  per server (photos, busy s)"]
    for k, r in f["runs"].items():
        per = ", ".join(f"{v['photos']}/{v['busy_s']}" for v in r["per_server"].values())
        rows.append(f"{k:7d}  {r['ok']:2d}  {r['cli_wall_s']:10.1f}  {r['photos_per_min_wall']:17.1f}  "
                    f"{r['span_s']:6.1f}  {r['photos_per_min_span']:17.1f}  {r['photo_s_mean']:7.2f}  "
                    f"{r['llm_calls']:9d}  {r['llm_peak_in_flight']:14d}  {per}")
        if r["failed"]:
            rows.append(f"         failures: {r['failed']}")
    verdict = "meets" if f["ratio_wall"] >= 1.8 else "BELOW"
    rows.append(f"ratio 2 servers / 1 server: {f['ratio_wall']:.2f}x (whole CLI run), {f['ratio_span']:.2f}x "
                f"(first LLM call to last photo): {verdict} the 1.8x target")
    return rows


def history_table(f: dict) -> list[str]:
    rows = [f"Server memory over a long batch: {f['prompts']} prompts of workflows/photoagent_offline.json "
            f"({f['photo_side']} px photos, {f['simulations']} simulations per step, 2 steps), one server per mode, "
            f"both batches at once, {f['threads']} torch/OpenMP thread(s) per server"]
    names = list(f["modes"])
    counts = [c for c, _ in f["modes"][names[0]]["series"]]
    rows.append("history              " + "  ".join(f"{('start' if c == 0 else str(c)):>7}" for c in counts)
                + "     peak  growth  KiB/prompt  /history entries  /history bytes  prompts/s")
    for name in names:
        r = f["modes"][name]
        rss = "  ".join(f"{v:7.1f}" for _, v in r["series"])
        rows.append(f"{name:<21}{rss}  {r['peak_mib']:7.1f}  {r['growth_mib']:6.1f}  "
                    f"{r['growth_kib_per_prompt']:10.1f}  {r['history_len']:16d}  {r['history_bytes']:14d}  "
                    f"{r['prompts_per_s']:9.2f}")
        if r["failed"] or r["ok"] != f["prompts"]:
            rows.append(f"   {r['ok']} ok; failures: {r['failed']}")
    rows.append("RSS in MiB (VmRSS of the ComfyUI process) after the warm-up prompt (start), after every 100 finished "
                "prompts and at the end (before GET /history).")
    for name in names:
        series = f["modes"][name]["series"]
        later = [(c, v) for c, v in series if c >= 100]
        if len(later) >= 2 and later[-1][0] > later[0][0]:
            (c0, v0), (c1, v1) = later[0], later[-1]
            entry = f["modes"][name]["history_bytes"] / max(1, f["modes"][name]["history_len"])
            rows.append(f"{name}: {v1 - v0:+.1f} MiB from prompt {c0} to {c1} "
                        f"({1024 * (v1 - v0) / (c1 - c0):.1f} KiB per prompt)"
                        + (f"; {entry / 1000:.1f} KB of JSON per /history entry" if f["modes"][name]["history_len"]
                           else ""))
    rows.append("after GET /history: " + ", ".join(f"{n} {f['modes'][n]['rss_after_get_history_mib']} MiB"
                                                   for n in names))
    return rows


def run_cli_benchmarks(args, argv: list[str] | None) -> int:
    import datetime
    import os
    import shlex
    import tempfile

    started = time.monotonic()
    header = (f"# {shlex.join(['.venv/bin/python', 'bench/load.py', *(sys.argv[1:] if argv is None else argv)])}  |  "
              f"{datetime.datetime.now().astimezone().isoformat(timespec='seconds')}  |  {machine()}")
    sections, figures, ok = [], {}, True
    with tempfile.TemporaryDirectory(prefix="edit-agents-load-") as tmp:
        if args.servers_scaling:
            f = figures["scaling"] = measure_scaling(args.servers_scaling, args.llm_latency, Path(tmp), args.timeout,
                                                     args.server_threads)
            sections.append(scaling_table(f))
            print("\n".join(sections[-1]), flush=True)
            ok &= all(r["ok"] == r["photos"] for r in f["runs"].values())
        if args.history:
            threads = args.server_threads or max(1, (os.cpu_count() or 2) // 2)  # two servers at once
            f = figures["history"] = measure_history(args.history, args.history_simulations, Path(tmp), args.timeout,
                                                     threads)
            sections.append(history_table(f))
            print("\n".join(sections[-1]), flush=True)
            ok &= all(r["ok"] == args.history for r in f["modes"].values())
    footer = f"(whole benchmark: {time.monotonic() - started:.0f} s)"
    text = "\n\n".join([header, *("\n".join(s) for s in sections), footer]) + "\n"
    print(footer)
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(text)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    import tempfile

    from edit_agents.cli.server import LocalServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prompts", type=int, default=50)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--simulations", type=int, default=12, help="MCTS simulations per step (the workflow has 24)")
    parser.add_argument("--json", help="also write the figures here")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--servers-scaling", type=int, metavar="N",
                        help="photos/min of `edit-agents batch` on N photos of an LLM-bound workflow, 1 then 2 servers")
    parser.add_argument("--llm-latency", type=float, default=0.4, help="seconds the scripted endpoint takes per call")
    parser.add_argument("--history", type=int, metavar="N",
                        help="server RSS over N prompts of `edit-agents batch`, history deleted vs --keep-history")
    parser.add_argument("--history-simulations", type=int, default=4, help="MCTS simulations per step there")
    parser.add_argument("--server-threads", type=int, default=0,
                        help="OMP_NUM_THREADS/MKL_NUM_THREADS of the servers the CLI measurements start (0: as the "
                             "environment has it for --servers-scaling, cores/2 for --history)")
    parser.add_argument("--results", default=str(ROOT / "bench" / "results" / "load.txt"),
                        help="where --servers-scaling/--history write their table ('' for nowhere)")
    args = parser.parse_args(argv)
    if args.servers_scaling or args.history:
        return run_cli_benchmarks(args, argv)
    with tempfile.TemporaryDirectory() as tmp, LocalServer() as server:
        figures = asyncio.run(run_load(server.url, server.proc.pid, args.prompts, args.clients, args.simulations,
                                       Path(tmp), args.timeout))
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0 if figures["completed"] == args.prompts and not figures["mismatched"] else 1


if __name__ == "__main__":
    sys.exit(main())
