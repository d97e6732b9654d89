"""PhotoAgent's reward ensemble, and the offline reward fitted on data.

Each component maps raw statistics to [0, 1] (1 = fine) through bands; the reward is the
weighted mean of the components minus a content-preservation penalty (1 - structure
similarity to the input), so edits improve a photo instead of replacing it. Three presets:
``offline`` (the default) reads bands and weights fitted by pairwise ranking, clean photos
beating degraded and over-processed ones (scripts/fit_reward.py writes
agents/data/reward_offline.json); ``paper`` is PhotoAgent's evaluator (CLIP 1.0, aesthetic
2.0, ImageReward 2.0, a UGC-style VLM rating 0.8, over 5.8, no statistics); ``custom`` takes
the weights given. Global statistics read a <=256 px copy, so they cost the same on the
search copy as on the full photo; noise, sharpness, BRISQUE and NIQE read native-resolution
crops, where noise and blur are still visible.
"""
from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator
from concurrent.futures import Executor, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping, Protocol

import numpy as np

from .defects import FLOOR_PENALTIES, PENALTIES, TEXTURE_PENALTIES, excess
from .metrics import CLASSIC_IQA, METRICS, raw_statistics, structure_similarity

GENERIC_TEXT = "a high-quality photo"  # what the learned components score toward when there is no mood

FITTED = Path(__file__).parent.parent / "data" / "reward_offline.json"  # written by scripts/fit_reward.py
# the share of a restoration's change (what its forward model explains) the preservation term charges: see preserved
RESTORATION_CHARGE = 0.25  # RewardConfig.restoration_charge's default: see preserved
# Under this mean luminance (where the rule perceiver reads a night scene) most of a photo's local contrasts are a grey
# level or two, which BRISQUE's and NIQE's normalisation (the local deviation plus one level) flattens: there the scores
# read how much of the scene shows, which a tone curve changes for real, so a curve is held to the readings without it
# (Reward.score's held_readings) only in a photo at least this bright
DARK_MEAN = 0.15


def holds_curves(stats: Mapping[str, float]) -> bool:
    """Whether a tone or colour curve made to a photo with these raw statistics is held to its quality readings."""
    return stats.get("mean_luma", 1.0) >= DARK_MEAN


# Each component reads one or more raw statistics through a band (its shape below, its numbers fitted).
COMPONENT_STATS: dict[str, tuple[str, ...]] = {
    "exposure": ("white_level", "black_level", "mean_luma"),  # histogram shape: unused headroom, lifted blacks, key
    "clipping": ("clip_bright", "clip_dark"),
    "contrast": ("rms_contrast",),
    "colourfulness": ("colourfulness",),
    "colour_cast": ("colour_cast",),
    "sharpness": ("sharpness",),
    "noise": ("noise_sigma",),
    "brisque": ("brisque",),
    "niqe": ("niqe",),
}
# Which side of each banded statistic is a defect (the metrics table's word on it)
STAT_SIDE = {name: m.defect for name, m in METRICS.items() if m.banded}
STATISTICS = ("exposure", "clipping", "contrast", "colourfulness", "colour_cast", "sharpness", "noise")
LEARNED = ("aesthetic", "clip", "image_reward", "vlm")
COLOUR_ONLY = ("colourfulness", "colour_cast")  # a black-and-white photo is neither dull nor cast
RAW_OF = {name: stats[0] for name, stats in COMPONENT_STATS.items()} | {"preservation": "structure_similarity"}


@dataclass(frozen=True)
class Band:
    """Where a statistic stops being fine: below ``lo`` or above ``hi``, the score falls as a Gaussian of
    the distance, with widths ``lo_width`` / ``hi_width``. A side that is None never penalises."""

    lo: float | None = None
    lo_width: float = 1.0
    hi: float | None = None
    hi_width: float = 1.0

    def __call__(self, x: float) -> float:
        d = 0.0
        if self.lo is not None and x < self.lo:
            d += ((self.lo - x) / self.lo_width) ** 2
        if self.hi is not None and x > self.hi:
            d += ((x - self.hi) / self.hi_width) ** 2
        return math.exp(-d)

    def describe(self) -> str:
        parts = ([f">= {self.lo:.4g}"] if self.lo is not None else []) + ([f"<= {self.hi:.4g}"] if self.hi is not None else [])
        return " and ".join(parts) or "any"


