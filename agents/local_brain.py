"""The local brain: a Hugging Face vision-language (or text-only) model from a ComfyUI model folder.

No server: the model is loaded from ``models/LLM/<name>/`` (offline only), once per process, and shared by
every role and node that names it. A ``DeviceManager`` (inside ComfyUI: ModelPatcher + ComfyUI's model
management) puts it on the GPU when there is one and lets ComfyUI offload it when a diffusion tool needs
the memory. Decoding is constrained by llguidance to the request's JSON schema, so even a small model
cannot answer with JSON that breaks it; the same meaning checks and bounded re-asks as the
OpenAI-compatible brain apply on top. Calls queue behind one lock per model; Cancel stops generation
between tokens.
"""
from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..tools.backends import require
from ..tools.errors import shown_by_name
from ..tools.imageops import resize_longest, to_uint8
from ..tools.models import LocalDevice, MissingModelError, ModelFileError
from . import budget
from .brain import BrainAnswer, BrainError, BrainRequest, ask_until_valid, system_for

FOLDER = "LLM"  # models/LLM/<name>/, the folder other ComfyUI VLM packs use
EXAMPLES = ("Qwen/Qwen2.5-VL-3B-Instruct", "HuggingFaceTB/SmolVLM-256M-Instruct", "Qwen/Qwen2.5-1.5B-Instruct (text only)")
# model_type values (config.json) of the vision-language families that load through AutoModelForImageTextToText
VISION_TYPES = ("qwen2_vl", "qwen2_5_vl", "smolvlm", "idefics3")
# Near the token budget, tokens that only close are favoured where the grammar allows them: first those that
# end a string (a quote, perhaps with ] and } after it), then those made of ] and } alone, then a lone comma (it
# ends a number in an object that still needs keys). A token that opens anything ({, [, letters) never is.
CLOSING_BONUS = ((lambda t: t[:1] == '"' and set(t[1:]) <= set('"]}'), 3e4), (lambda t: set(t) <= set("]}"), 2e4),
                 (lambda t: t == ",", 1e4))
CLOSE_AFTER = 0.5  # past this share of max_tokens, the grammar's closing tokens are favoured, so answers finish


@shown_by_name
class GenerationCancelled(BrainError):
    """Generation stopped between tokens because the run was cancelled."""


def model_entries(folders: Sequence[Path]) -> list[str]:
    """The model folders a Brain can offer: sub-folders with a config.json."""
    names: set[str] = set()
    for folder in folders:
        if Path(folder).is_dir():
            names |= {p.name for p in Path(folder).iterdir() if p.is_dir() and (p / "config.json").is_file()}
    return sorted(names)


def find_model(name: str, folders: Sequence[Path]) -> Path:
    """The folder of model ``name``, checked for the files loading needs; errors name the folder and what to get."""
    where = ", ".join(str(f) for f in folders) or f"models/{FOLDER}/ (no folder registered)"
    if not name:
        raise MissingModelError(f"no local model chosen: put a model folder in {where} (e.g. {EXAMPLES[0]} or "
                                f"{EXAMPLES[1]}, downloaded with `huggingface-cli download <repo> --local-dir "
                                f"models/{FOLDER}/<name>`) and pick it on the Brain node")
    for folder in folders:
        path = Path(folder) / name
        if path.is_dir():
            break
    else:
        raise MissingModelError(f"the local model '{name}' is not in {where}. Put a Hugging Face model folder there "
                                f"(config.json, *.safetensors, tokenizer files), e.g. {EXAMPLES[0]} or {EXAMPLES[1]}.")
    missing = []
    if not (path / "config.json").is_file():
        missing.append("config.json")
    if not any(path.glob("*.safetensors")):
        missing.append("the weights (*.safetensors)")
    if not ((path / "tokenizer.json").is_file() or (path / "tokenizer_config.json").is_file()):
        missing.append("the tokenizer (tokenizer.json / tokenizer_config.json)")
    if _model_type(path) in VISION_TYPES and not any(
            (path / f).is_file() for f in ("preprocessor_config.json", "processor_config.json")):
        missing.append("the image processor (preprocessor_config.json or processor_config.json)")
    if missing:
        raise MissingModelError(f"the local model folder {path} is incomplete: {', '.join(missing)} missing. Download "
                                f"the whole repository (e.g. {EXAMPLES[0]}), not just the weights.")
    return path


def _model_type(path: Path) -> str:
    try:
        return str(json.loads((path / "config.json").read_text()).get("model_type", ""))
    except (OSError, json.JSONDecodeError):
        return ""


def preferred_dtype(device: Any) -> Any:
    """bf16 on a GPU that has it, else fp16 on a GPU; fp32 on the CPU (half precision is slow there)."""
    return LocalDevice().dtype(device)


