"""Custom socket types of the pack."""
from comfy_api.latest import io

BRAIN = io.Custom("BRAIN")
TOOLBOX = io.Custom("TOOLBOX")
PLAN = io.Custom("PLAN")
FEEDBACK = io.Custom("FEEDBACK")
TRACE = io.Custom("TRACE")
REWARD = io.Custom("REWARD")

CATEGORY = "Edit Agents"
