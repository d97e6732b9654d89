"""Fixtures for the local brain tests: tiny random-weight models of real transformers classes
(Qwen2-VL, Qwen2.5-VL, SmolVLM and a Llama-architecture ChatML text LM), saved to a folder in exactly the
layout a user gets from the hub, so the product's own ``from_pretrained(path,
local_files_only=True)`` code is what the tests exercise. Nothing is ever downloaded: configs,
weights, tokenizer, image processor and chat template are all built here.

    folder = build_tiny_model("qwen2-vl", tmp_path / "qwen2-vl")

Every model is a few hundred thousand parameters, so ``generate`` of hundreds of tokens takes
about a second on CPU. Weights are random but deterministic for a given ``seed``; the output is
gibberish, but any text the product feeds in (JSON, unicode) round-trips through the tokenizer.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

FAMILIES = ("qwen2-vl", "qwen2.5-vl", "smolvlm", "text")

# Tiny dims shared by every family: big enough to exercise GQA and multi-layer caches, small enough
# that a decode step costs well under a millisecond of matmul.
HIDDEN = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
INTERMEDIATE = 128
MAX_POSITIONS = 4096
VOCAB_TARGET = 480  # byte alphabet (256) + learned merges; the special tokens come on top

CHATML_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>")
QWEN_SPECIALS = CHATML_SPECIALS + ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")
# Idefics3/SmolVLM processors look up the 6x6 grid of row/col tokens and the global-image tag at
# construction time, and add the three image tokens themselves if they are missing: ship them all so
# the vocabulary (and so the embedding size) never changes after the model is built.
SMOLVLM_SPECIALS = (("<|endoftext|>", "<|im_start|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
                     "<global-img>", "<video>")
                    + tuple(f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)))

# Content may be a plain string or a list of parts; each image part becomes the family's placeholder,
# which the processor then expands to the right number of image tokens.
QWEN_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<|vision_start|><|image_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'video' -%}{{- '<|vision_start|><|video_pad|><|vision_end|>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
# Plain ChatML for the text-only model: it cannot see images, so image parts are dropped.
TEXT_CHAT_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['content'] is string -%}{{- message['content'] -}}"
    "{%- else -%}{%- for part in message['content'] if part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- endfor -%}{%- endif -%}"
    "{{- '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}"
)
# The SmolVLM-Instruct template ("User:<image>text<end_of_utterance>\nAssistant:"), widened to string content.
SMOLVLM_CHAT_TEMPLATE = (
    "{{- '<|im_start|>' -}}"
    "{%- for message in messages -%}"
    "{{- message['role'] | capitalize -}}"
    "{%- if message['content'] is string -%}{{- ': ' + message['content'] -}}"
    "{%- else -%}"
    "{%- if message['content'] and message['content'][0]['type'] == 'image' -%}{{- ':' -}}"
    "{%- else -%}{{- ': ' -}}{%- endif -%}"
    "{%- for part in message['content'] -%}"
    "{%- if part['type'] == 'image' -%}{{- '<image>' -}}"
    "{%- elif part['type'] == 'text' -%}{{- part['text'] -}}"
    "{%- endif -%}{%- endfor -%}{%- endif -%}"
    "{{- '<end_of_utterance>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- 'Assistant:' -}}{%- endif -%}"
)

_WORDS = ("the a an of to and in is it that for on with as are this be by at or from not but what all were "
          "when we there can your which their said if do will each about how up out them then she many some so "
          "these would other into has more her two like him see time could no make than first been its who now "
          "people my made over did down only way find use may water long little very after words called just "
          "where most know image edit mask region colour color bright dark left right top bottom centre center "
          "object person sky tree car dog cat house road light shadow sharpen blur crop resize rotate contrast "
          "saturation exposure background foreground score reason answer tool name arguments value true false "
          "null step plan goal done result error describe")
_JSON_SNIPPETS = (
    '{"tool": "crop", "arguments": {"x": 0, "y": 12, "width": 256, "height": 128}}',
    '{"name": "adjust_brightness", "arguments": {"amount": 0.25}, "reason": "the sky is too dark"}',
    '{"answer": "yes", "score": 7.5, "issues": ["blur", "noise"], "done": false}',
    '{"plan": [{"step": 1, "tool": "mask", "prompt": "the dog"}, {"step": 2, "tool": "blur"}]}',
    '[{"region": [10, 20, 30, 40], "label": "car"}, {"region": [5, 5, 60, 60], "label": "tree"}]',
    '{"a": [1, 2.5, "x y"], "b": "\u00e9", "c": null, "d": true, "e": -3e-2}',
    '```json\n{"result": "ok"}\n```',
)


def _corpus() -> list[str]:
    """A small, fixed training corpus: English words, sentences and JSON, so merges cover what the
    tests feed the models (every other byte string still encodes, byte by byte)."""
    words = _WORDS.split()
    lines = list(_JSON_SNIPPETS) * 20
    for i in range(0, len(words), 7):
        chunk = words[i:i + 7]
        lines.append(" ".join(chunk).capitalize() + ".")
        lines.append(", ".join(f'"{w}": {n}' for n, w in enumerate(chunk)))
    lines.extend(" ".join(words[i::5]) for i in range(5))
    lines.extend(str(n) for n in range(0, 1000, 7))
    return lines


def build_tokenizer(special_tokens: tuple[str, ...] = QWEN_SPECIALS, *, eos_token: str = "<|im_end|>",
                    pad_token: str = "<|endoftext|>", bos_token: str | None = None,
                    chat_template: str | None = QWEN_CHAT_TEMPLATE):
    """A byte-level BPE tokenizer trained from scratch on the built-in corpus and wrapped as a
    ``PreTrainedTokenizerFast``. The base alphabet holds all 256 bytes, and there is no normalizer,
    so any UTF-8 text encodes and decodes losslessly. ``special_tokens`` are added after the learned
    vocabulary, in order (so their ids are stable: ``len(base) + index``)."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    missing = [t for t in (eos_token, pad_token, bos_token) if t is not None and t not in special_tokens]
    if missing:
        raise ValueError(f"eos/pad/bos must be among the special tokens: {missing}")
    raw = Tokenizer(models.BPE())
    # use_regex keeps GPT-2 style word splitting, so merges never cross a space/quote boundary.
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    raw.decoder = decoders.ByteLevel()
    raw.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_TARGET, min_frequency=2, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=[])
    raw.train_from_iterator(_corpus(), trainer=trainer)
    raw.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special_tokens])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, eos_token=eos_token, pad_token=pad_token, bos_token=bos_token,
        # Leave spaces before punctuation alone on decode: JSON must come back byte for byte.
        clean_up_tokenization_spaces=False, model_max_length=MAX_POSITIONS)
    if chat_template is not None:
        tokenizer.chat_template = chat_template
    return tokenizer


