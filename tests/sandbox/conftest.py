"""One warm, jailed sandbox for the whole session (starting one costs ~3-5 s: the torch import)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator

import pytest

from sandbox import Limits, Sandbox

# Small limits keep the hostile tests brisk: an endless loop costs 2 s, not the default 5.
TEST_LIMITS = Limits(wall_s=2.0, cpu_s=2, mem_bytes=512 << 20, output_bytes=64 << 10)

# Set in this (the app's) process before the server starts: it must never be visible to a job.
SECRET_ENV = "DEPTHCARDS_TEST_SECRET"
SECRET_VALUE = "s3cr3t-" + secrets.token_hex(8)

OK_SNIPPET = "import torch\nx = torch.ones(2, requires_grad=True)\n(x * x).sum().backward()\nprint('healthy')\n"


@pytest.fixture(scope="session")
def sandbox() -> Iterator[Sandbox]:
    os.environ[SECRET_ENV] = SECRET_VALUE
    box = Sandbox(TEST_LIMITS)
    status = box.status()
    assert status.available and status.isolated, status.reason
    yield box
    box.close()
    os.environ.pop(SECRET_ENV, None)


def _assert_healthy(box: Sandbox) -> None:
    """The sandbox still answers a normal job correctly."""
    result = box.run(OK_SNIPPET, wants=["x.grad"])
    assert result.outcome == "ok", result
    assert result.stdout == "healthy\n"
    assert result.values["x.grad"].to_torch().tolist() == [2.0, 2.0]  # type: ignore[union-attr]


@pytest.fixture
def assert_healthy() -> Callable[[Sandbox], None]:
    return _assert_healthy


@pytest.fixture
def server_secret() -> str:
    """A value in the app's environment when the server started."""
    return SECRET_VALUE
