"""Tiny random-weight models built from the libraries' real classes, saved the way users store
real ones, so the product's own loading code is what the tests exercise. Nothing is downloaded."""
from __future__ import annotations

from pathlib import Path

import torch

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", "a", "the", "dog", "cat", "person", "sky", "car", "tree"]


def build_grounding_dino(folder: Path, flat_scores: bool = True) -> Path:
    """A ~0.4 M parameter GroundingDINO in transformers layout. With ``flat_scores`` every box
    scores exactly 0.5 (the decoder's last norm is zeroed), so threshold tests are deterministic."""
    from transformers import (BertConfig, BertTokenizer, GroundingDinoConfig, GroundingDinoForObjectDetection,
                              GroundingDinoImageProcessor, GroundingDinoProcessor)

    torch.manual_seed(0)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n")
    tokenizer = BertTokenizer(str(folder / "vocab.txt"))
    config = GroundingDinoConfig(
        backbone_config={"model_type": "swin", "embed_dim": 16, "depths": [1, 1, 1, 1], "num_heads": [1, 1, 1, 1],
                         "window_size": 4, "image_size": 64, "out_indices": [2, 3, 4]},
        text_config=BertConfig(vocab_size=len(WORDS), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                               intermediate_size=32, max_position_embeddings=64).to_dict(),
        d_model=32, encoder_layers=1, decoder_layers=2, encoder_attention_heads=2, decoder_attention_heads=2,
        encoder_ffn_dim=32, decoder_ffn_dim=32, num_queries=10, num_feature_levels=3, encoder_n_points=2,
        decoder_n_points=2, max_text_len=32)
    model = GroundingDinoForObjectDetection(config).eval()
    if flat_scores:
        with torch.no_grad():
            model.model.decoder.layer_norm.weight.zero_()
            model.model.decoder.layer_norm.bias.zero_()
    model.save_pretrained(folder)
    GroundingDinoProcessor(image_processor=GroundingDinoImageProcessor(size={"shortest_edge": 64, "longest_edge": 64}),
                           tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_sam(path: Path) -> Path:
    """A small segment-anything model (ViT encoder depth 2, width 64, 256 px input) saved as a .pth state dict."""
    from segment_anything.modeling import ImageEncoderViT, MaskDecoder, PromptEncoder, Sam, TwoWayTransformer

    torch.manual_seed(0)
    dim = 64
    sam = Sam(
        image_encoder=ImageEncoderViT(depth=2, embed_dim=64, img_size=256, mlp_ratio=4,
                                      norm_layer=lambda d: torch.nn.LayerNorm(d, eps=1e-6), num_heads=4, patch_size=16,
                                      qkv_bias=True, use_rel_pos=True, global_attn_indexes=(1,), window_size=4, out_chans=dim),
        prompt_encoder=PromptEncoder(embed_dim=dim, image_embedding_size=(16, 16), input_image_size=(256, 256), mask_in_chans=16),
        mask_decoder=MaskDecoder(num_multimask_outputs=3, transformer=TwoWayTransformer(depth=1, embedding_dim=dim, mlp_dim=128, num_heads=8),
                                 transformer_dim=dim, iou_head_depth=3, iou_head_hidden_dim=256),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save(sam.state_dict(), path)
    return path


def _clip_tokenizer_files(folder: Path) -> None:
    """A byte-level BPE vocabulary with no merges: every byte is a token (CLIPTokenizer loads it offline)."""
    import json

    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    chars = [chr(c) for c in cs]
    vocab = {"<|startoftext|>": 0, "!": 1, "<|endoftext|>": 2}
    for ch in chars + [c + "</w>" for c in chars]:
        vocab.setdefault(ch, len(vocab))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.json").write_text(json.dumps(vocab))
    (folder / "merges.txt").write_text("#version: 0.2\n")


def _tiny_vae():
    from diffusers import AutoencoderKL

    return AutoencoderKL(block_out_channels=[16, 32], in_channels=3, out_channels=3,
                         down_block_types=["DownEncoderBlock2D"] * 2, up_block_types=["UpDecoderBlock2D"] * 2,
                         latent_channels=4, norm_num_groups=8)


def _tiny_sd_parts(in_channels: int, folder: Path):
    from diffusers import UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(16, 32), layers_per_block=1, sample_size=8, in_channels=in_channels,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), cross_attention_dim=32,
                                attention_head_dim=4, norm_num_groups=8)
    vae = _tiny_vae()
    _clip_tokenizer_files(folder / "_tok")
    tokenizer = CLIPTokenizer.from_pretrained(folder / "_tok", model_max_length=77)
    text = CLIPTextModel(CLIPTextConfig(bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32, intermediate_size=37,
                                        num_attention_heads=4, num_hidden_layers=2, vocab_size=len(tokenizer),
                                        max_position_embeddings=77))
    return unet, vae, text, tokenizer


