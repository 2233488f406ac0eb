"""The settings form's parsing, as tables: what each typed value becomes, or the message it gets."""

from __future__ import annotations

import pytest
from bs4 import BeautifulSoup
from fastapi.testclient import TestClient
from sqlmodel import Session

from app.db import make_engine
from app.models import LOCAL_USER_ID, StudySettings
from app.review.settings_form import apply, format_steps, form_values, parse_form, parse_steps
from app.settings import Settings

VALID = {
    "desired_retention": "0.9",
    "new_per_day": "20",
    "max_reviews_per_day": "200",
    "learning_steps": "1m 10m",
    "relearning_steps": "10m",
    "day_rollover_hour": "4",
    "timezone": "UTC",
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1m 10m", (60, 600)),
        ("10m", (600,)),
        ("", ()),
        ("   ", ()),
        ("30s 2h", (30, 7200)),
        ("1m,10m", (60, 600)),
        ("5", (300,)),  # a bare number means minutes, as in Anki
        ("1.5h", (5400,)),
        ("23h 59m", (82800, 3540)),
        ("1M 10M", (60, 600)),
    ],
)
def test_steps_parse(text: str, seconds: tuple[int, ...]) -> None:
    assert parse_steps(text) == seconds


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1d", "not shorter than one day"),
        ("24h", "not shorter than one day"),
        ("1440m", "not shorter than one day"),
        ("10x", "'10x' is not a step"),
        ("m", "'m' is not a step"),
        ("-1m", "'-1m' is not a step"),
        ("0m", "shorter than one second"),
        ("0.001s", "shorter than one second"),
        ("1m " * 11, "at most 10 steps"),
    ],
)
def test_bad_steps_say_why(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_steps(text)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [((60, 600), "1m 10m"), ((600,), "10m"), ((), ""), ((30, 7200, 5400), "30s 2h 90m"), ((90,), "90s")],
)
def test_steps_format_back(seconds: tuple[int, ...], text: str) -> None:
    assert format_steps(seconds) == text
    assert parse_steps(text) == seconds


@pytest.mark.parametrize(
    ("field", "value", "stored"),
    [
        ("desired_retention", "0.85", 0.85),
        ("desired_retention", "0.70", 0.70),
        ("desired_retention", "0.97", 0.97),
        ("desired_retention", "90", 0.90),
        ("desired_retention", "90%", 0.90),
        ("new_per_day", "0", 0),
        ("new_per_day", " 35 ", 35),
        ("max_reviews_per_day", "9999", 9999),
        ("learning_steps", "", ()),
        ("relearning_steps", "5m 20m", (300, 1200)),
        ("day_rollover_hour", "0", 0),
        ("day_rollover_hour", "23", 23),
        ("timezone", "Asia/Shanghai", "Asia/Shanghai"),
        ("timezone", "America/New_York", "America/New_York"),
    ],
)
def test_valid_values(field: str, value: str, stored: object) -> None:
    parsed = parse_form({**VALID, field: value})
    assert parsed.errors == {}
    assert parsed.prefs is not None
    assert getattr(parsed.prefs, field) == stored


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("desired_retention", "", "Required."),
        ("desired_retention", "0.5", "Must be between 0.70 and 0.97 (70% to 97%)."),
        ("desired_retention", "0.98", "Must be between 0.70 and 0.97 (70% to 97%)."),
        ("desired_retention", "1", "Must be between 0.70 and 0.97 (70% to 97%)."),
        ("desired_retention", "99%", "Must be between 0.70 and 0.97 (70% to 97%)."),
        ("desired_retention", "high", "'high' is not a number."),
        ("desired_retention", "nan", "'nan' is not a number."),
        ("new_per_day", "-1", "Must be between 0 and 9999."),
        ("new_per_day", "2.5", "'2.5' is not a whole number."),
        ("new_per_day", "ten", "'ten' is not a whole number."),
        ("max_reviews_per_day", "", "Required."),
        ("max_reviews_per_day", "100000", "Must be between 0 and 99999."),
        ("learning_steps", "1m 1d", "Invalid steps: '1d' is not shorter than one day"),
        ("relearning_steps", "soon", "Invalid steps: 'soon' is not a step"),
        ("day_rollover_hour", "24", "Must be between 0 and 23."),
        ("day_rollover_hour", "-1", "Must be between 0 and 23."),
        ("day_rollover_hour", "4am", "'4am' is not a whole number."),
        ("timezone", "", "Required."),
        ("timezone", "Mars/Olympus", "Unknown time zone 'Mars/Olympus'"),
        ("timezone", "America", "Unknown time zone 'America'"),  # a folder of zones, not a zone
        ("timezone", "../../etc/passwd", "Unknown time zone"),
        ("timezone", "utc", "Unknown time zone 'utc'"),
        ("timezone", "x" * 300, "Unknown time zone"),
    ],
)
def test_invalid_values_get_a_message_on_their_field(field: str, value: str, message: str) -> None:
    parsed = parse_form({**VALID, field: value})
    assert parsed.prefs is None
    assert list(parsed.errors) == [field]
    assert parsed.errors[field].en.startswith(message)
    assert parsed.errors[field].zh  # and in Chinese
    assert parsed.raw[field] == value  # the form shows what was typed


