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
