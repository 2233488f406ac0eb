"""POST /api/run against the real app and the real sandbox: every outcome, diagnosis lines, and every refusal."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from app.challenges.routes import MAX_CODE_BYTES
from app.challenges.runtime import ChallengeRuntime
from app.main import create_app
from app.models import LOCAL_USER_ID
from sandbox import outcomes
from tests.challenges.conftest import small_settings

T = "import torch\n"
LEAF = T + "a = torch.ones(3, requires_grad=True)\n"

# (id, code, outcome, line or None to skip the check)
CASES = [
    ("ok-plain", "x = 1 + 1\n", outcomes.OK, None),
    ("ok-grad", LEAF + "(a * a).sum().backward()\nprint(a.grad)\n", outcomes.OK, None),
    ("ok-no-grad-inplace", LEAF + "with torch.no_grad():\n    a.mul_(2)\n", outcomes.OK, None),
    ("ok-scalar-mul-then-inplace", LEAF + "b = a * 2\nb.add_(1)\nb.sum().backward()\n", outcomes.OK, None),
    ("ok-relu-after-linear", T + "from torch import nn\nnet = nn.Sequential(nn.Linear(4, 8), nn.ReLU(inplace=True))\n"
     "net(torch.randn(2, 4)).sum().backward()\n", outcomes.OK, None),
    ("version-sigmoid", LEAF + "b = a.sigmoid()\nb.mul_(2)\nb.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-exp", LEAF + "b = a.exp()\nb.add_(1)\nb.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-tanh-iadd", LEAF + "y = a.tanh()\ny += 1\n(y * 2).sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 5),
    ("version-mul-input", LEAF + "b = a * 2\nc = a * b\nb.add_(1)\nc.sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 6),
    ("version-sigmoid-relu-module", T + "from torch import nn\nnet = nn.Sequential(nn.Sigmoid(), nn.ReLU(inplace=True))\n"
     "net(torch.randn(2, 3, requires_grad=True)).sum().backward()\n", outcomes.INPLACE_VERSION_ERROR, 4),
    ("leaf-add", LEAF + "a.add_(1)\n", outcomes.LEAF_INPLACE_ERROR, 3),
    ("leaf-isub", LEAF + "a -= 0.1 * torch.ones(3)\n", outcomes.LEAF_INPLACE_ERROR, 3),
    ("view-of-leaf", LEAF + "a[0] = 5\n", outcomes.VIEW_INPLACE_ERROR, 3),
    ("view-unbind", T + "a = torch.ones(3, 2, requires_grad=True)\nx, y, z = (a * 1).unbind()\nx.mul_(2)\n",
     outcomes.VIEW_INPLACE_ERROR, 4),
    ("view-no-grad", LEAF + "b = a * 2\nwith torch.no_grad():\n    v = b[:2]\nv.mul_(3)\n", outcomes.VIEW_INPLACE_ERROR, 6),
    ("overlap-expand", T + "torch.zeros(1).expand(3).add_(1)\n", outcomes.MEMORY_OVERLAP_ERROR, 2),
    ("overlap-out", T + "x = torch.arange(4.)\ntorch.add(x[:3], 1, out=x[1:])\n", outcomes.MEMORY_OVERLAP_ERROR, 3),
    ("rt-zero-division", "x = 1\ny = x / 0\n", outcomes.RUNTIME_ERROR, 2),
    ("rt-syntax", "def f(:\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-name", "print(nope)\n", outcomes.RUNTIME_ERROR, 1),
    ("rt-shape", T + "torch.ones(2) @ torch.ones(3)\n", outcomes.RUNTIME_ERROR, 2),
    ("rt-backward-twice", LEAF + "b = (a * a).sum()\nb.backward()\nb.backward()\n", outcomes.RUNTIME_ERROR, 5),
    ("rt-non-scalar-backward", LEAF + "(a * 2).backward()\n", outcomes.RUNTIME_ERROR, 3),
    ("rt-exit-code", "raise SystemExit(2)\n", outcomes.RUNTIME_ERROR, 1),
    ("timeout-cpu", "while True:\n    pass\n", outcomes.TIMEOUT, None),
    ("timeout-sleep", "import time\ntime.sleep(60)\n", outcomes.TIMEOUT, None),
    ("mem-torch", T + "x = torch.empty(4 * 10**9)\n", outcomes.MEMORY_LIMIT, 2),
    ("mem-bytes", "x = bytearray(8 << 30)\n", outcomes.MEMORY_LIMIT, 1),
    ("output-print", "while True:\n    print('x' * 1000)\n", outcomes.OUTPUT_LIMIT, None),
    ("output-file", "with open('big', 'wb') as f:\n    f.write(b'x' * (40 << 20))\n", outcomes.OUTPUT_LIMIT, 2),
    ("security-socket", "import socket\nsocket.socket()\n", outcomes.SECURITY_VIOLATION, 2),
    ("security-fork", "import os\nos.fork()\n", outcomes.SECURITY_VIOLATION, 2),
    ("internal-forged-confine-error", "import os\nos.write(3, b'{\"confine_error\": \"x\"}\\n')\nos._exit(70)\n",
     outcomes.INTERNAL_ERROR, None),
]
FIELDS = {"outcome", "exception_type", "message", "line", "diagnosis", "stdout", "stderr", "duration_ms"}


def test_table_covers_every_outcome() -> None:
    assert {c[2] for c in CASES} == set(outcomes.ALL_OUTCOMES)
    assert len(CASES) >= 30


@pytest.mark.parametrize(("code", "outcome", "line"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_classification_through_the_api(app_client: TestClient, code: str, outcome: str, line: int | None) -> None:
    response = app_client.post("/api/run", json={"code": code})
    assert response.status_code == 200, response.text
    result = response.json()
    assert FIELDS <= set(result)
    assert result["outcome"] == outcome, result
    if line is not None:
        assert result["line"] == line, result
    if outcome == outcomes.OK:
        assert result["diagnosis"] is None and result["exception_type"] is None
    else:
        assert result["diagnosis"]["en"] and result["diagnosis"]["zh"]
    assert isinstance(result["duration_ms"], float) and result["isolated"] is True


# (code, raised line, line that saved the tensor, line that modified it, in-place op)
DIAGNOSES = [
    (LEAF + "b = a.sigmoid()\nb.mul_(2)\nb.sum().backward()\n", 5, 3, 4, "mul_"),
    (LEAF + "b = a.exp()\nc = b * 3\nb.add_(1)\nc.sum().backward()\nprint('unreached')\n", 6, 3, 5, "add_"),
    (LEAF + "def f(t):\n    u = t.tanh()\n    u += 1\n    return u\n\nf(a).sum().backward()\n", 8, 4, 5, "add_"),
    (T + "from torch import nn\nnet = nn.Sequential(nn.Linear(3, 4), nn.Sigmoid(), nn.ReLU(inplace=True))\n"
     "x = torch.randn(2, 3)\nout = net(x)\nout.sum().backward()\n", 6, 5, 5, "relu_"),
]


@pytest.mark.parametrize(("code", "raised", "saved", "modified", "op"), DIAGNOSES)
def test_diagnosis_names_the_lines(app_client: TestClient, code: str, raised: int, saved: int, modified: int, op: str) -> None:
    result = app_client.post("/api/run", json={"code": code}).json()
    assert result["outcome"] == outcomes.INPLACE_VERSION_ERROR
    d = result["diagnosis"]
    assert (result["line"], d["saved_by_line"], d["modified_at_line"], d["inplace_op"]) == (raised, saved, modified, op)
    assert f"line {saved}" in d["en"] and f"第 {modified} 行" in d["zh"]


def test_output_is_returned(app_client: TestClient) -> None:
    result = app_client.post("/api/run", json={"code": "import sys\nprint('out')\nprint('err', file=sys.stderr)\n"}).json()
    assert (result["outcome"], result["stdout"], result["stderr"]) == ("ok", "out\n", "err\n")


def test_code_at_the_limit_runs_and_over_it_is_413(app_client: TestClient) -> None:
    at_limit = "#" * (MAX_CODE_BYTES - 1) + "\n"
    assert app_client.post("/api/run", json={"code": at_limit}).json()["outcome"] == "ok"
    over = "#" * MAX_CODE_BYTES + "\n"
    response = app_client.post("/api/run", json={"code": over})
    assert response.status_code == 413 and "65536" in response.json()["detail"]
    multibyte = "# " + "张" * (MAX_CODE_BYTES // 3) + "\n"  # counted in UTF-8 bytes, not characters
    assert app_client.post("/api/run", json={"code": multibyte}).status_code == 413
    huge = b'{"code": "' + b"x" * (1 << 20) + b'"}'
    assert app_client.post("/api/run", content=huge, headers={"Content-Type": "application/json"}).status_code == 413


@pytest.mark.parametrize(
    "body",
    [b"not json", b"[]", b"{}", b'{"code": 3}', b'{"code": null}', b'{"code": "x", "extra": 1}', b'"x = 1"', b""],
    ids=["not-json", "array", "empty-object", "number", "null", "extra-field", "bare-string", "empty-body"],
)
def test_a_body_that_is_not_code_is_422(app_client: TestClient, body: bytes) -> None:
    response = app_client.post("/api/run", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list)


def test_user_at_cap_gets_429_with_retry_after(app_client: TestClient, runtime: ChallengeRuntime,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    gate = threading.Event()
    monkeypatch.setattr(runtime.pool, "per_user", 1)
    held = runtime.pool.submit(LOCAL_USER_ID, gate.wait)
    try:
        response = app_client.post("/api/run", json={"code": "x = 1\n"})
        assert response.status_code == 429
        assert int(response.headers["Retry-After"]) >= 1
        assert "at most 1" in response.json()["detail"]
        page = app_client.post("/challenges/trigger-version-counter/submissions", data={"code": "x = 1\n"},
                               headers={"HX-Request": "true"})
        assert page.status_code == 429 and 'id="verdict"' in page.text and "at most 1" in page.text
    finally:
        gate.set()
        held.result(timeout=5)


def test_full_queue_gets_429(app_client: TestClient, runtime: ChallengeRuntime, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runtime.pool, "queue_size", 0)
    response = app_client.post("/api/run", json={"code": "x = 1\n"})
    assert response.status_code == 429 and "queue is full" in response.json()["detail"]
    assert response.headers["Retry-After"].isdigit()


def test_sandbox_unavailable_is_503_with_the_reason_and_pages_say_why(tmp_path: Path) -> None:
    settings = small_settings(tmp_path, sandbox_bwrap="/nonexistent/bwrap")
    with TestClient(create_app(settings)) as client:
        response = client.post("/api/run", json={"code": "x = 1\n"})
        assert response.status_code == 503 and "bubblewrap is not installed" in response.json()["detail"]
        response = client.post("/api/challenges/trigger-version-counter/submissions", json={"code": "x = 1\n"})
        assert response.status_code == 503
        assert client.get("/api/submissions/1").status_code == 404  # refused before anything was stored
        for url in ("/playground", "/challenges/fix-residual-inplace"):
            page = client.get(url)
            assert page.status_code == 200
            assert 'data-sandbox="unavailable"' in page.text and "bubblewrap is not installed" in page.text
            assert "DEPTHCARDS_SANDBOX_ALLOW_UNISOLATED=1" in page.text
        assert client.get("/cards/saved-tensors").status_code == 200  # the rest of the app keeps working


def test_unisolated_mode_shows_a_warning(tmp_path: Path) -> None:
    settings = small_settings(tmp_path, sandbox_bwrap="/nonexistent/bwrap", sandbox_allow_unisolated=True)
    with TestClient(create_app(settings)) as client:
        runtime: ChallengeRuntime = client.app.state.challenges  # type: ignore[attr-defined]
        runtime.pool.stop()  # no worker may start the (unisolated) server in this test
        page = client.get("/playground").text
        assert 'data-sandbox="unisolated"' in page and "WITHOUT isolation" in page and "没有隔离" in page


def test_a_cross_site_page_cannot_make_the_server_run_code(app_client: TestClient) -> None:
    evil = {"Origin": "http://evil.example"}
    assert app_client.post("/api/run", json={"code": "x = 1\n"}, headers=evil).status_code == 403
    # A plain HTML form (no CORS preflight) posting text to the page endpoint is refused the same way.
    form = app_client.post("/challenges/trigger-version-counter/submissions", data={"code": "x = 1\n"}, headers=evil)
    assert form.status_code == 403
    same = {"Origin": "http://testserver"}
    assert app_client.post("/api/run", json={"code": "x = 1\n"}, headers=same).json()["outcome"] == "ok"
