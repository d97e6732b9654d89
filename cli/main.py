"""`edit-agents`: run the pack's workflows through ComfyUI's API from a terminal.

  edit-agents run WORKFLOW --image PATH --out DIR [--instruction TEXT] [--set NODE.INPUT=VALUE ...] [--server URL]
  edit-agents batch WORKFLOW --images DIR --out DIR [same options]   (re-running skips the photos done before;
        --server URL more than once spreads the photos over several ComfyUI servers, e.g. one per GPU;
        --server MASTER --distributed hands each photo to a ComfyUI-Distributed master's /distributed/queue)
  edit-agents convert WORKFLOW --out FILE [--image NAME] [--instruction TEXT] [--set ...] [--server URL]

Without --server a local ComfyUI (the one `make setup` prepared, or COMFYUI_DIR) is
started on a free loopback port and stopped afterwards.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from ..agents.trace import HISTORY_KEY
from .client import ComfyClient, ExecutionFailed, PromptRejected
from .server import LocalServer, ServerError
from .workflow import WorkflowError, apply_settings, load_workflow, set_image, set_instruction, to_api

IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".webp", ".bmp", ".tif", ".tiff"}
# What Windows forbids in a file name. A node inside a subgraph has an id like "12:5" (workflow.py, as ComfyUI's
# frontend), and on NTFS "photo_12:5_0.png" is not an error but the stream "5_0.png" of a file "photo_12".
NOT_IN_FILE_NAMES = re.compile(r'[<>:"/\\|?*\x00-\x1f]')


def file_part(node_id: object) -> str:
    """A node id as it goes into an output file's name, the same on every system: "12:5" -> "12-5"."""
    return NOT_IN_FILE_NAMES.sub("-", str(node_id))


@dataclass
class Outcome:
    source: Path
    ok: bool
    files: list[Path] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    error: str = ""
    seconds: float = 0.0
    skipped: bool = False  # done by an earlier run of the same batch
    server_lost: bool = False  # the server stopped answering: the photo is tried on another one
    server: str = ""  # the server that ran it


MANIFEST = "batch.json"  # in --out: each photo's status, so a re-run skips the ones that finished


class Manifest:
    """What a batch has done, written after every photo (atomically), so an interrupted batch can resume."""

    def __init__(self, out_dir: Path, workflow: str):
        self.path = out_dir / MANIFEST
        self.data = {"workflow": workflow, "photos": {}}
        if self.path.exists():
            try:
                self.data = json.loads(self.path.read_text())
            except (OSError, ValueError):
                pass  # unreadable: start again (the outputs themselves are overwritten, never half-used)
            self.data.setdefault("photos", {})

    def done(self, photo: Path) -> list[Path] | None:
        """The files an earlier run made for ``photo``, if it finished and they are all still there."""
        entry = self.data["photos"].get(photo.name)
        if not entry or entry.get("status") != "ok":
            return None
        files = [self.path.parent / f for f in entry.get("files", [])]
        return files if files and all(f.exists() for f in files) else None

    def record(self, o: Outcome) -> None:
        """Save how a photo that ran came out."""
        self.data["photos"][o.source.name] = {"status": "ok" if o.ok else "failed", "seconds": round(o.seconds, 2),
                                              "server": o.server, "files": [f.name for f in o.files],
                                              **({"error": o.error} if o.error else {})}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.data, indent=1))
        tmp.replace(self.path)


class Progress:
    """A one-line progress bar on stderr from the websocket's progress events."""

    def __init__(self, label: str, enabled: bool = True):
        self.label, self.enabled, self.last = label, enabled and sys.stderr.isatty(), ""

    def __call__(self, event: dict) -> None:
        if not self.enabled:
            return
        data = event.get("data", {})
        if event["type"] == "progress" and data.get("max"):
            frac = data["value"] / data["max"]
            bar = "#" * int(frac * 30)
            self.last = f"\r{self.label} [{bar:<30}] {frac:4.0%} node {data.get('node')}"
            sys.stderr.write(self.last)
            sys.stderr.flush()

    def done(self) -> None:
        if self.enabled and self.last:
            sys.stderr.write("\n")


