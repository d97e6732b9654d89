"""Benchmark: what each shipped LLM workflow asks of its model, as the user's Ollama counts it.

Runs the shipped LLM workflows (cca_ollama, imagagent_ollama, photoagent, and the three with an edit model, whose
model files are swapped for the tests' tiny FLUX, so their Toolbox offers the editor as on a user's machine) as shipped (default settings: the Brain's context
0, i.e. 4096 for Ollama) on a real ComfyUI server, against a loopback stand-in for Ollama that counts every
request with Qwen2.5-VL's own tokenizer and image grid (the model the workflows name), on the 451 x 300 sample
photo and on a 2000 x 1333 one. Prints, per workflow and photo: calls per run, prompt tokens per role (largest
and mean), tokens per run, how many requests Ollama would have cut (none is the target), and the pack's own
estimate against the count (it must never be below it). Then the text estimate's error against the Qwen2.5 and
Llama 3 tokenizers on every prompt the runs sent.
The stand-in answers every role with the simplest valid answer, so the figures are the prompts' own, not a
model's choices: a real model retries less or more. Run: .venv/bin/python bench/llm_budget.py
"""
from __future__ import annotations

import asyncio
import statistics
import sys
from collections import defaultdict
from pathlib import Path

import aiohttp
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "support"))

from edit_agents.agents import budget  # noqa: E402
from edit_agents.cli.client import ComfyClient  # noqa: E402
from edit_agents.cli.server import LocalServer  # noqa: E402
from edit_agents.cli.workflow import ui_to_api  # noqa: E402
from helpers import WORKFLOWS, load_json  # noqa: E402
from llm_answers import pointed_at, role_of, valid_answer, with_tiny_editor  # noqa: E402
from llm_server import prompt_tokens, qwen_tokenizer  # noqa: E402
from ollama_server import OllamaReply, OllamaStandIn  # noqa: E402

import edit_agents  # noqa: E402

FLOWS = ("cca_ollama.json", "imagagent_ollama.json", "photoagent.json", "cca_kontext.json", "imagagent_qwen_edit.json",
         "photoagent_kontext.json")
EDITOR_FLOWS = FLOWS[3:]  # run with the tests' tiny FLUX in place of the model files (their Toolbox offers the editor)


def photos(input_dir: Path) -> dict[str, str]:
    """The sample photo (451 x 300) and the same at 2000 x 1333, in the server's input folder."""
    sample = Image.open(edit_agents.SAMPLE_IMAGE).convert("RGB")
    sample.save(input_dir / "sample.png")
    sample.resize((2000, 1333)).save(input_dir / "phone2000.png")
    return {f"{sample.width} x {sample.height}": "sample.png", "2000 x 1333": "phone2000.png"}


def model_paths() -> tuple[str, ...]:
    """ComfyUI's arguments for the tests' tiny edit model (built once and cached, as the tests do)."""
    import tempfile

    from conftest import tiny_checkpoint, tiny_flux

    root = Path(tempfile.mkdtemp())
    flux, flux_vae = tiny_flux()
    for folder, name, target in (("checkpoints", "tiny-sd15.safetensors", tiny_checkpoint("tiny-sd15.safetensors", 4)),
                                 ("diffusion_models", "tiny-flux-kontext.safetensors", flux),
                                 ("vae", "tiny-flux-vae.safetensors", flux_vae)):
        (root / folder).mkdir()
        (root / folder / name).symlink_to(target)
    extra = root / "extra_model_paths.yaml"
    extra.write_text(f"bench:\n    base_path: {root}\n    checkpoints: checkpoints\n    diffusion_models: "
                     f"diffusion_models\n    vae: vae\n")
    return ("--extra-model-paths-config", str(extra))


def texts_of(body: dict) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content") or ""
        parts.append(content if isinstance(content, str) else " ".join(p.get("text", "") for p in content))
    return "\n".join(parts)


