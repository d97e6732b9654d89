"""Model output is data, never code: the pack's source has no way to run text as code or to unpickle
untrusted files, and its web extension never puts text into the page as HTML."""
from __future__ import annotations

import ast
import re

import pytest

from helpers import PACK_ROOT

PY_SOURCES = sorted(p for folder in ("agents", "tools", "nodes", "cli", "scripts") for p in (PACK_ROOT / folder).rglob("*.py")) \
    + [PACK_ROOT / "__init__.py"]
JS_SOURCES = sorted((PACK_ROOT / "web").rglob("*.js"))


def _name(node: ast.AST) -> str:
    """Dotted name of a call's target: eval, pickle.load, subprocess.run, ..."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_name(node.value)}.{node.attr}"
    return ""


def _keyword(call: ast.Call, name: str):
    for kw in call.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _is_true(node) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def problems_in(source: str, filename: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        where = f"{filename}:{node.lineno}"
        if name in ("eval", "exec", "compile", "__import__", "builtins.eval", "builtins.exec"):
            found.append(f"{where}: {name}() runs text as code")
        elif name in ("pickle.load", "pickle.loads", "cPickle.load", "marshal.load", "marshal.loads", "dill.load",
                      "joblib.load", "shelve.open"):
            found.append(f"{where}: {name}() can run code from a file")
        elif name == "torch.load" and not _is_true(_keyword(node, "weights_only")):
            found.append(f"{where}: torch.load without weights_only=True can run code from a checkpoint")
        elif name in ("np.load", "numpy.load") and _is_true(_keyword(node, "allow_pickle")):
            found.append(f"{where}: np.load(allow_pickle=True) can run code from a file")
        elif name in ("yaml.load", "yaml.unsafe_load"):
            found.append(f"{where}: {name} can build arbitrary objects (use yaml.safe_load)")
        elif name in ("os.system", "os.popen", "os.execv", "os.execvp", "commands.getoutput"):
            found.append(f"{where}: {name} runs a shell command")
        elif name.startswith("subprocess.") and _is_true(_keyword(node, "shell")):
            found.append(f"{where}: {name}(shell=True) runs a shell command")
    return found


def test_the_scanner_catches_each_pattern():
    bad = "\n".join([
        "eval(text)", "exec(code)", "pickle.load(f)", "torch.load(p)", "torch.load(p, weights_only=False)",
        "np.load(p, allow_pickle=True)", "yaml.load(s)", "os.system(cmd)", "subprocess.run(cmd, shell=True)"])
    assert len(problems_in(bad, "bad.py")) == 9
    good = "model.eval()\ntorch.load(p, map_location='cpu', weights_only=True)\nnp.load(p, allow_pickle=False)\n" \
           "subprocess.run(['git', 'status'])\nyaml.safe_load(s)"
    assert problems_in(good, "good.py") == []


def test_the_pack_source_never_runs_text_as_code():
    assert len(PY_SOURCES) > 30
    found = [p for path in PY_SOURCES for p in problems_in(path.read_text(), str(path.relative_to(PACK_ROOT)))]
    assert not found, "\n".join(found)


JS_PATTERNS = {
    r"\beval\s*\(": "eval() runs text as code",
    r"\bnew\s+Function\s*\(": "new Function() runs text as code",
    r"\.innerHTML\s*=|\.outerHTML\s*=|insertAdjacentHTML\s*\(": "model text must go into the page as text, not HTML",
    r"document\.write\s*\(": "document.write parses HTML",
    r"\bsetTimeout\s*\(\s*['\"`]": "setTimeout with a string runs text as code",
}


@pytest.mark.parametrize("pattern", list(JS_PATTERNS))
def test_the_web_extension_treats_model_text_as_text(pattern):
    assert JS_SOURCES
    hits = [f"{p.relative_to(PACK_ROOT)}:{i + 1}: {JS_PATTERNS[pattern]}" for p in JS_SOURCES
            for i, line in enumerate(p.read_text().splitlines()) if re.search(pattern, line)]
    assert not hits, "\n".join(hits)


def test_prompts_never_ask_for_code():
    """The role prompts ask for JSON data only (so no endpoint is invited to answer with code to run)."""
    prompts = sorted((PACK_ROOT / "agents" / "prompts").glob("*"))
    assert prompts
    for path in prompts:
        text = path.read_text().lower()
        assert "python" not in text and "execute this code" not in text, path.name
