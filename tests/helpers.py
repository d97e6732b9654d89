"""Paths and small helpers shared by the tests (importable because pytest puts tests/ on sys.path)."""
from __future__ import annotations

import json
from pathlib import Path

PACK_ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = PACK_ROOT / "workflows"
ARTIFACTS = PACK_ROOT / "test-artifacts"


def load_json(path: Path) -> dict:
    return json.loads(path.read_text())
