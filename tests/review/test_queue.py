"""What is due today: order, daily limits, decks, and items derived from cards."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.cards.index import sync_cards
from app.models import LOCAL_USER_ID, ReviewItem
from app.review import service
from app.review.items import sync_items
from app.review.queue import Counts, Deck, counts, next_item
from tests.review.conftest import T0, show_next

U = LOCAL_USER_ID


def test_each_card_yields_its_core_question_and_each_follow_up(session: Session) -> None:
    items = session.exec(select(ReviewItem.id).order_by(col(ReviewItem.id))).all()
    assert items == ["alpha", "alpha#why-raise", "beta", "beta#why-raise", "gamma", "gamma#why-raise"]


def test_removing_a_follow_up_retires_its_item_and_keeps_its_reviews(session: Session, engine: Engine, cards_dir: Path) -> None:
    settings = service.get_settings(session, user_id=U)
    shown = service.show(session, user_id=U, item_id="beta#why-raise", settings=settings, now=T0)
    service.answer(session, user_id=U, item_id=shown.item.id, token=shown.token, rating=3, duration_ms=None, study_session="s", now=T0)
    path = cards_dir / "m3" / "backprop" / "beta.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("### why-raise", "### why-it-raises"), encoding="utf-8")
    sync_cards(engine, cards_dir, now=T0 + timedelta(hours=1))
    sync_items(engine, now=T0 + timedelta(hours=1))
    session.expire_all()
    old = session.get(ReviewItem, "beta#why-raise")
    assert old is not None and old.retired_at is not None
    assert session.get(ReviewItem, "beta#why-it-raises") is not None
    from app.models import ReviewLog

    assert [log.item_id for log in session.exec(select(ReviewLog))] == ["beta#why-raise"]
    assert next_item(session, user_id=U, deck=Deck.parse("tag:autograd"), settings=settings, now=T0 + timedelta(days=5)) != "beta#why-raise"


def test_new_per_day_limit(session: Session) -> None:
    settings = service.get_settings(session, user_id=U)
    settings.new_per_day = 2
    session.add(settings)
    session.commit()
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=T0) == Counts(new=2, learning=0, review=0)
    for _ in range(2):
        shown = show_next(session, now=T0)
        assert shown is not None
        service.answer(session, user_id=U, item_id=shown.item.id, token=shown.token, rating=4, duration_ms=None, study_session="s", now=T0)
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=T0).new == 0
    assert next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0) is None
    tomorrow = T0 + timedelta(days=1)
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=tomorrow).new == 2


def test_due_learning_comes_before_new_and_learn_ahead_only_when_nothing_else(session: Session) -> None:
    settings = service.get_settings(session, user_id=U)
    shown = show_next(session, now=T0)
    assert shown is not None
    service.answer(session, user_id=U, item_id=shown.item.id, token=shown.token, rating=1, duration_ms=None, study_session="s", now=T0)
    # Due in 1 minute: a new item comes first now; after a minute the learning step does.
    assert next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0) != shown.item.id
    assert next_item(session, user_id=U, deck=Deck(), settings=settings, now=T0 + timedelta(minutes=1)) == shown.item.id
    assert counts(session, user_id=U, deck=Deck(), settings=settings, now=T0).learning == 1


@pytest.mark.parametrize(
    ("spec", "expected_new"),
    [("all", 6), ("module:m3", 6), ("topic:backprop-autodiff", 6), ("tag:inplace", 2), ("tag:nothing", 0), ("module:m9", 0)],
)
def test_decks(session: Session, spec: str, expected_new: int) -> None:
    settings = service.get_settings(session, user_id=U)
    assert counts(session, user_id=U, deck=Deck.parse(spec), settings=settings, now=T0).new == expected_new


@pytest.mark.parametrize("spec", ["module:", "color:red", "tag:" + "x" * 70])
def test_bad_deck_specs(spec: str) -> None:
    with pytest.raises(ValueError, match="unknown deck"):
        Deck.parse(spec)