def _ids(tokenizer, *tokens: str) -> list[int]:
    ids = tokenizer.convert_tokens_to_ids(list(tokens))
    if any(i is None or i == tokenizer.unk_token_id for i in ids):
        raise ValueError(f"tokens missing from the vocabulary: {tokens} -> {ids}")
    return ids


def _chatml_text_kwargs(tokenizer) -> dict:
    endoftext, im_end = _ids(tokenizer, "<|endoftext|>", "<|im_end|>")
    return dict(vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                max_position_embeddings=MAX_POSITIONS, bos_token_id=endoftext, eos_token_id=im_end,
                pad_token_id=endoftext)


def _set_generation_ids(model, text: dict) -> None:
    # Stop on <|im_end|> (end of turn) or <|endoftext|>, as the real instruct checkpoints do.
    model.generation_config.eos_token_id = [text["eos_token_id"], text["pad_token_id"]]
    model.generation_config.pad_token_id = text["pad_token_id"]
    model.generation_config.bos_token_id = text["bos_token_id"]


def _qwen_vl(family: str, folder: Path) -> None:
    from transformers import (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration, Qwen2_5_VLProcessor,
                              Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLImageProcessor,
                              Qwen2VLProcessor, Qwen2VLVideoProcessor)

    tokenizer = build_tokenizer(QWEN_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    image_id, video_id, start_id, end_id = _ids(tokenizer, "<|image_pad|>", "<|video_pad|>", "<|vision_start|>",
                                                "<|vision_end|>")
    text = _chatml_text_kwargs(tokenizer)
    text["max_window_layers"] = LAYERS
    # M-RoPE splits head_dim/2 rotary frequencies into (temporal, height, width) sections; the real
    # [16, 24, 24] is for head_dim 128, this is the same split for head_dim 16.
    text["rope_parameters"] = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}
    if family == "qwen2-vl":
        vision = dict(depth=1, embed_dim=32, hidden_size=HIDDEN, num_heads=2, mlp_ratio=2, patch_size=14,
                      spatial_merge_size=2, temporal_patch_size=2)
        config_cls, model_cls, processor_cls = Qwen2VLConfig, Qwen2VLForConditionalGeneration, Qwen2VLProcessor
    else:
        # Two blocks: the first uses windowed attention, the second full attention, as in the real model.
        vision = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=HIDDEN,
                      patch_size=14, spatial_merge_size=2, temporal_patch_size=2, window_size=112,
                      fullatt_block_indexes=[1])
        config_cls, model_cls, processor_cls = (Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration,
                                                Qwen2_5_VLProcessor)
    config = config_cls(text_config=text, vision_config=vision, image_token_id=image_id, video_token_id=video_id,
                        vision_start_token_id=start_id, vision_end_token_id=end_id, tie_word_embeddings=False)
    model = model_cls(config).eval()
    _set_generation_ids(model, text)
    model.save_pretrained(folder)
    # 28 px per merged token (14 px patches, 2x2 merge): 56x56..112x224 px, i.e. 4 to 32 image tokens.
    pixels = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 32}
    processor = processor_cls(image_processor=Qwen2VLImageProcessor(size=pixels),
                              video_processor=Qwen2VLVideoProcessor(size=pixels),
                              tokenizer=tokenizer, chat_template=QWEN_CHAT_TEMPLATE)
    processor.save_pretrained(folder)


