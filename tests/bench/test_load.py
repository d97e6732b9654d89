"""A bounded run of bench/load.py: concurrent clients against one real server lose nothing and get the
edits of their own photos back (the 50-prompt figures are in docs/benchmarks.md, "Load")."""
from __future__ import annotations

import json
import subprocess
import sys

from helpers import PACK_ROOT


def test_concurrent_clients_lose_nothing_and_get_their_own_photos(tmp_path):
    out = tmp_path / "load.json"
    r = subprocess.run([sys.executable, str(PACK_ROOT / "bench" / "load.py"), "--prompts", "8", "--clients", "4",
                        "--simulations", "4", "--json", str(out)], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    figures = json.loads(out.read_text())
    assert figures["completed"] == 8 and figures["errors"] == [] and figures["lost"] == []
    assert figures["mismatched"] == [] and figures["distinct_prompt_ids"] == 8
    assert figures["photo_sides"] == [320, 640, 1024, 1600]
    assert figures["server_rss_mib"]["peak"] >= figures["server_rss_mib"]["before"] > 0