def build_instruct_pix2pix(folder: Path) -> Path:
    from diffusers import EulerAncestralDiscreteScheduler, StableDiffusionInstructPix2PixPipeline

    unet, vae, text, tok = _tiny_sd_parts(8, folder)
    pipe = StableDiffusionInstructPix2PixPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet,
                                                  scheduler=EulerAncestralDiscreteScheduler(), safety_checker=None,
                                                  feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder


def build_sd_inpaint(folder: Path) -> Path:
    from diffusers import PNDMScheduler, StableDiffusionInpaintPipeline

    unet, vae, text, tok = _tiny_sd_parts(9, folder)
    pipe = StableDiffusionInpaintPipeline(vae=vae, text_encoder=text, tokenizer=tok, unet=unet,
                                          scheduler=PNDMScheduler(skip_prk_steps=True, steps_offset=1), safety_checker=None,
                                          feature_extractor=None, requires_safety_checker=False)
    pipe.save_pretrained(folder)
    return folder


def build_sdxl_inpaint(folder: Path) -> Path:
    from diffusers import EulerDiscreteScheduler, StableDiffusionXLInpaintPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection, CLIPTokenizer

    torch.manual_seed(0)
    unet = UNet2DConditionModel(block_out_channels=(16, 32), layers_per_block=1, sample_size=8, in_channels=9,
                                out_channels=4, down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
                                up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"), attention_head_dim=(2, 4),
                                use_linear_projection=True, addition_embed_type="text_time", addition_time_embed_dim=8,
                                transformer_layers_per_block=(1, 1), projection_class_embeddings_input_dim=80,
                                cross_attention_dim=64, norm_num_groups=8)
    vae = _tiny_vae()
    _clip_tokenizer_files(folder / "_tok")
    tok = CLIPTokenizer.from_pretrained(folder / "_tok", model_max_length=77)
    cfg = dict(bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32, intermediate_size=37, num_attention_heads=4,
               num_hidden_layers=2, vocab_size=len(tok), max_position_embeddings=77, projection_dim=32)
    pipe = StableDiffusionXLInpaintPipeline(vae=vae, text_encoder=CLIPTextModel(CLIPTextConfig(**cfg)),
                                            text_encoder_2=CLIPTextModelWithProjection(CLIPTextConfig(**cfg)),
                                            tokenizer=tok, tokenizer_2=tok, unet=unet, scheduler=EulerDiscreteScheduler(),
                                            requires_aesthetics_score=False)
    pipe.save_pretrained(folder)
    return folder


def build_clip(folder: Path) -> Path:
    """A tiny random CLIP (vision + text, 16-d projection) with its processor, in transformers layout."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor, CLIPTokenizer

    torch.manual_seed(0)
    _clip_tokenizer_files(folder / "_tok")
    tokenizer = CLIPTokenizer.from_pretrained(folder / "_tok", model_max_length=77)
    config = CLIPConfig(
        text_config=dict(bos_token_id=0, eos_token_id=2, pad_token_id=1, hidden_size=32, intermediate_size=37,
                         num_attention_heads=4, num_hidden_layers=2, vocab_size=len(tokenizer), max_position_embeddings=77),
        vision_config=dict(hidden_size=32, intermediate_size=37, num_attention_heads=4, num_hidden_layers=2,
                           image_size=32, patch_size=8),
        projection_dim=16)
    CLIPModel(config).save_pretrained(folder)
    images = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    CLIPProcessor(image_processor=images, tokenizer=tokenizer).save_pretrained(folder)
    return folder


def build_aesthetic_head(path: Path, in_features: int = 16) -> Path:
    """A LAION-style aesthetic MLP (Linear at layers 0, 2, 4, 6, 7 as in the original) with random weights."""
    torch.manual_seed(1)
    sizes = [(in_features, 24), (24, 12), (12, 8), (8, 4), (4, 1)]
    layers = {}
    for index, (i, o) in zip((0, 2, 4, 6, 7), sizes):
        lin = torch.nn.Linear(i, o)
        layers[f"layers.{index}.weight"], layers[f"layers.{index}.bias"] = lin.weight.detach(), lin.bias.detach()
    layers["layers.7.bias"] = layers["layers.7.bias"] + 5.0  # centre the rating on the 1..10 scale
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".safetensors":
        from safetensors.torch import save_file

        save_file({k: v.contiguous() for k, v in layers.items()}, str(path))
    else:
        torch.save(layers, path)
    return path
