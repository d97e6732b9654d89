"""VLM tools through the OpenAI-compatible brain against the scripted endpoint."""
from __future__ import annotations

import asyncio

import numpy as np
import pytest

from edit_agents.agents.brain import vision_of
from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.agents.rule_default import offline_brain as RuleBrain
from edit_agents.tools import default_registry
from edit_agents.tools.models import ToolRuntime
from llm_server import Reply


def vlm(llm):
    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm", backoff=0.01))


def test_caption_and_question(llm, photos):
    llm.reset(Reply({"caption": "a tabby cat looking at the camera"}), Reply({"answer": "yes", "explanation": "whiskers"}))
    tools = default_registry(ToolRuntime(vision=vision_of(vlm(llm))))
    img = photos["chelsea"]
    out, _, notes = tools.call("caption", img, {})
    assert out is img and notes == ["caption: a tabby cat looking at the camera"]
    out, _, notes = tools.call("ask_image", img, {"question": "Is there a cat?"})
    assert notes == ["Q: Is there a cat? A: yes"]
    assert len(llm.seen[0].images()) == 1 and "Is there a cat?" in llm.seen[1].user_text()


def test_vlm_tool_from_inside_an_event_loop(llm, photos):
    llm.reset(Reply({"caption": "coffee"}))
    tools = default_registry(ToolRuntime(vision=vision_of(vlm(llm))))

    async def inside():
        return tools.call("caption", photos["coffee"], {})
    assert asyncio.run(inside())[2] == ["caption: coffee"]


def test_vlm_tools_need_a_vision_brain(photos):
    for brain in (None, RuleBrain()):
        with pytest.raises(ValueError, match="needs a vision-language brain"):
            default_registry(ToolRuntime(vision=vision_of(brain))).call("caption", photos["coffee"], {})
    assert np.isfinite(photos["coffee"]).all()
