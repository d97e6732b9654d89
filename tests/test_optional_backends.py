"""A missing optional backend never stops the pack from loading; using it gives a clear error."""
from __future__ import annotations

import os

import pytest
from PIL import Image

from edit_agents.cli.client import ExecutionFailed
from edit_agents.cli.server import LocalServer
from edit_agents.cli.workflow import set_image, ui_to_api
from edit_agents.tools.backends import MissingBackendError, require
from helpers import WORKFLOWS, load_json
from conftest import SyncClient

# Loaded by Python at start-up (sitecustomize): makes `import cv2` and `import openai` fail.
BLOCKER = "import sys\nfor name in ('cv2', 'openai'):\n    sys.modules[name] = None\n"


def test_require_names_the_package_to_install():
    with pytest.raises(MissingBackendError) as err:
        require("segment_anything_not_here")
    assert "pip install segment_anything_not_here" in str(err.value)


@pytest.mark.server
def test_pack_loads_without_opencv_and_openai(tmp_path):
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "sitecustomize.py").write_text(BLOCKER)
    env = dict(os.environ, PYTHONPATH=str(tmp_path / "site"))
    server = LocalServer(base_dir=tmp_path / "comfy", env=env)
    with server:
        client = SyncClient(server.url)
        info = client.get("/object_info")
        assert {"EditAgentsPhotoAgent", "EditAgentsToolbox", "EditAgentsTraceView"} <= set(info)
        log = server.log_path.read_text()
        assert "optional package 'opencv-python-headless' is not installed" in log
        assert "pip install openai" in log
        prompt = ui_to_api(load_json(WORKFLOWS / "photoagent_offline.json"), info)
        Image.new("RGB", (32, 32), (10, 20, 30)).save(server.dirs()["input"] / "x.png")
        set_image(prompt, "x.png")
        with pytest.raises(ExecutionFailed) as err:
            client.call("run", prompt)
        assert "pip install opencv-python-headless" in str(err.value)
        assert client.get("/system_stats")  # still serving