@dataclass(frozen=True)
class FittedReward:
    """The offline preset: bands and weights fitted by pairwise ranking (scripts/fit_reward.py)."""

    bands: Mapping[str, Band]
    weights: Mapping[str, float]
    report: Mapping[str, Any] = field(default_factory=dict)  # what the fit measured, for the docs

    @classmethod
    def load(cls, path: Path = FITTED) -> "FittedReward":
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError as err:
            raise FileNotFoundError(f"the fitted reward {path} is missing: run scripts/fit_reward.py to make it") from err
        bands = {k: Band(**v) for k, v in data["bands"].items()}
        missing = set(STAT_SIDE) - set(bands)
        if missing:
            raise ValueError(f"{path} has no band for {sorted(missing)}: re-run scripts/fit_reward.py")
        return cls(bands, dict(data["weights"]), dict(data.get("report", {})))


@lru_cache(maxsize=4)
def fitted_reward(path: str = str(FITTED)) -> FittedReward:
    return FittedReward.load(Path(path))


PRESETS = ("offline", "paper", "custom")
PAPER_WEIGHTS = {"clip": 1.0, "aesthetic": 2.0, "image_reward": 2.0, "vlm": 0.8}  # PhotoAgent's evaluator, sum 5.8
COMPONENTS = STATISTICS + CLASSIC_IQA + LEARNED


def preset_weights(preset: str) -> dict[str, float]:
    """The weights of a preset: ``offline`` the fitted ones (statistics, BRISQUE, NIQE), ``paper`` PhotoAgent's."""
    if preset == "offline":
        return {**{k: 0.0 for k in COMPONENTS}, **fitted_reward().weights}
    if preset == "paper":
        return {**{k: 0.0 for k in COMPONENTS}, **PAPER_WEIGHTS}
    raise ValueError(f"unknown reward preset {preset!r}; choose one of {PRESETS} (custom takes the weights you give)")


class LearnedScorer(Protocol):
    """A learned reward component: a model (or a brain) that rates an image."""

    name: str

    def unavailable(self) -> str | None:
        """Why this scorer cannot run here (missing weights, package or brain), or None when it can."""

    def measure(self, img: np.ndarray, mood: str) -> tuple[float, float]:
        """(raw score, normalised 0..1) of ``img``; ``mood`` is the target text ('' when none)."""


@dataclass(frozen=True)
class RewardConfig:
    """The reward's preset or weights, and the weight of each fixed penalty (one field per penalty of PENALTIES,
    which the defects declare: agents/quality/defects)."""

    weights: Mapping[str, float] | None = None  # the custom preset's weights; None = the preset's own
    preset: str = ""  # "" = custom when weights are given, else offline
    preservation: float = 1.5  # penalty weight on (1 - structure similarity to the input)
    compression: float = 0.03  # penalty per level (of 255) of JPEG grid step beyond what clean photos show
    chroma: float = 3.0  # penalty per unit of colour noise sigma above CHROMA_NOISE_LIMIT
    veil: float = 3.0  # penalty per unit of veil (the dark channel's floor over the whites) above VEIL_LIMIT
    impulses: float = 0.1  # penalty per percent of pixels standing alone (salt and pepper) above IMPULSE_LIMIT
    fringes: float = 0.2  # penalty per percent of red-blue misregistration (chromatic aberration) above FRINGE_LIMIT
    banding: float = 5.0  # penalty per unit of row banding (its sigma) above BANDING_LIMIT
    blotches: float = 3.0  # penalty per unit of coarse colour noise (its sigma on 4x4 blocks) above BLOTCH_LIMIT
    posterisation: float = 0.005  # penalty per 8-bit level of step between the levels a photo uses above STEP_LIMIT
    softness: float = 0.03  # penalty per unit of log(SOFT_LIMIT / sharpness) where the fine detail is under SOFT_LIMIT
    restoration_charge: float = RESTORATION_CHARGE  # share of a restoration's change the preservation term charges
    mood: str = ""  # mood-guided mode: the target mood, read by the CLIP, ImageReward and VLM components

    def __post_init__(self):
        if not self.preset:
            object.__setattr__(self, "preset", "custom" if self.weights is not None else "offline")
        if self.preset not in PRESETS:
            raise ValueError(f"unknown reward preset {self.preset!r}; choose one of {PRESETS}")
        if self.preset == "custom" and self.weights is None:
            raise ValueError("the custom preset needs weights: give each component a weight (0 leaves it out)")
        if self.weights is not None:
            unknown = set(self.weights) - set(COMPONENTS)
            if unknown:
                raise ValueError(f"unknown reward components {sorted(unknown)}; known: {sorted(COMPONENTS)}")
            if any((not math.isfinite(w)) or w < 0 for w in self.weights.values()):
                raise ValueError("reward weights must be finite and >= 0")
            if sum(self.weights.values()) <= 0:
                raise ValueError("at least one reward weight must be above 0")
        for name in ("preservation",) + tuple(name for name, *_ in PENALTIES):
            if not math.isfinite(getattr(self, name)) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be a finite number >= 0, got {getattr(self, name)}")
        if not 0.0 <= self.restoration_charge <= 1.0:
            raise ValueError(f"restoration_charge must be between 0 and 1 (a share of the change), got "
                             f"{self.restoration_charge}")

    def resolved_weights(self) -> dict[str, float]:
        if self.preset == "custom":
            return {**{k: 0.0 for k in COMPONENTS}, **dict(self.weights or {})}
        return preset_weights(self.preset)


