"""What a challenge is, independent of the file it comes from (app/challenges/spec.py parses those)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from app.cards.model import Bilingual, Problem
from sandbox import outcomes

SLUG = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
CHALLENGES_DIR = "challenges"
KINDS = ("trigger", "fix", "predict")
# What a trigger challenge may require of the sandbox's diagnosis, besides the outcome.
DIAGNOSIS_KEYS = ("inplace_op", "saved_by_op", "backward_op", "output_of")
TRIGGER_OUTCOMES = tuple(o for o in outcomes.SNIPPET_OUTCOMES if o != outcomes.OK)
INPUT_DTYPES = ("float32", "float64")
INPUT_INITS = ("randn", "rand", "ones")
MAX_INPUT_ELEMENTS = 1 << 20
# Section key -> English heading, and which kinds need it.
SECTIONS = {"prompt": "Prompt", "starter": "Starter", "solution": "Solution", "snippet": "Snippet", "explanation": "Explanation"}
CODE_SECTIONS = ("starter", "solution", "snippet")
REQUIRED = {
    "trigger": ("prompt", "starter", "solution"),
    "fix": ("prompt", "starter", "solution"),
    "predict": ("prompt", "snippet"),
}


@dataclass(frozen=True)
class InputSpec:
    """One random input of a fix challenge, made on the trusted side from the submission's seed."""

    name: str
    shape: tuple[int, ...]
    dtype: str = "float32"
    init: str = "randn"
    requires_grad: bool = True

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True)
class Expectation:
    """What a trigger challenge's run must end in: an outcome, and optionally diagnosis fields or message text."""

    outcome: str
    diagnosis: dict[str, str] = field(default_factory=dict)
    message: str | None = None


@dataclass(frozen=True)
class Choice:
    id: str
    text: Bilingual
    match: dict[str, Any]  # outcome (required), line, stdout: compared with what the sandbox saw


@dataclass(frozen=True)
class Challenge:
    id: str
    path: str
    card: str
    kind: str
    title: Bilingual
    difficulty: str
    prompt: Bilingual  # markdown
    prompt_shared: str = ""
    hints: tuple[Bilingual, ...] = ()
    starter: str = ""
    solution: str = ""
    snippet: str = ""
    explanation: Bilingual | None = None
    expect: Expectation | None = None  # trigger
    call: str = "forward"  # fix: the function the checker calls
    inputs: tuple[InputSpec, ...] = ()  # fix
    backward: bool = True  # fix: call .backward() on the result and compare the inputs' gradients
    budget_bytes: int | None = None  # fix: most bytes the forward may save for backward
    rtol: float = 1e-4
    atol: float = 1e-6
    choices: tuple[Choice, ...] = ()  # predict
    answer: str | None = None  # predict: the author's expectation; tests check it, grading never reads it
    sha256: str = ""
    lines: dict[str, int] = field(default_factory=dict, compare=False)  # field or section -> file line


@dataclass
class ChallengeSet:
    challenges: dict[str, Challenge] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def for_card(self, card_id: str) -> list[Challenge]:
        return [c for c in self.challenges.values() if c.card == card_id]

    def get(self, challenge_id: str) -> Challenge | None:
        return self.challenges.get(challenge_id)
