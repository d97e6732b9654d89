"""Brain node: which endpoint and model a role thinks with. Keys come only from environment variables."""
from __future__ import annotations

from comfy_api.latest import io

from ..agents.local_brain import EXAMPLES, FOLDER, LocalBrain, LocalBrainConfig
from ..agents.ollama_brain import OllamaBrain
from ..agents.openai_brain import LOCAL_CONTEXT, PROVIDERS, STRUCTURED_MODES, BrainConfig, OpenAIBrain
from ..agents.rule_default import offline_brain
from .runtime import NO_LOCAL_MODEL, ComfyDeviceManager, llm_folders, local_model_choices, watch_model_loads
from .types import BRAIN, CATEGORY

RULE = "rule (offline)"
LOCAL = "local"


class Brain(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        local_choices = local_model_choices()
        return io.Schema(
            node_id="EditAgentsBrain",
            display_name="Brain",
            category=CATEGORY,
            description="Chooses what a role thinks with: the offline rule brain (default, no network), a local "
                        f"vision-language model from models/{FOLDER}/ run by ComfyUI itself, or any "
                        "OpenAI-compatible endpoint (OpenAI, vLLM, LM Studio, llama.cpp, DashScope, Ark, DeepSeek, "
                        "Gemini), or Ollama through its own API (context size, keep_alive, unloading before ComfyUI "
                        "loads a model). Answers stream into the node's progress text and the Agent trace panel. "
                        "The API key is read from the environment variable you name; no widget ever holds a key.",
            inputs=[
                io.Combo.Input("provider", options=[RULE, LOCAL, *PROVIDERS], default=RULE,
                               tooltip=f"rule (offline) needs nothing; local runs the model chosen in local_model "
                                       f"(from models/{FOLDER}/) in ComfyUI; the others are OpenAI-compatible endpoints "
                                       "with preset base URLs (ollama speaks Ollama's own API)."),
                io.String.Input("model", default="",
                                tooltip="Model name at the endpoint, e.g. gpt-4o-mini, qwen2.5vl:7b, qwen-vl-max, doubao-1.5-vision-pro."),
                io.String.Input("base_url", default="",
                                tooltip="Leave empty for the provider's default; required for 'custom'. E.g. http://127.0.0.1:8000/v1; "
                                        "for Ollama elsewhere, its address with or without /v1 (http://192.168.1.5:11434)."),
                io.String.Input("api_key_env", default="",
                                tooltip="The NAME of the environment variable that holds the key (e.g. DASHSCOPE_API_KEY), never the key. "
                                        "Empty: the provider's usual variable; local endpoints need none."),
                io.Float.Input("temperature", default=0.2, min=0.0, max=2.0, step=0.05,
                               tooltip="Sampling temperature (0: always the most likely token)."),
                io.Int.Input("max_tokens", default=1024, min=16, max=32768, tooltip="Longest answer per call."),
                io.Float.Input("timeout", default=60.0, min=1.0, max=600.0, step=1.0, tooltip="Seconds per request before a retry."),
                io.Int.Input("image_side", default=768, min=64, max=4096,
                             tooltip="Images are downscaled so their longest side is at most this before they are sent."),
                io.Int.Input("concurrency", default=4, min=1, max=64,
                             tooltip="Requests in flight at once from this brain (two generators and three experts run concurrently)."),
                io.Int.Input("max_retries", default=3, min=0, max=10, tooltip="Retries on timeouts, 429 and 5xx (never on auth errors)."),
                io.Combo.Input("structured_output", options=list(STRUCTURED_MODES), default="json_schema",
                               tooltip="How answers are constrained: JSON schema where supported; it steps down automatically if refused."),
                io.Float.Input("rule_boldness", default=1.0, min=0.1, max=10.0, step=0.1,
                               tooltip="Rule brain only: scales the executor's first-try strengths (two rule generators can differ)."),
                io.Boolean.Input("allow_insecure_http", default=False, optional=True,
                                 tooltip="Send the API key over plain http:// to a machine other than this one. Off "
                                         "(the default) refuses, since anyone on the network could read the key; turn "
                                         "on only for a network you trust. Loopback addresses and https are always allowed."),
                io.Combo.Input("local_model", options=local_choices, default=NO_LOCAL_MODEL, optional=True,
                               tooltip=f"provider 'local' only: a Hugging Face model folder in models/{FOLDER}/ "
                                       f"(e.g. {EXAMPLES[0]}, {EXAMPLES[1]}, or a text-only model for planners). "
                                       "Loaded once, offline, and shared by every node that names it."),
                # added after local_model, so workflows saved before keep their values in place
                io.Int.Input("context", default=0, min=0, max=1_048_576, optional=True,
                             tooltip=f"Tokens the model sees per call, prompt and answer together; every request is "
                                     f"fitted to it (old history left out first). 0: the provider's default, "
                                     f"{LOCAL_CONTEXT} for local servers (Ollama's own on GPUs under 24 GB), the "
                                     "model's documented window for hosted ones and the model's own for 'local'. "
                                     "Ollama: sent as num_ctx, so Ollama "
                                     "gives the model this much; 8192 lets a 7B VLM read longer manuals and history "
                                     "if the GPU has room (memory grows with it). vLLM, LM Studio, llama.cpp: the "
                                     "context the server was started with."),
                io.String.Input("keep_alive", default="", optional=True,
                                tooltip="Ollama only: how long Ollama keeps the model loaded after a call: 5m, 1h, "
                                        "seconds (300), 0 (unload at once) or -1 (keep it loaded). Empty: Ollama's "
                                        "default (5 minutes)."),
                io.Boolean.Input("unload_before_models", default=False, optional=True,
                                 tooltip="Ollama only: before ComfyUI loads a model (an editor such as FLUX Kontext, "
                                         "a checkpoint, CLIP, the aesthetic head), ask Ollama to unload its models, so "
                                         "the VLM and the editor take turns on one GPU (e.g. a 7B VLM beside Kontext "
                                         "on 24 GB). Ollama loads the VLM again at its next call, which takes seconds."),
                io.Int.Input("seed", default=-1, min=-1, max=2**31 - 1, control_after_generate=False, optional=True,
                             tooltip="Sent with every call where the endpoint takes one (Ollama, OpenAI, vLLM, ...): "
                                     "the same inputs then give the same answers. -1: none, the endpoint samples "
                                     "freely."),
            ],
            outputs=[BRAIN.Output(display_name="brain", tooltip="Connect to any role or loop node's brain input.")],
        )

    @classmethod
    def execute(cls, provider, model, base_url, api_key_env, temperature, max_tokens, timeout, image_side, concurrency,
                max_retries, structured_output, rule_boldness, allow_insecure_http=False,
                local_model=NO_LOCAL_MODEL, context=0, keep_alive="", unload_before_models=False,
                seed=-1) -> io.NodeOutput:
        if provider == RULE:
            return io.NodeOutput(offline_brain(boldness=rule_boldness))
        if provider == LOCAL:
            name = "" if local_model == NO_LOCAL_MODEL else local_model
            config = LocalBrainConfig(model=name, folders=tuple(llm_folders()), temperature=temperature,
                                      max_tokens=max_tokens, image_side=image_side, context=int(context or 0),
                                      **({"seed": int(seed)} if seed is not None and seed >= 0 else {}))
            return io.NodeOutput(LocalBrain(config, manager=ComfyDeviceManager()))
        config = BrainConfig(provider=provider, model=model.strip(), base_url=base_url.strip(),
                             api_key_env=api_key_env.strip(), temperature=temperature, max_tokens=max_tokens,
                             timeout=timeout, image_side=image_side, concurrency=concurrency, max_retries=max_retries,
                             structured=structured_output, allow_insecure_http=bool(allow_insecure_http),
                             context=int(context or 0), keep_alive=(keep_alive or "").strip(),
                             unload_before_models=bool(unload_before_models),
                             seed=None if seed is None or seed < 0 else int(seed))
        if provider != "ollama":
            return io.NodeOutput(OpenAIBrain(config))
        if config.unload_before_models:
            watch_model_loads()  # ComfyUI's own loads then unload Ollama's models first
        return io.NodeOutput(OllamaBrain(config))


NODES = [Brain]
