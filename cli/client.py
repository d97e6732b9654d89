"""A small ComfyUI API client: upload, queue, follow the websocket, read /history, download."""
from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import aiohttp


class PromptRejected(RuntimeError):
    """/prompt answered 400: the workflow did not validate. ``problems`` lists (node, input, reason)."""

    def __init__(self, message: str, problems: list[tuple[str, str, str]], raw: dict):
        super().__init__(message)
        self.problems = problems
        self.raw = raw

    def readable(self) -> str:
        lines = [str(self)]
        lines += [f"  - node {node}: input '{inp}': {reason}" if inp else f"  - node {node}: {reason}"
                  for node, inp, reason in self.problems]
        return "\n".join(lines)


class ServerLost(ConnectionError):
    """The server went away while a prompt ran (its websocket closed)."""


class ExecutionFailed(RuntimeError):
    """The prompt started but a node raised. ``data`` is the server's execution_error message."""

    def __init__(self, data: dict):
        self.data = data
        kind = str(data.get("exception_type") or "error").rsplit(".", 1)[-1]  # the class, not a module's file path
        super().__init__(f"node {data.get('node_id')} ({data.get('node_type')}) failed: "
                         f"{kind}: {data.get('exception_message', '').strip()}")

    @property
    def traceback(self) -> str:
        return "".join(self.data.get("traceback") or [])


@dataclass
class Result:
    prompt_id: str
    outputs: dict[str, Any]
    events: list[dict] = field(default_factory=list)
    dropped: list[tuple[str, str, str]] = field(default_factory=list)  # (node, input, why) ComfyUI did not run


def _problems(body: dict, prompt: dict) -> list[tuple[str, str, str]]:
    out = []
    for node_id, err in (body.get("node_errors") or {}).items():
        node = prompt.get(node_id, {})
        title = node.get("_meta", {}).get("title") or err.get("class_type") or node.get("class_type", "")
        label = f"#{node_id} '{title}'"
        for e in err.get("errors", []):
            inp = (e.get("extra_info") or {}).get("input_name", "")
            reason = e.get("message", "")
            if e.get("details"):
                reason += f" ({e['details']})"
            out.append((label, inp, reason))
    return out


class ComfyClient:
    def __init__(self, base_url: str, session: aiohttp.ClientSession, timeout: float = 600.0):
        self.base_url = base_url.rstrip("/")
        self.session = session
        self.client_id = uuid.uuid4().hex
        self.timeout = timeout
        self._object_info: dict | None = None

    async def get_json(self, path: str) -> Any:
        async with self.session.get(self.base_url + path) as r:
            r.raise_for_status()
            return await r.json()

    async def object_info(self) -> dict:
        if self._object_info is None:
            self._object_info = await self.get_json("/object_info")
        return self._object_info

    async def upload_image(self, path: Path, name: str | None = None) -> str:
        form = aiohttp.FormData()
        form.add_field("image", Path(path).read_bytes(), filename=name or Path(path).name)
        form.add_field("overwrite", "true")
        async with self.session.post(self.base_url + "/upload/image", data=form) as r:
            if r.status != 200:
                raise RuntimeError(f"uploading {path} failed: HTTP {r.status} {await r.text()}")
            body = await r.json()
        return f"{body['subfolder']}/{body['name']}" if body.get("subfolder") else body["name"]

    async def queue(self, prompt: dict, extra_data: dict | None = None) -> str:
        """``extra_data``: what the frontend sends alongside, e.g. {"extra_pnginfo": {"workflow": ...}}."""
        return (await self.queue_reporting(prompt, extra_data))[0]

    async def queue_reporting(self, prompt: dict, extra_data: dict | None = None
                              ) -> tuple[str, list[tuple[str, str, str]]]:
        """Queue a prompt: (its id, the problems of the nodes ComfyUI left out). ComfyUI queues a prompt when any
        of its outputs is valid and drops the branches whose nodes are not; those come back as problems."""
        body = {"prompt": prompt, "client_id": self.client_id, **({"extra_data": extra_data} if extra_data else {})}
        async with self.session.post(self.base_url + "/prompt", json=body) as r:
            body = await r.json(content_type=None)
            if r.status != 200:
                err = body.get("error", {}) if isinstance(body, dict) else {}
                msg = err.get("message", f"HTTP {r.status}") if isinstance(err, dict) else str(err)
                details = err.get("details", "") if isinstance(err, dict) else ""
                raise PromptRejected(f"the server rejected the workflow: {msg}" + (f" ({details})" if details else ""),
                                     _problems(body if isinstance(body, dict) else {}, prompt), body)
            return body["prompt_id"], _problems(body, prompt)

    async def run(self, prompt: dict, on_event: Callable[[dict], None] | None = None,
                  extra_data: dict | None = None) -> Result:
        """Queue a prompt and follow it over the websocket until it finishes."""
        events: list[dict] = []
        ws_url = self.base_url.replace("http", "ws", 1) + f"/ws?clientId={self.client_id}"
        async with self.session.ws_connect(ws_url, heartbeat=30) as ws:
            prompt_id, dropped = await self.queue_reporting(prompt, extra_data)
            while True:
                msg = await ws.receive(timeout=self.timeout)
                if msg.type != aiohttp.WSMsgType.TEXT:
                    if msg.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.ERROR):
                        raise ServerLost(f"the websocket to {self.base_url} closed while prompt {prompt_id} ran")
                    continue  # binary preview images
                event = json.loads(msg.data)
                data = event.get("data", {})
                if data.get("prompt_id") not in (None, prompt_id):
                    continue
                events.append(event)
                if on_event:
                    on_event(event)
                if event["type"] == "execution_error":
                    raise ExecutionFailed(data)
                if event["type"] == "execution_interrupted":
                    raise RuntimeError(f"prompt {prompt_id} was interrupted")
                # "executing" with node None comes after ComfyUI has written /history ("execution_success" before)
                if event["type"] == "executing" and data.get("node") is None and data.get("prompt_id") == prompt_id:
                    break
        history = await self.get_json(f"/history/{prompt_id}")
        return Result(prompt_id, history.get(prompt_id, {}).get("outputs", {}), events, dropped)

    async def forget(self, prompt_id: str) -> None:
        """Delete a finished prompt from the server's /history. ComfyUI keeps up to 10,000 there, each with its
        outputs (a traced prompt: about 300 KB), so a long batch would otherwise grow the server by gigabytes."""
        async with self.session.post(self.base_url + "/history", json={"delete": [prompt_id]}) as r:
            r.raise_for_status()

    async def download(self, file_info: dict, dest: Path) -> Path:
        params = {k: file_info.get(k, "") for k in ("filename", "subfolder", "type")}
        async with self.session.get(self.base_url + "/view", params=params) as r:
            r.raise_for_status()
            dest.write_bytes(await r.read())
        return dest
