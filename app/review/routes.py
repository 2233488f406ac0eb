"""The review page: show an item, reveal, answer, undo, bury, suspend; htmx swaps the reviewer block."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy import bindparam, select
from sqlmodel import Session, col

from app.cards import queries as card_queries
from app.deps import QueuesDep, SessionDep
from app.errors import AppError
from app.models import LOCAL_USER_ID, CardRow
from app.review import service
from app.review.queue import Deck
from app.review.day_queue import DayQueue
from app.review.queue_cache import QueueCache
from app.review.reviewer import answer_and_show_next
from app.review.scheduler import RATING_NAMES
from app.review.session_stats import session_summary
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


_CARD_FACE = select(CardRow.id, CardRow.title_zh, CardRow.title_en, CardRow.difficulty, CardRow.rendered).where(
    col(CardRow.id) == bindparam("card_id")
)


def _item_view(session: Session, shown: service.Shown) -> dict[str, Any]:
    card = session.connection().execute(_CARD_FACE, {"card_id": shown.item.card_id}).one()
    rendered = card.rendered
    if shown.item.followup_key is None:
        sections = rendered["sections"]
        front = None
        back = {lang: sections["answer"][lang] + sections["insights"][lang] for lang in ("zh", "en")}
    else:
        followup = next(f for f in rendered["followups"] if f["key"] == shown.item.followup_key)
        front = followup["question"]
        back = followup["answer"]
    return {"shown": shown, "card": card, "front": front, "back": back}


def _reviewer(
    request: Request, session: Session, queues: QueueCache, *, deck: Deck, study_session: str, shown: service.Shown | None
) -> Response:
    """The reviewer showing `shown`, or else the deck's next item."""
    now = _now()
    kept = queues.get(session, user_id=LOCAL_USER_ID, deck=deck, now=now)
    if shown is None:
        shown = service.show_next(session, user_id=LOCAL_USER_ID, queue=kept.queue, settings=kept.settings, now=now)
    return _render_reviewer(request, session, deck=deck, study_session=study_session, queue=kept.queue, shown=shown, now=now)


def _render_reviewer(
    request: Request, session: Session, *, deck: Deck, study_session: str, queue: DayQueue, shown: service.Shown | None,
    now: datetime,
) -> Response:
    context: dict[str, Any] = {
        "deck": deck,
        # The deck picker is outside the swapped fragment: only a full page needs it.
        "decks": [] if is_partial(request) else _deck_choices(session),
        "study_session": study_session,
        "counts": queue.counts(now),
        "ratings": RATING_NAMES,
        "summary": session_summary(session.connection(), user_id=LOCAL_USER_ID, study_session=study_session),
        "item": _item_view(session, shown) if shown else None,
    }
    if shown is None:
        context["next_due"] = queue.next_learning_due()
        context["now"] = now
    return render(request, "review/review.html", context, block="reviewer")


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


@router.post("/answer")
def answer(
    request: Request,
    session: SessionDep,
    queues: QueuesDep,
    item_id: Annotated[str, Form(max_length=200)],
    token: Annotated[str, Form(max_length=64)],
    rating: Annotated[int, Form(description="1 Again, 2 Hard, 3 Good, 4 Easy")],
    study_session: SessionId,
    deck: Annotated[str, Form(max_length=80)] = "all",
    duration_ms: Annotated[int | None, Form()] = None,
) -> Response:
    spec = _deck(deck)
    now = _now()
    if not is_partial(request):  # no JavaScript: post/redirect/get
        service.answer(session, user_id=LOCAL_USER_ID, item_id=item_id, token=token, rating=rating,
                       duration_ms=duration_ms, study_session=study_session, now=now)
        return RedirectResponse(f"/review?deck={spec.spec}", status_code=303)
    kept, shown = answer_and_show_next(
        session, queues, user_id=LOCAL_USER_ID, deck=spec, item_id=item_id, token=token, rating=rating,
        duration_ms=duration_ms, study_session=study_session, now=now,
    )
    return _render_reviewer(request, session, deck=spec, study_session=study_session, queue=kept.queue, shown=shown, now=now)


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
