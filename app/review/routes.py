"""The review page: show an item, reveal, answer, undo, bury, suspend; htmx swaps the reviewer block."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, Field
from sqlmodel import Session

from app.cards import queries as card_queries
from app.deps import QueuesDep, SessionDep
from app.errors import AppError
from app.models import LOCAL_USER_ID
from app.review import reviewer, service
from app.review.queue import Deck
from app.review.queue_cache import QueueCache
from app.review.reviewer import Screen
from app.review.scheduler import RATING_NAMES
from app.templating import is_partial, render

router = APIRouter(prefix="/review", tags=["review"])

DeckSpec = Annotated[str, Query(max_length=80, description="all, module:<id>, topic:<id> or tag:<tag>")]
SessionId = Annotated[str, Form(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")]


def _now() -> datetime:
    return datetime.now(UTC)


def _deck(spec: str) -> Deck:
    try:
        return Deck.parse(spec)
    except ValueError as exc:
        raise AppError(str(exc)) from None


def _item_view(screen: Screen) -> dict[str, Any] | None:
    """The shown item's front and back, from its card's rendered sections."""
    shown, card = screen.shown, screen.card
    if shown is None or card is None:
        return None
    rendered = card["rendered"]
    if shown.item.followup_key is None:
        sections = rendered["sections"]
        front = None
        back = {lang: sections["answer"][lang] + sections["insights"][lang] for lang in ("zh", "en")}
    else:
        followup = next(f for f in rendered["followups"] if f["key"] == shown.item.followup_key)
        front = followup["question"]
        back = followup["answer"]
    return {"shown": shown, "card": card, "front": front, "back": back}


def _render(request: Request, session: Session, screen: Screen, *, deck: Deck, study_session: str, now: datetime) -> Response:
    context: dict[str, Any] = {
        "deck": deck,
        # The deck picker is outside the swapped fragment: only a full page needs it.
        "decks": [] if is_partial(request) else _deck_choices(session),
        "study_session": study_session,
        "counts": screen.queue.counts(now),
        "ratings": RATING_NAMES,
        "summary": screen.summary,
        "item": _item_view(screen),
    }
    if screen.shown is None:
        context["next_due"] = screen.queue.next_learning_due()
        context["now"] = now
    return render(request, "review/review.html", context, block="reviewer")


def _reviewer(
    request: Request, session: Session, queues: QueueCache, *, deck: Deck, study_session: str, shown: service.Shown | None
) -> Response:
    """The reviewer showing `shown`, or else the deck's next item."""
    now = _now()
    screen = reviewer.show(session, queues, user_id=LOCAL_USER_ID, deck=deck, study_session=study_session, now=now, shown=shown)
    return _render(request, session, screen, deck=deck, study_session=study_session, now=now)


def _deck_choices(session: Session) -> list[tuple[str, str, str]]:
    """(spec, zh label, en label) for the deck picker."""
    choices = [("all", "全部卡片", "All cards")]
    current_module = None
    for module_id, module_zh, module_en, topic_id, topic_zh, topic_en in card_queries.modules_and_topics(session):
        if module_id != current_module:
            choices.append((f"module:{module_id}", module_zh, module_en))
            current_module = module_id
        choices.append((f"topic:{topic_id}", f"— {topic_zh}", f"— {topic_en}"))
    choices += [(f"tag:{tag}", f"#{tag}", f"#{tag}") for tag, _ in card_queries.tag_counts(session)]
    return choices


@router.get("")
def review_page(request: Request, session: SessionDep, queues: QueuesDep, deck: DeckSpec = "all") -> Response:
    return _reviewer(request, session, queues, deck=_deck(deck), study_session=secrets.token_urlsafe(12), shown=None)


def _after_post(
    request: Request, session: Session, queues: QueueCache, deck: Deck, study_session: str, shown: service.Shown | None = None
) -> Response:
    if is_partial(request):
        return _reviewer(request, session, queues, deck=deck, study_session=study_session, shown=shown)
    # Without htmx (no JavaScript), fall back to post/redirect/get.
    return RedirectResponse(f"/review?deck={deck.spec}", status_code=303)


class AnswerForm(BaseModel):
    """One answer as the reviewer posts it (one model: FastAPI validates it in one go, not field by field)."""

    item_id: str = Field(max_length=200)
    token: str = Field(max_length=64)
    rating: int = Field(description="1 Again, 2 Hard, 3 Good, 4 Easy")
    study_session: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")
    deck: str = Field("all", max_length=80)
    duration_ms: int | None = None


@router.post("/answer")
def answer(request: Request, session: SessionDep, queues: QueuesDep, form: Annotated[AnswerForm, Form()]) -> Response:
    spec = _deck(form.deck)
    now = _now()
    screen = reviewer.answer_and_show_next(
        session, queues, user_id=LOCAL_USER_ID, deck=spec, item_id=form.item_id, token=form.token, rating=form.rating,
        duration_ms=form.duration_ms, study_session=form.study_session, now=now,
    )
    if not is_partial(request):  # no JavaScript: post/redirect/get (the page issues its own token again)
        return RedirectResponse(f"/review?deck={spec.spec}", status_code=303)
    return _render(request, session, screen, deck=spec, study_session=form.study_session, now=now)


@router.post("/undo")
def undo(request: Request, session: SessionDep, queues: QueuesDep, study_session: SessionId, deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    now = _now()
    item_id = service.undo(session, user_id=LOCAL_USER_ID, study_session=study_session, now=now)
    shown = None
    if item_id is not None:
        settings = service.get_settings(session, user_id=LOCAL_USER_ID)
        shown = service.show(session, user_id=LOCAL_USER_ID, item_id=item_id, settings=settings, now=now)
    return _after_post(request, session, queues, _deck(deck), study_session, shown)


@router.post("/bury")
def bury(request: Request, session: SessionDep, queues: QueuesDep, item_id: Annotated[str, Form(max_length=200)], study_session: SessionId,
         deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    settings = service.get_settings(session, user_id=LOCAL_USER_ID)
    service.bury(session, user_id=LOCAL_USER_ID, item_id=item_id, settings=settings, now=_now())
    return _after_post(request, session, queues, _deck(deck), study_session)


@router.post("/suspend")
def suspend(request: Request, session: SessionDep, queues: QueuesDep, item_id: Annotated[str, Form(max_length=200)], study_session: SessionId,
            deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    service.set_suspended(session, user_id=LOCAL_USER_ID, item_id=item_id, suspended=True, now=_now())
    return _after_post(request, session, queues, _deck(deck), study_session)
