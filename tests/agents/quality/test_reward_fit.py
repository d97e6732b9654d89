"""The offline reward's fit: the script anyone can re-run, the data it writes, and the reward loading it."""
import json
import subprocess
import sys

import numpy as np
import pytest

from edit_agents.agents.quality.reward import FITTED, FittedReward

from helpers import PACK_ROOT as ROOT
from photoset import CALIBRATION, EVALUATION


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


def _fit_module():
    from helpers import load_script

    return load_script("fit_reward")


def test_scene_bands_are_widened_past_the_clean_photos_and_defect_bands_are_not():
    fr = _fit_module()
    clean = np.zeros((3, len(fr.STATS)))
    contrast, noise, dark = (fr.STATS.index(k) for k in ("rms_contrast", "noise_sigma", "clip_dark"))
    clean[:, contrast] = (0.10, 0.20, 0.30)  # the fit's edge below sits inside this range
    clean[:, noise] = (0.001, 0.002, 0.02)
    bands = {k: {"hi": 0.0, "hi_width": 0.001} for k in fr.STATS}
    bands["rms_contrast"] = {"lo": 0.15, "lo_width": 0.01, "hi": 0.25, "hi_width": 0.01}
    bands["clip_dark"] = {"hi": -0.002, "hi_width": 0.008}
    out = fr.widen_to_clean(bands, clean)
    assert out["rms_contrast"] == {"lo": 0.05, "lo_width": 0.05, "hi": 0.35, "hi_width": 0.05}  # 0.25 of 0.2 past
    assert out["clip_dark"]["hi"] == pytest.approx(0.0025) and out["clip_dark"]["hi_width"] == 0.008  # 1% spread
    assert out["noise_sigma"] == bands["noise_sigma"]  # a defect measure keeps its fitted edge
    assert bands["rms_contrast"]["hi"] == 0.25  # the input is not changed
    scores, comps = fr.json_scores({"bands": out, "weights": {c: 1.0 for c in fr.COMPS}}, clean, np.zeros(3, bool))
    assert (comps[:, fr.COMPS.index("contrast")] == 1.0).all()


def test_the_shipped_fit_marks_no_calibration_photo_down_on_its_scene():
    from edit_agents.agents.quality.metrics import raw_statistics
    from edit_agents.agents.quality.reward import fitted_reward
    from photoset import load

    fr = _fit_module()
    bands = fitted_reward().bands
    assert "scene_bands" in fitted_reward().report
    for photo in CALIBRATION:
        raw = raw_statistics(load(photo))
        for stat in fr.SCENE_STATS:
            assert bands[stat](raw[stat]) == 1.0, (photo, stat, raw[stat], bands[stat])
