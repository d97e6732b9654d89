"""Many GPUs through the ecosystem's engine: ComfyUI-Distributed 1.4.4 with the pack, on real servers (CPU).

A master and two workers on loopback, each a ComfyUI (the one `make setup` prepared) loading the pack and
Distributed. Distributed is no part of the managed ComfyUI's custom_nodes (the other tests must not load it):
`make setup` unpacks it into .setup/ComfyUI-Distributed, and each server here loads a copy of it through an
extra-model-paths file with a ``custom_nodes:`` entry. A copy, not a link: Distributed keeps its config
(gpu_config.json) in its own folder, so a link would write this session's workers into everyone's copy.

Distributed is configured as its panel does, through the master's API: two workers of type "remote" (each server
here has its own input folder, as on other machines, so Distributed copies each photo to the worker that runs it)
and the master as orchestrator only (``master_delegate_only``), so the photos go to the workers.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from helpers import PACK_ROOT, WORKFLOWS

pytestmark = pytest.mark.server

DISTRIBUTED = Path(os.environ.get("COMFYUI_DISTRIBUTED_DIR") or PACK_ROOT / ".setup" / "ComfyUI-Distributed")
CLI = str(Path(sys.executable).parent / "edit-agents")
OFFLINE = WORKFLOWS / "photoagent_offline.json"
PLANNER = "MCTS Planner (PhotoAgent)"
SMALL = [f"{PLANNER}.simulations=6", f"{PLANNER}.max_steps=1", f"{PLANNER}.preview_side=64"]  # a second a photo
WORKER_TIMEOUT_S = 3  # how long the master waits for a silent worker (Distributed's default: 60 s)


def sets(*settings: str) -> list[str]:
    return [arg for s in settings for arg in ("--set", s)]


def cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)


def call(url: str, body: dict | None = None):
    request = urllib.request.Request(url, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as r:
        return json.load(r)


def history(server) -> dict:
    return call(server.url + "/history")


def collector_jobs(entry: dict) -> set[str]:
    """The job ids of the Distributed Collectors in a /history entry's prompt."""
    return {n["inputs"]["multi_job_id"] for n in entry["prompt"][2].values()
            if n["class_type"] == "DistributedCollector" and n["inputs"].get("multi_job_id")}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """{"master": LocalServer, "w1": ..., "w2": ...}, started together, Distributed configured on the master."""
    from edit_agents.cli.server import LocalServer

    if not (DISTRIBUTED / "__init__.py").exists():
        pytest.fail(f"ComfyUI-Distributed is not set up: no {DISTRIBUTED}. Run `make setup` (scripts/setup.py's "
                    "ensure_distributed unpacks COMFYUI_DISTRIBUTED_SOURCE, by default "
                    "../shared/comfyui/ComfyUI-Distributed-1.4.4.tar.gz), or set COMFYUI_DISTRIBUTED_DIR")
    base = tmp_path_factory.mktemp("distributed")
    shutil.copytree(DISTRIBUTED, base / "custom_nodes" / "ComfyUI-Distributed",
                    ignore=shutil.ignore_patterns("__pycache__", "gpu_config.json", "tests", ".git"))
    extra = base / "extra_model_paths.yaml"
    extra.write_text(f"distributed:\n    custom_nodes: {base / 'custom_nodes'}\n")
    # three CPU servers share this machine's cores; the workers are told they are workers, as Distributed's own
    # launcher does (COMFYUI_IS_WORKER: no auto-launch of workers from a worker)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    servers = {name: LocalServer(base_dir=base / name, extra_args=("--extra-model-paths-config", str(extra)),
                                 env={**env, **({"COMFYUI_IS_WORKER": "1"} if name != "master" else {})})
               for name in ("master", "w1", "w2")}
    errors = []

    def start(server):
        try:
            server.start()
        except Exception as err:  # noqa: BLE001 - reported below, with every server stopped
            errors.append(err)

    threads = [threading.Thread(target=start, args=(s,)) for s in servers.values()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    try:
        if errors:
            pytest.fail(f"a server did not start: {errors[0]}")
        master = servers["master"].url
        for name in ("w1", "w2"):
            call(master + "/distributed/config/update_worker",
                 {"worker_id": name, "name": f"worker {name}", "host": "127.0.0.1", "port": servers[name].port,
                  "cuda_device": None, "enabled": True, "type": "remote"})
        call(master + "/distributed/config/update_setting", {"key": "master_delegate_only", "value": True})
        call(master + "/distributed/config", {"worker_timeout_seconds": WORKER_TIMEOUT_S})
        config = call(master + "/distributed/config")
        assert [(w["id"], w["port"], w["enabled"]) for w in config["workers"]] == [
            ("w1", servers["w1"].port, True), ("w2", servers["w2"].port, True)]
        yield servers
    finally:
        for server in servers.values():
            server.stop()


@pytest.fixture(scope="module")
def small_photos(tmp_path_factory, photos) -> Path:
    folder = tmp_path_factory.mktemp("photos")
    for name in ("astronaut", "chelsea", "coffee", "rocket"):
        im = Image.fromarray((photos[name] * 255).round().astype(np.uint8)).convert("RGB")
        im.resize((96, round(96 * im.height / im.width)), Image.LANCZOS).save(folder / f"{name}.png")
    return folder


def test_a_shipped_workflow_runs_unchanged_on_a_worker(cluster, small_photos, tmp_path):
    """A worker is a ComfyUI with both packs: the shipped workflow, as it is, runs there (Save Photo and the
    trace included). Through the master's /distributed/queue the same workflow, having none of Distributed's
    nodes, is not spread at all: the master runs it itself (worker_count 0). Hence `batch --distributed`."""
    from edit_agents.cli.workflow import apply_settings, set_image, ui_to_api

    worker, master = cluster["w1"], cluster["master"]
    out = tmp_path / "out"
    r = cli("run", str(OFFLINE), "--image", str(small_photos / "chelsea.png"), "--out", str(out),
            "--server", worker.url, "--quiet", *sets(*SMALL))
    assert r.returncode == 0, r.stdout + r.stderr
    assert Image.open(out / "chelsea_5_0.png").size == Image.open(small_photos / "chelsea.png").size
    assert json.loads((out / "trace.json").read_text())["summary"]["steps"] <= 1
    ran = [e for e in history(worker).values() if e["status"]["status_str"] == "success"]
    assert any(n["class_type"] == "EditAgentsSavePhoto" for e in ran for n in e["prompt"][2].values())

    prompt = ui_to_api(json.loads(OFFLINE.read_text()), call(master.url + "/object_info"))
    assert not [n for n in prompt.values() if n["class_type"].startswith("Distributed")]
    shutil.copy(small_photos / "coffee.png", master.dirs()["input"] / "coffee.png")
    set_image(prompt, "coffee.png")
    apply_settings(prompt, SMALL)
    before = {name: set(history(cluster[name])) for name in ("w1", "w2")}
    answer = call(master.url + "/distributed/queue", {"prompt": prompt, "client_id": "test", "enabled_worker_ids": ["w1", "w2"]})
    assert answer["worker_count"] == 0
    deadline = time.monotonic() + 60
    while answer["prompt_id"] not in history(master):
        assert time.monotonic() < deadline, "the master never ran the prompt"
        time.sleep(0.2)
    entry = history(master)[answer["prompt_id"]]
    assert entry["status"]["status_str"] == "success" and entry["outputs"]["5"]["images"]
    assert {name: set(history(cluster[name])) for name in ("w1", "w2")} == before  # no worker was asked


def test_batch_distributed_spreads_the_photos_over_the_workers(cluster, small_photos, tmp_path):
    """`edit-agents batch --distributed` hands each photo to the master's /distributed/queue; Distributed's load
    balancing sends each to a worker; every photo is saved, and the master's and the workers' own /history say
    which worker ran which photo, as batch.json does."""
    master, workers = cluster["master"], {cluster[n].url: n for n in ("w1", "w2")}
    out = tmp_path / "out"
    started = time.monotonic()
    r = cli("batch", str(OFFLINE), "--images", str(small_photos), "--out", str(out), "--server", master.url,
            "--distributed", "--keep-history", "--quiet", *sets(*SMALL))
    seconds = time.monotonic() - started
    assert r.returncode == 0, r.stdout + r.stderr
    assert "4 ok (0 done in an earlier run), 0 failed" in r.stdout
    names = sorted(p.stem for p in small_photos.iterdir())
    for name in names:
        saved = Image.open(out / f"{name}_5_0.png")
        assert saved.size == Image.open(small_photos / f"{name}.png").size and saved.mode == "RGB"
    done = json.loads((out / "batch.json").read_text())["photos"]
    assert {n: e["status"] for n, e in done.items()} == {f"{n}.png": "ok" for n in names}
    by_worker = {workers[e["server"]]: sorted(n for n, x in done.items() if x["server"] == e["server"])
                 for e in done.values()}
    assert set(by_worker) == {"w1", "w2"}, by_worker  # the work was spread: both workers ran photos

    # What the servers report: the master's prompt of each photo names the worker its collector waited for, and
    # that worker's /history holds the prompt with the same job id, which it ran.
    master_entries = [e for e in history(master).values() if collector_jobs(e)]
    assert len(master_entries) == 4 and all(e["status"]["status_str"] == "success" for e in master_entries)
    ran_by = {}
    for entry in master_entries:
        collector = next(n for n in entry["prompt"][2].values() if n["class_type"] == "DistributedCollector")
        (worker,) = json.loads(collector["inputs"]["enabled_worker_ids"])
        ran_by[collector["inputs"]["multi_job_id"]] = worker
    for name in ("w1", "w2"):
        ran = {job for e in history(cluster[name]).values() if e["status"]["status_str"] == "success"
               for job in collector_jobs(e)}
        assert {job for job, w in ran_by.items() if w == name} == ran & set(ran_by)
        assert len(ran & set(ran_by)) == len(by_worker[name])
    print(f"4 photos over 2 workers in {seconds:.1f} s: {by_worker}")

    # The same photo run on a worker directly: the same edit. Distributed sends the image to the master as an
    # 8-bit PNG, truncating (not rounding) each value, so the two differ by at most one level.
    direct = tmp_path / "direct"
    r = cli("run", str(OFFLINE), "--image", str(small_photos / "rocket.png"), "--out", str(direct),
            "--server", cluster["w2"].url, "--quiet", *sets(*SMALL))
    assert r.returncode == 0, r.stderr
    a = np.asarray(Image.open(direct / "rocket_5_0.png"), dtype=int)
    b = np.asarray(Image.open(out / "rocket_5_0.png"), dtype=int)
    assert np.abs(a - b).max() <= 1


def test_batch_distributed_cleans_up_and_reports_a_workers_error(cluster, small_photos, tmp_path):
    """Without --keep-history each photo's prompts are deleted from the master and from the worker that ran it
    once saved. A node that fails on a worker is reported with the worker's own error (the master only sees no
    image come back, after the worker timeout) and its traceback is saved."""
    master = cluster["master"]
    before = {name: set(history(cluster[name])) for name in ("master", "w1", "w2")}
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(small_photos / "astronaut.png", folder / "astronaut.png")
    shutil.copy(small_photos / "coffee.png", folder / "coffee.png")
    r = cli("batch", str(OFFLINE), "--images", str(folder), "--out", str(tmp_path / "ok"), "--server", master.url,
            "--distributed", "--quiet", *sets(*SMALL))
    assert r.returncode == 0, r.stdout + r.stderr
    assert {name: set(history(cluster[name])) for name in ("master", "w1", "w2")} == before

    bad = tmp_path / "bad_in"
    bad.mkdir()
    shutil.copy(small_photos / "rocket.png", bad / "rocket.png")
    out = tmp_path / "bad"
    r = cli("batch", str(OFFLINE), "--images", str(bad), "--out", str(out), "--server", master.url,
            "--distributed", "--quiet", *sets(*SMALL, "Toolbox.only=no_such_tool"))
    assert r.returncode == 1
    assert "1 failed" in r.stdout and "unknown tool 'no_such_tool'" in r.stdout and "(on worker" in r.stdout, r.stdout
    tb = (out / "error-rocket.txt").read_text()
    assert "toolbox.py" in tb  # the worker's traceback, not the master's Save Photo finding no image


def test_batch_distributed_requeues_the_photos_of_a_worker_that_stops(cluster, small_photos, tmp_path):
    """A worker stops in the middle of the batch (this test runs last: it stops w2). The master's collector gives
    up on it after the worker timeout; the CLI finds the worker gone and queues its photos again, and Distributed,
    which no longer gets an answer from it, sends them to the other worker. Every photo is saved."""
    folder = tmp_path / "in"
    folder.mkdir()
    for p in small_photos.iterdir():  # dimmed, so every photo takes a search
        Image.fromarray((np.asarray(Image.open(p), dtype=float) * 0.45).astype(np.uint8)).save(folder / p.name)
    master, w1, w2 = cluster["master"], cluster["w1"], cluster["w2"]
    out = tmp_path / "out"
    batch = subprocess.Popen([CLI, "batch", str(OFFLINE), "--images", str(folder), "--out", str(out),
                              "--server", master.url, "--distributed", "--quiet",
                              *sets(f"{PLANNER}.simulations=60", f"{PLANNER}.max_steps=2")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not call(w2.url + "/queue")["queue_running"]:  # w2 is running a photo
            assert time.monotonic() < deadline and batch.poll() is None, "w2 never ran a photo"
            time.sleep(0.05)
        w2.stop()
        stdout, stderr = batch.communicate(timeout=180)
    finally:
        if batch.poll() is None:
            batch.kill()
    assert batch.returncode == 0, stdout + stderr
    assert "stopped answering" in stderr and "is queued again" in stderr, stderr
    done = json.loads((out / "batch.json").read_text())["photos"]
    assert len(done) == 4 and all(e["status"] == "ok" for e in done.values())
    assert sum(e["server"] == w1.url for e in done.values()) >= 3  # w1 did its own and what w2 left
    for name in done:
        assert (out / f"{Path(name).stem}_5_0.png").exists()
