"""`edit-agents batch --distributed`: each photo through a ComfyUI-Distributed master's ``/distributed/queue``.

ComfyUI-Distributed (the community's pack for many GPUs and machines) runs a whole workflow on one participant
when the workflow has a **Distributed Collector** with ``load_balance`` on: at each ``/distributed/queue`` the
master asks every enabled worker (``GET /prompt``) how many prompts it has, takes an idle one (round robin) or
else the one with the shortest queue, and sends it the part of the workflow above the collector (copying the
photo to workers it calls remote). The worker's collector posts the images back to the master as PNG; the master
runs what is below the collector (the save nodes) in a prompt of its own. So the results are in the **master's**
``/history`` and output folder, whichever worker did the work, and the worker's own prompt (found in its
``/history`` by the collector's job id) says whether the work went well.

This module puts a collector in front of every output node's IMAGE input, queues each photo on the master,
follows the master's prompt over its websocket, reads which worker ran it from the collector's inputs there, and
saves the outputs as ``batch`` does. What crosses from a worker to the master is images only, at 8 bits (PNG):
Save Photo on the master no longer sees Load Photo's PHOTO (bit depth, colour profile, EXIF), and output nodes
without an image (Trace View) run only for photos the master runs itself.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from ..agents.trace import HISTORY_KEY
from .client import ComfyClient, ExecutionFailed
from .main import (IMAGE_SUFFIXES, Manifest, Outcome, apply_arguments, check_image, file_part, print_table,
                   progress_line, still_to_do)
from .server import ServerError
from .workflow import WorkflowError, set_image

COLLECTOR = "DistributedCollector"
MASTER = "master"


@dataclass
class Cluster:
    """What the master's Distributed config says: its enabled workers and whether it computes itself."""
    master: str
    workers: dict[str, str] = field(default_factory=dict)  # worker id -> base URL
    names: dict[str, str] = field(default_factory=dict)  # worker id -> name
    delegate_only: bool = False  # the master only orchestrates

    def url(self, participant: str) -> str:
        return self.master if participant == MASTER else self.workers.get(participant, participant)

    def label(self, participant: str) -> str:
        if participant == MASTER:
            return f"master {self.master}"
        return f"worker '{self.names.get(participant, participant)}' ({self.url(participant)})"


def worker_url(worker: dict) -> str:
    """A worker's base URL from its config entry, as Distributed builds it (utils/network.build_worker_url)."""
    host = str(worker.get("host") or "127.0.0.1").strip()
    port = int(worker.get("port") or worker.get("listen_port") or 8188)
    if host.startswith(("http://", "https://")):
        return host.rstrip("/")
    secure = worker.get("type") == "cloud" or host.endswith(".proxy.runpod.net") or port == 443
    default = 443 if secure else 80
    return f"{'https' if secure else 'http'}://{host}{'' if port == default else f':{port}'}"


async def read_cluster(master: ComfyClient) -> Cluster:
    try:
        config = await master.get_json("/distributed/config")
    except aiohttp.ClientResponseError as err:
        raise ServerError(f"{master.base_url} has no ComfyUI-Distributed (GET /distributed/config: HTTP {err.status}); "
                          "--distributed needs the URL of a Distributed master") from None
    settings = config.get("settings") or {}
    cluster = Cluster(master.base_url, delegate_only=bool(settings.get("master_delegate_only")))
    for w in config.get("workers") or []:
        wid = str(w.get("id") or "").strip()
        if wid and w.get("enabled"):
            cluster.workers[wid] = worker_url(w)
            cluster.names[wid] = str(w.get("name") or wid)
    return cluster


