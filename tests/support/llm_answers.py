"""A model that answers every role with a valid answer drawn from the schema it was sent (OpenAI's
``response_format`` or Ollama's ``format``): the simplest instance that fits, so a whole workflow runs on it
whatever its roles ask. Used to run the shipped LLM workflows end to end against a loopback endpoint."""
from __future__ import annotations

from typing import Any


def instance(schema: dict[str, Any]) -> Any:
    """The simplest value that fits ``schema``: enum's first, a number's midpoint, one item per list (or the
    minimum), every required key of an object, the first of ``anyOf``."""
    if "anyOf" in schema:
        return instance(schema["anyOf"][0])
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        props = schema.get("properties", {})
        return {key: instance(props.get(key, {"type": "string"})) for key in schema.get("required", [])}
    if kind == "array":
        count = min(max(schema.get("minItems", 1), 1), schema.get("maxItems", 1))
        return [instance(schema.get("items", {"type": "string"})) for _ in range(count)]
    if kind in ("number", "integer"):
        lo, hi = schema.get("minimum"), schema.get("maximum")
        value = (lo + hi) / 2 if lo is not None and hi is not None else lo if lo is not None else 0
        return round(value) if kind == "integer" else value
    if kind == "boolean":
        return False
    return "ok"


def schema_of(body: dict[str, Any]) -> dict[str, Any] | None:
    """The answer's schema a request carries, in either API's field."""
    fmt = body.get("response_format") or {}
    if fmt.get("type") == "json_schema":
        return fmt["json_schema"]["schema"]
    return body.get("format") if isinstance(body.get("format"), dict) else None


def valid_answer(body: dict[str, Any]) -> Any:
    """A valid answer to the request ``body``."""
    schema = schema_of(body)
    if schema is None:
        raise AssertionError("the request carried no schema to answer from")
    return instance(schema)


ROLES = (("You rate photographs", "rating"), ("You are the Planner", "planner"), ("You are the Tool Executor", "executor"),
         ("You are the Aggregator", "aggregator"), ("You are the Quality Competitor", "competitor"),
         ("You are the Perceiver", "perceiver"), ("Describe the photo", "caption"),
         ("You are the Discriminator of an image-editing system, looking", "answers"),
         ("You are the Discriminator", "questions"))


def role_of(body: dict[str, Any]) -> str:
    """The role a chat request was sent for, read from its system prompt's opening (experts name themselves)."""
    system = next((m.get("content") for m in body.get("messages", []) if m.get("role") == "system"), "") or ""
    system = system if isinstance(system, str) else " ".join(p.get("text", "") for p in system)
    found = next((role for start, role in ROLES if system.startswith(start)), None)
    return found or ("expert" if "panel of expert critics" in system[:200] else system[:40])


def pointed_at(prompt: dict[str, Any], url: str, context: int | None = None, photo: str | None = None) -> dict:
    """An API prompt (a converted shipped workflow) with every Brain node sent to ``url`` (with ``context`` when
    given) and every Load Photo reading ``photo`` when given."""
    for node in prompt.values():
        if node["class_type"] == "EditAgentsBrain" and node["inputs"].get("provider") not in ("rule (offline)", "local"):
            node["inputs"]["base_url"] = url
            if context is not None:
                node["inputs"]["context"] = context
        if node["class_type"] == "EditAgentsLoadPhoto" and photo is not None:
            node["inputs"]["image"] = photo
    return prompt


TINY_EDITOR = {"UNETLoader": ("unet_name", "tiny-flux-kontext.safetensors"),
               "VAELoader": ("vae_name", "tiny-flux-vae.safetensors")}


def with_tiny_editor(prompt: dict) -> dict:
    """An edit-model workflow with the tests' tiny FLUX (Kontext's architecture) in place of the files a user
    downloads, and CLIP from the tiny SD1.5 checkpoint (what the tiny FLUX reads): its Toolbox then offers the
    edit tools as on a user's machine, so the requests carry them."""
    for key, node in list(prompt.items()):
        if node["class_type"] in TINY_EDITOR:
            name, value = TINY_EDITOR[node["class_type"]]
            node["inputs"][name] = value
        if node["class_type"] in ("DualCLIPLoader", "CLIPLoader"):
            prompt[key] = {"class_type": "CheckpointLoaderSimple", "inputs": {"ckpt_name": "tiny-sd15.safetensors"}}
            for other in prompt.values():
                for inp, value in other["inputs"].items():
                    if value == [key, 0]:
                        other["inputs"][inp] = [key, 1]
    return prompt
