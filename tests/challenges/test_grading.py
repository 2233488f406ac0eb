"""Every challenge graded for real: its solution passes and its starter fails, in the sandbox.

Also the ways a submission might slip through: clone everything under a memory budget, monkeypatch
torch.allclose, switch off the saved-tensor hooks; and predict challenges graded by what the sandbox sees.
"""

from __future__ import annotations

import dataclasses

import pytest

from app.challenges.runtime import ChallengeRuntime
from app.challenges.service import evaluate
from app.challenges.spec import Challenge, ChallengeSet, load_challenges
from tests.conftest import CARDS_DIR

ALL = sorted(load_challenges(CARDS_DIR).challenges)
SEED = 20261130


def grade(runtime: ChallengeRuntime, challenge: Challenge, code: str = "", choice: str | None = None, seed: int = SEED):
    return evaluate(runtime.box, challenge, code=code, choice=choice, seed=seed, limits=runtime.limits)


@pytest.mark.parametrize("challenge_id", ALL)
def test_solution_passes_and_starter_fails(runtime: ChallengeRuntime, challenges: ChallengeSet, challenge_id: str) -> None:
    challenge = challenges.challenges[challenge_id]
    if challenge.kind == "predict":
        assert challenge.answer is not None
        right = grade(runtime, challenge, choice=challenge.answer)
        assert right.passed, right  # the author's expectation is what the sandbox really sees
        for other in (c.id for c in challenge.choices if c.id != challenge.answer):
            assert not grade(runtime, challenge, choice=other).passed
        return
    solved = grade(runtime, challenge, challenge.solution)
    assert solved.passed, solved.to_json()
    assert [c.ok for c in solved.checks] == [True] * len(solved.checks)
    started = grade(runtime, challenge, challenge.starter)
    assert not started.passed, started.to_json()
    # Another seed, other random inputs: the solution still passes (no luck involved).
    assert grade(runtime, challenge, challenge.solution, seed=SEED + 1).passed


def test_checks_come_back_in_order(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["fix-sigmoid-scale-budget"]
    verdict = grade(runtime, challenge, challenge.starter)
    assert [(c.name, c.ok, c.skipped) for c in verdict.checks] == [
        ("runs", False, False), ("output", False, True), ("grad:x", False, True), ("grad:w", False, True),
        ("budget", False, True)]
    assert verdict.outcome == "inplace_version_error"
    # backward runs in the checker, but the diagnosis still points at the submission's own lines
    assert (verdict.diagnosis["saved_by_line"], verdict.diagnosis["modified_at_line"]) == (4, 5)  # type: ignore[index]


CLONE_EVERYTHING = """import torch

def forward(x, w):
    y = torch.sigmoid(x @ w).clone()   # a private copy: the in-place scale no longer hurts sigmoid
    y.mul_(2)
    return (y * y).sum()
"""


def test_cloning_everything_fails_the_memory_budget(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["fix-sigmoid-scale-budget"]
    verdict = grade(runtime, challenge, CLONE_EVERYTHING)
    assert not verdict.passed
    assert [(c.name, c.ok) for c in verdict.checks] == [
        ("runs", True), ("output", True), ("grad:x", True), ("grad:w", True), ("budget", False)]
    assert verdict.extra == {"saved_bytes": 8192, "budget_bytes": 4096}
    assert grade(runtime, challenge, challenge.solution).extra == {"saved_bytes": 4096, "budget_bytes": 4096}


def test_switching_off_the_hooks_does_not_pass_the_budget(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["fix-sigmoid-scale-budget"]
    code = (
        "import contextlib, torch\n"
        "torch.autograd.graph.saved_tensors_hooks = lambda pack, unpack: contextlib.nullcontext()\n"
        + CLONE_EVERYTHING.removeprefix("import torch\n")
    )
    verdict = grade(runtime, challenge, code)
    budget = verdict.checks[-1]
    assert not verdict.passed and budget.name == "budget" and not budget.ok
    assert "patched" in budget.detail


def test_monkeypatched_allclose_does_not_pass(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["fix-residual-inplace"]
    code = (
        "import torch\n"
        "torch.allclose = lambda *a, **k: True\n"
        "torch.testing.assert_close = lambda *a, **k: None\n"
        "torch.Tensor.__eq__ = lambda *a, **k: True\n"
        "def forward(x, w):\n"
        "    return (torch.tanh(x @ w) * 0).sum()   # runs, and is wrong\n"
    )
    verdict = grade(runtime, challenge, code)
    assert verdict.outcome == "ok" and not verdict.passed
    assert [(c.name, c.ok) for c in verdict.checks] == [("runs", True), ("output", False), ("grad:x", False), ("grad:w", False)]


def test_wrong_return_shape_is_explained(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["fix-residual-inplace"]
    verdict = grade(runtime, challenge, "import torch\ndef forward(x, w):\n    return torch.tanh(x @ w) + x\n")
    assert not verdict.passed and verdict.outcome == "runtime_error"
    assert "must return one number" in verdict.message


def test_predict_grades_against_the_sandbox_not_the_stored_answer(runtime: ChallengeRuntime, challenges: ChallengeSet) -> None:
    challenge = challenges.challenges["predict-scalar-mul-inplace"]
    # Pretend the author (or an older torch) expected the version error: grading still follows the sandbox.
    misremembered = dataclasses.replace(challenge, answer="version-error")
    assert grade(runtime, misremembered, choice="prints-two").passed
    assert not grade(runtime, misremembered, choice="version-error").passed
    # Change the snippet and the truth changes with it, with the same choices.
    changed = dataclasses.replace(challenge, snippet=challenge.snippet.replace("y = x * 2", "y = x.exp()"))
    verdict = grade(runtime, changed, choice="version-error")
    assert verdict.passed and verdict.extra == {"choice": "version-error", "truth": "version-error"}
    # A snippet no choice describes is reported as the challenge's problem, never as a pass.
    broken = dataclasses.replace(challenge, snippet="print('something else')\n")
    verdict = grade(runtime, broken, choice="prints-two")
    assert not verdict.passed and [c.ok for c in verdict.checks] == [False, False]
