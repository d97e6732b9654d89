"""The roles: planner, executor, critic (discriminator and expert), aggregator, competitor, perceiver.

Each role renders its prompt file, puts the same inputs in ``context`` for the rule brain,
asks its brain for data fitting its schema, turns that data into records, validates every
tool call against the tool specs, and records one trace step.

One module per role: ``planner``, ``executor``, ``discriminator`` (CCA's critic), ``feedback`` (between
rounds), ``experts`` (IMAGAgent's critics and aggregator) and ``competitor``; what they share (prompts,
``Where``, ``ask``) is in ``asking``; the perceiver's is ``photoagent/perceiver.py``. The package re-exports
their names, so callers keep writing ``roles.plan``.
"""
from .asking import PROMPTS, Where, ask, interruptible, prompt, with_history
from .competitor import compete
from .discriminator import aesthetic_rater, describe, discriminate, route_questions, sees_images, write_questions
from .executor import _first_step_reads_the_input, chain_problem, check_steps, execute, executor_tools, run_chain
from .experts import UNDONE, aggregate, critique, direction_of, intent_done, merged, verdict
from .feedback import alike, earlier_attempt, match_subtask, subtask_feedback, suggest_other_tools
from .planner import _drop_forward_dependencies, feedback_for_prompt, plan

__all__ = ["PROMPTS", "UNDONE", "Where", "_drop_forward_dependencies", "_first_step_reads_the_input", "aesthetic_rater",
           "aggregate", "alike", "ask", "chain_problem", "check_steps", "compete", "critique", "describe", "direction_of",
           "discriminate", "earlier_attempt", "execute", "executor_tools", "feedback_for_prompt", "intent_done",
           "interruptible", "match_subtask", "merged", "plan", "prompt", "route_questions", "run_chain", "sees_images",
           "subtask_feedback", "suggest_other_tools", "verdict", "with_history", "write_questions"]
