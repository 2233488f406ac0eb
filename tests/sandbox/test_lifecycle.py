"""The fork server restarts itself: killed, wedged, or never isolated in the first place."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from sandbox import Limits, Sandbox, SandboxUnavailable, outcomes
from sandbox.client import _find_descendant

Healthy = Callable[[Sandbox], None]


@pytest.fixture(scope="module")
def own_sandbox() -> Iterator[Sandbox]:
    """A sandbox these tests may break without slowing down the shared one."""
    box = Sandbox(Limits(wall_s=2.0), ack_timeout_s=2.0, grace_s=2.0)
    box.start()
    yield box
    box.close()


def test_killed_server_is_restarted(own_sandbox: Sandbox, assert_healthy: Healthy) -> None:
    pid = own_sandbox.server_pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert_healthy(own_sandbox)
    assert own_sandbox.server_pid not in (None, pid)


def test_killed_zygote_restarts_the_server(own_sandbox: Sandbox, assert_healthy: Healthy) -> None:
    """Jobs are forked by a template process under the server; without it the server exits and is replaced."""
    server = own_sandbox.server_pid
    assert server is not None
    zygote = _find_descendant(server, b"sandbox.forkserver")
    assert zygote is not None and zygote != server
    restarts = own_sandbox.restarts
    os.kill(zygote, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while own_sandbox.server_pid == server and time.monotonic() < deadline:
        time.sleep(0.01)
    assert own_sandbox.server_pid != server  # the server noticed and exited by itself
    assert_healthy(own_sandbox)
    assert own_sandbox.restarts == restarts + 1


def test_wedged_server_is_detected_and_restarted(own_sandbox: Sandbox, assert_healthy: Healthy) -> None:
    pid = own_sandbox.server_pid
    assert pid is not None
    restarts = own_sandbox.restarts
    os.kill(pid, signal.SIGSTOP)  # alive but not answering
    began = time.monotonic()
    assert_healthy(own_sandbox)  # the job is not acknowledged, so it is retried on a fresh server
    assert time.monotonic() - began < 30
    assert own_sandbox.restarts == restarts + 1
    assert own_sandbox.server_pid not in (None, pid)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # the stopped server was killed, not leaked


def test_server_wedged_mid_job_gives_internal_error(own_sandbox: Sandbox, assert_healthy: Healthy) -> None:
    pid = own_sandbox.server_pid
    assert pid is not None
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(own_sandbox.run, "import time\ntime.sleep(0.5)\n", limits=Limits(wall_s=1.0))
        time.sleep(0.3)  # acknowledged and running
        os.kill(pid, signal.SIGSTOP)
        result = future.result(timeout=30)
    assert result.outcome == outcomes.INTERNAL_ERROR and "stopped answering" in result.message
    assert_healthy(own_sandbox)


def test_concurrent_jobs_get_their_own_answers(sandbox: Sandbox) -> None:
    code = "import torch\nx = torch.full((2,), float(N), requires_grad=True)\n(x * x).sum().backward()\nprint(N)\n"
    with ThreadPoolExecutor(8) as pool:
        results = list(pool.map(lambda n: sandbox.run(f"N = {n}\n" + code, wants=["x.grad"]), range(24)))
    for n, result in enumerate(results):
        assert result.outcome == outcomes.OK and result.stdout == f"{n}\n"
        assert result.values["x.grad"].to_torch().tolist() == [2.0 * n] * 2  # type: ignore[union-attr]


def test_refuses_without_isolation() -> None:
    box = Sandbox(bwrap="/nonexistent/bwrap")
    status = box.status()
    assert (status.available, status.isolated) == (False, False)
    assert status.reason and "bubblewrap" in status.reason
    with pytest.raises(SandboxUnavailable, match="bubblewrap"):
        box.run("x = 1\n")
    box.close()


def test_unisolated_runs_only_when_allowed(caplog: pytest.LogCaptureFixture) -> None:
    with Sandbox(Limits(wall_s=2.0), bwrap="/nonexistent/bwrap", allow_unisolated=True) as box:
        status = box.status()
        assert (status.available, status.isolated) == (True, False)
        assert status.warning and "WITHOUT isolation" in status.warning
        assert any("WITHOUT isolation" in r.getMessage() for r in caplog.records)
        result = box.run("import torch\nx = torch.ones(2, requires_grad=True)\nx.sum().backward()\n", wants=["x.grad"])
        assert result.outcome == outcomes.OK and not result.isolated
        assert box.run("while True:\n    pass\n", limits=Limits(wall_s=1.0)).outcome == outcomes.TIMEOUT


def test_isolate_false_requires_explicit_permission() -> None:
    with pytest.raises(ValueError):
        Sandbox(isolate=False)


def test_per_run_limits_cannot_raise_the_reply_caps() -> None:
    box = Sandbox(Limits(result_bytes=1 << 20))
    with pytest.raises(ValueError, match="result_bytes"):
        box.run("x = 1\n", limits=Limits(result_bytes=1 << 30))
    box.close()


def test_the_server_outlives_the_thread_that_started_it() -> None:
    """--die-with-parent follows the forking thread: a server started from a request thread must not die with it."""
    import threading

    from sandbox import Limits, Sandbox

    box = Sandbox(Limits(wall_s=5))
    try:
        started: list[str] = []
        worker = threading.Thread(target=lambda: started.append(box.run("print('hi')").outcome))
        worker.start()
        worker.join(timeout=60)
        assert started == ["ok"]
        time.sleep(0.5)  # give a wrongly-parented server time to be killed
        assert box.run("x = 1").outcome == "ok"
        assert box.restarts == 0
    finally:
        box.close()