def check_image(path: Path) -> None:
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            im.verify()
    except (OSError, UnidentifiedImageError) as err:
        raise ValueError(f"{path} is not an image that can be read ({err})") from None


async def run_one(client: ComfyClient, template: dict, image: Path | None, out_dir: Path, args,
                  progress_label: str = "") -> Outcome:
    start = time.monotonic()
    stem = image.stem if image else "result"
    outcome = Outcome(image or Path(args.workflow), ok=False, server=client.base_url)
    prompt = json.loads(json.dumps(template))
    try:
        if image is not None:
            check_image(image)
            set_image(prompt, await client.upload_image(image, name=f"{stem}{image.suffix.lower()}"))
        apply_arguments(prompt, args)
        progress = Progress(progress_label or stem, enabled=not args.quiet)
        try:
            result = await client.run(prompt, on_event=progress)
        finally:
            progress.done()
        for node, inp, why in result.dropped:  # ComfyUI ran the rest: say what did not run, and why
            print(f"warning: {node} did not run (nor what it feeds): {inp + ': ' if inp else ''}{why}", file=sys.stderr)
        out_dir.mkdir(parents=True, exist_ok=True)
        for node_id, out in result.outputs.items():
            for i, info in enumerate(out.get("images", [])):
                if info.get("type") != "output":
                    continue  # previews live in temp; saved images are the results
                suffix = Path(info["filename"]).suffix or ".png"
                dest = out_dir / f"{stem}_{file_part(node_id)}_{i}{suffix}"
                outcome.files.append(await client.download(info, dest))
        traces = [(node_id, trace) for node_id, out in result.outputs.items() for trace in out.get(HISTORY_KEY, [])]
        for node_id, trace in traces:
            # one Trace View: trace.json; several: each named by its node, so none overwrites another
            tag = f"_{file_part(node_id)}" if len(traces) > 1 else ""
            dest = out_dir / (f"trace{tag}.json" if args.command == "run" else f"{stem}{tag}.trace.json")
            dest.write_text(json.dumps(trace, indent=1))
            outcome.files.append(dest)
            outcome.summary = trace.get("summary", {})
        outcome.ok = True
        if not getattr(args, "keep_history", True):
            await client.forget(result.prompt_id)  # the outputs are on disk now
    except PromptRejected as err:
        outcome.error = err.readable()
    except ExecutionFailed as err:
        out_dir.mkdir(parents=True, exist_ok=True)
        tb = out_dir / f"error-{stem}.txt"
        tb.write_text(f"{err}\n\n{err.traceback}", encoding="utf-8")  # any language: not the locale's code page
        outcome.error = f"{err}\n  traceback saved to {tb}"
    except (aiohttp.ClientConnectionError, ConnectionError) as err:
        outcome.error = f"lost the server at {client.base_url}: {err or type(err).__name__}"
        outcome.server_lost = True
    except (ValueError, WorkflowError, RuntimeError, aiohttp.ClientError, asyncio.TimeoutError) as err:
        outcome.error = str(err) or type(err).__name__
    outcome.seconds = time.monotonic() - start
    return outcome


def describe(o: Outcome) -> str:
    s = o.summary
    if "score_before" in s:
        return f"{s.get('steps', 0)} step(s), score {s['score_before']:.3f} -> {s['score_after']:.3f}"
    return f"{len(o.files)} file(s)"


def apply_arguments(prompt: dict, args) -> None:
    """--instruction and --set, as run, batch and convert all apply them."""
    if args.instruction is not None:
        set_instruction(prompt, args.instruction)
    if getattr(args, "bits", None):  # Save Photo writes the input's bit depth unless asked otherwise
        savers = [n for n in prompt.values() if n["class_type"] == "EditAgentsSavePhoto"]
        if not savers:
            raise WorkflowError("--bits sets Save Photo's bit depth, and this workflow has no Save Photo node")
        for node in savers:
            node["inputs"]["bits"] = args.bits
    apply_settings(prompt, args.set or [])


def convert(prompt: dict, args) -> int:
    """Write the API-format prompt, with the image name, instruction and settings applied."""
    if args.image:
        set_image(prompt, args.image)
    apply_arguments(prompt, args)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(prompt, indent=1))
    print(out)
    return 0


