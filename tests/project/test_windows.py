"""Windows, where most ComfyUI users are (the portable build), checked from Linux.

pyright reads the pack and its CLI twice, under typeshed's Windows stubs and under its Linux ones, with the rule
set in pyproject.toml's [tool.pyright] (the module members and class members that exist on one platform only):
whatever only one platform reports is a call that fails there (``os.killpg`` on Windows: `edit-agents run` without
--server could not stop the ComfyUI it started). The rest are unit tests of what the CLI does differently for
Windows: output file names without the characters Windows forbids, text files in UTF-8 whatever the locale's
code page, and the local server started in a process group of its own and stopped through it.

`make setup` installs pyright (npm) into .setup/eslint; without it these checks fail, they are not skipped.
"""
from __future__ import annotations

import asyncio
import json
import re
import shutil
import subprocess
import sys
import types
import venv
from pathlib import Path

import pytest

from edit_agents.agents.trace import HISTORY_KEY
from edit_agents.cli import main as cli_main
from edit_agents.cli import server as cli_server
from edit_agents.cli.client import ExecutionFailed, Result
from edit_agents.cli.workflow import load_workflow
from helpers import PACK_ROOT

PYRIGHT = PACK_ROOT / ".setup" / "eslint" / "node_modules" / ".bin" / "pyright"
PLATFORMS = ("Windows", "Linux")
# What pyright reads: [tool.pyright]'s include, as pyproject.toml writes it (a one-line list; TOML's is JSON's)
PYRIGHT_INCLUDE = json.loads(re.search(r"^\[tool\.pyright\][^\[]*?^include = (\[.*?\])$",
                                       (PACK_ROOT / "pyproject.toml").read_text(), re.M | re.S).group(1))


def pyright() -> Path:
    if not shutil.which("node"):
        pytest.fail("node.js is not installed, and pyright (npm) runs on it: apt-get install nodejs npm, then "
                    "`make setup`")
    if not PYRIGHT.exists():
        pytest.fail(f"pyright is not installed at {PYRIGHT}: run `make setup` (scripts/setup.py's "
                    "ensure_check_tools installs it with ESLint)")
    return PYRIGHT


@pytest.fixture(scope="module")
def bare_python(tmp_path_factory) -> Path:
    """The Python of an empty virtual environment: pyright then resolves the standard library only (see
    [tool.pyright]), the same on every machine, whatever the test venv holds."""
    env = tmp_path_factory.mktemp("bare-venv")
    venv.create(env, with_pip=False, symlinks=sys.platform != "win32")
    return env / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")


Finding = tuple[str, int, str, str]  # (file, line, rule, message)


