"""Whether OpenCV does a filter's work: the switch (OPENCV_SWITCH), the installed module where it loads, and its
results given the shape of the pack's (``_like``)."""
from __future__ import annotations

import logging
import os
from functools import lru_cache
from types import ModuleType

import numpy as np

OPENCV_SWITCH = "EDIT_AGENTS_OPENCV"  # "0": the built-in filters even where OpenCV is installed


def opencv() -> ModuleType | None:
    """OpenCV, where a working one is installed and not switched off (OPENCV_SWITCH); else None."""
    if os.environ.get(OPENCV_SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return _installed_opencv()


@lru_cache(maxsize=1)
def _installed_opencv() -> ModuleType | None:
    try:
        import cv2
        # two OpenCV wheels in one folder can leave a module that imports but lacks its functions
        cv2.GaussianBlur, cv2.sepFilter2D, cv2.bilateralFilter, cv2.createCLAHE  # noqa: B018
    except ImportError:
        return None
    except Exception as err:  # noqa: BLE001 - a broken OpenCV (mixed wheels, numpy ABI) fails in many ways
        logging.getLogger("edit_agents").warning(
            "Edit Agents: OpenCV is installed but does not load (%s: %s); using the built-in filters. "
            "Set %s=0 to skip it.", type(err).__name__, err, OPENCV_SWITCH)
        return None
    return cv2


def _like(out: np.ndarray, src: np.ndarray) -> np.ndarray:
    """OpenCV drops a trailing channel axis of 1: give it back."""
    return out.reshape(*out.shape[:2], *src.shape[2:]) if out.ndim < src.ndim else out
