"""The roles package (issue 68): one module per role behind ``agents.roles``, which re-exports their names and
still reads the prompts from agents/prompts/."""
from __future__ import annotations

import importlib

from edit_agents.agents import roles

SUBMODULES = ("asking", "planner", "executor", "discriminator", "feedback", "experts", "competitor")


def test_the_prompts_are_read_from_agents_prompts():
    assert roles.PROMPTS.name == "prompts" and roles.PROMPTS.parent.name == "agents"
    assert (roles.PROMPTS / "planner.md").is_file() and roles.prompt("caption")


def test_every_exported_name_is_one_of_the_role_modules():
    modules = {f"edit_agents.agents.roles.{n}": importlib.import_module(f"edit_agents.agents.roles.{n}")
               for n in SUBMODULES}
    for name in roles.__all__:
        value = getattr(roles, name)
        assert any(getattr(m, name, None) is value for m in modules.values()), name
        if callable(value):  # defined in a role module, not left in the package
            assert value.__module__ in modules, (name, value.__module__)
    assert {"plan", "execute", "discriminate", "critique", "aggregate", "compete", "Where"} <= set(roles.__all__)
