"""The diffusers editors with tiny random-weight pipelines loaded from a models/diffusers/ folder."""
from __future__ import annotations

import numpy as np
import pytest

from edit_agents.tools import default_registry
from edit_agents.tools.models import MissingModelError, ToolRuntime

FAST = {"steps": 2, "work_side": 64}


def test_instruct_pix2pix_is_seeded_loads_once_and_keeps_alpha(runtime, photos):
    tools = default_registry(runtime)
    img = photos["coffee"][::2, ::2]
    a, params, notes = tools.call("instruct_pix2pix", img, {"prompt": "make it winter", "seed": 1, **FAST})
    b, _, _ = tools.call("instruct_pix2pix", img, {"prompt": "make it winter", "seed": 1, **FAST})
    c, _, _ = tools.call("instruct_pix2pix", img, {"prompt": "make it winter", "seed": 2, **FAST})
    assert a.shape == img.shape and np.array_equal(a, b) and not np.array_equal(a, c)
    assert not np.allclose(a, img) and "InstructPix2Pix 'make it winter'" in notes[0]
    assert list(runtime.loads.values()) == [1]
    rgba = np.concatenate([img, np.full(img.shape[:2] + (1,), 0.5, np.float32)], axis=2)
    out, _, _ = tools.call("instruct_pix2pix", rgba, {"prompt": "x", **FAST})
    assert out.shape == rgba.shape and np.all(out[..., 3] == 0.5)


@pytest.mark.parametrize("model", ["tiny-sd-inpaint", "tiny-sdxl-inpaint"])
def test_inpaint_changes_only_the_mask(model_root, photos, model):
    rt = ToolRuntime({"diffusers": [model_root / "diffusers"]}, choices={"inpaint": model})
    tools = default_registry(rt)
    img = photos["chelsea"]
    mask, _, _ = tools.call("box_mask", img, {"box": [0.3, 0.3, 0.7, 0.7]})
    out, _, notes = tools.call("inpaint", img, {"prompt": "a dog", "mask": "step:0", **FAST}, refs=[mask])
    inside = mask[..., 0] > 0
    assert np.array_equal(out[~inside], img[~inside])  # outside the mask: exactly the input
    assert np.abs(out[inside] - img[inside]).mean() > 0.02
    empty = np.zeros_like(mask)
    same, _, notes = tools.call("inpaint", img, {"prompt": "a dog", "mask": "step:0", **FAST}, refs=[empty])
    assert np.array_equal(same, img) and "mask is empty" in notes[0]


def test_missing_and_broken_pipelines_are_explained(tmp_path, photos):
    rt = ToolRuntime({"diffusers": [tmp_path]}, choices={"instruct-pix2pix": "instruct-pix2pix"})
    with pytest.raises(MissingModelError) as err:
        default_registry(rt).call("instruct_pix2pix", photos["coffee"], {"prompt": "x"})
    assert str(tmp_path) in str(err.value) and "timbrooks/instruct-pix2pix" in str(err.value)
    (tmp_path / "instruct-pix2pix").mkdir()
    with pytest.raises(ValueError, match="not a diffusers pipeline folder"):
        default_registry(rt).call("instruct_pix2pix", photos["coffee"], {"prompt": "x"})


def test_concurrent_calls_share_one_pipeline_safely(runtime, photos):
    """Two generators of a CCA round inpaint at once: a pipeline keeps its scheduler's step in itself, so the
    calls take turns (without that, one raises IndexError or both denoise wrongly) and match a lone call."""
    from concurrent.futures import ThreadPoolExecutor

    tools = default_registry(runtime)
    img = photos["chelsea"][::3, ::3]
    mask = np.ones(img.shape[:2] + (1,), np.float32)
    call = lambda seed: tools.call("inpaint", img, {"prompt": "a sunset", "mask": "step:0", "seed": seed, "steps": 6},  # noqa: E731
                                   refs=[mask])[0]
    alone = [call(seed) for seed in (1, 2)]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(call, [1, 2, 1, 2]))
    assert all(np.allclose(t, alone[i % 2], atol=1e-5) for i, t in enumerate(together))


def test_pipeline_parts_are_placed_in_one_call_in_the_runtimes_dtype(model_root):
    """Inside ComfyUI all of a pipeline's parts go to load_models_gpu together, in ComfyUI's dtype for the device
    (fp16 or bf16 on a GPU): a manager that prefers fp16, as ComfyUI does on most GPUs, gets an fp16 pipeline."""
    import torch

    from edit_agents.tools import generative
    from edit_agents.tools.models import LocalDevice

    class PrefersHalf(LocalDevice):
        def __init__(self):
            self.calls: list[int] = []

        def dtype(self, device):
            return torch.float16

        def place_all(self, modules):
            self.calls.append(len(modules))
            return super().place_all(modules)

    runtime = ToolRuntime({"diffusers": [model_root / "diffusers"]}, choices={"instruct-pix2pix": "tiny-instruct-pix2pix"},
                          manager=PrefersHalf())
    pipe = generative._pipeline(runtime, "instruct-pix2pix")
    assert pipe.unet.dtype == torch.float16 and pipe.vae.dtype == torch.float16 and pipe.text_encoder.dtype == torch.float16
    generative._place(runtime, pipe)
    parts = [c for c in pipe.components.values() if isinstance(c, torch.nn.Module)]
    assert runtime.manager.calls == [len(parts)] and len(parts) >= 3  # unet, vae, text encoder: one call
    assert ToolRuntime().dtype() == torch.float32  # on this CPU, without ComfyUI
