"""Submissions through the API and the page: 202 then queued -> running -> done, htmx panels, history, resume."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
import time
from pathlib import Path
from typing import Any

from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.db import open_database
from app.main import create_app
from app.models import LOCAL_USER_ID, Submission
from app.settings import Settings
from tests.challenges.conftest import small_settings

HX = {"HX-Request": "true"}
Wait = Callable[..., dict[str, Any]]


def test_submit_returns_202_and_the_verdict_arrives(app_client: TestClient, wait_done: Wait) -> None:
    response = app_client.post("/api/challenges/trigger-version-counter/submissions",
                               json={"code": "import torch\nw = torch.ones(2, requires_grad=True)\nw.add_(1)\n"})
    assert response.status_code == 202
    body = response.json()
    assert set(body) == {"id", "status"} and body["status"] == "queued"
    assert response.headers["Location"] == f"/api/submissions/{body['id']}"
    data = wait_done(app_client, body["id"])
    verdict = data["verdict"]
    assert (data["challenge_id"], verdict["passed"], verdict["outcome"]) == ("trigger-version-counter", False, "leaf_inplace_error")
    assert verdict["checks"][0] == {
        "name": "outcome", "ok": False, "zh": "结果是 inplace_version_error", "en": "outcome is inplace_version_error",
        "detail": "got leaf_inplace_error", "skipped": False}
    assert verdict["diagnosis"]["line"] == 3 and verdict["line"] == 3
    assert data["created_at"] <= data["started_at"] <= data["finished_at"]


def test_predict_takes_a_choice(app_client: TestClient, wait_done: Wait) -> None:
    url = "/api/challenges/predict-add-backward-twice/submissions"
    assert app_client.post(url, json={"code": "x = 1"}).status_code == 422
    assert app_client.post(url, json={"choice": "maybe"}).status_code == 422
    submission = app_client.post(url, json={"choice": "prints-two"}).json()
    verdict = wait_done(app_client, submission["id"])["verdict"]
    assert verdict["passed"] and verdict["extra"]["truth"] == "prints-two"
    assert verdict["stdout"] == "tensor([2., 2.])\n"


def test_bad_requests(app_client: TestClient) -> None:
    assert app_client.post("/api/challenges/nope/submissions", json={"code": "x"}).status_code == 404
    assert app_client.post("/api/challenges/fix-residual-inplace/submissions", json={}).status_code == 422
    assert app_client.post("/api/challenges/fix-residual-inplace/submissions", json={"code": 1}).status_code == 422
    too_big = {"code": "#" * (64 * 1024 + 1)}
    assert app_client.post("/api/challenges/fix-residual-inplace/submissions", json=too_big).status_code == 413
    assert app_client.get("/api/submissions/999999").status_code == 404
    assert app_client.post("/api/challenges/predict-nograd-view/run", json={"code": "x = 1"}).status_code == 400
    assert app_client.get("/challenges/nope").status_code == 404


def test_challenge_run_uses_the_checker(app_client: TestClient) -> None:
    result = app_client.post("/api/challenges/fix-residual-inplace/run",
                             json={"code": "import torch\ndef forward(x, w):\n    return x.sum()\n"}).json()
    assert result["outcome"] == "ok"
    assert set(result["values"]) >= {"_dc_out", "_dc_grad_x", "_dc_grad_w"}
    starter = app_client.get("/api/challenges").json()
    assert len(starter) >= 10 and {"id", "card", "kind", "title", "difficulty"} <= set(starter[0])


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def test_page_submit_polls_then_shows_checks_lines_and_history(app_client: TestClient, wait_done: Wait) -> None:
    page = app_client.get("/challenges/fix-sigmoid-scale-budget")
    assert page.status_code == 200
    html = soup(page.text)
    assert html.select_one("textarea[name=code]").text.startswith("import torch")  # type: ignore[union-attr]
    assert "codemirror-6.0.2.bundle.js" in page.text and "challenge.js" in page.text
    assert html.select_one("#verdict")["data-status"] == "none"  # type: ignore[index]
    assert html.select_one("#hints .hint") is None  # hints are not in the page until asked for

    starter = html.select_one("textarea[name=code]").text  # type: ignore[union-attr]
    queued = app_client.post("/challenges/fix-sigmoid-scale-budget/submissions", data={"code": starter}, headers=HX)
    assert queued.status_code == 200 and "<html" not in queued.text
    panel = soup(queued.text).select_one("#verdict")
    assert panel is not None and panel["data-status"] in ("queued", "running", "done")
    poll = panel.get("hx-get")
    assert poll and poll.endswith("?history=1") and panel["hx-trigger"].startswith("load")
    assert soup(queued.text).select_one("#history[hx-swap-oob=true]") is not None

    submission_id = int(poll.split("/")[2].split("?")[0])
    wait_done(app_client, submission_id)
    done = app_client.get(poll, headers=HX)
    panel = soup(done.text).select_one("#verdict")
    assert panel is not None and panel["data-status"] == "done" and panel.get("hx-get") is None
    assert [li["data-check"] for li in panel.select(".check")] == ["runs", "output", "grad:x", "grad:w", "budget"]
    assert '"kind": "saved"' in panel["data-lines"] and '"kind": "modified"' in panel["data-lines"]
    history = soup(done.text).select_one("#history")
    assert history is not None and f"/submissions/{submission_id}" in str(history)

    full = app_client.get(f"/submissions/{submission_id}")
    assert "<html" in full.text and "y.mul_(2)" in soup(full.text).select_one("#snippet").get_text()  # type: ignore[union-attr]
    assert f"/submissions/{submission_id}" in app_client.get("/challenges/fix-sigmoid-scale-budget").text


def test_without_javascript_the_form_lands_on_the_submission_page(app_client: TestClient, wait_done: Wait) -> None:
    response = app_client.post("/challenges/predict-relu-after-linear/submissions", data={"choice": "runs"},
                               follow_redirects=False)
    assert response.status_code == 303
    submission_id = int(response.headers["location"].rsplit("/", 1)[1])
    wait_done(app_client, submission_id)
    page = soup(app_client.get(response.headers["location"]).text)
    assert page.select_one("#verdict")["data-status"] == "done"  # type: ignore[index]
    assert "Runs and prints torch.Size([8, 4])" in page.get_text()


def test_hints_come_in_stages_then_the_solution(app_client: TestClient) -> None:
    first = soup(app_client.get("/challenges/fix-sigmoid-scale-budget/hints/1", headers=HX).text)
    assert len(first.select(".hint")) == 1 and first.select_one(".solution") is None
    assert first.select_one("button.stage")["hx-get"] == "/challenges/fix-sigmoid-scale-budget/hints/2"  # type: ignore[index]
    last = soup(app_client.get("/challenges/fix-sigmoid-scale-budget/hints/3", headers=HX).text)
    assert len(last.select(".hint")) == 3
    assert last.select_one("button.stage")["hx-get"] == "/challenges/fix-sigmoid-scale-budget/solution"  # type: ignore[index]
    solution = soup(app_client.get("/challenges/fix-sigmoid-scale-budget/solution", headers=HX).text)
    assert "4 * (y * y).sum()" in solution.select_one(".solution").text  # type: ignore[union-attr]
    assert app_client.get("/challenges/fix-sigmoid-scale-budget/hints/4").status_code == 404


def test_card_page_links_its_challenges(app_client: TestClient) -> None:
    html = soup(app_client.get("/cards/saved-tensors").text)
    links = {a["href"] for a in html.select("#challenges a")}
    assert links == {"/challenges/fix-sigmoid-scale-budget", "/challenges/predict-scalar-mul-inplace"}
    assert soup(app_client.get("/").text).select_one('nav a[href="/challenges"]') is not None
    assert soup(app_client.get("/challenges").text).select_one('a[href="/playground"]') is not None


def test_unfinished_submissions_run_after_a_restart(tmp_path: Path) -> None:
    """In-process restart: rows left queued and running by a dead server are graded when the next one starts."""
    settings = small_settings(tmp_path)
    engine = open_database(settings.db_path)
    now = datetime.now(UTC)
    with Session(engine) as session:
        session.add(Submission(user_id=LOCAL_USER_ID, challenge_id="predict-nonleaf-grad", kind="predict",
                               choice="none", status="queued", created_at=now))
        session.add(Submission(user_id=LOCAL_USER_ID, challenge_id="trigger-view-inplace", kind="trigger",
                               code="import torch\nx = torch.ones(2, requires_grad=True)\nx[0] = 1\n",
                               status="running", attempts=1, created_at=now, started_at=now))
        session.add(Submission(user_id=LOCAL_USER_ID, challenge_id="gone-away", kind="trigger", code="x = 1",
                               status="queued", created_at=now))
        session.commit()
    engine.dispose()
    with TestClient(create_app(settings)) as client:
        deadline = time.monotonic() + 60
        while True:
            states = [client.get(f"/api/submissions/{i}").json() for i in (1, 2, 3)]
            if all(s["status"] == "done" for s in states) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
    assert [s["status"] for s in states] == ["done", "done", "done"]
    assert states[0]["verdict"]["passed"] is True
    assert states[1]["verdict"]["outcome"] == "view_inplace_error" and states[1]["verdict"]["passed"]
    assert states[2]["verdict"]["outcome"] == "internal_error" and "no longer exists" in states[2]["verdict"]["message"]


def test_challenge_problems_are_listed_on_the_status_page(tmp_path: Path, cards_dir: Path) -> None:
    folder = cards_dir / "m3" / "backprop" / "challenges"
    folder.mkdir()
    (folder / "broken.md").write_text("---\nid: broken\ncard: alpha\nkind: guess\n---\n", encoding="utf-8")
    with TestClient(create_app(Settings(data_dir=tmp_path / "data", cards_dir=cards_dir))) as client:
        page = client.get("/status").text
        assert "cards/m3/backprop/challenges/broken.md:4" in page and "unknown kind" in page
        assert client.get("/challenges").status_code == 200
        assert client.get("/cards/alpha").status_code == 200  # cards are unaffected