class LocalModel:
    """One loaded model with its processor, the grammar's view of its tokenizer, and the lock that queues calls."""

    def __init__(self, path: Path, manager: Any):
        transformers = require("transformers")
        self.path, self.manager = path, manager
        self.vision = _model_type(path) in VISION_TYPES
        device = manager.device() if hasattr(manager, "device") else LocalDevice().device()
        dtype = manager.dtype(device) if hasattr(manager, "dtype") else preferred_dtype(device)
        try:
            if self.vision:
                self.processor = transformers.AutoProcessor.from_pretrained(path, local_files_only=True)
                self.tokenizer = self.processor.tokenizer
                self.model = transformers.AutoModelForImageTextToText.from_pretrained(path, local_files_only=True,
                                                                                      dtype=dtype)
            else:
                self.tokenizer = self.processor = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
                self.model = transformers.AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=dtype)
        except (OSError, ValueError, KeyError, RuntimeError, ImportError) as err:  # ImportError: e.g. num2words
            raise ModelFileError(f"{path} could not be loaded as a Hugging Face model: {type(err).__name__}: "
                                 f"{str(err)[:300]}. Check that the whole repository was downloaded (e.g. "
                                 f"{EXAMPLES[0]}) and that this transformers version supports it.") from None
        self.model.eval()
        self.lock = threading.Lock()  # one generation at a time: calls queue here
        self.tokens_generated = 0  # over the model's life, all callers
        self.dtype = dtype
        gen = self.model.generation_config
        eos = gen.eos_token_id if gen.eos_token_id is not None else self.tokenizer.eos_token_id
        self.eos = [eos] if isinstance(eos, int) else list(eos or [])
        self.vocab = self.model.get_output_embeddings().weight.shape[0]
        self._grammar_tokenizer = None
        self._closers: Any = None
        config = getattr(self.model.config, "text_config", None) or self.model.config  # VLMs nest the LM's
        self.context = int(getattr(config, "max_position_embeddings", 0) or 32768)

    def place(self) -> Any:
        """Load to the compute device (ComfyUI may have offloaded it for a diffusion model) and return it."""
        return self.manager.place(self.model)

    def grammar_tokenizer(self) -> Any:
        """llguidance's view of the tokenizer: built once (about a second for a 150k vocabulary)."""
        if self._grammar_tokenizer is None:
            hf = require("llguidance.hf")
            self._grammar_tokenizer = hf.from_tokenizer(self.tokenizer, n_vocab=self.vocab, eos_token=self.eos[0])
        return self._grammar_tokenizer

    def closers(self) -> Any:
        """A bonus per token id (``CLOSING_BONUS``), added near the token budget so that answers close."""
        if self._closers is None:
            import torch

            bonus = torch.zeros(self.vocab)
            for i in range(min(len(self.tokenizer), self.vocab)):
                text = self.tokenizer.decode([i]).strip()
                bonus[i] = next((b for closes, b in CLOSING_BONUS if text and closes(text)), 0.0)
            self._closers = bonus
        return self._closers


class ModelShelf:
    """The process's loaded local models, by folder: each loaded once and shared by every node and role that
    names it (like ComfyUI's own list of loaded models). ``loads`` counts the loads, for tests."""

    def __init__(self):
        self._models: dict[Path, LocalModel] = {}
        self._lock = threading.Lock()
        self.loads: Counter[Path] = Counter()

    def get(self, path: Path, manager: Any) -> LocalModel:
        path = Path(path).resolve()
        with self._lock:
            if path not in self._models:
                self._models[path] = LocalModel(path, manager)
                self.loads[path] += 1
            return self._models[path]

    def forget(self, path: Path | None = None) -> None:
        """Drop one model (or all): the next use loads it again."""
        with self._lock:
            if path is None:
                self._models.clear()
            else:
                self._models.pop(Path(path).resolve(), None)


SHELF = ModelShelf()  # one per process, so two Brain nodes naming the same folder share one model


@dataclass(frozen=True)
class LocalBrainConfig:
    model: str  # the folder's name under models/LLM/
    folders: tuple[Path, ...] = ()
    temperature: float = 0.0  # 0: greedy, the same answer to the same question
    max_tokens: int = 1024
    image_side: int = 768
    reasks: int = 2
    constrained: bool = True  # decoding follows the schema (llguidance); off only to measure what it costs
    seed: int = 0
    context: int = 0  # tokens per call, prompt and answer; 0: the model's own window (its config)

    def __post_init__(self):
        if self.max_tokens < 16 or self.image_side < 16 or self.reasks < 0 or self.temperature < 0:
            raise BrainError("max_tokens and image_side must be at least 16, reasks and temperature 0 or more")


