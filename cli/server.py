"""Start and stop a local ComfyUI server (the one `make setup` prepared, or COMFYUI_DIR)."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

PACK_ROOT = Path(__file__).resolve().parent.parent


class ServerError(RuntimeError):
    pass


def find_comfyui() -> Path:
    """COMFYUI_DIR, else the copy `make setup` recorded in .setup/env."""
    given = os.environ.get("COMFYUI_DIR")
    candidates = [Path(given).expanduser()] if given else []
    env_file = PACK_ROOT / ".setup" / "env"
    if env_file.exists():
        for line in env_file.read_text().splitlines():
            if line.startswith("COMFYUI_DIR="):
                candidates.append(Path(line.split("=", 1)[1]))
    candidates.append(PACK_ROOT / ".setup" / "ComfyUI")
    for c in candidates:
        if (c / "main.py").exists():
            return c.resolve()
    raise ServerError("no ComfyUI found: run `make setup`, set COMFYUI_DIR to your ComfyUI folder, "
                      "or pass --server URL of a running ComfyUI")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


ACCELERATOR_PROBE = ("import torch; x = getattr(torch, 'xpu', None); "
                     "print(torch.cuda.is_available() or torch.backends.mps.is_available() or bool(x and x.is_available()))")


def has_accelerator(python: str) -> bool:
    """Whether ``python``'s torch sees a GPU (CUDA/ROCm, Apple MPS or Intel XPU). ComfyUI started without
    --cpu on a machine with none fails at its first model, so the answer decides the flag."""
    try:
        out = subprocess.run([python, "-c", ACCELERATOR_PROBE], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and out.stdout.strip().endswith("True")


class LocalServer:
    """A ComfyUI process on a free loopback port with its own input/output/temp/user folders.

    ``cpu``: True runs ComfyUI with --cpu (the tests, the docs and the demo, which must not depend on the
    machine); None (the CLI's default) uses the GPU when the Python that runs ComfyUI sees one."""

    def __init__(self, comfyui_dir: Path | None = None, base_dir: Path | None = None, port: int | None = None,
                 extra_args: tuple[str, ...] = (), python: str | None = None, log_path: Path | None = None,
                 env: dict[str, str] | None = None, cpu: bool | None = True):
        self.cpu = cpu
        self.comfyui_dir = Path(comfyui_dir) if comfyui_dir else find_comfyui()
        self._tmp = None if base_dir else tempfile.TemporaryDirectory(prefix="edit-agents-comfy-")
        self.base_dir = Path(base_dir) if base_dir else Path(self._tmp.name)
        self.port = port or free_port()
        self.extra_args = extra_args
        self.python = python or sys.executable
        self.log_path = log_path or self.base_dir / "server.log"
        self.env = env
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def dirs(self) -> dict[str, Path]:
        return {name: self.base_dir / name for name in ("input", "output", "temp", "user")}

    def start(self, timeout: float = 120.0) -> "LocalServer":
        for d in self.dirs().values():
            d.mkdir(parents=True, exist_ok=True)
        if self.cpu is None:
            self.cpu = not has_accelerator(self.python)
        cmd = [self.python, "main.py", *(["--cpu"] if self.cpu else []), "--listen", "127.0.0.1", "--port", str(self.port),
               "--disable-auto-launch", "--dont-print-server",
               "--input-directory", str(self.dirs()["input"]), "--output-directory", str(self.dirs()["output"]),
               "--temp-directory", str(self.dirs()["temp"]), "--user-directory", str(self.dirs()["user"]),
               *self.database_args(), *self.extra_args]
        self._log = open(self.log_path, "wb")
        # A process group of its own, so that stop() reaches what ComfyUI started too and a Ctrl+C meant for the
        # caller's terminal does not reach ComfyUI. The checks are written as `sys.platform == "win32"` so that
        # pyright (tests/test_windows.py) knows which branch each platform runs.
        if sys.platform == "win32":
            flags, new_session = subprocess.CREATE_NEW_PROCESS_GROUP, False
        else:
            flags, new_session = 0, True
        self.proc = subprocess.Popen(cmd, cwd=self.comfyui_dir, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=self.env, creationflags=flags, start_new_session=new_session)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise ServerError(f"ComfyUI exited with code {self.proc.returncode} while starting; "
                                  f"see {self.log_path}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/system_stats", timeout=2):
                    return self
            except (urllib.error.URLError, OSError):
                time.sleep(0.3)
        self.stop()
        raise ServerError(f"ComfyUI did not answer on {self.url} within {timeout:.0f} s; see {self.log_path}")

    def database_args(self) -> list[str]:
        """Keep ComfyUI's database in this server's user folder: by default it lives in ComfyUI's own ``user/``,
        which a read-only or shared install may not have (ComfyUI then logs an error at start)."""
        cli_args = self.comfyui_dir / "comfy" / "cli_args.py"
        if "--database-url" not in (cli_args.read_text(errors="replace") if cli_args.exists() else ""):
            return []
        if "--database-url" in self.extra_args:
            return []
        return ["--database-url", "sqlite:///" + (self.dirs()["user"] / "comfyui.db").resolve().as_posix()]

    def log_tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self._signal(self.proc, kill=False)
            try:
                self.proc.wait(timeout=15)  # wait for exit so the port is free again
            except subprocess.TimeoutExpired:
                self._signal(self.proc, kill=True)
                self.proc.wait(timeout=10)
        if getattr(self, "_log", None):
            self._log.close()
        if self._tmp:
            self._tmp.cleanup()
            self._tmp = None

    @staticmethod
    def _signal(proc: subprocess.Popen, kill: bool) -> None:
        """Ask ComfyUI's process group to stop (``kill`` False) or end it (True), as start() made the group."""
        if sys.platform == "win32":
            # Windows has no SIGTERM to a group: CTRL_BREAK_EVENT reaches every process of the group that
            # CREATE_NEW_PROCESS_GROUP made (Python's default for it is to exit), when this process has a console
            # to send it through. Without one (pythonw, a service) it fails: TerminateProcess then. kill() is
            # TerminateProcess too.
            if kill:
                proc.kill()
                return
            try:
                os.kill(proc.pid, signal.CTRL_BREAK_EVENT)
            except OSError:
                proc.terminate()
        else:
            try:
                os.killpg(proc.pid, signal.SIGKILL if kill else signal.SIGTERM)
            except ProcessLookupError:
                pass  # it has just exited

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
