"""The review page: show an item, reveal, answer, undo, bury, suspend; htmx swaps the reviewer block."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Form, Query, Request
from fastapi.responses import RedirectResponse, Response
from sqlmodel import Session

from app.cards import queries as card_queries
from app.deps import SessionDep
from app.errors import AppError
from app.models import LOCAL_USER_ID, CardRow
from app.review import service
from app.review.queue import Deck, counts, next_learning_due, today
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


def _item_view(session: Session, shown: service.Shown) -> dict[str, Any]:
    card = session.get(CardRow, shown.item.card_id)
    assert card is not None
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


def _reviewer(request: Request, session: Session, *, deck: Deck, study_session: str, shown: service.Shown | None) -> Response:
    settings = service.get_settings(session, user_id=LOCAL_USER_ID)
    now = _now()
    day = today(session, user_id=LOCAL_USER_ID, settings=settings, now=now)  # once per request: three users below
    if shown is None:
        shown = service.show_next(session, user_id=LOCAL_USER_ID, deck=deck, settings=settings, now=now, day=day)
    context: dict[str, Any] = {
        "deck": deck,
        # The deck picker is outside the swapped fragment: only a full page needs it.
        "decks": [] if is_partial(request) else _deck_choices(session),
        "study_session": study_session,
        "counts": counts(session, user_id=LOCAL_USER_ID, deck=deck, settings=settings, now=now, day=day),
        "ratings": RATING_NAMES,
        "summary": session_summary(session, user_id=LOCAL_USER_ID, study_session=study_session),
        "item": _item_view(session, shown) if shown else None,
    }
    if shown is None:
        context["next_due"] = next_learning_due(session, user_id=LOCAL_USER_ID, deck=deck, now=now, day_end=day.end)
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
def review_page(request: Request, session: SessionDep, deck: DeckSpec = "all") -> Response:
    return _reviewer(request, session, deck=_deck(deck), study_session=secrets.token_urlsafe(12), shown=None)


def _after_post(request: Request, session: Session, deck: Deck, study_session: str, shown: service.Shown | None = None) -> Response:
    if is_partial(request):
        return _reviewer(request, session, deck=deck, study_session=study_session, shown=shown)
    # Without htmx (no JavaScript), fall back to post/redirect/get.
    return RedirectResponse(f"/review?deck={deck.spec}", status_code=303)


@router.post("/answer")
def answer(
    request: Request,
    session: SessionDep,
    item_id: Annotated[str, Form(max_length=200)],
    token: Annotated[str, Form(max_length=64)],
    rating: Annotated[int, Form(description="1 Again, 2 Hard, 3 Good, 4 Easy")],
    study_session: SessionId,
    deck: Annotated[str, Form(max_length=80)] = "all",
    duration_ms: Annotated[int | None, Form()] = None,
) -> Response:
    service.answer(
        session, user_id=LOCAL_USER_ID, item_id=item_id, token=token, rating=rating,
        duration_ms=duration_ms, study_session=study_session, now=_now(),
    )
    return _after_post(request, session, _deck(deck), study_session)


@router.post("/undo")
def undo(request: Request, session: SessionDep, study_session: SessionId, deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    now = _now()
    item_id = service.undo(session, user_id=LOCAL_USER_ID, study_session=study_session, now=now)
    shown = None
    if item_id is not None:
        settings = service.get_settings(session, user_id=LOCAL_USER_ID)
        shown = service.show(session, user_id=LOCAL_USER_ID, item_id=item_id, settings=settings, now=now)
    return _after_post(request, session, _deck(deck), study_session, shown)


@router.post("/bury")
def bury(request: Request, session: SessionDep, item_id: Annotated[str, Form(max_length=200)], study_session: SessionId,
         deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    settings = service.get_settings(session, user_id=LOCAL_USER_ID)
    service.bury(session, user_id=LOCAL_USER_ID, item_id=item_id, settings=settings, now=_now())
    return _after_post(request, session, _deck(deck), study_session)


@router.post("/suspend")
def suspend(request: Request, session: SessionDep, item_id: Annotated[str, Form(max_length=200)], study_session: SessionId,
            deck: Annotated[str, Form(max_length=80)] = "all") -> Response:
    service.set_suspended(session, user_id=LOCAL_USER_ID, item_id=item_id, suspended=True, now=_now())
    return _after_post(request, session, _deck(deck), study_session)
