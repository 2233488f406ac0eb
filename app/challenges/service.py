"""Submissions: store, run and grade one, read back. Keyword-only, session or engine passed in, no web types.

A submission is committed as `queued` before any worker sees it, marked `running` (attempts + 1) when a worker
starts it and `done` with its verdict when graded. A restart therefore finds every queued or running submission
in the database and runs it again (runtime.ChallengeRuntime.start); grading is deterministic given the stored
seed, so running twice gives the same verdict.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.challenges import grading, harness
from app.challenges.grading import Verdict
from app.challenges.model import Challenge, ChallengeSet
from app.models import Submission
from sandbox import Limits, RunResult, Sandbox, SandboxUnavailable, outcomes

log = logging.getLogger(__name__)

QUEUED, RUNNING, DONE = "queued", "running", "done"
# A submission that a worker started this many times without finishing (the server died each time) is given up.
MAX_ATTEMPTS = 3
Clock = Callable[[], datetime]


# Running one challenge ####################################################


def evaluate(
    box: Sandbox, challenge: Challenge, *, code: str, choice: str | None, seed: int, limits: Limits | None = None
) -> Verdict:
    """Run what the challenge needs in the sandbox and grade it (raises SandboxUnavailable)."""
    if challenge.kind == "trigger":
        return grading.grade_trigger(challenge, box.run(code, limits=limits, seed=seed))
    if challenge.kind == "fix":
        inputs = harness.make_inputs(challenge, seed)
        check, wants = harness.epilogue(challenge), harness.wants(challenge)
        # The reference runs in the sandbox too: challenge files are content, and content is not executed here.
        reference = box.run(challenge.solution, inputs=inputs, epilogue=check, wants=wants, limits=limits, seed=seed,
                            diagnose=False)
        result = box.run(code, inputs=inputs, epilogue=check, wants=wants, limits=limits, seed=seed)
        return grading.grade_fix(challenge, result, reference)
    # predict: the truth is whatever the snippet does now, with the installed torch, not a stored answer.
    truth = box.run(challenge.snippet, limits=limits, seed=0)
    return grading.grade_predict(challenge, truth, choice)


def try_run(box: Sandbox, challenge: Challenge, *, code: str, limits: Limits | None = None) -> RunResult:
    """The Run button: the code as a submission would run (with the checker, on seed-0 inputs), ungraded."""
    if challenge.kind == "fix":
        return box.run(code, inputs=harness.make_inputs(challenge, 0), epilogue=harness.epilogue(challenge),
                       wants=harness.wants(challenge), limits=limits)
    return box.run(code, limits=limits)


def _unavailable_verdict(challenge: Challenge | None, reason: str) -> dict[str, Any]:
    check = grading.Check("internal", False, "沙箱不可用", "the sandbox is unavailable", detail=reason[:500])
    return grading.Verdict(
        passed=False, kind=challenge.kind if challenge else "", outcome=outcomes.INTERNAL_ERROR, checks=[check],
        summary_zh="沙箱不可用，代码没有运行。", summary_en="The sandbox is unavailable; the code did not run.",
        message=reason[:2000],
    ).to_json()


# Storing and reading ######################################################


def create_submission(
    session: Session, *, user_id: int, challenge: Challenge, code: str, choice: str | None, now: datetime,
    seed: int | None = None,
) -> Submission:
    """Store a queued submission (committed: it survives a crash from here on)."""
    submission = Submission(
        user_id=user_id, challenge_id=challenge.id, kind=challenge.kind, code=code, choice=choice,
        seed=secrets.randbelow(2**31) if seed is None else seed, status=QUEUED, created_at=now,
    )
    session.add(submission)
    session.commit()
    session.refresh(submission)
    return submission


def get_submission(session: Session, *, submission_id: int, user_id: int) -> Submission | None:
    """The user's own submission, or None (someone else's is as good as missing)."""
    submission = session.get(Submission, submission_id)
    return submission if submission is not None and submission.user_id == user_id else None


def history(session: Session, *, user_id: int, challenge_id: str, limit: int = 20) -> list[Submission]:
    stmt = (
        select(Submission)
        .where(col(Submission.user_id) == user_id, col(Submission.challenge_id) == challenge_id)
        .order_by(col(Submission.created_at).desc(), col(Submission.id).desc())
        .limit(limit)
    )
    return list(session.exec(stmt))


def unfinished(session: Session) -> list[tuple[int, int]]:
    """(id, user id) of every queued or running submission, oldest first: what a restart must run again."""
    stmt = (
        select(Submission.id, Submission.user_id)
        .where(col(Submission.status).in_((QUEUED, RUNNING)))
        .order_by(col(Submission.id))
    )
    return [(int(i), int(u)) for i, u in session.exec(stmt) if i is not None]


def to_public(submission: Submission) -> dict[str, Any]:
    """The JSON shape of GET /api/submissions/{id}."""
    def iso(value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    return {
        "id": submission.id,
        "challenge_id": submission.challenge_id,
        "kind": submission.kind,
        "status": submission.status,
        "choice": submission.choice,
        "created_at": iso(submission.created_at),
        "started_at": iso(submission.started_at),
        "finished_at": iso(submission.finished_at),
        "verdict": submission.verdict if submission.status == DONE else None,
    }


# The worker's job #########################################################


def run_submission(
    engine: Engine,
    *,
    submission_id: int,
    challenges: ChallengeSet,
    box: Sandbox,
    limits: Limits | None,
    clock: Clock,
    stopping: Callable[[], bool] = lambda: False,
) -> str:
    """Run and grade one stored submission; returns its status afterwards (done, or running if interrupted)."""
    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        if submission is None or submission.status == DONE:
            return DONE
        submission.status = RUNNING
        submission.attempts += 1
        submission.started_at = clock()
        session.add(submission)
        session.commit()
        attempts, challenge_id = submission.attempts, submission.challenge_id
        code, choice, seed = submission.code, submission.choice, submission.seed

    challenge = challenges.get(challenge_id) if challenge_id else None
    if attempts > MAX_ATTEMPTS:
        verdict = _unavailable_verdict(challenge, f"gave up after {MAX_ATTEMPTS} interrupted attempts")
    elif challenge is None:
        verdict = _unavailable_verdict(None, f"the challenge {challenge_id!r} no longer exists")
    else:
        try:
            verdict = evaluate(box, challenge, code=code, choice=choice, seed=seed, limits=limits).to_json()
        except SandboxUnavailable as exc:
            verdict = _unavailable_verdict(challenge, exc.reason)
        if stopping() and verdict["outcome"] == outcomes.INTERNAL_ERROR:
            # Most likely the sandbox was closed under us by the shutdown: leave it running, a restart re-runs it.
            log.info("submission %s interrupted by shutdown; it will run again after a restart", submission_id)
            return RUNNING

    with Session(engine) as session:
        submission = session.get(Submission, submission_id)
        if submission is None:
            return DONE
        submission.status = DONE
        submission.verdict = verdict
        submission.finished_at = clock()
        session.add(submission)
        session.commit()
    return DONE
