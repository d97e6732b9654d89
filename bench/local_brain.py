"""Benchmark: the local brain (agents/local_brain.py) on the tiny random-weight models, on the CPU.

For each model family (tests/support/tiny_vlms.py: qwen2-vl, smolvlm, text by default; the vision families get one
96x128 photo with every request) and three role schemas (planner: plan_schema over the default toolbox,
expert: EXPERT, caption: CAPTION), greedy decoding, the brain's budget 128 tokens (--max-tokens), torch on one
thread (--threads; with two on this 2-core machine the same generate call swings by up to 2x from run to run),
the process pinned to one CPU (--pin):

1. The product's path, ``await LocalBrain.ask(request)`` (constrained by llguidance): first-token latency
   (from the call to the moment token 1 exists), decode tokens per second, memory. Times come from a forward
   pre-hook on the model that stamps the start of every forward pass: pass 1 is the prompt, pass k+1 starts
   right after token k is chosen, so token 1 exists at the start of pass 2 (a streamer's put() agrees to
   0.1 ms) and the decode step is the median interval between passes (tokens/s = 1 / step). Memory: process
   RSS before and after loading and after the warm-up answers, and the peak RSS over the timed answers (VmHWM,
   reset through /proc/self/clear_refs after the warm-up; tracemalloc does not see torch's allocations).
2. The pack's overhead against a raw ``model.generate(**inputs)`` written by hand on the same prompt and the
   same processor outputs (built once, outside the timing), at EQUAL new-token counts:
     A  pack, constrained:   ``LocalBrain.ask``: N tokens (greedy, so N is the same every run; an answer that
                             needed a re-ask is flagged)
     D  raw + grammar:       ``model.generate(**inputs, logits_processor=[SchemaConstraint(...)])``, the pack's
                             own processor and budget, built inside the timing: the same answer as A (checked),
                             so the same N
     B  pack, unconstrained: ``LocalBrain.generate`` with constrained=False and max_tokens=N, then extract_json
                             and the request's checks (what ``ask`` does with an answer)
     C  raw:                 ``model.generate(**inputs, max_new_tokens=N, min_new_tokens=N)``
   B is held to exactly N tokens by setting ``min_new_tokens=N`` on the loaded model's generation_config for
   the B runs (the pack passes no min_new_tokens, so generate takes it from there): B and C run the same
   min-length processor. The counts are checked and printed. Raw runs are under torch.inference_mode, as the
   pack's are (generate's own decorator is only no_grad, about 10% slower on these models: printed as well).
   Overhead of the pack: A/D - 1 (constrained) and B/C - 1 (unconstrained), target <= 10%.
3. Constrained against unconstrained at equal N: per answer D/C - 1 (grammar build + masks), per token the
   median decode step of D over C's; target <= 20%. The % figures are medians of the ratios of runs taken
   side by side (each repeat runs A, D, B, C and C without inference_mode one after another, every role in
   turn, every other repeat in the reverse order). Two cross-checks, less exposed to other work on the machine
   (which only adds time): the ratio of the fastest run of each kind, and the parts of each run (time before
   the first forward pass, after the last one started, and N - 2 median decode steps; medians of each).
   The pack's extra per answer (A - D) is broken down by timing the calls the pack makes (chat
   template, picture, place, processor, decode, extract_json, checks), and the grammar's step statement by
   statement with a copy of SchemaConstraint.__call__ (a warning is printed if the product's code changed).
4. Grammar libraries installed in the venv: llguidance (the product's SchemaConstraint, and a plain adapter),
   xgrammar and lm-format-enforcer, with adapters written here in the same shape (consume the newest token,
   compute the library's mask, apply it with plain torch, add the pack's closing-token bonus past half the
   budget so that every library can finish within the budget): tokenizer view build, schema compile time,
   per-token library time (consume + mask) and apply time, and how many of --runs sampled answers
   (temperature 1, seeds 0..runs-1) parse and validate against the schema (jsonschema). No torch.compile:
   llguidance.torch.apply_token_bitmask_inplace is compiled and is not used. xgrammar and lm-format-enforcer
   are not in the pack's requirements: a library that is missing or fails to set up is reported, not fatal.
5. The same grammar costs at a real vocabulary, when a Hugging Face tokenizer folder is at hand (default:
   Qwen2.5's, which the ComfyUI checkout in .setup/ ships; 151,936 logits as in Qwen2.5-VL): no model, seeded
   random scores each step, the masked argmax is the next token.

Every timed figure is a median of --repeats runs after a warm-up answer per family and role (the family's
first answer builds llguidance's tokenizer view and the closing-token table; that cold answer is printed on
its own); after the warm-up the objects made so far are frozen out of the garbage collector (gc.freeze), so
that a full collection (about 0.2 s over the ~430k objects of torch and transformers) lands on no answer.
Models are built into a temporary folder; nothing is downloaded. About 100 s on 2 cores (more when other
work shares the machine: the last line says how much of it other processes used).

Run: HF_HUB_OFFLINE=1 .venv/bin/python bench/local_brain.py [--quick] [--repeats 9] [--runs 5]
     [--families qwen2-vl,smolvlm,text] [--roles planner,expert,caption] [--max-tokens 128] [--no-write]
Writes the printed tables to bench/results/local_brain.txt (unless --no-write).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import datetime
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "support"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

import torch  # noqa: E402
import transformers  # noqa: E402
from tiny_vlms import build_tiny_model  # noqa: E402

from edit_agents.agents import schemas  # noqa: E402
from edit_agents.agents.brain import BrainAnswer, BrainRequest, extract_json, system_with_schema, validate  # noqa: E402
from edit_agents.agents.local_brain import (  # noqa: E402
    CLOSE_AFTER, LocalBrain, LocalBrainConfig, ModelShelf, SchemaConstraint, _picture)
from edit_agents.tools import default_registry  # noqa: E402

transformers.logging.set_verbosity_error()
transformers.utils.logging.disable_progress_bar()
warnings.filterwarnings("ignore")

FAMILIES = ("qwen2-vl", "smolvlm", "text")
ROLES = {
    "planner": ("You are the planner of a photo editing agent. Split the request into subtasks, one tool each.",
                "Make the sky brighter, add contrast and crop the photo to a square.",
                lambda: schemas.plan_schema([s.name for s in default_registry().specs()])),
    "expert": ("You are an expert judge of photo edits. Score how well the edit did its subtask.",
               "Subtask: brighten the sky. Compare the edited photo with the original.", lambda: schemas.EXPERT),
    "caption": ("You describe photos for an editing agent.", "Describe this photo in one sentence.",
                lambda: schemas.CAPTION),
}
MIB = 1024 * 1024
# section 5: a real vocabulary. ComfyUI ships Qwen2.5's tokenizer (the tokenizer of Qwen2.5-VL, the pack's first
# example); its models have 151,936 embedding rows (the tokenizer's 151,665 tokens and padding)
REAL_TOKENIZER = HERE.parent / ".setup" / "ComfyUI" / "comfy" / "text_encoders" / "qwen25_tokenizer"
REAL_VOCAB = 151936
LINES: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LINES.append(line)


def med(values) -> float:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else float("nan")


def photo() -> np.ndarray:
    rng = np.random.default_rng(0)
    y, x = np.mgrid[0:96, 0:128] / 128.0
    return np.clip(np.stack([x, y, 1 - x], -1) * 0.8 + rng.random((96, 128, 3)) * 0.2, 0, 1).astype(np.float32)


# ---------------------------------------------------------------- memory

def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def machine_busy() -> float | None:
    """Seconds of CPU time the whole machine has spent busy since boot (/proc/stat), or None."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except (OSError, ValueError, IndexError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def own_cpu() -> float:
    t = os.times()
    return t.user + t.system


def reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS (Linux >= 4.0)
        return True
    except OSError:
        return False


def peak() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return rss()


# ---------------------------------------------------------------- timing one generation

class Stamps:
    """Forward pre-hook on the model: the perf_counter time at which each forward pass starts."""

    def __init__(self, module):
        self.times: list[float] = []
        self.handle = module.register_forward_pre_hook(lambda mod, args: self.times.append(time.perf_counter()))

    def reset(self) -> None:
        self.times = []

    def figures(self, t0: float, n: int) -> tuple[float | None, float | None]:
        """(seconds from t0 to the first new token, the median decode step): the forward passes start at
        t[0] (the prompt) and t[k] right after token k was chosen, so token 1 exists at t[1], and the intervals
        t[k+1] - t[k] are the steps of tokens 2..N-1 (median: a short burst of other work does not move it)."""
        t = self.times
        if len(t) < 3:
            return None, None
        return t[1] - t0, statistics.median(b - a for a, b in zip(t[1:], t[2:]))


def build_inputs(brain: LocalBrain, lm, request: BrainRequest, images: list[np.ndarray]) -> dict:
    """The processor outputs exactly as LocalBrain.generate makes them (same calls, same order)."""
    user = [{"type": "image"} for _ in images] + [{"type": "text", "text": request.text}]
    chat = [{"role": "system", "content": [{"type": "text", "text": system_with_schema(request)}]},
            {"role": "user", "content": user}]
    prompt = lm.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
    pictures = [_picture(img, brain.config.image_side) for img in images]
    if lm.vision:
        inputs = lm.processor(text=[prompt], images=pictures or None, return_tensors="pt")
    else:
        inputs = lm.tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
    device = lm.place()
    return {k: (v.to(device, lm.dtype) if v.is_floating_point() else v.to(device))
            for k, v in inputs.items() if hasattr(v, "to")}


def greedy(lm) -> dict:
    return dict(do_sample=False, temperature=None, top_p=None, top_k=None, eos_token_id=lm.eos,
                pad_token_id=lm.tokenizer.pad_token_id or lm.eos[0])


def raw_generate(lm, inputs: dict, n: int, inference_mode: bool = True) -> tuple[float, int]:
    """generate by hand, held to n new tokens; under inference_mode as the pack runs it (generate's own
    decorator is only no_grad), unless told otherwise."""
    t0 = time.perf_counter()
    with torch.inference_mode(inference_mode):
        out = lm.model.generate(**inputs, max_new_tokens=n, min_new_tokens=n, **greedy(lm))
    return time.perf_counter() - t0, out.shape[1] - inputs["input_ids"].shape[1]


def raw_constrained(lm, inputs: dict, schema: dict, budget: int) -> tuple[float, list[int]]:
    """generate by hand with the pack's own SchemaConstraint (built inside the timing) and budget."""
    t0 = time.perf_counter()
    prompt_len = inputs["input_ids"].shape[1]
    constraint = SchemaConstraint(lm, schema, prompt_len, budget)
    with torch.inference_mode():
        out = lm.model.generate(**inputs, max_new_tokens=budget, logits_processor=transformers.LogitsProcessorList(
            [constraint]), **greedy(lm))
    return time.perf_counter() - t0, out[0, prompt_len:].tolist()


LOOP = asyncio.new_event_loop()  # one long-lived loop, as inside ComfyUI (its to_thread workers are reused)


async def _timed_ask(brain: LocalBrain, request: BrainRequest) -> tuple[float, float, BrainAnswer]:
    t0 = time.perf_counter()
    answer = await brain.ask(request)
    return t0, time.perf_counter() - t0, answer


def pack_ask(brain: LocalBrain, request: BrainRequest) -> tuple[float, float, BrainAnswer]:
    return LOOP.run_until_complete(_timed_ask(brain, request))


def pack_unconstrained(brain: LocalBrain, lm, request: BrainRequest, images: list[np.ndarray],
                       n: int) -> tuple[float, float, int]:
    """LocalBrain.generate (constrained=False) held to n tokens, then what ask does with the text."""
    messages = [{"role": "system", "content": system_with_schema(request)},
                {"role": "user", "content": [{"type": "image"} for _ in images]
                 + [{"type": "text", "text": request.text}]}]
    answer = BrainAnswer(data={}, brain=brain.name)
    config = lm.model.generation_config
    config.min_new_tokens = n
    try:
        t0 = time.perf_counter()
        text = brain.generate(lm, messages, images, request.schema, answer)
        try:
            request.problem(extract_json(text))
        except ValueError:
            pass  # random weights, no grammar: not JSON (the re-ask is not counted; this is one answer's cost)
        return t0, time.perf_counter() - t0, answer.tokens_out
    finally:
        config.min_new_tokens = None


# ---------------------------------------------------------------- the constraint's own steps