async def run_flows(server: LocalServer, ollama: OllamaStandIn) -> tuple[list[dict], list[str]]:
    rows, sent = [], []
    count = lambda body: prompt_tokens(body.get("messages", []))  # noqa: E731
    async with aiohttp.ClientSession() as session:
        client = ComfyClient(server.url, session)
        info = await client.object_info()
        for size, name in photos(server.dirs()["input"]).items():
            for flow in FLOWS:
                ollama.reset(responder=lambda call: OllamaReply(valid_answer(call.body)), count=count)
                prompt = pointed_at(ui_to_api(load_json(WORKFLOWS / flow), info), ollama.url, None, name)
                result = await client.run(with_tiny_editor(prompt) if flow in EDITOR_FLOWS else prompt)
                trace = next(t for out in result.outputs.values() for t in out.get("edit_agents_trace", []))
                estimates = defaultdict(list)
                for step in trace["steps"]:
                    if "prompt_tokens" in step.get("inputs", {}):
                        estimates[step["role"] if step["role"] != "discriminator" else "answers"].append(
                            step["inputs"]["prompt_tokens"])
                per_role = defaultdict(list)
                for call in ollama.chats:
                    per_role[role_of(call.body)].append(count(call.body))
                    sent.append(texts_of(call.body))
                rows.append({"flow": flow, "photo": size, "calls": len(ollama.chats), "per_role": dict(per_role),
                             "cut": sum(c.truncated for c in ollama.chats), "estimates": dict(estimates),
                             "answer_tokens": sum(len(str(valid_answer(c.body))) // 3 for c in ollama.chats)})
    return rows, sent


def report(rows: list[dict]) -> None:
    print("Shipped LLM workflows at default settings (context 4096), prompt tokens as Qwen2.5-VL counts them:")
    for row in rows:
        total = sum(sum(v) for v in row["per_role"].values())
        print(f"\n{row['flow']} on {row['photo']}: {row['calls']} calls, {total} prompt tokens per run, "
              f"{row['cut']} cut by the context")
        for role, tokens in sorted(row["per_role"].items()):
            mine = row["estimates"].get(role, [])
            est = f"; the pack's estimate, largest {max(mine)}" if mine else ""
            print(f"  {role:11s} {len(tokens):3d} calls, largest {max(tokens):5d}, mean {statistics.mean(tokens):7.0f}"
                  f"{est}")


def text_error(sent: list[str]) -> None:
    """The text estimate against two real tokenizers, over every prompt the runs sent."""
    from tokenizers import Tokenizer

    from helpers import setup_env

    llama_dir = setup_env().get("COMPAT_COMFYUI_DIR", "")
    llama_file = Path(llama_dir) / "comfy" / "text_encoders" / "llama_tokenizer" / "tokenizer.json"
    counters = {"Qwen2.5": lambda t: len(qwen_tokenizer()(t, add_special_tokens=False)["input_ids"])}
    if llama_file.is_file():
        llama = Tokenizer.from_file(str(llama_file))
        counters["Llama 3"] = lambda t: len(llama.encode(t, add_special_tokens=False).ids)
    unique = sorted(set(sent))
    print(f"\nText estimate (tokens per character {budget.TOKENS_PER_CHARACTER}) against real tokenizers, "
          f"{len(unique)} distinct prompts:")
    for name, counter in counters.items():
        ratios = [budget.text_tokens(t) / max(1, counter(t)) for t in unique]
        print(f"  {name:8s} estimate / count: min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
              f"max {max(ratios):.3f} (below 1 would be an undercount)")


def main() -> int:
    ollama = OllamaStandIn().start()
    try:
        with LocalServer(extra_args=model_paths()) as server:
            rows, sent = asyncio.run(run_flows(server, ollama))
    finally:
        ollama.stop()
    report(rows)
    text_error(sent)
    worst = max(max(max(v) for v in row["per_role"].values()) for row in rows)
    print(f"\nLargest request of any run: {worst} tokens (context 4096)")
    return 0 if all(row["cut"] == 0 for row in rows) and worst <= 4096 else 1


if __name__ == "__main__":
    sys.exit(main())