def route_through_collectors(prompt: dict, object_info: dict) -> tuple[list[str], list[str]]:
    """Put a Distributed Collector (load_balance on) in front of every IMAGE input of an output node, in place.
    Returns (the collectors' ids, the output nodes that take no image: they stay behind on a worker)."""
    def output_type(link: list) -> str | None:
        src = prompt.get(str(link[0]))
        outputs = object_info.get(src["class_type"], {}).get("output", []) if src else []
        return outputs[link[1]] if isinstance(link[1], int) and link[1] < len(outputs) else None

    numeric = [int(k) for k in prompt if k.isdigit()]
    next_id = max(numeric, default=0) + 1
    collectors: dict[tuple[str, int], str] = {}
    imageless = []
    for node_id, node in list(prompt.items()):
        if not object_info.get(node["class_type"], {}).get("output_node") or node["class_type"] == COLLECTOR:
            continue
        fed = False
        for name, value in node["inputs"].items():
            if not (isinstance(value, list) and len(value) == 2 and output_type(value) == "IMAGE"):
                continue
            key = (str(value[0]), value[1])
            if key not in collectors:
                collectors[key] = str(next_id)
                prompt[str(next_id)] = {"class_type": COLLECTOR, "inputs": {"images": list(value), "load_balance": True},
                                        "_meta": {"title": "Distributed Collector (edit-agents batch --distributed)"}}
                next_id += 1
            node["inputs"][name] = [collectors[key], 0]
            fed = True
        if not fed:
            imageless.append(node_id)
    return list(collectors.values()), imageless


def _title(prompt: dict, node_id: str) -> str:
    node = prompt[node_id]
    return f"#{node_id} '{node.get('_meta', {}).get('title') or node['class_type']}'"


class WorkerLost(ConnectionError):
    pass


async def find_worker_prompt(session: aiohttp.ClientSession, url: str, job_ids: set[str],
                             wait: float = 15.0) -> tuple[str, dict] | None:
    """The worker's prompt for these collector job ids, from its /history: (prompt id, history entry). The
    worker's collector posts the images before the worker's prompt ends, so it may take a moment to appear."""
    deadline = time.monotonic() + wait
    while True:
        try:
            async with session.get(url + "/history", params={"max_items": "200"}) as r:
                r.raise_for_status()
                history = await r.json()
        except (aiohttp.ClientConnectionError, asyncio.TimeoutError) as err:
            raise WorkerLost(f"the worker at {url} stopped answering ({type(err).__name__})") from None
        for prompt_id, entry in history.items():
            nodes = (entry.get("prompt") or [None, None, {}])[2] or {}
            if any(n.get("class_type") == COLLECTOR and n.get("inputs", {}).get("multi_job_id") in job_ids
                   for n in nodes.values() if isinstance(n, dict)):
                return prompt_id, entry
        if time.monotonic() > deadline:
            return None
        await asyncio.sleep(0.2)


async def answers(session: aiohttp.ClientSession, url: str) -> bool:
    try:
        async with session.get(url + "/prompt", timeout=aiohttp.ClientTimeout(total=5)) as r:
            return r.status == 200
    except (aiohttp.ClientError, asyncio.TimeoutError):
        return False


def _error_message(entry: dict) -> dict | None:
    for kind, data in (entry.get("status") or {}).get("messages", []):
        if kind == "execution_error":
            return data
    return None


async def queue_and_wait(master: ComfyClient, prompt: dict, cluster: Cluster) -> tuple[str, dict | None]:
    """POST /distributed/queue and follow the master's prompt to its end (its /history written): (prompt id, its
    execution_error or None). Each call has its own client id, so several photos can be in flight on one master."""
    client_id = uuid.uuid4().hex
    body = {"prompt": prompt, "client_id": client_id, "enabled_worker_ids": list(cluster.workers)}
    ws_url = master.base_url.replace("http", "ws", 1) + f"/ws?clientId={client_id}"
    async with master.session.ws_connect(ws_url, heartbeat=30) as ws:
        async with master.session.post(master.base_url + "/distributed/queue", json=body) as r:
            answer = await r.json(content_type=None)
            if r.status != 200:
                err = answer.get("error") or answer.get("errors") if isinstance(answer, dict) else answer
                gone = [url for url in cluster.workers.values() if not await answers(master.session, url)]
                if gone:  # it probed the worker, which then went away before it took the prompt
                    raise WorkerLost(f"the master could not hand the photo to a worker ({err}); "
                                     f"{', '.join(gone)} does not answer")
                raise RuntimeError(f"the master refused the photo (HTTP {r.status}): {err}")
        prompt_id, failure = answer["prompt_id"], None
        while True:
            msg = await ws.receive(timeout=master.timeout)
            if msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                raise ConnectionError(f"the websocket to the master {master.base_url} closed while prompt {prompt_id} ran")
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            event = json.loads(msg.data)
            data = event.get("data", {})
            if data.get("prompt_id") != prompt_id:
                continue
            if event["type"] == "execution_error":
                failure = data  # "executing" with node None still follows, once /history has the prompt
            if event["type"] == "execution_interrupted":
                raise RuntimeError(f"prompt {prompt_id} was interrupted on the master")
            if event["type"] == "executing" and data.get("node") is None:
                return prompt_id, failure


