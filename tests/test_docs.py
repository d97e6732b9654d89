"""The README stays true to the code it describes."""
from edit_agents.agents.openai_brain import PROVIDERS
from edit_agents.tools import default_registry
from helpers import PACK_ROOT

README = (PACK_ROOT / "README.md").read_text()


def test_every_provider_preset_is_documented():
    for name, p in PROVIDERS.items():
        row = next((line for line in README.splitlines() if line.startswith(f"| `{name}` |")), None)
        assert row, f"provider {name} is missing from the README's provider table"
        if p.base_url:
            assert p.base_url in row
        if p.key_env:
            assert p.key_env in row


def test_the_readme_tool_table_is_generated_from_the_specs():
    import importlib.util

    spec = importlib.util.spec_from_file_location("gen_docs", PACK_ROOT / "scripts" / "gen_docs.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    assert gen.render(README) == README, "the README's tool table is stale: run `make docs`"
    assert all(f"`{name}`" in README for name in default_registry().names())


def test_the_two_commands_come_first():
    head = "\n".join(README.splitlines()[:20])
    assert "make demo" in head and "make test" in head