def run_pyright(python: Path, files: list[Path] = ()) -> tuple[dict[str, set[Finding]], int]:
    """pyright's findings on each platform (both run at once), and how many files it read; ``files`` empty:
    [tool.pyright]'s include."""
    cmd = [str(pyright()), "--project", str(PACK_ROOT / "pyproject.toml"), "--pythonpath", str(python),
           "--outputjson", *map(str, files)]
    procs = {platform: subprocess.Popen([*cmd, "--pythonplatform", platform], cwd=PACK_ROOT, text=True,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for platform in PLATFORMS}
    found, analyzed = {}, set()
    for platform, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode in (0, 1), f"pyright ({platform}) exited with {proc.returncode}:\n{out}\n{err}"
        report = json.loads(out)
        analyzed.add(report["summary"]["filesAnalyzed"])
        found[platform] = {(str(Path(d["file"]).relative_to(PACK_ROOT) if Path(d["file"]).is_relative_to(PACK_ROOT)
                                else Path(d["file"]).name),
                            d["range"]["start"]["line"] + 1, d.get("rule", ""), d["message"].split("\n")[0])
                           for d in report["generalDiagnostics"]}
    assert len(analyzed) == 1, analyzed
    return found, analyzed.pop()


def platform_only(found: dict[str, set[Finding]]) -> dict[str, list[Finding]]:
    return {p: sorted(found[p] - set().union(*(found[q] for q in PLATFORMS if q != p))) for p in PLATFORMS}


# What each platform lacks, as the pack once called it (cli/server.py's LocalServer.stop before it was written for
# both), and the same calls behind the checks pyright reads.
PROBE = '''import os
import signal
import socket
import sys


def stop(pid: int) -> None:
    os.killpg(pid, signal.SIGTERM)
    os.killpg(pid, signal.SIGKILL)


def send(sock: socket.socket) -> None:
    sock.sendmsg([b""])


def stop_on_windows(pid: int) -> None:
    os.kill(pid, signal.CTRL_BREAK_EVENT)


def stop_anywhere(pid: int) -> None:
    if sys.platform == "win32":
        os.kill(pid, signal.CTRL_BREAK_EVENT)
    else:
        os.killpg(pid, signal.SIGKILL)
'''


def test_pyright_reports_what_one_platform_lacks(bare_python, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    found, analyzed = run_pyright(bare_python, [probe])
    assert analyzed == 1
    only = platform_only(found)
    said = {p: {(line, re.findall(r'"(\w+)"', msg)[0]) for _, line, rule, msg in only[p]} for p in PLATFORMS}
    assert said["Windows"] == {(8, "killpg"), (9, "killpg"), (9, "SIGKILL"), (13, "sendmsg")}, only
    assert said["Linux"] == {(17, "CTRL_BREAK_EVENT")}, only
    assert {rule for p in PLATFORMS for _, _, rule, _ in only[p]} == {"reportAttributeAccessIssue"}


def test_the_pack_and_the_cli_call_nothing_that_windows_or_linux_lacks(bare_python):
    """Every platform-gated member the pack and the CLI use is behind a check pyright reads
    (``sys.platform == "win32"``). What both platforms report alike (the pack is not annotated for a type
    checker) is not this test's business."""
    found, analyzed = run_pyright(bare_python)
    code = [f for top in PYRIGHT_INCLUDE for f in ([PACK_ROOT / top] if top.endswith(".py") else
                                                   (PACK_ROOT / top).rglob("*.py")) if "__pycache__" not in f.parts]
    assert analyzed == len(code) and any(f.name == "server.py" for f in code), (analyzed, len(code))
    only = platform_only(found)
    lines = [f"  {p}: {f}:{line}: {msg} ({rule})" for p in PLATFORMS for f, line, rule, msg in only[p]]
    assert not lines, ("calls that exist on one platform only, not behind a `sys.platform == \"win32\"` check "
                       "(the portable ComfyUI on Windows would fail there):\n" + "\n".join(lines))


# Output files: named by the node that made them

WINDOWS_FORBIDS = set('<>:"/\\|?*') | {chr(c) for c in range(32)}
WINDOWS_DEVICES = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))}


def windows_accepts(name: str) -> bool:
    return (bool(name) and not (set(name) & WINDOWS_FORBIDS) and not name.endswith((".", " "))
            and name.split(".")[0].upper() not in WINDOWS_DEVICES)


def test_windows_accepts_follows_windows_rules():
    assert windows_accepts("photo_12_0.png") and windows_accepts("trace_7.json")
    assert not any(windows_accepts(n) for n in ("photo_12:5_0.png", "a|b.png", "x?.json", "nul.txt", "a.", "b "))


@pytest.mark.parametrize("node_id, part", [("12", "12"), (12, "12"), ("12:5", "12-5"), ("3:12:5", "3-12-5"),
                                           ('a/b\\c<d>e"f|g?h*i', "a-b-c-d-e-f-g-h-i"), ("tab\there", "tab-here")])
def test_a_node_id_goes_into_a_file_name_without_what_windows_forbids(node_id, part):
    assert cli_main.file_part(node_id) == part
    assert windows_accepts(f"photo_{cli_main.file_part(node_id)}_0.png")


class FakeClient:
    """What run_one asks of ComfyClient, answering with the outputs a server would."""

    base_url = "http://127.0.0.1:1"

    def __init__(self, outputs: dict | None = None, error: dict | None = None):
        self.outputs, self.error = outputs or {}, error

    async def upload_image(self, path: Path, name: str | None = None) -> str:
        return name or path.name

    async def run(self, prompt: dict, on_event=None) -> Result:
        if self.error:
            raise ExecutionFailed(self.error)
        return Result("p1", self.outputs)

    async def download(self, info: dict, dest: Path) -> Path:
        dest.write_bytes(b"image")
        return dest

    async def forget(self, prompt_id: str) -> None:
        pass


def cli_args(command: str) -> types.SimpleNamespace:
    return types.SimpleNamespace(command=command, instruction=None, set=None, bits=None, quiet=True,
                                 keep_history=True, workflow="workflow.json")