def ran_on(master_prompt: dict) -> tuple[str, set[str]]:
    """Who ran a photo, from the master's copy of the prompt: the collectors' enabled_worker_ids (one worker
    under load balancing; none when the master ran it itself) and their job ids."""
    participants, jobs = set(), set()
    for node in master_prompt.values():
        if isinstance(node, dict) and node.get("class_type") == COLLECTOR:
            inputs = node.get("inputs", {})
            jobs.add(str(inputs.get("multi_job_id", "")))
            try:
                participants.update(str(w) for w in json.loads(inputs.get("enabled_worker_ids") or "[]"))
            except (TypeError, ValueError):
                pass
    return (sorted(participants)[0] if participants else MASTER), jobs


async def run_photo(master: ComfyClient, cluster: Cluster, template: dict, image: Path, out_dir: Path,
                    args) -> Outcome:
    start = time.monotonic()
    stem = image.stem
    outcome = Outcome(image, ok=False, server=cluster.master)
    session = master.session
    prompt = json.loads(json.dumps(template))
    try:
        check_image(image)
        set_image(prompt, await master.upload_image(image, name=f"{stem}{image.suffix.lower()}"))
        apply_arguments(prompt, args)
        route_through_collectors(prompt, await master.object_info())
        prompt_id, failure = await queue_and_wait(master, prompt, cluster)
        history = (await master.get_json(f"/history/{prompt_id}")).get(prompt_id, {})
        participant, jobs = ran_on((history.get("prompt") or [None, None, {}])[2] or {})
        outcome.server = cluster.url(participant)
        worker_entry = None  # the worker's own prompt: its error if the photo failed, else deleted once saved
        if participant != MASTER and (failure or not args.keep_history):
            try:
                worker_entry = await find_worker_prompt(session, outcome.server, jobs, wait=2.0 if failure else 15.0)
            except WorkerLost:
                pass  # the results, if any, are on the master
            worker_error = _error_message(worker_entry[1]) if worker_entry and failure else None
            if worker_error:  # the root cause: the master only saw no image come back
                failure = {**worker_error, "exception_message": f"(on {cluster.label(participant)}) "
                           + str(worker_error.get("exception_message", ""))}
            elif failure and not worker_entry and not await answers(session, outcome.server):
                raise WorkerLost(f"{cluster.label(participant)} stopped answering while it ran {image.name}")
        if failure:
            raise ExecutionFailed(failure)
        outputs = history.get("outputs", {})
        out_dir.mkdir(parents=True, exist_ok=True)
        for node_id, out in outputs.items():
            for i, info in enumerate(out.get("images", [])):
                if info.get("type") != "output":
                    continue
                dest = out_dir / f"{stem}_{file_part(node_id)}_{i}{Path(info['filename']).suffix or '.png'}"
                outcome.files.append(await master.download(info, dest))
        traces = [(node_id, trace) for node_id, out in outputs.items() for trace in out.get(HISTORY_KEY, [])]
        for node_id, trace in traces:
            dest = out_dir / (f"{stem}_{file_part(node_id)}.trace.json" if len(traces) > 1 else f"{stem}.trace.json")
            dest.write_text(json.dumps(trace, indent=1))
            outcome.files.append(dest)
            outcome.summary = trace.get("summary", {})
        if not outcome.files:
            raise RuntimeError(f"no saved image came back from {cluster.label(participant)}")
        outcome.ok = True
        if not args.keep_history:  # the outputs are on disk now: keep both servers' memory flat
            await master.forget(prompt_id)
            if worker_entry:
                await ComfyClient(outcome.server, session).forget(worker_entry[0])
    except ExecutionFailed as err:
        out_dir.mkdir(parents=True, exist_ok=True)
        tb = out_dir / f"error-{stem}.txt"
        tb.write_text(f"{err}\n\n{err.traceback}", encoding="utf-8")
        outcome.error = f"{err}\n  traceback saved to {tb}"
    except WorkerLost as err:
        outcome.error, outcome.server_lost = str(err), True
    except (aiohttp.ClientConnectionError, ConnectionError) as err:
        outcome.error = f"lost the master at {master.base_url}: {err or type(err).__name__}"
    except (ValueError, WorkflowError, RuntimeError, aiohttp.ClientError, asyncio.TimeoutError) as err:
        outcome.error = str(err) or type(err).__name__
    outcome.seconds = time.monotonic() - start
    return outcome


