"""What the rule brain reads in a request's words: clauses, direction words, sizes, aspects, angles, targets.

Pure text parsing, shared by the planner, executor and critic roles.
"""
from __future__ import annotations

import re

from ...tools.spec import ToolSpec

LESS_WORDS = ("darker", "darken", "less", "reduce", "decrease", "lower", "cooler", "colder", "cool down", "desaturate",
              "muted", "softer", "dim", "weaker", "tone down", "remove")
SPLIT = re.compile(r"\s*(?:[,;.]|\band then\b|\bthen\b|\band\b|\balso\b|\bplus\b)\s*", re.I)


def split_clauses(instruction: str, tools: list[ToolSpec]) -> list[str]:
    """Clauses split at commas, 'and', 'then'..., keeping the specs' own phrases ("black and white") whole."""
    text = instruction
    names = [spec.name.replace("_", " ") for spec in tools]  # e.g. a graph tool called scale_and_blur
    phrases = sorted({kw for spec in tools for kw in spec.keywords} | set(names), key=len, reverse=True)
    phrases = [p for p in phrases if SPLIT.search(f" {p} ")]
    for i, kw in enumerate(phrases):  # a token with no word to split on stands in for the phrase
        text = re.sub(re.escape(kw), f"\x00{i}\x00", text, flags=re.I)
    clauses = []
    for clause in SPLIT.split(text):
        for i, kw in enumerate(phrases):
            clause = clause.replace(f"\x00{i}\x00", kw)
        if clause.strip():
            clauses.append(clause.strip())
    return clauses


def wants_less(text: str) -> bool:
    """Whether the words ask for less of an effect ('darker', 'reduce', 'tone down', ...)."""
    low = text.lower()
    return any(re.search(rf"\b{re.escape(w)}\b", low) for w in LESS_WORDS)


def parse_aspect(text: str) -> str | None:
    """An aspect ratio 'W:H' from digits ('16:9', '4x5') or a named format ('square', 'widescreen'), else None."""
    low = text.lower()
    m = re.search(r"(\d+)\s*[:x×/]\s*(\d+)", low)
    if m:
        return f"{m.group(1)}:{m.group(2)}"
    for word, aspect in (("square", "1:1"), ("widescreen", "16:9"), ("instagram", "4:5"), ("portrait", "4:5"),
                         ("landscape", "3:2")):
        if word in low:
            return aspect
    return None


def parse_size(text: str) -> int | None:
    """The first number of 16 or more in the words (a side in pixels), else None."""
    nums = [int(n) for n in re.findall(r"\b(\d{2,5})\b", text)]
    nums = [n for n in nums if n >= 16]
    return nums[0] if nums else None


def parse_angle(text: str) -> float:
    """The angle the words name (90 when none), negative for clockwise."""
    low = text.lower()
    m = re.search(r"(-?\d+(?:\.\d+)?)\s*(?:°|deg|degrees?)", low) or re.search(r"rotate\D*(-?\d+(?:\.\d+)?)", low)
    angle = float(m.group(1)) if m else 90.0
    if "clockwise" in low and "counter" not in low and "anti" not in low:
        angle = -angle
    return angle


def _the(phrase: str) -> str:
    phrase = phrase.strip().strip(".,;")
    return phrase if re.match(r"(the|a|an|his|her|their|my)\b", phrase) else f"the {phrase}"


def inpaint_target(goal: str) -> tuple[str, str] | None:
    """(what to find, what to paint there) for 'replace X with Y' and 'remove X', else None."""
    low = goal.strip().rstrip(".").lower()
    if m := re.search(r"\breplace (.+?) with (.+)$", low):
        return _the(m.group(1)), m.group(2).strip()
    if m := re.search(r"\b(?:remove|erase|get rid of) (.+)$", low):
        return _the(m.group(1)), "the background around it, seamless and natural"
    return None


def kept_subject(goal: str) -> str | None:
    """The subject a background edit keeps: 'blur the background behind the dog' -> 'the dog'."""
    m = re.search(r"\b(?:behind|around|except|apart from|other than) (.+)$", goal.strip().rstrip(".").lower())
    return _the(m.group(1)) if m else None
