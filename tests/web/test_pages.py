"""Pages against a real SQLite file: full pages, htmx fragments, 404s, and no 500 on garbage."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient

HX = {"HX-Request": "true"}


def soup(html: str) -> BeautifulSoup:
    return BeautifulSoup(html, "html.parser")


def card_links(html: str) -> list[str]:
    return [a["href"] for a in soup(html).select(".card-list a")]


def test_home_lists_valid_cards_by_module_and_topic(client: TestClient) -> None:
    response = client.get("/")
    assert response.status_code == 200
    page = soup(response.text)
    assert page.html is not None and page.select_one("form.filters") is not None
    assert card_links(response.text) == ["/cards/alpha", "/cards/gamma", "/cards/beta"]  # easy, medium, hard
    assert "M3 Deep Learning Foundations" in page.select_one(".module h2").get_text()
    assert response.headers["vary"] == "HX-Request"


def test_htmx_gets_the_results_fragment_of_the_same_template(client: TestClient) -> None:
    full = client.get("/?difficulty=hard")
    fragment = client.get("/?difficulty=hard", headers=HX)
    assert fragment.status_code == 200
    assert "<html" not in fragment.text and "<header" not in fragment.text
    assert fragment.text.lstrip().startswith('<section id="results"')
    assert card_links(fragment.text) == card_links(full.text) == ["/cards/beta"]
    restore = client.get("/?difficulty=hard", headers={**HX, "HX-History-Restore-Request": "true"})
    assert "<html" in restore.text


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("计数", ["/cards/alpha", "/cards/gamma", "/cards/beta"]),  # a two-character Chinese word inside a longer run
        ("版本计数器", ["/cards/alpha", "/cards/gamma", "/cards/beta"]),
        ("Gamma", ["/cards/gamma"]),
        ("gam", ["/cards/gamma"]),  # prefix
        ("雅可比", ["/cards/alpha", "/cards/gamma", "/cards/beta"]),
        ("量子", []),
        ("beta 计数", ["/cards/beta"]),
    ],
)
def test_search_finds_both_languages(client: TestClient, query: str, expected: list[str]) -> None:
    assert card_links(client.get("/", params={"q": query}, headers=HX).text) == expected


def test_filter_by_tag(client: TestClient) -> None:
    assert card_links(client.get("/?tag=inplace").text) == ["/cards/alpha"]


def test_card_page_shows_every_section_related_and_backlinks(client: TestClient) -> None:
    response = client.get("/cards/beta")
    assert response.status_code == 200
    page = soup(response.text)
    for key in ("answer", "insights", "math", "tradeoffs", "pitfalls", "followups", "examples"):
        assert page.select_one(f"section#{key}") is not None, key
    assert [a["href"] for a in page.select(".links div:first-child a")] == ["/cards/gamma"]
    assert [a["href"] for a in page.select(".links div:last-child a")] == ["/cards/alpha"]
    answer = page.select_one("details.followup")
    assert answer is not None and not answer.has_attr("open")  # hidden until opened
    assert page.select_one(".math.display") is not None
    assert page.select_one(".sec-examples .highlight .kn") is not None  # pygments-highlighted python
    assert page.select_one("figcaption.claim-inplace_version_error") is not None


def test_card_fragment_for_htmx(client: TestClient) -> None:
    fragment = client.get("/cards/beta", headers=HX)
    assert "<html" not in fragment.text and 'id="card"' in fragment.text


def test_language_choice_is_remembered_in_a_cookie(client: TestClient) -> None:
    client.cookies.set("depthcards_lang", "zh")
    assert soup(client.get("/cards/alpha").text).html["data-lang"] == "zh"
    client.cookies.set("depthcards_lang", "klingon")
    assert soup(client.get("/cards/alpha").text).html["data-lang"] == "both"


def test_unknown_card_is_a_404_page(client: TestClient) -> None:
    response = client.get("/cards/no-such-card")
    assert response.status_code == 404
    assert "No card with id 'no-such-card'." in soup(response.text).select_one(".error-page").get_text()


def test_status_page_lists_problems_with_file_and_line(client: TestClient) -> None:
    text = soup(client.get("/status").text).get_text()
    assert "cards/m3/backprop/broken.md:14" in text and "unknown difficulty 'brutal'" in text


def test_graph_data_has_cards_grouped_by_topic_and_related_edges(client: TestClient) -> None:
    data = client.get("/graph.json").json()
    cards = {n["data"]["id"]: n["data"] for n in data["nodes"] if n["data"]["kind"] == "card"}
    assert set(cards) == {"alpha", "beta", "gamma"}
    assert {c["parent"] for c in cards.values()} == {"topic:m3/backprop-autodiff"}
    assert {(e["data"]["source"], e["data"]["target"]) for e in data["edges"]} == {("alpha", "beta"), ("beta", "gamma")}


def test_static_assets_are_versioned_and_cached(client: TestClient) -> None:
    page = soup(client.get("/").text)
    css = next(link["href"] for link in page.select("link[rel=stylesheet]") if "app.css" in link["href"])
    response = client.get(css)
    assert response.status_code == 200 and "immutable" in response.headers["cache-control"]


def test_pages_request_nothing_from_other_hosts(client: TestClient) -> None:
    for url in ("/", "/cards/alpha", "/graph", "/status", "/cards/nope"):
        page = soup(client.get(url).text)
        refs = [tag.get("src") or tag.get("href") for tag in page.select("script[src], link[href], img[src]")]
        assert refs and all(ref.startswith("/") for ref in refs), (url, refs)


GARBAGE = [
    "/?difficulty=brutal",
    "/?q=" + "x" * 500,
    "/?q=%22%27%28*%29%20OR%20NEAR",
    "/?q=%00%ff",
    "/?tag=" + "t" * 100,
    "/?q=AND",
    "/cards/%2e%2e%2fetc%2fpasswd",
    "/cards/" + "a" * 3000,
    "/cards/%F0%9F%92%A5",
    "/static/../app/settings.py",
    "/static/nope.css",
    "/graph.json?x=1",
    "/nowhere",
]


@pytest.mark.parametrize("url", GARBAGE)
def test_no_garbage_produces_a_500(client: TestClient, url: str) -> None:
    response = client.get(url)
    assert 200 <= response.status_code < 500, (url, response.status_code)
    if response.status_code >= 400 and "text/html" in response.headers.get("content-type", ""):
        assert soup(response.text).select_one(".error-page .message").get_text().strip()


def test_bad_filter_says_why(client: TestClient) -> None:
    response = client.get("/?difficulty=brutal")
    assert response.status_code == 400
    assert "unknown difficulty 'brutal'" in soup(response.text).select_one(".message").get_text()
    too_long = client.get("/?q=" + "x" * 500)
    assert too_long.status_code == 400
    assert "q: String should have at most 200 characters" in soup(too_long.text).select_one(".message").get_text()