@dataclass(frozen=True)
class Score:
    total: float
    components: dict[str, float]  # normalised, 0..1
    raw: dict[str, float]  # the statistics behind them
    weights: dict[str, float] = field(default_factory=dict)  # weights used, renormalised over the components present
    skipped: dict[str, str] = field(default_factory=dict)  # component -> why it was left out

    def as_dict(self) -> dict[str, float]:
        out = {"total": round(self.total, 5)}
        out.update({f"{k}": round(v, 4) for k, v in self.components.items()})
        return out

    def report(self) -> dict[str, Any]:
        """Per component: raw value, normalised value and weight; plus the skipped ones with why."""
        rows = {name: {"raw": _round(self.raw.get(RAW_OF.get(name, name))), "normalised": round(value, 4),
                       "weight": round(self.weights.get(name, 0.0), 4)}
                for name, value in self.components.items()}
        return {"total": round(self.total, 5), "components": rows, "skipped": dict(self.skipped)}


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 5)


@contextmanager
def spare_thread() -> Iterator[Executor | None]:
    """A second thread for work that can run beside the caller's (the search's statistics and the edits of its
    texture crops), when torch may use more than one thread (the count ComfyUI and the benchmarks set); else None.
    Held for a whole search: a fresh thread's first large arrays come from a fresh malloc arena, whose page
    faults cost more than the second core saves."""
    import torch

    if torch.get_num_threads() < 2:
        yield None
        return
    # one torch thread in it (OpenMP keeps the count per thread; the caller sets its own with torch_threads):
    # with both splitting each op over both cores, four threads would spin on two
    with ThreadPoolExecutor(1, thread_name_prefix="edit-agents", initializer=torch.set_num_threads,
                            initargs=(1,)) as pool:
        yield pool


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """The calling thread's torch thread count set to ``count`` for the block (None: left as it is). A search sets
    one while its spare thread works beside it: +25% simulations per second at 1/4 size with the built-in
    filters, the same with OpenCV's (bench/results/mcts_speed.txt)."""
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        if count is not None:
            torch.set_num_threads(before)


def normalise(stats: Mapping[str, float], bands: Mapping[str, Band] | None = None) -> dict[str, float]:
    """Map raw statistics to [0, 1] component scores (1 = fine) through the fitted bands."""
    bands = bands or fitted_reward().bands
    comps = {}
    for name, keys in COMPONENT_STATS.items():
        if all(k in stats for k in keys):
            # NaN (BRISQUE or NIQE of an image with no natural-scene structure, e.g. flat) is the worst score
            comps[name] = float(np.prod([bands[k](stats[k]) if math.isfinite(stats[k]) else 0.0 for k in keys]))
    if stats.get("is_gray"):
        for name in COLOUR_ONLY:
            comps[name] = 1.0
    return comps


