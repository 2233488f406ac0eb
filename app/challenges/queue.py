"""A bounded job queue, worker threads, and a per-user cap on jobs in flight.

Runs and submissions both wait here for a worker (one per core: each worker drives one sandboxed child at a
time). Admission is refused, never silently delayed: a full queue or a user at their cap gets `Busy`, which the
routes turn into HTTP 429 with Retry-After, so one user cannot fill the queue and starve everyone else.
Submissions resumed after a restart skip admission: they were admitted once already and must not be lost.
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)


class Busy(Exception):
    """No room for this job now; try again after `retry_after` seconds."""

    def __init__(self, message: str, *, retry_after: int) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after = retry_after


class Stopped(Exception):
    """The pool is shutting down; the job did not run."""


@dataclass
class _Job:
    user_id: int
    work: Callable[[], Any]
    future: Future[Any]


class Slot:
    """Admission for one job, taken before anything is stored; enqueue() hands the work over, else it is freed."""

    def __init__(self, pool: WorkerPool, user_id: int) -> None:
        self._pool = pool
        self.user_id = user_id
        self.future: Future[Any] | None = None

    def enqueue(self, work: Callable[[], Any]) -> Future[Any]:
        self.future = self._pool._enqueue(self.user_id, work)
        return self.future


class WorkerPool:
    def __init__(self, *, workers: int, queue_size: int, per_user: int) -> None:
        if workers < 1 or queue_size < 1 or per_user < 1:
            raise ValueError("workers, queue_size and per_user must be at least 1")
        self.workers = workers
        self.queue_size = queue_size
        self.per_user = per_user
        self._jobs: collections.deque[_Job] = collections.deque()
        self._in_flight: collections.Counter[int] = collections.Counter()
        self._running = 0
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []
        self._stopping = False
        self._exit = False
        self._job_seconds = 0.05  # moving average of a job's run time, for Retry-After

    # Lifecycle ---------------------------------------------------------------------------------------------

    def start(self) -> None:
        with self._cond:
            if self._threads:
                return
            self._stopping = self._exit = False
            self._threads = [
                threading.Thread(target=self._work, name=f"challenge-worker-{i}", daemon=True) for i in range(self.workers)
            ]
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Drop waiting jobs (Stopped), let running ones finish (up to `timeout`), then end the workers.

        No worker exits while another still runs a job: a thread that started the sandbox's server is its
        parent, and the server dies with it (bwrap --die-with-parent is per thread), taking the other job along.
        """
        deadline = time.monotonic() + timeout
        with self._cond:
            self._stopping = True
            dropped = list(self._jobs)
            self._jobs.clear()
            for job in dropped:
                self._in_flight[job.user_id] -= 1
        for job in dropped:
            job.future.set_exception(Stopped("the server is shutting down"))
        with self._cond:
            while self._running and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            self._exit = True
            self._cond.notify_all()
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()) + 1.0)
        self._threads = []

    @property
    def stopping(self) -> bool:
        return self._stopping

    # Admission ---------------------------------------------------------------------------------------------

    def _retry_after(self) -> int:
        waiting = len(self._jobs) + self._running
        return max(1, math.ceil(waiting * self._job_seconds / self.workers))

    @contextmanager
    def slot(self, user_id: int) -> Iterator[Slot]:
        """Reserve room for one job of this user or raise Busy; the body stores the job, then calls enqueue()."""
        with self._cond:
            if self._stopping:
                raise Stopped("the server is shutting down")
            if self._in_flight[user_id] >= self.per_user:
                raise Busy(
                    f"You already have {self._in_flight[user_id]} job(s) queued or running "
                    f"(at most {self.per_user}); wait for one to finish.",
                    retry_after=self._retry_after(),
                )
            if len(self._jobs) >= self.queue_size:
                raise Busy(f"The queue is full ({self.queue_size} jobs waiting); try again shortly.",
                           retry_after=self._retry_after())
            self._in_flight[user_id] += 1
        slot = Slot(self, user_id)
        try:
            yield slot
        finally:
            if slot.future is None:  # the body failed before handing the work over: give the room back
                with self._cond:
                    self._in_flight[user_id] -= 1

    def submit(self, user_id: int, work: Callable[[], Any]) -> Future[Any]:
        """Admit and enqueue in one step (for work that needs nothing stored first)."""
        with self.slot(user_id) as slot:
            return slot.enqueue(work)

    def resume(self, user_id: int, work: Callable[[], Any]) -> Future[Any]:
        """Enqueue a job admitted before a restart: no cap applies, it must not be lost."""
        with self._cond:
            self._in_flight[user_id] += 1
        return self._enqueue(user_id, work)

    def _enqueue(self, user_id: int, work: Callable[[], Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            if self._stopping:
                self._in_flight[user_id] -= 1
                future.set_exception(Stopped("the server is shutting down"))
                return future
            self._jobs.append(_Job(user_id, work, future))
            self._cond.notify()
        return future

    # Workers -----------------------------------------------------------------------------------------------

    def stats(self) -> dict[str, int]:
        with self._cond:
            return {"queued": len(self._jobs), "running": self._running, "workers": self.workers,
                    "queue_size": self.queue_size, "per_user": self.per_user}

    def in_flight(self, user_id: int) -> int:
        with self._cond:
            return self._in_flight[user_id]

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._jobs and not self._exit:
                    self._cond.wait()
                if self._exit or self._stopping:
                    return
                job = self._jobs.popleft()
                self._running += 1
            began = time.monotonic()
            try:
                if job.future.set_running_or_notify_cancel():
                    try:
                        job.future.set_result(job.work())
                    except BaseException as exc:  # noqa: BLE001 - whoever waits on the future gets it
                        log.debug("challenge job raised %r", exc)
                        job.future.set_exception(exc)
            finally:
                with self._cond:
                    self._running -= 1
                    self._in_flight[job.user_id] -= 1
                    self._job_seconds = 0.8 * self._job_seconds + 0.2 * (time.monotonic() - began)
                    self._cond.notify_all()  # stop() waits for the last running job