def still_to_do(images: list[Path], manifest: Manifest, report) -> list[Path]:
    """The photos an earlier run of this batch has not done; each done one is reported as skipped."""
    todo = []
    for image in images:
        earlier = manifest.done(image)
        if earlier is not None:
            report(Outcome(image, ok=True, files=earlier, skipped=True))
        else:
            todo.append(image)
    return todo


def progress_line(o: Outcome, i: int, total: int, show_server: bool) -> str:
    """One photo's line as a batch goes: "[i/total] name (server): ok, what was done" or its error."""
    state = "skipped, done in an earlier run" if o.skipped else ("ok, " + describe(o) if o.ok else
                                                                 "FAILED: " + o.error.splitlines()[0])
    where = f" ({o.server})" if show_server and o.server and not o.skipped else ""
    return f"[{i + 1}/{total}] {o.source.name}{where}: {state}"


def print_table(ordered: list[Outcome]) -> None:
    """A batch's summary: each photo's status, time and result (or error) on one line."""
    width = max(len(o.source.name) for o in ordered)
    print(f"{'image':<{width}}  status  seconds  result")
    for o in ordered:
        status = "done" if o.skipped else ("ok" if o.ok else "FAILED")
        print(f"{o.source.name:<{width}}  {status:<6}  {o.seconds:7.1f}  "
              + ("done in an earlier run" if o.skipped else describe(o) if o.ok else o.error.replace(chr(10), ' | ')))


async def main_async(args) -> int:
    data = load_workflow(Path(args.workflow))
    async with contextlib.AsyncExitStack() as stack:
        urls = list(args.server or [])
        if getattr(args, "distributed", False) and len(urls) != 1:
            raise ServerError("--distributed takes the URL of one ComfyUI-Distributed master: --server URL")
        if not urls:
            server = LocalServer(cpu=True if args.cpu else None)  # the GPU when there is one
            print(f"starting ComfyUI from {server.comfyui_dir} on {server.url} ...", file=sys.stderr)
            await asyncio.to_thread(server.start)
            print(f"ComfyUI runs on the {'CPU' if server.cpu else 'GPU'}", file=sys.stderr)
            stack.callback(server.stop)
            urls = [server.url]
        session = await stack.enter_async_context(aiohttp.ClientSession())
        clients = [ComfyClient(url, session, timeout=args.timeout) for url in urls]
        template = await to_api(data, clients[0])
        if args.command == "convert":
            return convert(template, args)
        out_dir = Path(args.out)
        if args.command == "run":
            o = await run_one(clients[0], template, Path(args.image) if args.image else None, out_dir, args)
            if not o.ok:
                print(f"error: {o.error}", file=sys.stderr)
                return 1
            for f in o.files:
                print(f)
            print(f"done in {o.seconds:.1f} s: {describe(o)}")
            return 0
        if getattr(args, "distributed", False):
            from .distributed import distributed_batch

            return await distributed_batch(clients[0], template, out_dir, args)
        return await batch(clients, template, out_dir, args)


