"""The `edit-agents` CLI as a user runs it: the installed script, in a subprocess."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from helpers import WORKFLOWS

CLI = str(Path(sys.executable).parent / "edit-agents")
OFFLINE = str(WORKFLOWS / "photoagent_offline.json")


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the CLI with ``args``; its output is captured as text."""
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=timeout)
