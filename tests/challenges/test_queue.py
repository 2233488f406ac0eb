"""The worker pool: bounded, fair per user, resumes without limits, and stops without losing running work."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from app.challenges.queue import Busy, Stopped, WorkerPool


@pytest.fixture
def gate() -> Iterator[threading.Event]:
    event = threading.Event()
    yield event
    event.set()  # never leave a worker blocked


def make_pool(**kwargs: int) -> WorkerPool:
    pool = WorkerPool(**{"workers": 1, "queue_size": 2, "per_user": 2, **kwargs})
    pool.start()
    return pool


def wait_until(predicate: object, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():  # type: ignore[operator]
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_jobs_run_and_return(gate: threading.Event) -> None:
    pool = make_pool(workers=2)
    assert [pool.submit(1, lambda n=n: n * n).result(timeout=5) for n in range(4)] == [0, 1, 4, 9]
    pool.stop()


def test_per_user_cap_leaves_room_for_others(gate: threading.Event) -> None:
    pool = make_pool(per_user=2, queue_size=5)
    blocked = [pool.submit(1, gate.wait) for _ in range(2)]
    with pytest.raises(Busy, match="at most 2") as refused:
        pool.submit(1, lambda: None)
    assert refused.value.retry_after >= 1
    other = pool.submit(2, lambda: "other user")  # user 1 is at its cap, user 2 still gets in
    assert pool.in_flight(1) == 2 and pool.in_flight(2) == 1
    gate.set()
    assert other.result(timeout=5) == "other user"
    assert [f.result(timeout=5) for f in blocked] == [True, True]
    wait_until(lambda: pool.in_flight(1) == 0)
    pool.submit(1, lambda: None).result(timeout=5)  # room again
    pool.stop()


def test_queue_is_bounded(gate: threading.Event) -> None:
    pool = make_pool(queue_size=2, per_user=10)
    running = pool.submit(1, gate.wait)
    wait_until(lambda: pool.stats()["running"] == 1)
    waiting = [pool.submit(u, lambda: None) for u in (2, 3)]
    with pytest.raises(Busy, match="queue is full"):
        pool.submit(4, lambda: None)
    assert pool.stats() == {"queued": 2, "running": 1, "workers": 1, "queue_size": 2, "per_user": 10}
    gate.set()
    for future in [running, *waiting]:
        future.result(timeout=5)
    pool.stop()


def test_resumed_jobs_skip_admission(gate: threading.Event) -> None:
    pool = make_pool(queue_size=1, per_user=1)
    pool.submit(1, gate.wait)
    resumed = [pool.resume(1, lambda n=n: n) for n in range(3)]  # over the cap and over the bound: still queued
    gate.set()
    assert [f.result(timeout=5) for f in resumed] == [0, 1, 2]
    pool.stop()


def test_a_slot_is_given_back_when_storing_fails() -> None:
    pool = make_pool(per_user=1)
    with pytest.raises(RuntimeError), pool.slot(7):
        raise RuntimeError("the database said no")
    assert pool.in_flight(7) == 0
    with pool.slot(7) as slot:
        future = slot.enqueue(lambda: "stored, then queued")
    assert future.result(timeout=5) == "stored, then queued"
    pool.stop()


def test_stop_drops_waiting_jobs_and_lets_running_ones_finish(gate: threading.Event) -> None:
    pool = make_pool(queue_size=5, per_user=5)
    finished = threading.Event()

    def slow() -> str:
        gate.wait(5)
        finished.set()
        return "finished"

    running = pool.submit(1, slow)
    wait_until(lambda: pool.stats()["running"] == 1)
    waiting = pool.submit(1, lambda: "never")
    stopper = threading.Thread(target=pool.stop, kwargs={"timeout": 10})
    stopper.start()
    wait_until(lambda: pool.stopping)
    with pytest.raises(Stopped):
        waiting.result(timeout=5)
    with pytest.raises(Stopped):
        pool.submit(2, lambda: None)
    assert stopper.is_alive()  # still waiting for the running job
    gate.set()
    stopper.join(10)
    assert running.result(timeout=1) == "finished" and finished.is_set()
    with pytest.raises(Stopped):
        pool.resume(1, lambda: None).result(timeout=1)


def test_a_failing_job_reaches_its_caller() -> None:
    pool = make_pool()

    def boom() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        pool.submit(1, boom).result(timeout=5)
    wait_until(lambda: pool.in_flight(1) == 0)
    pool.stop()