def _smolvlm_classes():
    """SmolVLM's own classes when its processor can run (it imports ``num2words`` for video prompts),
    otherwise the Idefics3 classes, which is what the SmolVLM (v1) checkpoints on the hub use."""
    import transformers

    if importlib.util.find_spec("num2words") is not None and hasattr(transformers, "SmolVLMProcessor"):
        return (transformers.SmolVLMConfig, transformers.SmolVLMForConditionalGeneration,
                transformers.SmolVLMProcessor, transformers.SmolVLMImageProcessor, transformers.SmolVLMVideoProcessor)
    return (transformers.Idefics3Config, transformers.Idefics3ForConditionalGeneration,
            transformers.Idefics3Processor, transformers.Idefics3ImageProcessor, None)


def _smolvlm(folder: Path) -> None:
    config_cls, model_cls, processor_cls, image_cls, video_cls = _smolvlm_classes()
    tokenizer = build_tokenizer(SMOLVLM_SPECIALS, eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
                                bos_token="<|im_start|>", chat_template=SMOLVLM_CHAT_TEMPLATE)
    image_id, eou_id, pad_id, bos_id = _ids(tokenizer, "<image>", "<end_of_utterance>", "<|endoftext|>",
                                            "<|im_start|>")
    image_size, patch_size, scale_factor = 64, 8, 2
    # (64/8)^2 = 64 patches, pixel-shuffled by 2x2 into 16 image tokens per image.
    image_seq_len = (image_size // patch_size) ** 2 // scale_factor ** 2
    text = dict(model_type="llama", vocab_size=len(tokenizer), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=KV_HEADS,
                max_position_embeddings=MAX_POSITIONS, rope_parameters={"rope_type": "default", "rope_theta": 1e5},
                bos_token_id=bos_id, eos_token_id=eou_id, pad_token_id=pad_id, tie_word_embeddings=False)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                  image_size=image_size, patch_size=patch_size)
    config = config_cls(text_config=text, vision_config=vision, image_token_id=image_id, scale_factor=scale_factor,
                        pad_token_id=pad_id, tie_word_embeddings=False)
    model = model_cls(config).eval()
    model.generation_config.eos_token_id = eou_id
    model.generation_config.pad_token_id = pad_id
    model.generation_config.bos_token_id = bos_id
    model.save_pretrained(folder)
    # No splitting: every image is squashed to one image_size square, one global tile.
    image_processor = image_cls(do_image_splitting=False, size={"longest_edge": image_size},
                                max_image_size={"longest_edge": image_size})
    parts = dict(image_processor=image_processor, tokenizer=tokenizer, image_seq_len=image_seq_len,
                 chat_template=SMOLVLM_CHAT_TEMPLATE)
    if video_cls is not None:
        parts["video_processor"] = video_cls(size={"longest_edge": image_size},
                                             max_image_size={"longest_edge": image_size})
    processor_cls(**parts).save_pretrained(folder)


def _text(folder: Path) -> None:
    # Llama architecture with a ChatML template, like SmolLM2-Instruct. Not Qwen2: AutoTokenizer maps
    # model_type "qwen2" to Qwen2Tokenizer, which rebuilds the pipeline from vocab/merges with an NFC
    # normalizer, so decomposed unicode would not round-trip.
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = build_tokenizer(CHATML_SPECIALS, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                chat_template=TEXT_CHAT_TEMPLATE)
    text = _chatml_text_kwargs(tokenizer)
    config = LlamaConfig(**text, rope_parameters={"rope_type": "default", "rope_theta": 1e5},
                         tie_word_embeddings=False)
    model = LlamaForCausalLM(config).eval()
    _set_generation_ids(model, text)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def build_tiny_model(family: str, folder: Path, seed: int = 0) -> Path:
    """Write a complete tiny model of ``family`` (one of ``FAMILIES``) into ``folder`` (created) and
    return it: config.json, generation_config.json, model.safetensors, the tokenizer files, the chat
    template and, for the vision families, the processor files."""
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; expected one of {FAMILIES}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    # Weights are drawn at construction; seeding here makes the same seed give the same model file.
    torch.manual_seed(seed)
    if family in ("qwen2-vl", "qwen2.5-vl"):
        _qwen_vl(family, folder)
    elif family == "smolvlm":
        _smolvlm(folder)
    else:
        _text(folder)
    return folder
