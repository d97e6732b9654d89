"""The `edit-agents` CLI on real photos against a real server."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from cli_runs import CLI, OFFLINE, cli
from helpers import WORKFLOWS



def save(photo: np.ndarray, path: Path) -> Path:
    Image.fromarray((photo * 255).astype(np.uint8)).save(path)
    return path


def test_run_writes_image_and_trace(comfy_server, photos, tmp_path):
    src = save(photos["rocket"] * 0.45, tmp_path / "rocket.png")  # under-exposed: there is something to fix
    out = tmp_path / "out"
    r = cli("run", OFFLINE, "--image", str(src), "--out", str(out), "--server", comfy_server.url,
            "--set", "MCTS Planner (PhotoAgent).max_steps=2")
    assert r.returncode == 0, r.stderr
    images = list(out.glob("rocket_*.png"))
    assert len(images) == 1 and Image.open(images[0]).size == (640, 427)
    trace = json.loads((out / "trace.json").read_text())
    assert 1 <= trace["summary"]["steps"] <= 2  # the --set took effect
    assert "score" in r.stdout and "->" in r.stdout


def test_a_workflow_with_two_trace_views_writes_both_traces(comfy_server, tmp_path):
    """building_blocks.json has a Trace View per branch; run on its own sample photo (no --image)."""
    out = tmp_path / "out"
    r = cli("run", str(WORKFLOWS / "building_blocks.json"), "--out", str(out), "--server", comfy_server.url)
    assert r.returncode == 0, r.stderr
    titles = sorted(json.loads(p.read_text())["title"] for p in out.glob("trace_*.json"))
    assert len(titles) == 2 and not (out / "trace.json").exists(), titles
    assert titles[0] == "Perceiver" and titles[1].startswith("PhotoAgent enhance")
    executor = json.loads(next(p for p in out.glob("trace_*.json") if "Perceiver" in p.read_text()).read_text())
    assert any(s["role"] == "executor" and s["action"].startswith("run as proposed") for s in executor["steps"])


def test_a_branch_comfyui_leaves_out_is_reported(comfy_server, tmp_path):
    """ComfyUI queues a workflow when any of its outputs is valid and drops the branches that are not: the CLI
    says which node did not run and why, instead of saving the rest as if it were the whole result."""
    out = tmp_path / "out"
    r = cli("run", str(WORKFLOWS / "building_blocks.json"), "--out", str(out), "--server", comfy_server.url,
            "--set", "Perceiver.k=-3")
    assert r.returncode == 0, r.stderr
    assert "warning: #" in r.stderr and "'Perceiver' did not run" in r.stderr and "k: " in r.stderr, r.stderr
    assert list(out.glob("result_*.png"))  # the PhotoAgent branch ran and saved


def test_run_starts_its_own_server_when_none_is_given(photos, tmp_path):
    src = save(photos["chelsea"][::2, ::2], tmp_path / "cat.png")
    r = cli("run", OFFLINE, "--image", str(src), "--out", str(tmp_path / "o"), "--quiet")
    assert r.returncode == 0, r.stderr
    assert "starting ComfyUI" in r.stderr and list((tmp_path / "o").glob("cat_*.png"))
    # without --cpu the CLI uses the GPU when the server's torch sees one: none here (on a lent GPU, the GPU)
    import torch

    assert f"ComfyUI runs on the {'GPU' if torch.cuda.is_available() else 'CPU'}" in r.stderr


def test_local_server_passes_cpu_only_when_asked_or_when_there_is_no_gpu(tmp_path):
    from edit_agents.cli.server import has_accelerator

    fake_gpu = tmp_path / "python-with-gpu"
    fake_gpu.write_text("#!/bin/sh\necho True\n")  # what the probe prints on a machine with a GPU
    fake_gpu.chmod(0o755)
    assert has_accelerator(str(fake_gpu)) is True
    assert has_accelerator(str(tmp_path / "no-such-python")) is False
    import torch

    assert has_accelerator(sys.executable) is torch.cuda.is_available()


def test_batch_continues_past_an_unreadable_file(comfy_server, photos, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    save(photos["coffee"][::2, ::2], folder / "coffee.png")
    save(photos["astronaut"][::2, ::2], folder / "astronaut.jpg")
    (folder / "broken.png").write_bytes(b"this is not a PNG")
    (folder / "notes.txt").write_text("ignored: not an image suffix")
    out = tmp_path / "out"
    r = cli("batch", OFFLINE, "--images", str(folder), "--out", str(out), "--server", comfy_server.url)
    assert r.returncode == 1, "a failed image must make the exit code non-zero"
    assert "2 ok (0 done in an earlier run), 1 failed" in r.stdout
    assert "broken.png" in r.stdout and "FAILED" in r.stdout and "not an image" in r.stdout
    for stem in ("coffee", "astronaut"):
        assert list(out.glob(f"{stem}_*.png")) and (out / f"{stem}.trace.json").exists()


def test_validation_error_is_readable(comfy_server, photos, tmp_path):
    src = save(photos["coffee"][::4, ::4], tmp_path / "c.png")
    r = cli("run", OFFLINE, "--image", str(src), "--out", str(tmp_path / "o"), "--server", comfy_server.url,
            "--set", "MCTS Planner (PhotoAgent).top_k=999")
    assert r.returncode != 0
    assert "'MCTS Planner (PhotoAgent)'" in r.stderr and "input 'top_k'" in r.stderr


def test_execution_error_names_node_and_saves_traceback(comfy_server, photos, tmp_path):
    src = save(photos["coffee"][::4, ::4], tmp_path / "c.png")
    out = tmp_path / "o"
    r = cli("run", OFFLINE, "--image", str(src), "--out", str(out), "--server", comfy_server.url,
            "--set", "Toolbox.only=warp_drive")
    assert r.returncode == 1
    assert "EditAgentsToolbox" in r.stderr and "unknown tool 'warp_drive'" in r.stderr
    tb = out / "error-c.txt"
    assert tb.exists() and "toolbox.py" in tb.read_text()  # the server's traceback, kept for a bug report


def test_bad_arguments(tmp_path):
    r = cli("run", str(tmp_path / "missing.json"), "--out", str(tmp_path))
    assert r.returncode == 2 and "cannot read workflow" in r.stderr


def test_convert_writes_an_api_prompt_that_post_prompt_runs(comfy_server, photos, tmp_path):
    """`edit-agents convert` + a plain POST /prompt (what the README's curl lines do) + GET /history."""
    import time
    import urllib.request

    save(photos["coffee"] * 0.6, comfy_server.dirs()["input"] / "coffee_dim.png")
    api_file = tmp_path / "offline_api.json"
    r = cli("convert", OFFLINE, "--out", str(api_file), "--image", "coffee_dim.png", "--server", comfy_server.url,
            "--set", "MCTS Planner (PhotoAgent).max_steps=1")
    assert r.returncode == 0, r.stderr
    prompt = json.loads(api_file.read_text())
    assert {n["class_type"] for n in prompt.values()} >= {"EditAgentsLoadPhoto", "EditAgentsMCTSPlanner",
                                                          "EditAgentsTraceView", "EditAgentsSavePhoto"}
    assert next(n for n in prompt.values() if n["class_type"] == "EditAgentsLoadPhoto")["inputs"]["image"] == "coffee_dim.png"
    body = json.dumps({"prompt": prompt}).encode()
    request = urllib.request.Request(comfy_server.url + "/prompt", data=body, headers={"Content-Type": "application/json"})
    prompt_id = json.load(urllib.request.urlopen(request))["prompt_id"]
    for _ in range(600):  # wait (up to about 5 minutes) for the prompt to reach /history
        history = json.load(urllib.request.urlopen(f"{comfy_server.url}/history/{prompt_id}"))
        if prompt_id in history:
            break
        time.sleep(0.5)
    entry = history[prompt_id]
    assert entry["status"]["status_str"] == "success"
    traces = [o["edit_agents_trace"][0] for o in entry["outputs"].values() if "edit_agents_trace" in o]
    assert traces and traces[0]["summary"]["steps"] <= 1


def test_batch_survives_a_server_restart_and_resumes(photos, tmp_path):
    """The server stops in the middle of a batch: the CLI says which photos finished and which did not, and
    the same command run again (server back) skips the finished ones and does the rest."""
    import time

    from edit_agents.cli.server import LocalServer

    folder = tmp_path / "in"
    folder.mkdir()
    names = ["astronaut", "chelsea", "coffee", "rocket"]
    for name in names:
        save(photos[name][::2, ::2], folder / f"{name}.png")
    out, base = tmp_path / "out", tmp_path / "server"
    server = LocalServer(base_dir=base).start()
    args = ("batch", OFFLINE, "--images", str(folder), "--out", str(out), "--server", server.url, "--quiet",
            "--set", "MCTS Planner (PhotoAgent).simulations=60", "--set", "MCTS Planner (PhotoAgent).max_steps=2")
    batch = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    manifest = out / "batch.json"
    deadline = time.monotonic() + 240
    while not (manifest.exists() and json.loads(manifest.read_text())["photos"]):  # the first photo is done
        assert time.monotonic() < deadline and batch.poll() is None, "the first photo never finished"
        time.sleep(0.2)
    server.stop()  # the server goes away in the middle of the batch
    stdout, stderr = batch.communicate(timeout=120)
    assert batch.returncode == 1
    first = json.loads(manifest.read_text())["photos"]
    finished = {n for n, e in first.items() if e["status"] == "ok"}
    assert "astronaut.png" in finished and len(finished) < 4
    assert "stopped answering" in stdout and "run the same command again" in stdout
    for name in set(f"{n}.png" for n in names) - finished:
        assert f"{name}" in stdout and ("not run" in stdout or "lost the server" in stdout)

    server = LocalServer(base_dir=base, port=server.port).start()  # back, on the same address
    try:
        r = cli(*args)
    finally:
        server.stop()
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"4 ok ({len(finished)} done in an earlier run), 0 failed" in r.stdout
    final = json.loads(manifest.read_text())["photos"]
    assert all(e["status"] == "ok" for e in final.values()) and len(final) == 4
    for name in names:
        assert (out / f"{name}.trace.json").exists() and list(out.glob(f"{name}_*.png"))
    assert {n: final[n]["seconds"] for n in finished} == {n: first[n]["seconds"] for n in finished}  # not re-run


def test_batch_spreads_photos_over_two_servers_and_retries_a_lost_one_elsewhere(photos, tmp_path):
    """Two real servers; one stops in the middle of the batch. Each server takes the next photo when it is free,
    the photo the stopped one was running is done by the other, batch.json says which server did what, the
    summary gives each server's throughput, and each prompt is deleted from /history once saved."""
    import time
    import urllib.request

    from edit_agents.cli.server import LocalServer

    folder = tmp_path / "in"
    folder.mkdir()
    for name in ("astronaut", "chelsea", "coffee", "rocket"):  # dimmed, so every photo takes a search
        save(photos[name][::2, ::2] * 0.45, folder / f"{name}.png")
        if name in ("chelsea", "coffee"):
            save(photos[name][::2, ::-2] * 0.45, folder / f"{name}_mirrored.png")
    out = tmp_path / "out"
    steady, doomed = LocalServer(base_dir=tmp_path / "a").start(), LocalServer(base_dir=tmp_path / "b").start()
    try:
        args = ("batch", OFFLINE, "--images", str(folder), "--out", str(out), "--server", steady.url,
                "--server", doomed.url, "--quiet", "--set", "MCTS Planner (PhotoAgent).simulations=60",
                "--set", "MCTS Planner (PhotoAgent).max_steps=2")
        batch = subprocess.Popen([CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        manifest = out / "batch.json"
        deadline = time.monotonic() + 240
        while not (manifest.exists() and any(e["server"] == doomed.url
                                             for e in json.loads(manifest.read_text())["photos"].values())):
            assert time.monotonic() < deadline and batch.poll() is None, "the second server never finished a photo"
            time.sleep(0.1)
        doomed.stop()  # it goes away while it runs its next photo
        stdout, stderr = batch.communicate(timeout=300)
        assert batch.returncode == 0, stdout + stderr
        done = json.loads(manifest.read_text())["photos"]
        assert len(done) == 6 and all(e["status"] == "ok" for e in done.values())
        by_server = {url: sorted(n for n, e in done.items() if e["server"] == url) for url in (steady.url, doomed.url)}
        assert by_server[steady.url] and by_server[doomed.url]  # both took photos
        assert f"the server at {doomed.url} stopped answering" in stderr
        assert "photos/min" in stdout and "(lost)" in stdout and "6 ok (0 done in an earlier run), 0 failed" in stdout
        with urllib.request.urlopen(steady.url + "/history") as r:
            assert json.load(r) == {}  # each prompt was deleted once its outputs were saved
    finally:
        steady.stop()
        doomed.stop()