class LocalBrain:
    """The Brain interface over a ``LocalModel``."""

    def __init__(self, config: LocalBrainConfig, manager: Any = None, shelf: ModelShelf = SHELF):
        self.config = config
        self.path = find_model(config.model, config.folders)  # a missing folder is reported when the node runs
        self.name = f"local/{config.model}"
        self.vision = _model_type(self.path) in VISION_TYPES
        self.manager, self.shelf = manager or LocalDevice(), shelf
        self._draws = itertools.count()  # calls so far: each sampled call gets its own seed from it

    def resampled(self, temperature: float, seed: int | None) -> "LocalBrain":
        """The same model sampling at ``temperature`` with ``seed`` (CCA's second generator)."""
        config = replace(self.config, temperature=temperature, seed=self.config.seed if seed is None else seed)
        return LocalBrain(config, self.manager, self.shelf)

    def model(self) -> LocalModel:
        return self.shelf.get(self.path, self.manager)

    async def ask(self, request: BrainRequest) -> BrainAnswer:
        start = time.perf_counter()
        model = await asyncio.to_thread(self.model)
        answer = BrainAnswer(data={}, brain=self.name)
        if request.images and not model.vision:
            answer.notes.append(f"{len(request.images)} image(s) not shown: {self.config.model} reads text only")
        system, answer.prompt_tokens, left_out = await asyncio.to_thread(self.fit, model, request)
        answer.notes.extend(left_out)
        images = list(request.images) if model.vision else []  # the fit may have left thumbnails out
        messages = [{"role": "system", "content": system}, {"role": "user", "content": self._user(request, images)}]

        async def complete(chat: list[dict]) -> str:
            cancelled = threading.Event()
            try:
                return await asyncio.to_thread(self.generate, model, chat, images, request.schema, answer, cancelled)
            except asyncio.CancelledError:
                cancelled.set()  # the thread stops at its next token and frees the model for the next caller
                raise

        answer.data = await ask_until_valid(request, messages, answer, self.config.reasks + 1, complete,
                                            f"{self.name} ({self.path})")
        answer.wall_ms = (time.perf_counter() - start) * 1000.0
        return answer

    @staticmethod
    def _user(request: BrainRequest, images: list[np.ndarray]) -> list[dict]:
        return [{"type": "image"} for _ in images] + [{"type": "text", "text": request.text}]

    def fit(self, model: LocalModel, request: BrainRequest) -> tuple[str, int, list[str]]:
        """Trim ``request`` to the model's context, counted exactly by its own processor (images included);
        the schema goes in the prompt only when decoding is not constrained to it."""
        def count(system: str, req: BrainRequest) -> int:
            images = list(req.images) if model.vision else []
            return self.prompt_length(model, [{"role": "system", "content": system},
                                              {"role": "user", "content": self._user(req, images)}], images)

        window = self.window(model)  # the answer gets what the prompt leaves (generate), at least a quarter
        return budget.fit(request, lambda r: system_for(r, self.config.constrained), context=window,
                          answer_tokens=min(self.config.max_tokens, window // 4), side=self.config.image_side, model=self.config.model,
                          who=f"{self.name} ({self.path})", count=count,
                          setting=f"the model's context ({window} tokens; {self.config.model} allows {model.context})")

    def window(self, model: LocalModel) -> int:
        """The tokens a call may take, prompt and answer: the Brain's context, within the model's own."""
        return min(self.config.context or model.context, model.context)

    def prompt_length(self, model: LocalModel, chat: list[dict], images: list[np.ndarray]) -> int:
        """The tokens ``chat`` takes once through the model's chat template and processor."""
        chat = [{**m, "content": m["content"] if isinstance(m["content"], list)
                 else [{"type": "text", "text": m["content"]}]} for m in chat]
        prompt = model.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        if model.vision:
            pictures = [_picture(img, self.config.image_side) for img in images]
            return int(model.processor(text=[prompt], images=pictures or None, return_tensors="np")["input_ids"].shape[1])
        return len(model.tokenizer([prompt], add_special_tokens=False)["input_ids"][0])

    def generate(self, model: LocalModel, chat: list[dict], images: list[np.ndarray], schema: dict | None,
                 answer: BrainAnswer, cancelled: threading.Event | None = None,
                 should_stop: Callable[[], bool] | None = None) -> str:
        """One answer (blocking): the chat through the model's processor, decoding constrained to ``schema``."""
        import torch

        transformers = require("transformers")
        chat = [{**m, "content": m["content"] if isinstance(m["content"], list)
                 else [{"type": "text", "text": m["content"]}]} for m in chat]  # every template reads parts
        prompt = model.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
        pictures = [_picture(img, self.config.image_side) for img in images]
        with model.lock:
            device = model.place()
            if model.vision:
                inputs = model.processor(text=[prompt], images=pictures or None, return_tensors="pt")
            else:
                inputs = model.tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            inputs = {k: (v.to(device, model.dtype) if v.is_floating_point() else v.to(device))
                      for k, v in inputs.items() if hasattr(v, "to")}
            prompt_len = inputs["input_ids"].shape[1]
            processors = transformers.LogitsProcessorList()
            constraint = None
            if schema is not None and self.config.constrained:
                constraint = SchemaConstraint(model, schema, prompt_len, self.config.max_tokens)
                processors.append(constraint)
            stop = _Stop(model, cancelled, should_stop)
            stops = transformers.StoppingCriteriaList([stop])
            sampling = dict(do_sample=True, temperature=self.config.temperature) if self.config.temperature > 0 \
                else dict(do_sample=False, temperature=None, top_p=None, top_k=None)
            # sampling draws from the process's torch RNG: fork it, so it is left as it was, and seed this call
            # with the brain's seed advanced by one per call (a re-ask or a second generator gets other draws)
            draw = next(self._draws)
            devices = [device] if getattr(device, "type", "cpu") == "cuda" else []
            with torch.random.fork_rng(devices=devices, enabled=self.config.temperature > 0), torch.inference_mode():
                if self.config.temperature > 0:
                    torch.manual_seed(self.config.seed * 1_000_003 + draw)
                out = model.model.generate(**inputs, max_new_tokens=max(1, min(self.config.max_tokens,
                                                                                self.window(model) - prompt_len)), logits_processor=processors,
                                           stopping_criteria=stops, eos_token_id=model.eos,
                                           pad_token_id=model.tokenizer.pad_token_id or model.eos[0], **sampling)
        if stop.stopped:
            raise GenerationCancelled(f"{self.name}: generation cancelled after {out.shape[1] - prompt_len} token(s)")
        new = out[0, prompt_len:].tolist()
        answer.requests += 1
        answer.tokens_in += prompt_len
        answer.tokens_out += len(new)
        if constraint is not None and constraint.error:
            answer.notes.append(f"grammar: {constraint.error}")
        return model.tokenizer.decode(new, skip_special_tokens=True)


def _picture(img: np.ndarray, side: int):
    from PIL import Image

    small = to_uint8(resize_longest(img, side))
    arr = small[:, :, 0] if small.shape[2] == 1 else small[:, :, :3]
    return Image.fromarray(arr).convert("RGB")


class _Stop:
    """Checked after every token: a cancelled call (its task was cancelled) or ``should_stop`` ends generation."""

    def __init__(self, model: "LocalModel", cancelled: threading.Event | None, should_stop: Callable[[], bool] | None):
        self.model, self.cancelled, self.should_stop = model, cancelled, should_stop
        self.stopped = False

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        self.model.tokens_generated += 1
        self.stopped = bool(self.cancelled is not None and self.cancelled.is_set()) or bool(
            self.should_stop and self.should_stop())
        return torch.full((input_ids.shape[0],), self.stopped, dtype=torch.bool, device=input_ids.device)


class SchemaConstraint:
    """A logits processor that lets through only the tokens the JSON schema's grammar allows (llguidance).

    Past ``CLOSE_AFTER`` of the token budget it also favours the tokens that close a string, list or object,
    so that even a model that would ramble (or random weights) ends with complete, valid JSON.
    """

    def __init__(self, model: LocalModel, schema: dict, prompt_len: int, budget: int):
        llguidance = require("llguidance")
        self.model, self.prompt_len, self.budget = model, prompt_len, budget
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        self.matcher = llguidance.LLMatcher(model.grammar_tokenizer(), grammar, log_level=0)
        if self.matcher.is_error():
            raise BrainError(f"the answer's schema cannot be turned into a grammar: {self.matcher.get_error()}")
        self.mask = np.full(((model.vocab + 31) // 32,), -1, dtype=np.int32)
        self.seen = 0
        self.error = ""

    def __call__(self, input_ids, scores):
        import torch

        generated = input_ids[0, self.prompt_len:].tolist()
        for token in generated[self.seen:]:
            if not self.matcher.consume_token(token) and not self.error:
                self.error = self.matcher.get_error() or f"token {token} refused"
        self.seen = len(generated)
        if self.matcher.is_error():
            return scores  # nothing to steer with: the answer is checked and re-asked like any other
        self.matcher.unsafe_compute_mask_ptr(self.mask.ctypes.data, self.mask.nbytes)
        allowed = np.unpackbits(self.mask.view(np.uint8), bitorder="little")[:scores.shape[-1]].astype(bool)
        blocked = torch.from_numpy(~allowed).to(scores.device)
        scores = scores.masked_fill(blocked, float("-inf"))
        if self.seen >= CLOSE_AFTER * self.budget:
            scores = scores + self.model.closers().to(scores.device, scores.dtype)
        return scores
