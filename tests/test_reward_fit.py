"""The offline reward's fit: the script anyone can re-run, the data it writes, and the reward loading it."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from edit_agents.agents.reward import FITTED, FittedReward

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from photoset import CALIBRATION, EVALUATION  # noqa: E402


def fit(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "fit_reward.py"), *args],
                          capture_output=True, text=True, timeout=600)


def test_the_fit_script_writes_a_reward_that_ranks_held_out_photos(tmp_path):
    out = tmp_path / "fit.json"
    # the recipes (eight defects, three strengths each) keep this quick; the shipped fit's space is tested below
    r = fit("--calibration", "brick,coins", "--held-out", "chelsea", "--restarts", "1", "--space", "recipes",
            "--out", str(out))
    assert r.returncode == 0, r.stderr
    loaded = FittedReward.load(out)  # the reward's own loader reads what the script wrote
    report = loaded.report
    assert report["calibration_photos"] == ["brick", "coins"] and report["held_out_photos"] == ["chelsea"]
    assert report["held_out_accuracy"] > 0.75  # far above the 0.5 of a coin toss, on a photo never fitted on
    assert abs(sum(loaded.weights.values()) - 1.0) < 1e-3 and all(w > 0 for w in loaded.weights.values())
    assert f"held-out {report['held_out_accuracy']:.3f}" in r.stdout


def test_a_photo_cannot_be_fitted_on_and_held_out():
    r = fit("--calibration", "brick,chelsea", "--held-out", "chelsea", "--out", "/nonexistent/never.json")
    assert r.returncode == 2 and "both fitted on and held out" in r.stderr and "chelsea" in r.stderr


def test_the_shipped_fit_keeps_its_photos_apart_and_reports_its_accuracy():
    data = json.loads(FITTED.read_text())
    report = data["report"]
    assert tuple(report["calibration_photos"]) == CALIBRATION and tuple(report["held_out_photos"]) == EVALUATION
    assert not set(CALIBRATION) & set(EVALUATION)
    assert report["held_out_accuracy"] >= 0.8 and report["training_accuracy"] >= report["held_out_accuracy"]


def test_a_missing_or_incomplete_fit_says_how_to_remake_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="scripts/fit_reward.py"):
        FittedReward.load(tmp_path / "missing.json")
    data = json.loads(FITTED.read_text())
    del data["bands"]["noise_sigma"]
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(data))
    with pytest.raises(ValueError, match="noise_sigma.*re-run scripts/fit_reward.py"):
        FittedReward.load(partial)


def test_leave_one_family_out_needs_the_defect_space():
    r = fit("--space", "recipes", "--lofo", "--out", "/nonexistent/never.json")
    assert r.returncode == 2 and "--space defects" in r.stderr