async def batch(clients: list[ComfyClient], template: dict, out_dir: Path, args) -> int:
    """Every photo in --images, spread over the servers: each takes the next photo when it is free; a photo
    whose server stops answering goes back in the queue for the others (that server takes no more)."""
    images = sorted(p for p in Path(args.images).iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
    if not images:
        print(f"error: no images ({', '.join(sorted(IMAGE_SUFFIXES))}) in {args.images}", file=sys.stderr)
        return 2
    manifest = Manifest(out_dir, str(args.workflow))
    index = {image: i for i, image in enumerate(images)}
    outcomes: dict[Path, Outcome] = {}
    queue: asyncio.Queue[Path] = asyncio.Queue()
    lost: list[str] = []

    def report(o: Outcome) -> None:
        outcomes[o.source] = o
        print(progress_line(o, index[o.source], len(images), show_server=len(clients) > 1), file=sys.stderr)

    for image in still_to_do(images, manifest, report):
        queue.put_nowait(image)

    running = 0  # photos on a server now: one of them may come back if its server dies
    changed = asyncio.Condition()

    async def worker(client: ComfyClient) -> None:
        nonlocal running
        while True:
            async with changed:
                while queue.empty() and running:  # wait: a photo in flight elsewhere may be handed back
                    await changed.wait()
                if queue.empty():
                    return
                image = queue.get_nowait()
                running += 1
            o = await run_one(client, template, image, out_dir, args,
                              progress_label=f"[{index[image] + 1}/{len(images)}] {image.stem}")
            async with changed:
                running -= 1
                if o.server_lost:
                    queue.put_nowait(image)  # another server may still take it
                changed.notify_all()
            if o.server_lost:
                lost.append(f"the server at {client.base_url} stopped answering during {image.name}")
                print(f"{lost[-1]}; it takes no more photos", file=sys.stderr)
                return
            manifest.record(o)
            report(o)

    await asyncio.gather(*(worker(c) for c in clients))
    while not queue.empty():  # every server was lost
        image = queue.get_nowait()
        report(Outcome(image, ok=False, error="not run: " + "; ".join(lost)))
    ordered = [outcomes[image] for image in images]
    print_table(ordered)
    if len(clients) > 1:
        print("server                          photos  busy s  photos/min")
        for c in clients:
            ran = [o for o in ordered if o.server == c.base_url and not o.skipped and o.ok]
            busy = sum(o.seconds for o in ran)
            rate = len(ran) / busy * 60 if busy else 0.0
            print(f"{c.base_url:<30}  {len(ran):6d}  {busy:6.1f}  {rate:10.1f}"
                  + ("  (lost)" if any(c.base_url in why for why in lost) else ""))
    failed = sum(not o.ok for o in ordered)
    skipped = sum(o.skipped for o in ordered)
    unfinished = any(o.error.startswith("not run") for o in ordered)
    print(f"{len(ordered) - failed} ok ({skipped} done in an earlier run), {failed} failed"
          + (f"; {lost[0]}: run the same command again to finish the rest" if unfinished else ""))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edit-agents", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, help_text in (("run", "run a workflow on one photo"), ("batch", "run a workflow on every photo in a folder"),
                            ("convert", "write a workflow in API format (for POST /prompt, e.g. with curl)")):
        p = sub.add_parser(name, help=help_text)
        p.add_argument("workflow", help="a workflow JSON file, UI format (as saved from the canvas) or API format")
        if name == "run":
            p.add_argument("--image", help="a photo to upload and set on the workflow's image loader")
        elif name == "batch":
            p.add_argument("--images", required=True, help="a folder of photos")
        else:
            p.add_argument("--image", help="the file name, in ComfyUI's input folder, for the image loader")
        p.add_argument("--out", required=True, help="the API-format JSON file to write" if name == "convert"
                       else "folder for the outputs and trace.json")
        p.add_argument("--instruction", help="text for the workflow's instruction input")
        p.add_argument("--bits", choices=("8", "16"),
                       help="bits per channel of the photos Save Photo writes (default: the input photo's)")
        p.add_argument("--set", action="append", metavar="NODE.INPUT=VALUE",
                       help="set an input by node title or id, e.g. --set 'PhotoAgent (enhance).max_steps=3' (repeatable)")
        p.add_argument("--server", action="append", metavar="URL",
                       help="URL of a running ComfyUI (default: start a local one); batch: repeat it to spread the "
                            "photos over several servers")
        p.add_argument("--cpu", action="store_true",
                       help="start the local ComfyUI with --cpu even when a GPU is there (default: the GPU if any)")
        p.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for a websocket message")
        p.add_argument("--quiet", action="store_true", help="no progress bar")
        if name == "batch":
            p.add_argument("--keep-history", action="store_true",
                           help="leave each prompt in the server's /history (by default it is deleted once its "
                                "outputs are saved, so a long batch keeps the server's memory flat)")
            p.add_argument("--distributed", action="store_true",
                           help="hand each photo to the ComfyUI-Distributed master given by --server (its "
                                "/distributed/queue picks the least busy worker); the master saves the results")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # keep stdout and stderr lines in order when piped
    try:
        return asyncio.run(main_async(args))
    except (WorkflowError, ServerError, PromptRejected) as err:
        print(f"error: {err.readable() if isinstance(err, PromptRejected) else err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
