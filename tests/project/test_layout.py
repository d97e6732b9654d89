"""Where things live: the layers import downward only, and the node modules import one another in no circle.

tools/ (image operations, model tools) never imports agents/ or nodes/; agents/ (the systems, in pure Python)
never imports nodes/ or ComfyUI; nodes/ are the adapters. Each system has one agent module and one node module."""
import ast
from pathlib import Path

from helpers import PACK_ROOT

COMFY_MODULES = ("comfy", "comfy_api", "comfy_execution", "comfy_extras", "folder_paths", "server", "nodes",
                 "execution", "latent_preview", "node_helpers")


def imports(path: Path) -> list[tuple[int, str]]:
    """(level, module) of every import in ``path``: level 0 is absolute, 1 is ``from .x``, 2 ``from ..x``."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(0, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level and not module:  # from . import a, b
                out += [(node.level, alias.name) for alias in node.names]
            else:
                out.append((node.level, module))
    return out


def package_of(path: Path) -> tuple[str, ...]:
    return path.relative_to(PACK_ROOT).with_suffix("").parts


def resolve(path: Path, level: int, module: str) -> tuple[str, ...]:
    """The pack-relative dotted path an import names (absolute imports are left as they are)."""
    if level == 0:
        return tuple(module.split("."))
    base = package_of(path)[:-level]  # a module's (or __init__'s) own package, then up
    return base + tuple(p for p in module.split(".") if p)


def pack_imports(folder: str) -> dict[Path, set[tuple[str, ...]]]:
    return {p: {resolve(p, lvl, mod) for lvl, mod in imports(p)} for p in (PACK_ROOT / folder).rglob("*.py")}


def test_tools_import_neither_agents_nor_nodes_nor_comfyui():
    found = {(p.name, ".".join(m)) for p, mods in pack_imports("tools").items() for m in mods
             if m[0] in ("agents", "nodes") or (len(m) and m[0] in COMFY_MODULES and m[0] != "nodes")}
    assert not found, f"tools/ reaches up: {sorted(found)}"


def test_agents_import_neither_nodes_nor_comfyui():
    found = set()
    for p, mods in pack_imports("agents").items():
        for lvl, mod in imports(p):
            if lvl == 0 and mod.split(".")[0] in COMFY_MODULES:
                found.add((p.name, mod))
        found |= {(p.name, ".".join(m)) for m in mods if m[:1] == ("nodes",)}
    assert not found, f"agents/ reaches ComfyUI or the nodes: {sorted(found)}"


def reached(start: tuple[str, ...]) -> set[tuple[str, ...]]:
    """The pack's modules ``start`` (an agents/ module or package, as path parts) imports, directly or through others."""
    graph = {package_of(p)[:-1] if p.name == "__init__.py" else package_of(p): mods
             for p, mods in pack_imports("agents").items()}
    seen, todo = set(), [start]
    while todo:
        for mod in graph.get(todo.pop(), ()):
            # "from .x import name" names a module or a name in one: keep the longest prefix that is a module
            while mod and mod not in graph:
                mod = mod[:-1]
            if mod and mod not in seen:
                seen.add(mod)
                todo.append(mod)
    return seen


def test_quality_lies_below_the_loops_and_cca_and_imagagent_need_no_photoagent():
    """agents/quality (metrics, reward, IQA, the defects, the rule perceiver) imports no loop, role or brain; CCA,
    IMAGAgent and the rule brain reach PhotoAgent's search or vision perceiver through no import."""
    loops = {("agents", name) for name in ("cca", "imagagent", "photoagent", "roles", "rule_brain", "rule_default")}
    for module in ("metrics", "reward", "perception", "defects"):
        below = reached(("agents", "quality", module))
        assert not {m[:2] for m in below} & loops, f"agents/quality/{module} reaches {sorted({m[:2] for m in below} & loops)}"
    for start in (("agents", "cca"), ("agents", "imagagent"), ("agents", "rule_brain"), ("agents", "rule_default")):
        assert not {m for m in reached(start) if m[:2] == ("agents", "photoagent")}, f"{start} reaches PhotoAgent"
    # the walk follows imports: the search reaches the defects through the rule perceiver
    assert ("agents", "quality", "defects", "base") in reached(("agents", "photoagent", "search"))


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every circle in a directed graph, each once (from its smallest node)."""
    found = []

    def walk(start, node, path):
        for nxt in sorted(graph.get(node, ())):
            if nxt == start:
                found.append(path[:])
            elif nxt > start and nxt not in path:
                walk(start, nxt, path + [nxt])
    for start in sorted(graph):
        walk(start, start, [start])
    return found


def test_the_node_modules_import_one_another_in_no_circle():
    graph = {}
    for p, mods in pack_imports("nodes").items():
        name = p.stem
        graph[name] = {m[1] for m in mods if m[:1] == ("nodes",) and len(m) > 1 and m[1] != name}
    assert graph["cca"] and "common" in graph["cca"]  # the graph is read (the CCA nodes use the shared pieces)
    assert not cycles(graph), f"node modules in a circle: {cycles(graph)}"


def test_the_cycle_finder_finds_a_circle():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_each_system_has_its_agent_module_and_its_node_module():
    for system, agent in (("cca", "agents/cca.py"), ("imagagent", "agents/imagagent.py"),
                          ("photoagent", "agents/photoagent/search.py")):
        assert (PACK_ROOT / agent).is_file() and (PACK_ROOT / "nodes" / f"{system}.py").is_file()


def test_every_python_package_of_the_pack_is_installed():
    """pyproject lists the packages by hand (the pack's root is the package): a new sub-package left out would be
    missing from a non-editable install."""
    import tomllib

    listed = set(tomllib.loads((PACK_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"edit_agents"} | {"edit_agents." + ".".join(p.parent.relative_to(PACK_ROOT).parts)
                               for folder in ("agents", "tools", "nodes", "cli")
                               for p in (PACK_ROOT / folder).rglob("__init__.py")}
    assert "edit_agents.agents.photoagent" in found and found <= listed, f"not installed: {sorted(found - listed)}"


TESTS = PACK_ROOT / "tests"
BENCH_MODULES = {p.stem for p in (PACK_ROOT / "bench").glob("*.py")}


def test_tests_mirror_the_code_and_support_imports_no_bench():
    """Each test module sits in the folder of what it tests (no test module left at the top of tests/), imports no
    other test module, and the test-support modules (tests/support/) import nothing from bench/: benchmarks may
    import the support, never the other way round. Only the tests of the benchmarks (tests/bench/) import them."""
    assert not list(TESTS.glob("test_*.py")), "a test module at the top of tests/: put it beside what it tests"
    for path in TESTS.rglob("*.py"):
        names = {module.split(".")[0] for _, module in imports(path)}
        assert not {n for n in names if n.startswith("test_")}, f"{path} imports another test module"
        if path.parent.name != "bench":
            assert not names & BENCH_MODULES, f"{path} imports a benchmark: {sorted(names & BENCH_MODULES)}"
