"""VLM tools through a brain: caption a photo, answer a question about it.

They return the image unchanged and put the text in the notes and data, so a chain or a
critic can read it. They need a vision-capable brain (the runtime's); the offline rule
brain cannot see, and says so.
"""
from __future__ import annotations

from typing import Any

from .spec import Param, ToolOutput, ToolSpec

CAPTION_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["caption"],
                  "properties": {"caption": {"type": "string", "maxLength": 2000}}}
ANSWER_SCHEMA = {"type": "object", "additionalProperties": False, "required": ["answer"],
                 "properties": {"answer": {"type": "string", "maxLength": 2000},
                                "explanation": {"type": "string", "maxLength": 2000}}}


def _ask(runtime, role: str, system: str, text: str, schema: dict, img) -> dict[str, Any]:
    vision = runtime.vision if runtime is not None else None
    why = "no vision brain connected" if vision is None else vision.unavailable()
    if why:
        raise ValueError(f"the {role} tool needs a vision-language brain ({why}): connect a Brain node with a VLM "
                         "(e.g. Qwen-VL, GPT-4o, LLaVA on Ollama) to the Toolbox; the offline rule brain cannot see")
    return vision.ask(role, system, text, schema, img)


def caption(img, detail="short", runtime=None):
    data = _ask(runtime, "caption", "You describe photos for an image-editing agent: the subject, the scene, the light "
                "and the colours, plainly and accurately.", f"Describe this photo ({detail}).", CAPTION_SCHEMA, img)
    return ToolOutput(img, [f"caption: {data['caption']}"], {"caption": data["caption"]})


def ask_image(img, question="", runtime=None):
    data = _ask(runtime, "visual question", "You answer questions about a photo truthfully; say 'unknown' when you "
                "cannot tell.", question, ANSWER_SCHEMA, img)
    return ToolOutput(img, [f"Q: {question} A: {data['answer']}"], data)


VLM = dict(category="vlm", speed="slow", needs_model=True, needs_runtime=True,
           output="the image unchanged; the text goes to the trace")

VLM_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("caption", "Describe the photo in words (needs a vision brain).",
             "Asks the vision-language brain for a caption: what the photo shows, its light and colours.",
             (Param("detail", "enum", "how much detail", default="short", choices=("short", "detailed")),),
             caption, keywords=("describe", "caption"), **VLM),
    ToolSpec("ask_image", "Ask a question about the photo (needs a vision brain).",
             "Visual question answering: e.g. 'Is there a dog?' or 'What colour is the sky?'.",
             (Param("question", "string", "the question", required=True),),
             ask_image, keywords=("question about",), **VLM),
)