async def distributed_batch(master: ComfyClient, template: dict, out_dir: Path, args) -> int:
    """Every photo in --images through the master's /distributed/queue, a few per participant in flight so each
    has its next photo ready; Distributed picks the participant of each. A photo whose worker stopped answering
    is queued again (Distributed no longer offers that worker)."""
    images = sorted(p for p in Path(args.images).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        print(f"error: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in {args.images}", file=sys.stderr)
        return 2
    cluster = await read_cluster(master)
    probe = json.loads(json.dumps(template))
    collectors, imageless = route_through_collectors(probe, await master.object_info())
    if not collectors:
        raise WorkflowError("--distributed needs an output node that takes an IMAGE (Save Photo, Save Image): "
                            "Distributed brings only images back from a worker")
    participants = len(cluster.workers) + (0 if cluster.delegate_only and cluster.workers else 1)
    print(f"Distributed master {cluster.master}: {len(cluster.workers)} enabled worker(s)"
          + (", the master only orchestrates" if cluster.delegate_only and cluster.workers else
             ", the master computes too") + "; results are saved by the master", file=sys.stderr)
    if not cluster.workers:
        print("warning: the master's Distributed config enables no worker: every photo runs on the master",
              file=sys.stderr)
    print("note: a worker sends its result to the master as an 8-bit PNG, which the master saves without the photo's "
          "bit depth, colour profile and EXIF" + (f"; {', '.join(_title(probe, n) for n in imageless)} run(s) only "
                                                   "for photos the master runs itself" if imageless else ""),
          file=sys.stderr)
    manifest = Manifest(out_dir, str(args.workflow))
    index = {image: i for i, image in enumerate(images)}
    outcomes: dict[Path, Outcome] = {}

    def report(o: Outcome) -> None:
        outcomes[o.source] = o
        print(progress_line(o, index[o.source], len(images), show_server=True), file=sys.stderr)

    todo = still_to_do(images, manifest, report)
    slots = asyncio.Semaphore(2 * participants)

    async def one(image: Path) -> None:
        async with slots:
            for _ in range(len(cluster.workers) + 1):  # a lost worker's photo goes to another participant
                o = await run_photo(master, cluster, template, image, out_dir, args)
                if not o.server_lost:
                    break
                print(f"{o.error}; {image.name} is queued again", file=sys.stderr)
            manifest.record(o)
            report(o)

    await asyncio.gather(*(one(image) for image in todo))
    ordered = [outcomes[image] for image in images]
    print_table(ordered)
    print("ran on                          photos")
    for url in [cluster.master, *cluster.workers.values()]:
        ran = sum(1 for o in ordered if o.server == url and o.ok and not o.skipped)
        print(f"{url:<30}  {ran:6d}" + ("  (master)" if url == cluster.master else ""))
    failed = sum(not o.ok for o in ordered)
    print(f"{len(ordered) - failed} ok ({sum(o.skipped for o in ordered)} done in an earlier run), {failed} failed")
    return 1 if failed else 0
