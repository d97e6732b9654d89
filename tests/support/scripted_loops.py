"""The scripted endpoint's answers for the loop tests: every role answers as a cooperative model would."""
from __future__ import annotations

from edit_agents.agents.openai_brain import BrainConfig, OpenAIBrain
from edit_agents.tools import default_registry
from llm_server import Reply

TOOLS = default_registry()

ANSWERS = {
    "planner": {"subtasks": [{"goal": "warm the light", "tool": "temperature_tint", "rationale": "asked"},
                             {"goal": "add punch", "tool": "contrast", "depends_on": [0]}], "notes": ""},
    "questions": {"questions": [{"text": "Is it warmer?", "part": "warmer"}, {"text": "More contrast?", "part": "more punch"}]},
    "caption": {"caption": "a cat on a sofa"},
    "answers": {"answers": [{"answer": "yes", "explanation": "warmer"}, {"answer": "yes", "explanation": "punchier"}],
                "quality": 8.5},
    "competitor": {"best": 1, "stop": True, "reason": "the second is cleaner"},
    "expert": {"score": 8, "positive": "nice", "negative": ""},
    "aggregator": {"positive": "nice", "negative": ""},  # text only: the verdict is the experts' mean
}


def subtask_of(seen, word: str) -> int:
    """The number of the listed plan's subtask whose line has ``word`` (as a discriminator reads the plan), or -1."""
    for line in seen.user_text().split("Questions:")[0].splitlines():
        number, _, goal = line.partition(". ")
        if number.isdigit() and word in goal:
            return int(number)
    return -1


def answers_naming_subtasks(seen, answers: list[dict], quality: float) -> Reply:
    """The answers to the two questions (warmer, more punch), each naming the subtask it checks."""
    named = [{**a, "subtask": subtask_of(seen, word)} for a, word in zip(answers, ("warm", "punch"))]
    return Reply({"answers": named, "quality": quality})


def respond(seen):
    role = seen.role
    if role == "answers":
        return answers_naming_subtasks(seen, ANSWERS["answers"]["answers"], ANSWERS["answers"]["quality"])
    if role == "executor":
        goal = seen.user_text().split("\n", 1)[0]  # "Subtask: ..."
        if "warm" in goal:
            return Reply({"steps": [{"tool": "temperature_tint", "params": {"temperature": 0.45, "tint": 0.0}}]})
        return Reply({"steps": [{"tool": "contrast", "params": {"amount": 0.33}}]})
    return Reply(ANSWERS[role])


def brain(llm, **kw):
    return OpenAIBrain(BrainConfig(provider="custom", base_url=llm.url, model="scripted-vlm", backoff=0.01, **kw))