class ProfiledConstraint(SchemaConstraint):
    """SchemaConstraint.__call__, statement by statement, with a timer between them (same code as the pack's
    on the day this was written; used only for the breakdown, never for the headline figures)."""

    PARTS = ("tolist + consume", "compute mask", "unpackbits", "from_numpy + masked_fill", "closers bonus")

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.parts: dict[str, list[float]] = {p: [] for p in self.PARTS}

    def __call__(self, input_ids, scores):
        p = time.perf_counter
        t0 = p()
        generated = input_ids[0, self.prompt_len:].tolist()
        for token in generated[self.seen:]:
            if not self.matcher.consume_token(token) and not self.error:
                self.error = self.matcher.get_error() or f"token {token} refused"
        self.seen = len(generated)
        if self.matcher.is_error():
            return scores
        t1 = p()
        self.matcher.unsafe_compute_mask_ptr(self.mask.ctypes.data, self.mask.nbytes)
        t2 = p()
        allowed = np.unpackbits(self.mask.view(np.uint8), bitorder="little")[:scores.shape[-1]].astype(bool)
        t3 = p()
        blocked = torch.from_numpy(~allowed).to(scores.device)
        scores = scores.masked_fill(blocked, float("-inf"))
        t4 = p()
        if self.seen >= CLOSE_AFTER * self.budget:
            scores = scores + self.model.closers().to(scores.device, scores.dtype)
            self.parts["closers bonus"].append(p() - t4)
        for name, dt in zip(self.PARTS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
            self.parts[name].append(dt)
        return scores


def profiled_copy_is_current() -> bool:
    """Whether ProfiledConstraint.__call__ still copies SchemaConstraint.__call__ (its lines, less the timers)."""
    import inspect

    def lines(fn, drop=()):
        out = []
        for line in inspect.getsource(fn).splitlines()[1:]:
            code = line.split("#")[0].strip()
            if code and not code.startswith(("import ", '"""')) and not any(d in code for d in drop):
                out.append(code)
        return out
    try:
        return lines(SchemaConstraint.__call__) == lines(ProfiledConstraint.__call__, (
            "p()", "p = ", "self.parts", "zip(self.PARTS"))
    except OSError:  # no source to compare (a frozen install): no warning
        return True


# ---------------------------------------------------------------- grammar library adapters

class Masked(transformers.LogitsProcessor):
    """The common shape: consume the newest token and compute the mask (library time), then apply it with
    plain torch and add the pack's closing-token bonus past CLOSE_AFTER of the budget (apply time)."""

    def __init__(self, lm, prompt_len: int, budget: int):
        self.lm, self.prompt_len, self.budget = lm, prompt_len, budget
        self.lib_s: list[float] = []
        self.apply_s: list[float] = []
        self.error = ""

    def allowed(self, input_ids) -> np.ndarray | None:  # bool per token id, or None: leave the scores alone
        raise NotImplementedError

    def __call__(self, input_ids, scores):
        t0 = time.perf_counter()
        allowed = self.allowed(input_ids)
        t1 = time.perf_counter()
        if allowed is not None:
            blocked = torch.from_numpy(~allowed[:scores.shape[-1]])
            scores = scores.masked_fill(blocked, float("-inf"))
            if input_ids.shape[1] - self.prompt_len >= CLOSE_AFTER * self.budget:
                scores = scores + self.lm.closers().to(scores.dtype)
        self.lib_s.append(t1 - t0)
        self.apply_s.append(time.perf_counter() - t1)
        return scores


def unpack(bitmask: np.ndarray, vocab: int) -> np.ndarray:
    return np.unpackbits(bitmask.view(np.uint8), bitorder="little")[:vocab].astype(bool)


class LLGuidance:
    name = "llguidance"

    def __init__(self, lm):
        import llguidance

        self.llg, self.lm = llguidance, lm
        t0 = time.perf_counter()
        lm._grammar_tokenizer = None  # built again here, to time it
        self.tokenizer = lm.grammar_tokenizer()
        self.prepare_s = time.perf_counter() - t0

    def compile(self, schema: dict):
        grammar = self.llg.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": False})
        matcher = self.llg.LLMatcher(self.tokenizer, grammar, log_level=0)  # the matcher compiles the grammar
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return grammar

    def processor(self, grammar, prompt_len: int, budget: int) -> Masked:
        lib, tokenizer, lm = self.llg, self.tokenizer, self.lm

        class Proc(Masked):
            def __init__(self):
                super().__init__(lm, prompt_len, budget)
                self.matcher = lib.LLMatcher(tokenizer, grammar, log_level=0)
                self.mask = np.full(((lm.vocab + 31) // 32,), -1, dtype=np.int32)

            def allowed(self, input_ids):
                if input_ids.shape[1] > prompt_len and not self.matcher.consume_token(int(input_ids[0, -1])):
                    self.error = self.error or self.matcher.get_error()
                if self.matcher.is_error():
                    return None
                self.matcher.unsafe_compute_mask_ptr(self.mask.ctypes.data, self.mask.nbytes)
                return unpack(self.mask, lm.vocab)
        return Proc()


class PackConstraint(LLGuidance):
    """The product's own SchemaConstraint, timed as a whole per call (library and apply together)."""
    name = "llguidance (pack's SchemaConstraint)"

    def compile(self, schema: dict):
        SchemaConstraint(self.lm, schema, 0, 16)
        return schema

    def processor(self, schema, prompt_len: int, budget: int):
        class Proc(SchemaConstraint):
            def __init__(self, *args):
                super().__init__(*args)
                self.lib_s: list[float] = []
                self.apply_s: list[float] = []

            def __call__(self, input_ids, scores):
                t0 = time.perf_counter()
                scores = super().__call__(input_ids, scores)
                self.lib_s.append(time.perf_counter() - t0)
                return scores
        return Proc(self.lm, schema, prompt_len, budget)


class XGrammar:
    name = "xgrammar"

    def __init__(self, lm):
        import xgrammar

        self.xgr, self.lm = xgrammar, lm
        t0 = time.perf_counter()
        info = xgrammar.TokenizerInfo.from_huggingface(lm.tokenizer, vocab_size=lm.vocab, stop_token_ids=lm.eos)
        self.compiler = xgrammar.GrammarCompiler(info, cache_enabled=False)
        self.prepare_s = time.perf_counter() - t0

    def compile(self, schema: dict):
        return self.compiler.compile_json_schema(json.dumps(schema), any_whitespace=False)

    def processor(self, compiled, prompt_len: int, budget: int) -> Masked:
        xgr, lm = self.xgr, self.lm

        class Proc(Masked):
            def __init__(self):
                super().__init__(lm, prompt_len, budget)
                self.matcher = xgr.GrammarMatcher(compiled)
                self.bitmask = xgr.allocate_token_bitmask(1, lm.vocab)

            def allowed(self, input_ids):
                if input_ids.shape[1] > prompt_len and not self.matcher.accept_token(int(input_ids[0, -1])):
                    self.error = self.error or f"token {int(input_ids[0, -1])} refused"
                    return None
                self.matcher.fill_next_token_bitmask(self.bitmask, 0)
                return unpack(self.bitmask[0].numpy(), lm.vocab)
        return Proc()


class FormatEnforcer:
    """lm-format-enforcer through its TokenEnforcer: its transformers integration cannot be imported with
    transformers 5 (see the report), so the tokenizer data is built here the way the integration builds it."""
    name = "lm-format-enforcer"

    def __init__(self, lm):
        from lmformatenforcer import JsonSchemaParser, TokenEnforcer
        from lmformatenforcer.tokenenforcer import TokenEnforcerTokenizerData

        self.parser_cls, self.enforcer_cls, self.lm = JsonSchemaParser, TokenEnforcer, lm
        tok = lm.tokenizer
        t0 = time.perf_counter()
        token_0 = tok.encode("0", add_special_tokens=False)[-1]
        special = set(tok.all_special_ids)
        regular = []
        for i in range(min(len(tok), lm.vocab)):
            if i in special:
                continue
            after_0 = tok.decode([token_0, i])[1:]
            regular.append((i, after_0, len(after_0) > len(tok.decode([i]))))
        self.data = TokenEnforcerTokenizerData(regular, lambda ids: tok.decode(ids).rstrip("\ufffd"), lm.eos,
                                               False, lm.vocab)
        self.prepare_s = time.perf_counter() - t0

    def compile(self, schema: dict):
        self.enforcer_cls(self.data, self.parser_cls(schema))  # the parser and enforcer a generation starts from
        return schema

    def processor(self, schema, prompt_len: int, budget: int) -> Masked:
        lm, enforcer = self.lm, self.enforcer_cls(self.data, self.parser_cls(schema))

        class Proc(Masked):
            def allowed(self, input_ids):
                allowed = enforcer.get_allowed_tokens(input_ids[0].tolist()).allowed_tokens
                mask = np.zeros(lm.vocab, dtype=bool)
                mask[allowed] = True
                return mask
        return Proc(lm, prompt_len, budget)


LIBRARIES = (PackConstraint, LLGuidance, XGrammar, FormatEnforcer)


def library_runs(lib, lm, inputs: dict, schema: dict, budget: int, runs: int) -> dict:
    compile_s = []
    for _ in range(3):
        t0 = time.perf_counter()
        compiled = lib.compile(schema)
        compile_s.append(time.perf_counter() - t0)
    prompt_len = inputs["input_ids"].shape[1]
    lib_s, apply_s, valid, finished, problems = [], [], 0, 0, []
    for seed in range(runs):
        proc = lib.processor(compiled, prompt_len, budget)
        torch.manual_seed(seed)
        out = lm.model.generate(**inputs, max_new_tokens=budget, do_sample=True, temperature=1.0, top_k=None,
                                top_p=None, eos_token_id=lm.eos, pad_token_id=lm.tokenizer.pad_token_id or lm.eos[0],
                                logits_processor=transformers.LogitsProcessorList([proc]))
        new = out[0, prompt_len:].tolist()
        finished += bool(new) and new[-1] in lm.eos
        lib_s += proc.lib_s[1:]  # the first call (prompt) is left out: it is not a per-token cost
        apply_s += proc.apply_s[1:]
        text = lm.tokenizer.decode(new, skip_special_tokens=True)
        try:
            problem = validate(json.loads(text), schema)
        except ValueError as err:
            problem = f"not JSON: {str(err)[:60]}"
        if problem is None:
            valid += 1
        else:
            problems.append(problem[:100])
        if proc.error:
            problems.append(f"grammar: {str(proc.error)[:100]}")
    return dict(compile=med(compile_s), lib=med(lib_s), apply=med(apply_s) if apply_s else None, valid=valid,
                finished=finished, problems=problems)


def lmfe_integration_check() -> str:
    """Whether lm-format-enforcer's own transformers integration imports (the adapter here does without it)."""
    try:
        import lmformatenforcer.integrations.transformers  # noqa: F401
        return "imports"
    except Exception as err:
        cause = err.__cause__ or err.__context__
        return (f"does not import: {type(err).__name__}: {str(err)[:90]}"
                + (f" (caused by {type(cause).__name__}: {str(cause)[:120]})" if cause else ""))


def contrib_check(lm, inputs: dict, schema: dict, budget: int) -> str:
    """xgrammar's own HF processor (its CPU kernel, not torch.compile), once, greedy: does it run?"""
    try:
        import xgrammar
        from xgrammar.contrib.hf import LogitsProcessor

        info = xgrammar.TokenizerInfo.from_huggingface(lm.tokenizer, vocab_size=lm.vocab, stop_token_ids=lm.eos)
        compiled = xgrammar.GrammarCompiler(info).compile_json_schema(json.dumps(schema), any_whitespace=False)
        prompt_len = inputs["input_ids"].shape[1]
        out = lm.model.generate(**inputs, max_new_tokens=budget, logits_processor=transformers.LogitsProcessorList(
            [LogitsProcessor(compiled)]), **greedy(lm))
        text = lm.tokenizer.decode(out[0, prompt_len:].tolist(), skip_special_tokens=True)
        try:
            problem = validate(json.loads(text), schema)
        except ValueError:
            problem = "not JSON (greedy ran out of budget: no closing-token bonus)"
        return f"runs; {out.shape[1] - prompt_len} tokens; " + ("valid" if problem is None else problem[:80])
    except Exception as err:  # a finding, not a failure of the bench
        return f"fails: {type(err).__name__}: {str(err)[:120]}"


# ---------------------------------------------------------------- the benchmark

def timed_run(run: str, c: dict, brain: LocalBrain, lm, stamps: Stamps, images: list, args) -> None:
    """One timed run of A, B, C, D or C0 (see the docstring) for one role, added to its rows: the total, and
    from the forward stamps its parts: before the first forward pass (pre), the prompt's pass (first token),
    the median decode step, and after the last pass started (post: the last pass and what follows it)."""
    request, inputs, n, rows, counts = c["request"], c["inputs"], c["n"], c["rows"], c["counts"]
    stamps.reset()
    start = time.perf_counter()
    if run == "A":
        start, dt, answer = pack_ask(brain, request)
        got = answer.tokens_out
        c["requests"].add(answer.requests)
    elif run == "D":
        dt, tokens = raw_constrained(lm, inputs, request.schema, args.max_tokens)
        got = len(tokens)
        c["tokens"] = tokens
    elif run == "B":
        start, dt, got = pack_unconstrained(c["loose"], lm, request, images, n)
    else:
        dt, got = raw_generate(lm, inputs, n, inference_mode=run == "C")
    rows[run].append(dt)
    counts.setdefault(run, set()).add(got)
    t = stamps.times
    if len(t) >= 3:
        rows[run + "_first"].append(t[1] - start)
        rows[run + "_step"].append(stamps.figures(start, got)[1])
        rows[run + "_pre"].append(t[0] - start)
        rows[run + "_post"].append(start + dt - t[-1])


def measure_family(family: str, root: Path, args, out: dict) -> None:
    build_tiny_model(family, root / family)
    shelf = ModelShelf()
    image = [photo()]
    rss0 = rss()
    t0 = time.perf_counter()
    brain = LocalBrain(LocalBrainConfig(model=family, folders=(root,), max_tokens=args.max_tokens), shelf=shelf)
    lm = brain.model()
    load_s = time.perf_counter() - t0
    rss_loaded = rss()
    stamps = Stamps(lm.model)
    images = image if lm.vision else []
    fam = out.setdefault(family, {"load_s": load_s, "rss_before": rss0, "rss_loaded": rss_loaded,
                                  "params": sum(p.numel() for p in lm.model.parameters()), "vocab": lm.vocab,
                                  "roles": {}})
    # warm-up, every role: the family's first answer builds llguidance's tokenizer view and, past half the budget,
    # the closing-token table (the "cold" answer)
    case = {}
    for role in args.roles:
        system, text, make_schema = ROLES[role]
        request = BrainRequest(role=role, system=system, text=text, schema=make_schema(), images=image)
        cold = None if case else pack_ask(brain, request)[1]
        warm = pack_ask(brain, request)[2]
        n = warm.tokens_out
        inputs = build_inputs(brain, lm, request, images)
        loose = LocalBrain(LocalBrainConfig(model=family, folders=(root,), max_tokens=max(16, n), constrained=False),
                           shelf=shelf)  # the pack without the grammar, its budget the constrained answer's length
        raw_generate(lm, inputs, n)
        raw_constrained(lm, inputs, request.schema, args.max_tokens)
        pack_unconstrained(loose, lm, request, images, n)
        case[role] = dict(request=request, cold=cold, warm=warm, n=n, inputs=inputs, loose=loose,
                          rows=collections.defaultdict(list), counts={}, requests=set())
    fam["rss_warm"] = rss()
    # a full garbage collection walks the ~430k objects torch and transformers make (about 0.2 s here): it is the
    # process's cost, not an answer's, so the objects made so far are frozen out of the collector's walks
    gc.collect()
    gc.freeze()
    can_reset = reset_peak()
    # the timed runs: repeats outside, roles inside, A D B C C0 side by side, so a burst of load from elsewhere
    # on the machine spreads over the rows instead of landing on one
    for repeat in range(args.repeats):
        for role, c in case.items():
            # every other repeat in the reverse order, so that a machine slowing down or speeding up over a few
            # hundred milliseconds does not favour the first of the runs
            for run in ("A", "D", "B", "C", "C0")[::1 if repeat % 2 == 0 else -1]:
                timed_run(run, c, brain, lm, stamps, images, args)
    fam["peak"] = peak() if can_reset else None

    for role, c in case.items():
        request, inputs, n, rows, warm, tokens = c["request"], c["inputs"], c["n"], c["rows"], c["warm"], c["tokens"]
        prompt_len = inputs["input_ids"].shape[1]
        # the same answer from the pack and from raw generate + the pack's processor
        raw_text = lm.tokenizer.decode(tokens, skip_special_tokens=True)
        try:
            same_tokens = extract_json(raw_text) == warm.data
        except ValueError:
            same_tokens = False

        # breakdown of what the pack does around generate (the same calls, timed one by one)
        parts = {k: [] for k in ("chat template", "picture", "place", "processor + .to", "grammar build", "decode",
                                 "extract_json", "checks")}
        chat = [{"role": "system", "content": [{"type": "text", "text": system_with_schema(request)}]},
                {"role": "user", "content": [{"type": "image"} for _ in images]
                 + [{"type": "text", "text": request.text}]}]
        for _ in range(args.repeats):
            p = time.perf_counter
            t = p()
            prompt = lm.processor.apply_chat_template(chat, add_generation_prompt=True, tokenize=False)
            parts["chat template"].append(p() - t)
            t = p()
            pictures = [_picture(img, brain.config.image_side) for img in images]
            parts["picture"].append(p() - t)
            t = p()
            lm.place()  # LocalDevice.place: module.to(device), every call
            parts["place"].append(p() - t)
            t = p()
            if lm.vision:
                enc = lm.processor(text=[prompt], images=pictures or None, return_tensors="pt")
            else:
                enc = lm.tokenizer([prompt], return_tensors="pt", add_special_tokens=False)
            {k: (v.to("cpu", lm.dtype) if v.is_floating_point() else v.to("cpu")) for k, v in enc.items()
             if hasattr(v, "to")}
            parts["processor + .to"].append(p() - t)
            t = p()
            SchemaConstraint(lm, request.schema, prompt_len, args.max_tokens)
            parts["grammar build"].append(p() - t)
            t = p()
            answer_text = lm.tokenizer.decode(tokens, skip_special_tokens=True)
            parts["decode"].append(p() - t)
            t = p()
            data = extract_json(answer_text)
            parts["extract_json"].append(p() - t)
            t = p()
            request.problem(data)
            parts["checks"].append(p() - t)
        profiled = ProfiledConstraint(lm, request.schema, prompt_len, args.max_tokens)
        with torch.inference_mode():
            lm.model.generate(**inputs, max_new_tokens=args.max_tokens,
                              logits_processor=transformers.LogitsProcessorList([profiled]), **greedy(lm))
        if args.verbose:
            print(family, role, {k: [round(x * 1000, 1) for x in v if x] for k, v in rows.items() if k in "ABCD"},
                  file=sys.stderr)
        fam["roles"][role] = dict(
            prompt=prompt_len, n=n, counts={k: sorted(c["counts"][k]) for k in "ABCD"}, same_tokens=same_tokens,
            requests=sorted(c["requests"]), cold=c["cold"],
            valid=warm.data != {} and request.problem(warm.data) is None,
            **{k: med(v) for k, v in rows.items()},
            # the fastest run of each: the least disturbed by other work on the machine (noise only adds time)
            fastest={k: min(rows[k]) for k in "ABCD"},
            # overheads from the runs taken side by side (A, D, B, C, C0 one after another in each repeat)
            ratios={"pack_con": med([a / d for a, d in zip(rows["A"], rows["D"])]),
                    "pack_unc": med([b / c for b, c in zip(rows["B"], rows["C"])]),
                    "gram_ans": med([d / c for d, c in zip(rows["D"], rows["C"])]),
                    "gram_tok": med([d / c for d, c in zip(rows["D_step"], rows["C_step"])]),
                    "no_grad": med([c0 / c for c0, c in zip(rows["C0"], rows["C"])])},
            parts={k: med(v) for k, v in parts.items()},
            step_parts={k: med(v) if v else 0.0 for k, v in profiled.parts.items()},
            closers_share=len(profiled.parts["closers bonus"]) / max(1, len(profiled.parts["compute mask"])),
        )
    fam["peak_is_lifetime"] = not can_reset

    # grammar libraries
    libs = {}
    for cls in LIBRARIES:
        try:
            libs[cls.name] = cls(lm)
        except Exception as err:
            fam.setdefault("lib_errors", {})[cls.name] = f"{type(err).__name__}: {str(err)[:160]}"
    fam["libs"] = {}
    for role in args.roles:
        system, text, make_schema = ROLES[role]
        request = BrainRequest(role=role, system=system, text=text, schema=make_schema(), images=image)
        inputs = build_inputs(brain, lm, request, images)
        for name, lib in libs.items():
            try:
                result = library_runs(lib, lm, inputs, request.schema, args.max_tokens, args.runs)
            except Exception as err:
                result = dict(error=f"{type(err).__name__}: {str(err)[:160]}")
            fam["libs"].setdefault(name, {"prepare": lib.prepare_s})[role] = result
        if role == args.roles[0]:
            fam["contrib"] = contrib_check(lm, inputs, request.schema, args.max_tokens)
    stamps.handle.remove()
    shelf.forget()


def real_vocab(path: Path, args) -> dict:
    """Section 5: the grammar's per-token cost at a real vocabulary, with no model: each step's scores are random
    (seeded), the processor masks them, the argmax is the next token (so the grammar walks where a model with
    no preference would), until an end token or the budget. Same adapters as section 4, same closing bonus."""
    from edit_agents.agents.local_brain import LocalModel

    tok = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    lm = LocalModel.__new__(LocalModel)  # the product's class without a model: the tokenizer-side parts only
    lm.tokenizer = lm.processor = tok
    lm.vocab = max(REAL_VOCAB, len(tok))
    lm.eos = [i for i in dict.fromkeys([tok.convert_tokens_to_ids("<|im_end|>"), tok.eos_token_id,
                                        tok.pad_token_id]) if isinstance(i, int)]
    lm._grammar_tokenizer, lm._closers, lm.vision, lm.tokens_generated = None, None, False, 0
    res: dict = {"name": path.name, "tokens": len(tok), "vocab": lm.vocab, "libs": {}}
    t0 = time.perf_counter()
    lm.closers()
    res["closers_s"] = time.perf_counter() - t0
    libs = {}
    for cls in LIBRARIES:
        try:
            libs[cls.name] = cls(lm)
        except Exception as err:
            res.setdefault("lib_errors", {})[cls.name] = f"{type(err).__name__}: {str(err)[:160]}"
    prompt = tok.encode("Answer in JSON.", add_special_tokens=False)
    for role in args.roles:
        schema = ROLES[role][2]()
        for name, lib in libs.items():
            entry = res["libs"].setdefault(name, {"prepare": lib.prepare_s})
            try:
                t0 = time.perf_counter()
                compiled = lib.compile(schema)  # once: xgrammar takes seconds per schema at this vocabulary
                compile_s = [time.perf_counter() - t0]
                calls, lib_s, apply_s, valid, ended, problems = [], [], [], 0, 0, []
                for seed in range(args.real_runs):
                    proc = lib.processor(compiled, len(prompt), args.max_tokens)
                    gen = torch.Generator().manual_seed(seed)
                    ids = torch.tensor([prompt])
                    for _ in range(args.max_tokens):
                        scores = torch.randn((1, lm.vocab), generator=gen)
                        t0 = time.perf_counter()
                        scores = proc(ids, scores)
                        calls.append(time.perf_counter() - t0)
                        token = int(scores.argmax())
                        ids = torch.cat([ids, torch.tensor([[token]])], 1)
                        if token in lm.eos:
                            ended += 1
                            break
                    lib_s += proc.lib_s[1:]
                    apply_s += proc.apply_s[1:]
                    text = tok.decode(ids[0, len(prompt):].tolist(), skip_special_tokens=True)
                    try:
                        problem = validate(json.loads(text), schema)
                    except ValueError as err:
                        problem = f"not JSON: {str(err)[:60]}"
                    valid += problem is None
                    if problem:
                        problems.append(problem[:100])
                entry[role] = dict(compile=med(compile_s), call=med(calls[1:]), lib=med(lib_s),
                                   apply=med(apply_s) if apply_s else None, valid=valid, ended=ended, problems=problems)
            except Exception as err:
                entry[role] = dict(error=f"{type(err).__name__}: {str(err)[:160]}")
        # the pack's constraint, statement by statement, at this vocabulary
        profiled = ProfiledConstraint(lm, schema, len(prompt), args.max_tokens)
        gen = torch.Generator().manual_seed(0)
        ids = torch.tensor([prompt])
        for _ in range(args.max_tokens):
            token = int(profiled(ids, torch.randn((1, lm.vocab), generator=gen)).argmax())
            ids = torch.cat([ids, torch.tensor([[token]])], 1)
            if token in lm.eos:
                break
        res.setdefault("step_parts", {})[role] = {k: med(v) if v else 0.0 for k, v in profiled.parts.items()}
    return res


def report_real(res: dict, args) -> None:
    say(f"5. A real vocabulary: {res['name']} ({res['tokens']:,} tokens, {res['vocab']:,} logits), no model: random "
        f"seeded scores each step, the argmax of the masked scores is the next token; {args.real_runs} runs per row; "
        f"compile: one build; call: the processor's whole call per token")
    say(f"   the pack's closing-token table (LocalModel.closers, once per model): {res['closers_s'] * 1000:.0f} ms")
    say(f"   {'library':<37} {'view ms':>7} {'role':<8} {'compile ms':>10} {'call us/tok':>11} {'mask us':>8} "
        f"{'apply us':>8} {'valid':>5} {'ended':>5}  problems")
    for name, per in res["libs"].items():
        for role in args.roles:
            r = per.get(role)
            if r is None:
                continue
            if "error" in r:
                say(f"   {name:<37} {per['prepare'] * 1000:7.0f} {role:<8} failed: {r['error']}")
                continue
            apply = f"{r['apply'] * 1e6:8.1f}" if r["apply"] is not None else f"{'(in)':>8}"
            lib = f"{r['lib'] * 1e6:8.1f}" if r["apply"] is not None else f"{'':>8}"
            say(f"   {name:<37} {per['prepare'] * 1000:7.0f} {role:<8} {r['compile'] * 1000:10.2f} "
                f"{r['call'] * 1e6:11.1f} "
                f"{lib} {apply} {r['valid']:>2}/{args.real_runs:<2} {r['ended']:>2}/{args.real_runs:<2}  "
                f"{kinds(r['problems'])}")
    for name, err in res.get("lib_errors", {}).items():
        say(f"   {name:<37} could not be set up: {err}")
    parts = ProfiledConstraint.PARTS
    say("   The pack's SchemaConstraint.__call__ at this vocabulary, per step (us, median; closers bonus: over the "
        "steps that add it):")
    say(f"   {'role':<8} " + " ".join(f"{p:>{max(7, len(p))}}" for p in parts))
    for role, sp in res.get("step_parts", {}).items():
        say(f"   {role:<8} " + " ".join(f"{sp[p] * 1e6:>{max(7, len(p))}.1f}" for p in parts))


def extra(r: dict, x: str, y: str) -> tuple[float, float, float, float, float]:
    """Run x's extra time over run y's from their parts (medians): before the first forward pass, after the last
    one started, over the N - 2 decode steps; their total, and the total as a share of y's parts."""
    steps = max(0, r["n"] - 2)
    before = r[x + "_pre"] - r[y + "_pre"]
    after = r[x + "_post"] - r[y + "_post"]
    step = (r[x + "_step"] - r[y + "_step"]) * steps
    base = r[y + "_pre"] + (r[y + "_first"] - r[y + "_pre"]) + steps * r[y + "_step"] + r[y + "_post"]
    total = before + after + step
    return before, after, step, total, total / base


def kinds(problems: list[str]) -> str:
    """The answers' problems by kind, counted: '3x raw control character in a string; 1x number out of range'."""
    def kind(problem: str) -> str:
        for needle, name in (("Invalid control character", "raw control character in a string"),
                             ("Unterminated string", "ended inside a string"),
                             ("Expecting", "broken JSON structure"), ("Extra data", "text after the JSON"),
                             ("than the maximum", "number out of range"), ("than the minimum", "number out of range"),
                             ("grammar:", "grammar error")):
            if needle in problem:
                return name
        return problem[:60]
    counts = collections.Counter(kind(p) for p in problems)
    return "; ".join(f"{n}x {k}" for k, n in counts.most_common())


def pct(a: float, b: float) -> str:
    return f"{(a / b - 1) * 100:+6.1f}%"


def report(out: dict, args) -> None:
    ms = 1000.0
    say(f"Local brain on tiny random-weight models (hidden 64, 2 layers), CPU, greedy, budget {args.max_tokens} "
        f"tokens; medians of {args.repeats} runs after a warm-up")
    say()
    say("1. The product's path, LocalBrain.ask (constrained); raw = model.generate by hand, unconstrained")
    say(f"{'family':<10} {'role':<8} {'prompt':>6} {'new':>4} {'answer ms':>9} {'cold ms':>8} "
        f"{'1st token ms':>12} {'(raw)':>6} {'decode tok/s':>12} {'(raw)':>6} {'valid':>5}")
    for family, fam in out.items():
        for role, r in fam["roles"].items():
            cold = f"{r['cold'] * ms:8.0f}" if r["cold"] else f"{'':>8}"
            say(f"{family:<10} {role:<8} {r['prompt']:>6} {r['n']:>4} {r['A'] * ms:9.1f} {cold} "
                f"{r['A_first'] * ms:12.1f} {r['C_first'] * ms:6.1f} {1 / r['A_step']:12.0f} {1 / r['C_step']:6.0f} "
                f"{'yes' if r['valid'] else 'NO':>5}")
    say("   (cold: the family's first answer, which builds llguidance's tokenizer view and the closing-token table)")
    say()
    say("   Memory (process RSS: before loading the model, after loading, after the warm-up answers; peak = VmHWM, "
        "reset after the warm-up, over the timed answers)")
    say(f"   {'family':<10} {'params':>8} {'vocab':>5} {'load s':>7} {'before':>8} {'loaded':>8} {'warm':>8} "
        f"{'peak':>8} {'peak - warm':>11}")
    for family, fam in out.items():
        pk = fam["peak"]
        peak_text = f"{pk / MIB:4.0f} MiB {(pk - fam['rss_warm']) / MIB:+7.1f} MiB" if pk else "(no VmHWM reset here)"
        say(f"   {family:<10} {fam['params']:>8,} {fam['vocab']:>5} {fam['load_s']:7.2f} "
            f"{fam['rss_before'] / MIB:4.0f} MiB "
            f"{fam['rss_loaded'] / MIB:4.0f} MiB {fam['rss_warm'] / MIB:4.0f} MiB {peak_text}")
    say()
    say("2./3. Overheads at equal new-token counts N (ms per answer; A pack ask, D raw generate + the pack's "
        "SchemaConstraint, B pack unconstrained generate + parse, C raw generate min=max=N; the % columns are "
        "medians of the ratios of runs taken side by side)")
    say(f"{'family':<10} {'role':<8} {'N':>4} {'C raw':>7} {'D raw+gr':>8} {'A pack':>7} {'B pack-u':>8} "
        f"{'pack/raw con':>12} {'pack/raw unc':>12} {'grammar/ans':>11} {'grammar/tok':>11} {'tokens A/B/C/D'}")
    worst = {"pack_con": [], "pack_unc": [], "gram_ans": [], "gram_tok": []}
    for family, fam in out.items():
        for role, r in fam["roles"].items():
            counts = "/".join(",".join(map(str, r["counts"][k])) for k in "ABCD")
            flag = "" if r["same_tokens"] else "  (D's tokens differ from A's!)"
            flag += "" if r["requests"] == [1] else f"  (re-asked: {r['requests']} requests)"
            q = r["ratios"]
            say(f"{family:<10} {role:<8} {r['n']:>4} {r['C'] * ms:7.1f} {r['D'] * ms:8.1f} {r['A'] * ms:7.1f} "
                f"{r['B'] * ms:8.1f} {pct(q['pack_con'], 1):>12} {pct(q['pack_unc'], 1):>12} "
                f"{pct(q['gram_ans'], 1):>11} "
                f"{pct(q['gram_tok'], 1):>11} {counts}{flag}")
            for key in worst:
                worst[key].append(q[key] - 1)
    say(f"   (raw runs are under torch.inference_mode, as the pack's; plain generate, no_grad only, is "
        f"{med([r['ratios']['no_grad'] - 1 for f in out.values() for r in f['roles'].values()]) * 100:+.1f}% slower "
        f"than C, median over rows)")
    fastest = {"pack_con": [], "pack_unc": [], "gram_ans": []}
    for fam in out.values():
        for r in fam["roles"].values():
            f = r["fastest"]
            fastest["pack_con"].append(f["A"] / f["D"] - 1)
            fastest["pack_unc"].append(f["B"] / f["C"] - 1)
            fastest["gram_ans"].append(f["D"] / f["C"] - 1)
    parted = {"pack_con": [], "pack_unc": [], "gram_ans": []}
    for fam in out.values():
        for r in fam["roles"].values():
            parted["pack_con"].append(extra(r, "A", "D")[-1])
            parted["pack_unc"].append(extra(r, "B", "C")[-1])
            parted["gram_ans"].append(extra(r, "D", "C")[-1])
    for label, pick in (("median over rows", med), ("worst row", max)):
        say(f"   {label + ':':<17} pack/raw constrained {pick(worst['pack_con']) * 100:+5.1f}%, unconstrained "
            f"{pick(worst['pack_unc']) * 100:+5.1f}% (target <= 10%); constrained/unconstrained "
            f"{pick(worst['gram_ans']) * 100:+5.1f}% per answer, {pick(worst['gram_tok']) * 100:+5.1f}% per token "
            f"(target <= 20%)")
        say(f"   {'  fastest runs:':<17} pack/raw constrained {pick(fastest['pack_con']) * 100:+5.1f}%, unconstrained "
            f"{pick(fastest['pack_unc']) * 100:+5.1f}%; constrained/unconstrained "
            f"{pick(fastest['gram_ans']) * 100:+5.1f}% per answer (the fastest of the runs of each kind)")
        say(f"   {'  from the parts:':<17} pack/raw constrained {pick(parted['pack_con']) * 100:+5.1f}%, unconstrained "
            f"{pick(parted['pack_unc']) * 100:+5.1f}%; constrained/unconstrained "
            f"{pick(parted['gram_ans']) * 100:+5.1f}% "
            f"per answer (the parts table below)")
    say()
    say("   Per decode step (us, median step): C raw, D raw + grammar, A pack, B pack unconstrained; and the grammar's "
        "step, timed inside a copy of SchemaConstraint.__call__ (median per statement)")
    parts = ProfiledConstraint.PARTS
    say(f"   {'family':<10} {'role':<8} {'C':>6} {'D':>6} {'A':>6} {'B':>6} | "
        + " ".join(f"{p:>{max(7, len(p))}}" for p in parts)
        + f" {'bonus on':>8}")
    for family, fam in out.items():
        for role, r in fam["roles"].items():
            sp = r["step_parts"]
            say(f"   {family:<10} {role:<8} {r['C_step'] * 1e6:6.0f} {r['D_step'] * 1e6:6.0f} {r['A_step'] * 1e6:6.0f} "
                f"{r['B_step'] * 1e6:6.0f} | " + " ".join(f"{sp[p] * 1e6:>{max(7, len(p))}.1f}" for p in parts)
                + f" {r['closers_share'] * 100:7.0f}%")
    say("   (closers bonus: the median over the steps that add it; 'bonus on': the share of steps that do)")
    if not profiled_copy_is_current():
        say("   WARNING: SchemaConstraint.__call__ has changed since ProfiledConstraint copied it: the statement "
            "breakdown is of the old code")
    say()
    say("   The same, from the parts of each run (medians of each part, so less exposed to other work on the machine "
        "than the totals): before the first forward pass, after the last one started, and (N - 2) x the median decode "
        "step; the prompt's pass is the same work in both and is left out of the difference; % of the second's parts")
    say(f"   {'family':<10} {'role':<8} {'N':>4} | {'A - D: before':>13} {'after':>6} {'steps':>6} {'total':>6} "
        f"{'%':>6} | "
        f"{'B - C: before':>13} {'after':>6} {'steps':>6} {'total':>6} {'%':>6} | {'D - C: before':>13} {'after':>6} "
        f"{'steps':>6} {'total':>6} {'%':>6}")
    for family, fam in out.items():
        for role, r in fam["roles"].items():
            cells = []
            for x, y in (("A", "D"), ("B", "C"), ("D", "C")):
                before, after, steps, total, share = extra(r, x, y)
                cells.append(f"{before * ms:13.2f} {after * ms:6.2f} {steps * ms:6.2f} {total * ms:6.2f} "
                             f"{share * 100:+5.1f}%")
            say(f"   {family:<10} {role:<8} {r['n']:>4} | " + " | ".join(cells))
    say("   (ms. D - C before = the grammar build and the first mask; steps = the per-token masks)")
    say()
    say("   What the pack does before the first forward pass and after the last, call by call (ms, medians; the same "
        "calls as LocalBrain.generate and ask, timed one by one), against A - D from the parts above; the remainder "
        "is the two asyncio.to_thread hops, the lock, generate's own set-up of the stopping criterion")
    names = list(next(iter(next(iter(out.values()))["roles"].values()))["parts"])
    before_calls = ("chat template", "picture", "place", "processor + .to")
    say(f"   {'family':<10} {'role':<8} | " + " ".join(f"{n:>{max(6, len(n))}}" for n in names)
        + f" | {'A - D before':>12} {'(calls)':>7} {'A - D after':>11} {'(calls)':>7}")
    for family, fam in out.items():
        for role, r in fam["roles"].items():
            pr = r["parts"]
            before, after = extra(r, "A", "D")[:2]
            say(f"   {family:<10} {role:<8} | " + " ".join(f"{pr[n] * ms:>{max(6, len(n))}.2f}" for n in names)
                + f" | {before * ms:12.2f} {sum(pr[n] for n in before_calls) * ms:7.2f} {after * ms:11.2f} "
                  f"{sum(pr[n] for n in ('decode', 'extract_json', 'checks')) * ms:7.2f}")
    say("   (grammar build happens in D as well, so it is not part of A - D: it is the grammar's fixed cost per "
        "answer)")
    say()
    say(f"4. Grammar libraries: {args.runs} sampled answers (temperature 1, seeds 0..{args.runs - 1}) per row, "
        "all with the pack's closing-token bonus past half the budget")
    say(f"{'family':<10} {'library':<37} {'view ms':>7} {'role':<8} {'compile ms':>10} {'mask us/tok':>11} "
        f"{'apply us':>8} {'valid':>5} {'ended':>5}  problems")
    for family, fam in out.items():
        for name, per in fam["libs"].items():
            for role in args.roles:
                r = per[role]
                if "error" in r:
                    say(f"{family:<10} {name:<37} {per['prepare'] * ms:7.1f} {role:<8} failed: {r['error']}")
                    continue
                apply = f"{r['apply'] * 1e6:8.1f}" if r["apply"] is not None else f"{'(in)':>8}"
                say(f"{family:<10} {name:<37} {per['prepare'] * ms:7.1f} {role:<8} {r['compile'] * ms:10.2f} "
                    f"{r['lib'] * 1e6:11.1f} {apply} {r['valid']:>2}/{args.runs:<2} {r['finished']:>2}/{args.runs:<2}"
                    f"  {kinds(r['problems'])}")
        for name, err in fam.get("lib_errors", {}).items():
            say(f"{family:<10} {name:<37} could not be set up: {err}")
        say(f"{family:<10} xgrammar.contrib.hf.LogitsProcessor ({args.roles[0]}, greedy, its own CPU kernel): "
            f"{fam['contrib']}")
    say(f"lm-format-enforcer's transformers integration (build_transformers_prefix_allowed_tokens_fn): "
        f"{lmfe_integration_check()}; its adapter here builds the same tokenizer data by hand")
    say("   (view: the library's tokenizer view, built once per tokenizer; compile: the schema's grammar, median of 3; "
        "mask: the library's calls per token (consume + mask), the first call left out; apply: plain-torch "
        "masked_fill + bonus; the pack's row times its whole __call__ as 'mask')")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--families", default=",".join(FAMILIES), help="from qwen2-vl, qwen2.5-vl, smolvlm, text")
    ap.add_argument("--roles", default=",".join(ROLES), help=f"from {', '.join(ROLES)}")
    ap.add_argument("--repeats", type=int, default=9, help="timed runs per measurement (median reported)")
    ap.add_argument("--runs", type=int, default=5, help="sampled answers per library, family and role")
    ap.add_argument("--max-tokens", type=int, default=128, help="the brain's token budget (LocalBrainConfig)")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch intra-op threads (default 1: with 2 on this 2-core machine the same generate call "
                         "swings by up to 2x from run to run)")
    ap.add_argument("--pin", type=int, default=-2,
                    help="the CPU to run on (default: the last one; -1: wherever the scheduler likes): the pack runs "
                         "generate in a worker thread and raw generate runs in the main thread, and on this "
                         "virtual machine one CPU can be slower than the other for seconds at a time")
    ap.add_argument("--quick", action="store_true", help="3 repeats, 3 runs")
    ap.add_argument("--real-tokenizer", default=str(REAL_TOKENIZER),
                    help="a Hugging Face tokenizer folder for section 5 ('' to skip; default: Qwen2.5's, from the "
                         "ComfyUI checkout in .setup/, when it is there)")
    ap.add_argument("--real-runs", type=int, default=3, help="runs per library and role in section 5")
    ap.add_argument("--verbose", action="store_true", help="print every run's times (to stderr)")
    ap.add_argument("--no-write", action="store_true", help="do not write bench/results/local_brain.txt")
    args = ap.parse_args()
    if args.quick:
        args.repeats, args.runs, args.real_runs = 3, 3, 2
    torch.set_num_threads(args.threads)
    pinned = None
    if args.pin != -1 and hasattr(os, "sched_setaffinity"):
        pinned = max(os.sched_getaffinity(0)) if args.pin == -2 else args.pin
        os.sched_setaffinity(0, {pinned})  # the process: its threads made from now on inherit it
    args.families = [f for f in args.families.split(",") if f]
    args.roles = [r for r in args.roles.split(",") if r]
    wall = time.perf_counter()
    busy0, own0 = machine_busy(), own_cpu()
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="local-brain-bench-") as tmp:
        for family in args.families:
            print(f"[{time.perf_counter() - wall:5.1f} s] {family} ...", file=sys.stderr, flush=True)
            measure_family(family, Path(tmp), args, out)
    report(out, args)
    say()
    real = Path(args.real_tokenizer) if args.real_tokenizer else None
    if real is not None and real.is_dir():
        print(f"[{time.perf_counter() - wall:5.1f} s] {real.name} ...", file=sys.stderr, flush=True)
        report_real(real_vocab(real, args), args)
    else:
        say(f"5. (skipped: no tokenizer folder at {real})" if real else "5. (skipped: --real-tokenizer '')")
    say()
    elapsed = time.perf_counter() - wall
    busy1, own1 = machine_busy(), own_cpu()
    if busy0 is not None and busy1 is not None:
        others = max(0.0, (busy1 - busy0) - (own1 - own0)) / (elapsed * (os.cpu_count() or 1))
        say(f"wall {elapsed:.0f} s; other processes used {others * 100:.0f}% of the machine's {os.cpu_count()} cores "
            f"meanwhile (figures taken beside other work vary more)")
    else:
        say(f"wall {elapsed:.0f} s")
    if not args.no_write:
        machine = (f"{os.cpu_count()} CPU cores ({platform.machine()}), no GPU, torch {torch.__version__} on "
                   f"{torch.get_num_threads()} thread(s)" + (f" pinned to CPU {pinned}" if pinned is not None else "")
                   + f", transformers {transformers.__version__}")
        try:
            commit = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                                    text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            commit = ""
        header = f"# bench/local_brain.py {' '.join(sys.argv[1:])}".rstrip() + \
            f", {datetime.date.today().isoformat()}, {machine}" + (f", code at {commit}" if commit else "")
        (HERE / "results" / "local_brain.txt").write_text(header + "\n" + "\n".join(LINES) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
