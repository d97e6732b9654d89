"""Toolbox node: which tools an agent may use, and which models the model tools use."""
from __future__ import annotations

from comfy_api.latest import io

from ..tools import ToolCallError, default_registry
from .runtime import comfy_runtime, model_choices
from .graph_tools import GRAPH_TOOL
from .types import BRAIN, CATEGORY, TOOLBOX

CATEGORIES = ["classic", "classic + localise", "classic + localise + generative", "all"]
MODEL_INPUTS = {  # widget -> (model kind, tooltip)
    "grounding_dino": ("grounding-dino", "GroundingDINO model folder in models/grounding-dino/ (transformers layout), for 'ground'."),
    "sam": ("sams", "segment-anything checkpoint in models/sams/, for 'ground' and 'segment_box'."),
    "instruct_pix2pix": ("instruct-pix2pix", "InstructPix2Pix pipeline folder in models/diffusers/."),
    "inpaint": ("inpaint", "SD or SDXL inpainting pipeline folder in models/diffusers/."),
}


def _names(text: str) -> list[str]:
    return [n.strip() for n in text.replace("\n", ",").split(",") if n.strip()]


def _categories(choice: str) -> list[str]:
    if choice == "all":
        return ["classic", "localise", "generative", "vlm", "graph"]
    return [c.strip() for c in choice.split("+")]


class Toolbox(io.ComfyNode):
    @classmethod
    def define_schema(cls):
        choices = {name: model_choices(kind) for name, (kind, _) in MODEL_INPUTS.items()}  # one folder listing each
        models = [io.Combo.Input(name, options=choices[name], default=choices[name][0], tooltip=tip)
                  for name, (_, tip) in MODEL_INPUTS.items()]
        return io.Schema(
            node_id="EditAgentsToolbox",
            display_name="Toolbox",
            category=CATEGORY,
            description="Chooses which tools an agent may use (agents can only call tools in their toolbox) and which "
                        "model files the model tools load. Models load once and are managed by ComfyUI.",
            inputs=[
                io.Combo.Input("category", options=CATEGORIES, default="classic",
                               tooltip="Tool families: classic = exact PIL/OpenCV edits (no model); localise = masks from text "
                                       "or boxes (GroundingDINO, SAM); generative = diffusion editors; all adds VLM tools."),
                io.String.Input("only", default="", multiline=False,
                                tooltip="Comma-separated tool names to allow (empty = every tool of the categories), e.g. 'exposure, contrast'."),
                io.String.Input("exclude", default="", multiline=False,
                                tooltip="Comma-separated tool names to forbid, e.g. 'crop, rotate'."),
                *models,
                BRAIN.Input("vision_brain", optional=True, tooltip="A vision-language brain for the caption and ask_image tools."),
                io.Model.Input("model", optional=True, tooltip="Your MODEL: with CLIP and VAE, an instruction-edit model "
                               "(FLUX.1 Kontext, Qwen-Image-Edit, from Load Diffusion Model) enables comfy_edit and "
                               "comfy_edit_region; any other checkpoint comfy_img2img, comfy_inpaint and "
                               "comfy_instruct_pix2pix. Connect it after your LoRA or ModelSampling nodes: the tools "
                               "sample it as it comes."),
                io.Clip.Input("clip", optional=True, tooltip="Your model's CLIP (text encoder: Kontext's DualCLIPLoader, "
                              "Qwen-Image's Load CLIP)."),
                io.Vae.Input("vae", optional=True, tooltip="Your model's VAE."),
                *[GRAPH_TOOL.Input(f"graph_tool_{i}", optional=True, tooltip="A sub-graph made into a tool by a Tool Output node.")
                  for i in (1, 2, 3)],
            ],
            outputs=[TOOLBOX.Output(display_name="toolbox", tooltip="The allowed tools, for an agent or loop node.")],
        )

    @classmethod
    def execute(cls, category: str, only: str, exclude: str, grounding_dino: str, sam: str, instruct_pix2pix: str,
                inpaint: str, vision_brain=None, model=None, clip=None, vae=None, graph_tool_1=None, graph_tool_2=None,
                graph_tool_3=None) -> io.NodeOutput:
        from .comfy_tools import COMFY_TOOLS, EDIT_TOOLS, edit_family

        hosted = {"model": model, "clip": clip, "vae": vae}
        given = [k for k, v in hosted.items() if v is not None]
        if given and len(given) < 3:
            raise ValueError(f"Toolbox: connect MODEL, CLIP and VAE together to use your checkpoint (got only "
                             f"{', '.join(k.upper() for k in given)})")
        runtime = comfy_runtime({"grounding-dino": grounding_dino, "sams": sam, "instruct-pix2pix": instruct_pix2pix,
                                 "inpaint": inpaint}, brain=vision_brain, extras=hosted)
        registry = default_registry(runtime)
        not_an_editor = ""
        if given:  # an instruction-edit model gets the edit tools; any other checkpoint the SD tools
            try:
                edit_family(model)
            except ValueError as err:
                not_an_editor = str(err)
            for spec in COMFY_TOOLS if not_an_editor else EDIT_TOOLS:
                registry.register(spec)
        graph_tools = [g for g in (graph_tool_1, graph_tool_2, graph_tool_3) if g is not None]
        for g in graph_tools:
            try:
                registry.register(g.spec)
            except ValueError as err:
                raise ValueError(f"Toolbox: graph tool {g.spec.name!r}: {err}") from None
        runtime.extras["graph_tools"] = {g.spec.name: g for g in graph_tools}
        asked_edit = [n for n in _names(only) if n in {t.name for t in EDIT_TOOLS} and n not in registry]
        if asked_edit:  # named, but the model connected (or none) cannot edit by instruction: say what to connect
            raise ValueError(f"Toolbox: {asked_edit[0]}: " + (not_an_editor or "connect an instruction-edit model "
                             "(FLUX.1 Kontext, Qwen-Image-Edit) as MODEL, with its CLIP and VAE"))
        try:
            for name in _names(only) + _names(exclude):
                registry.get(name)  # unknown names: an error with the closest tool names
        except ToolCallError as err:
            raise ValueError(f"Toolbox: {err}") from None
        chosen = registry.subset(categories=_categories(category) + (["graph"] if graph_tools else []))
        if _names(only):
            chosen = chosen.subset(names=[n for n in _names(only) if n in chosen])
        dropped = set(_names(exclude))
        chosen = chosen.subset(names=[n for n in chosen.names() if n not in dropped])
        if len(chosen) == 0:
            raise ValueError("Toolbox: no tool is left after 'only' and 'exclude'; allow at least one tool")
        return io.NodeOutput(chosen)


NODES = [Toolbox]
