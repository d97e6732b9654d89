"""The pack needs no OpenCV; a missing optional backend never stops it from loading; using it gives a clear error."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from edit_agents.cli.server import LocalServer
from edit_agents.cli.workflow import set_image, ui_to_api
from edit_agents.tools.backends import MissingBackendError, require
from helpers import WORKFLOWS, load_json
from conftest import SyncClient

# Loaded by Python at start-up (sitecustomize): makes `import cv2` and `import openai` fail. No OpenCV wheel
# is needed (they all install the same cv2 folder, which breaks when two packs install different ones), so
# a Python without any must run everything but the OpenAI-compatible brain.
BLOCKER = "import sys\nfor name in ('cv2', 'openai'):\n    sys.modules[name] = None\n"


def test_require_names_the_package_to_install():
    with pytest.raises(MissingBackendError) as err:
        require("segment_anything_not_here")
    assert "pip install segment_anything_not_here" in str(err.value)


def test_every_image_tool_and_the_reward_run_without_opencv():
    code = (BLOCKER + "import numpy as np\n"
            "from edit_agents.agents.quality.reward import Reward\n"
            "from edit_agents.tools import default_registry\n"
            "tools = default_registry()\n"
            "img = np.random.default_rng(0).random((96, 128, 3), dtype=np.float32)\n"
            "names = [s.name for s in tools.specs() if s.category == 'classic'] + ['mask_grow', 'mask_feather']\n"
            "for name in names:\n"
            "    tools.call(name, img, {'box': [0.1, 0.1, 0.9, 0.9]} if name == 'crop' else {})\n"
            "tools.call('rotate', img, {'angle': 17.0})\n"
            "print(Reward().score(img * 0.5, img).total, len(names))\n"
            "assert sys.modules['cv2'] is None\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    total, count = run.stdout.split()
    assert np.isfinite(float(total)) and int(count) > 20


@pytest.mark.server
def test_pack_runs_without_opencv_and_loads_without_openai(tmp_path, photos):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    server = LocalServer(base_dir=tmp_path / "comfy", env=env)
    with server:
        client = SyncClient(server.url)
        info = client.get("/object_info")
        assert {"EditAgentsPhotoAgent", "EditAgentsToolbox", "EditAgentsTraceView"} <= set(info)
        log = server.log_path.read_text()
        assert "pip install openai" in log
        assert "opencv-python" not in log  # no longer an optional package to ask for
        # PhotoAgent offline: classic tools, the reward's statistics, BRISQUE and NIQE, all without OpenCV
        prompt = ui_to_api(load_json(WORKFLOWS / "photoagent_offline.json"), info)
        dim = (photos["chelsea"][::2, ::2] * 0.5 * 255).astype(np.uint8)
        Image.fromarray(dim).save(server.dirs()["input"] / "dim.png")
        set_image(prompt, "dim.png")
        result = client.call("run", prompt)
        summary = next(o["edit_agents_trace"][0]["summary"] for o in result.outputs.values() if "edit_agents_trace" in o)
        assert summary["steps"] >= 1 and summary["score_after"] > summary["score_before"]
        assert client.get("/system_stats")  # still serving