@pytest.fixture
def photo(tmp_path, monkeypatch) -> Path:
    from PIL import Image

    path = tmp_path / "photo.png"
    Image.new("RGB", (8, 8)).save(path)
    monkeypatch.setattr(cli_main, "set_image", lambda prompt, name: None)  # the template below has no loader
    return path


# Save nodes inside subgraphs (ids "12:5", "3:12:5", as the CLI's conversion and ComfyUI's frontend give them)
# and outside, and two Trace Views, one of them inside a subgraph.
OUTPUTS = {"12:5": {"images": [{"filename": "a.png", "type": "output"}, {"filename": "b.png", "type": "output"}]},
           "3:12:5": {"images": [{"filename": "c.png", "type": "output"}]},
           "9": {"images": [{"filename": "d.png", "type": "output"}, {"filename": "e.png", "type": "temp"}]},
           "7": {HISTORY_KEY: [{"title": "outer", "summary": {}}]},
           "4:2": {HISTORY_KEY: [{"title": "inner", "summary": {}}]}}


@pytest.mark.parametrize("command", ["run", "batch"])
def test_output_files_of_nodes_in_subgraphs_have_names_windows_accepts(command, photo, tmp_path):
    out = tmp_path / "out"
    o = asyncio.run(cli_main.run_one(FakeClient(OUTPUTS), {}, photo, out, cli_args(command)))
    assert o.ok, o.error
    names = [f.name for f in o.files]
    traces = ["trace_7.json", "trace_4-2.json"] if command == "run" else ["photo_7.trace.json", "photo_4-2.trace.json"]
    assert names == ["photo_12-5_0.png", "photo_12-5_1.png", "photo_3-12-5_0.png", "photo_9_0.png", *traces]
    assert all(windows_accepts(n) for n in names) and sorted(p.name for p in out.iterdir()) == sorted(names)
    assert json.loads((out / traces[1]).read_text())["title"] == "inner"


@pytest.fixture
def windows_code_page(monkeypatch):
    """Path.read_text and write_text without an encoding as on most Windows machines (the locale's cp1252)."""
    real_read, real_write = Path.read_text, Path.write_text
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None, *a, **kw:
                        real_read(self, encoding or "cp1252", *a, **kw))
    monkeypatch.setattr(Path, "write_text", lambda self, data, encoding=None, *a, **kw:
                        real_write(self, data, encoding or "cp1252", *a, **kw))


def test_a_failed_node_s_traceback_is_saved_in_utf_8(photo, tmp_path, windows_code_page):
    error = {"node_id": "12:5", "node_type": "EditAgentsPhotoAgent", "exception_type": "ValueError",
             "exception_message": "nothing to do for 「明るく」 → brighter", "traceback": ["  File 'x.py'\n"]}
    o = asyncio.run(cli_main.run_one(FakeClient(error=error), {}, photo, tmp_path, cli_args("run")))
    assert not o.ok and "traceback saved to" in o.error
    text = (tmp_path / "error-photo.txt").read_bytes().decode("utf-8")
    assert "「明るく」 → brighter" in text and "File 'x.py'" in text


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["utf-8", "utf-8 with BOM (Notepad)"])
def test_a_workflow_is_read_as_utf_8_whatever_the_code_page(bom, tmp_path, windows_code_page):
    workflow = {"3": {"class_type": "CLIPTextEncode", "inputs": {"text": "夕焼けの空, ciel du soir"},
                      "_meta": {"title": "Prompt — 提示"}}}
    path = tmp_path / "workflow.json"
    path.write_bytes(bom + json.dumps(workflow, ensure_ascii=False).encode("utf-8"))
    assert load_workflow(path) == workflow


def test_the_text_files_the_pack_reads_with_the_locale_s_encoding_are_ascii():
    """agents/ reads its prompts (roles/asking.py) and the fitted reward (quality/reward.py) without naming an encoding, so with
    the locale's: on Windows a code page, not UTF-8. ASCII reads the same in every one of them."""
    agents = PACK_ROOT / "agents"
    files = sorted(agents.glob("prompts/*.md")) + sorted(agents.glob("data/*.json"))
    assert files
    not_ascii = [str(f.relative_to(PACK_ROOT)) for f in files if not f.read_bytes().isascii()]
    assert not not_ascii, f"not ASCII (give the reader encoding='utf-8', or keep them ASCII): {not_ascii}"


