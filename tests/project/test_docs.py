"""The README and the node help pages stay true to the code they describe (`make docs` regenerates them)."""
import re

import pytest

from edit_agents.agents.openai_brain import PROVIDERS
from edit_agents.tools import default_registry
from helpers import PACK_ROOT, load_script

README = (PACK_ROOT / "README.md").read_text()
STALE = "stale: run `make docs`"


def gen_docs():
    return load_script("gen_docs")


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


README_MAX_LINE = 300  # characters: paragraphs wrapped, table rows that fit a wide screen
README_MAX_LINES = 420  # a README for users; figures, papers and history live in docs/ and CHANGELOG.md
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def anchors(markdown: str) -> set[str]:
    """The heading anchors GitHub makes: lower case, punctuation dropped, spaces to hyphens, repeats numbered."""
    seen: dict[str, int] = {}
    out = set()
    in_code = False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        if in_code or not line.startswith("#"):
            continue
        slug = re.sub(r"[^\w\- ]", "", line.lstrip("#").strip().lower()).replace(" ", "-")
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def test_the_readme_stays_short():
    assert len(README.splitlines()) <= README_MAX_LINES, "move detail to docs/ and link to it"
    long = [n for n, line in enumerate(README.splitlines(), 1) if len(line) > README_MAX_LINE]
    assert not long, f"README lines {long} are over {README_MAX_LINE} characters: wrap them (a generated table's row: " \
                     "shorten it in scripts/gen_docs.py)"


def test_every_relative_link_in_the_docs_points_to_something_that_exists():
    pages = [PACK_ROOT / "README.md", PACK_ROOT / "CHANGELOG.md", *sorted((PACK_ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            path, _, anchor = target.partition("#")
            file = (page.parent / path).resolve() if path else page
            if not file.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and file.suffix == ".md" and anchor not in anchors(file.read_text()):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert not broken, broken
