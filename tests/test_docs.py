"""The README and the node help pages stay true to the code they describe (`make docs` regenerates them)."""
import importlib.util

import pytest

from edit_agents.agents.openai_brain import PROVIDERS
from edit_agents.tools import default_registry
from helpers import PACK_ROOT

README = (PACK_ROOT / "README.md").read_text()
STALE = "stale: run `make docs`"


def gen_docs():
    spec = importlib.util.spec_from_file_location("gen_docs", PACK_ROOT / "scripts" / "gen_docs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_tool_and_provider_tables_are_generated_from_the_specs():
    gen = gen_docs()
    assert gen.replace_block(README, "tools", gen.tool_table()) == README, f"the tool table is {STALE}"
    assert gen.replace_block(README, "providers", gen.provider_table()) == README, f"the provider table is {STALE}"
    assert all(f"`{name}`" in README for name in default_registry().names())
    for name, p in PROVIDERS.items():
        row = next(line for line in README.splitlines() if f"| `{name}` |" in line)
        assert (p.base_url or "yours") in row or name in ("openai",)
        assert p.key_env is None or p.key_env in row


def test_the_node_reference_and_help_pages_are_generated_from_the_node_schemas(object_info):
    gen = gen_docs()
    assert gen.replace_block(README, "nodes", gen.node_table(object_info)) == README, f"the node reference is {STALE}"
    pages = gen.help_pages(object_info)
    shipped = {p.name: p.read_text() for p in gen.HELP_DIR.glob("*.md")}
    assert set(shipped) == set(pages), f"web/docs/ is {STALE}"
    for name, text in pages.items():
        assert shipped[name] == text, f"web/docs/{name} is {STALE}"
    ours = [k for k in object_info if k.startswith("EditAgents")]
    assert len(pages) == len(ours) and all(f"| {object_info[k]['display_name']} | `{k}` |" in README
                                           for k in ours if not object_info[k]["category"].endswith("/internal"))


def test_the_english_locale_is_generated_from_the_node_schemas_and_served(object_info, comfy):
    gen = gen_docs()
    assert gen.LOCALE.read_text() == gen.locale_text(object_info), f"locales/en/nodeDefs.json is {STALE}"
    served = comfy.get("/i18n")["en"]["nodeDefs"]  # what the frontend loads for every custom node's locales/
    brain = served["EditAgentsBrain"]
    assert brain["display_name"] == "Brain" and "environment variable" in brain["inputs"]["api_key_env"]["tooltip"]
    assert set(gen.node_locale(object_info)) <= set(served)


def test_a_stale_readme_is_detected():
    gen = gen_docs()
    edited = README.replace("Brighten or darken the whole photo in photographic stops.", "Brightens things.")
    assert gen.replace_block(edited, "tools", gen.tool_table()) != edited
    with pytest.raises(ValueError, match="no <!-- nodes:start"):
        gen.replace_block("no markers here", "nodes", "")


def test_node_help_pages_are_served_where_the_frontend_looks(comfy_server, comfy):
    import urllib.request

    module = next(iter(m for m, names in comfy.get("/api/workflow_templates").items() if "cca" in names))
    url = f"{comfy_server.url}/extensions/{module}/docs/EditAgentsPlanner.md"  # the frontend's node help URL
    with urllib.request.urlopen(url) as response:
        assert response.read().decode().startswith("# Planner\n")


def test_the_two_commands_come_first():
    head = "\n".join(README.splitlines()[:20])
    assert "make demo" in head and "make test" in head