# The local server: a process group of its own, stopped through it, on each platform

class FakePopen:
    """Records how LocalServer starts and stops ComfyUI; ``exits_on``: the stop request it obeys."""

    def __init__(self, cmd, exits_on: str = "break", **kw):
        self.cmd, self.kw, self.pid, self.returncode, self.exits_on, self.calls = cmd, kw, 4242, None, exits_on, []

    def poll(self):
        return self.returncode

    def wait(self, timeout=None):
        if self.returncode is None:
            raise subprocess.TimeoutExpired(self.cmd, timeout)
        return self.returncode

    def _called(self, what: str) -> None:
        self.calls.append(what)
        if what == self.exits_on or what == "kill":
            self.returncode = 1

    def terminate(self):
        self._called("terminate")

    def kill(self):
        self._called("kill")


@pytest.fixture
def local_server(tmp_path, monkeypatch):
    """A LocalServer whose ComfyUI is a FakePopen that answers at once."""
    (tmp_path / "comfyui").mkdir()
    (tmp_path / "comfyui" / "main.py").write_text("")
    made: list[FakePopen] = []

    def start(exits_on: str, platform: str):
        def popen(cmd, **kw):
            made.append(FakePopen(cmd, exits_on, **kw))
            return made[-1]

        monkeypatch.setattr(cli_server.subprocess, "Popen", popen)

        class Answer:
            def __enter__(self):
                return self

            def __exit__(self, *exc):
                return False

        monkeypatch.setattr(cli_server.urllib.request, "urlopen", lambda *a, **kw: Answer())
        server = cli_server.LocalServer(comfyui_dir=tmp_path / "comfyui", base_dir=tmp_path / "base", port=1)
        with monkeypatch.context() as m:
            m.setattr(sys, "platform", platform)
            server.start(timeout=5)
        return server, made[-1]

    return start


def test_on_windows_the_server_starts_in_a_new_process_group_and_stops_with_ctrl_break(local_server, monkeypatch):
    monkeypatch.setattr(cli_server.subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200, raising=False)
    monkeypatch.setattr(cli_server.signal, "CTRL_BREAK_EVENT", 1, raising=False)
    sent = []

    def kill(pid, sig):
        sent.append((pid, sig))
        proc.calls.append("break")
        proc.returncode = 1

    monkeypatch.setattr(cli_server.os, "kill", kill)
    monkeypatch.setattr(cli_server.os, "killpg", lambda *a: pytest.fail("killpg on Windows"), raising=False)
    server, proc = local_server("break", "win32")
    assert proc.kw["creationflags"] == 0x200 and not proc.kw["start_new_session"]
    with monkeypatch.context() as m:
        m.setattr(sys, "platform", "win32")
        server.stop()
    assert sent == [(4242, 1)] and proc.calls == ["break"]


@pytest.mark.parametrize("exits_on, calls", [("terminate", ["terminate"]), ("never", ["terminate", "kill"])])
def test_on_windows_without_a_console_the_server_is_terminated_then_killed(local_server, monkeypatch, exits_on,
                                                                             calls):
    monkeypatch.setattr(cli_server.subprocess, "CREATE_NEW_PROCESS_GROUP", 0x200, raising=False)
    monkeypatch.setattr(cli_server.signal, "CTRL_BREAK_EVENT", 1, raising=False)

    def no_console(pid, sig):
        raise OSError(6, "The handle is invalid")  # GenerateConsoleCtrlEvent without a console

    monkeypatch.setattr(cli_server.os, "kill", no_console)
    server, proc = local_server(exits_on, "win32")
    with monkeypatch.context() as m:
        m.setattr(sys, "platform", "win32")
        server.stop()
    assert proc.calls == calls


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX's branch")
def test_on_posix_the_server_starts_in_a_new_session_and_its_group_is_signalled(local_server, monkeypatch):
    import signal

    sent = []

    def killpg(pid, sig):
        sent.append((pid, sig))
        proc.returncode = None if sig == signal.SIGTERM else -9  # ignores SIGTERM

    monkeypatch.setattr(cli_server.os, "killpg", killpg)
    server, proc = local_server("never", sys.platform)
    assert proc.kw["start_new_session"] is True and proc.kw["creationflags"] == 0
    server.stop()
    assert sent == [(4242, signal.SIGTERM), (4242, signal.SIGKILL)]
