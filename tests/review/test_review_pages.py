"""The review page over HTTP against a real SQLite file: fragments, answers, and 4xx with reasons."""

from __future__ import annotations

import re

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

HX = {"HX-Request": "true"}


def fields(html: str) -> dict[str, str]:
    page = BeautifulSoup(html, "html.parser")
    form = page.select_one("form.grades")
    assert form is not None, "no item shown"
    return {i["name"]: i.get("value", "") for i in form.select("input[type=hidden]")}


def shown_item(html: str) -> str:
    match = re.search(r'id="reviewer" class="reviewer" data-item="([^"]*)"', html)
    assert match is not None
    return match.group(1)


def test_review_page_shows_an_item_with_intervals(client: TestClient) -> None:
    page = client.get("/review")
    assert page.status_code == 200 and "<html" in page.text
    soup = BeautifulSoup(page.text, "html.parser")
    intervals = [b.select_one(".interval").get_text() for b in soup.select("form.grades button")]
    assert intervals[:3] == ["1m", "6m", "10m"] and re.fullmatch(r"\d+d", intervals[3])  # Easy graduates in days (fuzzed)
    assert soup.select_one(".back").has_attr("hidden")  # the answer waits for Space
    assert [s.get_text() for s in soup.select(".queue-counts span")[:3]] == ["6", "0", "0"]


def test_answering_swaps_in_the_next_item(client: TestClient) -> None:
    first = client.get("/review")
    data = {**fields(first.text), "rating": "4"}
    response = client.post("/review/answer", data=data, headers=HX)
    assert response.status_code == 200
    assert response.text.lstrip().startswith('<div id="reviewer"')
    assert shown_item(response.text) != data["item_id"]
    counts = BeautifulSoup(response.text, "html.parser").select(".queue-counts span")
    assert [s.get_text() for s in counts[:3]] == ["5", "0", "0"]
    # The same answer again (a double click or a retry) is not applied twice.
    again = client.post("/review/answer", data=data, headers=HX)
    assert again.status_code == 200
    assert [s.get_text() for s in BeautifulSoup(again.text, "html.parser").select(".queue-counts span")[:3]] == ["5", "0", "0"]


def test_undo_brings_the_item_back(client: TestClient) -> None:
    first = client.get("/review")
    data = {**fields(first.text), "rating": "3"}
    client.post("/review/answer", data=data, headers=HX)
    undone = client.post("/review/undo", data={"study_session": data["study_session"], "deck": "all"}, headers=HX)
    assert shown_item(undone.text) == data["item_id"]


@pytest.mark.parametrize(
    ("change", "status", "reason"),
    [
        ({"rating": "5"}, 400, "rating must be 1 (Again), 2 (Hard), 3 (Good) or 4 (Easy), not 5"),
        ({"rating": "0"}, 400, "rating must be 1 (Again), 2 (Hard), 3 (Good) or 4 (Easy), not 0"),
        ({"rating": "good"}, 400, "rating: Input should be a valid integer"),
        ({"token": "stale"}, 409, "token is unknown or expired"),
        ({"item_id": "no-such-item"}, 400, "the token was issued for item"),
        ({"study_session": "bad session!"}, 400, "study_session: String should match pattern"),
    ],
)
def test_bad_answers_get_a_4xx_with_a_reason(client: TestClient, change: dict[str, str], status: int, reason: str) -> None:
    data = {**fields(client.get("/review").text), "rating": "3", **change}
    response = client.post("/review/answer", data=data, headers=HX)
    assert response.status_code == status
    assert reason in BeautifulSoup(response.text, "html.parser").select_one(".message").get_text()


def test_unknown_deck_is_a_400(client: TestClient) -> None:
    response = client.get("/review?deck=colour:red")
    assert response.status_code == 400 and "unknown deck" in response.text


def test_without_htmx_an_answer_redirects_back(client: TestClient) -> None:
    data = {**fields(client.get("/review").text), "rating": "3"}
    response = client.post("/review/answer", data=data, follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "/review?deck=all"


def test_bury_and_suspend_move_on(client: TestClient) -> None:
    data = fields(client.get("/review").text)
    form = {"item_id": data["item_id"], "study_session": data["study_session"], "deck": "all"}
    buried = client.post("/review/bury", data=form, headers=HX)
    assert shown_item(buried.text) != data["item_id"]
    unknown = client.post("/review/suspend", data={**form, "item_id": "ghost"}, headers=HX)
    assert unknown.status_code == 404
    assert BeautifulSoup(unknown.text, "html.parser").select_one(".message").get_text() == "no review item 'ghost'"


def test_another_site_cannot_answer_for_you(client: TestClient) -> None:
    data = {**fields(client.get("/review").text), "rating": "1"}
    refused = client.post("/review/answer", data=data, headers={**HX, "Origin": "http://evil.example"})
    assert refused.status_code == 403
    assert "Cross-site requests may not change anything here." in refused.text
    allowed = client.post("/review/answer", data=data, headers={**HX, "Origin": "http://testserver"})
    assert allowed.status_code == 200