class Reward:
    """PhotoAgent's reward ensemble: a weighted mean of normalised components minus a preservation penalty.

    Components: image statistics and BRISQUE/NIQE (always there, no weights needed), plus the learned
    scorers handed in (aesthetic, CLIP similarity, ImageReward, VLM score). A component whose model is
    missing, or whose weight is 0, is skipped with a note and the other weights are renormalised.
    """

    def __init__(self, config: RewardConfig | None = None, scorers: Mapping[str, LearnedScorer] | None = None,
                 fitted: FittedReward | None = None):
        """``fitted``: the offline preset's bands and weights (default: the shipped fit); a benchmark hands in a
        fit made without the defects it measures."""
        self.config = config or RewardConfig()
        fitted = fitted or fitted_reward()
        weights = ({**{k: 0.0 for k in COMPONENTS}, **fitted.weights} if self.config.preset == "offline"
                   else self.config.resolved_weights())
        self.bands = fitted.bands
        self.skipped: dict[str, str] = {}
        self.scorers: dict[str, LearnedScorer] = {}
        scorers = dict(scorers or {})
        for name in LEARNED:
            if weights.get(name, 0.0) <= 0:
                continue
            scorer = scorers.get(name)
            why = "not connected" if scorer is None else scorer.unavailable()
            if why is None:
                self.scorers[name] = scorer
            else:
                self.skipped[name] = why
        self.active = {k: w for k, w in weights.items()
                       if w > 0 and (k in STATISTICS or k in CLASSIC_IQA or k in self.scorers)}
        if not self.active:
            hint = ("the paper preset needs its learned models (CLIP, aesthetic, ImageReward) or a vision brain; "
                    "use the offline preset to run without them" if self.config.preset == "paper"
                    else "give at least one statistic, BRISQUE or NIQE a weight above 0")
            raise ValueError(f"no reward component is available: {hint} (skipped: {self.skipped})")
        self._norm = sum(self.active.values())
        self.preservation = 0.0 if self.config.preset == "paper" else self.config.preservation
        for name, *_ in PENALTIES:  # the paper's evaluator has none of them
            setattr(self, name, 0.0 if self.config.preset == "paper" else getattr(self.config, name))

    def usage(self) -> dict[str, int]:
        """What the learned components have cost so far (the VLM rating's calls and tokens), summed."""
        out: dict[str, int] = {}
        for scorer in self.scorers.values():
            for key, value in (scorer.usage() if hasattr(scorer, "usage") else {}).items():
                out[key] = out.get(key, 0) + value
        return out

    def describe(self) -> str:
        parts = [f"{k} {w / self._norm:.2f}" for k, w in self.active.items()]
        skipped = "; ".join(f"{k}: {why}" for k, why in self.skipped.items())
        pres = f" - {self.preservation:g} x (1 - structure similarity)" if self.preservation else ""
        pres += "".join(f" - {getattr(self, name):g} x ({label} {'' if name in FLOOR_PENALTIES else 'above '}{limit:g})"
                        for name, _, _, limit, label in PENALTIES if getattr(self, name))
        return (f"reward ({self.config.preset}) = " + " + ".join(parts) + pres
                + (f" (skipped {skipped})" if skipped else ""))

    @property
    def scoring_text(self) -> str:
        """The one text every learned component scores every image against: the mood, else a fixed generic text
        (never an action's label, so a search state and its full-resolution check are scored alike)."""
        return self.config.mood or GENERIC_TEXT

    def with_mood(self, mood: str) -> "Reward":
        """This reward scoring toward ``mood`` (the same loaded components)."""
        other = copy.copy(self)
        other.config = replace(self.config, mood=mood.strip())
        return other

    def score(self, img: np.ndarray, original: np.ndarray | None = None, crops: list[np.ndarray] | None = None,
              known: Mapping[str, float] | None = None, pool: Executor | None = None,
              as_input: np.ndarray | None = None, held_readings: Mapping[str, float] | None = None) -> Score:
        """Score ``img``; ``original`` is what the preservation term compares with, ``crops`` the native-resolution
        texture crops when ``img`` is a reduced copy, ``known`` raw statistics already measured on this image and
        these crops, ``pool`` a spare thread (``spare_thread``) for statistics measured beside the others,
        ``as_input`` the photo the edits' restorations say they were given (photoagent.enhance.through_forward_models),
        which the preservation term reads beside ``img`` (``preserved``), ``held_readings`` the readings
        (metrics.HELD_READINGS) of the photo without the tone and colour curves among the edits (ToolSpec.pointwise),
        which ``img``'s are held to: its no-reference quality scores (BRISQUE, NIQE: lower is better) no better than
        those, its JPEG grid step that one. A curve removes none of the distortion the scores read, yet moves them
        (scikit-image's clock saved at quality 85: BRISQUE 68, after a contrast boost of a half 55, after a gamma of 0.8
        64), and the search kept curves on clean photos for that; and it scales a JPEG's block steps as it scales every
        other detail, so a brightening was charged for the blocks already there and a darkening credited for hiding
        them. The learned components read ``scoring_text``."""
        preserve = original is not None and self.preservation > 0
        # the preservation term needs nothing else measured: it goes to the spare thread first
        charge = self.config.restoration_charge
        similarity = pool.submit(preserved, original, img, as_input, charge) if preserve and pool is not None else None
        texture = (any(getattr(self, name) > 0 for name in TEXTURE_PENALTIES)
                   or any(k in self.active for k in ("sharpness", "noise") + CLASSIC_IQA))
        raw = raw_statistics(img, crops, texture=texture,
                             iqa=tuple(k for k in CLASSIC_IQA if k in self.active), known=known, pool=pool)
        for name, held in (held_readings or {}).items():
            if name not in raw or not math.isfinite(held):
                continue
            if name not in CLASSIC_IQA:  # the grid as it was without the curves
                raw[name] = held
            elif math.isfinite(raw[name]):  # no better than without the curves (NaN: flat, unmeasured)
                raw[name] = max(raw[name], held)
        text = self.scoring_text
        learned = {}
        for name, scorer in self.scorers.items():
            raw[name], learned[name] = scorer.measure(img, text)
        if preserve:
            raw["structure_similarity"] = (similarity.result() if similarity is not None
                                           else preserved(original, img, as_input, charge))
        return self._from_raw(raw, learned, preserve)

    def with_readings(self, score: Score, readings: Mapping[str, float]) -> Score:
        """``score`` with these raw statistics in place of its own (an image's BRISQUE and NIQE as they are, where it
        was scored held to others: ``held_readings``), the rest as it was measured."""
        learned = {name: score.components[name] for name in self.scorers if name in score.components}
        return self._from_raw({**score.raw, **readings}, learned, "preservation" in score.components)

    def _from_raw(self, raw: dict[str, float], learned: Mapping[str, float], preserve: bool) -> Score:
        comps = {k: v for k, v in normalise(raw, self.bands).items() if k in self.active and k not in learned}
        comps.update(learned)
        weights = {k: self.active[k] / self._norm for k in comps}
        total = sum(weights[k] * v for k, v in comps.items()) / max(1e-9, sum(weights.values()))
        if preserve:
            sim = raw["structure_similarity"]
            comps["preservation"] = sim
            total -= self.preservation * (1.0 - sim)
        for name, *_ in PENALTIES:
            if getattr(self, name) > 0:
                total -= getattr(self, name) * excess(raw, name)
        return Score(total=float(total), components=comps, raw=raw, weights=weights, skipped=dict(self.skipped))