def test_every_bad_field_is_reported_at_once() -> None:
    parsed = parse_form({"desired_retention": "2", "new_per_day": "x", "timezone": "Nowhere"})
    assert parsed.prefs is None
    assert set(parsed.errors) == {"desired_retention", "new_per_day", "max_reviews_per_day", "day_rollover_hour", "timezone"}


def test_defaults_show_in_the_form_and_parse_back_unchanged() -> None:
    settings = StudySettings(user_id=1)
    raw = form_values(settings)
    assert raw == VALID
    parsed = parse_form(raw)
    assert parsed.prefs is not None
    copy = StudySettings(user_id=1)
    apply(copy, parsed.prefs)
    assert copy.model_dump() == settings.model_dump()


# The page ###################################################################


def test_settings_page_shows_the_current_values(client: TestClient) -> None:
    page = client.get("/settings")
    assert page.status_code == 200
    soup = BeautifulSoup(page.text, "html.parser")
    assert {i["name"]: i["value"] for i in soup.select("form.settings-form input")} == VALID
    assert soup.select_one('nav a[href="/settings"]') is not None


def test_saving_valid_settings_redirects_and_stores_them(client: TestClient, settings: Settings) -> None:
    typed = {**VALID, "desired_retention": "85%", "learning_steps": "30s 5m 1h", "timezone": "Asia/Shanghai", "day_rollover_hour": "5"}
    saved = client.post("/settings", data=typed, follow_redirects=False)
    assert saved.status_code == 303 and saved.headers["location"] == "/settings?saved=true"
    page = client.get("/settings?saved=true")
    assert "Saved." in page.text
    assert _stored(settings) == (0.85, [30, 300, 3600], "Asia/Shanghai", 5)


def test_invalid_settings_rerender_with_messages_and_save_nothing(client: TestClient, settings: Settings) -> None:
    typed = {**VALID, "desired_retention": "0.99", "learning_steps": "1m 2d", "timezone": "America", "new_per_day": "lots"}
    page = client.post("/settings", data=typed)
    assert page.status_code == 400
    soup = BeautifulSoup(page.text, "html.parser")
    errors = {e["id"].removeprefix("err-"): e.select_one(".l-en").get_text() for e in soup.select(".field-error")}
    assert set(errors) == {"desired_retention", "learning_steps", "timezone", "new_per_day"}
    assert errors["timezone"].startswith("Unknown time zone 'America'")
    assert soup.select_one("#learning_steps")["value"] == "1m 2d"  # what was typed stays in the form
    assert soup.select_one("#learning_steps")["aria-invalid"] == "true"
    assert "4 field(s) need fixing; nothing was saved." in page.text
    assert _stored(settings) == (0.9, [60, 600], "UTC", 4)


def test_a_garbage_post_is_a_400_not_a_500(client: TestClient, settings: Settings) -> None:
    assert client.post("/settings", data={}).status_code == 400
    assert client.post("/settings", content=b"\xff\xfe", headers={"Content-Type": "application/x-www-form-urlencoded"}).status_code == 400
    assert _stored(settings) == (0.9, [60, 600], "UTC", 4)


def _stored(settings: Settings) -> tuple[float, list[int], str, int]:
    engine = make_engine(settings.db_path)
    with Session(engine) as session:
        row = session.get(StudySettings, LOCAL_USER_ID)
        assert row is not None
        result = (row.desired_retention, row.learning_steps, row.timezone, row.day_rollover_hour)
    engine.dispose()
    return result
