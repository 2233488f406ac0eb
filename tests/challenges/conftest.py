"""One app with the real cards, the real sandbox and a temporary database, shared by the challenge tests.

Starting the sandbox's fork server costs ~3-5 s (the torch import), so one app serves the whole session; tests
that need other settings build their own small app and do not start a server.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from app.challenges.runtime import ChallengeRuntime
from app.challenges.spec import ChallengeSet, load_challenges
from app.main import create_app
from app.settings import Settings
from tests.conftest import CARDS_DIR

# Small limits keep the timeouts brisk (the same as the sandbox's own classification tests).
LIMITS = {"sandbox_wall_s": 1.5, "sandbox_cpu_s": 1, "sandbox_mem_mb": 512}


@pytest.fixture(scope="session")
def app_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(data_dir=tmp_path_factory.mktemp("challenge-data"), cards_dir=CARDS_DIR, **LIMITS)  # type: ignore[arg-type]
    with TestClient(create_app(settings)) as client:
        runtime: ChallengeRuntime = client.app.state.challenges  # type: ignore[attr-defined]
        status = runtime.box.status()
        assert status.available and status.isolated, status.reason
        yield client


@pytest.fixture(scope="session")
def runtime(app_client: TestClient) -> ChallengeRuntime:
    value: ChallengeRuntime = app_client.app.state.challenges  # type: ignore[attr-defined]
    return value


@pytest.fixture(scope="session")
def challenges() -> ChallengeSet:
    return load_challenges(CARDS_DIR)


def _wait_done(client: TestClient, submission_id: int, timeout: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        data: dict[str, Any] = client.get(f"/api/submissions/{submission_id}").json()
        if data["status"] == "done":
            return data
        assert time.monotonic() < deadline, data
        time.sleep(0.05)


@pytest.fixture
def wait_done() -> Callable[..., dict[str, Any]]:
    return _wait_done


def small_settings(tmp_path: Path, **overrides: Any) -> Settings:
    """Settings for an app of its own (its sandbox never starts unless a test runs code)."""
    return Settings(data_dir=tmp_path / "data", cards_dir=CARDS_DIR, **{**LIMITS, **overrides})
