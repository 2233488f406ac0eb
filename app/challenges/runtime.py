"""What the app holds for challenges while it runs: the challenge set, the sandbox and the worker pool.

Created in the app's lifespan (start_runtime) and stopped on shutdown. The sandbox's fork server is started
lazily, in the background, the first time a challenge or playground page is shown (or a job needs it), so
an app that never runs code never pays the ~3-5 s torch import of the server.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.challenges import service
from app.challenges.model import Challenge, ChallengeSet
from app.challenges.queue import WorkerPool
from app.challenges.spec import load_challenges
from app.models import CardRow, LoadProblem, Submission
from app.settings import Settings
from sandbox import Limits, RunResult, Sandbox, SandboxUnavailable
from sandbox.client import UNISOLATED_WARNING

log = logging.getLogger(__name__)

ALLOW_UNISOLATED_ENV = "DEPTHCARDS_SANDBOX_ALLOW_UNISOLATED"
WARM_USER = -1  # the pool's own jobs (starting the sandbox) are not any user's


@dataclass(frozen=True)
class SandboxState:
    """What the pages say about the sandbox: ready | starting | unavailable, isolated or not, and why."""

    state: str
    isolated: bool = True
    reason: str | None = None
    warning: str | None = None

    @property
    def available(self) -> bool:
        return self.state != "unavailable"


def _now() -> datetime:
    return datetime.now(UTC)


class ChallengeRuntime:
    def __init__(self, settings: Settings, engine: Engine, challenges: ChallengeSet) -> None:
        self.settings = settings
        self.engine = engine
        self.challenges = challenges
        self.limits = Limits(
            wall_s=settings.sandbox_wall_s, cpu_s=settings.sandbox_cpu_s, mem_bytes=settings.sandbox_mem_mb << 20
        )
        workers = settings.sandbox_max_concurrent or os.cpu_count() or 1
        self.box = Sandbox(
            self.limits,
            allow_unisolated=settings.sandbox_allow_unisolated,
            max_concurrent=workers,
            bwrap=settings.sandbox_bwrap or None,
        )
        self.pool = WorkerPool(workers=workers, queue_size=settings.queue_size, per_user=settings.per_user_in_flight)
        self._warm_lock = threading.Lock()
        self._warming = False

    # Lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> int:
        """Start the workers and queue every submission a previous run left queued or running; returns how many."""
        self.pool.start()
        with Session(self.engine) as session:
            pending = service.unfinished(session)
        for submission_id, user_id in pending:
            self.pool.resume(user_id, partial(self._run_submission, submission_id))
        if pending:
            log.info("resuming %d unfinished submission(s)", len(pending))
            self.warm()
        return len(pending)

    def stop(self) -> None:
        self.pool.stop(timeout=self.limits.wall_s + 5)
        self.box.close()

    def warm(self) -> None:
        """Start the fork server in the background (once), so the first Run answers in milliseconds.

        The start runs as a job on a worker thread: the server lives only as long as the thread that spawned it
        (bwrap --die-with-parent follows the parent *thread*), and workers live as long as the app.
        """
        with self._warm_lock:
            if self._warming or self.pool.stopping:
                return
            status = getattr(self.box, "_status", None)
            if status is not None and status.available:
                return
            self._warming = True
        future = self.pool.resume(WARM_USER, self._warm)
        if future.done():  # refused: the pool is stopping
            with self._warm_lock:
                self._warming = False

    def _warm(self) -> None:
        try:
            import sandbox.grading  # noqa: F401 - torch, for grading fix challenges: ~1.7 s, paid here, not by a user

            status = self.box.status()
            if not status.available:
                log.warning("sandbox unavailable: %s", status.reason)
        finally:
            with self._warm_lock:
                self._warming = False

    # Status ------------------------------------------------------------------------------------------------

    def state(self) -> SandboxState:
        """Without blocking: the started server's status, else what the host checks predict."""
        status = getattr(self.box, "_status", None)  # set by the Sandbox once a start was attempted
        if status is not None:
            if not status.available:
                return SandboxState("unavailable", False, status.reason)
            return SandboxState("ready", status.isolated, status.reason, status.warning)
        # Not started yet: the cheap host checks (bubblewrap present, user namespaces on, x86_64 seccomp).
        problem = self.box._host_problem()
        if problem is None:
            return SandboxState("starting")
        if self.box.allow_unisolated:
            return SandboxState("starting", False, problem, UNISOLATED_WARNING)
        return SandboxState("unavailable", False, problem)

    # Jobs --------------------------------------------------------------------------------------------------

    def _check_available(self) -> None:
        state = self.state()
        if not state.available:
            self.warm()  # try again in the background: a failed start may have been a passing problem
            raise SandboxUnavailable(state.reason or "the sandbox is unavailable")

    def run_now(self, *, user_id: int, code: str, challenge: Challenge | None = None) -> RunResult:
        """Queue an ungraded run and wait for it (raises Busy, Stopped, SandboxUnavailable)."""
        self._check_available()
        if challenge is None:
            work = partial(self.box.run, code)
        else:
            work = partial(service.try_run, self.box, challenge, code=code)
        future = self.pool.submit(user_id, work)
        try:
            result: RunResult = future.result(timeout=self.limits.wall_s + self.box.start_timeout_s + 30)
        except FutureTimeout as exc:
            raise SandboxUnavailable("the run waited too long for a worker") from exc
        return result

    def submit(self, *, user_id: int, challenge: Challenge, code: str, choice: str | None) -> Submission:
        """Store a submission and queue it (raises Busy, Stopped, SandboxUnavailable before storing anything)."""
        self._check_available()
        with self.pool.slot(user_id) as slot:
            with Session(self.engine) as session:
                submission = service.create_submission(
                    session, user_id=user_id, challenge=challenge, code=code, choice=choice, now=_now()
                )
            assert submission.id is not None
            slot.enqueue(partial(self._run_submission, submission.id))
        self.warm()
        return submission

    def _run_submission(self, submission_id: int) -> str:
        return service.run_submission(
            self.engine, submission_id=submission_id, challenges=self.challenges, box=self.box, limits=self.limits,
            clock=_now, stopping=lambda: self.pool.stopping,
        )


def load_for_app(settings: Settings, engine: Engine) -> ChallengeSet:
    """Read the challenge files, checking their cards against the index, and list their problems on /status."""
    with Session(engine) as session:
        card_ids = set(session.exec(select(CardRow.id).where(col(CardRow.retired_at).is_(None))))
        challenges = load_challenges(settings.cards_dir, card_ids=card_ids)
        now = _now()
        session.add_all(LoadProblem(path=p.path, line=p.line, message=p.message, found_at=now) for p in challenges.problems)
        session.commit()
    for problem in challenges.problems:
        log.warning("challenge problem: %s", problem)
    return challenges


def start_runtime(settings: Settings, engine: Engine) -> ChallengeRuntime:
    """Load the challenges, start the worker pool and resume unfinished submissions (lifespan start)."""
    runtime = ChallengeRuntime(settings, engine, load_for_app(settings, engine))
    runtime.start()
    return runtime