ClassicReward = Reward  # the ensemble with no learned scorers is the classic reward


def preserved(original: np.ndarray, img: np.ndarray, as_input: np.ndarray | None = None,
              charge: float = RESTORATION_CHARGE) -> float:
    """The preservation term's similarity of ``img`` to ``original`` (metrics.structure_similarity). With
    ``as_input``, the photo that the restorations among the edits say they were given (a deconvolution's kernel
    applied again), ``charge`` of it (RewardConfig.restoration_charge, a quarter by default) is the direct reading
    and the rest that photo's, so a restoration is charged a quarter of the detail it brings back. Charged in full,
    a right deconvolution lost to the change it makes (the camera man shaken by 8 px: SSIM to the sharp photo
    0.78 -> 0.89, still scored lower). Charged nothing, the
    reward took the strongest one every time: ringing at the frequencies the kernel removed is blurred away again by
    that kernel, so the reading through the model cannot see it (the rocket shaken by 14 px: SSIM 0.815 blurred, 0.85
    at strength 0.6, 0.76 at 1.0, and 1.0 kept). Charged half, the right deconvolutions of four shaken photos were
    turned down; a quarter keeps two of them and still turns the rocket's 1.0 down (docs/notes/2026-11-generalisation/, "A quarter
    of the change")."""
    direct = structure_similarity(original, img)
    if as_input is None:
        return direct
    return charge * direct + (1.0 - charge) * structure_similarity(original, as_input)
