"""Typed records shared by the roles and loops. All serialise to plain JSON data."""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

Mode = Literal["instructed", "autonomous", "mood"]
Answer = Literal["yes", "no", "unknown"]
Direction = Literal["more", "less", "reverse", "keep"]  # which way an executor should move its parameters


def _fmt(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


MAX_TEXT_CHARS = 20_000  # an instruction, caption or mood longer than this is a mistake, and would flood every prompt


@dataclass
class EditRequest:
    instruction: str = ""
    mode: Mode = "instructed"
    caption: str = ""  # what the input shows, when known (CCA's discriminator uses it)
    mood: str = ""  # mood words for mood-guided mode

    def __post_init__(self):
        if self.mode not in ("instructed", "autonomous", "mood"):
            raise ValueError(f"mode must be instructed, autonomous or mood, got {self.mode!r}")
        if self.mode == "instructed" and not self.instruction.strip():
            raise ValueError("an instructed edit needs an instruction, e.g. 'make it brighter and crop to square'")
        for name in ("instruction", "caption", "mood"):
            if len(getattr(self, name)) > MAX_TEXT_CHARS:
                raise ValueError(f"the {name} is {len(getattr(self, name)):,} characters long; the limit is "
                                 f"{MAX_TEXT_CHARS:,} (was something pasted by mistake?): shorten it")


@dataclass(frozen=True)
class ToolCall:
    """One tool invocation as data (never code), validated against the tool's spec before it runs.

    ``source`` says which image it edits: "input" (the current image) or "step:N", the output
    of an earlier step of the same chain (e.g. ground -> mask -> inpaint with that mask).
    """

    tool: str
    params: dict[str, Any] = field(default_factory=dict)
    rationale: str = ""
    source: str = "input"

    def key(self) -> str:
        """A stable identity for caching and memory (same tool + same parameters + same source)."""
        return self.tool + json.dumps(self.params, sort_keys=True, default=str) + self.source

    def label(self) -> str:
        args = ", ".join(f"{k}={_fmt(v)}" for k, v in self.params.items())
        return f"{self.tool}({args})"

    def as_dict(self) -> dict[str, Any]:
        out = {"tool": self.tool, "params": dict(self.params), "rationale": self.rationale}
        if self.source != "input":
            out["source"] = self.source
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ToolCall":
        return cls(tool=d["tool"], params=dict(d.get("params") or {}), rationale=d.get("rationale", ""),
                   source=d.get("source", "input"))


def check_chain(chain: list[ToolCall]) -> None:
    """A step may only read the input or an *earlier* step's output."""
    for i, call in enumerate(chain):
        if call.source == "input":
            continue
        kind, _, num = call.source.partition(":")
        if kind != "step" or not num.isdigit() or int(num) >= i:
            earlier = "there is no earlier step, so use 'input'" if i == 0 else \
                f"use 'input' or an earlier step, 'step:0' to 'step:{i - 1}' (steps count from 0)"
            raise ValueError(f"step {i} ({call.tool}) reads {call.source!r}; {earlier}")


@dataclass
class Subtask:
    index: int
    goal: str
    tool: str
    rationale: str = ""
    depends_on: list[int] = field(default_factory=list)


@dataclass
class Plan:
    subtasks: list[Subtask] = field(default_factory=list)
    unsupported: list[str] = field(default_factory=list)  # parts of the request no allowed tool can serve
    notes: str = ""

    def summary(self) -> str:
        parts = [f"{s.index}: {s.goal} -> {s.tool}" for s in self.subtasks]
        if self.unsupported:
            parts.append("cannot do: " + "; ".join(self.unsupported))
        return " | ".join(parts) or "(empty plan)"


@dataclass
class Question:
    """A Yes/No question on the edited image. CCA writes them once per request (from the instruction and the
    caption), so every candidate of every round is graded on the same questions; ``subtask`` is set per
    candidate: the discriminator names the subtask of its plan that the question checks (the rule brain routes
    ``part`` by word overlap)."""

    text: str
    answer: Answer = "unknown"
    explanation: str = ""
    subtask: int | None = None
    check: dict[str, Any] = field(default_factory=dict)  # what a measuring critic can check, e.g. {"metric": "mean_luma", "direction": "up"}
    part: str = ""  # the part of the request it checks ("" = the whole request)
    direction: Direction | None = None  # with a "no": which way the edit must move (None: not said)

    def unanswered(self) -> "Question":
        return Question(self.text, check=dict(self.check), part=self.part)


SuggestionKind = Literal["adjust", "another_tool", "add", "gentler"]


@dataclass(frozen=True)
class Suggestion:
    """One actionable point of a compiled CCA report (the paper's "suggest changing the tool to ...").

    adjust: the subtask's check failed, change its parameters; another_tool: the tool cannot do it (both
    generators' results look the same), plan the part with a different tool; add: a part of the request
    is in no subtask; gentler: the result looks unnatural."""

    kind: SuggestionKind
    text: str
    goal: str = ""
    tool: str = ""


@dataclass
class Critique:
    """One expert's view (IMAGAgent): a score, what to do more of, what went wrong."""

    expert: str
    score: float  # 0..10
    positive: str = ""
    negative: str = ""
    subtask: int | None = None
    judged: bool = True  # False: this expert could not tell from the images whether the subtask was done
    direction: Direction | None = None  # which way the next attempt should move (None: not said)


@dataclass(frozen=True)
class ExecutorFeedback:
    """What an executor is told about its last attempt at a subtask, typed: which way to move its parameters,
    the score, a note, and what to keep out (IMAGAgent's F_neg, for a generative step's negative prompt)."""

    direction: Direction
    score: float
    note: str = ""
    avoid: str = ""
    failed: str = ""  # the last attempt did not run: why (then the chain itself must change)

    def text(self) -> str:
        if self.failed:
            return f"the last attempt failed: {self.failed}; write a chain that avoids this"
        how = {"more": "not enough: push the effect further", "less": "too strong: pull it back",
               "reverse": "it went the wrong way: reverse it", "keep": "it worked: keep these parameters"}
        parts = [f"{self.direction} ({how[self.direction]})", f"score {self.score:.1f}/10"]
        parts += [f"note: {self.note}"] if self.note else []
        parts += [f"avoid: {self.avoid}"] if self.avoid else []
        return "; ".join(parts)


@dataclass
class Feedback:
    score: float  # 0..10
    positive: str = ""  # IMAGAgent's Fpos: what to keep or push further
    negative: str = ""  # IMAGAgent's Fneg: what went wrong
    questions: list[Question] = field(default_factory=list)
    per_subtask: dict[int, str] = field(default_factory=dict)  # CCA: the report split per subtask
    experts: list[Critique] = field(default_factory=list)  # who said what
    judged: bool = True  # False: no expert could tell whether the edit did what was asked (never accepted)
    suggestions: list[Suggestion] = field(default_factory=list)  # CCA's compiled report: what to change next
    direction: Direction | None = None  # IMAGAgent: which way the next attempt should move, from the experts
    error: str = ""  # the attempt or candidate failed (an invalid chain, a tool that raised): why; scored 0
    done: bool | None = None  # IMAGAgent: False when the panel judged the subtask not carried out (too weak, or the
    # wrong way): never accepted, whatever S; None when no expert said

    def accepts(self, accept_score: float) -> bool:
        """IMAGAgent's acceptance: S reaches tau_sr, the intent could be judged and was not judged undone."""
        return self.judged and self.done is not False and self.score >= accept_score

    def yes_fraction(self) -> float:
        judged = [q for q in self.questions if q.answer != "unknown"]
        return sum(q.answer == "yes" for q in judged) / len(judged) if judged else 0.0

    def satisfied(self, min_score: float) -> bool:
        judged = [q for q in self.questions if q.answer != "unknown"]
        return self.score >= min_score and all(q.answer == "yes" for q in judged)


@dataclass
class Attempt:
    subtask: int
    number: int
    chain: list[ToolCall]
    feedback: Feedback | None = None
    image: np.ndarray | None = field(default=None, repr=False)

    @property
    def score(self) -> float:
        return self.feedback.score if self.feedback else 0.0


@dataclass
class Candidate:
    agent: str
    round: int
    plan: Plan
    chains: list[list[ToolCall]]
    image: np.ndarray = field(repr=False)
    feedback: Feedback | None = None

    def tool_calls(self) -> int:
        return sum(len(c) for c in self.chains)


@dataclass
class HistoryEntry:
    kind: str  # plan / attempt / candidate / result
    text: str
    score: float | None = None
    image: np.ndarray | None = field(default=None, repr=False)  # a thumbnail of what this step produced


THUMBNAIL_SIDE = 128  # px, longest side: enough to see what an attempt did, small enough for every request


@dataclass
class HistoryContext:
    """IMAGAgent's C: the plans, attempts (reasoning, feedback, a thumbnail of the result) and the results kept
    so far, fed to every later decision. Bounded: a prompt sees the last ``limit`` entries and the thumbnails
    of the last ``max_images`` of them; older thumbnails are dropped."""

    entries: list[HistoryEntry] = field(default_factory=list)
    limit: int = 12  # how many recent entries a prompt sees
    max_images: int = 4  # how many thumbnails a request carries

    def add(self, kind: str, text: str, score: float | None = None, image: np.ndarray | None = None) -> None:
        thumb = None
        if image is not None:
            from ..tools.imageops import resize_longest

            thumb = np.ascontiguousarray(resize_longest(np.asarray(image, np.float32), THUMBNAIL_SIDE))
        self.entries.append(HistoryEntry(kind, text, score, thumb))
        for old in self.entries[:-self.limit]:
            old.image = None  # out of every prompt's window: keep the text, free the pixels

    def _shown(self) -> tuple[list[HistoryEntry], dict[int, int]]:
        recent = self.entries[max(0, len(self.entries) - self.limit):]  # a limit of 0 shows nothing
        pictured = [e for e in recent if e.image is not None]
        pictured = pictured[max(0, len(pictured) - self.max_images):]
        return recent, {id(e): n for n, e in enumerate(pictured, 1)}

    def render(self) -> str:
        recent, numbers = self._shown()
        if not recent:
            return "(nothing yet)"
        return "\n".join(f"- [{e.kind}] {e.text}" + (f" (score {e.score:.1f})" if e.score is not None else "")
                         + (f" [thumbnail {numbers[id(e)]}]" if id(e) in numbers else "") for e in recent)

    def images(self) -> list[np.ndarray]:
        """The thumbnails ``render`` refers to, in the order of their numbers."""
        recent, numbers = self._shown()
        return [e.image for e in recent if id(e) in numbers]

    def trimmed(self) -> tuple["HistoryContext", str] | None:
        """This history with one piece less in a prompt's window (the oldest thumbnail, else the oldest entry)
        and what was left out; None when the window is empty. The entries are shared, not copied."""
        recent, numbers = self._shown()
        if numbers:
            return replace(self, max_images=len(numbers) - 1), "the oldest history thumbnail"
        if recent:
            return replace(self, limit=len(recent) - 1), "the oldest history entry"
        return None


@dataclass
class Handoff:
    """What flows between role nodes unrolled on a canvas (PLAN and FEEDBACK sockets): the request,
    the plan, the chains an executor ran, the edited image and, after a critic, its feedback."""

    request: EditRequest
    plan: Plan
    chains: list[list[ToolCall]] = field(default_factory=list)
    image: np.ndarray | None = field(default=None, repr=False)
    feedback: Feedback | None = None
    agent: str = "agent"
    round: int = 0
    history: "HistoryContext | None" = None  # IMAGAgent's C, when a loop's role nodes carry it to the executor
    questions: list[Question] | None = None  # CCA: the request's questions, written once and reused by later critics
    orchestrate: bool = False  # IMAGAgent: the executor may choose any tool of the toolbox (the plan's is a suggestion)
    in_loop: bool = False  # made by a loop: the loop owns the brains, and a failed attempt is the loop's to handle
    keep_going: bool = False  # inside a loop that keeps its best on a brain error: an Executor reports it here
    error: str = ""  # ...as this, instead of failing the run
    failed: str = ""  # why this attempt failed (an invalid chain, a tool that raised): one failed attempt, not a run

    def candidate(self) -> "Candidate":
        if self.image is None:
            raise ValueError("this handoff carries no edited image: connect an Executor's plan output")
        return Candidate(self.agent, self.round, self.plan, self.chains, self.image, self.feedback)


def to_data(record: Any) -> Any:
    """A record as JSON-ready data (images dropped: traces keep indices, not pixels)."""
    if isinstance(record, np.ndarray):
        return None
    if hasattr(record, "__dataclass_fields__"):
        return {k: to_data(getattr(record, k)) for k in record.__dataclass_fields__
                if not isinstance(getattr(record, k), np.ndarray)}
    if isinstance(record, dict):
        return {str(k): to_data(v) for k, v in record.items()}
    if isinstance(record, (list, tuple)):
        return [to_data(v) for v in record]
    return record


__all__ = ["Answer", "Attempt", "Candidate", "Critique", "Direction", "EditRequest", "ExecutorFeedback", "Feedback", "Handoff", "HistoryContext", "HistoryEntry",
           "Mode", "Plan", "Question", "Subtask", "Suggestion", "ToolCall", "check_chain", "to_data"]
