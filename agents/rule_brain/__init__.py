"""The rule brain: the offline default. Deterministic, no network, honest about its limits.

It serves every role through the same ``ask`` interface as an LLM brain, reading the
structured ``context`` a role puts in its request instead of the prompt text:
planner (clauses -> tools by the specs' keywords), executor (parameters from the manual's
defaults, moved by numbers and direction words in the goal, then by feedback), critic
(Yes/No questions it can measure; "unknown" for what it cannot judge), experts, aggregator,
competitor and perceiver (actions from image statistics). A request it cannot serve is
reported as unsupported, never faked.

One module per role; ``brain.ROLES`` maps a request's role to it. The reward and the perceiver are given to
the brain by whoever builds it (``agents/rule_default.py`` wires the shipped ones), so this package imports
neither.
"""
from .brain import ROLES, RuleBrain
from .checks import RESHAPING, built_in_moves, intent_check, moves_of, question_text
from .executor import STEP, adjust_params, initial_params, masked_chain, strength_params
from .perceiver import MOODS
from .planner import alternative, can_fill, match_tool
from .words import (LESS_WORDS, SPLIT, inpaint_target, kept_subject, parse_angle, parse_aspect, parse_size,
                    split_clauses, wants_less)

__all__ = ["LESS_WORDS", "MOODS", "RESHAPING", "ROLES", "SPLIT", "STEP", "RuleBrain", "adjust_params", "alternative",
           "built_in_moves", "can_fill", "initial_params", "inpaint_target", "intent_check", "kept_subject",
           "masked_chain", "match_tool", "moves_of", "parse_angle", "parse_aspect", "parse_size", "question_text",
           "split_clauses", "strength_params", "wants_less"]
